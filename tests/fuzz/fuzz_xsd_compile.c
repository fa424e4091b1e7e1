/* Fuzzes the XSD -> EXI grammar compiler (codec/exi_xsd.h) on in-memory
 * schema documents (no include/import: nothing is read from disk). Besides
 * "no crash", a compiled grammar must be usable: its document grammar lists
 * only global elements whose type grammars exist, every production points at
 * an existing state, it survives saving and loading, and encoding then
 * decoding its first global element works. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xsd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    for (uint32_t s = 0; s < g->n_states; s++) {
        const wm_exi_state *stt = &g->states[s];
        if (stt->first + stt->n > g->n_prods) abort();
        for (uint32_t k = 0; k < stt->n; k++) {
            const wm_exi_prod *p = &g->prods[stt->first + k];
            if (p->term != WM_EXI_T_EE && p->next >= g->n_states) abort();
            if (p->term == WM_EXI_T_SE && p->arg >= g->n_elems) abort();
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
    if (g->n_doc) {
        const wm_exi_elem *el = &g->elems[g->doc_elems[0]];
        wm_exi_options o;
        wm_exi_options_default(&o);
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
        uint8_t out[4096];
        size_t olen;
        const char *u = g->uris[el->uri], *l = g->lnames[el->lid];
        if (!wm_exi_encode_start(&enc, out, sizeof out, &e) && !wm_exi_encode_se(&enc, u, strlen(u), l, strlen(l)) &&
            !wm_exi_encode_ee(&enc) && !wm_exi_encode_end(&enc, &olen)) {
            wm_exi_decoder d;
            wm_exi_decoder_init(&d, g, NULL);
            extern int wm_exi_fuzz_nop(void *, const wm_exi_event *);
            if (wm_exi_decode(&d, out, olen, &o, wm_exi_fuzz_nop, NULL, NULL, &e) != WM_EXI_OK) abort();
            wm_exi_decoder_free(&d);
        }
        wm_exi_encoder_free(&enc);
    }
    wm_exi_grammar_free(g);
    return 0;
}

int wm_exi_fuzz_nop(void *u, const wm_exi_event *ev);
int wm_exi_fuzz_nop(void *u, const wm_exi_event *ev)
{
    (void)u;
    (void)ev;
    return 0;
}
