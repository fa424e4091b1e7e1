/* Numbers at the codec's 64-bit limits (codec/exi_types.h).
 * - xs:double/xs:float lexical forms may have any number of digits; §7.1.4
 *   gives the mantissa 64 signed bits, so the encoder rounds (half up on the
 *   first dropped digit) instead of refusing a valid value. Expected
 *   mantissa/exponent pairs are worked out by hand below.
 * - xs:unsignedLong goes up to 18446744073709551615 (all of it encodes).
 * - Integers and decimal parts beyond 64 bits are valid XML Schema values the
 *   codec cannot hold: WM_EXI_E_UNSUPPORTED saying "unsupported", not "not
 *   valid", in strict mode; non-strict streams carry them as untyped strings. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_types.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

Test(exi_numbers, long_float_mantissas_round_to_64_bits)
{
    static const struct { const char *lex; int64_t m; int32_t e; } cases[] = {
        { "3.14159265358979323846", 3141592653589793238, -18 },  /* 19 digits kept, next (4) dropped */
        { "12345678901234567890", 1234567890123456789, 1 },      /* dropped integer digit: exponent + 1 */
        { "0.1000000000000000055511151231257827", 1000000000000000056, -19 }, /* ...55|5: rounds up */
        { "9999999999999999999999", 1, 22 },                       /* 18 nines + round = 10^18 -> 1E22 */
        { "-9223372036854775807", -9223372036854775807LL, 0 },     /* INT64_MAX fits whole */
        { "92233720368547758079", 922337203685477581, 2 },         /* INT64_MAX then 9: rounds up */
        { "92233720368547758080", 922337203685477581, 2 },         /* 8 after ...580 does not fit: rounds */
        { "0.00000000000000000000000012345678901234567891234e5", 1234567890123456789, -38 }, /* 24 leading zeros do not count */
        { "1.5e+09", 15, 8 },
        { "1E-3", 1, -3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t m = 0;
        int32_t e = 0;
        cr_assert(wm_exi_float_parse(cases[i].lex, strlen(cases[i].lex), &m, &e), "%s refused", cases[i].lex);
        cr_assert(m == cases[i].m && e == cases[i].e, "%s -> %lld E %d, want %lld E %d", cases[i].lex, (long long)m, e,
                  (long long)cases[i].m, cases[i].e);
    }
    static const char *const bad[] = { "", ".", "1..2", "1e", "e5", "1.2.3", "--1", "1e100001" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t m;
        int32_t e;
        cr_assert(!wm_exi_float_parse(bad[i], strlen(bad[i]), &m, &e), "\"%s\" accepted", bad[i]);
    }
}

/* encode xml with g (strict as asked, bit-packed), decode to XML in out */
static wm_exi_status round_trip(const wm_exi_grammar *g, const char *xml, bool strict, char *out, size_t cap,
                                wm_exi_error *e)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = strict;
    return wm_test_exi_xml_round_trip(g, &o, xml, out, cap, e);
}

/* the value of attribute v="..." in decoded XML */
static double attr_v(const char *xml)
{
    const char *p = strstr(xml, " v=\"");
    cr_assert(p, "%s", xml);
    return strtod(p + 4, NULL);
}

Test(exi_numbers, strict_senml_takes_doubles_with_more_than_19_digits)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    static const char *const vals[] = { "3.14159265358979323846", "12345678901234567890",
                                        "0.1000000000000000055511151231257827", "-2.718281828459045235360287471352" };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char xml[256], out[512];
        snprintf(xml, sizeof xml, "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='a' v='%s'/></sensml>", vals[i]);
        wm_exi_status st = round_trip(g, xml, true, out, sizeof out, &e);
        cr_assert_eq(st, WM_EXI_OK, "%s: %s", vals[i], e.msg);
        /* these four are far from a midpoint between doubles: same double */
        cr_assert(attr_v(out) == strtod(vals[i], NULL), "%s -> %s", vals[i], out);
    }
    wm_exi_grammar_free(g);
}

static const char *const ulong_xsd = "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
                                     "<xs:element name='x' type='xs:unsignedLong'/></xs:schema>";

Test(exi_numbers, unsigned_long_up_to_its_maximum)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(ulong_xsd, &e);
    cr_assert(g, "%s", e.msg);
    for (unsigned k = 0; k <= 10; k++) {
        char v[32], xml[64], out[128], want[128];
        snprintf(v, sizeof v, "%llu", (unsigned long long)(UINT64_MAX - k));
        snprintf(xml, sizeof xml, "<x>%s</x>", v);
        wm_exi_status st = round_trip(g, xml, true, out, sizeof out, &e);
        cr_assert_eq(st, WM_EXI_OK, "%s: %s", v, e.msg);
        snprintf(want, sizeof want, "<x>%s</x>\n", v);
        cr_assert_str_eq(out, want);
    }
    wm_exi_grammar_free(g);
}

Test(exi_numbers, integers_beyond_64_bits_are_unsupported_not_invalid)
{
    static const struct { const char *xsd, *xml, *what; } cases[] = {
        { "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='x' type='xs:unsignedLong'/></xs:schema>",
          "<x>18446744073709551616</x>", "integer" },
        { "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='x' type='xs:integer'/></xs:schema>",
          "<x>123456789012345678901234567890</x>", "integer" },
        { "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='x' type='xs:integer'/></xs:schema>",
          "<x>-9223372036854775809</x>", "integer" },
        { "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='x' type='xs:decimal'/></xs:schema>",
          "<x>123456789012345678901234.5</x>", "decimal" },
        { "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='x'><xs:complexType>"
          "<xs:attribute name='a' type='xs:long'/></xs:complexType></xs:element></xs:schema>",
          "<x a='9223372036854775808'/>", "integer" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wm_exi_error e = { 0 };
        wm_exi_grammar *g = wm_test_exi_schema_text(cases[i].xsd, &e);
        cr_assert(g, "%s", e.msg);
        char out[256];
        wm_exi_status st = round_trip(g, cases[i].xml, true, out, sizeof out, &e);
        cr_assert_eq(st, WM_EXI_E_UNSUPPORTED, "%s: status %d: %s", cases[i].xml, st, e.msg);
        cr_assert(strstr(e.msg, "unsupported") && strstr(e.msg, "beyond 64 bits") && strstr(e.msg, cases[i].what) &&
                      !strstr(e.msg, "not valid"),
                  "%s", e.msg);
        /* non-strict: an untyped string, the text intact */
        st = round_trip(g, cases[i].xml, false, out, sizeof out, &e);
        cr_assert_eq(st, WM_EXI_OK, "%s non-strict: %s", cases[i].xml, e.msg);
        const char *num = strpbrk(cases[i].xml, "-0123456789");
        char digits[64];
        snprintf(digits, sizeof digits, "%.*s", (int)strspn(num, "-0123456789."), num);
        cr_assert(strstr(out, digits), "%s -> %s", cases[i].xml, out);
        wm_exi_grammar_free(g);
    }
}
