/* CM and PI events (Preserve.comments, Preserve.pis; EXI 1.0 §4, §6.3,
 * §8.4.3): a stream written bit by bit from the spec text decodes to its
 * XML and the encoder writes exactly its bytes; comments and PIs in the
 * document's prolog and epilog, in start tags and content, schema-less and
 * through a schema, round-trip; text XML cannot carry as a comment or PI
 * is refused by the XML writer with the reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

/* <a>x<!--c-->y</a>, schema-less, Preserve.comments, bit-packed, no options
 * header:
 *   header       10 0 0 0000                       distinguishing bits, no options, version 1
 *   DocContent   0                                  SE(*) of {SE(*), [CM]}: 1 bit (DT pruned, §8.4.1)
 *   qname        01 00000010 01100001               URI "" (id 0 + 1, 2 bits of 3+1), local literal "a" (1 + 1)
 *   StartTag     011 00000011 01111000              no learned production: 0 bits; second level
 *                                                   {EE, AT(*), SE(*), CH, [CM PI]}: CH = 3 of 5; value miss "x"
 *   ElementCont. 1 10 (0 bits) 00000001 01100011    first level {EE}+escape: escape; second {SE(*), CH, [..]}: third
 *                                                   level (2 of 3), CM (0 bits of 1); String "c" (length, §7.1.10)
 *                1 01 00000011 01111001             CH (1 of 3): value miss "y" (CM is not learned, §8.4.3)
 *                01                                 EE of {CH learned, EE, escape}: 1 of 3
 *   DocEnd       0                                  ED of {ED, [CM PI]}
 * = 80 20 4c 2c 0d e3 00 b1 d0 37 94 */
static const uint8_t vec[] = { 0x80, 0x20, 0x4c, 0x2c, 0x0d, 0xe3, 0x00, 0xb1, 0xd0, 0x37, 0x94 };

static wm_exi_options opts(bool cm, bool pi)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.preserve_comments = cm;
    o.preserve_pis = pi;
    return o;
}

static size_t encode(const wm_exi_grammar *g, const wm_exi_options *o, const char *xml, uint8_t *out, size_t cap)
{
    wm_exi_encoder e;
    wm_exi_encoder_init(&e, g, o, false, false, NULL);
    size_t n = 0;
    wm_exi_error err = { 0 };
    wm_exi_status st = wm_exi_encode_xml(&e, xml, strlen(xml), out, cap, &n, &err);
    wm_exi_encoder_free(&e);
    cr_assert_eq(st, WM_EXI_OK, "%s: %s", xml, err.msg);
    return n;
}

static void decode_to(const wm_exi_grammar *g, const wm_exi_options *o, const uint8_t *s, size_t n, const char *want)
{
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    wm_exi_error err = { 0 };
    cr_assert_eq(wm_test_exi_decode_xml(g, s, n, o, false, &sink, NULL, NULL, &err), WM_EXI_OK, "%s", err.msg);
    sink.buf[strcspn(sink.buf, "\n")] = 0;
    cr_assert_str_eq(sink.buf, want);
    wm_exi_xml_sink_free(&sink);
}

Test(exi_comments, hand_derived_vector)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    wm_exi_options o = opts(true, false);
    decode_to(g, &o, vec, sizeof vec, "<a>x<!--c-->y</a>");
    uint8_t out[64];
    size_t n = encode(g, &o, "<a>x<!--c-->y</a>", out, sizeof out);
    cr_assert(n == sizeof vec && !memcmp(out, vec, n), "encoder wrote other bytes (%zu)", n);
    /* without the option the comment is not an event: the text is one CH */
    wm_exi_options plain = opts(false, false);
    n = encode(g, &plain, "<a>x<!--c-->y</a>", out, sizeof out);
    decode_to(g, &plain, out, n, "<a>xy</a>");
    wm_exi_grammar_free(g);
}

Test(exi_comments, everywhere_a_document_may_have_them)
{
    static const char *const docs[] = {
        "<!--pro--><?t d?><a><!--s--><?u?>x<b/><!--m-->y<?v w x?></a><!--epi--><?z?>",
        "<a><!----></a>",
        "<a>1<!--c-->2<b>3<?p q?></b></a>",
    };
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    for (int ba = 0; ba < 2; ba++)
        for (size_t k = 0; k < sizeof docs / sizeof *docs; k++) {
            wm_exi_options o = opts(true, true);
            o.alignment = ba ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
            uint8_t out[512];
            size_t n = encode(g, &o, docs[k], out, sizeof out);
            decode_to(g, &o, out, n, docs[k]);
        }
    /* through a schema, non-strict: in declared content and around the root */
    wm_exi_error e = { 0 };
    wm_exi_grammar *s = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(s, "%s", e.msg);
    const char *x = "<!--a--><ns4:sensml xmlns:ns4=\"urn:ietf:params:xml:ns:senml\"><!--b--><ns4:senml n=\"t\" v=\"1\"/><?p q?>"
                    "<ns4:senml n=\"u\"/></ns4:sensml><!--c-->";
    for (int pi = 0; pi < 2; pi++) {
        wm_exi_options o = opts(true, pi);
        uint8_t out[512];
        size_t n = encode(s, &o, x, out, sizeof out);
        decode_to(s, &o, out, n, pi ? x : "<!--a--><ns4:sensml xmlns:ns4=\"urn:ietf:params:xml:ns:senml\"><!--b-->"
                                       "<ns4:senml n=\"t\" v=\"1\"/><ns4:senml n=\"u\"/></ns4:sensml><!--c-->");
    }
    /* strict streams preserve neither (§5.4) */
    wm_exi_options o = opts(true, false);
    o.strict = true;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, s, &o, false, false, NULL);
    uint8_t out[64];
    cr_assert_eq(wm_exi_encode_start(&enc, out, sizeof out, &e), WM_EXI_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "strict"), "%s", e.msg);
    wm_exi_encoder_free(&enc);
    wm_exi_grammar_free(s);
    wm_exi_grammar_free(g);
}

/* A stream may carry what XML cannot write: refused with the reason. */
Test(exi_comments, unwritable_text_is_refused)
{
    static const struct { bool pi; const char *t, *d, *why; } bad[] = {
        { false, "a--b", NULL, "comment \"a--b\" cannot be written as XML" },
        { false, "ends-", NULL, "comment \"ends-\" cannot be written as XML" },
        { true, "p", "x?>y", "processing-instruction data \"x?>y\" cannot be written as XML" },
    };
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        wm_exi_options o = opts(true, true);
        wm_exi_encoder e;
        wm_exi_encoder_init(&e, g, &o, false, false, NULL);
        uint8_t out[128];
        size_t n = 0;
        wm_exi_error err = { 0 };
        cr_assert_eq(wm_exi_encode_start(&e, out, sizeof out, &err), WM_EXI_OK, "%s", err.msg);
        cr_assert_eq(wm_exi_encode_se(&e, "", 0, "a", 1), WM_EXI_OK);
        wm_exi_status st = bad[k].pi ? wm_exi_encode_pi(&e, bad[k].t, strlen(bad[k].t), bad[k].d, strlen(bad[k].d))
                                     : wm_exi_encode_cm(&e, bad[k].t, strlen(bad[k].t));
        cr_assert_eq(st, WM_EXI_OK);
        cr_assert_eq(wm_exi_encode_ee(&e), WM_EXI_OK);
        cr_assert_eq(wm_exi_encode_end(&e, &n), WM_EXI_OK);
        wm_exi_encoder_free(&e);
        wm_exi_xml_sink sink;
        wm_exi_xml_sink_init(&sink);
        wm_test_exi_decode_xml(g, out, n, &o, false, &sink, NULL, NULL, &err);
        cr_assert(sink.bad && strstr(sink.why, bad[k].why), "%s", sink.why);
        wm_exi_xml_sink_free(&sink);
    }
    wm_exi_grammar_free(g);
}
