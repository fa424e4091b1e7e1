/* The encoder and round trips (encode -> decode -> equal) for all 15 MQTT v5
 * control packets (MQTT 5.0 §3.1 - §3.15), each with every property its
 * packet allows and each decoded split at every byte, plus the canonical short forms of §3.4.2.1, §3.14.2.1 and
 * §3.15.2.1 and the buffer contract. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_encode.h"
#include "tests/lib/mqtt5_build.h"
#include "tests/lib/mqtt5_equal.h"

#define S(x) ((wm_mqtt5_bytes){ (const uint8_t *)(x), sizeof(x) - 1 })

static void set_u(wm_mqtt5_props *pr, unsigned id, uint32_t v) { pr->present |= 1ull << id; pr->v[id].u = v; }
static void set_s(wm_mqtt5_props *pr, unsigned id, wm_mqtt5_bytes s) { pr->present |= 1ull << id; pr->v[id].s = s; }
static const wm_mqtt5_pair UP[] = { { S("peid"), S("road/42") }, { S("k"), S("") }, { S("peid"), S("dup keys are fine") } };
static void set_users(wm_mqtt5_props *pr, uint16_t n)
{
    pr->present |= 1ull << WM_MQTT5_PROP_USER_PROPERTY;
    pr->user_properties = UP;
    pr->user_property_count = n;
}

/* Encodes p, checks the buffer contract, decodes the bytes as sent by `from`,
 * and checks the decoded packet equals p and re-encodes to the same bytes. */
static void roundtrip(const wm_mqtt5_packet *p, wm_mqtt5_dir from, size_t expect_len)
{
    size_t n = 0, m = 0;
    cr_assert_eq(wm_mqtt5_encode(p, NULL, 0, &n), WM_MQTT5_ENC_BUFFER_TOO_SMALL);
    if (expect_len) cr_expect_eq(n, expect_len, "%s: %zu bytes, expected %zu", wm_mqtt5_type_name(p->type), n, expect_len);
    uint8_t *buf = malloc(n), *small = malloc(n);
    memset(small, 0xA5, n);
    cr_assert_eq(wm_mqtt5_encode(p, small, n - 1, &m), WM_MQTT5_ENC_BUFFER_TOO_SMALL);
    cr_expect_eq(m, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(small[i], 0xA5, "a too-small encode wrote byte %zu", i);
    cr_assert_eq(wm_mqtt5_encode(p, buf, n, &m), WM_MQTT5_ENC_OK);
    cr_assert_eq(m, n);

    wm_mqtt5_config cfg = { .from = from, .maximum_packet_size = 0, .topic_alias_maximum = 65535 };
    wm_mqtt5_packet d;
    wm_mqtt5_result r;
    cr_assert_eq(wm_mqtt5_decode(&cfg, buf, n, &d, &r), WM_MQTT5_DONE, "%s: %s at %zu", wm_mqtt5_type_name(p->type),
                 wm_mqtt5_err_name(r.err), r.offset);
    cr_expect_eq(r.length, n);
    /* Split at every byte: each proper prefix (an exact-size copy, so ASan
     * sees over-reads) asks for more, exactly the missing count once the
     * fixed header is complete (§2.1.4: 1 type byte + Remaining Length). */
    for (size_t k = 0; k < n; k++) {
        uint8_t *prefix = malloc(k ? k : 1);
        memcpy(prefix, buf, k);
        wm_mqtt5_packet x;
        wm_mqtt5_result rx;
        cr_assert_eq(wm_mqtt5_decode(&cfg, prefix, k, &x, &rx), WM_MQTT5_NEED_MORE, "%s prefix %zu",
                     wm_mqtt5_type_name(p->type), k);
        size_t hlen = 1;
        while (hlen < k && (buf[hlen] & 0x80)) hlen++;
        if (k > hlen) cr_expect_eq(rx.need, n - k, "%s prefix %zu", wm_mqtt5_type_name(p->type), k);
        else cr_expect_eq(rx.need, 1);
        free(prefix);
    }
    char why[64] = "";
    cr_expect(wm_mqtt5_packet_equal(p, &d, why, sizeof why), "%s differs after a round trip: %s",
              wm_mqtt5_type_name(p->type), why);
    uint8_t *again = malloc(n);
    cr_assert_eq(wm_mqtt5_encode(&d, again, n, &m), WM_MQTT5_ENC_OK);
    cr_expect_eq(m, n);
    cr_expect_arr_eq(again, buf, n, "%s: decoded packet re-encodes differently", wm_mqtt5_type_name(p->type));
    free(buf); free(small); free(again);
}

static wm_mqtt5_packet blank(unsigned type)
{
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = (uint8_t)type;
    return p;
}

/* §3.1: every CONNECT property (§3.1.2.11) and Will Property (§3.1.3.2). */
Test(roundtrip, connect_3_1)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_CONNECT);
    wm_mqtt5_connect *k = &p.connect;
    k->protocol_name = S("MQTT"); k->protocol_version = 5;
    k->clean_start = true; k->will_flag = true; k->will_qos = 2; k->will_retain = true;
    k->username_flag = k->password_flag = true;
    k->keep_alive = 65535;
    k->client_id = S("client-\xC3\xA9");
    set_u(&p.props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL, 0xFFFFFFFF);
    set_u(&p.props, WM_MQTT5_PROP_RECEIVE_MAXIMUM, 100);
    set_u(&p.props, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE, 1 << 20);
    set_u(&p.props, WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM, 16);
    set_u(&p.props, WM_MQTT5_PROP_REQUEST_RESPONSE_INFORMATION, 1);
    set_u(&p.props, WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION, 0);
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_METHOD, S("SCRAM-SHA-256"));
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_DATA, S("\x00\x01\x02"));
    set_users(&p.props, 2);
    set_u(&k->will_props, WM_MQTT5_PROP_WILL_DELAY_INTERVAL, 10);
    set_u(&k->will_props, WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR, 1);
    set_u(&k->will_props, WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL, 3600);
    set_s(&k->will_props, WM_MQTT5_PROP_CONTENT_TYPE, S("text/plain"));
    set_s(&k->will_props, WM_MQTT5_PROP_RESPONSE_TOPIC, S("will/reply"));
    set_s(&k->will_props, WM_MQTT5_PROP_CORRELATION_DATA, S("\xFF"));
    set_users(&k->will_props, 1);
    k->will_topic = S("clients/gone");
    k->will_payload = S("bye\x00");
    k->username = S("alice");
    k->password = S("\x00secret");
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 0);
}

/* The smallest CONNECT: "MQTT", 5, flags 0, keep alive 0, no properties, empty
 * client id: 2+4+1+1+2+1+2 = 13 bytes of body. */
Test(roundtrip, connect_minimal)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_CONNECT);
    p.connect.protocol_name = S("MQTT"); p.connect.protocol_version = 5;
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 15);
}

/* §3.2: every CONNACK property (§3.2.2.3). */
Test(roundtrip, connack_3_2)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_CONNACK);
    p.session_present = true;
    set_u(&p.props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL, 7);
    set_u(&p.props, WM_MQTT5_PROP_RECEIVE_MAXIMUM, 1);
    set_u(&p.props, WM_MQTT5_PROP_MAXIMUM_QOS, 1);
    set_u(&p.props, WM_MQTT5_PROP_RETAIN_AVAILABLE, 0);
    set_u(&p.props, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE, 65536);
    set_s(&p.props, WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER, S("auto-7f"));
    set_u(&p.props, WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM, 0);
    set_s(&p.props, WM_MQTT5_PROP_REASON_STRING, S("welcome"));
    set_users(&p.props, 3);
    set_u(&p.props, WM_MQTT5_PROP_WILDCARD_SUBSCRIPTION_AVAILABLE, 1);
    set_u(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE, 1);
    set_u(&p.props, WM_MQTT5_PROP_SHARED_SUBSCRIPTION_AVAILABLE, 0);
    set_u(&p.props, WM_MQTT5_PROP_SERVER_KEEP_ALIVE, 120);
    set_s(&p.props, WM_MQTT5_PROP_RESPONSE_INFORMATION, S("resp/"));
    set_s(&p.props, WM_MQTT5_PROP_SERVER_REFERENCE, S("other:1883"));
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_METHOD, S("m"));
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_DATA, S(""));
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 0);
    wm_mqtt5_packet q = blank(WM_MQTT5_CONNACK);
    q.reason_code = 0x87;
    roundtrip(&q, WM_MQTT5_FROM_SERVER, 5);
}

/* §3.3: every PUBLISH property (§3.3.2.3), repeated Subscription Identifiers
 * from a server, and the Topic Alias form with an empty topic. */
Test(roundtrip, publish_3_3)
{
    static const uint32_t ids[] = { 1, 127, 128, 268435455 };
    wm_mqtt5_packet p = blank(WM_MQTT5_PUBLISH);
    p.qos = 2; p.dup = true; p.retain = true;
    p.topic = S("sport/tennis/player1");
    p.packet_id = 65535;
    set_u(&p.props, WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR, 0);
    set_u(&p.props, WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL, 30);
    set_u(&p.props, WM_MQTT5_PROP_TOPIC_ALIAS, 5);
    set_s(&p.props, WM_MQTT5_PROP_RESPONSE_TOPIC, S("reply/here"));
    set_s(&p.props, WM_MQTT5_PROP_CORRELATION_DATA, S("\x01\x00\x02"));
    set_s(&p.props, WM_MQTT5_PROP_CONTENT_TYPE, S("application/exi"));
    set_users(&p.props, 3);
    p.props.present |= 1ull << WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER;
    p.props.subscription_identifiers = ids;
    p.props.subscription_identifier_count = 4;
    p.payload = S("\x80\x00 binary payload");
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 0);

    wm_mqtt5_packet q = blank(WM_MQTT5_PUBLISH);
    set_u(&q.props, WM_MQTT5_PROP_TOPIC_ALIAS, 1);
    roundtrip(&q, WM_MQTT5_FROM_CLIENT, 2 + 2 + 1 + 3);
}

/* §3.4 - §3.7: long and short forms (§3.4.2.1: Reason Code and Property Length
 * omitted when 0x00 and no properties). */
Test(roundtrip, puback_pubrec_pubrel_pubcomp)
{
    static const uint8_t types[] = { WM_MQTT5_PUBACK, WM_MQTT5_PUBREC, WM_MQTT5_PUBREL, WM_MQTT5_PUBCOMP };
    for (int i = 0; i < 4; i++) {
        wm_mqtt5_packet p = blank(types[i]);
        p.packet_id = 42;
        roundtrip(&p, WM_MQTT5_FROM_CLIENT, 4);                 /* short: id only */
        p.reason_code = i < 2 ? 0x10 : 0x92;
        roundtrip(&p, WM_MQTT5_FROM_SERVER, 5);                 /* id + reason */
        set_s(&p.props, WM_MQTT5_PROP_REASON_STRING, S("no"));
        set_users(&p.props, 1);
        roundtrip(&p, WM_MQTT5_FROM_CLIENT, 0);
        p.reason_code = 0;
        roundtrip(&p, WM_MQTT5_FROM_SERVER, 0);                 /* 0x00 with properties: long form */
    }
}

/* §3.8: options in every combination the spec allows (§3.8.3.1). */
Test(roundtrip, subscribe_3_8)
{
    wm_mqtt5_subscription subs[3 * 2 * 2 * 3];
    static char names[36][8];
    uint32_t n = 0;
    for (uint8_t qos = 0; qos < 3; qos++)
        for (int nl = 0; nl < 2; nl++)
            for (int rap = 0; rap < 2; rap++)
                for (uint8_t rh = 0; rh < 3; rh++) {
                    snprintf(names[n], sizeof names[n], "t/%u", n);
                    subs[n] = (wm_mqtt5_subscription){ { (const uint8_t *)names[n], (uint32_t)strlen(names[n]) }, qos, nl, rap, rh };
                    n++;
                }
    wm_mqtt5_packet p = blank(WM_MQTT5_SUBSCRIBE);
    p.packet_id = 9;
    p.subscriptions = subs;
    p.count = n;
    set_u(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER, 0); /* slot unused: the array carries it */
    static const uint32_t id[] = { 16384 };
    p.props.subscription_identifiers = id;
    p.props.subscription_identifier_count = 1;
    set_users(&p.props, 2);
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 0);
}

Test(roundtrip, suback_unsubscribe_unsuback_3_9_to_3_11)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_SUBACK);
    p.packet_id = 9;
    p.payload = S("\x00\x01\x02\x80\x8F\xA2");
    p.count = 6;
    set_s(&p.props, WM_MQTT5_PROP_REASON_STRING, S("partly"));
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 0);

    static const wm_mqtt5_subscription f[] = { { S("a/#"), 0, 0, 0, 0 }, { S("$share/g/+/x"), 0, 0, 0, 0 } };
    wm_mqtt5_packet u = blank(WM_MQTT5_UNSUBSCRIBE);
    u.packet_id = 10;
    u.subscriptions = f;
    u.count = 2;
    set_users(&u.props, 1);
    /* fixed header 2, packet id 2, Property Length 1 + User Property
     * (1 + 2+4 + 2+7), filters 2+3 and 2+12 (§3.10.2, §3.10.3). */
    roundtrip(&u, WM_MQTT5_FROM_CLIENT, 2 + 2 + 1 + 16 + 5 + 14);

    wm_mqtt5_packet a = blank(WM_MQTT5_UNSUBACK);
    a.packet_id = 10;
    a.payload = S("\x00\x11");
    a.count = 2;
    roundtrip(&a, WM_MQTT5_FROM_SERVER, 7);
}

/* §3.12, §3.13: two bytes each. */
Test(roundtrip, pingreq_pingresp)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_PINGREQ);
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 2);
    p = blank(WM_MQTT5_PINGRESP);
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 2);
}

/* §3.14: Remaining Length 0 for Normal disconnection without properties;
 * every DISCONNECT property (§3.14.2.2). */
Test(roundtrip, disconnect_3_14)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_DISCONNECT);
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 2);
    p.reason_code = 0x04;
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 3);
    set_u(&p.props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL, 0);
    set_s(&p.props, WM_MQTT5_PROP_REASON_STRING, S("done"));
    set_s(&p.props, WM_MQTT5_PROP_SERVER_REFERENCE, S("b:1883"));
    set_users(&p.props, 2);
    roundtrip(&p, WM_MQTT5_FROM_CLIENT, 0);
}

/* §3.15: every AUTH property (§3.15.2.2). */
Test(roundtrip, auth_3_15)
{
    wm_mqtt5_packet p = blank(WM_MQTT5_AUTH);
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 2); /* the empty form is Success: a Server's (§3.15.2.1) */
    p.reason_code = 0x18;
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_METHOD, S("SCRAM-SHA-1"));
    set_s(&p.props, WM_MQTT5_PROP_AUTHENTICATION_DATA, S("\x00\xFF"));
    set_s(&p.props, WM_MQTT5_PROP_REASON_STRING, S("go on"));
    set_users(&p.props, 1);
    roundtrip(&p, WM_MQTT5_FROM_SERVER, 0);
}

/* Bytes written by hand in canonical form re-encode to themselves. */
Test(encode, canonical_bytes_are_reproduced)
{
    uint8_t in[256], out[256];
    size_t n = wm_tb_typical_publish(in, sizeof in), m;
    wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT };
    wm_mqtt5_packet d;
    wm_mqtt5_result r;
    cr_assert_eq(wm_mqtt5_decode(&cfg, in, n, &d, &r), WM_MQTT5_DONE);
    cr_assert_eq(wm_mqtt5_encode(&d, out, sizeof out, &m), WM_MQTT5_ENC_OK);
    cr_expect_eq(m, n);
    cr_expect_arr_eq(out, in, n);
}

/* §1.5.4 / §1.5.6: two-byte lengths; §1.5.5: four-byte VBIs. */
Test(encode, unrepresentable)
{
    static uint8_t big[70000];
    wm_mqtt5_packet p = blank(WM_MQTT5_PUBLISH);
    p.topic = (wm_mqtt5_bytes){ big, sizeof big };
    size_t n;
    cr_expect_eq(wm_mqtt5_encode(&p, NULL, 0, &n), WM_MQTT5_ENC_UNREPRESENTABLE);
    p.topic = S("t");
    static const uint32_t id[] = { 268435456 };
    p.props.present |= 1ull << WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER;
    p.props.subscription_identifiers = id;
    p.props.subscription_identifier_count = 1;
    cr_expect_eq(wm_mqtt5_encode(&p, NULL, 0, &n), WM_MQTT5_ENC_UNREPRESENTABLE);
    p = blank(0);
    cr_expect_eq(wm_mqtt5_encode(&p, NULL, 0, &n), WM_MQTT5_ENC_UNREPRESENTABLE);
    /* A payload that takes the Remaining Length to its 4-byte maximum is fine
     * to size; one byte more is not representable. */
    p = blank(WM_MQTT5_PUBLISH);
    p.topic = S("t");
    p.payload = (wm_mqtt5_bytes){ big, 268435455u - 4 };
    cr_expect_eq(wm_mqtt5_encode(&p, NULL, 0, &n), WM_MQTT5_ENC_BUFFER_TOO_SMALL);
    cr_expect_eq(n, 268435455u + 5);
    p.payload.len++;
    cr_expect_eq(wm_mqtt5_encode(&p, NULL, 0, &n), WM_MQTT5_ENC_UNREPRESENTABLE);
}
