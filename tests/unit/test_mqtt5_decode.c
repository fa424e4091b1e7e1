/* The strict MQTT v5 decoder, rule by rule, as MQTT 5.0 states them. Inputs
 * are built byte by byte with tests/lib/mqtt5_build.h (not with our encoder),
 * and each test names the section (and normative statement) it checks. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_vbi.h"
#include "tests/lib/mqtt5_build.h"

static const wm_mqtt5_config CLI = { .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = 0, .topic_alias_maximum = 10 };
static const wm_mqtt5_config SRV = { .from = WM_MQTT5_FROM_SERVER, .maximum_packet_size = 0, .topic_alias_maximum = 10 };

static wm_mqtt5_packet P;
static wm_mqtt5_result R;
static wm_tb B, PR, OUT;   /* body, properties, packet */

static void reset(void) { B.n = PR.n = OUT.n = 0; }
static uint8_t *IN;         /* the bytes last decoded; views point into it */
static wm_mqtt5_status dec(const wm_mqtt5_config *cfg, const uint8_t *p, size_t n)
{
    /* An exact-size heap copy, so ASan catches any read past the end. It
     * lives until the next call, since the packet's views point into it. */
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, p, n);
    free(IN);
    IN = copy;
    return wm_mqtt5_decode(cfg, copy, n, &P, &R);
}
/* Wraps B as a packet with first byte fb and decodes it. */
static wm_mqtt5_status pkt(const wm_mqtt5_config *cfg, uint8_t fb)
{
    wm_tb_packet(&OUT, fb, &B);
    return dec(cfg, OUT.b, OUT.n);
}
static bool eq(wm_mqtt5_bytes b, const char *s) { return b.len == strlen(s) && memcmp(b.p, s, b.len) == 0; }

#define EXPECT_OK(st) cr_assert_eq((st), WM_MQTT5_DONE, "expected DONE, got status %d err %s at %zu", \
                                   (st), wm_mqtt5_err_name(R.err), R.offset)
#define EXPECT_ERR(st, e, rc, off) do {                                                         \
        cr_assert_eq((st), WM_MQTT5_ERROR, "expected error %s, got status %d", wm_mqtt5_err_name(e), (st)); \
        cr_expect_eq(R.err, (e), "error %s, expected %s", wm_mqtt5_err_name(R.err), wm_mqtt5_err_name(e)); \
        cr_expect_eq(R.reason_code, (rc), "reason 0x%02x, expected 0x%02x", R.reason_code, (unsigned)(rc)); \
        cr_expect_eq(R.offset, (size_t)(off), "offset %zu, expected %zu", R.offset, (size_t)(off)); \
    } while (0)

/* PUBLISH body: topic, [packet id], properties (PR), payload. */
static void publish_body(const char *topic, uint16_t pid, const char *payload)
{
    wm_tb_str(&B, topic);
    if (pid) wm_tb_u16(&B, pid);
    wm_tb_props(&B, &PR);
    wm_tb_raw(&B, payload, strlen(payload));
}

/* ---------------------------------------------------------------- §1.5.5 VBI */

/* §1.5.5 Table 1-1: the boundary values and their encodings. */
Test(vbi, table_1_1_boundaries)
{
    static const struct { uint32_t v; uint8_t b[4]; size_t n; } t[] = {
        { 0, { 0x00 }, 1 }, { 127, { 0x7F }, 1 }, { 128, { 0x80, 0x01 }, 2 }, { 16383, { 0xFF, 0x7F }, 2 },
        { 16384, { 0x80, 0x80, 0x01 }, 3 }, { 2097151, { 0xFF, 0xFF, 0x7F }, 3 },
        { 2097152, { 0x80, 0x80, 0x80, 0x01 }, 4 }, { 268435455, { 0xFF, 0xFF, 0xFF, 0x7F }, 4 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint8_t out[4]; uint32_t v; size_t n;
        cr_expect_eq(wm_mqtt5_vbi_encode(t[i].v, out), t[i].n);
        cr_expect_eq(wm_mqtt5_vbi_size(t[i].v), t[i].n);
        cr_expect_arr_eq(out, t[i].b, t[i].n);
        cr_expect_eq(wm_mqtt5_vbi_decode(t[i].b, t[i].n, &v, &n), WM_MQTT5_VBI_OK);
        cr_expect_eq(v, t[i].v);
        cr_expect_eq(n, t[i].n);
        /* One byte short: need more, not an error. */
        cr_expect_eq(wm_mqtt5_vbi_decode(t[i].b, t[i].n - 1, &v, &n), WM_MQTT5_VBI_NEED_MORE);
    }
}

/* §1.5.5: at most four bytes. A fifth byte is Malformed; detected as soon as
 * the fourth byte's continuation bit is seen. */
Test(vbi, more_than_four_bytes_is_malformed)
{
    const uint8_t b[] = { 0xC0, 0xFF, 0xFF, 0xFF, 0xFF, 0x01 };
    EXPECT_ERR(dec(&CLI, b, sizeof b), WM_MQTT5_E_VBI_TOO_LONG, 0x81, 4);
    EXPECT_ERR(dec(&CLI, b, 5), WM_MQTT5_E_VBI_TOO_LONG, 0x81, 4);
}

/* §1.5.5: "the minimum number of bytes necessary". 0x80 0x00 encodes 0 in two
 * bytes: Malformed, in the Remaining Length ... */
Test(vbi, non_minimal_remaining_length_is_malformed)
{
    const uint8_t b[] = { 0xC0, 0x80, 0x00 };
    EXPECT_ERR(dec(&CLI, b, sizeof b), WM_MQTT5_E_VBI_NOT_MINIMAL, 0x81, 2);
    const uint8_t c[] = { 0xC0, 0xFF, 0x80, 0x80, 0x00 };
    EXPECT_ERR(dec(&CLI, c, sizeof c), WM_MQTT5_E_VBI_NOT_MINIMAL, 0x81, 4);
}

/* ... in a Property Length (§2.2.2.1) ... */
Test(vbi, non_minimal_property_length_is_malformed)
{
    reset();
    wm_tb_str(&B, "a");
    wm_tb_u8(&B, 0x80); wm_tb_u8(&B, 0x00);   /* Property Length 0, in two bytes */
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_VBI_NOT_MINIMAL, 0x81, 2 + 3 + 1);
}

/* ... and in a Subscription Identifier value (§3.8.2.1.2). */
Test(vbi, non_minimal_subscription_identifier_is_malformed)
{
    reset();
    wm_tb_u16(&B, 1);
    wm_tb_u8(&PR, 0x0B); wm_tb_u8(&PR, 0x81); wm_tb_u8(&PR, 0x00);
    wm_tb_props(&B, &PR);
    wm_tb_str(&B, "a"); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_VBI_NOT_MINIMAL, 0x81, 2 + 2 + 1 + 2);
}

/* ------------------------------------------------------ §2.1 fixed header */

/* §2.1.3: every type but PUBLISH has fixed flags (0010 for PUBREL, SUBSCRIBE,
 * UNSUBSCRIBE; 0000 otherwise); anything else is Malformed, known from the
 * first byte alone. */
Test(fixed_header, flags_per_type_2_1_3)
{
    static const uint8_t required[16] = { 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0 };
    for (unsigned type = 1; type < 16; type++) {
        if (type == WM_MQTT5_PUBLISH) continue;
        for (unsigned f = 0; f < 16; f++) {
            uint8_t b = (uint8_t)(type << 4 | f);
            const wm_mqtt5_config *cfg = wm_mqtt5_direction_allowed(type, WM_MQTT5_FROM_CLIENT) ? &CLI : &SRV;
            wm_mqtt5_status st = dec(cfg, &b, 1);
            if (f == required[type]) cr_expect_eq(st, WM_MQTT5_NEED_MORE, "type %u flags %u", type, f);
            else EXPECT_ERR(st, WM_MQTT5_E_FIXED_HEADER_FLAGS, 0x81, 0);
        }
    }
}

/* §2.1.2: type 0 is Reserved (Forbidden). */
Test(fixed_header, reserved_type_0)
{
    const uint8_t b[] = { 0x00, 0x00 };
    EXPECT_ERR(dec(&CLI, b, 1), WM_MQTT5_E_RESERVED_TYPE, 0x81, 0);
}

/* §3.3.1.2: "A PUBLISH Packet MUST NOT have both QoS bits set to 1
 * [MQTT-3.3.1-4]. If a Server or Client receives a PUBLISH packet which has
 * both QoS bits set to 1 it is a Malformed Packet." */
Test(fixed_header, publish_qos_3_is_malformed)
{
    const uint8_t b[] = { 0x36 };
    EXPECT_ERR(dec(&CLI, b, 1), WM_MQTT5_E_PUBLISH_QOS3, 0x81, 0);
    const uint8_t c[] = { 0x3F };
    EXPECT_ERR(dec(&SRV, c, 1), WM_MQTT5_E_PUBLISH_QOS3, 0x81, 0);
}

/* §3.3.1.1: "The DUP flag MUST be set to 0 for all QoS 0 messages [MQTT-3.3.1-2]." */
Test(fixed_header, publish_dup_with_qos_0)
{
    const uint8_t b[] = { 0x38 };
    EXPECT_ERR(dec(&CLI, b, 1), WM_MQTT5_E_PUBLISH_DUP_QOS0, 0x81, 0);
    const uint8_t c[] = { 0x3A };
    cr_expect_eq(dec(&CLI, c, 1), WM_MQTT5_NEED_MORE);
}

/* §2.1.2 direction column: CONNECT, SUBSCRIBE, UNSUBSCRIBE, PINGREQ only
 * client to server; CONNACK, SUBACK, UNSUBACK, PINGRESP only server to client. */
Test(fixed_header, direction_2_1_2)
{
    const uint8_t c2s[] = { 0x10, 0x82, 0xA2, 0xC0 }, s2c[] = { 0x20, 0x90, 0xB0, 0xD0 };
    for (int i = 0; i < 4; i++) {
        EXPECT_ERR(dec(&SRV, &c2s[i], 1), WM_MQTT5_E_WRONG_DIRECTION, 0x82, 0);
        EXPECT_ERR(dec(&CLI, &s2c[i], 1), WM_MQTT5_E_WRONG_DIRECTION, 0x82, 0);
        cr_expect_eq(dec(&CLI, &c2s[i], 1), WM_MQTT5_NEED_MORE);
        cr_expect_eq(dec(&SRV, &s2c[i], 1), WM_MQTT5_NEED_MORE);
    }
}

/* ------------------------------------------------------------- streaming */

/* A packet split at any byte: every prefix asks for more (exactly the missing
 * count once the fixed header is complete), never reads past its end (exact
 * heap copies under ASan), and the whole packet decodes. */
Test(stream, typical_publish_split_at_every_byte)
{
    uint8_t buf[256];
    size_t n = wm_tb_typical_publish(buf, sizeof buf);
    cr_assert(n >= 90 && n <= 110, "typical PUBLISH is %zu bytes", n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(dec(&CLI, buf, k), WM_MQTT5_NEED_MORE, "prefix %zu", k);
        if (k >= 2) {
            cr_expect_eq(R.length, n);
            cr_expect_eq(R.need, n - k, "prefix %zu: need %zu", k, R.need);
        } else {
            cr_expect_eq(R.need, 1);
        }
    }
    EXPECT_OK(dec(&CLI, buf, n));
    cr_expect_eq(R.length, n);
    cr_expect(eq(P.topic, "monaco/traffic/road42"));
    cr_expect_eq(P.packet_id, 0x1234);
    cr_expect_eq(P.props.user_property_count, 2);
}

/* Bytes after a packet belong to the next one: the decoder consumes only the
 * packet's own length (§2.1.4). */
Test(stream, back_to_back_packets)
{
    uint8_t buf[512];
    size_t n = wm_tb_typical_publish(buf, sizeof buf);
    memcpy(buf + n, buf, n);
    buf[2 * n] = 0xC0; buf[2 * n + 1] = 0x00;   /* PINGREQ */
    size_t off = 0, count = 0, total = 2 * n + 2;
    while (off < total) {
        EXPECT_OK(dec(&CLI, buf + off, total - off));
        off += R.length;
        count++;
    }
    cr_expect_eq(count, 3);
    cr_expect_eq(P.type, WM_MQTT5_PINGREQ);
}

/* §3.1.2.11.4 / §3.2.2.3.6 / 0x95: a packet over the receiver's Maximum
 * Packet Size is refused from its fixed header, before the body arrives. */
Test(stream, packet_too_large_from_fixed_header)
{
    uint8_t buf[256];
    size_t n = wm_tb_typical_publish(buf, sizeof buf);
    wm_mqtt5_config cfg = CLI;
    cfg.maximum_packet_size = (uint32_t)n - 1;
    EXPECT_ERR(dec(&cfg, buf, 2), WM_MQTT5_E_PACKET_TOO_LARGE, 0x95, 1);
    cfg.maximum_packet_size = (uint32_t)n;
    EXPECT_OK(dec(&cfg, buf, n));
    /* A Remaining Length of 268,435,455 is refused with 5 bytes in hand. */
    const uint8_t big[] = { 0x30, 0xFF, 0xFF, 0xFF, 0x7F };
    cfg.maximum_packet_size = 1 << 20;
    EXPECT_ERR(dec(&cfg, big, sizeof big), WM_MQTT5_E_PACKET_TOO_LARGE, 0x95, 1);
}

/* ------------------------------------------------------------- §3.3 PUBLISH */

Test(publish, typical_fields)
{
    uint8_t buf[256];
    size_t n = wm_tb_typical_publish(buf, sizeof buf);
    EXPECT_OK(dec(&CLI, buf, n));
    cr_expect_eq(P.type, WM_MQTT5_PUBLISH);
    cr_expect_eq(P.qos, 1);
    cr_expect_not(P.dup);
    cr_expect_not(P.retain);
    cr_expect_eq(P.length, n);
    cr_expect(wm_mqtt5_props_has(&P.props, WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL));
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL].u, 60);
    cr_expect_not(wm_mqtt5_props_has(&P.props, WM_MQTT5_PROP_TOPIC_ALIAS));
    /* §3.3.2.3.7: User Properties in wire order. */
    size_t pos = 0; wm_mqtt5_pair kv;
    cr_assert(wm_mqtt5_user_prop_next(&P.props, &pos, &kv));
    cr_expect(eq(kv.key, "peid")); cr_expect(eq(kv.value, "road/motorway/42"));
    cr_assert(wm_mqtt5_user_prop_next(&P.props, &pos, &kv));
    cr_expect(eq(kv.key, "schema")); cr_expect(eq(kv.value, "urn:wm:traffic:v1"));
    cr_expect_not(wm_mqtt5_user_prop_next(&P.props, &pos, &kv));
    cr_expect(eq(P.payload, "0123456789abcdef"));
    /* Zero copy: views point into the input. */
    cr_expect_eq(P.topic.p, IN + 4);
    cr_expect_eq(P.payload.p, IN + n - 16);
}

/* §3.3.2.2: the Packet Identifier is only present for QoS 1 and 2; QoS 0's
 * properties follow the topic directly. Flags split per §3.3.1. */
Test(publish, qos0_has_no_packet_identifier)
{
    reset();
    publish_body("a/b", 0, "xyz");
    EXPECT_OK(pkt(&CLI, 0x31));
    cr_expect_eq(P.qos, 0);
    cr_expect(P.retain);
    cr_expect(eq(P.topic, "a/b"));
    cr_expect(eq(P.payload, "xyz"));
    reset();
    publish_body("a/b", 9, "");
    EXPECT_OK(pkt(&CLI, 0x3C));
    cr_expect_eq(P.qos, 2); cr_expect(P.dup); cr_expect_eq(P.packet_id, 9); cr_expect_eq(P.payload.len, 0);
}

/* §2.2.1: "PUBLISH (in cases where QoS > 0) Control Packets MUST contain a
 * non-zero 16-bit Packet Identifier [MQTT-2.2.1-3]." */
Test(publish, packet_identifier_zero)
{
    reset();
    wm_tb_str(&B, "a"); wm_tb_u16(&B, 0); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0x32), WM_MQTT5_E_PACKET_ID_ZERO, 0x82, 5);
}

/* §3.3.2.1: "The Topic Name in the PUBLISH packet MUST NOT contain wildcard
 * characters [MQTT-3.3.2-2]." No code is named; it parses, so by §4.13 it is
 * a Protocol Error (0x82), as mosquitto also answers. */
Test(publish, wildcard_in_topic_name)
{
    reset(); publish_body("a/+", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME, 0x82, 6);
    reset(); publish_body("#", 0, "");
    EXPECT_ERR(pkt(&SRV, 0x30), WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME, 0x82, 4);
}

/* §1.5.4: U+0000 and UTF-16 surrogates (U+D800..U+DFFF) in a UTF-8 string are
 * Malformed, in the topic and in any other string field. */
Test(publish, nul_and_surrogates_in_strings)
{
    reset(); wm_tb_strn(&B, "a\0b", 3); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_UTF8_NUL, 0x81, 5);
    reset(); wm_tb_strn(&B, "a\xED\xA0\x80", 4); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_UTF8_SURROGATE, 0x81, 5);
    reset(); wm_tb_strn(&B, "\xC0\xAF", 2); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_UTF8_OVERLONG, 0x81, 4);
    /* In a User Property value (§3.3.2.3.7 is a UTF-8 String Pair, §1.5.7). */
    reset();
    wm_tb_u8(&PR, 0x26); wm_tb_str(&PR, "k"); wm_tb_strn(&PR, "v\xED\xBF\xBF", 4);
    publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_UTF8_SURROGATE, 0x81, 2 + 3 + 1 + 1 + 3 + 2 + 1);
    /* In a Content Type (§3.3.2.3.9). */
    reset();
    wm_tb_u8(&PR, 0x03); wm_tb_strn(&PR, "\0", 1);
    publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_UTF8_NUL, 0x81, 2 + 3 + 1 + 1 + 2);
}

/* §1.5.4: "A UTF-8 encoded sequence 0xEF 0xBB 0xBF is always interpreted as
 * U+FEFF ... MUST NOT be skipped over or stripped off [MQTT-1.5.4-3]." */
Test(publish, bom_is_kept)
{
    reset(); publish_body("\xEF\xBB\xBF" "a", 0, "");
    EXPECT_OK(pkt(&CLI, 0x30));
    cr_expect(eq(P.topic, "\xEF\xBB\xBF" "a"));
}

/* §3.3.2.3.4: "It is a Protocol Error if the Topic Name is zero length and
 * there is no Topic Alias." */
Test(publish, empty_topic_without_alias)
{
    reset(); publish_body("", 0, "x");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TOPIC_NAME_EMPTY_NO_ALIAS, 0x82, 2);
    reset();
    wm_tb_u8(&PR, 0x23); wm_tb_u16(&PR, 3);
    publish_body("", 0, "x");
    EXPECT_OK(pkt(&CLI, 0x30));
    cr_expect_eq(P.topic.len, 0);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_TOPIC_ALIAS].u, 3);
}

/* §3.3.2.3.4: "A Topic Alias of 0 is not permitted [MQTT-3.3.2-8]"; a value
 * above the receiver's Topic Alias Maximum is refused [MQTT-3.3.2-9/10]:
 * 0x94 Topic Alias invalid. A receiver that announced no maximum accepts none. */
Test(publish, topic_alias_zero_and_above_maximum)
{
    reset(); wm_tb_u8(&PR, 0x23); wm_tb_u16(&PR, 0); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TOPIC_ALIAS_ZERO, 0x94, 2 + 3 + 1);
    reset(); wm_tb_u8(&PR, 0x23); wm_tb_u16(&PR, 11); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&SRV, 0x30), WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE, 0x94, 2 + 3 + 1);
    reset(); wm_tb_u8(&PR, 0x23); wm_tb_u16(&PR, 10); publish_body("t", 0, "");
    EXPECT_OK(pkt(&SRV, 0x30));
    wm_mqtt5_config none = CLI;
    none.topic_alias_maximum = 0;
    reset(); wm_tb_u8(&PR, 0x23); wm_tb_u16(&PR, 1); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&none, 0x30), WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE, 0x94, 2 + 3 + 1);
}

/* §3.3.4: "A PUBLISH packet sent from a Client to a Server MUST NOT contain a
 * Subscription Identifier [MQTT-3.3.4-6]." From a server it may appear, and
 * repeat (one per matching subscription, §3.3.2.3.8). */
Test(publish, subscription_identifier_direction_and_repeat)
{
    reset();
    wm_tb_u8(&PR, 0x26); wm_tb_str(&PR, "k"); wm_tb_str(&PR, "v");
    wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 1);
    wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 300);
    publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_SUBSCRIPTION_ID_FROM_CLIENT, 0x82, 2 + 3 + 1 + 7);
    EXPECT_OK(pkt(&SRV, 0x30));
    cr_expect_eq(P.props.subscription_identifier_count, 2);
    size_t pos = 0; uint32_t id;
    cr_assert(wm_mqtt5_subid_next(&P.props, &pos, &id)); cr_expect_eq(id, 1);
    cr_assert(wm_mqtt5_subid_next(&P.props, &pos, &id)); cr_expect_eq(id, 300);
    cr_expect_not(wm_mqtt5_subid_next(&P.props, &pos, &id));
}

/* §3.3.2.3.8: "It is a Protocol Error if the Subscription Identifier has a value of 0." */
Test(publish, subscription_identifier_zero)
{
    reset(); wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 0); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&SRV, 0x30), WM_MQTT5_E_SUBSCRIPTION_ID_ZERO, 0x82, 2 + 3 + 1 + 1);
}

/* §3.3.2.3.2 ... §3.3.2.3.9: "It is a Protocol Error to include the <property>
 * more than once." Only User Property (and Subscription Identifier in
 * PUBLISH) may repeat (§2.2.2.2). */
Test(publish, non_repeatable_property_twice)
{
    static const uint8_t twice[][8] = {
        { 0x02, 0, 0, 0, 1 }, { 0x01, 1 }, { 0x23, 0, 1 }, { 0x03, 0, 1, 'x' }, { 0x08, 0, 1, 'r' }, { 0x09, 0, 1, 7 },
    };
    static const size_t len[] = { 5, 2, 3, 4, 4, 4 };
    for (size_t i = 0; i < 6; i++) {
        reset();
        wm_tb_raw(&PR, twice[i], len[i]);
        wm_tb_raw(&PR, twice[i], len[i]);
        publish_body("t", 0, "");
        EXPECT_ERR(pkt(&SRV, 0x30), WM_MQTT5_E_PROPERTY_DUPLICATE, 0x82, 2 + 3 + 1 + len[i]);
    }
}

/* §3.3.2.3: a property outside PUBLISH's list (e.g. Session Expiry Interval)
 * is a Protocol Error; an identifier §2.2.2.2 does not define is Malformed. */
Test(publish, property_not_allowed_or_unknown)
{
    reset(); wm_tb_u8(&PR, 0x11); wm_tb_u32(&PR, 5); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_PROPERTY_NOT_ALLOWED, 0x82, 6);
    reset(); wm_tb_u8(&PR, 0x7F); wm_tb_u8(&PR, 0); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_PROPERTY_UNKNOWN, 0x81, 6);
    reset(); wm_tb_u8(&PR, 0x00); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_PROPERTY_UNKNOWN, 0x81, 6);
}

/* §2.2.2.1 / §2.1.4: lengths that point past their enclosure are Malformed. */
Test(publish, lengths_past_the_packet)
{
    reset(); wm_tb_str(&B, "t"); wm_tb_vbi(&B, 9); wm_tb_u8(&B, 0x01);
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TRUNCATED, 0x81, 5);
    reset(); wm_tb_u16(&B, 5); wm_tb_raw(&B, "ab", 2);
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TRUNCATED, 0x81, 2);
    /* A string inside the property block that runs past the block's end even
     * though the packet goes on. */
    reset(); wm_tb_u8(&PR, 0x03); wm_tb_u16(&PR, 4); wm_tb_raw(&PR, "ab", 2);
    publish_body("t", 0, "payload");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_TRUNCATED, 0x81, 6);
}

/* §3.3.2.3.2: Payload Format Indicator is 0 or 1; other Byte properties with
 * two values likewise. */
Test(publish, payload_format_indicator_value)
{
    reset(); wm_tb_u8(&PR, 0x01); wm_tb_u8(&PR, 2); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_PROPERTY_VALUE, 0x82, 6);
    reset(); wm_tb_u8(&PR, 0x01); wm_tb_u8(&PR, 1); publish_body("t", 0, "");
    EXPECT_OK(pkt(&CLI, 0x30));
}

/* §3.3.2.3.5: the Response Topic is a Topic Name: wildcards are a Protocol Error. */
Test(publish, response_topic_with_wildcard)
{
    reset(); wm_tb_u8(&PR, 0x08); wm_tb_str(&PR, "reply/#"); publish_body("t", 0, "");
    EXPECT_ERR(pkt(&CLI, 0x30), WM_MQTT5_E_RESPONSE_TOPIC_INVALID, 0x82, 6);
    reset(); wm_tb_u8(&PR, 0x08); wm_tb_str(&PR, "reply/me"); wm_tb_u8(&PR, 0x09); wm_tb_strn(&PR, "\0\1", 2);
    publish_body("t", 0, "");
    EXPECT_OK(pkt(&CLI, 0x30));
    cr_expect(eq(P.props.v[WM_MQTT5_PROP_RESPONSE_TOPIC].s, "reply/me"));
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_CORRELATION_DATA].s.len, 2);
}

/* §3.3.2.3.2: "The receiver MAY validate that the Payload is of the format
 * indicated, and if it is not send a PUBACK, PUBREC, or DISCONNECT with
 * Reason Code of 0x99 (Payload format invalid)". Only when asked to. */
static void connect_head(uint8_t version, uint8_t flags);

Test(publish, payload_format_check_on_request)
{
    wm_mqtt5_config chk = CLI;
    chk.check_payload_format = true;
    reset(); wm_tb_u8(&PR, 0x01); wm_tb_u8(&PR, 1); publish_body("t", 0, "ok \xC3\xA9 \xFF");
    EXPECT_OK(pkt(&CLI, 0x30));
    EXPECT_ERR(pkt(&chk, 0x30), WM_MQTT5_E_PAYLOAD_FORMAT_INVALID, 0x99, 2 + 3 + 3 + 6);
    reset(); wm_tb_u8(&PR, 0x01); wm_tb_u8(&PR, 0); publish_body("t", 0, "\xFF");
    EXPECT_OK(pkt(&chk, 0x30));
    /* The Will Payload likewise, with the Will Properties' indicator (§3.1.3.2). */
    reset(); connect_head(5, 0x06); wm_tb props0 = { .n = 0 }; wm_tb_props(&B, &props0); wm_tb_str(&B, "c");
    wm_tb_u8(&PR, 0x01); wm_tb_u8(&PR, 1); wm_tb_props(&B, &PR); wm_tb_str(&B, "w"); wm_tb_strn(&B, "\xC0\x80", 2);
    EXPECT_OK(pkt(&CLI, 0x10));
    EXPECT_ERR(pkt(&chk, 0x10), WM_MQTT5_E_PAYLOAD_FORMAT_INVALID, 0x99, 2 + 10 + 1 + 3 + 3 + 3 + 2);
}

/* ------------------------------------------------------------- §3.1 CONNECT */

static void connect_head(uint8_t version, uint8_t flags)
{
    wm_tb_str(&B, "MQTT"); wm_tb_u8(&B, version); wm_tb_u8(&B, flags); wm_tb_u16(&B, 30);
}

Test(connect, full_packet_3_1)
{
    reset();
    connect_head(5, 0xEE);  /* username, password, will retain, will QoS 1, will, clean start */
    wm_tb_u8(&PR, 0x11); wm_tb_u32(&PR, 120);
    wm_tb_u8(&PR, 0x21); wm_tb_u16(&PR, 20);
    wm_tb_u8(&PR, 0x27); wm_tb_u32(&PR, 4096);
    wm_tb_u8(&PR, 0x22); wm_tb_u16(&PR, 8);
    wm_tb_u8(&PR, 0x15); wm_tb_str(&PR, "SCRAM-SHA-1");
    wm_tb_u8(&PR, 0x16); wm_tb_strn(&PR, "\x01\x02", 2);
    wm_tb_u8(&PR, 0x26); wm_tb_str(&PR, "k"); wm_tb_str(&PR, "v");
    wm_tb_props(&B, &PR);
    wm_tb_str(&B, "client-1");
    wm_tb WP = {0};
    wm_tb_u8(&WP, 0x18); wm_tb_u32(&WP, 5);
    wm_tb_u8(&WP, 0x08); wm_tb_str(&WP, "resp");
    wm_tb_props(&B, &WP);
    wm_tb_str(&B, "will/topic");
    wm_tb_strn(&B, "\xFF\x00", 2);
    wm_tb_str(&B, "user");
    wm_tb_strn(&B, "\x00pw", 3);
    EXPECT_OK(pkt(&CLI, 0x10));
    const wm_mqtt5_connect *k = &P.connect;
    cr_expect(eq(k->protocol_name, "MQTT"));
    cr_expect_eq(k->protocol_version, 5);
    cr_expect(k->clean_start); cr_expect(k->will_flag); cr_expect_eq(k->will_qos, 1); cr_expect(k->will_retain);
    cr_expect(k->username_flag); cr_expect(k->password_flag);
    cr_expect_eq(k->keep_alive, 30);
    cr_expect(eq(k->client_id, "client-1"));
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u, 120);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_RECEIVE_MAXIMUM].u, 20);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u, 4096);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM].u, 8);
    cr_expect(eq(P.props.v[WM_MQTT5_PROP_AUTHENTICATION_METHOD].s, "SCRAM-SHA-1"));
    cr_expect_eq(k->will_props.v[WM_MQTT5_PROP_WILL_DELAY_INTERVAL].u, 5);
    cr_expect(eq(k->will_topic, "will/topic"));
    cr_expect_eq(k->will_payload.len, 2);
    cr_expect(eq(k->username, "user"));
    cr_expect_eq(k->password.len, 3);
}

/* §3.1.2.1 / §3.1.2.2: protocol name "MQTT" and version 5, else 0x84
 * Unsupported Protocol Version. */
Test(connect, protocol_name_and_version)
{
    reset(); wm_tb_str(&B, "MQIsdp"); wm_tb_u8(&B, 5); wm_tb_u8(&B, 2); wm_tb_u16(&B, 0); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_PROTOCOL_NAME, 0x84, 2);
    reset(); connect_head(4, 2); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_PROTOCOL_VERSION, 0x84, 8);
}

/* §3.1.2.3: "The Server MUST validate that the reserved flag in the CONNECT
 * packet is set to 0 [MQTT-3.1.2-3]" (else Malformed). */
Test(connect, reserved_flag)
{
    reset(); connect_head(5, 0x03); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_CONNECT_RESERVED_FLAG, 0x81, 9);
}

/* §3.1.2.6 / §3.1.2.7: Will QoS 3 is Malformed; Will QoS and Will Retain must
 * be 0 without the Will Flag [MQTT-3.1.2-11, MQTT-3.1.2-13]. */
Test(connect, will_flags)
{
    reset(); connect_head(5, 0x1C); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_WILL_QOS3, 0x81, 9);
    reset(); connect_head(5, 0x08); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_WILL_FLAGS, 0x81, 9);
    reset(); connect_head(5, 0x20); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_WILL_FLAGS, 0x81, 9);
}

/* §3.1.2.11.10: "It is a Protocol Error to include Authentication Data if
 * there is no Authentication Method." */
Test(connect, authentication_data_without_method)
{
    reset(); connect_head(5, 2); wm_tb_u8(&PR, 0x16); wm_tb_strn(&PR, "x", 1); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_AUTH_DATA_NO_METHOD, 0x82, 13);
}

/* §3.1.2.11.3: Receive Maximum 0, §3.1.2.11.4: Maximum Packet Size 0,
 * §3.1.2.11.6/7: Request Response/Problem Information other than 0/1 are
 * Protocol Errors. */
Test(connect, property_values)
{
    static const uint8_t bad[][5] = { { 0x21, 0, 0 }, { 0x27, 0, 0, 0, 0 }, { 0x19, 2 }, { 0x17, 7 } };
    static const size_t len[] = { 3, 5, 2, 2 };
    for (int i = 0; i < 4; i++) {
        reset(); connect_head(5, 2); wm_tb_raw(&PR, bad[i], len[i]); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
        EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_PROPERTY_VALUE, 0x82, 13);
    }
}

/* §3.1.3.2: Will Properties have their own list; Topic Alias is not in it. */
Test(connect, will_property_not_allowed)
{
    reset(); connect_head(5, 0x06); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    wm_tb WP = {0}; wm_tb_u8(&WP, 0x23); wm_tb_u16(&WP, 1); wm_tb_props(&B, &WP);
    wm_tb_str(&B, "w"); wm_tb_strn(&B, "", 0);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_PROPERTY_NOT_ALLOWED, 0x82, 2 + 10 + 1 + 3 + 1);
}

/* §3.1.3.3: the Will Topic is a Topic Name (no wildcards, §4.7). */
Test(connect, will_topic_wildcard)
{
    reset(); connect_head(5, 0x06); wm_tb_props(&B, &PR); wm_tb_str(&B, "c");
    wm_tb_props(&B, &PR); wm_tb_str(&B, "w/+"); wm_tb_strn(&B, "", 0);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME, 0x82, 2 + 10 + 1 + 3 + 1 + 2 + 2);
}

/* §3.1.3.1: an empty Client Identifier is well formed; a NUL inside it is not. */
Test(connect, client_identifier)
{
    reset(); connect_head(5, 2); wm_tb_props(&B, &PR); wm_tb_str(&B, "");
    EXPECT_OK(pkt(&CLI, 0x10));
    cr_expect_eq(P.connect.client_id.len, 0);
    reset(); connect_head(5, 2); wm_tb_props(&B, &PR); wm_tb_strn(&B, "a\0", 2);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_UTF8_NUL, 0x81, 16);
}

/* §2.1.4: bytes after the last field the flags announce are Malformed;
 * §3.1.2.9: v5 allows a Password without a User Name. */
Test(connect, trailing_bytes_and_password_alone)
{
    reset(); connect_head(5, 2); wm_tb_props(&B, &PR); wm_tb_str(&B, "c"); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_TRAILING_BYTES, 0x81, 16);
    reset(); connect_head(5, 0x42); wm_tb_props(&B, &PR); wm_tb_str(&B, "c"); wm_tb_strn(&B, "pw", 2);
    EXPECT_OK(pkt(&CLI, 0x10));
    cr_expect(P.connect.password_flag); cr_expect_not(P.connect.username_flag);
}

/* ------------------------------------------------------------- §3.2 CONNACK */

Test(connack, fields_3_2)
{
    reset();
    wm_tb_u8(&B, 1); wm_tb_u8(&B, 0);
    wm_tb_u8(&PR, 0x12); wm_tb_str(&PR, "auto-1");
    wm_tb_u8(&PR, 0x22); wm_tb_u16(&PR, 5);
    wm_tb_u8(&PR, 0x24); wm_tb_u8(&PR, 1);
    wm_tb_u8(&PR, 0x25); wm_tb_u8(&PR, 0);
    wm_tb_u8(&PR, 0x13); wm_tb_u16(&PR, 45);
    wm_tb_u8(&PR, 0x29); wm_tb_u8(&PR, 1);
    wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&SRV, 0x20));
    cr_expect(P.session_present);
    cr_expect_eq(P.reason_code, 0);
    cr_expect(eq(P.props.v[WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER].s, "auto-1"));
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_SERVER_KEEP_ALIVE].u, 45);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_MAXIMUM_QOS].u, 1);
}

/* §3.2.2.1: reserved bits 7-1 of the acknowledge flags (Malformed);
 * MQTT-3.2.2-6: Session Present must be 0 with a non-zero Reason Code;
 * §3.2.2.2: only the listed reason codes; §3.2.2.3.4: Maximum QoS is 0 or 1. */
Test(connack, rules)
{
    reset(); wm_tb_u8(&B, 2); wm_tb_u8(&B, 0); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0x20), WM_MQTT5_E_CONNACK_RESERVED_FLAGS, 0x81, 2);
    reset(); wm_tb_u8(&B, 1); wm_tb_u8(&B, 0x87); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0x20), WM_MQTT5_E_SESSION_PRESENT_ON_ERROR, 0x82, 2);
    reset(); wm_tb_u8(&B, 0); wm_tb_u8(&B, 0x10); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0x20), WM_MQTT5_E_REASON_CODE, 0x82, 3);
    reset(); wm_tb_u8(&B, 0); wm_tb_u8(&B, 0); wm_tb_u8(&PR, 0x24); wm_tb_u8(&PR, 2); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0x20), WM_MQTT5_E_PROPERTY_VALUE, 0x82, 5);
    reset(); wm_tb_u8(&B, 0); wm_tb_u8(&B, 0x9C); wm_tb_u8(&PR, 0x1C); wm_tb_str(&PR, "other:1883"); wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&SRV, 0x20));
    cr_expect_eq(P.reason_code, 0x9C);
}

/* --------------------------------------------- §3.4 - §3.7 PUBACK..PUBCOMP */

/* §3.4.2.1: "The Reason Code and Property Length can be omitted if the Reason
 * Code is 0x00 and there are no Properties" (Remaining Length 2); with
 * Remaining Length 3 there is no Property Length (§3.4.2.2.1). */
Test(puback, short_forms)
{
    static const uint8_t types[] = { 0x40, 0x50, 0x62, 0x70 };
    for (int i = 0; i < 4; i++) {
        reset(); wm_tb_u16(&B, 77);
        EXPECT_OK(pkt(&CLI, types[i]));
        cr_expect_eq(P.packet_id, 77); cr_expect_eq(P.reason_code, 0); cr_expect_eq(P.props.present, 0);
        uint8_t rc = i < 2 ? 0x10 : 0x92;
        wm_tb_u8(&B, rc);
        EXPECT_OK(pkt(&SRV, types[i]));
        cr_expect_eq(P.reason_code, rc);
        wm_tb_u8(&PR, 0x1F); wm_tb_str(&PR, "why"); wm_tb_props(&B, &PR);
        EXPECT_OK(pkt(&SRV, types[i]));
        cr_expect(eq(P.props.v[WM_MQTT5_PROP_REASON_STRING].s, "why"));
    }
}

/* §3.4.2.1 vs §3.6.2.1: each packet has its own reason code list. */
Test(puback, reason_code_sets)
{
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&B, 0x92);
    EXPECT_ERR(pkt(&CLI, 0x40), WM_MQTT5_E_REASON_CODE, 0x82, 4);
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&B, 0x10);
    EXPECT_ERR(pkt(&CLI, 0x62), WM_MQTT5_E_REASON_CODE, 0x82, 4);
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&B, 0x99);
    EXPECT_OK(pkt(&CLI, 0x50));
}

/* §2.2.1 (MQTT-2.2.1-3), §3.6.1: PUBREL flags 0010; packet id non-zero. */
Test(puback, pubrel_flags_and_packet_id)
{
    reset(); wm_tb_u16(&B, 1);
    EXPECT_ERR(pkt(&CLI, 0x60), WM_MQTT5_E_FIXED_HEADER_FLAGS, 0x81, 0);
    reset(); wm_tb_u16(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x40), WM_MQTT5_E_PACKET_ID_ZERO, 0x82, 2);
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&B, 0); wm_tb_props(&B, &PR); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x70), WM_MQTT5_E_TRAILING_BYTES, 0x81, 6);
}

/* ---------------------------------------------------------- §3.8 SUBSCRIBE */

Test(subscribe, filters_and_options_3_8_3)
{
    reset();
    wm_tb_u16(&B, 10);
    wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 268435455);
    wm_tb_u8(&PR, 0x26); wm_tb_str(&PR, "nbhd"); wm_tb_str(&PR, "S1");
    wm_tb_props(&B, &PR);
    wm_tb_str(&B, "sport/+/score"); wm_tb_u8(&B, 0x2E);   /* RH 2, RAP, NL, QoS 2 */
    wm_tb_str(&B, "$share/g/a/#"); wm_tb_u8(&B, 0x01);
    wm_tb_str(&B, "#"); wm_tb_u8(&B, 0x10);
    EXPECT_OK(pkt(&CLI, 0x82));
    cr_expect_eq(P.packet_id, 10);
    cr_expect_eq(P.count, 3);
    cr_expect_eq(P.props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u, 268435455);
    size_t pos = 0; wm_mqtt5_subscription s;
    cr_assert(wm_mqtt5_subscription_next(&P, &pos, &s));
    cr_expect(eq(s.filter, "sport/+/score"));
    cr_expect_eq(s.qos, 2); cr_expect(s.no_local); cr_expect(s.retain_as_published); cr_expect_eq(s.retain_handling, 2);
    cr_assert(wm_mqtt5_subscription_next(&P, &pos, &s));
    cr_expect(eq(s.filter, "$share/g/a/#")); cr_expect_eq(s.qos, 1); cr_expect_not(s.no_local);
    cr_assert(wm_mqtt5_subscription_next(&P, &pos, &s));
    cr_expect(eq(s.filter, "#")); cr_expect_eq(s.retain_handling, 1);
    cr_expect_not(wm_mqtt5_subscription_next(&P, &pos, &s));
}

static wm_mqtt5_status subscribe_one(const char *filter, uint8_t opts)
{
    reset(); wm_tb_u16(&B, 1); wm_tb_props(&B, &PR); wm_tb_str(&B, filter); wm_tb_u8(&B, opts);
    return pkt(&CLI, 0x82);
}

/* §3.8.3.1 Subscription Options: reserved bits 6-7 Malformed [MQTT-3.8.3-5];
 * Maximum QoS 3 and Retain Handling 3 Protocol Errors; No Local on a shared
 * subscription a Protocol Error [MQTT-3.8.3-4]. */
Test(subscribe, options_rules)
{
    EXPECT_ERR(subscribe_one("a", 0x40), WM_MQTT5_E_SUBOPT_RESERVED, 0x81, 8);
    EXPECT_ERR(subscribe_one("a", 0x80), WM_MQTT5_E_SUBOPT_RESERVED, 0x81, 8);
    EXPECT_ERR(subscribe_one("a", 0x03), WM_MQTT5_E_SUBOPT_QOS3, 0x82, 8);
    EXPECT_ERR(subscribe_one("a", 0x30), WM_MQTT5_E_SUBOPT_RETAIN_HANDLING3, 0x82, 8);
    EXPECT_ERR(subscribe_one("$share/g/a", 0x04), WM_MQTT5_E_SHARED_NO_LOCAL, 0x82, 17);
    EXPECT_OK(subscribe_one("a", 0x04));
}

/* §4.7.1, §4.7.3, §4.8.2: topic filter rules inside SUBSCRIBE, with the
 * offset of the offending character. */
Test(subscribe, topic_filter_rules)
{
    EXPECT_ERR(subscribe_one("sport/tennis#", 0), WM_MQTT5_E_TOPIC_HASH_NOT_ALONE, 0x81, 7 + 12);
    EXPECT_ERR(subscribe_one("sport/#/x", 0), WM_MQTT5_E_TOPIC_HASH_NOT_LAST, 0x81, 7 + 6);
    EXPECT_ERR(subscribe_one("sport+", 0), WM_MQTT5_E_TOPIC_PLUS_NOT_ALONE, 0x81, 7 + 5);
    EXPECT_ERR(subscribe_one("$share//x", 0), WM_MQTT5_E_SHARE_EMPTY_NAME, 0x81, 7 + 7);
    EXPECT_ERR(subscribe_one("$share/g", 0), WM_MQTT5_E_SHARE_NO_FILTER, 0x81, 7 + 8);
    EXPECT_ERR(subscribe_one("$share/g+/x", 0), WM_MQTT5_E_SHARE_BAD_NAME, 0x81, 7 + 8);
    EXPECT_ERR(subscribe_one("", 0), WM_MQTT5_E_TOPIC_EMPTY, 0x81, 7);
    EXPECT_OK(subscribe_one("+/+/#", 0));
}

/* MQTT-3.8.3-2: at least one Topic Filter. §3.8.2.1.2: Subscription
 * Identifier 0 is a Protocol Error, and it may appear only once in SUBSCRIBE. */
Test(subscribe, empty_and_subscription_identifier)
{
    reset(); wm_tb_u16(&B, 1); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_NO_TOPIC_FILTERS, 0x82, 5);
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 0); wm_tb_props(&B, &PR); wm_tb_str(&B, "a"); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_SUBSCRIPTION_ID_ZERO, 0x82, 6);
    reset(); wm_tb_u16(&B, 1); wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 1); wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 2);
    wm_tb_props(&B, &PR); wm_tb_str(&B, "a"); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_PROPERTY_DUPLICATE, 0x82, 7);
    reset(); wm_tb_u16(&B, 1); wm_tb_props(&B, &PR); wm_tb_str(&B, "a");
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_TRUNCATED, 0x81, 8);
}

/* ---------------------------------------------- §3.9 - §3.11 SUBACK, UNSUB* */

Test(suback, reason_codes_3_9_3)
{
    reset(); wm_tb_u16(&B, 3); wm_tb_props(&B, &PR); wm_tb_u8(&B, 0x00); wm_tb_u8(&B, 0x02); wm_tb_u8(&B, 0xA2);
    EXPECT_OK(pkt(&SRV, 0x90));
    cr_expect_eq(P.count, 3);
    cr_expect_eq(P.payload.p[2], 0xA2);
    reset(); wm_tb_u16(&B, 3); wm_tb_props(&B, &PR); wm_tb_u8(&B, 0x00); wm_tb_u8(&B, 0x03);
    EXPECT_ERR(pkt(&SRV, 0x90), WM_MQTT5_E_REASON_CODE, 0x82, 6);
    reset(); wm_tb_u16(&B, 3); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0x90), WM_MQTT5_E_NO_REASON_CODES, 0x82, 5);
}

Test(unsubscribe, filters_3_10)
{
    reset(); wm_tb_u16(&B, 4); wm_tb_u8(&PR, 0x26); wm_tb_str(&PR, "a"); wm_tb_str(&PR, "b"); wm_tb_props(&B, &PR);
    wm_tb_str(&B, "a/#"); wm_tb_str(&B, "$share/g/b");
    EXPECT_OK(pkt(&CLI, 0xA2));
    cr_expect_eq(P.count, 2);
    size_t pos = 0; wm_mqtt5_subscription s;
    cr_assert(wm_mqtt5_subscription_next(&P, &pos, &s)); cr_expect(eq(s.filter, "a/#"));
    cr_assert(wm_mqtt5_subscription_next(&P, &pos, &s)); cr_expect(eq(s.filter, "$share/g/b"));
    cr_expect_not(wm_mqtt5_subscription_next(&P, &pos, &s));
    /* MQTT-3.10.3-2: at least one filter; §3.10.2.1: no Subscription Identifier. */
    reset(); wm_tb_u16(&B, 4); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0xA2), WM_MQTT5_E_NO_TOPIC_FILTERS, 0x82, 5);
    reset(); wm_tb_u16(&B, 4); wm_tb_u8(&PR, 0x0B); wm_tb_vbi(&PR, 1); wm_tb_props(&B, &PR); wm_tb_str(&B, "a");
    EXPECT_ERR(pkt(&CLI, 0xA2), WM_MQTT5_E_PROPERTY_NOT_ALLOWED, 0x82, 5);
}

Test(unsuback, reason_codes_3_11_3)
{
    reset(); wm_tb_u16(&B, 4); wm_tb_props(&B, &PR); wm_tb_u8(&B, 0x11); wm_tb_u8(&B, 0x00);
    EXPECT_OK(pkt(&SRV, 0xB0));
    cr_expect_eq(P.count, 2);
    reset(); wm_tb_u16(&B, 4); wm_tb_props(&B, &PR); wm_tb_u8(&B, 0x02);
    EXPECT_ERR(pkt(&SRV, 0xB0), WM_MQTT5_E_REASON_CODE, 0x82, 5);
}

/* ------------------------------------------------ §3.12 - §3.15 the rest */

/* §3.12, §3.13: PINGREQ and PINGRESP have no variable header or payload. */
Test(ping, remaining_length_zero)
{
    const uint8_t req[] = { 0xC0, 0x00 }, resp[] = { 0xD0, 0x00 }, bad[] = { 0xC0, 0x01, 0x00 };
    EXPECT_OK(dec(&CLI, req, 2)); cr_expect_eq(P.type, WM_MQTT5_PINGREQ);
    EXPECT_OK(dec(&SRV, resp, 2)); cr_expect_eq(P.type, WM_MQTT5_PINGRESP);
    EXPECT_ERR(dec(&CLI, bad, 3), WM_MQTT5_E_TRAILING_BYTES, 0x81, 2);
}

/* §3.14.2.1: Remaining Length 0 means Normal disconnection; < 2 means no
 * Property Length. MQTT-3.14.2-2: a Server must not send Session Expiry
 * Interval. */
Test(disconnect, forms_and_rules)
{
    const uint8_t d0[] = { 0xE0, 0x00 }, d1[] = { 0xE0, 0x01, 0x04 }, bad[] = { 0xE0, 0x01, 0x05 };
    EXPECT_OK(dec(&CLI, d0, 2)); cr_expect_eq(P.reason_code, 0);
    EXPECT_OK(dec(&CLI, d1, 3)); cr_expect_eq(P.reason_code, 0x04);
    EXPECT_ERR(dec(&CLI, bad, 3), WM_MQTT5_E_REASON_CODE, 0x82, 2);
    reset(); wm_tb_u8(&B, 0x80); wm_tb_u8(&PR, 0x11); wm_tb_u32(&PR, 0); wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&CLI, 0xE0));
    EXPECT_ERR(pkt(&SRV, 0xE0), WM_MQTT5_E_SESSION_EXPIRY_FROM_SERVER, 0x82, 4);
}

/* §3.14.2.1 "Sent by": Disconnect with Will Message only from a Client,
 * Server shutting down (and the other server codes) only from a Server. */
Test(disconnect, reason_code_by_sender)
{
    const uint8_t will[] = { 0xE0, 0x01, 0x04 }, shutdown[] = { 0xE0, 0x01, 0x8B }, either[] = { 0xE0, 0x01, 0x93 };
    EXPECT_OK(dec(&CLI, will, 3));
    EXPECT_ERR(dec(&SRV, will, 3), WM_MQTT5_E_REASON_CODE, 0x82, 2);
    EXPECT_OK(dec(&SRV, shutdown, 3));
    EXPECT_ERR(dec(&CLI, shutdown, 3), WM_MQTT5_E_REASON_CODE, 0x82, 2);
    EXPECT_OK(dec(&CLI, either, 3));
    EXPECT_OK(dec(&SRV, either, 3));
}

/* §3.15.2.1: AUTH reason codes 0x00, 0x18, 0x19; Remaining Length 0 = Success. */
Test(auth, forms_and_codes)
{
    const uint8_t a0[] = { 0xF0, 0x00 };
    EXPECT_OK(dec(&SRV, a0, 2)); cr_expect_eq(P.reason_code, 0);
    reset(); wm_tb_u8(&B, 0x18); wm_tb_u8(&PR, 0x15); wm_tb_str(&PR, "SCRAM"); wm_tb_u8(&PR, 0x16); wm_tb_strn(&PR, "\x00\x01", 2);
    wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&CLI, 0xF0));
    cr_expect_eq(P.reason_code, 0x18);
    cr_expect(eq(P.props.v[WM_MQTT5_PROP_AUTHENTICATION_METHOD].s, "SCRAM"));
    reset(); wm_tb_u8(&B, 0x01); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0xF0), WM_MQTT5_E_REASON_CODE, 0x82, 2);
}

/* §3.15.2.1 "Sent by": Success (0x00, also the empty form) only from a
 * Server, Re-authenticate (0x19) only from a Client. Refused at the Reason
 * Code, or where it would be. */
Test(auth, reason_code_by_sender)
{
    const uint8_t empty[] = { 0xF0, 0x00 };
    EXPECT_ERR(dec(&CLI, empty, 2), WM_MQTT5_E_REASON_CODE, 0x82, 2);
    reset(); wm_tb_u8(&B, 0x00); wm_tb_u8(&PR, 0x15); wm_tb_str(&PR, "SCRAM"); wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&SRV, 0xF0));
    EXPECT_ERR(pkt(&CLI, 0xF0), WM_MQTT5_E_REASON_CODE, 0x82, 2);
    reset(); wm_tb_u8(&B, 0x19); wm_tb_u8(&PR, 0x15); wm_tb_str(&PR, "SCRAM"); wm_tb_props(&B, &PR);
    EXPECT_OK(pkt(&CLI, 0xF0));
    EXPECT_ERR(pkt(&SRV, 0xF0), WM_MQTT5_E_REASON_CODE, 0x82, 2);
}

/* §3.15.2.2.2: "It is a Protocol Error to omit the Authentication Method"
 * (only the empty form, §3.15.2.2.1, has none); §3.15.2.2.3: so Data
 * without Method is one too, reported at the Data as in CONNECT. */
Test(auth, authentication_method_required)
{
    reset(); wm_tb_u8(&B, 0x18); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0xF0), WM_MQTT5_E_AUTH_NO_METHOD, 0x82, 3);
    reset(); wm_tb_u8(&B, 0x18); wm_tb_u8(&PR, 0x1F); wm_tb_str(&PR, "why"); wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&SRV, 0xF0), WM_MQTT5_E_AUTH_NO_METHOD, 0x82, 3);
    reset(); wm_tb_u8(&B, 0x18); wm_tb_u8(&PR, 0x1F); wm_tb_str(&PR, "why"); wm_tb_u8(&PR, 0x16); wm_tb_strn(&PR, "\x01", 1);
    wm_tb_props(&B, &PR);
    EXPECT_ERR(pkt(&CLI, 0xF0), WM_MQTT5_E_AUTH_DATA_NO_METHOD, 0x82, 4 + 6);
    EXPECT_ERR(pkt(&SRV, 0xF0), WM_MQTT5_E_AUTH_DATA_NO_METHOD, 0x82, 4 + 6);
}

/* §1.5.4 in the string fields of packets: User Name (§3.1.3.5), Will Topic
 * (§3.1.3.3), SUBSCRIBE and UNSUBSCRIBE Topic Filters (§3.8.3, §3.10.3). */
Test(strings, nul_and_surrogates_in_packet_fields)
{
    reset(); connect_head(5, 0x82); wm_tb_props(&B, &PR); wm_tb_str(&B, "c"); wm_tb_strn(&B, "us\0r", 4);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_UTF8_NUL, 0x81, 2 + 10 + 1 + 3 + 2 + 2);
    reset(); connect_head(5, 0x06); wm_tb_props(&B, &PR); wm_tb_str(&B, "c"); wm_tb_props(&B, &PR);
    wm_tb_strn(&B, "w\xED\xA0\x80", 4); wm_tb_strn(&B, "", 0);
    EXPECT_ERR(pkt(&CLI, 0x10), WM_MQTT5_E_UTF8_SURROGATE, 0x81, 2 + 10 + 1 + 3 + 1 + 2 + 1);
    EXPECT_ERR(subscribe_one("a/\xED\xB0\x80", 0), WM_MQTT5_E_UTF8_SURROGATE, 0x81, 7 + 2);
    reset(); wm_tb_u16(&B, 1); wm_tb_props(&B, &PR); wm_tb_strn(&B, "#\0", 2); wm_tb_u8(&B, 0);
    EXPECT_ERR(pkt(&CLI, 0x82), WM_MQTT5_E_UTF8_NUL, 0x81, 7 + 1);
    reset(); wm_tb_u16(&B, 4); wm_tb_props(&B, &PR); wm_tb_strn(&B, "a\0", 2);
    EXPECT_ERR(pkt(&CLI, 0xA2), WM_MQTT5_E_UTF8_NUL, 0x81, 2 + 2 + 1 + 2 + 1);
}
