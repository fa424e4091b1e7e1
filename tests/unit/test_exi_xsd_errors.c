/* A schema document that does not parse says why and where (libxml2's
 * reason and line, codec/exi_xsd.h), and a missing file says so, instead of
 * one "cannot read or parse" for every case (review finding 19). */
#include <criterion/criterion.h>
#include <string.h>

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
