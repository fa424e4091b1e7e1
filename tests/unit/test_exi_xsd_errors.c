/* A schema document that does not parse says why and where (libxml2's
 * reason and line, codec/exi_xsd.h), and a missing file says so, instead of
 * one "cannot read or parse" for every case (review finding 19). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/exi_xsd.h"

Test(exi_xsd_errors, a_schema_that_is_not_well_formed_gives_libxml2s_reason_and_line)
{
    static const char xsd[] = "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n"
                              "<xs:element name='a' type='xs:int'>\n"
                              "</xs:schema>\n";
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, &e), WM_EXI_E_SCHEMA);
    cr_assert_null(g);
    /* the line libxml2 stopped at (the end: line 4) and its reason, whatever its wording */
    const char *at = strstr(e.msg, "not well-formed XML (line 4): ");
    cr_assert(at && strlen(at) > strlen("not well-formed XML (line 4): ") + 5, "%s", e.msg);
}

Test(exi_xsd_errors, a_missing_schema_file_says_so)
{
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile("/nonexistent/dir/s.xsd", &g, &e), WM_EXI_E_SCHEMA);
    cr_assert(strstr(e.msg, "/nonexistent/dir/s.xsd: cannot read the schema document: No such file or directory"), "%s", e.msg);
}

/* Schemas that break XML Schema 1.0 constraints are refused with libxml2's
 * reason instead of compiling into a grammar no other EXI implementation
 * derives (review 13 finding 3: maxOccurs wrapped to 0, "abc" read as 0,
 * min > max silently raised, facets read the same way). */
Test(exi_xsd_errors, an_invalid_schema_is_refused_with_libxml2s_reason)
{
    static const struct { const char *body, *why; } cases[] = {
        { "<xs:element name='r'><xs:complexType><xs:sequence><xs:element name='a' type='xs:int' maxOccurs='4294967296'/>"
          "</xs:sequence></xs:complexType></xs:element>", "'4294967296' is not valid" },
        { "<xs:element name='r'><xs:complexType><xs:sequence><xs:element name='a' type='xs:int' maxOccurs='abc'/>"
          "</xs:sequence></xs:complexType></xs:element>", "'abc' is not valid" },
        { "<xs:element name='r'><xs:complexType><xs:sequence><xs:element name='a' type='xs:int' minOccurs='2' maxOccurs='1'/>"
          "</xs:sequence></xs:complexType></xs:element>", "must not be greater than the value of 'maxOccurs'" },
        { "<xs:element name='r'><xs:simpleType><xs:restriction base='xs:int'><xs:minInclusive value='abc'/>"
          "<xs:maxInclusive value='5'/></xs:restriction></xs:simpleType></xs:element>", "'abc' is not a valid value" },
        { "<xs:element name='r'><xs:simpleType><xs:restriction base='xs:int'><xs:minInclusive value='10'/>"
          "<xs:maxInclusive value='5'/></xs:restriction></xs:simpleType></xs:element>", "greater than or equal to 'minInclusive'" },
        { "<xs:element name='r'><xs:simpleType><xs:restriction base='xs:int'><xs:enumeration value='x'/>"
          "</xs:restriction></xs:simpleType></xs:element>", "'x' is not a valid value" },
        { "<xs:element name='r'/><xs:element name='r'/>", "'r' does already exist" },
        { "<xs:complexType name='A'><xs:complexContent><xs:extension base='A'/></xs:complexContent></xs:complexType>"
          "<xs:element name='r' type='A'/>", "circular" },
        { "<xs:element name='r'><xs:simpleType><xs:restriction base='xs:string'><xs:pattern value='[a-'/>"
          "</xs:restriction></xs:simpleType></xs:element>", "not a valid regular expression" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char xsd[1024];
        snprintf(xsd, sizeof xsd, "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n%s\n</xs:schema>\n", cases[i].body);
        wm_exi_grammar *g = NULL;
        wm_exi_error e = { 0 };
        cr_assert_eq(wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, &e), WM_EXI_E_SCHEMA, "case %zu compiled: %s", i, cases[i].body);
        cr_assert_null(g);
        cr_assert(strstr(e.msg, "not a valid XML Schema: ") && strstr(e.msg, cases[i].why), "case %zu: %s", i, e.msg);
    }
}

/* Through a file, the reason names the file and the line of the offending
 * declaration, also when it sits in an included document. */
Test(exi_xsd_errors, an_invalid_included_schema_names_its_file_and_line)
{
    char dir[] = "/tmp/wm_xsdval_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char main_path[256], inc_path[256];
    snprintf(main_path, sizeof main_path, "%s/main.xsd", dir);
    snprintf(inc_path, sizeof inc_path, "%s/inc.xsd", dir);
    FILE *f = fopen(main_path, "w");
    cr_assert_not_null(f);
    fputs("<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n<xs:include schemaLocation='inc.xsd'/>\n"
          "<xs:element name='r' type='T'/>\n</xs:schema>\n", f);
    fclose(f);
    f = fopen(inc_path, "w");
    cr_assert_not_null(f);
    fputs("<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n\n<xs:complexType name='T'>\n"
          "<xs:sequence><xs:element name='a' maxOccurs='3x'/></xs:sequence>\n</xs:complexType>\n</xs:schema>\n", f);
    fclose(f);
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile(main_path, &g, &e), WM_EXI_E_SCHEMA);
    cr_assert_null(g);
    char want[300];
    snprintf(want, sizeof want, "%s:4: not a valid XML Schema: ", inc_path);
    cr_assert(strstr(e.msg, want) && strstr(e.msg, "'3x'"), "%s", e.msg);
    unlink(main_path);
    unlink(inc_path);
    rmdir(dir);
}

/* libxml2's schema parser substitutes entities when it reads included
 * documents: an external one would be fetched, so it is refused up front. */
Test(exi_xsd_errors, an_external_entity_in_a_schema_is_refused)
{
    static const char xsd[] = "<!DOCTYPE xs:schema [<!ENTITY x SYSTEM 'file:///etc/hostname'>]>\n"
                              "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n"
                              "<xs:element name='r'><xs:annotation><xs:documentation>&x;</xs:documentation></xs:annotation></xs:element>\n"
                              "</xs:schema>\n";
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, &e), WM_EXI_E_SCHEMA);
    cr_assert_null(g);
    cr_assert(strstr(e.msg, "external entity \"x\" refused"), "%s", e.msg);
}
