/* The XML sink (codec/exi_xml.h) and the reserved namespaces of Namespaces
 * in XML 1.0 §3: the XML namespace is written with the prefix xml and never
 * declared, no other prefix is bound to it or to the xmlns namespace, and a
 * name or xsi:type value in the xmlns namespace (which no QName can carry)
 * stops the decoder with the reason and the position. Every document here
 * goes XML -> EXI -> XML and must parse with libxml2 as
 * namespace-well-formed XML with the source's infoset (xsi:type values as
 * expanded names, tests/lib/exi_infoset.h); review 6 finding 4 wrote
 * xsi:type="xml:lang" as xmlns:t56="http://www.w3.org/XML/1998/namespace"
 * xsi:type="t56:lang". */
#include <criterion/criterion.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/exi_infoset.h"

#define XSI "http://www.w3.org/2001/XMLSchema-instance"
#define XMLNS "http://www.w3.org/2000/xmlns/"
#define XMLNS_DECL "xmlns:xsi='" XSI "'"

/* xml encoded with g, decoded, compared as an infoset; the decoded XML must
 * contain each of want[] and none of unwanted[] */
static void round_trip(const wm_exi_grammar *g, const char *xml, const char *const *want, const char *const *unwanted)
{
    uint8_t buf[4096];
    wm_exi_error e = { 0 };
    size_t n = wm_test_exi_encode(g, xml, false, buf, sizeof buf, &e);
    cr_assert(n, "%s: %s", xml, e.msg);
    wm_test_exi_doc doc;
    cr_assert_eq(wm_test_exi_decode_doc(g, buf, n, NULL, &doc, &e, NULL), WM_EXI_OK, "%s: %s", xml, e.msg);
    cr_assert(!doc.sink.bad, "%s: %s", xml, doc.sink.why);
    char why[512];
    cr_assert(wm_test_exi_same_infoset(&doc, xml, why, sizeof why), "%s\n-> %s: %s", xml, doc.sink.buf, why);
    for (; want && *want; want++) cr_assert(strstr(doc.sink.buf, *want), "%s lacks %s", doc.sink.buf, *want);
    for (; unwanted && *unwanted; unwanted++) cr_assert_null(strstr(doc.sink.buf, *unwanted), "%s has %s", doc.sink.buf, *unwanted);
    wm_test_exi_doc_free(&doc);
}

Test(exi_xml_namespaces, xsi_type_values_keep_their_namespace_with_allowed_prefixes)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    static const char *const no_xml_decl[] = { "=\"http://www.w3.org/XML/1998/namespace\"", "xmlns:xml", NULL };
    static const struct { const char *xml, *want[3]; } cases[] = {
        /* the review's repro: the XML namespace is written xml:, never declared */
        { "<r " XMLNS_DECL " xsi:type='xml:lang'/>", { "xsi:type=\"xml:lang\"" } },
        { "<r " XMLNS_DECL " xsi:type=' xml:space\t'/>", { "xsi:type=\"xml:space\"" } },
        /* the xml prefix may be declared (to its own namespace only); it is written undeclared */
        { "<r xmlns:xml='http://www.w3.org/XML/1998/namespace' " XMLNS_DECL " xml:lang='en' xsi:type='xml:id'/>",
          { "xml:lang=\"en\"", "xsi:type=\"xml:id\"" } },
        /* the XSI namespace: its prefix is in scope already (the attribute uses it) */
        { "<r " XMLNS_DECL " xsi:type='xsi:nil'/>", { "xsi:type=\"xsi:nil\"" } },
        { "<r " XMLNS_DECL " xmlns:xs='http://www.w3.org/2001/XMLSchema' xsi:type='xs:int'/>",
          { "xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"", "xsi:type=\"xsd:int\"" } },
        /* an unprefixed QName is in the default namespace (XML Schema 2 §3.2.18) */
        { "<r xmlns='urn:d' " XMLNS_DECL " xsi:type='T'/>", { "xmlns:t=\"urn:d\"", "xsi:type=\"t:T\"" } },
        { "<r " XMLNS_DECL " xsi:type='T'/>", { "xsi:type=\"T\"" } },
        /* nested: each tag's type prefix in its own scope, names in the XML namespace beside them */
        { "<p:a xmlns:p='urn:p' " XMLNS_DECL " xsi:type='p:A'><p:b xmlns:q='urn:q' xsi:type='q:B'>"
          "<c xsi:type='xml:base' xml:lang='en'><xml:d xml:space='preserve' xsi:type='p:D'/></c></p:b></p:a>",
          { "<xml:d xmlns:t=\"urn:p\" xsi:type=\"t:D\" xml:space=\"preserve\"/>", "xsi:type=\"xml:base\" xml:lang=\"en\"" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) round_trip(g, cases[i].xml, cases[i].want, no_xml_decl);
    wm_exi_grammar_free(g);
}

/* The fuzzer's findings (review 6): acceptance.xsd, byte 0 of the artefact
 * = the fuzz target's option bits; xsi:type in the XML namespace. */
Test(exi_xml_namespaces, the_fuzzers_streams_write_xml_colon)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("interop/schemaInformedGrammar/acceptance.xsd", &e);
    cr_assert(g, "%s", e.msg);
    static const uint8_t s1[] = { 0xa0, 0x30, 0x10, 0x30, 0x10, 0x84, 0x80, 0x30, 0x10 }; /* strict, byte-aligned */
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    o.alignment = WM_EXI_BYTE_ALIGNED;
    wm_test_exi_doc doc;
    cr_assert_eq(wm_test_exi_decode_doc(g, s1, sizeof s1, &o, &doc, &e, NULL), WM_EXI_OK, "%s", e.msg);
    cr_assert(!doc.sink.bad, "%s", doc.sink.why);
    cr_assert(strstr(doc.sink.buf, " xsi:type=\"xml:space\""), "%s", doc.sink.buf);
    char why[512];
    /* the same document written by hand: the infoset check parses both */
    cr_assert(wm_test_exi_same_infoset(&doc, "<g:AE xmlns:g='urn:goo' " XMLNS_DECL " xsi:type='xml:space'></g:AE>", why, sizeof why),
              "%s: %s", doc.sink.buf, why);
    wm_test_exi_doc_free(&doc);
    wm_exi_grammar_free(g);
}

/* Events built with the encoder (schema-less): what no XML can carry */
typedef struct ev {
    char type; /* 'S' start element, 'A' attribute, 'E' end element */
    const char *uri, *local, *value;
} ev;

static size_t encode_events(const wm_exi_grammar *g, const ev *evs, size_t k, uint8_t *out, size_t cap)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
    wm_exi_error e = { 0 };
    size_t n = 0;
    cr_assert_eq(wm_exi_encode_start(&enc, out, cap, &e), WM_EXI_OK, "%s", e.msg);
    for (size_t i = 0; i < k; i++) {
        const ev *x = &evs[i];
        wm_exi_status st = x->type == 'S' ? wm_exi_encode_se(&enc, x->uri, strlen(x->uri), x->local, strlen(x->local))
                         : x->type == 'A' ? wm_exi_encode_at(&enc, x->uri, strlen(x->uri), x->local, strlen(x->local), x->value,
                                                             strlen(x->value))
                                          : wm_exi_encode_ee(&enc);
        cr_assert_eq(st, WM_EXI_OK, "event %zu: %s", i, enc.err ? enc.err->msg : "");
    }
    cr_assert_eq(wm_exi_encode_end(&enc, &n), WM_EXI_OK);
    wm_exi_encoder_free(&enc);
    return n;
}

/* stops the decoder at event number `at` (0-based), to learn where it ends */
typedef struct { unsigned seen, at; } stopper;
static int stop_at(void *user, const wm_exi_event *e)
{
    stopper *s = user;
    return e->type != WM_EXI_EV_SD && s->seen++ == s->at;
}

Test(exi_xml_namespaces, names_and_type_values_in_the_xmlns_namespace_are_refused_where_they_occur)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    static const struct { ev evs[5]; size_t k; unsigned bad_event; const char *why; } cases[] = {
        { { { 'S', "", "r", NULL }, { 'A', XSI, "type", "{" XMLNS "}t" }, { 'E', NULL, NULL, NULL } }, 3, 1, "xsi:type value in the xmlns namespace \"t\"" },
        { { { 'S', "", "r", NULL }, { 'S', XMLNS, "e", NULL }, { 'E', NULL, NULL, NULL }, { 'E', NULL, NULL, NULL } }, 4, 1, "element in the xmlns namespace \"e\"" },
        { { { 'S', "", "r", NULL }, { 'A', "", "k", "v" }, { 'A', XMLNS, "a", "v" }, { 'E', NULL, NULL, NULL } }, 4, 2,
          "attribute (a namespace declaration) \"a\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[512];
        size_t n = encode_events(g, cases[i].evs, cases[i].k, buf, sizeof buf);
        for (int general = 0; general < 2; general++) {
            wm_exi_xml_sink s;
            wm_exi_xml_sink_init(&s);
            bool stopped = false;
            uint64_t pos = 0;
            wm_exi_error e = { 0 };
            cr_assert_eq(wm_test_exi_decode_xml(g, buf, n, NULL, general, &s, &stopped, &pos, &e), WM_EXI_OK, "%s", e.msg);
            cr_assert(stopped && s.bad, "case %zu: wrote %s", i, s.buf ? s.buf : "");
            cr_assert(strstr(s.why, cases[i].why) && strstr(s.why, "cannot be written as XML"), "case %zu: %s", i, s.why);
            /* the position is the end of the refused event, as a callback stopping there sees it */
            wm_exi_decoder d;
            wm_exi_decoder_init(&d, g, NULL);
            stopper st = { 0, cases[i].bad_event };
            bool st_stopped = false;
            cr_assert_eq(wm_exi_decode(&d, buf, n, NULL, stop_at, &st, &st_stopped, &e), WM_EXI_OK);
            cr_assert(st_stopped);
            cr_assert_eq(pos, d.stop_bit_pos, "case %zu: bit %llu, the event ends at %llu", i, (unsigned long long)pos,
                         (unsigned long long)d.stop_bit_pos);
            wm_exi_decoder_free(&d);
            wm_exi_xml_sink_free(&s);
        }
    }
    wm_exi_grammar_free(g);
}

/* The XML reader resolves an xsi:type value's prefix; one that is not
 * declared is an error, not "no namespace" (the type would change). XML that
 * is well-formed but not namespace-well-formed is refused with libxml2's
 * reason: it has no infoset (an undeclared p:a would have become the local
 * name "p:a", a stream the decoder refuses). */
Test(exi_xml_namespaces, the_reader_refuses_what_is_not_namespace_well_formed)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    static const struct { const char *xml, *needle; } bad[] = {
        { "<r " XMLNS_DECL ">\n<e xsi:type='q:T'/></r>", "xsi:type=\"q:T\": prefix 'q' is not declared (line 2)" },
        { "<r " XMLNS_DECL " xsi:type='xmlns:T'/>", "prefix 'xmlns' is not declared" },
        { "<r>\n\n<p:a/></r>", "XML is not namespace-well-formed (line 3): Namespace prefix p on a is not defined" },
        { "<r p:b='1'/>", "not namespace-well-formed (line 1)" },
        { "<r xmlns:p='http://www.w3.org/XML/1998/namespace'/>", "xml namespace URI mapped to wrong prefix" },
        { "<r xmlns:xml='urn:x'/>", "xml namespace prefix mapped to wrong URI" },
        { "<r xmlns='http://www.w3.org/2000/xmlns/'/>", "reuse of the xmlns namespace name is forbidden" },
        { "<xmlns:r/>", "not namespace-well-formed" },
        { "<r xmlns:p=''/>", "not namespace-well-formed" },
        { "<r xmlns:p='urn:p' xmlns:q='urn:p' p:x='1' q:x='2'/>", "not namespace-well-formed" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t buf[512];
        wm_exi_error e = { 0 };
        cr_assert_eq(wm_test_exi_encode(g, bad[i].xml, false, buf, sizeof buf, &e), 0, "%s encoded", bad[i].xml);
        cr_assert_eq(e.status, WM_EXI_E_INPUT, "%s: %d %s", bad[i].xml, e.status, e.msg);
        cr_assert(strstr(e.msg, bad[i].needle), "%s: %s", bad[i].xml, e.msg);
    }
    wm_exi_grammar_free(g);
}
