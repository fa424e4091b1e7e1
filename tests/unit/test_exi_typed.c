/* Typed-only decoding (wm_exi_limits.typed_only) reports the same events and
 * the same typed values as decoding with lexical text, and those values are
 * the ones the text spells: random SenML packs in every alignment and
 * strictness. typed_only has its own fast path in the decoder (declared
 * attributes of numeric and boolean types read straight into the event), so
 * it is checked against the general path here. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "perf/exi_senml_gen.h"
#include "tests/lib/exi_fixture.h"

typedef struct rec_ev {
    uint8_t type, kind;
    uint32_t uri_id, lid, depth;
    bool has_text, b;
    int64_t i, mantissa;
    int32_t exponent;
    char text[96];
} rec_ev;

typedef struct rec {
    rec_ev ev[512];
    unsigned n;
} rec;

static int record(void *user, const wm_exi_event *e)
{
    rec *r = user;
    cr_assert_lt(r->n, 512);
    rec_ev *x = &r->ev[r->n++];
    memset(x, 0, sizeof *x);
    x->type = e->type;
    x->uri_id = e->uri_id;
    x->lid = e->lid;
    x->depth = e->depth;
    if (e->type == WM_EXI_EV_AT || e->type == WM_EXI_EV_CH) {
        x->kind = e->value.kind;
        x->b = e->value.b;
        x->i = e->value.i;
        x->mantissa = e->value.mantissa;
        x->exponent = e->value.exponent;
        x->has_text = e->value.text != NULL;
        if (e->value.text) {
            cr_assert_lt(e->value.len, sizeof x->text);
            memcpy(x->text, e->value.text, e->value.len);
        }
    }
    return 0;
}

static bool typed_kind(uint8_t k)
{
    return k == WM_EXI_DT_FLOAT || k == WM_EXI_DT_INTEGER || k == WM_EXI_DT_BOOLEAN || k == WM_EXI_DT_UNSIGNED ||
           k == WM_EXI_DT_NBIT || k == WM_EXI_DT_ENUM;
}

Test(exi_typed, typed_only_matches_lexical_decoding)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    static rec lex, typed;
    uint64_t seed = 0x7e57;
    unsigned checked_float = 0, checked_bool = 0, checked_int = 0;
    for (unsigned mode = 0; mode < 4; mode++) {
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = mode & 1;
        o.alignment = mode & 2 ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
        wm_exi_decoder dl, dt;
        wm_exi_limits lt = { .typed_only = true };
        wm_exi_decoder_init(&dl, g, NULL);
        wm_exi_decoder_init(&dt, g, &lt);
        for (unsigned i = 0; i < 300; i++) {
            char xml[8192];
            size_t n = wm_senml_gen_pack(&seed, 1 + i % 12, xml, sizeof xml);
            uint8_t out[8192];
            size_t olen;
            cr_assert_eq(wm_exi_encode_xml(&enc, xml, n, out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
            lex.n = typed.n = 0;
            cr_assert_eq(wm_exi_decode(&dl, out, olen, NULL, record, &lex, NULL, &e), WM_EXI_OK, "%s", e.msg);
            cr_assert_eq(wm_exi_decode(&dt, out, olen, NULL, record, &typed, NULL, &e), WM_EXI_OK, "%s", e.msg);
            cr_assert_eq(lex.n, typed.n, "mode %u doc %u: %u vs %u events", mode, i, lex.n, typed.n);
            for (unsigned k = 0; k < lex.n; k++) {
                const rec_ev *a = &lex.ev[k], *b = &typed.ev[k];
                cr_assert(a->type == b->type && a->uri_id == b->uri_id && a->lid == b->lid && a->depth == b->depth,
                          "mode %u doc %u event %u differs", mode, i, k);
                if (a->type != WM_EXI_EV_AT && a->type != WM_EXI_EV_CH) continue;
                cr_assert_eq(a->kind, b->kind);
                cr_assert(a->has_text, "lexical decoding gave no text");
                if (!typed_kind(a->kind)) {
                    cr_assert_str_eq(a->text, b->text);
                    continue;
                }
                cr_assert(!b->has_text, "typed_only still built text for kind %u", b->kind);
                cr_assert(a->b == b->b && a->i == b->i && a->mantissa == b->mantissa && a->exponent == b->exponent,
                          "mode %u doc %u event %u: typed values differ", mode, i, k);
                /* the typed value is the one the text spells */
                if (a->kind == WM_EXI_DT_FLOAT) {
                    double v = (double)b->mantissa * pow(10.0, b->exponent);
                    cr_assert(fabs(v - strtod(a->text, NULL)) <= 1e-9 * fmax(1.0, fabs(v)), "%s vs %g", a->text, v);
                    checked_float++;
                } else if (a->kind == WM_EXI_DT_BOOLEAN) {
                    cr_assert_eq(b->b, !strcmp(a->text, "true") || !strcmp(a->text, "1"), "%s", a->text);
                    checked_bool++;
                } else if (a->kind == WM_EXI_DT_INTEGER) {
                    cr_assert_eq(b->i, strtoll(a->text, NULL, 10), "%s", a->text);
                    checked_int++;
                }
            }
        }
        wm_exi_decoder_free(&dl);
        wm_exi_decoder_free(&dt);
        wm_exi_encoder_free(&enc);
    }
    /* the generator produces all three typed kinds (v, t, bt: float; bver: int; vb: boolean) */
    cr_assert(checked_float > 1000 && checked_bool > 50 && checked_int > 50, "%u floats, %u booleans, %u ints",
              checked_float, checked_bool, checked_int);
    wm_exi_grammar_free(g);
}
