/* Properties (MQTT 5.0 §2.2.2, Table 2-4 "Properties"), reason codes (§2.4)
 * and the error table. The expected data below is Table 2-4 transcribed:
 * identifier, name, type and the packets each property is "Used in". */
#include <criterion/criterion.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_props.h"
#include "codec/mqtt5_reason.h"
#include "tests/lib/mqtt5_build.h"

enum { CONNECT = 1u << 1, CONNACK = 1u << 2, PUBLISH = 1u << 3, PUBACK = 1u << 4, PUBREC = 1u << 5,
       PUBREL = 1u << 6, PUBCOMP = 1u << 7, SUBSCRIBE = 1u << 8, SUBACK = 1u << 9, UNSUBSCRIBE = 1u << 10,
       UNSUBACK = 1u << 11, DISCONNECT = 1u << 14, AUTH = 1u << 15, WILL = 1u << 16 };

static const struct { uint8_t id; const char *name; wm_mqtt5_prop_type type; uint32_t used_in; } table_2_4[] = {
    { 0x01, "payload_format_indicator", WM_MQTT5_PT_BYTE, PUBLISH | WILL },
    { 0x02, "message_expiry_interval", WM_MQTT5_PT_U32, PUBLISH | WILL },
    { 0x03, "content_type", WM_MQTT5_PT_UTF8, PUBLISH | WILL },
    { 0x08, "response_topic", WM_MQTT5_PT_UTF8, PUBLISH | WILL },
    { 0x09, "correlation_data", WM_MQTT5_PT_BINARY, PUBLISH | WILL },
    { 0x0B, "subscription_identifier", WM_MQTT5_PT_VBI, PUBLISH | SUBSCRIBE },
    { 0x11, "session_expiry_interval", WM_MQTT5_PT_U32, CONNECT | CONNACK | DISCONNECT },
    { 0x12, "assigned_client_identifier", WM_MQTT5_PT_UTF8, CONNACK },
    { 0x13, "server_keep_alive", WM_MQTT5_PT_U16, CONNACK },
    { 0x15, "authentication_method", WM_MQTT5_PT_UTF8, CONNECT | CONNACK | AUTH },
    { 0x16, "authentication_data", WM_MQTT5_PT_BINARY, CONNECT | CONNACK | AUTH },
    { 0x17, "request_problem_information", WM_MQTT5_PT_BYTE, CONNECT },
    { 0x18, "will_delay_interval", WM_MQTT5_PT_U32, WILL },
    { 0x19, "request_response_information", WM_MQTT5_PT_BYTE, CONNECT },
    { 0x1A, "response_information", WM_MQTT5_PT_UTF8, CONNACK },
    { 0x1C, "server_reference", WM_MQTT5_PT_UTF8, CONNACK | DISCONNECT },
    { 0x1F, "reason_string", WM_MQTT5_PT_UTF8, CONNACK | PUBACK | PUBREC | PUBREL | PUBCOMP | SUBACK | UNSUBACK | DISCONNECT | AUTH },
    { 0x21, "receive_maximum", WM_MQTT5_PT_U16, CONNECT | CONNACK },
    { 0x22, "topic_alias_maximum", WM_MQTT5_PT_U16, CONNECT | CONNACK },
    { 0x23, "topic_alias", WM_MQTT5_PT_U16, PUBLISH },
    { 0x24, "maximum_qos", WM_MQTT5_PT_BYTE, CONNACK },
    { 0x25, "retain_available", WM_MQTT5_PT_BYTE, CONNACK },
    { 0x26, "user_property", WM_MQTT5_PT_PAIR, CONNECT | CONNACK | PUBLISH | WILL | PUBACK | PUBREC | PUBREL | PUBCOMP |
                                                SUBSCRIBE | SUBACK | UNSUBSCRIBE | UNSUBACK | DISCONNECT | AUTH },
    { 0x27, "maximum_packet_size", WM_MQTT5_PT_U32, CONNECT | CONNACK },
    { 0x28, "wildcard_subscription_available", WM_MQTT5_PT_BYTE, CONNACK },
    { 0x29, "subscription_identifier_available", WM_MQTT5_PT_BYTE, CONNACK },
    { 0x2A, "shared_subscription_available", WM_MQTT5_PT_BYTE, CONNACK },
};
#define N_PROPS (sizeof table_2_4 / sizeof table_2_4[0])

static int find(unsigned id)
{
    for (size_t i = 0; i < N_PROPS; i++)
        if (table_2_4[i].id == id) return (int)i;
    return -1;
}

/* §2.2.2.2: 27 properties, their names and types; nothing else is a property. */
Test(props, table_2_4_identifiers_names_types)
{
    cr_assert_eq(N_PROPS, 27);
    for (unsigned id = 0; id < 256; id++) {
        int i = find(id);
        if (i < 0) {
            cr_expect_eq(wm_mqtt5_prop_type_of(id), WM_MQTT5_PT_NONE, "0x%02x is not a property", id);
            cr_expect_null(wm_mqtt5_prop_name(id));
            continue;
        }
        cr_expect_eq(wm_mqtt5_prop_type_of(id), table_2_4[i].type, "type of 0x%02x", id);
        cr_expect_str_eq(wm_mqtt5_prop_name(id), table_2_4[i].name);
    }
}

/* Table 2-4 "Used in", against the per-packet sets the decoder uses. */
Test(props, table_2_4_used_in)
{
    for (unsigned ctx = 1; ctx <= WM_MQTT5_PROPS_WILL; ctx++) {
        uint64_t want = 0;
        for (size_t i = 0; i < N_PROPS; i++)
            if (table_2_4[i].used_in & (1u << ctx)) want |= 1ull << table_2_4[i].id;
        cr_expect_eq(wm_mqtt5_props_allowed(ctx), want, "context %u", ctx);
    }
}

/* A minimal valid value of each type, as property bytes. */
static void put_value(wm_tb *t, unsigned id)
{
    switch (wm_mqtt5_prop_type_of(id)) {
    case WM_MQTT5_PT_BYTE: wm_tb_u8(t, 1); break;
    case WM_MQTT5_PT_U16: wm_tb_u16(t, 1); break;
    case WM_MQTT5_PT_U32: wm_tb_u32(t, 1); break;
    case WM_MQTT5_PT_VBI: wm_tb_vbi(t, 1); break;
    case WM_MQTT5_PT_UTF8:
    case WM_MQTT5_PT_BINARY: wm_tb_str(t, "a"); break;
    case WM_MQTT5_PT_PAIR: wm_tb_str(t, "a"); wm_tb_str(t, "b"); break;
    default: wm_tb_u8(t, 0); break;
    }
}

/* Decodes a packet of context ctx carrying the one property `id`. */
static wm_mqtt5_status with_property(unsigned ctx, unsigned id, wm_mqtt5_result *r)
{
    static wm_tb pr, b, out;
    static wm_mqtt5_packet p;
    pr.n = b.n = out.n = 0;
    /* §3.1.2.11.10, §3.15.2.2.3: Data needs a Method; §3.15.2.2.2: so does any non-empty AUTH. */
    if (id == 0x16 || (ctx == WM_MQTT5_AUTH && id != 0x15)) { wm_tb_u8(&pr, 0x15); wm_tb_str(&pr, "m"); }
    wm_tb_u8(&pr, (uint8_t)id);
    put_value(&pr, id);
    wm_tb empty = { .n = 0 };
    wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT, .topic_alias_maximum = 10 };
    uint8_t fb = (uint8_t)(ctx << 4);
    switch (ctx) {
    case WM_MQTT5_CONNECT:
    case WM_MQTT5_PROPS_WILL:
        wm_tb_str(&b, "MQTT"); wm_tb_u8(&b, 5); wm_tb_u8(&b, ctx == WM_MQTT5_CONNECT ? 0x02 : 0x06); wm_tb_u16(&b, 0);
        wm_tb_props(&b, ctx == WM_MQTT5_CONNECT ? &pr : &empty);
        wm_tb_str(&b, "c");
        if (ctx == WM_MQTT5_PROPS_WILL) { wm_tb_props(&b, &pr); wm_tb_str(&b, "w"); wm_tb_str(&b, ""); }
        fb = 0x10;
        break;
    case WM_MQTT5_CONNACK: wm_tb_u16(&b, 0); wm_tb_props(&b, &pr); cfg.from = WM_MQTT5_FROM_SERVER; break;
    case WM_MQTT5_PUBLISH: wm_tb_str(&b, "t"); wm_tb_props(&b, &pr); cfg.from = WM_MQTT5_FROM_SERVER; break;
    case WM_MQTT5_PUBREL: fb |= 2; /* fall through */
    case WM_MQTT5_PUBACK: case WM_MQTT5_PUBREC: case WM_MQTT5_PUBCOMP:
        wm_tb_u16(&b, 1); wm_tb_u8(&b, 0); wm_tb_props(&b, &pr); break;
    case WM_MQTT5_SUBSCRIBE: fb |= 2; wm_tb_u16(&b, 1); wm_tb_props(&b, &pr); wm_tb_str(&b, "a"); wm_tb_u8(&b, 0); break;
    case WM_MQTT5_UNSUBSCRIBE: fb |= 2; wm_tb_u16(&b, 1); wm_tb_props(&b, &pr); wm_tb_str(&b, "a"); break;
    case WM_MQTT5_SUBACK: case WM_MQTT5_UNSUBACK:
        wm_tb_u16(&b, 1); wm_tb_props(&b, &pr); wm_tb_u8(&b, 0); cfg.from = WM_MQTT5_FROM_SERVER; break;
    case WM_MQTT5_DISCONNECT: wm_tb_u8(&b, 0); wm_tb_props(&b, &pr); break;
    case WM_MQTT5_AUTH: wm_tb_u8(&b, 0x18); wm_tb_props(&b, &pr); break; /* §3.15.2.1: Continue, from either side */
    }
    wm_tb_packet(&out, fb, &b);
    return wm_mqtt5_decode(&cfg, out.b, out.n, &p, r);
}

/* Every identifier 0x00..0x7F in every packet with properties: decodes when
 * Table 2-4 lists the packet, else Protocol Error (a property in the wrong
 * packet) or Malformed Packet (not a property at all). */
Test(props, every_identifier_in_every_packet)
{
    static const unsigned ctxs[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15, WM_MQTT5_PROPS_WILL };
    for (size_t c = 0; c < sizeof ctxs / sizeof ctxs[0]; c++)
        for (unsigned id = 0; id < 0x80; id++) {
            unsigned ctx = ctxs[c];
            int i = find(id);
            wm_mqtt5_result r;
            wm_mqtt5_status st = with_property(ctx, id, &r);
            if (i >= 0 && (table_2_4[i].used_in & (1u << ctx))) {
                cr_expect_eq(st, WM_MQTT5_DONE, "0x%02x in context %u: %s", id, ctx, wm_mqtt5_err_name(r.err));
            } else {
                cr_expect_eq(st, WM_MQTT5_ERROR, "0x%02x in context %u", id, ctx);
                cr_expect_eq(r.err, i >= 0 ? WM_MQTT5_E_PROPERTY_NOT_ALLOWED : WM_MQTT5_E_PROPERTY_UNKNOWN,
                             "0x%02x in context %u: %s", id, ctx, wm_mqtt5_err_name(r.err));
                cr_expect_eq(r.reason_code, i >= 0 ? 0x82 : 0x81);
            }
        }
}

/* §2.2.2.2 / §3.x: only User Property repeats everywhere; Subscription
 * Identifier repeats only in PUBLISH (§3.3.2.3.8). Every other property twice
 * is a Protocol Error, in every packet that allows it. */
Test(props, repetition_rules)
{
    for (size_t i = 0; i < N_PROPS; i++) {
        unsigned id = table_2_4[i].id;
        for (unsigned ctx = 1; ctx <= WM_MQTT5_PROPS_WILL; ctx++) {
            if (!(table_2_4[i].used_in & (1u << ctx))) continue;
            wm_tb pr = { .n = 0 };
            wm_tb_u8(&pr, (uint8_t)id); put_value(&pr, id);
            wm_tb_u8(&pr, (uint8_t)id); put_value(&pr, id);
            wm_mqtt5_props out;
            size_t off = 0;
            wm_mqtt5_err e = wm_mqtt5_props_parse(pr.b, pr.n, ctx, &out, &off);
            bool repeatable = id == 0x26 || (id == 0x0B && ctx == WM_MQTT5_PUBLISH);
            if (repeatable) {
                cr_expect_eq(e, WM_MQTT5_E_OK, "0x%02x twice in %u", id, ctx);
            } else {
                cr_expect_eq(e, WM_MQTT5_E_PROPERTY_DUPLICATE, "0x%02x twice in %u: %s", id, ctx, wm_mqtt5_err_name(e));
                cr_expect_eq(off, pr.n / 2, "offset of the second 0x%02x", id);
            }
        }
    }
}

/* §2.4: names of reason codes, including the per-packet names of 0x00. */
Test(reason, names_2_4)
{
    cr_expect_str_eq(wm_mqtt5_reason_name(0x00, WM_MQTT5_CONNACK), "success");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x00, WM_MQTT5_DISCONNECT), "normal_disconnection");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x00, WM_MQTT5_SUBACK), "granted_qos_0");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x02, WM_MQTT5_SUBACK), "granted_qos_2");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x10, WM_MQTT5_PUBACK), "no_matching_subscribers");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x81, WM_MQTT5_DISCONNECT), "malformed_packet");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x94, WM_MQTT5_DISCONNECT), "topic_alias_invalid");
    cr_expect_str_eq(wm_mqtt5_reason_name(0xA2, WM_MQTT5_SUBACK), "wildcard_subscriptions_not_supported");
    cr_expect_str_eq(wm_mqtt5_reason_name(0x03, WM_MQTT5_SUBACK), "unknown");
    /* §2.4: 43 defined values (0x00 counted once). */
    int known = 0;
    for (unsigned c = 0; c < 256; c++) known += strcmp(wm_mqtt5_reason_name((uint8_t)c, WM_MQTT5_CONNACK), "unknown") != 0;
    cr_expect_eq(known, 43);
}

/* Every codec error has a name and maps to one of the reason codes a server
 * sends for it (§4.13). */
Test(reason, error_table)
{
    for (int e = 1; e < WM_MQTT5_E_COUNT_; e++) {
        cr_expect_str_neq(wm_mqtt5_err_name((wm_mqtt5_err)e), "unknown", "error %d has no name", e);
        uint8_t rc = wm_mqtt5_err_reason((wm_mqtt5_err)e);
        cr_expect(rc == 0x81 || rc == 0x82 || rc == 0x84 || rc == 0x94 || rc == 0x95 || rc == 0x99, "error %d -> 0x%02x", e, rc);
    }
    cr_expect_eq(wm_mqtt5_err_reason(WM_MQTT5_E_PACKET_TOO_LARGE), 0x95);
    cr_expect_eq(wm_mqtt5_err_reason(WM_MQTT5_E_PAYLOAD_FORMAT_INVALID), 0x99);
    cr_expect_eq(wm_mqtt5_err_reason(WM_MQTT5_E_TOPIC_ALIAS_ZERO), 0x94);
    cr_expect_eq(wm_mqtt5_err_reason(WM_MQTT5_E_VBI_NOT_MINIMAL), 0x81);
    cr_expect_eq(wm_mqtt5_err_reason(WM_MQTT5_E_PROPERTY_DUPLICATE), 0x82);
}

/* §1.5.4: U+0000 and UTF-16 surrogates are Malformed in every UTF-8 string
 * property and in both halves of a User Property (§1.5.7), with the offset of
 * the offending byte; Binary Data (§1.5.6) may hold any byte. */
Test(props, nul_and_surrogate_in_every_string_property)
{
    static const struct { const char *bytes; size_t len; size_t bad_at; wm_mqtt5_err e; } bad[] = {
        { "a\0", 2, 1, WM_MQTT5_E_UTF8_NUL },
        { "ab\xED\xA0\x80", 5, 2, WM_MQTT5_E_UTF8_SURROGATE },
        { "\xED\xBF\xBF", 3, 0, WM_MQTT5_E_UTF8_SURROGATE },
    };
    for (size_t i = 0; i < N_PROPS; i++) {
        unsigned id = table_2_4[i].id;
        wm_mqtt5_prop_type t = table_2_4[i].type;
        if (t != WM_MQTT5_PT_UTF8 && t != WM_MQTT5_PT_PAIR && t != WM_MQTT5_PT_BINARY) continue;
        unsigned ctx = 1;
        while (!(table_2_4[i].used_in & (1u << ctx))) ctx++;
        for (size_t b = 0; b < 3; b++)
            for (int half = 0; half < (t == WM_MQTT5_PT_PAIR ? 2 : 1); half++) {
                wm_tb pr = { .n = 0 };
                wm_tb_u8(&pr, (uint8_t)id);
                size_t at = 1 + 2;
                if (half == 1) { wm_tb_str(&pr, "key"); at += 5; }
                wm_tb_strn(&pr, bad[b].bytes, bad[b].len);
                if (t == WM_MQTT5_PT_PAIR && half == 0) wm_tb_str(&pr, "v");
                wm_mqtt5_props out;
                size_t off = 99;
                wm_mqtt5_err e = wm_mqtt5_props_parse(pr.b, pr.n, ctx, &out, &off);
                if (t == WM_MQTT5_PT_BINARY) {
                    cr_expect_eq(e, WM_MQTT5_E_OK, "binary 0x%02x takes any bytes", id);
                    continue;
                }
                cr_expect_eq(e, bad[b].e, "0x%02x half %d case %zu: %s", id, half, b, wm_mqtt5_err_name(e));
                cr_expect_eq(off, at + bad[b].bad_at, "0x%02x half %d case %zu: offset %zu", id, half, b, off);
            }
    }
}
