/* Fuzzes the XSD -> EXI grammar compiler (codec/exi_xsd.h) on in-memory
 * schema documents (no include/import: nothing is read from disk). Besides
 * "no crash", a compiled grammar must be usable: its document grammar lists
 * only global elements whose type grammars exist, every production points at
 * an existing state, it survives saving and loading, and encoding then
 * decoding its first global element works (and, when the schema declares one
 * name with several types, that name as a fragment through the relaxed
 * ElementFragment grammar of §8.5.3). The grammar export for exificient.js
 * (control/exi_exificient.h) walks every production, including the
 * ElementFragment grammar's SE productions that name no declaration: it
 * writes the file or refuses with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xsd.h"
#include "control/exi_exificient.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int wm_exi_fuzz_nop(void *u, const wm_exi_event *ev);

/* <{uri}lid/> as a document or a fragment, non-strict: what the encoder
 * writes, the decoder must read back. */
static void encode_decode_empty(const wm_exi_grammar *g, uint32_t uri, uint32_t lid, bool fragment)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.fragment = fragment;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
    wm_exi_error e = { 0 };
    uint8_t out[4096];
    size_t olen;
    const char *u = g->uris[uri], *l = g->lnames[lid];
    if (!wm_exi_encode_start(&enc, out, sizeof out, &e) && !wm_exi_encode_se(&enc, u, strlen(u), l, strlen(l)) &&
        !wm_exi_encode_ee(&enc) && !wm_exi_encode_end(&enc, &olen)) {
        wm_exi_decoder d;
        wm_exi_decoder_init(&d, g, NULL);
        if (wm_exi_decode(&d, out, olen, &o, wm_exi_fuzz_nop, NULL, NULL, &e) != WM_EXI_OK) abort();
        wm_exi_decoder_free(&d);
    }
    wm_exi_encoder_free(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    wm_exi_status st = wm_exi_xsd_compile_mem((const char *)data, size, &g, &e);
    if (st != WM_EXI_OK) {
        if (g || !e.msg[0]) abort();
        return 0;
    }
    for (uint32_t i = 0; i < g->n_doc; i++)
        if (g->doc_elems[i] >= g->n_elems || g->elems[g->doc_elems[i]].type >= g->n_tgrams) abort();
    /* A qname declared with several types is the only reason for the relaxed
     * ElementFragment grammar (§8.5.3): it exists exactly when the fragment
     * grammar has such a qname. */
    uint32_t ambiguous = WM_EXI_NONE;
    for (uint32_t i = 0; i < g->n_frag; i++) {
        if (g->frag[i].elem == WM_EXI_NONE) { if (ambiguous == WM_EXI_NONE) ambiguous = i; }
        else if (g->frag[i].elem >= g->n_elems) abort();
    }
    if ((ambiguous != WM_EXI_NONE) != (g->elem_fragment != WM_EXI_NONE) ||
        (g->elem_fragment != WM_EXI_NONE && g->elem_fragment >= g->n_tgrams))
        abort();
    for (uint32_t s = 0; s < g->n_states; s++) {
        const wm_exi_state *stt = &g->states[s];
        if (stt->first + stt->n > g->n_prods) abort();
        for (uint32_t k = 0; k < stt->n; k++) {
            const wm_exi_prod *p = &g->prods[stt->first + k];
            if (p->term != WM_EXI_T_EE && p->next >= g->n_states) abort();
            /* SE(qname) names a declaration, or (in the ElementFragment
             * grammar's own states only) the ElementFragment grammar */
            if (p->term == WM_EXI_T_SE && p->arg >= g->n_elems &&
                !(p->arg == WM_EXI_ELEM_FRAGMENT && g->elem_fragment != WM_EXI_NONE && stt->type == g->elem_fragment))
                abort();
            if ((p->term == WM_EXI_T_AT || p->term == WM_EXI_T_CH) && p->arg != WM_EXI_NONE && p->arg >= g->n_types) abort();
        }
    }
    /* the grammar survives a save/load round trip (the loader's checks accept it) */
    uint8_t *bytes;
    size_t blen;
    if (wm_exi_grammar_serialize(g, &bytes, &blen) == WM_EXI_OK) {
        wm_exi_grammar *h = NULL;
        if (wm_exi_grammar_deserialize(bytes, blen, &h, &e) != WM_EXI_OK) abort();
        wm_exi_grammar_free(h);
        free(bytes);
    }
    /* an element of the first global declaration, encoded non-strict, decodes */
    if (g->n_doc) encode_decode_empty(g, g->elems[g->doc_elems[0]].uri, g->elems[g->doc_elems[0]].lid, false);
    if (ambiguous != WM_EXI_NONE) encode_decode_empty(g, g->frag[ambiguous].uri, g->frag[ambiguous].lid, true);
    char *json = NULL;
    wm_exi_error je = { 0 };
    wm_exi_status xs = wm_exi_exificient_json(g, &json, &je);
    if (xs == WM_EXI_OK ? !json : xs != WM_EXI_E_MEMORY && !je.msg[0]) abort();
    free(json);
    wm_exi_grammar_free(g);
    return 0;
}

int wm_exi_fuzz_nop(void *u, const wm_exi_event *ev)
{
    (void)u;
    (void)ev;
    return 0;
}
