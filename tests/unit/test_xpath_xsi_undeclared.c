/* Values typed by xsi:type where the schema cannot say the type: an element
 * no declaration covers (below a lax wildcard, §8.4.3: its built-in grammar
 * switches to the named type's grammar, strict or not) and, in a non-strict
 * stream, an element whose xsi:type names a type not derived from its
 * declared one (an invalid document EXI still carries, §8.5.4.4). The
 * compiler types a test by the declarations (matcher/xpath_types.c), so
 * these values reach tests the compiler could not refuse; what the filter
 * does with them, against libxml2's XPath 1.0 on the source XML:
 * - numbers compare as numbers where xsi:type makes the value one
 *   (`. = 5`, `. > 4` on xsi:type='xs:int' "05"), strings as strings
 *   where it names a string type or none: these agree with libxml2 on the
 *   source;
 * - where xsi:type makes the value a number, boolean, date or decimal, the
 *   stream carries the value, not the text ("05" arrives as 5, "1e1" as 10,
 *   "1" as true): string tests (=, starts-with, contains) read that value's
 *   canonical form, and number tests on a boolean read NaN. No encoder can
 *   keep the text without Preserve.lexicalValues (which the decoder
 *   refuses), so the reference for these is libxml2 on a twin document with
 *   the canonical text (given by hand below, as EXI 1.0 §7.1 writes each
 *   value); the test also shows that the source's answer differs for some of
 *   them, so the rule is exercised, not vacuous. */
#include <criterion/criterion.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <stdio.h>
#include <string.h>

#include "matcher/xpath_filter.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

static const char xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema' xmlns='urn:x' targetNamespace='urn:x'"
    " elementFormDefault='qualified'>"
    "<xs:element name='root'><xs:complexType><xs:sequence>"
    "  <xs:element name='s' type='xs:string' minOccurs='0'/>"
    "  <xs:element name='i' type='xs:int' minOccurs='0'/>"
    "  <xs:element name='w' minOccurs='0'><xs:complexType><xs:sequence>"
    "    <xs:any namespace='##other' processContents='lax' minOccurs='0' maxOccurs='unbounded'/>"
    "  </xs:sequence></xs:complexType></xs:element>"
    "</xs:sequence></xs:complexType></xs:element></xs:schema>";

static const wm_xp_ns ns[] = { { "x", "urn:x" }, { "z", "urn:z" } };

#define ROOT                                                                                   \
    "<root xmlns='urn:x' xmlns:z='urn:z' xmlns:xs='http://www.w3.org/2001/XMLSchema' "        \
    "xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance'>"

/* One element per case: where it is (below the wildcard, or a declared one),
 * its xsi:type (NULL: none), its source text and the text of its value as
 * the stream carries it. */
static const struct xcase {
    const char *el, *type, *text, *canon;
    bool strict_too; /* a valid document: also as a strict stream */
} cases[] = {
    { "z:a", "xs:int", "05", "5", true }, { "z:a", "xs:int", "5", "5", true }, { "z:a", "xs:int", "+05", "5", true },
    { "z:a", "xs:double", "1e1", "10", true }, { "z:a", "xs:decimal", "1.50", "1.5", true },
    { "z:a", "xs:boolean", "1", "true", true }, { "z:a", "xs:boolean", "false", "false", true },
    { "z:a", "xs:string", "05", "05", true }, { "z:a", NULL, "05", "05", true }, { "z:a", NULL, "10", "10", true },
    { "z:a", "xs:dateTime", "2020-01-01T10:00:00.50Z", "2020-01-01T10:00:00.5Z", true },
    /* declared, xsi:type not derived from the declaration: invalid, non-strict only */
    { "s", "xs:int", "05", "5", false }, { "s", "xs:double", "1e1", "10", false },
    { "i", "xs:boolean", "1", "true", false }, { "i", "xs:string", "05", "05", false },
};

/* @S: the source text, @C: the canonical one */
static const char *const forms[] = {
    "[. = '@S']", "[. = '@C']", "[. = 5]", "[. > 4]", "[. < 4]", "[. = 10]", "[. = 1]", "[starts-with(., '0')]",
    "[contains(., '.')]", "[. = 'true']", "[text() = '@S']", "[text() = 5]", "[not(. = '05')]", "",
};

static void predicate(const char *form, const struct xcase *c, char *out, size_t cap)
{
    const char *p = strstr(form, "@S"), *r = c->text;
    if (!p) p = strstr(form, "@C"), r = c->canon;
    if (!p) snprintf(out, cap, "%s", form);
    else snprintf(out, cap, "%.*s%s%s", (int)(p - form), form, r, p + 2);
}

static void doc_of(const struct xcase *c, const char *text, char *out, size_t cap)
{
    const char *name = c->el; /* s, i: unprefixed, in the default namespace urn:x */
    char attr[64] = "";
    if (c->type) snprintf(attr, sizeof attr, " xsi:type='%s'", c->type);
    if (c->el[0] == 'z') snprintf(out, cap, ROOT "<w><%s%s>%s</%s></w></root>", name, attr, text, name);
    else snprintf(out, cap, ROOT "<%s%s>%s</%s></root>", name, attr, text, name);
}

static bool libxml2(const char *xml, const char *q)
{
    xmlDocPtr d = xmlReadMemory(xml, (int)strlen(xml), "x.xml", NULL, XML_PARSE_NONET);
    cr_assert(d, "libxml2 did not parse %s", xml);
    bool y = wm_test_libxml2_selects(d, q, ns, sizeof ns / sizeof *ns);
    xmlFreeDoc(d);
    return y;
}

Test(xpath_xsi_undeclared, typed_by_xsi_type_where_the_schema_cannot_say)
{
    wm_exi_grammar *g = wm_test_xpf_grammar(xsd);
    unsigned pairs = 0, refused = 0, yes = 0, agree_src = 0, differ_src = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const struct xcase *c = &cases[k];
        char src[512], twin[512];
        doc_of(c, c->text, src, sizeof src);
        doc_of(c, c->canon, twin, sizeof twin);
        for (int strict = 0; strict < (c->strict_too ? 2 : 1); strict++) {
            uint8_t exi[1024];
            wm_exi_error e = { 0 };
            size_t len = wm_test_exi_encode(g, src, strict, exi, sizeof exi, &e);
            cr_assert(len, "%s (strict %d): %s", src, strict, e.msg);
            for (size_t fi = 0; fi < sizeof forms / sizeof *forms; fi++) {
                char pred[96], q[128];
                predicate(forms[fi], c, pred, sizeof pred);
                snprintf(q, sizeof q, "//%s%s", c->el[0] == 'z' ? c->el : c->el[0] == 's' ? "x:s" : "x:i", pred);
                const char *qs[] = { q };
                wm_xpf *f = NULL;
                wm_xpf_error fe;
                wm_xpf_status cs = wm_xpf_compile(g, qs, 1, ns, 2, &f, &fe);
                if (cs != WM_XPF_OK) {
                    /* only the declared xs:int refuses string tests (by its declaration) */
                    cr_assert(c->el[0] == 'i' && cs == WM_XPF_E_TYPE, "%s refused: %s", q, fe.msg);
                    refused++;
                    continue;
                }
                wm_xpf_ctx *ctx = wm_xpf_ctx_new(f, NULL);
                uint64_t m = 0;
                cr_assert_eq(wm_xpf_match(ctx, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s: %s", q, e.msg);
                bool ours = wm_test_xpf_hit(f, &m, 0), ref = libxml2(twin, q), on_src = libxml2(src, q);
                cr_assert_eq(ours, ref, "%s on %s (strict %d): ours %d, libxml2 on the canonical twin %d (on the source %d)", q,
                             src, strict, ours, ref, on_src);
                if (!strcmp(c->text, c->canon)) cr_assert_eq(ours, on_src, "%s: same text, same answer", q);
                agree_src += ours == on_src;
                differ_src += ours != on_src;
                yes += ours;
                pairs++;
                wm_xpf_ctx_free(ctx);
                wm_xpf_free(f);
            }
        }
    }
    cr_assert(yes > pairs / 5 && yes < pairs - pairs / 5, "both answers: %u of %u", yes, pairs);
    cr_assert(differ_src > 0 && agree_src > differ_src, "the lexical rule applies to some pairs only: %u differ, %u agree",
              differ_src, agree_src);
    cr_assert(refused > 0);
    wm_exi_grammar_free(g);
}

/* The same rule for an attribute: an undeclared element below the lax
 * wildcard whose xsi:type names a complex type with an xs:int attribute
 * carries @a as a number. A string test that is no trigger (inside not(),
 * evaluated at every element) leaves the slot without triggers, which
 * once stored the number without its text (xpf_pslot put NUM): not(@a =
 * '5') then held on a='05'. Against libxml2 on the canonical twin. */
static const char xsd_attr[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema' xmlns='urn:x' targetNamespace='urn:x'"
    " elementFormDefault='qualified'>"
    "<xs:complexType name='T'><xs:attribute name='a' type='xs:int'/></xs:complexType>"
    "<xs:element name='root'><xs:complexType><xs:sequence>"
    "  <xs:element name='w' minOccurs='0'><xs:complexType><xs:sequence>"
    "    <xs:any namespace='##other' processContents='lax' minOccurs='0' maxOccurs='unbounded'/>"
    "  </xs:sequence></xs:complexType></xs:element>"
    "</xs:sequence></xs:complexType></xs:element></xs:schema>";

Test(xpath_xsi_undeclared, attribute_typed_by_xsi_type)
{
    static const char *const texts[][2] = { { "05", "5" }, { "5", "5" }, { "12", "12" } }; /* source, canonical */
    static const char *const preds[] = { "[@a = '5']", "[not(@a = '5')]", "[not(@a = '05')]", "[@a = '05']", "[@a > 4]",
                                         "[not(@a > 4)]", "[starts-with(@a, '0')]", "[not(starts-with(@a, '1'))]" };
    wm_exi_grammar *g = wm_test_xpf_grammar(xsd_attr);
    unsigned yes = 0, pairs = 0, differ_src = 0;
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        char src[512], twin[512];
        snprintf(src, sizeof src, ROOT "<w><z:e xmlns:x='urn:x' xsi:type='x:T' a='%s'/></w></root>", texts[t][0]);
        snprintf(twin, sizeof twin, ROOT "<w><z:e xmlns:x='urn:x' xsi:type='x:T' a='%s'/></w></root>", texts[t][1]);
        for (int strict = 0; strict < 2; strict++) {
            uint8_t exi[1024];
            wm_exi_error e = { 0 };
            size_t len = wm_test_exi_encode(g, src, strict, exi, sizeof exi, &e);
            cr_assert(len, "%s (strict %d): %s", src, strict, e.msg);
            for (size_t k = 0; k < sizeof preds / sizeof *preds; k++) {
                char q[128];
                snprintf(q, sizeof q, "//z:e%s", preds[k]);
                const char *qs[] = { q };
                wm_xpf *f = NULL;
                wm_xpf_error fe;
                cr_assert_eq(wm_xpf_compile(g, qs, 1, ns, 2, &f, &fe), WM_XPF_OK, "%s: %s", q, fe.msg);
                wm_xpf_ctx *ctx = wm_xpf_ctx_new(f, NULL);
                uint64_t m = 0;
                cr_assert_eq(wm_xpf_match(ctx, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s: %s", q, e.msg);
                bool ours = wm_test_xpf_hit(f, &m, 0), ref = libxml2(twin, q);
                cr_assert_eq(ours, ref, "%s on %s (strict %d): ours %d, libxml2 on the canonical twin %d", q, src, strict, ours, ref);
                differ_src += ours != libxml2(src, q);
                yes += ours;
                pairs++;
                wm_xpf_ctx_free(ctx);
                wm_xpf_free(f);
            }
        }
    }
    cr_assert(yes > 0 && yes < pairs && differ_src > 0, "%u of %u hold, %u differ from the source", yes, pairs, differ_src);
    wm_exi_grammar_free(g);
}
