/* valuePartitionCapacity wrap-around (EXI 1.0 §7.3.3): when a new value
 * replaces string V at globalID, "the string V is removed from its
 * associated local value partition by rendering its compact identifier
 * permanently unassigned". The local partition keeps its size (its ids keep
 * their width) and a local hit on the unassigned id is an invalid stream:
 * refused with WM_EXI_E_STRING_INDEX at the value's position, on the general
 * path and on the strict bit-packed loop, never read as the replacing value.
 * The streams are written bit by bit here from the spec, not by our encoder;
 * the encoder must produce the valid ones byte for byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

typedef struct {
    wm_exi_status st;
    wm_exi_error e;
    char xml[256];
} decoded;

static decoded decode(const wm_exi_grammar *g, const uint8_t *buf, size_t n, const wm_exi_options *o, bool general)
{
    decoded r = { 0 };
    wm_exi_xml_sink s;
    wm_exi_xml_sink_init(&s);
    r.st = wm_test_exi_decode_xml(g, buf, n, o, general, &s, NULL, NULL, &r.e);
    snprintf(r.xml, sizeof r.xml, "%s", s.buf ? s.buf : "");
    wm_exi_xml_sink_free(&s);
    return r;
}

static size_t encode(const wm_exi_grammar *g, const char *xml, const wm_exi_options *o, uint8_t *out, size_t cap)
{
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, o, false, false, NULL);
    size_t n = 0;
    wm_exi_error e = { 0 };
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), out, cap, &n, &e);
    wm_exi_encoder_free(&enc);
    cr_assert_eq(st, WM_EXI_OK, "%s", e.msg);
    return n;
}

/* Schema-less, byte-aligned, valuePartitionCapacity 1, no options header:
 * <r><a>X</a><b>Y</b><a>X</a><a>X</a></r>. Hand-derived from §8.4 (built-in
 * grammars, learned productions) and §7.3: "Y" replaces "X" (gid 0), so X's
 * id 0 in a's local partition is unassigned; the third X is a literal again
 * (local id 1) and replaces Y; the fourth X is a local hit on id 1, written
 * in ceil(log2 2) = 1 bit (one byte here): the partition still counts the
 * unassigned id. */
static const uint8_t kat[] = {
    0x80,                   /* header: 10, no options, final version 1 */
    0x01, 0x02, 0x72,       /* SE(*): uri "" (hit 0+1), local name miss "r" */
    0x02, 0x01, 0x02, 0x61, /* SE(*) (2nd level 2), uri "", "a" */
    0x03, 0x03, 0x58,       /* CH (2nd level 3), literal "X" (L + 2 = 3) */
    0x00,                   /* EE */
    0x01, 0x00, 0x01, 0x02, 0x62, /* r ElementContent: SE(*) = 1.0, uri "", "b" */
    0x03, 0x03, 0x59, 0x00, /* CH, literal "Y" (replaces X), EE */
    0x02, 0x00, 0x01, 0x00, 0x01, /* SE(*) = 2.0 (SE(b) learned), uri "", local-name hit 1 ("a") */
    0x00, 0x03, 0x58, 0x00, /* CH (learned, 0), literal "X" again (local id 1; replaces Y), EE */
    0x00, 0x00, 0x00, 0x01, /* SE(a) learned, CH, local value hit: 0 then id 1 in 1 bit */
    0x00, 0x02,             /* EE a, EE r (SE(a) 0, SE(b) 1, EE 2) */
};
#define KAT_THIRD_X 27      /* byte of the third value's "03 58" */

static void schemaless_opts(wm_exi_options *o)
{
    wm_exi_options_default(o);
    o->alignment = WM_EXI_BYTE_ALIGNED;
    o->value_partition_capacity = 1;
}

Test(exi_value_eviction, encoder_writes_the_spec_bytes_and_decoder_reads_them)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    wm_exi_options o;
    schemaless_opts(&o);
    const char *xml = "<r><a>X</a><b>Y</b><a>X</a><a>X</a></r>";
    uint8_t out[128];
    size_t n = encode(g, xml, &o, out, sizeof out);
    cr_assert_eq(n, sizeof kat, "%zu bytes", n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(out[i], kat[i], "byte %zu: %02x, spec %02x", i, out[i], kat[i]);
    decoded r = decode(g, kat, sizeof kat, &o, false);
    cr_assert_eq(r.st, WM_EXI_OK, "%s", r.e.msg);
    cr_assert_str_eq(r.xml, "<r><a>X</a><b>Y</b><a>X</a><a>X</a></r>\n");
    wm_exi_grammar_free(g);
}

Test(exi_value_eviction, a_local_hit_on_a_replaced_value_is_refused_schemaless)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert(g);
    wm_exi_options o;
    schemaless_opts(&o);
    /* the third X as a local hit on a's id 0 (the replaced X): "00", and no
     * id bits since a's partition has 1 (unassigned) entry */
    uint8_t bad[sizeof kat];
    cr_assert(kat[KAT_THIRD_X] == 0x03 && kat[KAT_THIRD_X + 1] == 0x58);
    memcpy(bad, kat, KAT_THIRD_X);
    bad[KAT_THIRD_X] = 0x00;
    memcpy(bad + KAT_THIRD_X + 1, kat + KAT_THIRD_X + 2, sizeof kat - KAT_THIRD_X - 2);
    decoded r = decode(g, bad, sizeof kat - 1, &o, false);
    cr_assert_eq(r.st, WM_EXI_E_STRING_INDEX, "status %d (%s), decoded %s", r.st, r.e.msg, r.xml);
    cr_assert(strstr(r.e.msg, "unassigned") && strstr(r.e.msg, "7.3.3"), "%s", r.e.msg);
    cr_assert_eq(r.e.bit_pos, 8 * KAT_THIRD_X, "at the value: bit %llu", (unsigned long long)r.e.bit_pos);
    wm_exi_grammar_free(g);
}

/* Strict, bit-packed, capacity 1: <r><e a="X"/><e b="Y"/><e a="Z"/></r>,
 * attributes (what the strict loop reads itself). Grammar codes: DocContent
 * SE(r) 1 bit of {SE(r), SE(*)}; r: SE(e) 0 bits, then {SE(e), EE} 1 bit;
 * e: {AT(a), AT(b), EE} 2 bits, after AT(a) {AT(b), EE} 1 bit, after AT(b)
 * {EE} 0 bits. third_hit: the third value is a local hit on a's id 0 (the
 * replaced X): uint 0 and no id bits. Returns the bit position of that value. */
static uint64_t strict_stream(uint8_t *buf, size_t cap, size_t *n, bool third_hit)
{
    wm_exi_writer w;
    wm_exi_error e = { 0 };
    wm_exi_writer_init(&w, buf, cap, &e);
    wm_exi_write_raw(&w, 8, 0x80); /* header */
    wm_exi_write_raw(&w, 1, 0);    /* SE(r) */
    wm_exi_write_raw(&w, 2, 0);    /* AT(a) */
    wm_exi_write_uint(&w, 3); wm_exi_write_uint(&w, 'X');
    wm_exi_write_raw(&w, 1, 1);    /* EE */
    wm_exi_write_raw(&w, 1, 0);    /* SE(e) */
    wm_exi_write_raw(&w, 2, 1);    /* AT(b) */
    wm_exi_write_uint(&w, 3); wm_exi_write_uint(&w, 'Y');
    wm_exi_write_raw(&w, 1, 0);    /* SE(e) (e's EE: 0 bits) */
    wm_exi_write_raw(&w, 2, 0);    /* AT(a) */
    uint64_t at = w.pos;
    if (third_hit) wm_exi_write_uint(&w, 0);
    else { wm_exi_write_uint(&w, 3); wm_exi_write_uint(&w, 'Z'); }
    wm_exi_write_raw(&w, 1, 1);    /* EE e */
    wm_exi_write_raw(&w, 1, 1);    /* EE r */
    *n = wm_exi_writer_bytes(&w);
    return at;
}

Test(exi_value_eviction, a_local_hit_on_a_replaced_value_is_refused_strict_both_paths)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(
        "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='r'><xs:complexType><xs:sequence>"
        "<xs:element name='e' maxOccurs='unbounded'><xs:complexType><xs:attribute name='a' type='xs:string'/>"
        "<xs:attribute name='b' type='xs:string'/></xs:complexType></xs:element>"
        "</xs:sequence></xs:complexType></xs:element></xs:schema>", &e);
    cr_assert(g, "%s", e.msg);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    o.value_partition_capacity = 1;
    /* the hand-written valid stream is what the encoder writes */
    uint8_t good[32], enc[32], bad[32];
    size_t ng, ne, nb;
    strict_stream(good, sizeof good, &ng, false);
    ne = encode(g, "<r><e a='X'/><e b='Y'/><e a='Z'/></r>", &o, enc, sizeof enc);
    cr_assert(ne == ng && !memcmp(enc, good, ng), "hand-written stream differs from the encoder's");
    uint64_t at = strict_stream(bad, sizeof bad, &nb, true);
    for (int general = 0; general < 2; general++) {
        decoded r = decode(g, good, ng, &o, general);
        cr_assert_eq(r.st, WM_EXI_OK, "%s", r.e.msg);
        r = decode(g, bad, nb, &o, general);
        cr_assert_eq(r.st, WM_EXI_E_STRING_INDEX, "general %d: status %d (%s), decoded %s", general, r.st, r.e.msg,
                     r.xml);
        cr_assert(strstr(r.e.msg, "unassigned"), "%s", r.e.msg);
        cr_assert_eq(r.e.bit_pos, at, "general %d: bit %llu, value at %llu", general,
                     (unsigned long long)r.e.bit_pos, (unsigned long long)at);
    }
    wm_exi_grammar_free(g);
}
