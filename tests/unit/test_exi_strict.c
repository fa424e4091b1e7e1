/* The strict bit-packed decode loop (codec/exi_decode_strict.c) against the
 * general decoder (wm_exi_decoder.general_only): every event with every
 * field (qname ids and texts, value kind, text, typed value, depth), the
 * status, the error reason and position, and early stops must be identical.
 * Inputs: random SenML packs (perf/exi_senml_gen.h) encoded strict, with and
 * without the options header, typed and lexical; the same streams with bits
 * flipped and cut short (error paths); the RFC 8428 vectors; the W3C interop
 * documents re-encoded strict with their schemas, and the interop streams
 * read with strict options forced. The SenML streams also through decoders
 * running a consumer's own instance of the loop (the template
 * codec/exi_decode_strict_loop.h, wm_exi_decoder strict_loop, as the
 * content filter has), whose handlers record the events they take without
 * the callback: they must make the same trace. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
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
static wm_exi_decoder fast[2], general[2], own[2]; /* [typed_only] */
static unsigned n_compared, n_own;

/* The consumer's instances: SE, EE and declared attributes recorded by the
 * handlers in the loop, everything else through the callback. One serves
 * any decoding; the typed-only one, the filter's kind, leaves lexical
 * decoding to the callback's instance. */
#define OWN_SE(pe)                                                                                          \
    do {                                                                                                    \
        n_own++;                                                                                            \
        if (record(user, (pe))) goto stop;                                                                  \
    } while (0)
#define OWN_AT(p, pe, k)                                                                                    \
    do {                                                                                                    \
        cr_assert_eq((pe)->value.kind, (k), "the handler's value kind"); /* a constant per copy */         \
        (pe)->depth = depth; /* the instance's to set */                                                    \
        OWN_SE(pe);                                                                                         \
    } while (0)
#define WM_SL_FN own_loop
#define WM_SL_LINKAGE static
#define WM_SL_TYPED_ONLY 0
#define WM_SL_LOCALS
#define WM_SL_ON_SE OWN_SE
#define WM_SL_ON_EE OWN_SE
#define WM_SL_ON_AT OWN_AT
#include "codec/exi_decode_strict_loop.h"
#define WM_SL_FN own_loop_typed
#define WM_SL_LINKAGE static
#define WM_SL_TYPED_ONLY 1
#define WM_SL_LOCALS
#define WM_SL_ON_SE OWN_SE
#define WM_SL_ON_EE OWN_SE
#define WM_SL_ON_AT OWN_AT
#include "codec/exi_decode_strict_loop.h"

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
        wm_exi_decoder_init(&own[k], senml, &lim);
        own[k].strict_loop = k ? own_loop_typed : own_loop;
    }
}

static void teardown(void)
{
    for (int k = 0; k < 2; k++) {
        wm_exi_decoder_free(&fast[k]);
        wm_exi_decoder_free(&general[k]);
        wm_exi_decoder_free(&own[k]);
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
    for (int k = 0; k < 2; k++) {
        same(&fast[k], &general[k], buf, len, oob, stop_after, what);
        same(&own[k], &general[k], buf, len, oob, stop_after, what);
    }
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
    cr_assert_gt(n_own, N_DOCS, "the instances' own handlers took %u events", n_own);
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

/* ---------------------------------------------------------------------
 * The specialised loop's own edges (codec/exi_decode_strict.c): string
 * table hits and misses under valueMaxLength / valuePartitionCapacity
 * (§7.3.3: values too long to be added, a global partition that wraps and
 * drops old entries), literals around the loop's limits (empty, 56/57
 * characters, non-ASCII), the memory cap reached while values are written
 * in place, and a schema other than SenML with every kind of production
 * the tables classify (integers, booleans, floats, enumerations, strings,
 * nested and nillable elements, character content). Each stream is decoded
 * by both paths and must give the same events, status, reason and bit
 * position (same()). */

static const char *const pick_str[] = {
    "", "a", "Cel", "temperature", "état", "naïve-ü", "\xf0\x9f\x98\x80", /* U+1F600: 4 octets */
    "1234567", "12345678901234", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz1234", /* 56 */
    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz12345", /* 57 */
    "a-rather-long-value-that-is-beyond-what-the-loop-copies-in-place-from-windows",
};

/* A SenML pack of `records` records (0: 1-12) whose string values are
 * drawn from pick_str (repeated, so local and global hits both occur; with
 * `unique`, names are made distinct so the table keeps growing) and whose
 * numbers vary in size. */
static size_t string_pack(uint64_t *seed, unsigned records, bool unique, char *out, size_t cap)
{
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    PUT("<sensml xmlns=\"urn:ietf:params:xml:ns:senml\">");
    if (!records) records = 1 + (unsigned)(wm_senml_rand(seed) % 12);
    const unsigned np = sizeof pick_str / sizeof *pick_str;
    for (unsigned r = 0; r < records; r++) {
        uint64_t x = wm_senml_rand(seed);
        PUT("<senml");
        if (x & 1) PUT(" bn=\"%s\"", pick_str[wm_senml_rand(seed) % np]);
        if (x & 2) PUT(" bt=\"%lld\"", (long long)(wm_senml_rand(seed) >> (wm_senml_rand(seed) % 64)));
        if (x & 4) PUT(" bver=\"%d\"", (int)(wm_senml_rand(seed) % 2000) - 1000);
        if (unique) PUT(" n=\"%u-%s\"", r, pick_str[wm_senml_rand(seed) % np]);
        else PUT(" n=\"%s\"", pick_str[wm_senml_rand(seed) % np]);
        if (x & 8) PUT(" u=\"%s\"", pick_str[wm_senml_rand(seed) % np]);
        switch ((x >> 4) % 4) {
        case 0: PUT(" v=\"%lld.%03u\"", (long long)(wm_senml_rand(seed) % 4000000000000ull) - 2000000000000ll,
                    (unsigned)(wm_senml_rand(seed) % 1000)); break;
        case 1: PUT(" vb=\"%s\"", (x >> 8) & 1 ? "true" : "false"); break;
        case 2: PUT(" vs=\"%s\"", pick_str[wm_senml_rand(seed) % np]); break;
        default: PUT(" vd=\"%s\"", pick_str[wm_senml_rand(seed) % np]); break;
        }
        PUT("/>");
    }
    PUT("</sensml>");
#undef PUT
    return n < cap ? n : 0;
}

/* Encodes xml strict with o (options in the header or not) into out. */
static size_t encode_strict(const wm_exi_grammar *g, const char *xml, size_t xlen, const wm_exi_options *o, bool header,
                            uint8_t *out, size_t cap)
{
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, o, false, header, NULL);
    size_t olen = 0;
    wm_exi_error e;
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, xlen, out, cap, &olen, &e);
    wm_exi_encoder_free(&enc);
    cr_assert_eq(st, WM_EXI_OK, "encode: %s\n%s", e.msg, xml);
    return olen;
}

/* The stream as given, stopped early, cut short and with bits flipped. */
static void same_mutated(wm_exi_decoder *df, wm_exi_decoder *dg, uint64_t *seed, const uint8_t *out, size_t olen,
                         const wm_exi_options *oob, const char *what)
{
    same(df, dg, out, olen, oob, 0, what);
    same(df, dg, out, olen, oob, 1 + (unsigned)(wm_senml_rand(seed) % 40), what);
    same(df, dg, out, (size_t)(wm_senml_rand(seed) % olen), oob, 0, what);
    uint8_t bad[8192];
    memcpy(bad, out, olen);
    for (int f = 0; f < 1 + (int)(wm_senml_rand(seed) % 3); f++) {
        size_t bit = (size_t)(wm_senml_rand(seed) % (8 * olen));
        bad[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
    }
    same(df, dg, bad, olen, oob, 0, what);
}

Test(exi_strict, string_table_limits_and_literals, .init = setup, .fini = teardown, .timeout = 240)
{
    static const uint32_t maxlen[] = { WM_EXI_UNBOUNDED, 0, 1, 3, 11, 56 };
    static const uint32_t capacity[] = { WM_EXI_UNBOUNDED, 0, 1, 2, 5, 17 };
    uint64_t seed = 0x57a61e;
    unsigned hits = 0, literals = 0;
    for (int i = 0; i < N_DOCS; i++) {
        char xml[8192];
        size_t xlen = string_pack(&seed, 0, false, xml, sizeof xml);
        cr_assert_gt(xlen, 0);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        o.value_max_length = maxlen[wm_senml_rand(&seed) % 6];
        o.value_partition_capacity = capacity[wm_senml_rand(&seed) % 6];
        bool header = i & 1;
        uint8_t out[8192];
        size_t olen = encode_strict(senml, xml, xlen, &o, header, out, sizeof out);
        char what[96];
        snprintf(what, sizeof what, "strings doc %d (maxlen %u, capacity %u)", i, o.value_max_length,
                 o.value_partition_capacity);
        for (int k = 0; k < 2; k++) same_mutated(&fast[k], &general[k], &seed, out, olen, header ? NULL : &o, what);
        /* the documents exercise both hits and misses */
        hits += strstr(xml, "n=\"Cel\"") && strstr(strstr(xml, "n=\"Cel\"") + 1, "\"Cel\"");
        literals += strstr(xml, "\"\xf0\x9f\x98\x80\"") != NULL;
    }
    cr_assert_gt(hits, N_DOCS / 50, "too few repeated values (%u)", hits);
    cr_assert_gt(literals, N_DOCS / 50, "too few non-ASCII literals (%u)", literals);
}

/* The memory cap reached anywhere in a document: both paths must fail at
 * the same bit (or both succeed), whatever was written in place before. */
Test(exi_strict, memory_cap, .init = setup, .fini = teardown, .timeout = 240)
{
    uint64_t seed = 0xcab5;
    unsigned failed = 0, passed = 0;
    static char xml[1 << 18];
    static uint8_t out[1 << 17];
    for (int i = 0; i < N_DOCS / 30; i++) {
        /* hundreds of records with distinct names: the arena's first 64 KiB
         * block fills and the cap is met somewhere in the body */
        size_t xlen = string_pack(&seed, 100 + (unsigned)(wm_senml_rand(&seed) % 900), true, xml, sizeof xml);
        cr_assert_gt(xlen, 0);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        size_t olen = encode_strict(senml, xml, xlen, &o, false, out, sizeof out);
        wm_exi_limits lim = { .mem_cap = (size_t)(64 + wm_senml_rand(&seed) % 192) * 1024, .max_depth = 16,
                              .max_value_bytes = 256, .typed_only = i & 1 };
        wm_exi_decoder df, dg;
        wm_exi_decoder_init(&df, senml, &lim);
        wm_exi_decoder_init(&dg, senml, &lim);
        dg.general_only = true;
        char what[64];
        snprintf(what, sizeof what, "cap doc %d", i);
        /* twice: the second decode runs on the arena's kept blocks */
        for (int r = 0; r < 2; r++) same(&df, &dg, out, olen, &o, 0, what);
        trace tr = { 0 };
        wm_exi_error e;
        if (wm_exi_decode(&df, out, olen, &o, record, &tr, NULL, &e) == WM_EXI_E_MEMORY) failed++;
        else passed++;
        free(tr.p);
        wm_exi_decoder_free(&df);
        wm_exi_decoder_free(&dg);
    }
    cr_assert_gt(failed, 0, "the cap was never reached");
    cr_assert_gt(passed, 0, "the cap was always reached");
}

/* A schema with every production kind the loop's tables classify. */
static const char other_xsd[] =
    "<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\" targetNamespace=\"urn:t\" xmlns:t=\"urn:t\""
    " elementFormDefault=\"qualified\">"
    " <xs:simpleType name=\"color\"><xs:restriction base=\"xs:string\">"
    "  <xs:enumeration value=\"red\"/><xs:enumeration value=\"green\"/><xs:enumeration value=\"blue\"/>"
    " </xs:restriction></xs:simpleType>"
    " <xs:complexType name=\"inner\"><xs:attribute name=\"k\" type=\"xs:unsignedShort\"/>"
    "  <xs:attribute name=\"w\" type=\"xs:string\"/></xs:complexType>"
    " <xs:element name=\"root\"><xs:complexType><xs:sequence>"
    "  <xs:element name=\"item\" maxOccurs=\"unbounded\"><xs:complexType><xs:sequence>"
    "   <xs:element name=\"label\" type=\"xs:string\" minOccurs=\"0\"/>"
    "   <xs:element name=\"count\" type=\"xs:int\" nillable=\"true\" minOccurs=\"0\"/>"
    "   <xs:element name=\"sub\" type=\"t:inner\" minOccurs=\"0\" maxOccurs=\"3\"/>"
    "  </xs:sequence>"
    "  <xs:attribute name=\"a\" type=\"xs:int\"/><xs:attribute name=\"b\" type=\"xs:boolean\"/>"
    "  <xs:attribute name=\"c\" type=\"t:color\"/><xs:attribute name=\"d\" type=\"xs:double\"/>"
    "  <xs:attribute name=\"e\" type=\"xs:decimal\"/><xs:attribute name=\"s\" type=\"xs:string\"/>"
    "  <xs:attribute name=\"z\" type=\"xs:long\" use=\"required\"/>"
    "  </xs:complexType></xs:element>"
    " </xs:sequence></xs:complexType></xs:element>"
    "</xs:schema>";

static size_t other_doc(uint64_t *seed, char *out, size_t cap)
{
    static const char *const colors[] = { "red", "green", "blue" };
    const unsigned np = sizeof pick_str / sizeof *pick_str;
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    PUT("<root xmlns=\"urn:t\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">");
    unsigned items = 1 + (unsigned)(wm_senml_rand(seed) % 6);
    for (unsigned i = 0; i < items; i++) {
        uint64_t x = wm_senml_rand(seed);
        PUT("<item");
        if (x & 1) PUT(" a=\"%d\"", (int)(wm_senml_rand(seed) % 200000) - 100000);
        if (x & 2) PUT(" b=\"%s\"", (x >> 20) & 1 ? "true" : "false");
        if (x & 4) PUT(" c=\"%s\"", colors[(x >> 21) % 3]);
        if (x & 8) PUT(" d=\"%lld.%02u\"", (long long)(wm_senml_rand(seed) % 200000) - 100000, (unsigned)((x >> 24) % 100));
        if (x & 16) PUT(" e=\"-%u.%03u\"", (unsigned)((x >> 30) % 1000), (unsigned)((x >> 40) % 1000));
        if (x & 32) PUT(" s=\"%s\"", pick_str[wm_senml_rand(seed) % np]);
        PUT(" z=\"%lld\">", (long long)wm_senml_rand(seed) >> (x % 60));
        if (x & 64) PUT("<label>%s</label>", pick_str[wm_senml_rand(seed) % np]);
        if (x & 128) {
            if ((x >> 50) & 1) PUT("<count xsi:nil=\"true\"/>");
            else PUT("<count>%d</count>", (int)((x >> 8) % 1000));
        }
        for (unsigned k = 0; k < (unsigned)((x >> 52) % 4); k++) {
            PUT("<sub");
            if ((x >> (54 + k)) & 1) PUT(" k=\"%u\"", (unsigned)(wm_senml_rand(seed) % 65536));
            PUT(" w=\"%s\"/>", pick_str[wm_senml_rand(seed) % np]);
        }
        PUT("</item>");
    }
    PUT("</root>");
#undef PUT
    return n < cap ? n : 0;
}

Test(exi_strict, other_schema_random, .timeout = 240)
{
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile_mem(other_xsd, sizeof other_xsd - 1, &g, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_decoder df[2], dg[2];
    for (int k = 0; k < 2; k++) {
        wm_exi_limits lim = { .typed_only = k };
        wm_exi_decoder_init(&df[k], g, &lim);
        wm_exi_decoder_init(&dg[k], g, &lim);
        dg[k].general_only = true;
    }
    uint64_t seed = 0x07e5;
    unsigned nil = 0;
    for (int i = 0; i < N_DOCS; i++) {
        char xml[8192];
        size_t xlen = other_doc(&seed, xml, sizeof xml);
        cr_assert_gt(xlen, 0);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        if (i % 3 == 0) o.value_partition_capacity = 3;
        bool header = i & 1;
        uint8_t out[8192];
        size_t olen = encode_strict(g, xml, xlen, &o, header, out, sizeof out);
        char what[64];
        snprintf(what, sizeof what, "other doc %d", i);
        for (int k = 0; k < 2; k++) same_mutated(&df[k], &dg[k], &seed, out, olen, header ? NULL : &o, what);
        nil += strstr(xml, "xsi:nil") != NULL;
    }
    cr_assert_gt(nil, 0);
    for (int k = 0; k < 2; k++) {
        wm_exi_decoder_free(&df[k]);
        wm_exi_decoder_free(&dg[k]);
    }
    wm_exi_grammar_free(g);
}
