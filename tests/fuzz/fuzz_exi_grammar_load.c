/* Fuzzes the compiled-grammar loader (wm_exi_grammar_deserialize,
 * codec/exi_grammar_io.c): .wmg files are read from disk by wmctl exi
 * --grammar, so they are untrusted input. Random bytes almost never pass the
 * body's CRC-32, so each input is tried twice: as is, and with the length
 * and CRC fields of the header recomputed, which sends mutated structure into
 * the checks behind them. A refusal must carry a reason and a position inside
 * the file. A grammar that is accepted must be usable: its document elements
 * encode as empty elements and decode again, and a fixed schemaless-looking
 * stream decodes with it to any status, without a crash (ASan/UBSan watch the
 * table lookups), and its exificient.js export (control/exi_exificient.h)
 * either writes the file or refuses with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_grammar.h"
#include "control/exi_exificient.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int nop(void *u, const wm_exi_event *ev)
{
    (void)u;
    (void)ev;
    return 0;
}

/* <{uri}lid/> as a document, non-strict: what the encoder writes with the
 * loaded grammar, the decoder reads with it to some status (a grammar that is
 * consistent but not one a schema compiles to may refuse either side). */
static void use(const wm_exi_grammar *g)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    for (uint32_t i = 0; i < g->n_doc && i < 4; i++) {
        const wm_exi_elem *el = &g->elems[g->doc_elems[i]];
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
        wm_exi_error e = { 0 };
        uint8_t out[4096];
        size_t olen;
        const char *u = g->uris[el->uri], *l = g->lnames[el->lid];
        if (!wm_exi_encode_start(&enc, out, sizeof out, &e) && !wm_exi_encode_se(&enc, u, strlen(u), l, strlen(l)) &&
            !wm_exi_encode_ee(&enc) && !wm_exi_encode_end(&enc, &olen)) {
            wm_exi_decoder d;
            wm_exi_decoder_init(&d, g, NULL);
            (void)wm_exi_decode(&d, out, olen, &o, nop, NULL, NULL, &e);
            wm_exi_decoder_free(&d);
        }
        wm_exi_encoder_free(&enc);
    }
    /* SD, SE(*) {uri 0} "a", CH, EE, ED in the built-in grammars' codes */
    static const uint8_t stream[] = { 0x80, 0x40, 0x42, 0x61, 0x40, 0x80, 0x00 };
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    wm_exi_error e = { 0 };
    (void)wm_exi_decode(&d, stream, sizeof stream, &o, nop, NULL, NULL, &e);
    wm_exi_decoder_free(&d);
    char *json = NULL;
    wm_exi_error je = { 0 };
    wm_exi_status xs = wm_exi_exificient_json(g, &json, &je);
    if (xs == WM_EXI_OK ? !json : xs != WM_EXI_E_MEMORY && !je.msg[0]) abort();
    free(json);
}

static void try_load(const uint8_t *buf, size_t size)
{
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    if (wm_exi_grammar_deserialize(buf, size, &g, &e) == WM_EXI_OK) {
        if (!g) abort();
        use(g);
        wm_exi_grammar_free(g);
    } else if (g || !e.msg[0] || (e.status != WM_EXI_E_MEMORY && e.bit_pos > 8 * (uint64_t)size)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_load(data, size);
    /* header: "WMEXIG" + 2 version digits, u64 body length, u32 body CRC-32 */
    uint8_t *fixed = size >= 20 ? malloc(size) : NULL;
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    uint64_t body = size - 20;
    uint32_t c = (uint32_t)crc32(0, data + 20, (uInt)body);
    memcpy(fixed + 8, &body, 8);
    memcpy(fixed + 16, &c, 4);
    try_load(fixed, size);
    free(fixed);
    return 0;
}
