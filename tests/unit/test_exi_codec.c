/* EXI codec end to end: RFC 8428 SenML vectors and the W3C interop subset
 * from $WM_SHARED/data/exi decode to XML equal to their .xml (infoset:
 * expanded names, attribute values, text; numbers by value), SenML re-encodes
 * to the same bytes, random SenML packs round-trip in every mode, and bad
 * input ends in a precise error. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <zlib.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "perf/exi_senml_gen.h"
#include "tests/lib/exi_infoset.h"

static const char *shared(void)
{
    const char *s = getenv("WM_SHARED");
    return s ? s : "../shared";
}

static size_t slurp(const char *rel, uint8_t **out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", shared(), rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    cr_assert(fread(*out, 1, (size_t)n, f) == (size_t)n);
    (*out)[n] = 0;
    fclose(f);
    return (size_t)n;
}

static wm_exi_grammar *schema(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", shared(), rel);
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile(path, &g, &e), WM_EXI_OK, "%s: %s", path, e.msg);
    return g;
}

/* ------------------------------------------------------------ infoset */

/* Decoded XML vs reference XML, values compared by the type the stream gave
 * them (tests/lib/exi_infoset.h: hex case-insensitive only for hexBinary,
 * numbers by value only for float/decimal/integer types, exact text for strings). */
static void same_infoset(const wm_test_exi_doc *got, const char *want, const char *ctx)
{
    char why[512];
    cr_assert(wm_test_exi_same_infoset(got, want, why, sizeof why), "%s: %s", ctx, why);
}

static wm_exi_status decode_to_xml(const wm_exi_grammar *g, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                                   wm_test_exi_doc *doc, wm_exi_error *e, wm_exi_options *used)
{
    return wm_test_exi_decode_doc(g, buf, len, oob, doc, e, used);
}

/* The comparison goes by type: what is equal for one type is a difference for another. */
Test(exi_infoset, values_compare_by_their_type)
{
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_STRING, "Cel", "cel"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_STRING, "[x]", "{x}"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_STRING, "1000", "1e3"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_STRING, "inf", "INF"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_STRING, " a", "a"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_FLOAT, "1000", "1e3"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_FLOAT, "231E-1", "23.1"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_FLOAT, "INF", "inf"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_FLOAT, "16", "0x10"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_FLOAT, "23.1", "23.10001"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_DECIMAL, "-12.50", "-12.5"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_DECIMAL, "007", "7.0"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_DECIMAL, "12.5", "-12.5"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_INTEGER, "+5", "05"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_INTEGER, "5", "5.0"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_HEX, "0aff", "0AFF"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_HEX, "0aff", "0aef"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_BOOLEAN, "1", "true"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_BOOLEAN, "0", "true"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_DATETIME, "2010-04-28T12:00:00.50+00:00", "2010-04-28T12:00:00.5Z"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_DATETIME, "2010-04-28T12:00:00Z", "2010-04-28T12:00:01Z"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_LIST, " 1 2  255", "1 2 255"));
    cr_assert_not(wm_test_exi_same_value(WM_EXI_DT_LIST, "1 2", "1 2 3"));
    cr_assert(wm_test_exi_same_value(WM_EXI_DT_ENUM, " red ", "red"));
}

/* ------------------------------------------------------------ SenML */

static const char *senml[] = { "ex1", "ex2", "ex5" };

Test(exi_senml, vectors_decode_to_their_xml)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi, *xml;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        snprintf(rel, sizeof rel, "senml/%s.gen.xml", senml[i]);
        slurp(rel, &xml);
        wm_test_exi_doc sink;
        wm_exi_error e;
        wm_exi_options used;
        cr_assert_eq(decode_to_xml(g, exi, n, NULL, &sink, &e, &used), WM_EXI_OK, "%s: %s", senml[i], e.msg);
        cr_assert(used.strict, "%s: options come from the header", senml[i]);
        same_infoset(&sink, (const char *)xml, senml[i]);
        wm_test_exi_doc_free(&sink);
        free(exi);
        free(xml);
    }
    wm_exi_grammar_free(g);
}

Test(exi_senml, vectors_reencode_to_the_same_bytes)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi, *xml;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        snprintf(rel, sizeof rel, "senml/%s.gen.xml", senml[i]);
        size_t xn = slurp(rel, &xml);
        /* the options are the ones the vector's header states */
        wm_exi_options o;
        wm_exi_header h;
        wm_exi_reader r;
        wm_exi_options_default(&o);
        wm_exi_reader_init(&r, exi, n, NULL);
        cr_assert_eq(wm_exi_header_read(&r, &h, &o), WM_EXI_OK);
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, h.cookie, h.options_present, NULL);
        uint8_t out[1024];
        size_t olen = 0;
        wm_exi_error e;
        cr_assert_eq(wm_exi_encode_xml(&enc, (const char *)xml, xn, out, sizeof out, &olen, &e), WM_EXI_OK, "%s: %s",
                     senml[i], e.msg);
        cr_assert_eq(olen, n, "%s: %zu bytes, expected %zu", senml[i], olen, n);
        cr_assert_eq(memcmp(out, exi, n), 0, "%s: bytes differ", senml[i]);
        wm_exi_encoder_free(&enc);
        free(exi);
        free(xml);
    }
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ W3C interop */

/* The subset's options: alignment from the suffix, fragment from the test
 * name. Not given by the files, found from the streams (and listed in the
 * README): the sequence/all and datatype streams are strict (non-strict codes
 * would be one bit wider), the fragment ones non-strict, and document-01
 * needs Preserve.prefixes (its body carries NS events). The schema of each
 * case is the one its test names; fragment-03/-04 use fragment-b/-c.xsd as
 * their comments describe (3 same-typed / 5 differently typed declarations). */
static const struct interop_case {
    const char *exi, *xsd, *xml;
    bool strict, fragment, prefixes;
    bool either_mode;        /* byte-aligned, first-level codes only: decodes the same strict or not */
} interop_ok[] = {
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.bitPacked", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/sequence-01.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.byteAligned", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/sequence-01.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/all-03.bitPacked", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/all-03.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/fragment-03.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/fragment-b.xsd",
      "interop/schemaInformedGrammar/declaredProductions/fragment-03.xml", false, true, false, false },
    { "interop/datatypes/enumeration/enumeration-valid-04.byteAligned", "interop/datatypes/enumeration/enumeration.xsd",
      "interop/datatypes/enumeration/enumeration-valid-04.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/fragment-04.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/fragment-c.xsd",
      "interop/schemaInformedGrammar/declaredProductions/fragment-04.xml", false, true, false, true },
    { "interop/schemaInformedGrammar/declaredProductions/elementFragment-02b.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment.xsd",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment-02b.xml", false, true, false, true },
    { "interop/schemaInformedGrammar/declaredProductions/elementFragment-03.bitPacked",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment.xsd",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment-03.xml", false, true, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/document-01.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/document.xsd",
      "interop/schemaInformedGrammar/declaredProductions/document-01.xml", false, false, true, false },
};

static void interop_options(const char *file, bool strict, bool fragment, wm_exi_options *o)
{
    wm_exi_options_default(o);
    const char *dot = strrchr(file, '.');
    cr_assert(dot && wm_exi_options_from_suffix(dot + 1, o), "suffix of %s", file);
    o->strict = strict;
    o->fragment = fragment;
}

Test(exi_interop, declared_productions_and_datatypes_decode)
{
    for (size_t i = 0; i < sizeof interop_ok / sizeof interop_ok[0]; i++) {
        const struct interop_case *c = &interop_ok[i];
        wm_exi_grammar *g = schema(c->xsd);
        uint8_t *exi, *xml;
        size_t n = slurp(c->exi, &exi);
        slurp(c->xml, &xml);
        wm_exi_options o;
        interop_options(c->exi, c->strict, c->fragment, &o);
        o.preserve_prefixes = c->prefixes;
        wm_test_exi_doc sink;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &sink, &e, NULL), WM_EXI_OK, "%s: %s", c->exi, e.msg);
        same_infoset(&sink, (const char *)xml, c->exi);
        wm_test_exi_doc_free(&sink);
        free(exi);
        free(xml);
        wm_exi_grammar_free(g);
    }
}

Test(exi_interop, compression_is_refused_with_a_reason)
{
    wm_exi_grammar *g = schema("interop/schemaInformedGrammar/acceptance.xsd");
    const char *files[] = { "interop/schemaInformedGrammar/declaredProductions/sequence-01.compress",
                            "interop/schemaInformedGrammar/declaredProductions/sequence-01.preCompress" };
    for (int i = 0; i < 2; i++) {
        uint8_t *exi;
        size_t n = slurp(files[i], &exi);
        wm_exi_options o;
        interop_options(files[i], true, false, &o);
        wm_test_exi_doc sink;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &sink, &e, NULL), WM_EXI_E_UNSUPPORTED, "%s", files[i]);
        cr_assert(strstr(e.msg, "compression"), "%s: %s", files[i], e.msg);
        wm_test_exi_doc_free(&sink);
        free(exi);
    }
    wm_exi_grammar_free(g);
}

/* The options matter: with the strict option flipped, every stream either
 * fails or decodes to a different document (so the test above can fail),
 * except fragment-04 and elementFragment-02b, whose byte-aligned first-level
 * codes fit both modes: their strict option cannot be inferred. */
Test(exi_interop, flipped_strict_option_changes_the_result)
{
    for (size_t i = 0; i < sizeof interop_ok / sizeof interop_ok[0]; i++) {
        const struct interop_case *c = &interop_ok[i];
        wm_exi_grammar *g = schema(c->xsd);
        uint8_t *exi;
        size_t n = slurp(c->exi, &exi);
        wm_exi_options o;
        interop_options(c->exi, c->strict, c->fragment, &o);
        o.preserve_prefixes = c->prefixes;
        wm_test_exi_doc good, flipped;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &good, &e, NULL), WM_EXI_OK, "%s: %s", c->exi, e.msg);
        o.strict = !c->strict;
        if (o.strict) o.preserve_prefixes = false;
        wm_exi_status st = decode_to_xml(g, exi, n, &o, &flipped, &e, NULL);
        if (c->either_mode)
            cr_assert(st == WM_EXI_OK && !strcmp(good.sink.buf, flipped.sink.buf), "%s: expected the same result in both modes", c->exi);
        else
            cr_assert(st != WM_EXI_OK || strcmp(good.sink.buf, flipped.sink.buf), "%s decodes the same with strict=%d", c->exi, o.strict);
        wm_test_exi_doc_free(&good);
        wm_test_exi_doc_free(&flipped);
        free(exi);
        wm_exi_grammar_free(g);
    }
}

/* ------------------------------------------------------------ round trips */

static void round_trip(const wm_exi_grammar *g, const wm_exi_options *o, bool hdr, const char *xml, const char *ctx)
{
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, o, false, hdr, NULL);
    uint8_t out[8192];
    size_t olen;
    wm_exi_error e;
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s: encode: %s\n%s", ctx,
                 e.msg, xml);
    wm_exi_encoder_free(&enc);
    wm_test_exi_doc sink;
    cr_assert_eq(decode_to_xml(g, out, olen, hdr ? NULL : o, &sink, &e, NULL), WM_EXI_OK, "%s: decode: %s\n%s", ctx, e.msg, xml);
    same_infoset(&sink, xml, ctx);
    wm_test_exi_doc_free(&sink);
}

#if defined(__SANITIZE_ADDRESS__)
#define PACKS 60
#else
#define PACKS 400
#endif

Test(exi_roundtrip, random_senml_packs_all_modes)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    uint64_t seed = 0x5eed5eed1234ull;
    char xml[4096];
    for (int i = 0; i < PACKS; i++) {
        size_t n = wm_senml_gen_pack(&seed, 1 + (unsigned)(i % 12), xml, sizeof xml);
        cr_assert(n);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        round_trip(g, &o, true, xml, "strict bit-packed");
        o.alignment = WM_EXI_BYTE_ALIGNED;
        round_trip(g, &o, false, xml, "strict byte-aligned");
        wm_exi_options_default(&o);
        round_trip(g, &o, i % 2, xml, "non-strict");
        o.value_max_length = 4;
        o.value_partition_capacity = 3;
        round_trip(g, &o, true, xml, "non-strict small string table");
        wm_exi_options_default(&o);
        round_trip(sl, &o, false, xml, "schema-less");
    }
    wm_exi_grammar_free(sl);
    wm_exi_grammar_free(g);
}

Test(exi_roundtrip, undeclared_content_needs_non_strict)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    const char *xml = "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"x\" l=\"[link]\" v=\"abc\"/>"
                      "<extra a=\"1\">text<b/></extra><senml v=\"1.5\"/></sensml>";
    wm_exi_options o;
    wm_exi_options_default(&o);
    round_trip(g, &o, true, xml, "non-strict undeclared");
    o.strict = true;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    uint8_t out[1024];
    size_t olen;
    wm_exi_error e;
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e);
    cr_assert(st == WM_EXI_E_GRAMMAR || st == WM_EXI_E_INPUT, "strict must refuse: %d %s", st, e.msg);
    cr_assert(strstr(e.msg, "strict"), "%s", e.msg);
    wm_exi_encoder_free(&enc);
    wm_exi_grammar_free(g);
}

Test(exi_roundtrip, schemaless_learns_productions)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    const char *xml = "<a xmlns=\"urn:x\" xmlns:p=\"urn:p\" p:k=\"v\"><b>1</b><b>2</b><c/><b>1</b><p:d k=\"v\">mixed<e/>tail</p:d></a>";
    wm_exi_options o;
    wm_exi_options_default(&o);
    round_trip(sl, &o, true, xml, "schema-less");
    o.alignment = WM_EXI_BYTE_ALIGNED;
    o.fragment = true;
    round_trip(sl, &o, true, "<a>1</a><b/><a>2</a>", "schema-less fragment");
    wm_exi_grammar_free(sl);
}

Test(exi_roundtrip, element_fragment_grammar)
{
    /* {}A has several declared types in acceptance.xsd: the relaxed
     * ElementFragment grammar (§8.5.3) carries it, attributes typed by name */
    wm_exi_grammar *g = schema("interop/schemaInformedGrammar/acceptance.xsd");
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.fragment = true;
    const char *xml = "<f:G4 xmlns:f=\"urn:foo\" aK=\"7\"/><A xmlns:f=\"urn:foo\" f:aBoolean=\"true\" f:aL=\"-5\" other=\"x\">"
                      "<B>text</B><f:AB>1</f:AB></A><A xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:nil=\"true\"/>";
    round_trip(g, &o, true, xml, "element fragment");
    o.alignment = WM_EXI_BYTE_ALIGNED;
    round_trip(g, &o, false, xml, "element fragment byte-aligned");
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ bad input */

static int count_events(void *user, const wm_exi_event *ev)
{
    (void)ev;
    ++*(long *)user;
    return 0;
}

Test(exi_errors, truncations_and_bit_flips_end_in_errors)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    uint8_t *exi;
    size_t n = slurp("senml/ex5.gen.exi", &exi);
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, exi, k);
        long events = 0;
        wm_exi_error e;
        wm_exi_status st = wm_exi_decode(&d, cut, k, NULL, count_events, &events, NULL, &e);
        cr_assert_neq(st, WM_EXI_OK, "a stream cut at %zu of %zu bytes decoded", k, n);
        cr_assert(e.bit_pos <= 8 * k, "error position %llu beyond the input", (unsigned long long)e.bit_pos);
        free(cut);
    }
    uint64_t seed = 42;
    for (int i = 0; i < 3000; i++) {
        uint8_t *m = malloc(n);
        memcpy(m, exi, n);
        for (int f = 0; f < 1 + i % 4; f++) {
            uint64_t r = wm_senml_rand(&seed);
            m[r % n] ^= (uint8_t)(1u << ((r >> 20) % 8));
        }
        long events = 0;
        wm_exi_error e;
        wm_exi_status st = wm_exi_decode(&d, m, n, NULL, count_events, &events, NULL, &e);
        if (st) cr_assert(e.msg[0], "an error always has a reason");
        free(m);
    }
    wm_exi_decoder_free(&d);
    free(exi);
    wm_exi_grammar_free(g);
}

Test(exi_errors, memory_cap_and_depth_limit)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    /* a document with many distinct names and values */
    char xml[65536];
    size_t n = 0;
    n += (size_t)sprintf(xml + n, "<r>");
    for (int i = 0; i < 1500; i++) n += (size_t)sprintf(xml + n, "<e%d>value-%d</e%d>", i, i, i);
    sprintf(xml + n, "</r>");
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, sl, &o, false, false, NULL);
    static uint8_t out[65536];
    size_t olen;
    wm_exi_error e;
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_encoder_free(&enc);
    wm_exi_limits lim = { .mem_cap = 128 * 1024 };
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, sl, &lim);
    long events = 0;
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_E_MEMORY, "%s", e.msg);
    wm_exi_decoder_free(&d);
    lim.mem_cap = 0;
    wm_exi_decoder_init(&d, sl, NULL);
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_decoder_free(&d);
    /* nesting */
    n = 0;
    for (int i = 0; i < 40; i++) n += (size_t)sprintf(xml + n, "<d>");
    for (int i = 0; i < 40; i++) n += (size_t)sprintf(xml + n, "</d>");
    wm_exi_encoder_init(&enc, sl, &o, false, false, NULL);
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_encoder_free(&enc);
    lim = (wm_exi_limits){ .max_depth = 16 };
    wm_exi_decoder_init(&d, sl, &lim);
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_E_DEPTH);
    wm_exi_decoder_free(&d);
    wm_exi_grammar_free(sl);
}

Test(exi_errors, impossible_event_code_and_string_index)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.alignment = WM_EXI_BYTE_ALIGNED;
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, sl, NULL);
    long events = 0;
    wm_exi_error e;
    o.fragment = true;
    /* header, FragmentContent: SE(*), ED -> code 5 of 2 */
    const uint8_t bad_code[] = { 0x80, 0x05 };
    cr_assert_eq(wm_exi_decode(&d, bad_code, sizeof bad_code, &o, count_events, &events, NULL, &e), WM_EXI_E_EVENT_CODE);
    /* SE(*) with URI compact id 9 of 3 */
    const uint8_t bad_uri[] = { 0x80, 0x00, 0x0a };
    cr_assert_eq(wm_exi_decode(&d, bad_uri, sizeof bad_uri, &o, count_events, &events, NULL, &e), WM_EXI_E_STRING_INDEX);
    /* a name of 2^40 characters */
    const uint8_t huge[] = { 0x80, 0x00, 0x01, 0x81, 0x80, 0x80, 0x80, 0x80, 0x20 };
    memset(&e, 0, sizeof e);
    cr_assert_eq(wm_exi_decode(&d, huge, sizeof huge, &o, count_events, &events, NULL, &e), WM_EXI_E_LENGTH, "%s", e.msg);
    wm_exi_decoder_free(&d);
    wm_exi_grammar_free(sl);
}

/* ------------------------------------------------------------ grammar files */

/* A .wmg file's body CRC-32 (bytes 16..20 of bytes [20, len)) recomputed with
 * zlib itself, so that edits reach the structural checks behind it. */
static void fix_grammar_crc(uint8_t *b, size_t len)
{
    uint32_t c = (uint32_t)crc32(0, b + 20, (uInt)(len - 20));
    memcpy(b + 16, &c, 4);
}

Test(exi_grammar_io, saved_grammar_decodes_like_the_compiled_one_and_bad_files_are_refused)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    uint8_t *bytes;
    size_t blen;
    cr_assert_eq(wm_exi_grammar_serialize(g, &bytes, &blen), WM_EXI_OK);
    wm_exi_grammar *h = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_grammar_deserialize(bytes, blen, &h, &e), WM_EXI_OK, "%s", e.msg);
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        wm_test_exi_doc a, b;
        cr_assert_eq(decode_to_xml(g, exi, n, NULL, &a, &e, NULL), WM_EXI_OK);
        cr_assert_eq(decode_to_xml(h, exi, n, NULL, &b, &e, NULL), WM_EXI_OK, "%s", e.msg);
        cr_assert_str_eq(a.sink.buf, b.sink.buf);
        wm_test_exi_doc_free(&a);
        wm_test_exi_doc_free(&b);
        free(exi);
    }
    wm_exi_grammar_free(h);
    /* every truncation is refused; corrupted bytes load only as a consistent grammar */
    for (size_t k = 0; k < blen; k += 1 + k / 64) {
        memset(&e, 0, sizeof e);
        cr_assert_eq(wm_exi_grammar_deserialize(bytes, k, &h, &e), WM_EXI_E_GRAMMAR, "truncated at %zu of %zu", k, blen);
        cr_assert_null(h);
    }
    /* one flipped bit anywhere is refused: the header's fields by their
     * checks, the body by its CRC-32 (which detects every 1-bit error) */
    uint8_t *m = malloc(blen);
    for (size_t k = 0; k < blen; k++) {
        memcpy(m, bytes, blen);
        m[k] ^= (uint8_t)(1u << (k % 8));
        memset(&e, 0, sizeof e);
        cr_assert_eq(wm_exi_grammar_deserialize(m, blen, &h, &e), WM_EXI_E_GRAMMAR, "bit %zu of byte %zu flipped: accepted", k % 8, k);
        cr_assert_null(h);
        if (k >= 20) cr_assert(strstr(e.msg, "checksum mismatch") && e.bit_pos == 16 * 8, "byte %zu: %s at bit %llu", k, e.msg,
                               (unsigned long long)e.bit_pos);
    }
    free(m);
    /* behind a recomputed CRC, corrupted bytes load only as a consistent grammar */
    uint64_t seed = 7;
    for (int i = 0; i < 500; i++) {
        m = malloc(blen);
        memcpy(m, bytes, blen);
        uint64_t r = wm_senml_rand(&seed);
        m[20 + r % (blen - 20)] ^= (uint8_t)(1u << ((r >> 32) % 8));
        fix_grammar_crc(m, blen);
        memset(&e, 0, sizeof e);
        if (wm_exi_grammar_deserialize(m, blen, &h, &e) == WM_EXI_OK) {
            uint8_t *exi;
            size_t n = slurp("senml/ex5.gen.exi", &exi);
            wm_test_exi_doc a;
            decode_to_xml(h, exi, n, NULL, &a, &e, NULL); /* any status, never a crash */
            wm_test_exi_doc_free(&a);
            free(exi);
            wm_exi_grammar_free(h);
        }
        free(m);
    }
    free(bytes);
    wm_exi_grammar_free(g);
}

/* A file of another format version is refused as such (not as corrupt),
 * and a structural refusal names the field by its byte offset. */
Test(exi_grammar_io, other_versions_and_bad_structure_are_refused_with_the_byte_offset)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    uint8_t *bytes, *m;
    size_t blen;
    cr_assert_eq(wm_exi_grammar_serialize(g, &bytes, &blen), WM_EXI_OK);
    cr_assert(!memcmp(bytes, "WMEXIG03", 8));
    m = malloc(blen);
    wm_exi_grammar *h = NULL;
    wm_exi_error e;
    static const struct { const char *magic, *want; uint64_t byte; } versions[] = {
        { "WMEXIG01", "format version 01, this build reads version 03 only (written by an older wirematch)", 6 },
        { "WMEXIG10", "format version 10, this build reads version 03 only (written by a newer wirematch)", 6 },
        { "WMEXIGxy", "not a wirematch EXI grammar file", 0 },
        { "\x80\x40\x00\x00\x00\x00\x00\x00", "not a wirematch EXI grammar file", 0 },
    };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        memcpy(m, bytes, blen);
        memcpy(m, versions[i].magic, 8);
        memset(&e, 0, sizeof e);
        cr_assert_eq(wm_exi_grammar_deserialize(m, blen, &h, &e), WM_EXI_E_GRAMMAR);
        cr_assert(strstr(e.msg, versions[i].want) && e.bit_pos == versions[i].byte * 8, "%s: %s at bit %llu", versions[i].want, e.msg,
                  (unsigned long long)e.bit_pos);
    }
    /* the body's layout (codec/exi_grammar_io.c): 20-byte header, 5 record
     * sizes, flags, 10 counts, 4 roots, then uri_lid_first[n_uris],
     * uri_lid_count[n_uris], lname_uri[n_lids], types, states, prods, tgrams, elems */
    uint32_t c[10];
    memcpy(c, bytes + 44, sizeof c);
    size_t lid_first = 100, elems = lid_first + 8 * (size_t)c[0] + 4 * (size_t)c[1] + c[2] * sizeof(wm_exi_datatype) +
                                    c[3] * sizeof(wm_exi_state) + c[4] * sizeof(wm_exi_prod) + c[5] * sizeof(wm_exi_tgram);
    static const struct { const char *want; } edits[] = { { "URI 1: its local names start at 99" }, { "a flag is neither 0 nor 1" },
                                                          { "element 1: (URI" } };
    const size_t at[] = { lid_first + 4, elems + offsetof(wm_exi_elem, nillable), elems + sizeof(wm_exi_elem) + offsetof(wm_exi_elem, lid) };
    for (size_t i = 0; i < 3; i++) {
        memcpy(m, bytes, blen);
        if (i == 0) memcpy(m + at[i], &(uint32_t){ 99 }, 4);
        else if (i == 1) m[at[i]] = 2;
        else memcpy(m + at[i], &(uint32_t){ 9999 }, 4);
        fix_grammar_crc(m, blen);
        memset(&e, 0, sizeof e);
        cr_assert_eq(wm_exi_grammar_deserialize(m, blen, &h, &e), WM_EXI_E_GRAMMAR, "edit %zu accepted", i);
        cr_assert(strstr(e.msg, edits[i].want) && (i != 2 || strstr(e.msg, "local name 9999")), "edit %zu: '%s' lacks '%s'", i, e.msg,
                  edits[i].want);
        uint64_t want_at = i == 2 ? elems + sizeof(wm_exi_elem) + offsetof(wm_exi_elem, uri) : at[i];
        cr_assert_eq(e.bit_pos, want_at * 8, "edit %zu: %s at byte %llu, not %zu", i, e.msg, (unsigned long long)(e.bit_pos / 8), (size_t)want_at);
    }
    /* cut or extended: the length field says so */
    memset(&e, 0, sizeof e);
    cr_assert_eq(wm_exi_grammar_deserialize(bytes, blen - 1, &h, &e), WM_EXI_E_GRAMMAR);
    cr_assert(strstr(e.msg, "truncated: the header says"), "%s", e.msg);
    uint8_t *longer = calloc(1, blen + 3);
    memcpy(longer, bytes, blen);
    memset(&e, 0, sizeof e);
    cr_assert_eq(wm_exi_grammar_deserialize(longer, blen + 3, &h, &e), WM_EXI_E_GRAMMAR);
    cr_assert(strstr(e.msg, "3 trailing bytes") && e.bit_pos == blen * 8, "%s at bit %llu", e.msg, (unsigned long long)e.bit_pos);
    free(longer);
    free(m);
    free(bytes);
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ XSD compiler */

static wm_exi_status compile_str(const char *xsd, wm_exi_error *e)
{
    wm_exi_grammar *g = NULL;
    wm_exi_status st = wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, e);
    wm_exi_grammar_free(g);
    return st;
}

Test(exi_xsd, bad_schemas_are_refused_with_reasons)
{
    wm_exi_error e = { 0 };
    cr_assert_eq(compile_str("<notaschema/>", &e), WM_EXI_E_SCHEMA);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:element name=\"a\" type=\"xs:nosuch\"/></xs:schema>", &e),
                 WM_EXI_E_SCHEMA);
    cr_assert(strstr(e.msg, "nosuch"), "%s", e.msg);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:include schemaLocation=\"http://example.com/x.xsd\"/></xs:schema>", &e),
                 WM_EXI_E_SCHEMA);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:element name=\"a\"><xs:complexType><xs:sequence>"
                             "<xs:element name=\"b\" maxOccurs=\"50000\"/></xs:sequence></xs:complexType></xs:element></xs:schema>", &e),
                 WM_EXI_E_GRAMMAR);
}

Test(exi_xsd, grammar_features_round_trip)
{
    /* substitution groups, choice, bounded integers, enumerations, lists,
     * nillable, xsi:type to a derived type, attribute wildcard */
    const char *xsd =
        "<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\" xmlns:t=\"urn:t\" targetNamespace=\"urn:t\" elementFormDefault=\"qualified\">"
        "<xs:element name=\"head\" type=\"xs:string\" abstract=\"true\"/>"
        "<xs:element name=\"m1\" type=\"xs:string\" substitutionGroup=\"t:head\"/>"
        "<xs:element name=\"m2\" type=\"xs:string\" substitutionGroup=\"t:head\"/>"
        "<xs:simpleType name=\"small\"><xs:restriction base=\"xs:int\"><xs:minInclusive value=\"-3\"/><xs:maxInclusive value=\"9\"/></xs:restriction></xs:simpleType>"
        "<xs:simpleType name=\"color\"><xs:restriction base=\"xs:token\"><xs:enumeration value=\"red\"/><xs:enumeration value=\"blue\"/></xs:restriction></xs:simpleType>"
        "<xs:complexType name=\"base\"><xs:sequence><xs:element name=\"x\" type=\"t:small\"/></xs:sequence></xs:complexType>"
        "<xs:complexType name=\"derived\"><xs:complexContent><xs:extension base=\"t:base\"><xs:sequence>"
        "<xs:element name=\"y\" type=\"xs:dateTime\"/></xs:sequence><xs:attribute name=\"c\" type=\"t:color\"/></xs:extension></xs:complexContent></xs:complexType>"
        "<xs:element name=\"root\"><xs:complexType><xs:sequence>"
        "<xs:choice maxOccurs=\"unbounded\"><xs:element ref=\"t:head\"/><xs:element name=\"n\" type=\"xs:decimal\" nillable=\"true\"/></xs:choice>"
        "<xs:element name=\"l\"><xs:simpleType><xs:list itemType=\"xs:unsignedByte\"/></xs:simpleType></xs:element>"
        "<xs:element name=\"b\" type=\"t:base\" maxOccurs=\"3\"/>"
        "<xs:element name=\"bin\" type=\"xs:hexBinary\" minOccurs=\"0\"/>"
        "</xs:sequence><xs:anyAttribute namespace=\"##other\"/></xs:complexType></xs:element></xs:schema>";
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, &e), WM_EXI_OK, "%s", e.msg);
    const char *xml =
        "<root xmlns=\"urn:t\" xmlns:o=\"urn:o\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" o:z=\"1\">"
        "<m2>two</m2><n>-12.50</n><m1>one</m1><n xsi:nil=\"true\"/>"
        "<l> 1 2  255</l><b><x>-3</x></b><b xsi:type=\"derived\" c=\"blue\"><x>9</x><y>2010-04-28T12:00:00Z</y></b>"
        "<bin>0aff</bin></root>";
    wm_exi_options o;
    for (int strict = 0; strict < 2; strict++) {
        wm_exi_options_default(&o);
        o.strict = strict;
        if (strict) { /* strict: no undeclared attribute */
            const char *xml2 =
                "<root xmlns=\"urn:t\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">"
                "<m2>two</m2><n>-12.50</n><m1>one</m1><n xsi:nil=\"true\"/>"
                "<l> 1 2  255</l><b><x>-3</x></b><b xsi:type=\"derived\" c=\"blue\"><x>9</x><y>2010-04-28T12:00:00Z</y></b>"
                "<bin>0AFF</bin></root>";
            round_trip(g, &o, true, xml2, "xsd features strict");
        } else round_trip(g, &o, true, xml, "xsd features non-strict");
    }
    wm_exi_grammar_free(g);
}
