/* The strict bit-packed decode loop (codec/exi_decode_strict.c) against the
 * general decoder (wm_exi_decoder.general_only): every event with every
 * field (qname ids and texts, value kind, text, typed value, depth), the
 * status, the error reason and position, and early stops must be identical.
 * Inputs: random SenML packs (perf/exi_senml_gen.h) encoded strict, with and
 * without the options header, typed and lexical; the same streams with bits
 * flipped and cut short (error paths); the RFC 8428 vectors; the W3C interop
 * documents re-encoded strict with their schemas, and the interop streams
 * read with strict options forced. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "perf/exi_senml_gen.h"
#include "tests/lib/exi_fixture.h"

#if defined(__SANITIZE_ADDRESS__)
#define N_DOCS 300
#else
#define N_DOCS 3000
#endif

typedef struct trace {
    char *p;
    size_t n, cap;
    unsigned events, stop_after;
} trace;

static void put(trace *t, const void *p, size_t n)
{
    if (t->n + n > t->cap) {
        t->cap = (t->n + n) * 2 + 256;
        t->p = realloc(t->p, t->cap);
        cr_assert_not_null(t->p);
    }
    memcpy(t->p + t->n, p, n);
    t->n += n;
}

static void put_view(trace *t, const char *p, uint32_t len)
{
    put(t, &len, sizeof len);
    if (p) put(t, p, len);
    else put(t, "\xff", 1); /* NULL text differs from empty text */
}

static int record(void *user, const wm_exi_event *e)
{
    trace *t = user;
    uint32_t h[5] = { e->type, e->xsi, e->uri_id, e->lid, e->depth };
    put(t, h, sizeof h);
    if (e->type == WM_EXI_EV_SE || e->type == WM_EXI_EV_EE || e->type == WM_EXI_EV_AT) {
        put_view(t, e->uri.p, e->uri.len);
        put_view(t, e->local.p, e->local.len);
    }
    if (e->type == WM_EXI_EV_AT || e->type == WM_EXI_EV_CH) {
        const wm_exi_value *v = &e->value;
        int64_t x[5] = { v->kind, v->b, v->i, v->mantissa, v->exponent };
        put(t, x, sizeof x);
        put_view(t, v->text, v->len);
    }
    return ++t->events == t->stop_after;
}

static wm_exi_grammar *senml;
static wm_exi_decoder fast[2], general[2]; /* [typed_only] */
static unsigned n_compared;

static void setup(void)
{
    wm_exi_error e = { 0 };
    senml = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert_not_null(senml, "senml.gen.xsd: %s", e.msg);
    for (int k = 0; k < 2; k++) {
        wm_exi_limits lim = { .typed_only = k };
        wm_exi_decoder_init(&fast[k], senml, &lim);
        wm_exi_decoder_init(&general[k], senml, &lim);
        general[k].general_only = true;
    }
}

static void teardown(void)
{
    for (int k = 0; k < 2; k++) {
        wm_exi_decoder_free(&fast[k]);
        wm_exi_decoder_free(&general[k]);
    }
    wm_exi_grammar_free(senml);
}

/* Decodes buf through both decoders and requires the same outcome. */
static void same(wm_exi_decoder *df, wm_exi_decoder *dg, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                 unsigned stop_after, const char *what)
{
    trace tf = { .stop_after = stop_after }, tg = { .stop_after = stop_after };
    wm_exi_error ef, eg;
    bool sf, sg;
    cr_assert(!df->general_only && dg->general_only);
    wm_exi_status stf = wm_exi_decode(df, buf, len, oob, record, &tf, &sf, &ef);
    wm_exi_status stg = wm_exi_decode(dg, buf, len, oob, record, &tg, &sg, &eg);
    cr_assert_eq(stf, stg, "%s: status %d (strict loop) vs %d (general): %s / %s", what, stf, stg, ef.msg, eg.msg);
    cr_assert_eq(sf, sg, "%s: stopped differs", what);
    if (stf) {
        cr_assert_eq(ef.bit_pos, eg.bit_pos, "%s: error at bit %llu vs %llu", what, (unsigned long long)ef.bit_pos,
                     (unsigned long long)eg.bit_pos);
        cr_assert_str_eq(ef.msg, eg.msg, "%s", what);
    }
    cr_assert_eq(tf.events, tg.events, "%s: %u events vs %u", what, tf.events, tg.events);
    cr_assert_eq(tf.n, tg.n, "%s: event traces differ in length", what);
    cr_assert(tf.n == 0 || !memcmp(tf.p, tg.p, tf.n), "%s: event traces differ", what);
    free(tf.p);
    free(tg.p);
    n_compared++;
}

static void same_all(const uint8_t *buf, size_t len, const wm_exi_options *oob, unsigned stop_after, const char *what)
{
    for (int k = 0; k < 2; k++) same(&fast[k], &general[k], buf, len, oob, stop_after, what);
}

Test(exi_strict, random_senml_and_mutations, .init = setup, .fini = teardown, .timeout = 240)
{
    uint64_t seed = 0x5171c7;
    wm_exi_options strict_hdr, strict_oob;
    wm_exi_options_default(&strict_hdr);
    strict_hdr.strict = true;
    strict_oob = strict_hdr;
    unsigned ok_docs = 0;
    for (int i = 0; i < N_DOCS; i++) {
        char xml[8192];
        size_t xlen = wm_senml_gen_pack(&seed, 1 + (unsigned)(wm_senml_rand(&seed) % 20), xml, sizeof xml);
        cr_assert_gt(xlen, 0);
        bool header = i & 1;
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, senml, &strict_hdr, false, header, NULL);
        uint8_t out[8192];
        size_t olen;
        wm_exi_error e;
        cr_assert_eq(wm_exi_encode_xml(&enc, xml, xlen, out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
        wm_exi_encoder_free(&enc);
        const wm_exi_options *oob = header ? NULL : &strict_oob;
        char what[64];
        snprintf(what, sizeof what, "doc %d", i);
        same_all(out, olen, oob, 0, what);
        ok_docs++;
        /* early stop somewhere inside */
        same_all(out, olen, oob, 1 + (unsigned)(wm_senml_rand(&seed) % 60), what);
        /* truncated: every error path near the end of the stream */
        size_t cut = (size_t)(wm_senml_rand(&seed) % olen);
        snprintf(what, sizeof what, "doc %d cut at %zu", i, cut);
        same_all(out, cut, oob, 0, what);
        /* bit flips after the header: wrong codes, string-table ids, lengths */
        uint8_t bad[8192];
        memcpy(bad, out, olen);
        for (int f = 0; f < 1 + (int)(wm_senml_rand(&seed) % 3); f++) {
            size_t bit = (size_t)(wm_senml_rand(&seed) % (8 * olen));
            bad[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
        }
        snprintf(what, sizeof what, "doc %d flipped", i);
        same_all(bad, olen, oob, 0, what);
    }
    cr_assert_eq(ok_docs, N_DOCS);
}

static uint8_t *slurp(const char *rel, size_t *len)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

Test(exi_strict, senml_vectors, .init = setup, .fini = teardown)
{
    static const char *const vec[] = { "senml/ex1.gen.exi", "senml/ex2.gen.exi", "senml/ex5.gen.exi" };
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
        size_t len;
        uint8_t *buf = slurp(vec[i], &len);
        cr_assert_not_null(buf, "%s missing (set WM_SHARED)", vec[i]);
        same_all(buf, len, NULL, 0, vec[i]);
        for (unsigned s = 1; s < 12; s++) same_all(buf, len, NULL, s, vec[i]);
        for (size_t cut = 0; cut < len; cut++) same_all(buf, cut, NULL, 0, vec[i]);
        free(buf);
    }
}

/* The interop documents with their schemas, encoded strict (bit-packed, so
 * the strict loop runs), and the given interop streams read as strict. */
Test(exi_strict, interop, .timeout = 120)
{
    static const struct { const char *doc, *xsd, *stream; } cases[] = {
        { "interop/schemaInformedGrammar/declaredProductions/sequence-01.xml", "interop/schemaInformedGrammar/acceptance.xsd",
          "interop/schemaInformedGrammar/declaredProductions/sequence-01.bitPacked" },
        { "interop/schemaInformedGrammar/declaredProductions/all-03.xml", "interop/schemaInformedGrammar/acceptance.xsd",
          "interop/schemaInformedGrammar/declaredProductions/all-03.bitPacked" },
        { "interop/schemaInformedGrammar/declaredProductions/document-01.xml",
          "interop/schemaInformedGrammar/declaredProductions/document.xsd", NULL },
        { "interop/datatypes/enumeration/enumeration-valid-04.xml", "interop/datatypes/enumeration/enumeration.xsd", NULL },
        { "interop/datatypes/nbitInteger/nbitInteger-valid-00.xml", "interop/datatypes/nbitInteger/nbitInteger.xsd", NULL },
        { "interop/datatypes/string/indexed-05.xml", "interop/schemaInformedGrammar/acceptance.xsd", NULL },
        { "interop/datatypes/string/indexed-10.xml", "interop/schemaInformedGrammar/acceptance.xsd", NULL },
    };
    unsigned encoded = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        wm_exi_error e = { 0 };
        wm_exi_grammar *g = wm_test_exi_schema(cases[i].xsd, &e);
        cr_assert_not_null(g, "%s: %s", cases[i].xsd, e.msg);
        wm_exi_decoder df, dg;
        wm_exi_decoder_init(&df, g, NULL);
        wm_exi_decoder_init(&dg, g, NULL);
        dg.general_only = true;
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        size_t xlen;
        char *xml = (char *)slurp(cases[i].doc, &xlen);
        cr_assert_not_null(xml, "%s missing", cases[i].doc);
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
        static uint8_t out[1 << 16];
        size_t olen;
        if (wm_exi_encode_xml(&enc, xml, xlen, out, sizeof out, &olen, &e) == WM_EXI_OK) {
            encoded++;
            same(&df, &dg, out, olen, &o, 0, cases[i].doc);
            for (size_t cut = 0; cut < olen; cut++) same(&df, &dg, out, cut, &o, 0, cases[i].doc);
        }
        wm_exi_encoder_free(&enc);
        if (cases[i].stream) {
            size_t slen;
            uint8_t *s = slurp(cases[i].stream, &slen);
            cr_assert_not_null(s, "%s missing", cases[i].stream);
            same(&df, &dg, s, slen, &o, 0, cases[i].stream);
            same(&df, &dg, s, slen, NULL, 0, cases[i].stream);
            free(s);
        }
        free(xml);
        wm_exi_decoder_free(&df);
        wm_exi_decoder_free(&dg);
        wm_exi_grammar_free(g);
    }
    cr_assert_geq(encoded, 4, "only %u interop documents encode strict", encoded);
}
