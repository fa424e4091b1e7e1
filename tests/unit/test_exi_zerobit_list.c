/* Lists whose items take no bits (EXI 1.0 §7.1.11 a list is its length,
 * then the items; §7.2 an enumeration of one value and §7.1.9 an n-bit
 * integer with min = max have 0-bit codes). The decoder must read back what
 * the encoder writes for them in every mode, and still bound the item count
 * of a hostile stream: by the value text cap, since the stream length no
 * longer bounds it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

static const char *const one_enum_xsd =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
    "<xs:simpleType name='one'><xs:restriction base='xs:string'><xs:enumeration value='a'/></xs:restriction></xs:simpleType>"
    "<xs:element name='r'><xs:simpleType><xs:list itemType='one'/></xs:simpleType></xs:element></xs:schema>";

static const char *const five_xsd =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
    "<xs:simpleType name='five'><xs:restriction base='xs:int'><xs:minInclusive value='5'/>"
    "<xs:maxInclusive value='5'/></xs:restriction></xs:simpleType>"
    "<xs:element name='r'><xs:simpleType><xs:list itemType='five'/></xs:simpleType></xs:element></xs:schema>";

static wm_exi_status round_trip(const wm_exi_grammar *g, const char *xml, bool strict, bool aligned, char *out,
                                size_t cap, wm_exi_error *e)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = strict;
    o.alignment = aligned ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
    return wm_test_exi_xml_round_trip(g, &o, xml, out, cap, e);
}

Test(exi_zerobit_list, lists_of_zero_bit_items_decode_in_every_mode)
{
    static const struct { const char *xsd, *item; } cases[] = { { one_enum_xsd, "a" }, { five_xsd, "5" } };
    for (size_t c = 0; c < 2; c++) {
        wm_exi_error e = { 0 };
        wm_exi_grammar *g = wm_test_exi_schema_text(cases[c].xsd, &e);
        cr_assert(g, "%s", e.msg);
        for (unsigned count = 1; count <= 200; count = count * 3 + 1) {
            char xml[1024], want[1024];
            size_t p = (size_t)snprintf(xml, sizeof xml, "<r>"), q = 0;
            for (unsigned i = 0; i < count; i++) {
                p += (size_t)snprintf(xml + p, sizeof xml - p, "%s%s", i ? " " : "", cases[c].item);
                q += (size_t)snprintf(want + q, sizeof want - q, "%s%s", i ? " " : "", cases[c].item);
            }
            snprintf(xml + p, sizeof xml - p, "</r>");
            for (int mode = 0; mode < 4; mode++) {
                char got[2048];
                wm_exi_status st = round_trip(g, xml, mode & 1, mode & 2, got, sizeof got, &e);
                cr_assert_eq(st, WM_EXI_OK, "%u items of %s, strict %d aligned %d: %s (bit %llu)", count,
                             cases[c].item, mode & 1, !!(mode & 2), e.msg, (unsigned long long)e.bit_pos);
                char expect[2048];
                snprintf(expect, sizeof expect, "<r>%s</r>\n", want);
                cr_assert_str_eq(got, expect, "strict %d aligned %d: %s", mode & 1, !!(mode & 2), got);
            }
        }
        wm_exi_grammar_free(g);
    }
}

/* A hostile count of 0-bit items: 2^40, from a 9-byte stream. Refused at
 * once with the count's position (not after 2^40 iterations), by the value
 * text cap each item's separator counts against. */
Test(exi_zerobit_list, a_huge_count_of_zero_bit_items_is_refused_by_the_value_cap, .timeout = 10)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(one_enum_xsd, &e);
    cr_assert(g, "%s", e.msg);
    uint8_t buf[16];
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, &e);
    /* header: distinguishing bits 10, no options, version 1 (0 0000) */
    cr_assert_eq(wm_exi_write_raw(&w, 8, 0x80), WM_EXI_OK);
    cr_assert_eq(wm_exi_write_raw(&w, 1, 0), WM_EXI_OK);               /* SE(r): 1 bit, strict DocContent */
    cr_assert_eq(wm_exi_write_uint(&w, 1ull << 40), WM_EXI_OK);        /* list length */
    size_t n = wm_exi_writer_bytes(&w);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    for (int typed = 0; typed < 2; typed++) {
        wm_exi_limits lim = { .typed_only = typed };
        wm_exi_decoder d;
        wm_exi_decoder_init(&d, g, &lim);
        wm_exi_xml_sink s;
        wm_exi_xml_sink_init(&s);
        wm_exi_status st = wm_exi_decode(&d, buf, n, &o, wm_exi_xml_sink_event, &s, NULL, &e);
        wm_exi_xml_sink_free(&s);
        cr_assert_eq(st, WM_EXI_E_LENGTH, "typed %d: status %d: %s", typed, st, e.msg);
        cr_assert(strstr(e.msg, "1099511627776"), "the count is named: %s", e.msg);
        cr_assert_eq(e.bit_pos, 8 + 1 + 48, "position after the count: %llu", (unsigned long long)e.bit_pos);
        wm_exi_decoder_free(&d);
    }
    wm_exi_grammar_free(g);
}
