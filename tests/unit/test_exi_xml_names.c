/* Crafted EXI streams must not turn into non-well-formed XML or XML with
 * injected markup (codec/exi_xmlchar.h, codec/exi_xml.h). The decoder
 * refuses local names / prefixes that are not NCNames and characters outside
 * XML 1.0 Char, with the position; the XML sink refuses what only it can see
 * (an attribute twice, an attribute named xmlns) and escapes namespace names.
 * The first four streams are the review's repros (schema-less, byte-aligned,
 * no options: header 0x80; SE(*) takes 0 bits, a URI hit 1 byte, a
 * local-name miss its length + 1 then its characters). Whatever the sink
 * writes must parse with libxml2 as namespace-well-formed XML. */
#include <criterion/criterion.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

typedef struct {
    wm_exi_status st;
    bool stopped;
    wm_exi_error e;
    wm_exi_xml_sink s;
    uint64_t stop_pos;
} run;

static run decode(const wm_exi_grammar *g, const uint8_t *b, size_t n, const wm_exi_options *o, bool general)
{
    run r = { 0 };
    wm_exi_xml_sink_init(&r.s);
    r.st = wm_test_exi_decode_xml(g, b, n, o, general, &r.s, &r.stopped, &r.stop_pos, &r.e);
    return r;
}

static run schemaless(const uint8_t *b, size_t n)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.alignment = WM_EXI_BYTE_ALIGNED;
    run r = decode(g, b, n, &o, false);
    wm_exi_grammar_free(g);
    return r;
}

/* the sink's output is namespace-well-formed XML 1.0 */
static void parses(const char *xml)
{
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    cr_assert(ctx);
    xmlDocPtr doc = xmlCtxtReadMemory(ctx, xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    cr_assert(doc && ctx->wellFormed && ctx->nsWellFormed, "not well-formed: %s", xml);
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctx);
}

/* a crafted schema-less stream that must decode to exactly want, which parses */
static void decodes_to(const uint8_t *b, size_t n, const char *want)
{
    run r = schemaless(b, n);
    cr_assert_eq(r.st, WM_EXI_OK, "%s", r.e.msg);
    cr_assert_str_eq(r.s.buf, want);
    parses(r.s.buf);
    wm_exi_xml_sink_free(&r.s);
}

/* a crafted schema-less stream and the bit its refusal must name */
typedef struct {
    const char *what;
    uint8_t b[40];
    size_t n;
    uint64_t bit;
} crafted;

static void refused(const crafted *c, size_t k, const char *needle)
{
    for (size_t i = 0; i < k; i++) {
        run r = schemaless(c[i].b, c[i].n);
        cr_assert_eq(r.st, WM_EXI_E_VALUE, "%s: status %d (%s), wrote %s", c[i].what, r.st, r.e.msg, r.s.buf ? r.s.buf : "");
        cr_assert(strstr(r.e.msg, needle), "%s: %s", c[i].what, r.e.msg);
        cr_assert_eq(r.e.bit_pos, c[i].bit, "%s: bit %llu", c[i].what, (unsigned long long)r.e.bit_pos);
        wm_exi_xml_sink_free(&r.s);
    }
}

Test(exi_xml_names, names_that_are_not_ncnames_are_refused_with_their_position)
{
    static const crafted cases[] = {
        /* attrinj: AT(*) local name `k="v" admin="true" z` */
        { "attrinj", { 0x80, 0x01, 0x02, 0x61, 0x01, 0x01, 0x15, 'k', '=', '"', 'v', '"', ' ', 'a', 'd', 'm', 'i', 'n',
                       '=', '"', 't', 'r', 'u', 'e', '"', ' ', 'z', 0x03, 'v', 0x01, 0x03, 0x03, 'x', 0x00 }, 34, 48 },
        /* inject: SE(*) local name `a evil="1"><injected/` */
        { "inject", { 0x80, 0x01, 0x16, 'a', ' ', 'e', 'v', 'i', 'l', '=', '"', '1', '"', '>', '<', 'i', 'n', 'j', 'e',
                      'c', 't', 'e', 'd', '/', 0x03, 0x03, 'x', 0x00 }, 28, 16 },
        /* badname: SE(*) local name " " */
        { "badname", { 0x80, 0x01, 0x02, ' ', 0x03, 0x03, 'x', 0x00 }, 8, 16 },
        /* a name starting with a digit */
        { "digit", { 0x80, 0x01, 0x02, '1', 0x00 }, 5, 16 },
    };
    refused(cases, sizeof cases / sizeof cases[0], "is not an XML NCName");
    /* non-ASCII NCNames are fine: "é" (U+00E9 as one Unsigned Integer 0xe9 0x01) */
    static const uint8_t ok[] = { 0x80, 0x01, 0x02, 0xe9, 0x01, 0x00 };
    decodes_to(ok, sizeof ok, "<\xc3\xa9/>\n");
}

Test(exi_xml_names, characters_outside_xml_char_are_refused)
{
    /* c1: CH value U+0001; then U+FFFE, U+0008 in an attribute value, U+000B in a URI */
    static const crafted cases[] = {
        { "c1", { 0x80, 0x01, 0x02, 'a', 0x03, 0x03, 0x01, 0x00 }, 8, 56 },
        { "fffe", { 0x80, 0x01, 0x02, 'a', 0x03, 0x03, 0xfe, 0xff, 0x03, 0x00 }, 10, 72 },
        { "attr8", { 0x80, 0x01, 0x02, 'a', 0x01, 0x01, 0x02, 'k', 0x03, 0x08, 0x00 }, 11, 80 },
        { "uri", { 0x80, 0x00, 0x01, 0x0b, 0x02, 'a', 0x00 }, 7, 32 },
    };
    refused(cases, sizeof cases / sizeof cases[0], "is not an XML 1.0 character");
    /* tab, newline, CR and '<' are characters: escaped where needed */
    static const uint8_t ok[] = { 0x80, 0x01, 0x02, 'a', 0x01, 0x01, 0x02, 'k', 0x05, '\t', '\n', '<', 0x01, 0x03, 0x05, '\r', '&', '\n', 0x00 };
    decodes_to(ok, sizeof ok, "<a k=\"&#9;&#10;&lt;\">&#13;&amp;\n</a>\n");
}

Test(exi_xml_names, the_sink_refuses_duplicate_and_xmlns_attributes_and_escapes_uris)
{
    /* <a k="v" k="w">: the second AT(k) through the learned production (first-level code 0) */
    static const uint8_t dup[] = { 0x80, 0x01, 0x02, 'a', 0x01, 0x01, 0x02, 'k', 0x03, 'v', 0x00, 0x03, 'w', 0x01, 0x03, 0x03, 'x', 0x00 };
    run r = schemaless(dup, sizeof dup);
    cr_assert(r.st == WM_EXI_OK && r.stopped && r.s.bad, "status %d stopped %d bad %d: %s", r.st, r.stopped, r.s.bad, r.s.buf);
    cr_assert(strstr(r.s.why, "second attribute \"k\""), "%s", r.s.why);
    cr_assert_eq(r.stop_pos, 13 * 8, "stopped after the second attribute: bit %llu", (unsigned long long)r.stop_pos);
    wm_exi_xml_sink_free(&r.s);
    /* <a xmlns="v">: an attribute named xmlns in no namespace would rebind the default namespace */
    static const uint8_t xmlns[] = { 0x80, 0x01, 0x02, 'a', 0x01, 0x01, 0x06, 'x', 'm', 'l', 'n', 's', 0x03, 'v', 0x01, 0x03, 0x03, 'x', 0x00 };
    r = schemaless(xmlns, sizeof xmlns);
    cr_assert(r.st == WM_EXI_OK && r.stopped && r.s.bad, "status %d: %s", r.st, r.s.buf);
    cr_assert(strstr(r.s.why, "namespace declaration"), "%s", r.s.why);
    wm_exi_xml_sink_free(&r.s);
    /* an element in the URI `u:?a&b='c'` (a URI miss: 0, length 10, the characters): escaped in its declaration */
    static const uint8_t uri[] = { 0x80, 0x00, 0x0a, 'u', ':', '?', 'a', '&', 'b', '=', '\'', 'c', '\'', 0x02, 'e', 0x00 };
    decodes_to(uri, sizeof uri, "<ns3:e xmlns:ns3=\"u:?a&amp;b='c'\"/>\n");
    /* `a"<` is no URI reference: a declaration with it would not be namespace-well-formed */
    static const uint8_t nouri[] = { 0x80, 0x00, 0x03, 'a', '"', '<', 0x02, 'e', 0x00 };
    r = schemaless(nouri, sizeof nouri);
    cr_assert(r.st == WM_EXI_OK && r.stopped && r.s.bad, "status %d: %s", r.st, r.s.buf);
    cr_assert(strstr(r.s.why, "not a URI reference"), "%s", r.s.why);
    wm_exi_xml_sink_free(&r.s);
    /* a second entry with the empty URI is no namespace (xmlns:ns3="" is not XML 1.0), and one with the
     * XML namespace's name is written xml: without a declaration */
    static const uint8_t empty[] = { 0x80, 0x00, 0x00, 0x02, 'e', 0x01, 0x00, 0x24, 'h', 't', 't', 'p', ':', '/', '/', 'w', 'w', 'w', '.', 'w', '3', '.',
                                     'o', 'r', 'g', '/', 'X', 'M', 'L', '/', '1', '9', '9', '8', '/', 'n', 'a', 'm', 'e', 's', 'p', 'a', 'c', 'e',
                                     0x02, 'l', 0x03, 'v', 0x01, 0x00 };
    decodes_to(empty, sizeof empty, "<e xml:l=\"v\"/>\n");
}

/* The strict bit-packed loop reads ASCII attribute literals itself: a
 * control character there is refused like on the general path, and tab /
 * newline still decode. */
Test(exi_xml_names, strict_loop_refuses_control_characters_in_literals_like_the_general_path)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    static const char *const vals[] = { "abc\001def", "abcdefghij\037", "tab\there", "nl\nthere" };
    for (size_t i = 0; i < 4; i++) {
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
        uint8_t buf[128];
        size_t n = 0;
        const char *u = "urn:ietf:params:xml:ns:senml";
        cr_assert(!wm_exi_encode_start(&enc, buf, sizeof buf, &e) && !wm_exi_encode_se(&enc, u, strlen(u), "sensml", 6) &&
                      !wm_exi_encode_se(&enc, u, strlen(u), "senml", 5) &&
                      !wm_exi_encode_at(&enc, "", 0, "n", 1, vals[i], strlen(vals[i])) && !wm_exi_encode_ee(&enc) &&
                      !wm_exi_encode_ee(&enc) && !wm_exi_encode_end(&enc, &n),
                  "%s", e.msg);
        wm_exi_encoder_free(&enc);
        bool bad = i < 2;
        for (int general = 0; general < 2; general++) {
            run r = decode(g, buf, n, &o, general);
            if (bad) {
                cr_assert_eq(r.st, WM_EXI_E_VALUE, "%zu general %d: status %d, wrote %s", i, general, r.st, r.s.buf ? r.s.buf : "");
                cr_assert(strstr(r.e.msg, "is not an XML 1.0 character"), "%s", r.e.msg);
            } else {
                cr_assert_eq(r.st, WM_EXI_OK, "%zu general %d: %s", i, general, r.e.msg);
                parses(r.s.buf);
            }
            wm_exi_xml_sink_free(&r.s);
        }
    }
    wm_exi_grammar_free(g);
}
