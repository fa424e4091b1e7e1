/* EXI bit streams, header/options (§5, App. C) and datatypes (§7.1). Vectors
 * come from $WM_SHARED/data/exi (RFC 8428 SenML examples, W3C interop suite). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_header.h"
#include "codec/exi_stream.h"
#include "codec/exi_types.h"

static size_t slurp(const char *rel, uint8_t *buf, size_t cap)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

Test(exi_stream, bit_packed_fields_msb_first)
{
    const uint8_t b[] = { 0xa5, 0x0f };
    wm_exi_error e = { 0 };
    wm_exi_reader r;
    wm_exi_reader_init(&r, b, sizeof b, &e);
    uint32_t v;
    cr_assert_eq(wm_exi_read_nbit(&r, 3, &v), WM_EXI_OK); cr_assert_eq(v, 5);
    cr_assert_eq(wm_exi_read_nbit(&r, 9, &v), WM_EXI_OK); cr_assert_eq(v, 0x050);
    cr_assert_eq(wm_exi_read_nbit(&r, 4, &v), WM_EXI_OK); cr_assert_eq(v, 0xf);
    cr_assert_eq(wm_exi_read_nbit(&r, 1, &v), WM_EXI_E_TRUNCATED);
    cr_assert_eq(e.status, WM_EXI_E_TRUNCATED);
    cr_assert_eq(r.pos, 16, "a failed read leaves the position unchanged");
}

Test(exi_stream, byte_aligned_nbit_is_little_endian_bytes)
{
    const uint8_t b[] = { 0x34, 0x01, 0x01 };
    wm_exi_reader r;
    wm_exi_reader_init(&r, b, sizeof b, NULL);
    r.byte_aligned = true;
    uint32_t v;
    bool t;
    cr_assert_eq(wm_exi_read_nbit(&r, 9, &v), WM_EXI_OK);
    cr_assert_eq(v, 0x134);
    cr_assert_eq(wm_exi_read_bool(&r, &t), WM_EXI_OK);
    cr_assert(t);
}

Test(exi_stream, unsigned_integer_7bit_groups)
{
    uint8_t buf[16];
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, NULL);
    cr_assert_eq(wm_exi_write_uint(&w, 231), WM_EXI_OK);
    cr_assert_eq(wm_exi_writer_bytes(&w), 2);
    cr_assert_eq(buf[0], 0xe7); cr_assert_eq(buf[1], 0x01); /* §7.1.6: low group first */
    cr_assert_eq(wm_exi_write_raw(&w, 3, 5), WM_EXI_OK);
    cr_assert_eq(wm_exi_write_uint(&w, UINT64_MAX), WM_EXI_OK);
    wm_exi_reader r;
    wm_exi_reader_init(&r, buf, wm_exi_writer_bytes(&w), NULL);
    uint64_t u;
    uint32_t x;
    cr_assert_eq(wm_exi_read_uint(&r, &u), WM_EXI_OK); cr_assert_eq(u, 231);
    cr_assert_eq(wm_exi_read_raw(&r, 3, &x), WM_EXI_OK); cr_assert_eq(x, 5);
    cr_assert_eq(wm_exi_read_uint(&r, &u), WM_EXI_OK); cr_assert_eq(u, UINT64_MAX);
}

Test(exi_stream, oversized_unsigned_refused)
{
    uint8_t b[12];
    memset(b, 0xff, sizeof b);
    b[11] = 0x01;
    wm_exi_error e = { 0 };
    wm_exi_reader r;
    wm_exi_reader_init(&r, b, sizeof b, &e);
    uint64_t u;
    cr_assert_eq(wm_exi_read_uint(&r, &u), WM_EXI_E_UNSUPPORTED);
    cr_assert_eq(r.pos, 0);
    const uint8_t t[] = { 0x80, 0x80 };
    wm_exi_reader_init(&r, t, sizeof t, NULL);
    cr_assert_eq(wm_exi_read_uint(&r, &u), WM_EXI_E_TRUNCATED);
}

Test(exi_stream, writer_full_is_an_error)
{
    uint8_t buf[1];
    wm_exi_error e = { 0 };
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, &e);
    cr_assert_eq(wm_exi_write_raw(&w, 6, 1), WM_EXI_OK);
    cr_assert_eq(wm_exi_write_raw(&w, 3, 1), WM_EXI_E_LENGTH);
}

/* --------------------------------------------------------------- header */

static wm_exi_status header_of(const uint8_t *b, size_t n, wm_exi_header *h, wm_exi_options *o, wm_exi_reader *r,
                               wm_exi_error *e)
{
    memset(e, 0, sizeof *e);
    wm_exi_reader_init(r, b, n, e);
    return wm_exi_header_read(r, h, o);
}

Test(exi_header, senml_ex1_options_byte_aligned_strict_schema_id)
{
    uint8_t b[256];
    size_t n = slurp("senml/ex1.gen.exi", b, sizeof b);
    wm_exi_header h;
    wm_exi_options o;
    wm_exi_reader r;
    wm_exi_error e;
    wm_exi_options_default(&o);
    cr_assert_eq(header_of(b, n, &h, &o, &r, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert(h.options_present);
    cr_assert(!h.preview);
    cr_assert_eq(h.version, 1);
    cr_assert_eq(o.alignment, WM_EXI_BYTE_ALIGNED);
    cr_assert(o.strict);
    cr_assert(o.has_schema_id);
    cr_assert_str_eq(o.schema_id, "a");
    cr_assert_eq(r.pos, 48, "header + options + padding = 6 bytes, got %llu bits", (unsigned long long)r.pos);
}

Test(exi_header, senml_ex2_ex5_options_bit_packed_strict)
{
    const char *files[] = { "senml/ex2.gen.exi", "senml/ex5.gen.exi" };
    for (int i = 0; i < 2; i++) {
        uint8_t b[256];
        size_t n = slurp(files[i], b, sizeof b);
        wm_exi_header h;
        wm_exi_options o;
        wm_exi_reader r;
        wm_exi_error e;
        wm_exi_options_default(&o);
        cr_assert_eq(header_of(b, n, &h, &o, &r, &e), WM_EXI_OK, "%s", e.msg);
        cr_assert_eq(o.alignment, WM_EXI_BIT_PACKED);
        cr_assert(o.strict);
        cr_assert_str_eq(o.schema_id, "a");
        cr_assert_eq(r.pos, 31, "no padding when bit-packed");
    }
}

Test(exi_header, interop_preview_header_and_out_of_band_options)
{
    uint8_t b[256];
    size_t n = slurp("interop/schemaInformedGrammar/declaredProductions/sequence-01.byteAligned", b, sizeof b);
    wm_exi_header h;
    wm_exi_options o;
    wm_exi_reader r;
    wm_exi_error e;
    wm_exi_options_default(&o);
    cr_assert(wm_exi_options_from_suffix("byteAligned", &o));
    cr_assert_eq(header_of(b, n, &h, &o, &r, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert(!h.options_present);
    cr_assert(h.preview);
    cr_assert_eq(o.alignment, WM_EXI_BYTE_ALIGNED);
    cr_assert(r.byte_aligned);
    cr_assert_eq(r.pos, 8);
}

Test(exi_header, compression_and_precompression_refused)
{
    const char *sfx[] = { "compress", "preCompress" };
    for (int i = 0; i < 2; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "interop/schemaInformedGrammar/declaredProductions/sequence-01.%s", sfx[i]);
        uint8_t b[256];
        size_t n = slurp(rel, b, sizeof b);
        wm_exi_header h;
        wm_exi_options o;
        wm_exi_reader r;
        wm_exi_error e;
        wm_exi_options_default(&o);
        cr_assert(wm_exi_options_from_suffix(sfx[i], &o));
        cr_assert_eq(header_of(b, n, &h, &o, &r, &e), WM_EXI_E_UNSUPPORTED);
        cr_assert(strstr(e.msg, "compression"), "message names the reason: %s", e.msg);
    }
}

Test(exi_header, bad_headers)
{
    wm_exi_header h;
    wm_exi_options o;
    wm_exi_reader r;
    wm_exi_error e;
    wm_exi_options_default(&o);
    const uint8_t xml[] = "<?xml";
    cr_assert_eq(header_of(xml, 5, &h, &o, &r, &e), WM_EXI_E_HEADER);
    const uint8_t v2[] = { 0x81 };
    cr_assert_eq(header_of(v2, 1, &h, &o, &r, &e), WM_EXI_E_HEADER);
    const uint8_t dollar[] = "$EXX\x80";
    cr_assert_eq(header_of(dollar, 5, &h, &o, &r, &e), WM_EXI_E_HEADER);
    const uint8_t cut[] = { 0xa0 };
    cr_assert_eq(header_of(cut, 1, &h, &o, &r, &e), WM_EXI_E_TRUNCATED);
}

Test(exi_header, write_read_round_trip_all_options)
{
    wm_exi_options in, out;
    wm_exi_options_default(&in);
    in.alignment = WM_EXI_BYTE_ALIGNED;
    in.fragment = true;
    in.preserve_lexical_values = true;
    in.value_max_length = 16;
    in.value_partition_capacity = 100;
    in.block_size = 4096;
    in.has_schema_id = true;
    strcpy(in.schema_id, "urn:x:\xc3\xa9");
    in.strict = true;
    uint8_t buf[64];
    wm_exi_error e = { 0 };
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, &e);
    cr_assert_eq(wm_exi_header_write(&w, true, true, &in), WM_EXI_OK, "%s", e.msg);
    wm_exi_header h;
    wm_exi_reader r;
    wm_exi_options_default(&out);
    cr_assert_eq(header_of(buf, wm_exi_writer_bytes(&w), &h, &out, &r, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert(h.cookie);
    cr_assert_eq(memcmp(&in, &out, sizeof in), 0);
}

Test(exi_header, rewrites_senml_header_bytes)
{
    uint8_t b[256];
    slurp("senml/ex1.gen.exi", b, sizeof b);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.alignment = WM_EXI_BYTE_ALIGNED;
    o.strict = true;
    o.has_schema_id = true;
    strcpy(o.schema_id, "a");
    uint8_t out[16];
    wm_exi_writer w;
    wm_exi_writer_init(&w, out, sizeof out, NULL);
    cr_assert_eq(wm_exi_header_write(&w, false, true, &o), WM_EXI_OK);
    cr_assert_eq(wm_exi_writer_bytes(&w), 6);
    cr_assert_eq(memcmp(out, b, 6), 0);
}

/* --------------------------------------------------------------- datatypes */

static void round_trip(const wm_exi_datatype *dt, const char *in, const char *expect, bool aligned)
{
    uint8_t buf[256];
    char txt[256];
    wm_exi_error e = { 0 };
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, &e);
    w.byte_aligned = aligned;
    cr_assert_eq(wm_exi_value_write(&w, dt, dt, in, strlen(in)), WM_EXI_OK, "write %s: %s", in, e.msg);
    wm_exi_reader r;
    wm_exi_reader_init(&r, buf, wm_exi_writer_bytes(&w), &e);
    r.byte_aligned = aligned;
    wm_exi_text tx = { txt, 0, sizeof txt };
    wm_exi_value v;
    cr_assert_eq(wm_exi_value_read(&r, dt, dt, &tx, &v), WM_EXI_OK, "read %s: %s", in, e.msg);
    cr_assert_eq(r.pos, w.pos, "%s: read %llu bits, wrote %llu", in, (unsigned long long)r.pos, (unsigned long long)w.pos);
    cr_assert_eq(v.len, strlen(expect), "%s -> %.*s", in, (int)v.len, v.text);
    cr_assert_eq(memcmp(v.text, expect, v.len), 0, "%s -> %.*s (want %s)", in, (int)v.len, v.text, expect);
}

Test(exi_types, lexical_round_trips_both_alignments)
{
    wm_exi_datatype dt = { 0 };
    for (int al = 0; al < 2; al++) {
        dt.kind = WM_EXI_DT_FLOAT;
        round_trip(&dt, "23.1", "23.1", al);
        round_trip(&dt, "-0.05", "-0.05", al);
        round_trip(&dt, "1.5e3", "1500", al);
        round_trip(&dt, "-2.5e-40", "-25E-41", al);
        round_trip(&dt, "1e9", "1E9", al);
        round_trip(&dt, "INF", "INF", al);
        dt.kind = WM_EXI_DT_INTEGER;
        round_trip(&dt, " -42 ", "-42", al);
        round_trip(&dt, "9223372036854775807", "9223372036854775807", al);
        dt.kind = WM_EXI_DT_UNSIGNED;
        round_trip(&dt, "+300", "300", al);
        dt.kind = WM_EXI_DT_NBIT; dt.nbit_min = -128; dt.nbit_width = 8;
        round_trip(&dt, "33", "33", al);
        round_trip(&dt, "-128", "-128", al);
        dt.kind = WM_EXI_DT_DECIMAL;
        round_trip(&dt, "-12.0500", "-12.05", al);
        round_trip(&dt, "7", "7.0", al);
        dt.kind = WM_EXI_DT_BOOLEAN;
        round_trip(&dt, "1", "true", al);
        dt.pattern_bool = true;
        round_trip(&dt, "1", "1", al);
        dt.pattern_bool = false;
        dt.kind = WM_EXI_DT_BASE64;
        round_trip(&dt, "aGVsbG8=", "aGVsbG8=", al);
        dt.kind = WM_EXI_DT_HEX;
        round_trip(&dt, "0fA0", "0FA0", al);
        dt.kind = WM_EXI_DT_DATETIME;
        dt.variant = WM_EXI_DATETIME_V; round_trip(&dt, "2010-04-28T12:34:58.125+02:00", "2010-04-28T12:34:58.125+02:00", al);
        dt.variant = WM_EXI_DATE; round_trip(&dt, "2010-04-28", "2010-04-28", al);
        dt.variant = WM_EXI_TIME; round_trip(&dt, "12:34:58Z", "12:34:58Z", al);
        dt.variant = WM_EXI_GYEAR; round_trip(&dt, "-0044", "-0044", al);
        dt.variant = WM_EXI_GYEARMONTH; round_trip(&dt, "1999-12", "1999-12", al);
        dt.variant = WM_EXI_GMONTHDAY; round_trip(&dt, "--02-29", "--02-29", al);
        dt.variant = WM_EXI_GDAY; round_trip(&dt, "---31", "---31", al);
        dt.variant = WM_EXI_GMONTH; round_trip(&dt, "--12", "--12", al);
    }
}

Test(exi_types, enumeration_list_and_restricted_charset)
{
    static const char *const ev[] = { "red", "green", "blue" };
    static const uint32_t rcs[] = { '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' };
    wm_exi_datatype types[2] = { { .kind = WM_EXI_DT_LIST, .list_item = 1 }, { .kind = WM_EXI_DT_INTEGER } };
    round_trip(&types[0], " 1  -2 3", "1 -2 3", false);
    wm_exi_datatype en = { .kind = WM_EXI_DT_ENUM, .n_enum = 3, .enum_values = ev };
    round_trip(&en, "blue", "blue", false);
    wm_exi_datatype rc = { .kind = WM_EXI_DT_RCS_STRING, .n_rcs = 10, .rcs = rcs };
    round_trip(&rc, "12x4", "12x4", false);
    uint8_t buf[8];
    wm_exi_writer w;
    wm_exi_writer_init(&w, buf, sizeof buf, NULL);
    cr_assert_eq(wm_exi_value_write(&w, &rc, &rc, "19", 2), WM_EXI_OK);
    cr_assert_eq(w.pos, 8 + 4 + 4, "length octet + two 4-bit indexes (§7.1.10.1)");
    cr_assert(!wm_exi_value_valid(&en, &en, "pink", 4));
    cr_assert(!wm_exi_value_valid(&types[1], &types[1], "1.5", 3));
}

Test(exi_types, float_parse_keeps_decimal_digits)
{
    int64_t m;
    int32_t e;
    cr_assert(wm_exi_float_parse("1.276020076001e+09", 18, &m, &e));
    cr_assert_eq(m, 1276020076001LL); cr_assert_eq(e, -3);
    cr_assert(wm_exi_float_parse("20", 2, &m, &e));
    cr_assert_eq(m, 2); cr_assert_eq(e, 1);
    cr_assert(wm_exi_float_parse("120.1", 5, &m, &e));
    cr_assert_eq(m, 1201); cr_assert_eq(e, -1);
    cr_assert(!wm_exi_float_parse("1.2.3", 5, &m, &e));
    cr_assert(!wm_exi_float_parse("", 0, &m, &e));
}

Test(exi_types, bad_values_are_errors_not_crashes)
{
    const uint8_t month13[] = { 0x00, 0x00, 0x1a, 0x20, 0x00 }; /* year, month 13 */
    wm_exi_datatype dt = { .kind = WM_EXI_DT_DATETIME, .variant = WM_EXI_DATE };
    char txt[64];
    wm_exi_text tx = { txt, 0, sizeof txt };
    wm_exi_value v;
    wm_exi_error e = { 0 };
    wm_exi_reader r;
    wm_exi_reader_init(&r, month13, sizeof month13, &e);
    wm_exi_status st = wm_exi_value_read(&r, &dt, &dt, &tx, &v);
    cr_assert(st == WM_EXI_E_VALUE || st == WM_EXI_E_TRUNCATED, "%d %s", st, e.msg);
    static const char *const ev[] = { "a", "b", "c" };
    wm_exi_datatype en = { .kind = WM_EXI_DT_ENUM, .n_enum = 3, .enum_values = ev };
    const uint8_t three[] = { 0xc0 };
    wm_exi_reader_init(&r, three, 1, NULL);
    cr_assert_eq(wm_exi_value_read(&r, &en, &en, &tx, &v), WM_EXI_E_VALUE);
    char small[2];
    wm_exi_text stx = { small, 0, sizeof small };
    wm_exi_datatype in = { .kind = WM_EXI_DT_INTEGER };
    const uint8_t big[] = { 0x7f, 0x80, 0x00 };
    wm_exi_reader_init(&r, big, sizeof big, NULL);
    cr_assert_eq(wm_exi_value_read(&r, &in, &in, &stx, &v), WM_EXI_E_LENGTH);
}
