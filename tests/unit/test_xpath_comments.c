/* Comments and processing instructions inside text (Preserve.comments,
 * Preserve.pis: CM and PI events, EXI 1.0 §4, §8.4.3, §8.5.4.4.1). XPath 1.0
 * (§5.2, §5.7): an element's string-value is all its descendant text in
 * document order, comments and PIs left out, so '.', contains() and
 * starts-with() on '.' read "ab" in <s>a<!--c-->b</s>; a comment or PI
 * between two pieces of text makes them two text nodes, so text() = 'a'
 * and text() = 'b' hold there and text() = 'ab' does not.
 * Random documents of tests/data/xpath/mixed.xsd (simple content, xs:int,
 * mixed content, xs:any wildcard content) whose text is split by comments,
 * PIs and child elements, encoded non-strict with both options, against
 * libxml2's XPath on the source XML; and the decoder writes the comments and
 * PIs back (`wmctl exi decode`), parsed by libxml2 to the same tree. Before,
 * the decoder refused every CM and PI event ("comment events are not
 * supported") and the encoder refused both options. */
#include <criterion/criterion.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "matcher/xpath_filter.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

static const wm_xp_ns ns[] = { { "x", "urn:x" }, { "z", "urn:z" } };


static unsigned rnd(unsigned *s, unsigned n) { *s = *s * 1103515245u + 12345u; return (*s >> 16) % n; }

/* content of an element: text, comments, PIs and (where allowed) children */
static void content(char *o, size_t cap, unsigned *seed, const char *child)
{
    static const char *const texts[] = { "a", "b", "1", "2", "ab", "a b" };
    for (unsigned k = 0, n = 1 + rnd(seed, 5); k < n; k++) {
        const char *piece;
        char buf[64];
        switch (rnd(seed, child ? 5 : 4)) {
        case 0: case 1: piece = texts[rnd(seed, 6)]; break;
        case 2: piece = rnd(seed, 2) ? "<!--c-->" : "<!---->"; break;
        case 3: piece = rnd(seed, 2) ? "<?p d?>" : "<?q?>"; break;
        default: snprintf(buf, sizeof buf, child, texts[rnd(seed, 6)]); piece = buf; break;
        }
        strncat(o, piece, cap - strlen(o) - 1);
    }
}

static const char *const queries[] = {
    "//x:s[. = 'ab']", "//x:s[. = 'a']", "//x:s[text() = 'a']", "//x:s[text() = 'b']", "//x:s[text() = 'ab']",
    "//x:s[contains(., 'ab')]", "//x:s[starts-with(., 'ab')]", "//x:s[starts-with(text(), 'b')]", "//x:s[not(text() = 'a')]",
    "//x:s[. = '']", "//x:s[text()]", "//x:s[@k = 'k' and . = 'ab']",
    "//x:i[. = 12]", "//x:i[text() = 12]", "//x:i[text() = 1]", "//x:i[text() = 2]", "//x:i[. > 10]",
    "//x:m/x:s[. = 'ab']", "//x:m/x:s[text() = 'b']", /* mixed content: its own text is refused as a value (has children) */
    "//z:e[. = 'ab']", "//z:e[text() = 'a']", "//z:e[text() = 'b']", "//z:e[contains(., 'ab')]", "//z:e[starts-with(., 'ab')]",
    "//z:e[text() = 'ab']",
};
#define NQ (sizeof queries / sizeof *queries)

Test(xpath_comments, split_text_agrees_with_libxml2)
{
    wm_exi_grammar *g = wm_test_xpf_data_grammar("xpath/mixed.xsd");
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, queries, NQ, ns, 2, &f, &fe), WM_XPF_OK, "query %u at %u: %s", fe.query, fe.pos, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.preserve_comments = o.preserve_pis = true;
    o.preserve_prefixes = true; /* the decoded XML is compared byte for byte with the source's */
    unsigned seed = 7, pairs = 0, yes[NQ] = { 0 }, split_docs = 0;
    for (unsigned d = 0; d < 400; d++) {
        char xml[8192] = "<x:root xmlns:x='urn:x' xmlns:z='urn:z'><x:r>", part[2048];
        for (unsigned k = 0, n = 1 + rnd(&seed, 4); k < n; k++) {
            part[0] = 0;
            switch (rnd(&seed, 4)) {
            case 0: content(part, sizeof part, &seed, NULL);
                strcat(xml, rnd(&seed, 2) ? "<x:s k='k'>" : "<x:s>"); strcat(xml, part); strcat(xml, "</x:s>"); break;
            case 1: { /* an xs:int: digits only, split */
                const char *v = rnd(&seed, 2) ? "1<!--c-->2" : rnd(&seed, 2) ? "1<?p?>2" : "12";
                strcat(xml, "<x:i>"); strcat(xml, v); strcat(xml, "</x:i>"); break;
            }
            case 2: content(part, sizeof part, &seed, "<x:s>%s</x:s>");
                strcat(xml, "<x:m>"); strcat(xml, part); strcat(xml, "</x:m>"); break;
            default: content(part, sizeof part, &seed, "<z:e>%s</z:e>");
                strcat(xml, "<x:w><z:e>"); strcat(xml, part); strcat(xml, "</z:e></x:w>"); break;
            }
        }
        strcat(xml, "</x:r></x:root>");
        split_docs += strstr(xml, "<!--") || strstr(xml, "<?");
        uint8_t exi[8192];
        size_t len = 0;
        wm_exi_error e = { 0 };
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
        wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), exi, sizeof exi, &len, &e);
        wm_exi_encoder_free(&enc);
        cr_assert_eq(st, WM_EXI_OK, "%s: %s", xml, e.msg);
        uint64_t m[1] = { 0 };
        cr_assert_eq(wm_xpf_match(c, exi, len, &o, NULL, 0, m, NULL, &e), WM_XPF_OK, "%s: %s", xml, e.msg);
        xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), "x.xml", NULL, XML_PARSE_NONET);
        cr_assert(doc);
        for (unsigned q = 0; q < NQ; q++) {
            bool ours = wm_test_xpf_hit(f, m, q), ref = wm_test_libxml2_selects(doc, queries[q], ns, sizeof ns / sizeof *ns);
            cr_assert_eq(ours, ref, "%s on %s: ours %d, libxml2 %d", queries[q], xml, ours, ref);
            yes[q] += ours;
            pairs++;
        }
        /* and the XML the decoder writes has the comments and PIs where they were */
        wm_exi_xml_sink sink;
        wm_exi_xml_sink_init(&sink);
        cr_assert_eq(wm_test_exi_decode_xml(g, exi, len, &o, false, &sink, NULL, NULL, &e), WM_EXI_OK, "%s", e.msg);
        xmlDocPtr back = xmlReadMemory(sink.buf, (int)sink.len, "y.xml", NULL, XML_PARSE_NONET);
        cr_assert(back, "%s", sink.buf);
        xmlChar *a = NULL, *b = NULL;
        int an = 0, bn = 0;
        xmlDocDumpMemory(doc, &a, &an); /* one serializer for both: the same tree gives the same bytes */
        xmlDocDumpMemory(back, &b, &bn);
        cr_assert(an == bn && !memcmp(a, b, (size_t)an), "decoded differs:\n%s\n%s", a, b);
        xmlFree(a);
        xmlFree(b);
        xmlFreeDoc(back);
        wm_exi_xml_sink_free(&sink);
        xmlFreeDoc(doc);
    }
    for (unsigned q = 0; q < NQ; q++) cr_assert(yes[q] > 0 && yes[q] < 400, "%s holds on %u of 400 documents", queries[q], yes[q]);
    cr_assert(split_docs > 300, "%u documents with a comment or PI", split_docs);
    cr_assert_eq(pairs, 400 * NQ);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}
