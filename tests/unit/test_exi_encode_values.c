/* What the encoder accepts as a typed value, and what the decoder reads
 * back (review 13 findings 8 and 9):
 * - an enumeration (§7.2) is a set of values of its base type: the
 *   document's value is matched by value, so 1 is the enumeration value 01
 *   of an xs:int, and the stream carries that value's index;
 * - a time zone is -14:00..+14:00 (XML Schema; §7.1.8 writes it as
 *   hours*64 + minutes): strict encoding refuses -14:01..-14:59 with the
 *   reason, non-strict writes such text untyped, and every stream the encoder
 *   writes decodes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "tests/lib/exi_fixture.h"

#define XS "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='r'><xs:complexType><xs:sequence>"
#define ENUM(name, base, values)                                                                                              \
    "<xs:element name='" name "' minOccurs='0' maxOccurs='unbounded'><xs:simpleType><xs:restriction base='xs:" base "'>" \
    values "</xs:restriction></xs:simpleType></xs:element>"
#define EV(v) "<xs:enumeration value='" v "'/>"

static const char schema[] =
    XS ENUM("i", "int", EV("01") EV("2") EV("-0"))
    ENUM("d", "decimal", EV("1.50") EV("-3"))
    ENUM("f", "double", EV("1e1") EV("INF") EV("0.25"))
    ENUM("t", "dateTime", EV("2020-01-01T00:00:00Z") EV("2020-01-01T00:00:00") EV("2020-06-01T12:00:00.5+02:00"))
    ENUM("x", "date", EV("2020-01-01"))
    ENUM("h", "hexBinary", EV("0aff"))
    ENUM("s", "string", EV("a b") EV("01"))
    "<xs:element name='z' type='xs:dateTime' minOccurs='0' maxOccurs='unbounded'/>"
    "<xs:element name='m' type='xs:time' minOccurs='0' maxOccurs='unbounded'/>"
    "</xs:sequence></xs:complexType></xs:element></xs:schema>";

static wm_exi_grammar *g;
static void setup(void)
{
    wm_exi_error e = { 0 };
    g = wm_test_exi_schema_text(schema, &e);
    cr_assert(g, "%s", e.msg);
}
static void teardown(void) { wm_exi_grammar_free(g); }

/* xml encoded (strict or not) then decoded: the decoded XML, or the reason. */
static wm_exi_status round_trip(bool strict, const char *xml, char *out, size_t cap, wm_exi_error *e)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = strict;
    memset(e, 0, sizeof *e);
    wm_exi_status st = wm_test_exi_xml_round_trip(g, &o, xml, out, cap, e);
    out[strcspn(out, "\n")] = 0; /* the XML writer ends the document with a newline */
    return st;
}

/* Each (document value, enumeration value it is) pair: strict encoding
 * writes the value's index, so the decoder gives the schema's lexical form. */
Test(exi_encode_values, enumerations_match_by_value_of_the_base_type, .init = setup, .fini = teardown)
{
    static const struct { const char *el, *doc, *want; } same[] = {
        { "i", "1", "01" }, { "i", "+01", "01" }, { "i", " 2 ", "2" }, { "i", "0", "-0" }, { "i", "-000", "-0" },
        { "d", "1.5", "1.50" }, { "d", "+01.500", "1.50" }, { "d", "-3.0", "-3" },
        { "f", "10", "1e1" }, { "f", "1.0E1", "1e1" }, { "f", "INF", "INF" }, { "f", "2.5e-1", "0.25" },
        { "t", "2020-01-01T01:00:00+01:00", "2020-01-01T00:00:00Z" }, { "t", "2019-12-31T23:00:00-01:00", "2020-01-01T00:00:00Z" },
        { "t", "2020-01-01T00:00:00.000", "2020-01-01T00:00:00" }, { "t", "2020-06-01T10:00:00.50Z", "2020-06-01T12:00:00.5+02:00" },
        { "t", "2019-12-31T24:00:00Z", "2020-01-01T00:00:00Z" },
        { "x", "2020-01-01", "2020-01-01" }, { "h", "0AFF", "0aff" }, { "s", " a b ", "a b" }, { "s", "01", "01" },
    };
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
        char xml[256], want[256], out[512];
        snprintf(xml, sizeof xml, "<r><%s>%s</%s></r>", same[k].el, same[k].doc, same[k].el);
        snprintf(want, sizeof want, "<r><%s>%s</%s></r>", same[k].el, same[k].want, same[k].el);
        wm_exi_error e;
        wm_exi_status st = round_trip(true, xml, out, sizeof out, &e);
        cr_assert_eq(st, WM_EXI_OK, "%s: status %d: %s", xml, st, e.msg);
        cr_assert_str_eq(out, want, "%s", xml);
    }
}

/* Values of the base type that are none of the enumeration's, and lexical
 * forms equal only as text of another type, are refused in strict mode. */
Test(exi_encode_values, other_values_are_not_enumeration_values, .init = setup, .fini = teardown)
{
    static const struct { const char *el, *doc; } other[] = {
        { "i", "3" }, { "i", "1.0" }, { "i", "2e0" }, { "d", "1.51" }, { "f", "-INF" }, { "f", "NaN" },
        { "t", "2020-01-01T00:00:00+00:01" }, /* one minute before 00:00Z */
        { "t", "2020-01-01T01:00:00" },       /* no time zone: not the zoned value */
        { "t", "2020-06-01T12:00:00.05+02:00" }, { "x", "2020-01-02" }, { "h", "0aff00" }, { "s", "1" }, { "s", "a  b" },
    };
    for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
        char xml[256], out[512];
        snprintf(xml, sizeof xml, "<r><%s>%s</%s></r>", other[k].el, other[k].doc, other[k].el);
        wm_exi_error e;
        cr_assert_eq(round_trip(true, xml, out, sizeof out, &e), WM_EXI_E_INPUT, "%s: %s", xml, out);
        cr_assert(strstr(e.msg, "is not a valid enumerated value"), "%s: %s", xml, e.msg);
    }
}

Test(exi_encode_values, time_zones_beyond_14_hours_are_refused_in_strict, .init = setup, .fini = teardown)
{
    static const char *const bad[] = { "<r><z>2020-01-01T00:00:00-14:01</z></r>", "<r><z>2020-01-01T00:00:00+14:59</z></r>",
                                       "<r><m>10:00:00-14:30</m></r>", "<r><z>2020-01-01T00:00:00+15:00</z></r>" };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char out[512];
        wm_exi_error e;
        cr_assert_eq(round_trip(true, bad[k], out, sizeof out, &e), WM_EXI_E_INPUT, "%s", bad[k]);
        cr_assert(strstr(e.msg, "is not a valid date/time value") && (k == 3 || strstr(e.msg, "time zone beyond -14:00..+14:00")),
                  "%s: %s", bad[k], e.msg);
        /* non-strict: the text is written untyped and reads back as written */
        cr_assert_eq(round_trip(false, bad[k], out, sizeof out, &e), WM_EXI_OK, "%s: %s", bad[k], e.msg);
        cr_assert_str_eq(out, bad[k]);
    }
}

Test(exi_encode_values, time_zones_of_14_hours_round_trip, .init = setup, .fini = teardown)
{
    static const char *const ok[] = { "<r><z>2020-01-01T00:00:00-14:00</z></r>", "<r><z>2020-01-01T00:00:00+14:00</z></r>",
                                      "<r><m>10:00:00+13:59</m></r>" };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        char out[512];
        wm_exi_error e;
        cr_assert_eq(round_trip(true, ok[k], out, sizeof out, &e), WM_EXI_OK, "%s: %s", ok[k], e.msg);
        cr_assert_str_eq(out, ok[k]);
    }
}
