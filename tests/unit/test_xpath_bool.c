/* Boolean-typed values in content filters (review finding 7). EXI carries a
 * boolean's value, not its lexical form: vb="1" and vb="true" arrive alike.
 * Tests on a schema-typed boolean compare booleans (matcher/xpath_filter.h):
 * 1, '1', 'true' mean true, 0, '0', 'false' false; other literals, order
 * comparisons and string functions are refused with reason and position.
 * Expected results follow from that rule on the documents written here
 * (untyped XPath 1.0 on the source text would differ for vb="1" = 'true'). */
#include <criterion/criterion.h>
#include <string.h>

#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

static const char xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
    "<xs:element name='r'><xs:complexType><xs:sequence>"
    "  <xs:element name='e' minOccurs='0' maxOccurs='unbounded'><xs:complexType>"
    "    <xs:attribute name='vb' type='xs:boolean'/><xs:attribute name='n' type='xs:string'/></xs:complexType></xs:element>"
    "  <xs:element name='flag' type='xs:boolean' minOccurs='0'/>"
    "</xs:sequence></xs:complexType></xs:element></xs:schema>";

static wm_exi_grammar *grammar(void)
{
    return wm_test_xpf_grammar(xsd);
}

/* Whether query q matches document xml. */
static bool matches(const char *q, const char *xml)
{
    wm_exi_grammar *g = grammar();
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    const char *qs[] = { q };
    cr_assert_eq(wm_xpf_compile(g, qs, 1, NULL, 0, &f, &fe), WM_XPF_OK, "%s refused at %u: %s", q, fe.pos, fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    uint8_t exi[1024];
    wm_exi_error e;
    size_t len = wm_test_exi_encode(g, xml, true, exi, sizeof exi, &e);
    cr_assert(len, "%s", e.msg);
    uint64_t m = 0;
    cr_assert_eq(wm_xpf_match(c, exi, len, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s", e.msg);
    m = wm_test_xpf_by_query(f, &m);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
    return m & 1;
}

static void refused(const char *q, unsigned pos, const char *needle)
{
    wm_exi_grammar *g = grammar();
    wm_test_xpf_refused(g, "//e", NULL, 0, q, pos, needle);
    wm_exi_grammar_free(g);
}

static const char *const one = "<r><e vb='1'/></r>", *const tru = "<r><e vb='true'/></r>";
static const char *const zero = "<r><e vb='0'/></r>", *const fals = "<r><e vb='false'/></r>";

Test(xpath_bool, true_literals_match_both_lexical_forms)
{
    const char *const qs[] = { "//e[@vb = '1']", "//e[@vb = \"true\"]", "//e[@vb = 1]", "//e[1 = @vb]", "//e[@vb != 'false']",
                               "//e[@vb != 0]", "//e[not(@vb = '0')]" };
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        cr_assert(matches(qs[i], one), "%s on vb='1'", qs[i]);
        cr_assert(matches(qs[i], tru), "%s on vb='true'", qs[i]);
        cr_assert_not(matches(qs[i], zero), "%s on vb='0'", qs[i]);
        cr_assert_not(matches(qs[i], fals), "%s on vb='false'", qs[i]);
    }
}

Test(xpath_bool, false_literals_and_absence)
{
    const char *const qs[] = { "//e[@vb = '0']", "//e[@vb = 'false']", "//e[@vb = 0]", "//e[@vb != 'true']", "//e[@vb != 1]" };
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        cr_assert(matches(qs[i], zero), "%s on vb='0'", qs[i]);
        cr_assert(matches(qs[i], fals), "%s on vb='false'", qs[i]);
        cr_assert_not(matches(qs[i], one), "%s on vb='1'", qs[i]);
        cr_assert_not(matches(qs[i], tru), "%s on vb='true'", qs[i]);
    }
    /* XPath 1.0: a comparison with a missing attribute is false, = and != alike */
    cr_assert_not(matches("//e[@vb = 'false']", "<r><e n='x'/></r>"));
    cr_assert_not(matches("//e[@vb != 'false']", "<r><e n='x'/></r>"));
    cr_assert(matches("//e[not(@vb = 'true')]", "<r><e n='x'/></r>"));
    /* existence is no value test */
    cr_assert(matches("//e/@vb", zero));
    cr_assert(matches("//e[@vb and @vb = 1]", one));
    cr_assert_not(matches("//e[@vb]", "<r><e n='x'/></r>"));
}

Test(xpath_bool, boolean_text)
{
    cr_assert(matches("//flag[. = 'true']", "<r><flag>1</flag></r>"));
    cr_assert(matches("/r/flag[text() = 1]", "<r><flag>true</flag></r>"));
    cr_assert(matches("//flag[. != '1']", "<r><flag>0</flag></r>"));
    cr_assert_not(matches("//flag[. = '0']", "<r><flag>true</flag></r>"));
}

Test(xpath_bool, other_literals_order_and_string_functions_refused)
{
    refused("//e[@vb = 'yes']", 5, "not this literal");
    refused("//e[@vb = ' true']", 5, "not this literal"); /* no whitespace collapsing of literals */
    refused("//e[@vb = 'TRUE']", 5, "not this literal");
    refused("//e[@vb = 2]", 5, "not this literal");
    refused("//e[@n = 'a' or @vb = '']", 17, "not this literal");
    refused("//e[@vb < 1]", 5, "no order");
    refused("//e[1 >= @vb]", 5, "no order");
    refused("//e[contains(@vb, 'tr')]", 5, "string test on @vb");
    refused("//e[starts-with(@vb, 't')]", 5, "string test on @vb");
    refused("//e[matches(@vb, '^1$')]", 5, "string test on @vb");
    refused("//flag[. = 'on']", 8, "not this literal");
}
