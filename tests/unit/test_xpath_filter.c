/* Content filters by example: the XPath subset parser's refusals (reason and
 * position), and the filter automaton on a schema with typed text content —
 * the example of Käbisch et al. (WEBIST 2014, Fig. 3: SOAP envelope with a
 * status header and temperature/humidity bodies) and its four queries —,
 * schema typing refusals, enumerations, early stop (and its count of the
 * undecided queries), the candidate entry
 * point, range cluster keys at the infinities, the clusters' per-document
 * state handed from one document to the next however it ended, and
 * truncated streams (what early stop and whole-stream validation
 * each guarantee). Expected results follow from XPath 1.0 semantics
 * on the documents written here. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"
#include "matcher/xpath_filter_int.h" /* cluster_rows_and_entry_by_entry: which clusters have rows */
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

/* ------------------------------------------------------------- parser */

static void refused(const char *q, unsigned pos, const char *needle)
{
    wm_xp_ns ns = { "s", "urn:s" };
    wm_xp_query out;
    wm_xp_error e;
    cr_assert_not(wm_xp_parse(q, strlen(q), &ns, 1, &out, &e), "accepted: %s", q);
    cr_assert_eq(e.pos, pos, "%s: position %u, expected %u (%s)", q, e.pos, pos, e.msg);
    cr_assert(strstr(e.msg, needle), "%s: message '%s' lacks '%s'", q, e.msg, needle);
}

static void accepted(const char *q, unsigned steps)
{
    wm_xp_ns ns = { "s", "urn:s" };
    wm_xp_query out;
    wm_xp_error e;
    cr_assert(wm_xp_parse(q, strlen(q), &ns, 1, &out, &e), "%s refused at %u: %s", q, e.pos, e.msg);
    cr_assert_eq(out.n_steps, steps, "%s: %u steps", q, out.n_steps);
    wm_xp_query_free(&out);
}

Test(xpath_parse, subset_accepted)
{
    accepted("/s:a/s:b", 2);
    accepted("//s:b[@n = 'x' and (@v > 1.5 or not(@t))]", 1);
    accepted("/s:a//*[contains(@n, \"y\") or starts-with(@n, 'z')]", 2);
    accepted("//s:b[matches(@n, '^a+$', 'i')]", 1);
    accepted("//s:*[text() >= -3]", 1);
    accepted("/s:a/s:b[. != 'q'][@v <= 2]", 2);
    accepted("/s:a/@id", 1);                     /* folded into the step before */
    accepted("//@id", 1);                        /* any element with @id */
    accepted("/s:a/s:b/@v[. > 1]", 2);
    accepted(" / s:a [ 5 < @v ] ", 1);
}

Test(xpath_parse, outside_subset_refused_with_position)
{
    refused("s:a/s:b", 1, "absolute path");
    refused("/s:a/s:b[1]", 10, "positional");
    refused("//x:y", 3, "not bound");
    refused("/s:a[s:b = 1]", 6, "child paths");
    refused("/s:a[@b = @c]", 11, "found the path '@c': comparing two nodes");
    refused("/s:a[count(@b) > 1]", 6, "function 'count()'");
    /* What stands where a literal belongs is named for what it is. */
    refused("/s:a[@b = true()]", 11, "found a function call 'true()'");
    refused("/s:a[@b > -]", 11, "found the operator '-'");
    refused("/s:a[@b > ]", 11, "found the end of the predicate ']'");
    refused("/s:a[@b > $x]", 11, "found the variable '$x'");
    refused("/s:a[@b >= <= 1]", 12, "found the operator '<='");
    refused("/s:a[@b = and]", 11, "found the operator 'and'");
    refused("/s:a[@b = (1)]", 11, "parenthesised");
    refused("/s:a[@b = text()]", 11, "found the path 'text()': comparing two nodes");
    refused("/s:a[@b = s:c/@d]", 11, "found the path 's:c/@d': comparing two nodes");
    refused("/s:a/@b/s:c", 8, "last step");
    refused("/s:a[@b = 'x]", 11, "unterminated");
    refused("/s:a[@b = 1e5]", 12, "exponent");
    refused("/child::s:a", 2, "axis");
    refused("/s:a/..", 6, "'..'");
    refused("/s:a[@*]", 7, "wildcard");
    refused("", 1, "empty");
    refused("/s:a[(((((((((((((((((((((((((((((((((@b)))))))))))))))))))))))))))))))))]", 38, "nested deeper");
    char big[WM_XP_MAX_LEN + 8];
    memset(big, 'a', sizeof big);
    big[0] = '/';
    wm_xp_query out;
    wm_xp_error e;
    cr_assert_not(wm_xp_parse(big, sizeof big, NULL, 0, &out, &e));
    cr_assert(strstr(e.msg, "longer than"), "%s", e.msg);
}

/* wm_xp_syntax_check (the proxy's --state records): any prefix counts as
 * bound, every other refusal of wm_xp_parse stays, at the same position. */
Test(xpath_parse, syntax_check_binds_every_prefix_and_refuses_the_rest)
{
    wm_xp_error e;
    const char *ok[] = { "//x:y", "/p:a/q:b[@r:c > 1]", "//s:*[contains(@n, 'y')]", "//xml:a[@xml:lang = 'en']" };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        cr_assert(wm_xp_syntax_check(ok[i], strlen(ok[i]), &e), "%s refused at %u: %s", ok[i], e.pos, e.msg);
    struct { const char *q; unsigned pos; const char *needle; } bad[] = {
        { "s:a/s:b", 1, "absolute path" }, { "/x:a[@b > ]", 11, "found the end of the predicate" },
        { "//s:senml[@v>", 14, "found the end of the query" }, { "/s:a[@b = 'x]", 11, "unterminated" }, { "", 1, "empty" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_not(wm_xp_syntax_check(bad[i].q, strlen(bad[i].q), &e), "accepted: %s", bad[i].q);
        cr_assert_eq(e.pos, bad[i].pos, "%s: position %u, expected %u (%s)", bad[i].q, e.pos, bad[i].pos, e.msg);
        cr_assert(strstr(e.msg, bad[i].needle), "%s: message '%s' lacks '%s'", bad[i].q, e.msg, bad[i].needle);
    }
    /* Not a way around the bindings: wm_xp_parse still refuses an unbound one. */
    wm_xp_query out;
    cr_assert_not(wm_xp_parse("//x:y", 5, NULL, 0, &out, &e));
}

Test(xpath_parse, ns_binding)
{
    char s1[] = "s=urn:x", s2[] = "=urn:x", s3[] = "a:b=urn", s4[] = "p=";
    wm_xp_ns ns;
    cr_assert(wm_xp_ns_parse(s1, &ns));
    cr_assert_str_eq(ns.prefix, "s");
    cr_assert_str_eq(ns.uri, "urn:x");
    cr_assert_not(wm_xp_ns_parse(s2, &ns));
    cr_assert_not(wm_xp_ns_parse(s3, &ns));
    cr_assert_not(wm_xp_ns_parse(s4, &ns));
}

Test(xpath_parse, ns_conflict)
{
    const wm_xp_ns ns[] = { { "s", "urn:a" }, { "t", "urn:b" } };
    char why[128] = "untouched";
    cr_assert_null(wm_xp_ns_conflict(ns, 2, &(wm_xp_ns){ "s", "urn:a" }, why, sizeof why), "the same binding twice");
    cr_assert_null(wm_xp_ns_conflict(ns, 2, &(wm_xp_ns){ "u", "urn:a" }, why, sizeof why), "another prefix, same URI");
    cr_assert_str_eq(why, "untouched");
    cr_assert_eq(wm_xp_ns_conflict(ns, 2, &(wm_xp_ns){ "t", "urn:c" }, why, sizeof why), &ns[1]);
    cr_assert_str_eq(why, "prefix 't' bound twice, to 'urn:b' and 'urn:c'");
    cr_assert_eq(wm_xp_ns_conflict(ns, 2, &(wm_xp_ns){ "s", "urn:c" }, NULL, 0), &ns[0]);
    cr_assert_null(wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "s", "urn:c" }, why, sizeof why));
}

/* Namespaces in XML 1.0 §3: "xml" may be declared, but only to its own URI;
 * "xmlns" not at all; neither URI under another prefix. */
Test(xpath_parse, ns_reserved_prefixes)
{
    const wm_xp_ns ns[] = { { "s", "urn:a" } };
    char why[160] = "untouched";
    cr_assert_null(wm_xp_ns_conflict(ns, 1, &(wm_xp_ns){ "xml", "http://www.w3.org/XML/1998/namespace" }, why, sizeof why));
    cr_assert_str_eq(why, "untouched");
    const wm_xp_ns *r = wm_xp_ns_conflict(ns, 1, &(wm_xp_ns){ "xml", "urn:x" }, why, sizeof why);
    cr_assert(r && !strcmp(r->prefix, "xml"));
    cr_assert_str_eq(why, "prefix 'xml' is bound to 'http://www.w3.org/XML/1998/namespace' and to no other URI"
                          " (Namespaces in XML 1.0 §3)");
    r = wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "xmlns", "urn:y" }, why, sizeof why);
    cr_assert(r && !strcmp(r->prefix, "xmlns"));
    cr_assert(strstr(why, "prefix 'xmlns' is reserved and must not be declared"), "%s", why);
    cr_assert_not_null(wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "xmlns", "http://www.w3.org/2000/xmlns/" }, NULL, 0));
    cr_assert_not_null(wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "x", "http://www.w3.org/XML/1998/namespace" }, why, sizeof why));
    cr_assert(strstr(why, "bound to prefix 'xml' only"), "%s", why);
    cr_assert_not_null(wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "x", "http://www.w3.org/2000/xmlns/" }, why, sizeof why));
    cr_assert(strstr(why, "must not be bound to a prefix"), "%s", why);
    cr_assert_null(wm_xp_ns_conflict(ns, 0, &(wm_xp_ns){ "xmlfoo", "urn:z" }, why, sizeof why), "reserved for the future, not an error");
}

/* ------------------------------------------------------------- filter */

static const char paper_xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
    "<xs:element name='Envelope'><xs:complexType><xs:sequence>"
    "  <xs:element name='Header' minOccurs='0'><xs:complexType><xs:sequence>"
    "    <xs:element name='status' type='xs:string'/></xs:sequence></xs:complexType></xs:element>"
    "  <xs:element name='Body'><xs:complexType><xs:choice>"
    "    <xs:element name='getTemp'/><xs:element name='getHum'/>"
    "    <xs:element name='Temperature'><xs:complexType><xs:sequence>"
    "      <xs:element name='scale' minOccurs='0'><xs:simpleType><xs:restriction base='xs:string'>"
    "        <xs:enumeration value='Cel'/><xs:enumeration value='Fahr'/></xs:restriction></xs:simpleType></xs:element>"
    "      <xs:element name='value' type='xs:decimal'/></xs:sequence></xs:complexType></xs:element>"
    "    <xs:element name='Humidity'><xs:complexType><xs:attribute name='pct' type='xs:int'/></xs:complexType></xs:element>"
    "  </xs:choice></xs:complexType></xs:element>"
    "</xs:sequence></xs:complexType></xs:element></xs:schema>";

static wm_exi_grammar *paper_grammar(void)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(paper_xsd, &e);
    cr_assert_not_null(g, "%s", e.msg);
    return g;
}

static size_t encode(const wm_exi_grammar *g, const char *xml, uint8_t *out, size_t cap)
{
    wm_exi_error e;
    size_t n = wm_test_exi_encode(g, xml, true, out, cap, &e);
    cr_assert(n, "%s", e.msg);
    return n;
}

/* The SenML schema (senml.gen.xsd) of the cluster tests, or fails the test;
 * their queries bind the prefix s to its namespace (senml_ns). */
static wm_exi_grammar *senml_or_fail(void)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    return g;
}
static const wm_xp_ns senml_ns = { "s", "urn:ietf:params:xml:ns:senml" };

/* The SenML pack of the records recs (XML elements senml), encoded strict
 * into exi[0..cap); returns its length, or fails the test. */
static size_t senml_pack(const wm_exi_grammar *g, const char *recs, uint8_t *exi, size_t cap)
{
    char xml[2048];
    wm_exi_error e = { 0 };
    cr_assert_lt((size_t)snprintf(xml, sizeof xml, "<sensml xmlns='urn:ietf:params:xml:ns:senml'>%s</sensml>", recs), sizeof xml);
    size_t len = wm_test_exi_encode(g, xml, true, exi, cap, &e);
    cr_assert(len, "%s", e.msg);
    return len;
}

/* Runs queries over xml; returns the match bitmap. */
static uint64_t run(wm_exi_grammar *g, const char *const *qs, uint32_t n, const char *xml, bool *early)
{
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, n, NULL, 0, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[1024];
    size_t len = encode(g, xml, exi, sizeof exi);
    uint64_t m = 0;
    wm_exi_error e;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, early, &e), WM_XPF_OK, "%s", e.msg);
    m = wm_test_xpf_by_query(f, &m);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    return m;
}

static const char *const paper_q[] = {
    "//Humidity",                              /* Q1 */
    "//status[text() = 'OK']",                 /* Q2 */
    "//Temperature/value[text() < 21.0]",      /* Q3 */
    "//Temperature/value[text() > 20.5]",      /* Q4 */
};

Test(xpath_filter, paper_queries_on_typed_text)
{
    wm_exi_grammar *g = paper_grammar();
    const char *d1 = "<Envelope><Header><status>OK</status></Header><Body><Temperature><value>20.7</value></Temperature></Body></Envelope>";
    const char *d2 = "<Envelope><Header><status>FAIL</status></Header><Body><Humidity pct='40'/></Body></Envelope>";
    const char *d3 = "<Envelope><Body><Temperature><scale>Cel</scale><value>21.00</value></Temperature></Body></Envelope>";
    bool early;
    cr_assert_eq(run(g, paper_q, 4, d1, &early), 0xe);   /* Q2, Q3, Q4 */
    cr_assert_eq(run(g, paper_q, 4, d2, &early), 0x1);   /* Q1 */
    cr_assert_eq(run(g, paper_q, 4, d3, &early), 0x8);   /* 21.00 is not < 21.0 (numbers, not text); > 20.5 */
    wm_exi_grammar_free(g);
}

Test(xpath_filter, typed_values_and_enumerations)
{
    wm_exi_grammar *g = paper_grammar();
    const char *d = "<Envelope><Body><Temperature><scale>Fahr</scale><value>-0.50</value></Temperature></Body></Envelope>";
    const char *qs[] = {
        "//value[. = -0.5]",                   /* decimal compared as a number */
        "//scale[. = 'Fahr']",                 /* enumeration value as text */
        "//scale[starts-with(., 'F') and not(. = 'Cel')]",
        "//value[. > -1 and . < 0]",
        "//value[. != -0.5]",
        "//scale[text() = 'Cel']",
        "/Envelope/Body/Temperature",
        "/Envelope/Body/Humidity[not(@pct)]",  /* no Humidity: nothing selected */
    };
    bool early;
    cr_assert_eq(run(g, qs, 8, d, &early), 0x4f);
    const char *d2 = "<Envelope><Body><Humidity/></Body></Envelope>";
    cr_assert_eq(run(g, qs, 8, d2, &early), 0x80);
    wm_exi_grammar_free(g);
}

/* A literal that is NaN as a number ('x', 'INF': XPath 1.0 number() knows no
 * INF) makes its comparison false everywhere but leaves the other tests of a
 * slot alone: it once sorted among the thresholds of @pct's triggers and cut
 * the scan of the others short (pct 40 > 3 was never seen). */
Test(xpath_filter, nan_literal_beside_thresholds)
{
    wm_exi_grammar *g = paper_grammar();
    const char *d = "<Envelope><Body><Humidity pct='40'/></Body></Envelope>";
    const char *qs[] = {
        "//Humidity[@pct > 'x' or @pct > 3]",
        "//Humidity[@pct < 'INF' or @pct < 50]",
        "//Humidity[@pct >= '-INF' or @pct >= 40]",
        "//Humidity[@pct > 'x']",
        "//Humidity[@pct >= 'x' or @pct <= 'x']",
        "//Humidity[@pct <= 'x' or @pct <= 39]",
    };
    bool early;
    cr_assert_eq(run(g, qs, 6, d, &early), 0x7);
    wm_exi_grammar_free(g);
}

/* The string value of an element without character content is '' (XPath
 * 1.0 §5.2), so `. = ''` holds there and `not(. = '')` does not — also
 * beside a numeric test that holds, where not(S = 'L') guards are merged
 * into one cluster per slot and operator and the element's value of S picks
 * the literal whose entries are skipped: without a value none was, so
 * `[@pct > 3][not(. = '')]` matched. Alone and together, with `text() = ''`
 * (false there: no text node) beside it, and on many queries (clusters with
 * rows). */
Test(xpath_filter, not_empty_string_value_beside_numeric_test)
{
    wm_exi_grammar *g = paper_grammar();
    const char *d = "<Envelope><Body><Humidity pct='40'/></Body></Envelope>";
    const char *qs[] = {
        "//Humidity[@pct > 3][not(. = '')]",
        "//Humidity[not(. = '')][@pct > 3]",
        "//Humidity[@pct > 3 and not(. = '')]",
        "//Humidity[@pct < 50][not(. = '')]",
        "//Humidity[not(. = '')]",
        "//Humidity[@pct > 3][. = '']",        /* 5: true */
        "//Humidity[@pct > 3][not(. = 'x')]",  /* 6: true */
        "//Humidity[@pct > 3][. != '']",
        "//Humidity[@pct > 3][not(text() = '')]",  /* 8: true */
        "//Humidity[@pct > 2][not(text() = '')]",  /* 9: true */
    };
    bool early;
    for (uint32_t i = 0; i < 10; i++)
        cr_assert_eq(run(g, qs + i, 1, d, &early), i == 5 || i == 6 || i >= 8 ? 1u : 0u, "alone: %s", qs[i]);
    cr_assert_eq(run(g, qs, 10, d, &early), 0x360);
    /* many: thresholds 0..199 under not(. = '') and under not(. = 'x'), so the merged clusters have rows */
    static char qt[400][64];
    const char *many[400];
    for (int i = 0; i < 400; i++) {
        snprintf(qt[i], sizeof qt[i], "//Humidity[@pct > %d][not(. = '%s')]", i % 200, i < 200 ? "" : "x");
        many[i] = qt[i];
    }
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, many, 400, NULL, 0, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[1024];
    size_t len = encode(g, d, exi, sizeof exi);
    uint64_t m[7] = { 0 };
    wm_exi_error e;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, m, &early, &e), WM_XPF_OK, "%s", e.msg);
    for (int i = 0; i < 400; i++)
        cr_assert_eq(wm_test_xpf_hit(f, m, (uint32_t)i), i >= 200 && i % 200 < 40, "%s", many[i]);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* XML cannot give an element the same attribute twice; an EXI stream can
 * (schema-less or non-strict: AT(*) again). The filter takes the first
 * value of a slot in an element and ignores the rest, so a trigger fires at
 * most once per element (the evaluator's per-element buffers are sized on
 * that): 3 elements of 40 duplicate n and v each, under 48 queries whose
 * clusters the duplicates would fire again and again. */
Test(xpath_filter, duplicate_attributes_first_value_counts)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert_not_null(g);
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    static uint8_t exi[16384];
    size_t len = 0;
    cr_assert_eq(wm_exi_encode_start(&enc, exi, sizeof exi, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert_eq(wm_exi_encode_se(&enc, "", 0, "r", 1), WM_EXI_OK);
    for (int el = 0; el < 3; el++) {
        cr_assert_eq(wm_exi_encode_se(&enc, "", 0, "a", 1), WM_EXI_OK);
        for (int k = 0; k < 40; k++) {
            const char *n = k == 0 ? "x" : "y";
            char v[16];
            snprintf(v, sizeof v, "%d", k == 0 ? 5 : 100 + k);
            cr_assert_eq(wm_exi_encode_at(&enc, "", 0, "n", 1, n, 1), WM_EXI_OK);
            cr_assert_eq(wm_exi_encode_at(&enc, "", 0, "v", 1, v, strlen(v)), WM_EXI_OK, "%s", v);
        }
        cr_assert_eq(wm_exi_encode_ee(&enc), WM_EXI_OK);
    }
    cr_assert_eq(wm_exi_encode_ee(&enc), WM_EXI_OK);
    cr_assert_eq(wm_exi_encode_end(&enc, &len), WM_EXI_OK);
    wm_exi_encoder_free(&enc);
    /* queries 0..23: n = 'x' and v > i (true for i < 5: the first v is 5);
     * 24..47: n = 'y' and v > i (never: the first n is 'x') */
    static char qt[48][64];
    const char *qs[48];
    for (int i = 0; i < 48; i++) {
        snprintf(qt[i], sizeof qt[i], "//a[@n = '%s' and @v > %d]", i < 24 ? "x" : "y", i % 24);
        qs[i] = qt[i];
    }
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 48, NULL, 0, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint64_t m = 0;
    wm_exi_error xe;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &xe), WM_XPF_OK, "%s", xe.msg);
    m = wm_test_xpf_by_query(f, &m);
    cr_assert_eq(m, 0x1f, "matched %#llx", (unsigned long long)m);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

static void type_refused(const char *q, const char *needle)
{
    wm_exi_grammar *g = paper_grammar();
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    const char *qs[] = { "//Humidity", q };
    cr_assert_eq(wm_xpf_compile(g, qs, 2, NULL, 0, &f, &fe), WM_XPF_E_TYPE, "%s accepted", q);
    cr_assert_eq(fe.query, 1);
    cr_assert_gt(fe.pos, 0);
    cr_assert(strstr(fe.msg, needle), "%s: '%s'", q, fe.msg);
    wm_exi_grammar_free(g);
}

Test(xpath_filter, schema_typing_refusals)
{
    type_refused("//value[. = '21']", "number");
    type_refused("//Humidity[contains(@pct, '4')]", "number");
    type_refused("//Body[text() = 'x']", "simple content");
    type_refused("/Envelope[. = '']", "simple content");
}

Test(xpath_filter, early_stop_and_candidates)
{
    wm_exi_grammar *g = paper_grammar();
    const char *d = "<Envelope><Header><status>OK</status></Header><Body><Temperature><value>3</value></Temperature></Body></Envelope>";
    const char *one[] = { "//status[. = 'OK']" };
    bool early = false;
    cr_assert_eq(run(g, one, 1, d, &early), 1);
    cr_assert(early, "decided at the status element, the rest need not be decoded");
    const char *never[] = { "//Humidity" };
    cr_assert_eq(run(g, never, 1, d, &early), 0);
    cr_assert_not(early);
    /* candidate entry point: only the listed queries are decided */
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, paper_q, 4, NULL, 0, &f, &fe), WM_XPF_OK);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[1024];
    size_t len = encode(g, "<Envelope><Header><status>OK</status></Header><Body><Temperature><value>20.7</value></Temperature></Body></Envelope>", exi, sizeof exi);
    uint64_t m;
    wm_exi_error e;
    uint32_t cand[] = { 1, 3 };
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, cand, 2, &m, &early, &e), WM_XPF_OK);
    cr_assert_eq(wm_test_xpf_by_query(f, &m), 0xa);
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, cand, 0, &m, &early, &e), WM_XPF_OK);
    cr_assert_eq(m, 0);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

static int no_event(void *user, const wm_exi_event *ev)
{
    (void)user;
    (void)ev;
    return 0;
}

/* Truncated streams, cut at every byte. What each mode promises
 * (wm_xpf_ctx_set_whole_stream): with early stop, a cut after the point
 * where the queries are decided is not seen — the prefix comes back OK with
 * the full stream's answer and stopped_early set; with whole-stream
 * validation the filter accepts exactly the prefixes our decoder accepts
 * (none here: every cut loses events), and everything else is an error with
 * a reason and a bit position, never a match. */
Test(xpath_filter, truncated_streams)
{
    wm_exi_grammar *g = paper_grammar();
    const char *qs[] = { "//status[. = 'OK']" };
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 1, NULL, 0, &f, &fe), WM_XPF_OK);
    wm_xpf_ctx *early_ctx = wm_xpf_ctx_new(f, NULL), *whole_ctx = wm_xpf_ctx_new(f, NULL);
    wm_xpf_ctx_set_whole_stream(whole_ctx, true);
    uint8_t exi[1024];
    size_t len = encode(g, "<Envelope><Header><status>OK</status></Header><Body><Temperature><value>20.7</value></Temperature>"
                           "</Body></Envelope>", exi, sizeof exi);
    uint64_t m;
    bool early;
    wm_exi_error e;
    cr_assert_eq(wm_xpf_match(whole_ctx, exi, len, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(m, 1);
    cr_assert(early, "decided at the status element, before the end");
    unsigned early_ok = 0;
    for (size_t cut = 0; cut < len; cut++) {
        wm_exi_decoder dec;
        wm_exi_decoder_init(&dec, g, NULL);
        bool decoder_ok = wm_exi_decode(&dec, exi, cut, NULL, no_event, NULL, NULL, &e) == WM_EXI_OK;
        wm_exi_decoder_free(&dec);
        cr_assert_not(decoder_ok, "cut at %zu decodes: the test needs a document whose every prefix is invalid", cut);
        m = 0;
        wm_xpf_status st = wm_xpf_match(early_ctx, exi, cut, NULL, NULL, 0, &m, &early, &e);
        if (st == WM_XPF_OK) {
            cr_assert(early && m == 1, "cut at %zu: early stop accepted a prefix that does not decide the query", cut);
            early_ok++;
        } else {
            cr_assert_eq(st, WM_XPF_E_DECODE);
        }
        memset(&e, 0, sizeof e);
        st = wm_xpf_match(whole_ctx, exi, cut, NULL, NULL, 0, &m, &early, &e);
        cr_assert_eq(st, WM_XPF_E_DECODE, "cut at %zu of %zu: whole-stream validation accepted a truncated stream", cut, len);
        cr_assert(e.msg[0] && e.status != WM_EXI_OK, "cut at %zu: no reason", cut);
        cr_assert_leq(e.bit_pos, (uint64_t)cut * 8, "cut at %zu: error at bit %llu, beyond the data", cut,
                      (unsigned long long)e.bit_pos);
    }
    /* the limitation of early stop is real: the cuts after the status element pass there */
    cr_assert_gt(early_ok, 0);
    wm_xpf_ctx_free(early_ctx);
    wm_xpf_ctx_free(whole_ctx);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A query decided by an attribute stops decoding at its element's next
 * event (the early stop is asked at element events, not after every
 * value), not at the document's end: with early stop, the first record's n
 * decides "@n = 'a'", so the stream cut in its middle (records later)
 * still answers OK, stopped early; whole-stream validation refuses the
 * same cut. */
Test(xpath_filter, decided_by_an_attribute_stops_at_its_element)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    const char *qs[] = { "/s:sensml/s:senml[@n = 'a']" };
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 1, &senml_ns, 1, &f, &fe), WM_XPF_OK, "%s", fe.msg);
    char xml[2048] = "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"a\" u=\"V\" v=\"1\"/>";
    for (int i = 0; i < 12; i++) strcat(xml, "<senml n=\"other\" u=\"Cel\" v=\"22.5\"/>");
    strcat(xml, "</sensml>");
    uint8_t exi[1024];
    size_t len = wm_test_exi_encode(g, xml, true, exi, sizeof exi, &e);
    cr_assert(len > 40, "%s", e.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL), *whole = wm_xpf_ctx_new(f, NULL);
    wm_xpf_ctx_set_whole_stream(whole, true);
    uint64_t m = 0;
    bool early = false;
    cr_assert_eq(wm_xpf_match(c, exi, len / 2, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "cut at %zu of %zu: %s", len / 2, len, e.msg);
    cr_assert(m == 1 && early);
    cr_assert_eq(wm_xpf_match(whole, exi, len / 2, NULL, NULL, 0, &m, &early, &e), WM_XPF_E_DECODE);
    wm_xpf_ctx_free(c);
    wm_xpf_ctx_free(whole);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

Test(xpath_filter, bad_pattern_refused)
{
    wm_exi_grammar *g = paper_grammar();
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    const char *qs[] = { "//status[matches(., '(unclosed')]" };
    cr_assert_eq(wm_xpf_compile(g, qs, 1, NULL, 0, &f, &fe), WM_XPF_E_PATTERN);
    cr_assert_eq(fe.query, 0);
    cr_assert_eq(fe.pos, 10);
    wm_exi_grammar_free(g);
}

Test(xpath_filter, schema_rules_out_queries_in_strict_streams)
{
    wm_exi_grammar *g = paper_grammar();
    /* (//Header/Humidity would stay possible: getTemp is of xs:anyType, whose wildcard admits any element) */
    const char *qs[] = { "/Envelope", "/Envelope/Header/Temperature", "/Body", "/Envelope/Header/Humidity[@pct > 1]" };
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 4, NULL, 0, &f, &fe), WM_XPF_OK, "%s", fe.msg);
    wm_xpf_stats st;
    wm_xpf_stats_get(f, &st);
    cr_assert_eq(st.impossible_strict, 3, "Temperature is no child of Header, Body no document element, Humidity no child of Header");
    cr_assert_gt(st.filter_grammar_pairs, 0);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    const char *xml = "<Envelope><Header><status>x</status></Header><Body><Humidity pct='5'/></Body></Envelope>";
    for (int strict = 0; strict < 2; strict++) {
        uint8_t exi[512];
        wm_exi_error e;
        size_t len = wm_test_exi_encode(g, xml, strict, exi, sizeof exi, &e);
        cr_assert(len, "%s", e.msg);
        uint64_t m;
        bool early;
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "%s", e.msg);
        cr_assert_eq(wm_test_xpf_by_query(f, &m), 1);
        /* strict: the other three are decided before decoding, so the root decides all;
         * non-strict streams may carry undeclared elements: read to the end */
        cr_assert_eq(early, strict, "strict %d", strict);
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* Early stop counts the undecided queries: a query reachable through two
 * clusters (the two disjuncts of "@u = 'V' and (@v < 0 or @v > 100)") must
 * be counted once when both fire, or the count reaches zero while the
 * query of the last record (@n = 'last') is still open and the stream is
 * cut short. The third query is alone in its cluster (a "sole" cluster,
 * marked without a test); run with and without a candidate list. */
Test(xpath_filter, early_stop_counts_each_query_once)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    const char *qs[] = { "/s:sensml/s:senml[@u = 'V' and (@v < 0 or @v > 100)]", "/s:sensml/s:senml[@n = 'last']",
                         "/s:sensml/s:senml[@n = 'a' and @v > 5]" };
    const char *xml = "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"a\" u=\"V\" v=\"-100\"/>"
                      "<senml n=\"a\" u=\"V\" v=\"200\"/><senml n=\"last\" u=\"V\" v=\"1\"/></sensml>";
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 3, &senml_ns, 1, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[512];
    size_t len = wm_test_exi_encode(g, xml, true, exi, sizeof exi, &e);
    cr_assert(len, "%s", e.msg);
    uint64_t m = 0;
    bool early = false;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(m, 7, "all three match, the second at the last record (got %#llx)", (unsigned long long)m);
    cr_assert(early, "decided at the last record's end, before the document's");
    uint32_t cand[] = { 0, 1, 2 };
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, cand, 3, &m, &early, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(m, 7, "candidates: got %#llx", (unsigned long long)m);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* The count of undecided queries is a lower bound that may fall to 0 or
 * below while some are open: rows and bit ranges OR-ed in say only how
 * many entries they cover, and here both clusters of "@u = 'V' and
 * (@v < -i or @v > i)" (a bit range and rows) cover all 64 queries, at
 * the first and the second record, 128 for 64 decided. The early stop, asked at element events, must count
 * the queries then (64 decided, "@n = 'last'" open) instead of stopping;
 * with every query decided at the last record, it stops before the
 * document's end. */
Test(xpath_filter, early_stop_recounts_a_lower_bound_at_zero)
{
    enum { NU = 64, NQ = NU + 1 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    const char *qs[NQ];
    for (int i = 0; i < NQ; i++) {
        if (i < NU) snprintf(qt[i], sizeof qt[i], "//s:senml[@u = 'V' and (@v < %d or @v > %d)]", -i - 1, i + 1);
        else snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'last']");
        qs[i] = qt[i];
    }
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, NQ, &senml_ns, 1, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    unsigned marked = 0; /* clusters marked at once: a row or a bit range */
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t k = 0; k < f->pstates[p].n_clusters; k++)
            marked += f->pstates[p].clusters[k].pm != XPF_NONE || f->pstates[p].clusters[k].qb != XPF_NONE;
    cr_assert_eq(marked, 2, "the test needs both clusters marked at once (rows or a bit range)");
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[512];
    size_t len = senml_pack(g, "<senml n='voltage' u='V' v='-1000'/><senml n='voltage' u='V' v='1000'/>"
                               "<senml n='last' u='Cel' v='0'/>", exi, sizeof exi);
    uint64_t m[2] = { 0, 0 };
    bool early = false;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, m, &early, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert(m[0] == ~0ull && m[1] == 1, "every query matches, the last at the last record (got %#llx %#llx)",
              (unsigned long long)m[0], (unsigned long long)m[1]);
    cr_assert(early, "decided at the last record's end, before the document's");
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A string a test reads is copied into the context's buffer (64 KiB); one
 * that does not fit ends the match with WM_XPF_E_MEMORY, never a match
 * (with and without whole-stream validation), and the context serves the
 * next document as before. */
Test(xpath_filter, value_beyond_the_buffer_is_a_memory_error)
{
    wm_exi_grammar *g = senml_or_fail();
    const char *qs[] = { "//s:senml[@n != 'x']" };
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 1, &senml_ns, 1, &f, &fe), WM_XPF_OK, "%s", fe.msg);
    enum { BIG = 70000 };
    static char xml[BIG + 512];
    int n = snprintf(xml, sizeof xml, "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='");
    memset(xml + n, 'a', BIG);
    snprintf(xml + n + BIG, sizeof xml - n - BIG, "' u='V' v='1'/><senml n='b' u='V' v='2'/></sensml>");
    static uint8_t exi[BIG + 512];
    wm_exi_error e = { 0 };
    size_t len = wm_test_exi_encode(g, xml, true, exi, sizeof exi, &e);
    cr_assert(len, "%s", e.msg);
    uint8_t small[512];
    size_t small_len = senml_pack(g, "<senml n='b' u='V' v='2'/>", small, sizeof small);
    for (int whole = 0; whole < 2; whole++) {
        wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
        wm_xpf_ctx_set_whole_stream(c, whole);
        uint64_t m = 0;
        bool early;
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, &early, &e), WM_XPF_E_MEMORY, "whole %d", whole);
        cr_assert_eq(wm_xpf_match(c, small, small_len, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "%s", e.msg);
        cr_assert_eq(m, 1);
        wm_xpf_ctx_free(c);
    }
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A numeric range cluster whose queries are consecutive query bits
 * (renumber_queries) marks its matching entries as one bit range; one that
 * shares a query with another cluster, or lists a query twice, and has at
 * least half as many entries as a row has words ORs one precomputed row (a
 * bit set over all queries) into the result, as long as the rows fit in
 * XPF_PMASK_CAP bytes; beyond that, it marks entry by entry. Here the
 * cluster of the 256 queries on humidity is a bit range; the 16,384 on
 * temperature, "v > i or v > i + 0.5" (each query twice in the cluster:
 * 32,769 rows of 2,112 bytes), mark entry by entry; 160 queries "u = 'V'
 * and (v < -i or v > i)" sit in two clusters, a bit range and one with
 * rows (a query OR-ed in twice: the count of undecided queries is a lower
 * bound then, recounted before it can reach 0); with every query and with
 * candidates only (rows and ranges are then masked). Expected: a
 * threshold query matches iff the largest value of its name in the
 * document is above it. */
/* Compiles the queries qs[0..n) with the one namespace binding ns, or fails the test. */
static wm_xpf *compile_or_fail(const wm_exi_grammar *g, const char **qs, uint32_t n, const wm_xp_ns *ns)
{
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, n, ns, 1, &f, &fe), WM_XPF_OK, "query %u: %s", fe.query, fe.msg);
    return f;
}

/* Every cluster of every predicate state of f in turn, NULL after the last;
 * it (predicate state, cluster) starts at { 0, 0 }. */
static const xpf_cluster *next_cluster(const wm_xpf *f, uint32_t it[2])
{
    for (; it[0] < f->n_pstates; it[0]++, it[1] = 0)
        if (it[1] < f->pstates[it[0]].n_clusters) return &f->pstates[it[0]].clusters[it[1]++];
    return NULL;
}

Test(xpath_filter, cluster_rows_and_entry_by_entry)
{
    enum { NH = 256, NT = 16384, NU = 160, NQ = NH + NT + NU + 1 };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    static const char *qs[NQ];
    for (int i = 0; i < NQ; i++) {
        if (i < NH) snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'humidity' and @v > %d]", i - NH / 2);
        else if (i < NH + NT) snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'temperature' and (@v > %d or @v > %d.5)]", i - NH, i - NH);
        else if (i < NH + NT + NU) snprintf(qt[i], sizeof qt[i], "//s:senml[@u = 'V' and (@v < %d or @v > %d)]", -(i - NH - NT) - 1, i - NH - NT + 1);
        else snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'last']");
        qs[i] = qt[i];
    }
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    /* bit ranges: humidity and one of u = 'V'; rows: the other of u = 'V'; neither: temperature */
    unsigned ranges = 0, with = 0, without = 0;
    uint32_t it[2] = { 0, 0 };
    for (const xpf_cluster *cl; (cl = next_cluster(f, it));) {
        cr_assert(cl->qb == XPF_NONE || cl->pm == XPF_NONE, "a cluster with a bit range and rows");
        if (cl->qb != XPF_NONE) {
            ranges++;
            continue;
        }
        if (cl->pm != XPF_NONE) {
            with++;
            continue;
        }
        cr_assert_eq(cl->n, 2 * NT, "a cluster of %u entries without rows", cl->n);
        without++;
    }
    cr_assert_eq(ranges, 2);
    cr_assert_eq(with, 1);
    cr_assert_eq(without, 1);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    /* documents: records (name, unit, value); the largest humidity and temperature decide */
    /* hmax, tmax: the largest humidity, temperature (-1e9: none); vmin, vmax: the extremes at u = 'V' */
    static const struct { const char *recs; double hmax, tmax, vmin, vmax; bool last; } docs[] = {
        { "<senml n='humidity' u='%RH' v='-5'/><senml n='temperature' u='Cel' v='100'/><senml n='humidity' u='%RH' v='10'/>"
          "<senml n='temperature' u='Cel' v='5000.5'/>", 10, 5000.5, 0, 0, false },
        { "<senml n='temperature' u='Cel' v='16000'/><senml n='voltage' u='V' v='-7'/>", -1e9, 16000, -7, -7, false },
        { "<senml n='humidity' u='%RH' v='40'/><senml n='temperature' u='Cel' v='7'/><senml n='voltage' u='V' v='20'/>"
          "<senml n='voltage' u='V' v='3'/>", 40, 7, 3, 20, false },
        /* every query matches by the fifth record: decided there, before the document's end */
        { "<senml n='voltage' u='V' v='-1000'/><senml n='humidity' u='%RH' v='1000'/><senml n='voltage' u='V' v='1000'/>"
          "<senml n='temperature' u='Cel' v='99999'/><senml n='last' u='V' v='0'/><senml n='x' u='V' v='0'/>", 1000, 99999, -1000, 1000, true },
    };
    static uint64_t m[(NQ + 63) / 64];
    for (int round = 0; round < 2; round++) /* the same context again: per-document state starts afresh */
        for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
            uint8_t exi[512];
            size_t len = senml_pack(g, docs[d].recs, exi, sizeof exi);
            /* every query, then candidates only (rows masked by them): every third query, and the last */
            for (int sub = 0; sub < 2; sub++) {
                static uint32_t cand[NQ];
                uint32_t nc = 0;
                for (uint32_t q = (uint32_t)d % 3; sub && q < NQ; q += 3) cand[nc++] = q;
                if (sub && cand[nc - 1] != NQ - 1) cand[nc++] = NQ - 1;
                bool early = false;
                cr_assert_eq(wm_xpf_match(c, exi, len, NULL, sub ? cand : NULL, nc, m, &early, &e), WM_XPF_OK, "%s", e.msg);
                for (int q = 0; q < NQ; q++) {
                    bool want = q < NH ? docs[d].hmax > q - NH / 2
                              : q < NH + NT ? docs[d].tmax > q - NH
                              : q < NH + NT + NU ? docs[d].vmin < -(q - NH - NT) - 1 || docs[d].vmax > q - NH - NT + 1
                              : docs[d].last;
                    if (sub && q != NQ - 1 && q % 3 != (int)(d % 3)) want = false;
                    cr_assert_eq(wm_test_xpf_hit(f, m, (uint32_t)q), want, "document %zu (candidates %d), query %s", d, sub, qs[q]);
                }
                cr_assert_eq(early, docs[d].last, "document %zu (candidates %d): decided early %d", d, sub, early);
            }
        }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* Equality probes of strings up to WM_XPF_EXACT bytes compare hashes and
 * lengths only (wm_xpf_str_hash): that is exact only if the hash reads
 * every byte and its mixing loses nothing. Every length up to 2 in full,
 * and for every length up to WM_XPF_EXACT, any one byte changed at any
 * position changes the hash. */
static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Range clusters search keys (xpf_key): -x for < <=, the next double below
 * for >= <=, which no key can do for x = -inf under >= (+inf under <=) at a
 * value of -inf (+inf): such entries (xpf_cluster ninf) are the evaluator's
 * special case. Thresholds at and around the infinities and DBL_MAX, every
 * op, with a trigger (rows and entry by entry: 8 entries per cluster have
 * rows below 512 queries) and behind merged not() guards, on values at the
 * same places; expected: the IEEE comparisons, which XPath 1.0 uses. */
Test(xpath_filter, infinite_thresholds)
{
    static const char *const xs[] = { "-100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", "100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", "-179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368", "0", "5", "-5", "4.5" };
    static const char *const ops[] = { "<", "<=", ">", ">=" };
    enum { NX = sizeof xs / sizeof *xs, NO = 4, NQ = 3 * NO * NX };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][800];
    const char *qs[NQ];
    /* per query: 0 @n = 'a' and, 1 @n = 'b' and (a second trigger), 2 not(@u = 'Q') and; op; threshold */
    for (int i = 0; i < NQ; i++) {
        int kind = i / (NO * NX), op = i / NX % NO, x = i % NX;
        snprintf(qt[i], sizeof qt[i], "//s:senml[%s and @v %s %s]", kind == 0 ? "@n = 'a'" : kind == 1 ? "@n = 'b'" : "not(@u = 'Q')",
                 ops[op], xs[x]);
        qs[i] = qt[i];
    }
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    unsigned ninf = 0, rows = 0;
    uint32_t it[2] = { 0, 0 };
    for (const xpf_cluster *cl; (cl = next_cluster(f, it));) {
        ninf += cl->ninf != 0;
        rows += cl->pm != XPF_NONE;
    }
    cr_assert(ninf && rows, "clusters with x = -inf entries %u, with rows %u", ninf, rows);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    /* records: name, unit, value ("": none) */
    static const char *const vals[] = { "-INF", "INF", "-1.7976931348623157E308", "1.7976931348623157E308", "0", "5", "4.5", "-5", "" };
    enum { NV = sizeof vals / sizeof *vals };
    uint64_t seed = 7;
    for (int d = 0; d < 400; d++) {
        char xml[2048];
        size_t n = (size_t)snprintf(xml, sizeof xml, "<sensml xmlns='urn:ietf:params:xml:ns:senml'>");
        int nr = 1 + (int)(xorshift(&seed) % 4);
        struct { int name, unit, v; } rec[4];
        for (int r = 0; r < nr; r++) {
            rec[r].name = (int)(xorshift(&seed) % 3), rec[r].unit = (int)(xorshift(&seed) % 2), rec[r].v = (int)(xorshift(&seed) % NV);
            n += (size_t)snprintf(xml + n, sizeof xml - n, "<senml n='%c' u='%c'", "abc"[rec[r].name], "QR"[rec[r].unit]);
            if (*vals[rec[r].v]) n += (size_t)snprintf(xml + n, sizeof xml - n, " v='%s'", vals[rec[r].v]);
            n += (size_t)snprintf(xml + n, sizeof xml - n, "/>");
        }
        snprintf(xml + n, sizeof xml - n, "</sensml>");
        uint8_t exi[512];
        size_t len = wm_test_exi_encode(g, xml, true, exi, sizeof exi, &e);
        cr_assert(len, "%s", e.msg);
        uint64_t m[(NQ + 63) / 64];
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, m, NULL, &e), WM_XPF_OK, "%s", e.msg);
        for (int q = 0; q < NQ; q++) {
            int kind = q / (NO * NX), op = q / NX % NO;
            double x = strtod(xs[q % NX], NULL);
            bool want = false;
            for (int r = 0; r < nr; r++) {
                if (!*vals[rec[r].v] || (kind == 2 ? rec[r].unit == 0 : rec[r].name != kind)) continue;
                double v = strtod(vals[rec[r].v], NULL);
                want |= op == 0 ? v < x : op == 1 ? v <= x : op == 2 ? v > x : v >= x;
            }
            cr_assert_eq(wm_test_xpf_hit(f, m, (uint32_t)q), want, "%s on %s", qs[q], xml);
        }
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

Test(xpath_filter, short_string_hash_is_exact)
{
    uint64_t *h = malloc(65536 * sizeof *h);
    cr_assert(h);
    for (uint32_t n = 1; n <= 2; n++) {
        uint32_t m = n == 1 ? 256 : 65536;
        for (uint32_t i = 0; i < m; i++) {
            char s[2] = { (char)(i & 0xff), (char)(i >> 8) };
            h[i] = wm_xpf_str_hash(s, n);
        }
        qsort(h, m, sizeof *h, cmp_u64);
        for (uint32_t i = 1; i < m; i++) cr_assert_neq(h[i], h[i - 1], "two strings of %u bytes, one hash", n);
    }
    free(h);
    uint64_t seed = 42;
    for (uint32_t n = 1; n <= WM_XPF_EXACT; n++)
        for (int round = 0; round < 200; round++) {
            char s[WM_XPF_EXACT], t[WM_XPF_EXACT];
            for (uint32_t i = 0; i < n; i++) s[i] = (char)(xorshift(&seed) & 0xff);
            uint64_t hs = wm_xpf_str_hash(s, n);
            for (uint32_t pos = 0; pos < n; pos++) {
                memcpy(t, s, n);
                t[pos] = (char)(t[pos] ^ (1 + (xorshift(&seed) % 255)));
                cr_assert_neq(wm_xpf_str_hash(t, n), hs, "byte %u of %u changed, same hash", pos, n);
            }
        }
}

/* The filter numbers its queries (wm_xpf_bit_of): the queries of a
 * numeric range cluster are consecutive bits in threshold order (here
 * "@v > x" with x descending in the caller's order, so the cluster's
 * order is the reverse of the caller's), the others keep their relative
 * order after them; the numbering is a permutation of [0, n), and a
 * document's result read through it names the right queries (v = 2
 * passes the thresholds 0 and 1 only). */
Test(xpath_filter, query_bits_put_a_cluster_in_threshold_order)
{
    enum { NQ = 7 };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    const char *qs[NQ] = { "//s:senml[@n = 'b']", "//s:senml[@n = 'a' and @v > 4]", "//s:senml[@n = 'a' and @v > 3]",
                           "//s:senml[@n = 'a' and @v > 2]", "//s:senml[@n = 'a' and @v > 1]",
                           "//s:senml[@n = 'a' and @v > 0]", "//s:senml[@n = 'c']" };
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    uint32_t seen = 0;
    for (uint32_t q = 0; q < NQ; q++) {
        uint32_t b = wm_xpf_bit_of(f, q);
        cr_assert_lt(b, NQ, "query %u: bit %u", q, b);
        cr_assert_not(seen >> b & 1, "query %u: bit %u twice", q, b);
        seen |= 1u << b;
    }
    cr_assert_eq(wm_xpf_bit_of(f, NQ), UINT32_MAX);
    for (uint32_t q = 2; q <= 5; q++) cr_assert_eq(wm_xpf_bit_of(f, q), wm_xpf_bit_of(f, 1) - (q - 1), "query %s", qs[q]);
    cr_assert_lt(wm_xpf_bit_of(f, 0), wm_xpf_bit_of(f, 6), "the others keep their order");
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    uint8_t exi[256];
    size_t len = senml_pack(g, "<senml n='a' u='V' v='2'/><senml n='c' u='V' v='9'/>", exi, sizeof exi);
    uint64_t m = 0;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(wm_test_xpf_by_query(f, &m), 1u << 4 | 1u << 5 | 1u << 6, "got %#llx", (unsigned long long)wm_test_xpf_by_query(f, &m));
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* The per-document state of merged not() clusters with rows (xpf_negrun)
 * lives in the context without a document tag: a document that moved it
 * hands it back to the next one, whether it ended normally, stopped early
 * once every query was decided, or failed on a truncated stream (fast
 * clusters, xpf_run, keep none: fast_cluster_ranked_again_in_a_document;
 * here they must not carry one over either). Each such
 * document pushes the thresholds to the top (v = 100); the next one, with a
 * low value, must still see its own matches, which a state left at the top
 * would hide. Expected: a query matches iff some record of its document
 * makes it true (the failed document's answer is not read). */
Test(xpath_filter, cluster_state_handed_back_after_every_kind_of_end)
{
    enum { NT = 11, NQ = 2 * NT };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    const char *qs[NQ];
    /* thresholds 0..9 and 1000 (only the early-stopping document reaches it) behind a trigger, then
     * behind a merged not() guard */
#define THRESHOLD(i) ((i) < NT - 1 ? (i) : 1000)
    for (int i = 0; i < NQ; i++) {
        if (i < NT) snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'a' and @v > %d]", THRESHOLD(i));
        else snprintf(qt[i], sizeof qt[i], "//s:senml[not(@u = 'Q') and @t > %d]", THRESHOLD(i - NT));
        qs[i] = qt[i];
    }
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    unsigned fast = 0, negruns = 0;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        for (uint32_t k = 0; k < f->pstates[p].n_runs; k++) fast += f->pstates[p].runs[k].K != NULL;
        negruns += f->pstates[p].n_negruns;
    }
    cr_assert(fast && negruns, "the paths under test: fast clusters %u, merged not() clusters with rows %u", fast, negruns);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    /* kind: 0 ends normally, 1 stops early (every query true by its first record), 2 truncated */
    static const struct { int kind; const char *recs; int v, t; } docs[] = {
        { 0, "<senml n='a' u='R' v='100'/><senml n='b' u='Q' t='100' v='1'/>", 100, -1 },
        { 0, "<senml n='a' u='R' t='3' v='4'/><senml n='b' u='Q' t='50' v='1'/>", 4, 3 },
        { 0, "<senml n='b' u='R' t='100' v='100'/>", -1, 100 },
        { 0, "<senml n='a' u='R' t='7' v='2'/>", 2, 7 },
        { 1, "<senml n='a' u='R' t='2000' v='2000'/><senml n='b' u='R' v='1'/><senml n='c' u='R' v='1'/>", 2000, 2000 },
        { 0, "<senml n='c' u='R' t='2' v='100'/><senml n='a' u='Q' t='50' v='6'/>", 6, 2 },
        { 2, "<senml n='a' u='R' t='100' v='100'/><senml n='b' u='R' v='1'/><senml n='c' u='R' v='1'/>", 0, 0 },
        { 0, "<senml n='a' u='R' t='1' v='1'/>", 1, 1 },
        { 0, "<senml n='b' u='Q' t='100' v='100'/>", -1, -1 },
    };
    for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
        uint8_t exi[256];
        size_t len = senml_pack(g, docs[d].recs, exi, sizeof exi);
        uint64_t m = 0;
        bool early = false;
        if (docs[d].kind == 2) { /* cut inside the last record: the first one was decided before the cut */
            cr_assert_eq(wm_xpf_match(c, exi, len - 3, NULL, NULL, 0, &m, &early, &e), WM_XPF_E_DECODE, "document %zu", d);
            continue;
        }
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, &early, &e), WM_XPF_OK, "document %zu: %s", d, e.msg);
        cr_assert_eq(early, docs[d].kind == 1, "document %zu: decided early %d", d, early);
        for (int q = 0; q < NQ; q++) {
            bool want = q < NT ? docs[d].v > THRESHOLD(q) : docs[d].t > THRESHOLD(q - NT);
            cr_assert_eq(wm_test_xpf_hit(f, &m, (uint32_t)q), want, "document %zu, query %s", d, qs[q]);
        }
    }
#undef THRESHOLD
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A fast cluster (xpf_run BITS or ROWS) keeps no state per document: every
 * element that fires it ORs in the prefix its value makes true, again where
 * an earlier element of the document made more true, and counts it again,
 * so the count of undecided queries, a lower bound, falls below 0 while
 * queries are open. Here the clusters of "@n = 'a' and @v > i" (a bit
 * range) and of "@u = 'R' and (@v < -i or @v > i + 10)" (a bit range and
 * rows of two words: its queries are the other's bits) fire at every record, with values that rise, fall back, are absent
 * (NaN) and rise again; "@n = 'last'" is decided at the last record only,
 * after the count went below 0 at the one before: the early stop must count
 * the open queries there instead of stopping. Each document runs twice in
 * one context, with every query and with a candidate list (the rows and
 * ranges are then masked). Expected: a query matches iff some record of
 * the document makes it true (and it is a candidate); the document that
 * decides every query at its last record but one stops early. */
Test(xpath_filter, fast_cluster_ranked_again_in_a_document)
{
    enum { NA = 10, NU = 10, NQ = NA + NU + 1 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    const char *qs[NQ];
    for (int i = 0; i < NQ; i++) {
        if (i < NA) snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'a' and @v > %d]", i);
        else if (i < NA + NU) snprintf(qt[i], sizeof qt[i], "//s:senml[@u = 'R' and (@v < %d or @v > %d)]", -(i - NA), i - NA + 10);
        else snprintf(qt[i], sizeof qt[i], "//s:senml[@n = 'last']");
        qs[i] = qt[i];
    }
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    unsigned bits = 0, pair = 0;
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t k = 0; k < f->pstates[p].n_runs; k++) {
            bits += f->pstates[p].runs[k].kind == XPF_RUN_BITS;
            pair += f->pstates[p].runs[k].kind == XPF_RUN_PAIR;
        }
    cr_assert(bits >= 2 && pair >= 1, "the paths under test: bit ranges %u, rows of two words %u", bits, pair);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    static const char *const common = "<senml n='a' u='R' v='7'/><senml n='a' u='R' v='3'/><senml n='a' u='R'/>"
                                      "<senml n='a' u='R' v='-4'/><senml n='a' u='R' v='15'/>";
    static const struct { const char *tail; double vmin, vmax; bool last, early; } docs[] = {
        { "<senml n='last' u='X' v='0'/>", -4, 15, true, false },
        { "<senml n='a' u='R' v='100'/><senml n='last' u='X' v='0'/><senml n='b' u='X' v='0'/>", -4, 100, true, true },
        { "<senml n='b' u='R' v='2'/>", -4, 15, false, false },
    };
    static const uint32_t cand[] = { 0, 3, 9, 10, 12, 17, 20 };
    for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
        char recs[1024];
        snprintf(recs, sizeof recs, "%s%s", common, docs[d].tail);
        uint8_t exi[512];
        size_t len = senml_pack(g, recs, exi, sizeof exi);
        for (int run_ = 0; run_ < 4; run_++) {
            bool with_cand = run_ & 1;
            uint64_t m = 0;
            bool early = false;
            wm_exi_error e = { 0 };
            cr_assert_eq(wm_xpf_match(c, exi, len, NULL, with_cand ? cand : NULL, with_cand ? 7 : 0, &m, &early, &e), WM_XPF_OK,
                         "document %zu: %s", d, e.msg);
            if (!with_cand) cr_assert_eq(early, docs[d].early, "document %zu: decided early %d", d, early);
            for (int q = 0; q < NQ; q++) {
                bool want = q < NA ? docs[d].vmax > q
                          : q < NA + NU ? docs[d].vmin < -(q - NA) || docs[d].vmax > q - NA + 10
                                        : docs[d].last;
                bool is_cand = false;
                for (size_t i = 0; i < 7; i++) is_cand |= cand[i] == (uint32_t)q;
                if (with_cand) want = want && is_cand;
                cr_assert_eq(wm_test_xpf_hit(f, &m, (uint32_t)q), want, "document %zu, candidates %d, query %s", d, with_cand, qs[q]);
            }
        }
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A fast cluster whose queries have bits already is OR-ed in by rows: of
 * two words where those bits lie in two consecutive words (xpf_run PAIR),
 * else of every word (ROWS). Here "@u = 'S' and (@v < -i or @v > i)" is a
 * bit range and a PAIR; "@n = 'a' and (@v > i or @v > i + 0.5)" lists each
 * query twice, so its cluster has no bit range, and 30 queries "@n = 'fi_j'"
 * between each two of them in the list spread its queries' bits over more
 * than two words: ROWS; "@n = 'b' and @v > i" is a bit range. Documents of
 * records whose values rise, fall and are absent, with every query and
 * with candidates (rows masked). Expected: each query by its definition,
 * from the records. */
Test(xpath_filter, rows_of_two_words_and_of_every_word)
{
    enum { NS = 20, NA = 10, NF = 30, NB = 20, NQ = NS + NA * (1 + NF) + NB };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    const char *qs[NQ];
    /* kind 0: u = 'S' (i); 1: n = 'a' (i); 2: filler (i, j); 3: n = 'b' (i) */
    static struct { int kind, i, j; } def[NQ];
    int q = 0;
    for (int i = 0; i < NS; i++, q++) {
        snprintf(qt[q], sizeof qt[q], "//s:senml[@u = 'S' and (@v < %d or @v > %d)]", -i, i);
        def[q].kind = 0, def[q].i = i;
    }
    for (int i = 0; i < NA; i++) {
        snprintf(qt[q], sizeof qt[q], "//s:senml[@n = 'a' and (@v > %d or @v > %d.5)]", i, i);
        def[q].kind = 1, def[q++].i = i;
        for (int j = 0; j < NF; j++, q++) {
            snprintf(qt[q], sizeof qt[q], "//s:senml[@n = 'f%d_%d']", i, j);
            def[q].kind = 2, def[q].i = i, def[q].j = j;
        }
    }
    for (int i = 0; i < NB; i++, q++) {
        snprintf(qt[q], sizeof qt[q], "//s:senml[@n = 'b' and @v > %d]", i);
        def[q].kind = 3, def[q].i = i;
    }
    cr_assert_eq(q, NQ);
    for (int i = 0; i < NQ; i++) qs[i] = qt[i];
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    unsigned kinds[5] = { 0 };
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t k = 0; k < f->pstates[p].n_runs; k++) kinds[f->pstates[p].runs[k].kind]++;
    cr_assert(kinds[XPF_RUN_BITS] && kinds[XPF_RUN_PAIR] && kinds[XPF_RUN_ROWS], "the paths under test: bits %u, pair %u, rows %u",
              kinds[XPF_RUN_BITS], kinds[XPF_RUN_PAIR], kinds[XPF_RUN_ROWS]);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    /* records: n, u, v (NAN: absent) */
    typedef struct { const char *n; char u; double v; } rec;
    static const rec docs[][6] = {
        { { "a", 'S', 5 }, { "b", 'R', 30 }, { "a", 'S', 2 }, { "f3_7", 'S', -4 }, { "b", 'S', 7 }, { "a", 'R', NAN } },
        { { "b", 'S', 12 }, { "a", 'R', NAN }, { "f0_0", 'R', 3 }, { "a", 'S', 8.25 }, { "a", 'S', 0.5 }, { "b", 'S', NAN } },
        { { "a", 'R', 100 }, { "x", 'S', -3 }, { "b", 'S', NAN }, { "f9_29", 'S', -30 }, { "b", 'R', 9 }, { "a", 'S', 0 } },
    };
    static const uint32_t cand[] = { 0, 5, 19, 20, 21, 51, 82, 144, 300, 310, 315, 329 };
    for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
        char recs[1024];
        size_t at = 0;
        for (int i = 0; i < 6; i++) {
            const rec *r = &docs[d][i];
            at += (size_t)snprintf(recs + at, sizeof recs - at, "<senml n='%s' u='%c'", r->n, r->u);
            if (r->v == r->v) at += (size_t)snprintf(recs + at, sizeof recs - at, " v='%g'", r->v);
            at += (size_t)snprintf(recs + at, sizeof recs - at, "/>");
        }
        uint8_t exi[512];
        size_t len = senml_pack(g, recs, exi, sizeof exi);
        for (int with_cand = 0; with_cand < 2; with_cand++) {
            uint64_t m[8] = { 0 };
            bool early = false;
            wm_exi_error e = { 0 };
            uint32_t nc = sizeof cand / sizeof *cand;
            cr_assert_eq(wm_xpf_match(c, exi, len, NULL, with_cand ? cand : NULL, with_cand ? nc : 0, m, &early, &e), WM_XPF_OK,
                         "document %zu: %s", d, e.msg);
            for (int x = 0; x < NQ; x++) {
                bool want = false;
                for (int i = 0; i < 6; i++) {
                    const rec *r = &docs[d][i];
                    char fn[16];
                    snprintf(fn, sizeof fn, "f%d_%d", def[x].i, def[x].j);
                    if (def[x].kind == 0) want |= r->u == 'S' && (r->v < -def[x].i || r->v > def[x].i);
                    else if (def[x].kind == 1) want |= !strcmp(r->n, "a") && r->v > def[x].i;
                    else if (def[x].kind == 2) want |= !strcmp(r->n, fn);
                    else want |= !strcmp(r->n, "b") && r->v > def[x].i;
                }
                bool is_cand = false;
                for (uint32_t i = 0; i < nc; i++) is_cand |= cand[i] == (uint32_t)x;
                if (with_cand) want = want && is_cand;
                cr_assert_eq(wm_test_xpf_hit(f, m, (uint32_t)x), want, "document %zu, candidates %d, query %s", d, with_cand, qs[x]);
            }
        }
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* String clusters ("T and S = 'x'", e.g. @vb = 'true' and @n = 'x') whose
 * literals are all in S's equality table find the literal's run by the
 * literal S's probe named (xpf_strkey), not by hashing the value again:
 * literals that were triggers there already ('a'), and ones the compiler
 * put in for the cluster ('b', 'c'); values equal to a literal of another
 * cluster only, to none ('d'), booleans written 1/0, absent n or vb.
 * Expected: a query matches iff one record has both its vb and its n. */
Test(xpath_filter, string_cluster_by_probed_literal)
{
    static const char *const names[] = { "a", "b", "c" };
    enum { NQ = 2 * 3 + 1 };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    static char qt[NQ][96];
    const char *qs[NQ];
    for (int i = 0; i < NQ - 1; i++) { /* (vb, n) = (true, a), (true, b), (true, c), (false, a), ... */
        snprintf(qt[i], sizeof qt[i], "//s:senml[@vb = '%s' and @n = '%s']", i < 3 ? "true" : "false", names[i % 3]);
        qs[i] = qt[i];
    }
    qs[NQ - 1] = "//s:senml[@n = 'a' and @v > 1]"; /* n = 'a' is a trigger: n's values are probed */
    wm_xpf *f = compile_or_fail(g, qs, NQ, &senml_ns);
    unsigned tables = 0;
    uint32_t it[2] = { 0, 0 };
    for (const xpf_cluster *cl; (cl = next_cluster(f, it));) tables += cl->str && cl->tmask;
    cr_assert_eq(tables, 2, "string clusters with a table by literal: %u", tables);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    /* records: n (0 a, 1 b, 2 c, 3 d, 4 none), vb (0 false, 1 true, 2 none; written 1/0 in odd records) */
    uint64_t seed = 11;
    for (int d = 0; d < 300; d++) {
        char recs[512];
        size_t n = 0;
        int nr = 1 + (int)(xorshift(&seed) % 3), rn[3], rv[3];
        for (int r = 0; r < nr; r++) {
            rn[r] = (int)(xorshift(&seed) % 5), rv[r] = (int)(xorshift(&seed) % 3);
            n += (size_t)snprintf(recs + n, sizeof recs - n, "<senml");
            if (rn[r] < 4) n += (size_t)snprintf(recs + n, sizeof recs - n, " n='%c'", "abcd"[rn[r]]);
            if (rv[r] < 2) n += (size_t)snprintf(recs + n, sizeof recs - n, " vb='%s'", r & 1 ? (rv[r] ? "1" : "0") : (rv[r] ? "true" : "false"));
            n += (size_t)snprintf(recs + n, sizeof recs - n, "/>");
        }
        uint8_t exi[256];
        size_t len = senml_pack(g, recs, exi, sizeof exi);
        uint64_t m = 0;
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
        for (int q = 0; q < NQ - 1; q++) {
            bool want = false;
            for (int r = 0; r < nr; r++) want |= rn[r] == q % 3 && rv[r] == (q < 3);
            cr_assert_eq(wm_test_xpf_hit(f, &m, (uint32_t)q), want, "%s on %s", qs[q], recs);
        }
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

/* A string equal to an equality literal of its slot still meets the
 * slot's other tests: the patterns its literal is known to match
 * (matches(), replayed), prefixes and substrings, and predicates that read
 * the literal itself (an or, a not()), whose memo the short string handler
 * leaves unset. Expected answers from the records' strings (strcmp,
 * strncmp, strstr). */
Test(xpath_filter, equal_string_meets_its_slots_other_tests)
{
    static const char *const sets[2][4] = {
        { "//s:senml[@n = 'temperature']", "//s:senml[matches(@n, '^te')]", "//s:senml[@n = 'humidity' or @u = 'Cel']",
          "//s:senml[not(@n = 'temperature')]" },
        { "//s:senml[@n = 'humidity']", "//s:senml[starts-with(@n, 'hum')]", "//s:senml[contains(@n, 'mpe')]",
          "//s:senml[@n = 'tempest' and @v > 2]" },
    };
    static const char *const names[] = { "temperature", "humidity", "tempest", "hum", "x" }; /* [5]: none */
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    for (int set = 0; set < 2; set++) {
        wm_xpf *f = compile_or_fail(g, (const char **)sets[set], 4, &senml_ns);
        wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
        cr_assert(c);
        uint64_t seed = 5 + (uint64_t)set;
        for (int d = 0; d < 300; d++) {
            char recs[512];
            size_t n = 0;
            int nr = 1 + (int)(xorshift(&seed) % 3), rn[3], ru[3], rv[3];
            for (int r = 0; r < nr; r++) {
                rn[r] = (int)(xorshift(&seed) % 6), ru[r] = (int)(xorshift(&seed) % 3), rv[r] = (int)(xorshift(&seed) % 3);
                n += (size_t)snprintf(recs + n, sizeof recs - n, "<senml");
                if (rn[r] < 5) n += (size_t)snprintf(recs + n, sizeof recs - n, " n='%s'", names[rn[r]]);
                if (ru[r] < 2) n += (size_t)snprintf(recs + n, sizeof recs - n, " u='%s'", ru[r] ? "Cel" : "%RH");
                if (rv[r] < 2) n += (size_t)snprintf(recs + n, sizeof recs - n, " v='%d'", rv[r] ? 3 : 1);
                n += (size_t)snprintf(recs + n, sizeof recs - n, "/>");
            }
            uint8_t exi[256];
            size_t len = senml_pack(g, recs, exi, sizeof exi);
            uint64_t m = 0;
            cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
            bool want[4] = { false };
            for (int r = 0; r < nr; r++) {
                const char *s = rn[r] < 5 ? names[rn[r]] : NULL;
                bool v3 = rv[r] == 1, cel = ru[r] == 1;
                if (set == 0) {
                    want[0] |= s && !strcmp(s, "temperature");
                    want[1] |= s && !strncmp(s, "te", 2);
                    want[2] |= (s && !strcmp(s, "humidity")) || cel;
                    want[3] |= !s || strcmp(s, "temperature");
                } else {
                    want[0] |= s && !strcmp(s, "humidity");
                    want[1] |= s && !strncmp(s, "hum", 3);
                    want[2] |= s && strstr(s, "mpe");
                    want[3] |= s && !strcmp(s, "tempest") && v3;
                }
            }
            for (int q = 0; q < 4; q++) cr_assert_eq(wm_test_xpf_hit(f, &m, (uint32_t)q), want[q], "%s on %s", sets[set][q], recs);
        }
        wm_xpf_ctx_free(c);
        wm_xpf_free(f);
    }
    wm_exi_grammar_free(g);
}

/* How a value equal to equality literal L of a scanned slot takes the
 * patterns L is known to match (xpf_eqtrig after), counted in f. */
static void count_after(const wm_xpf *f, unsigned n[4])
{
    memset(n, 0, 4 * sizeof *n);
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t i = 0; i < f->pstates[p].n_pslots; i++) {
            const xpf_pslot *s = &f->pstates[p].pslots[i];
            for (uint32_t k = 0; s->scan && s->eq && k <= s->eq_mask; k++)
                if (s->eq[k].lit != XPF_NONE) n[s->eq[k].after]++;
        }
}

/* A name equal to an equality literal whose patterns (matches()) fire
 * exact queries only ORs their queries as one row (after ROW), or does
 * nothing more where it matches none (DONE); where a predicate reads a
 * pattern's memo (set 1: an always-evaluated query), the patterns are
 * replayed one by one (REPLAY). Documents repeat names (a later value ORs
 * the row again), and run with every query and with candidates only (the
 * row masked: a query not asked for stays unmatched). Expected answers
 * from the records' strings. */
Test(xpath_filter, pattern_replay_as_a_row)
{
    static const char *const sets[2][5] = {
        { "//s:senml[@n = 'temperature']", "//s:senml[matches(@n, '^t.*e$')]", "//s:senml[matches(@n, 'ure$')]",
          "//s:senml[@n = 'humidity' or @n = 'tempe']", "//s:senml[matches(@n, 'ure$') or @v > 2]" },
        { "//s:senml[@n = 'temperature']", "//s:senml[matches(@n, '^t.*e$')]", "//s:senml[matches(@n, 'ure$')]",
          "//s:senml[@n = 'humidity' or @n = 'tempe']", "//s:senml[matches(@n, 'ure$') or not(@u = 'Cel')]" },
    };
    /* humidity: DONE; tempe (^t.*e$): ROW; temperature (^t.*e$, ure$): ROW, REPLAY where ure$ is read */
    static const unsigned want_after[2][4] = { { 1, 2, 0, 0 }, { 1, 1, 1, 0 } }; /* DONE, ROW, REPLAY, OTHER */
    static const char *const names[] = { "temperature", "pressure", "humidity", "tempe", "x" }; /* [5]: none */
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    for (int set = 0; set < 2; set++) {
        wm_xpf *f = compile_or_fail(g, (const char **)sets[set], 5, &senml_ns);
        unsigned n[4];
        count_after(f, n);
        for (int k = 0; k < 4; k++) cr_assert_eq(n[k], want_after[set][k], "set %d: after %d: %u entries", set, k, n[k]);
        wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
        cr_assert(c);
        uint64_t seed = 17 + (uint64_t)set;
        for (int d = 0; d < 400; d++) {
            char recs[512];
            size_t len0 = 0;
            int nr = 1 + (int)(xorshift(&seed) % 4), rn[4], ru[4], rv[4];
            for (int r = 0; r < nr; r++) {
                rn[r] = (int)(xorshift(&seed) % 6), ru[r] = (int)(xorshift(&seed) % 3), rv[r] = (int)(xorshift(&seed) % 3);
                len0 += (size_t)snprintf(recs + len0, sizeof recs - len0, "<senml");
                if (rn[r] < 5) len0 += (size_t)snprintf(recs + len0, sizeof recs - len0, " n='%s'", names[rn[r]]);
                if (ru[r] < 2) len0 += (size_t)snprintf(recs + len0, sizeof recs - len0, " u='%s'", ru[r] ? "Cel" : "V");
                if (rv[r] < 2) len0 += (size_t)snprintf(recs + len0, sizeof recs - len0, " v='%d'", rv[r] ? 3 : 1);
                len0 += (size_t)snprintf(recs + len0, sizeof recs - len0, "/>");
            }
            uint8_t exi[256];
            size_t len = senml_pack(g, recs, exi, sizeof exi);
            bool want[5] = { false };
            for (int r = 0; r < nr; r++) {
                const char *s = rn[r] < 5 ? names[rn[r]] : NULL;
                size_t sl = s ? strlen(s) : 0;
                bool ure = sl >= 3 && !strcmp(s + sl - 3, "ure");
                want[0] |= s && !strcmp(s, "temperature");
                want[1] |= s && s[0] == 't' && s[sl - 1] == 'e';
                want[2] |= ure;
                want[3] |= s && (!strcmp(s, "humidity") || !strcmp(s, "tempe"));
                want[4] |= ure || (set == 0 ? rv[r] == 1 : ru[r] != 1);
            }
            /* every query, then the candidates of this document's pick (at least one) */
            uint32_t cand[5], nc = 0, pick = (uint32_t)(xorshift(&seed) % 31) + 1;
            for (uint32_t q = 0; q < 5; q++)
                if (pick >> q & 1) cand[nc++] = q;
            for (int pass = 0; pass < 2; pass++) {
                uint64_t m = 0;
                cr_assert_eq(wm_xpf_match(c, exi, len, NULL, pass ? cand : NULL, pass ? nc : 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
                for (uint32_t q = 0; q < 5; q++) {
                    bool asked = !pass || (pick >> q & 1);
                    cr_assert_eq(wm_test_xpf_hit(f, &m, q), want[q] && asked, "set %d pass %d: %s on %s", set, pass, sets[set][q], recs);
                }
            }
        }
        wm_xpf_ctx_free(c);
        wm_xpf_free(f);
    }
    wm_exi_grammar_free(g);
}

/* A slot with equality literals and starts-with() literals of several
 * lengths (1, 4, 9, 13 bytes: the exact short hash and the long one) and
 * no other test (xpf_pslot pre_only): a value equal to an equality
 * literal, or to none of them, or shorter than some prefixes, meets every
 * prefix it starts with. Expected answers from strcmp and strncmp. */
Test(xpath_filter, prefixes_beside_equality)
{
    static const char *const qs[] = {
        "//s:senml[@bn = 'urn:dev:ow:10e2073a:']", "//s:senml[@bn = 'u']", "//s:senml[starts-with(@bn, 'u')]",
        "//s:senml[starts-with(@bn, 'urn:')]", "//s:senml[starts-with(@bn, 'urn:dev:o')]",
        "//s:senml[starts-with(@bn, 'urn:dev:ow:10')]", "//s:senml[starts-with(@bn, 'urn:dev:ow:1f')]",
        "//s:senml[starts-with(@bn, 'x')]",
    };
    enum { NQ = sizeof qs / sizeof *qs };
    static const char *const bns[] = { "urn:dev:ow:10e2073a:", "urn:dev:ow:1f000000:", "urn:dev:ow:10", "u", "urn:",
                                       "urn:dev:o", "urn:dev", "x", "" };
    enum { NB = sizeof bns / sizeof *bns };
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = senml_or_fail();
    wm_xpf *f = compile_or_fail(g, (const char **)qs, NQ, &senml_ns);
    unsigned pre_only = 0;
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t i = 0; i < f->pstates[p].n_pslots; i++) pre_only += f->pstates[p].pslots[i].pre_only;
    cr_assert_gt(pre_only, 0);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    cr_assert(c);
    for (int b = 0; b < NB; b++) {
        char recs[128];
        snprintf(recs, sizeof recs, "<senml bn='%s' n='a'/>", bns[b]);
        uint8_t exi[256];
        size_t len = senml_pack(g, recs, exi, sizeof exi);
        uint64_t m = 0;
        cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
        for (uint32_t q = 0; q < NQ; q++) {
            const char *lit = strchr(qs[q], '\'') + 1;
            size_t ll = (size_t)(strchr(lit, '\'') - lit);
            bool want = strstr(qs[q], "starts-with") ? !strncmp(bns[b], lit, ll) && strlen(bns[b]) >= ll
                                                     : strlen(bns[b]) == ll && !strncmp(bns[b], lit, ll);
            cr_assert_eq(wm_test_xpf_hit(f, &m, q), want, "%s on bn='%s'", qs[q], bns[b]);
        }
    }
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}
