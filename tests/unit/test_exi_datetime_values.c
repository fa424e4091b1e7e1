/* Date/time values EXI 1.0 §7.1.8 carries are values of XML Schema 1.0's
 * date/time types, not any fields that fit the bits: 2019-02-29 (no leap
 * year), 23:59:60 (leap seconds are in no value space), day 31 of a 30-day
 * month, hour 24 other than 24:00:00 and year 0000 are none.
 * - The strict encoder accepts exactly what libxml2's XML Schema validator
 *   (xmlSchemaValidatePredefinedType) accepts, on chosen edge cases and on
 *   random field combinations, and names the value and the reason when it
 *   refuses; the non-strict encoder writes such text untyped, so it decodes
 *   as written.
 * - A stream that carries an impossible value (made by flipping the bits of
 *   a valid one that another encoder could write) is refused by the decoder
 *   and by the content filter, with the value, the reason and the value's
 *   first bit; before, it decoded to "2019-02-29T00:00:00Z". */
#include <criterion/criterion.h>
#include <libxml/xmlschemastypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

static const char *const types[] = { "dateTime", "date", "time", "gYearMonth", "gYear", "gMonthDay", "gDay" };
#define N_TYPES (sizeof types / sizeof *types)

static const char schema[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='r'><xs:complexType><xs:choice "
    "maxOccurs='unbounded'>"
    "<xs:element name='dateTime' type='xs:dateTime'/><xs:element name='date' type='xs:date'/>"
    "<xs:element name='time' type='xs:time'/><xs:element name='gYearMonth' type='xs:gYearMonth'/>"
    "<xs:element name='gYear' type='xs:gYear'/><xs:element name='gMonthDay' type='xs:gMonthDay'/>"
    "<xs:element name='gDay' type='xs:gDay'/>"
    "</xs:choice></xs:complexType></xs:element></xs:schema>";

static wm_exi_grammar *g;
static void setup(void)
{
    wm_exi_error e = { 0 };
    g = wm_test_exi_schema_text(schema, &e);
    cr_assert(g, "%s", e.msg);
    xmlSchemaInitTypes();
}
static void teardown(void) { wm_exi_grammar_free(g); }

/* libxml2's verdict on value as xs:type */
static bool libxml2_valid(const char *type, const char *value)
{
    xmlSchemaTypePtr t = xmlSchemaGetPredefinedType((const xmlChar *)type, (const xmlChar *)"http://www.w3.org/2001/XMLSchema");
    cr_assert(t, "libxml2 has no xs:%s", type);
    return xmlSchemaValidatePredefinedType(t, (const xmlChar *)value, NULL) == 0;
}

static wm_exi_status round_trip(bool strict, const char *type, const char *value, char *out, size_t cap, wm_exi_error *e)
{
    char xml[256];
    snprintf(xml, sizeof xml, "<r><%s>%s</%s></r>", type, value, type);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = strict;
    memset(e, 0, sizeof *e);
    out[0] = 0;
    wm_exi_status st = wm_test_exi_xml_round_trip(g, &o, xml, out, cap, e);
    out[strcspn(out, "\n")] = 0;
    return st;
}

/* Strict: accepted iff libxml2 accepts; a refusal names the value and says
 * why. Non-strict: every value reads back as written (typed or untyped). */
static void check_value(const char *type, const char *value, const char *reason)
{
    char out[512], want[256];
    wm_exi_error e;
    bool ref = libxml2_valid(type, value);
    wm_exi_status st = round_trip(true, type, value, out, sizeof out, &e);
    cr_assert_eq(st == WM_EXI_OK, ref, "xs:%s '%s': ours %s (%s), libxml2 %s", type, value, st ? "refused" : "accepted", e.msg,
                 ref ? "valid" : "invalid");
    if (!ref) {
        cr_assert_eq(st, WM_EXI_E_INPUT, "xs:%s '%s': %s", type, value, e.msg);
        cr_assert(strstr(e.msg, value) && strstr(e.msg, "is not a valid date/time value"), "xs:%s '%s': %s", type, value, e.msg);
        if (reason) cr_assert(strstr(e.msg, reason), "xs:%s '%s': '%s' lacks '%s'", type, value, e.msg, reason);
        snprintf(want, sizeof want, "<r><%s>%s</%s></r>", type, value, type);
        cr_assert_eq(round_trip(false, type, value, out, sizeof out, &e), WM_EXI_OK, "non-strict %s: %s", value, e.msg);
        cr_assert_str_eq(out, want, "non-strict writes '%s' untyped", value);
    }
}

Test(exi_datetime_values, edge_cases_agree_with_libxml2, .init = setup, .fini = teardown)
{
    static const struct { const char *type, *value, *reason; } cases[] = {
        { "dateTime", "2019-02-29T00:00:00Z", "not a leap year" }, { "dateTime", "2020-02-29T00:00:00Z", NULL },
        { "dateTime", "1900-02-29T12:00:00", "not a leap year" }, { "dateTime", "2000-02-29T12:00:00", NULL },
        { "dateTime", "2019-04-31T00:00:00", "April, which has 30 days" }, { "dateTime", "2019-06-31T00:00:00", "June" },
        { "dateTime", "2019-09-31T00:00:00", "September" }, { "dateTime", "2019-11-31T00:00:00", "November" },
        { "dateTime", "2019-12-31T00:00:00", NULL }, { "dateTime", "2019-02-30T00:00:00", "February, which has 28" },
        { "dateTime", "2016-12-31T23:59:60Z", "leap seconds" }, { "dateTime", "2016-12-31T23:59:59.999Z", NULL },
        { "dateTime", "2019-12-31T24:00:00", NULL }, { "dateTime", "2019-12-31T24:00:00.000", NULL },
        { "dateTime", "2019-12-31T24:00:01", "24:00:00, the end of the day" },
        { "dateTime", "2019-12-31T24:01:00", "end of the day" }, { "dateTime", "2019-12-31T24:00:00.5", "end of the day" },
        { "dateTime", "0000-01-01T00:00:00", "year 0000" }, { "dateTime", "-0004-02-29T00:00:00", NULL },
        { "dateTime", "-0001-02-29T00:00:00", "not a leap year" },
        { "date", "2019-02-29", "not a leap year" }, { "date", "2024-02-29", NULL }, { "date", "2019-04-31", "April" },
        { "date", "0000-06-01", "year 0000" },
        { "time", "23:59:60", "leap seconds" }, { "time", "24:00:00", NULL }, { "time", "24:00:00Z", NULL },
        { "time", "24:30:00", "end of the day" }, { "time", "23:59:59.5+01:00", NULL },
        { "gYearMonth", "0000-02", "year 0000" }, { "gYearMonth", "2019-02", NULL }, { "gYear", "0000", "year 0000" },
        { "gMonthDay", "--02-29", NULL }, { "gMonthDay", "--02-30", "February, which has 29" },
        { "gMonthDay", "--04-31", "April" }, { "gMonthDay", "--04-30", NULL }, { "gDay", "---31", NULL },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) check_value(cases[k].type, cases[k].value, cases[k].reason);
}

/* Random fields near the edges, every type: ~4,000 values against libxml2. */
Test(exi_datetime_values, random_fields_agree_with_libxml2, .init = setup, .fini = teardown)
{
    static const int years[] = { 0, 1, 4, 100, 400, 1900, 1999, 2000, 2019, 2020, 2100, 2400, -1, -4, -400 };
    srand(20261202);
    unsigned invalid = 0, n = 0;
    for (int i = 0; i < 4000; i++) {
        const char *type = types[(unsigned)rand() % N_TYPES];
        int y = years[(unsigned)rand() % (sizeof years / sizeof *years)];
        unsigned mo = 1 + (unsigned)rand() % 12, d = 26 + (unsigned)rand() % 6, hh = (unsigned)rand() % 3 ? 23 : 24;
        unsigned mi = (unsigned)rand() % 4 ? 0 : 59, ss = (unsigned)rand() % 3 ? 59 + (unsigned)rand() % 2 : 0;
        const char *frac = (unsigned)rand() % 4 ? "" : (unsigned)rand() % 2 ? ".0" : ".25";
        char ys[16], v[64];
        snprintf(ys, sizeof ys, "%s%04d", y < 0 ? "-" : "", y < 0 ? -y : y);
        if (!strcmp(type, "dateTime")) snprintf(v, sizeof v, "%s-%02u-%02uT%02u:%02u:%02u%sZ", ys, mo, d, hh, mi, ss, frac);
        else if (!strcmp(type, "date")) snprintf(v, sizeof v, "%s-%02u-%02u", ys, mo, d);
        else if (!strcmp(type, "time")) snprintf(v, sizeof v, "%02u:%02u:%02u%s", hh, mi, ss, frac);
        else if (!strcmp(type, "gYearMonth")) snprintf(v, sizeof v, "%s-%02u", ys, mo);
        else if (!strcmp(type, "gYear")) snprintf(v, sizeof v, "%s", ys);
        else if (!strcmp(type, "gMonthDay")) snprintf(v, sizeof v, "--%02u-%02u", mo, d);
        else snprintf(v, sizeof v, "---%02u", d);
        invalid += !libxml2_valid(type, v);
        n++;
        check_value(type, v, NULL);
    }
    cr_assert(invalid > n / 10 && invalid < n - n / 10, "both verdicts exercised: %u of %u invalid", invalid, n);
}

/* ------------------------------------------------------------------ decoder */

/* The strict stream of <r><type>value</type></r> (options in the header). */
static size_t enc(const char *type, const char *value, uint8_t *out)
{
    char xml[256];
    snprintf(xml, sizeof xml, "<r><%s>%s</%s></r>", type, value, type);
    wm_exi_error e;
    size_t n = wm_test_exi_encode(g, xml, true, out, 64, &e);
    cr_assert(n, "%s: %s", xml, e.msg);
    return n;
}

/* base with the bits in which a and b differ flipped: a and b differ in one
 * field only, so base gets that field changed the same way (the value no
 * encoder of ours writes any more, as another one could) */
static size_t flipped(const char *type, const char *base, const char *a, const char *b, uint8_t *out)
{
    uint8_t sa[64], sb[64];
    size_t n = enc(type, base, out), na = enc(type, a, sa), nb = enc(type, b, sb);
    cr_assert(n == na && n == nb, "%s/%s/%s: one length", base, a, b);
    for (size_t i = 0; i < n; i++) out[i] ^= sa[i] ^ sb[i];
    return n;
}

static void refused(const char *type, const uint8_t *s, size_t n, const char *value, const char *reason)
{
    wm_exi_error e = { 0 };
    for (int general = 0; general < 2; general++) {
        wm_exi_xml_sink sink;
        wm_exi_xml_sink_init(&sink);
        wm_exi_status st = wm_test_exi_decode_xml(g, s, n, NULL, general, &sink, NULL, NULL, &e);
        cr_assert_eq(st, WM_EXI_E_VALUE, "%s decoded (general %d): %.*s", value, general, (int)sink.len, sink.buf);
        cr_assert(strstr(e.msg, value) && strstr(e.msg, reason) && strstr(e.msg, "§7.1.8"), "'%s' lacks '%s' / '%s'", e.msg,
                  value, reason);
        /* the value's first bit: after the header and the event codes, before the stream's end */
        cr_assert(e.bit_pos > 8 && e.bit_pos < n * 8, "bit %llu", (unsigned long long)e.bit_pos);
        wm_exi_xml_sink_free(&sink);
    }
    /* the content filter decodes through the same value reader */
    char q[64];
    snprintf(q, sizeof q, "//%s", type);
    const char *qs[] = { q };
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_compile(g, qs, 1, NULL, 0, &f, &fe), WM_XPF_OK, "%s", fe.msg);
    wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
    wm_xpf_ctx_set_whole_stream(c, true);
    uint64_t m = 0;
    cr_assert_neq(wm_xpf_match(c, s, n, NULL, NULL, 0, &m, NULL, &e), WM_XPF_OK, "%s: the filter took it", value);
    cr_assert(strstr(e.msg, value) && strstr(e.msg, reason), "filter: '%s'", e.msg);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
}

Test(exi_datetime_values, impossible_values_in_a_stream_are_refused, .init = setup, .fini = teardown)
{
    uint8_t s[64];
    size_t n;
    /* the day's low bit: 26 -> 27; so 28 -> 29 in 2019 */
    n = flipped("dateTime", "2019-02-28T00:00:00Z", "2019-02-26T00:00:00Z", "2019-02-27T00:00:00Z", s);
    refused("dateTime", s, n, "2019-02-29T00:00:00", "not a leap year");
    n = flipped("date", "2019-04-30", "2019-04-20", "2019-04-21", s);
    refused("date", s, n, "2019-04-31", "April, which has 30 days");
    /* the seconds' bit 4: 56 -> 60 */
    n = flipped("dateTime", "2016-12-31T23:59:56Z", "2016-12-31T23:59:00Z", "2016-12-31T23:59:04Z", s);
    refused("dateTime", s, n, "2016-12-31T23:59:60", "leap seconds");
    n = flipped("time", "24:00:00", "10:00:00", "10:00:01", s);
    refused("time", s, n, "24:00:01", "end of the day");
    n = flipped("gMonthDay", "--02-28", "--03-28", "--03-30", s);
    refused("gMonthDay", s, n, "--02-30", "February, which has 29 days");
    /* controls: the same flips on values where they land on a real date */
    n = flipped("dateTime", "2020-02-28T00:00:00Z", "2019-02-26T00:00:00Z", "2019-02-27T00:00:00Z", s);
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_test_exi_decode_xml(g, s, n, NULL, false, &sink, NULL, NULL, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert(strstr(sink.buf, "<dateTime>2020-02-29T00:00:00Z</dateTime>"), "%.*s", (int)sink.len, sink.buf);
    wm_exi_xml_sink_free(&sink);
}
