/* The schema types of content-filter value tests (matcher/xpath_types.c,
 * review 13 findings 1 and 2), on tests/data/xpath_types.xsd: a value test
 * is typed by the declarations the query's path reaches (x is xs:int under
 * a, xs:string under b, xs:boolean under c) and by every type xsi:type may
 * give them (Derived adds @w xs:int and @f xs:boolean to Base, Named @w
 * xs:string; v is xs:anySimpleType; Measured extends xs:decimal with @unit
 * and @q; U is a union). Each refusal is checked with its query, position
 * and reason; test_xpath_diff (typed_by_path_and_xsi_type) checks what is
 * accepted against libxml2. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"
#include "tests/lib/xpf_check.h"

static wm_exi_grammar *grammar(void) { return wm_test_xpf_data_grammar("xpath_types.xsd"); }

static void refused(const char *q, unsigned pos, const char *needle)
{
    wm_exi_grammar *g = grammar();
    wm_test_xpf_refused(g, "/r/b/x[. = 'abc']", NULL, 0, q, pos, needle);
    wm_exi_grammar_free(g);
}

static void accepted(const char *q)
{
    wm_exi_grammar *g = grammar();
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, &q, 1, NULL, 0, &f, &fe), WM_XPF_OK, "%s refused at %u: %s", q, fe.pos, fe.msg);
    wm_xpf_free(f);
    wm_exi_grammar_free(g);
}

Test(xpath_types, typed_by_the_declarations_the_path_reaches)
{
    /* one declaration each: typed by it alone (were refused as typed by all three x) */
    accepted("/r/b/x[. = 'abc']");
    accepted("/r/b/x[contains(., 'b')]");
    accepted("//b/x[starts-with(., '0')]");
    accepted("/r/a/x[. = 7]");
    accepted("//a/x[. > 7]");
    accepted("/r/c/x[. = 'true']");
    accepted("//a[@v > 1]");
    accepted("//b[@v = 'abc']");
    refused("/r/a/x[. = 'abc']", 8, "string test on the text, which the schema types as a number");
    refused("//c/x[. > 1]", 7, "the text is a boolean, which has no order");
    refused("//c[contains(@v, 'tr')]", 5, "string test on @v, which the schema types as a boolean");
    /* several declarations, all of them named: the reason counts them and says what to do */
    refused("//x[. = 'abc']", 5,
            "the text is a boolean on some of the 3 declarations this step names and a number on others (xs:boolean as declared, "
            "xs:int as declared): give a path to one type only");
    refused("/r/*/x[. = 7]", 8, "boolean on some of the 3 declarations this step names");
    refused("//*[@v > 1]", 5, "@v is a boolean on some of the");
    refused("//*[@v > 1]", 5, "(the type declared for c, the type declared for a): give a path to one type only");
}

/* Below a wildcard the product does not know the declarations: a step there
 * is typed by every declaration its name matches (x: xs:int and xs:string),
 * one that no wildcard reaches by its own. */
Test(xpath_types, below_a_wildcard_typed_by_name)
{
    wm_exi_grammar *g = wm_test_xpf_grammar(
        "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='r'><xs:complexType><xs:sequence>"
        "<xs:element name='a'><xs:complexType><xs:sequence><xs:element name='x' type='xs:int'/></xs:sequence></xs:complexType></xs:element>"
        "<xs:element name='b'><xs:complexType><xs:sequence><xs:element name='x' type='xs:string'/></xs:sequence></xs:complexType></xs:element>"
        "<xs:element name='w'><xs:complexType><xs:sequence><xs:any processContents='lax' maxOccurs='unbounded'/></xs:sequence>"
        "</xs:complexType></xs:element></xs:sequence></xs:complexType></xs:element></xs:schema>");
    wm_test_xpf_refused(g, "/r/b/x[. = 'abc']", NULL, 0, "/r/w/b/x[. = 'abc']", 10, "string test on the text, which the schema types as a number");
    wm_test_xpf_refused(g, "/r/b/x[. = 'abc']", NULL, 0, "//b/x[. = 'abc']", 7, "string test on the text, which the schema types as a number");
    wm_exi_grammar_free(g);
}

Test(xpath_types, typed_by_what_xsi_type_may_give)
{
    /* a derived type adds a typed attribute */
    refused("//base[@w = '05']", 8,
            "string test on @w, a number where xsi:type names Derived (derived from Base): EXI carries its value, not its lexical form");
    refused("//base[starts-with(@w, '0')]", 8, "a number where xsi:type names Derived (derived from Base)");
    refused("//m[@q = '05']", 5, "string test on @q, a number where xsi:type names Measured (derived from xs:decimal)");
    refused("//base[contains(@f, 't')]", 8, "string test on @f, a boolean where xsi:type names Derived (derived from Base)");
    refused("//base[@f > 0]", 8, "@f is a boolean, which has no order");
    accepted("//base[@w > 3]");          /* numbers compare as numbers: xs:int and xs:string alike */
    accepted("//base[@f = 'true']");     /* a boolean wherever it comes */
    accepted("//base[@id = 'a']");       /* the same string in Base, Derived and Named */
    accepted("//m[@unit = 'kg']");
    accepted("//m[. > 2]");
    /* xs:anySimpleType: xsi:type may name any simple type */
    refused("//v[. = '007']", 5, "the text is a boolean on some elements this step names and a number on others (xs:boolean by xsi:type");
    refused("//v[. = 1]", 5, "test its presence only");
    refused("//v[contains(., 'b')]", 5, "a boolean on some elements this step names");
    accepted("//v");
    /* a union: xsi:type may name a member, which the grammar does not record */
    refused("//u[. = '42']", 5, "by xsi:type if a member of union U");
    accepted("//u");
    /* what holds whatever the value stays */
    accepted("//v[contains(., '')]");
    accepted("//base[@w]");
}
