/* The proxy's MQTT framing (dataplane/proxy_frame.h): pass-through is byte
 * for byte, framing does not depend on how TCP split the stream, the limits
 * each end announced in CONNECT/CONNACK are enforced on the other direction,
 * and the sender of a bad packet is told why (MQTT 5.0 §4.13, §3.2.2.2,
 * §3.14.2.1). Packets are written out byte by byte from the spec. */
#include <criterion/criterion.h>
#include <string.h>

#include "dataplane/proxy.h"
#include "dataplane/proxy_frame.h"

/* CONNECT v5, Clean Start, keep alive 60, properties: Maximum Packet Size 64
 * (0x27), Topic Alias Maximum 2 (0x22); client id "c". */
static const uint8_t CONNECT_LIMITS[] = {
    0x10, 0x16, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x05, 0x02, 0x00, 0x3c,
    0x08, 0x27, 0x00, 0x00, 0x00, 0x40, 0x22, 0x00, 0x02,
    0x00, 0x01, 'c' };
/* CONNACK success, properties: Maximum Packet Size 32, Topic Alias Maximum 0 absent. */
static const uint8_t CONNACK_LIMITS[] = { 0x20, 0x08, 0x00, 0x00, 0x05, 0x27, 0x00, 0x00, 0x00, 0x20 };
/* PUBLISH QoS 0 "a/b", no properties, payload "hello". */
static const uint8_t PUBLISH_SMALL[] = { 0x30, 0x0b, 0x00, 0x03, 'a', '/', 'b', 0x00, 'h', 'e', 'l', 'l', 'o' };
/* PUBLISH QoS 1 id 7 "t", Topic Alias 1 (0x23), payload "x". */
static const uint8_t PUBLISH_ALIAS[] = { 0x32, 0x0a, 0x00, 0x01, 't', 0x00, 0x07, 0x03, 0x23, 0x00, 0x01, 'x' };
static const uint8_t PINGREQ[] = { 0xc0, 0x00 };

static uint8_t mem[4096];

static void load(wm_proxy_queue *q, const void *p, size_t n)
{
    wm_proxy_queue_init(q, mem, sizeof mem);
    cr_assert(wm_proxy_queue_append(q, p, (uint32_t)n));
}

Test(proxy_frame, split_at_every_byte_frames_the_same_bytes)
{
    uint8_t stream[256];
    size_t n = 0;
    memcpy(stream + n, CONNECT_LIMITS, sizeof CONNECT_LIMITS); n += sizeof CONNECT_LIMITS;
    memcpy(stream + n, PUBLISH_SMALL, sizeof PUBLISH_SMALL); n += sizeof PUBLISH_SMALL;
    memcpy(stream + n, PINGREQ, sizeof PINGREQ); n += sizeof PINGREQ;
    size_t bounds[] = { sizeof CONNECT_LIMITS, sizeof CONNECT_LIMITS + sizeof PUBLISH_SMALL, n };
    for (size_t cut = 0; cut <= n; cut++) {
        wm_proxy_session ss;
        wm_proxy_session_init(&ss, 1024);
        wm_proxy_queue q;
        load(&q, stream, cut);
        wm_proxy_frame_result r1 = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
        cr_assert_eq(r1.verdict, WM_PROXY_FRAME_OK);
        size_t expect_ready = 0;
        for (int b = 0; b < 3; b++) if (bounds[b] <= cut) expect_ready = bounds[b];
        cr_expect_eq(q.ready, expect_ready, "cut %zu: ready %u, want a packet boundary %zu", cut, q.ready, expect_ready);
        cr_assert(wm_proxy_queue_append(&q, stream + cut, (uint32_t)(n - cut)));
        wm_proxy_frame_result r2 = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
        cr_assert_eq(r2.verdict, WM_PROXY_FRAME_OK);
        cr_expect_eq(r1.packets + r2.packets, 3, "cut %zu", cut);
        cr_expect_eq(r1.publishes + r2.publishes, 1);
        cr_expect_eq(q.ready, n);
        cr_expect(memcmp(q.buf, stream, n) == 0, "pass-through leaves the bytes alone");
    }
}

Test(proxy_frame, connect_limits_bound_the_broker_direction)
{
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 1024);
    wm_proxy_queue q;
    load(&q, CONNECT_LIMITS, sizeof CONNECT_LIMITS);
    cr_assert_eq(wm_proxy_frame(&ss, WM_PROXY_C2U, &q).verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(ss.cfg[WM_PROXY_U2C].maximum_packet_size, 64);
    cr_expect_eq(ss.cfg[WM_PROXY_U2C].topic_alias_maximum, 2);
    /* A 70-byte PUBLISH from the broker exceeds the client's 64 (§3.1.2.11.4). */
    uint8_t big[70] = { 0x30, 68, 0x00, 0x01, 't', 0x00 };
    memset(big + 6, 'p', sizeof big - 6);
    load(&q, big, sizeof big);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_U2C, &q);
    cr_expect_eq(r.verdict, WM_PROXY_FRAME_TOO_LARGE);
    cr_expect_eq(r.reason_code, 0x95);
    cr_expect_eq(q.ready, 0, "nothing of it is released");
}

Test(proxy_frame, connack_limits_bound_the_client_direction)
{
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 1024);
    wm_proxy_queue q;
    load(&q, CONNACK_LIMITS, sizeof CONNACK_LIMITS);
    cr_assert_eq(wm_proxy_frame(&ss, WM_PROXY_U2C, &q).verdict, WM_PROXY_FRAME_OK);
    cr_expect(ss.connack_sent);
    cr_expect_eq(ss.cfg[WM_PROXY_C2U].maximum_packet_size, 32);
    /* The broker announced no Topic Alias Maximum: 0, so an alias is a protocol error (§3.3.2.3.4). */
    load(&q, PUBLISH_ALIAS, sizeof PUBLISH_ALIAS);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
    cr_expect_eq(r.verdict, WM_PROXY_FRAME_MALFORMED);
    cr_expect_eq(r.reason_code, 0x94);
    /* A stopped direction stays stopped. */
    load(&q, PINGREQ, sizeof PINGREQ);
    cr_expect_neq(wm_proxy_frame(&ss, WM_PROXY_C2U, &q).verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(q.ready, 0);
}

Test(proxy_frame, the_proxy_bound_caps_what_an_end_announced)
{
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 16);
    wm_proxy_queue q;
    load(&q, CONNACK_LIMITS, sizeof CONNACK_LIMITS);
    cr_assert_eq(wm_proxy_frame(&ss, WM_PROXY_U2C, &q).verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(ss.cfg[WM_PROXY_C2U].maximum_packet_size, 16, "min(32 announced, 16 of the proxy)");
}

Test(proxy_frame, malformed_after_good_packets_releases_only_the_good_ones)
{
    uint8_t stream[64];
    memcpy(stream, PUBLISH_SMALL, sizeof PUBLISH_SMALL);
    const uint8_t qos3[] = { 0x36, 0x05, 0x00, 0x01, 't', 0x00, 0x01 };   /* QoS 3: §3.3.1.2 */
    memcpy(stream + sizeof PUBLISH_SMALL, qos3, sizeof qos3);
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 1024);
    wm_proxy_queue q;
    load(&q, stream, sizeof PUBLISH_SMALL + sizeof qos3);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
    cr_expect_eq(r.verdict, WM_PROXY_FRAME_MALFORMED);
    cr_expect_eq(r.reason_code, 0x81);
    cr_expect_eq(r.packets, 1);
    cr_expect_eq(q.ready, sizeof PUBLISH_SMALL);
}

Test(proxy_frame, error_packet_depends_on_who_and_when)
{
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 1024);
    uint8_t out[WM_PROXY_ERROR_PACKET_MAX];
    uint32_t n = wm_proxy_error_packet(&ss, WM_PROXY_C2U, 0x81, out);
    const uint8_t connack[] = { 0x20, 0x03, 0x00, 0x81, 0x00 };
    cr_assert_eq(n, sizeof connack);
    cr_expect(memcmp(out, connack, n) == 0, "a client not yet acknowledged gets a CONNACK (§3.2.2.2)");
    cr_expect_eq(wm_proxy_error_packet(&ss, WM_PROXY_U2C, 0x81, out), 0,
                 "no DISCONNECT to a broker that has not accepted the connection");
    ss.connack_sent = true;
    /* Remaining Length 1: the Property Length may be left out (§3.14.2.2.1). */
    const uint8_t disconnect[] = { 0xe0, 0x01, 0x95 };
    n = wm_proxy_error_packet(&ss, WM_PROXY_C2U, 0x95, out);
    cr_assert_eq(n, sizeof disconnect);
    cr_expect(memcmp(out, disconnect, n) == 0);
    n = wm_proxy_error_packet(&ss, WM_PROXY_U2C, 0x81, out);
    cr_expect_eq(n, 3);
    cr_expect_eq(out[2], 0x81);
}

/* CONNECT v5 without properties, client id "c". */
static const uint8_t CONNECT_PLAIN[] = { 0x10, 0x0e, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x05, 0x02, 0x00, 0x3c,
                                         0x00, 0x00, 0x01, 'c' };

static void decode_at(const wm_proxy_queue *q, uint32_t off, wm_mqtt5_dir from, wm_mqtt5_packet *pkt, size_t *len)
{
    wm_mqtt5_config cfg = { .from = from };
    wm_mqtt5_result r;
    cr_assert_eq(wm_mqtt5_decode(&cfg, q->buf + off, q->tail - off, pkt, &r), WM_MQTT5_DONE, "%s",
                 wm_mqtt5_err_name(r.err));
    *len = r.length;
}

Test(proxy_frame, connect_without_max_packet_is_made_to_announce_the_proxy_bound)
{
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 2048);
    wm_proxy_queue q;
    uint8_t two[64];
    memcpy(two, CONNECT_PLAIN, sizeof CONNECT_PLAIN);
    memcpy(two + sizeof CONNECT_PLAIN, PINGREQ, sizeof PINGREQ);
    load(&q, two, sizeof CONNECT_PLAIN + sizeof PINGREQ);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(r.rewritten, 1);
    cr_expect_eq(r.packets, 2);
    cr_expect_eq(q.ready, sizeof CONNECT_PLAIN + 5 + sizeof PINGREQ, "5 bytes: identifier 0x27 + Four Byte Integer");
    wm_mqtt5_packet pkt;
    size_t len;
    decode_at(&q, 0, WM_MQTT5_FROM_CLIENT, &pkt, &len);
    cr_expect_eq(len, sizeof CONNECT_PLAIN + 5);
    cr_expect(wm_mqtt5_props_has(&pkt.props, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE));
    cr_expect_eq(pkt.props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u, 2048);
    cr_expect_eq(pkt.connect.keep_alive, 60);
    cr_expect(pkt.connect.client_id.len == 1 && pkt.connect.client_id.p[0] == 'c');
    cr_expect(memcmp(q.buf + len, PINGREQ, sizeof PINGREQ) == 0, "the next packet follows unchanged");
}

Test(proxy_frame, a_larger_announced_max_packet_is_lowered_in_place_a_smaller_kept)
{
    uint8_t c[sizeof CONNECT_LIMITS];
    memcpy(c, CONNECT_LIMITS, sizeof c);
    c[14] = 0x01;                                       /* Maximum Packet Size 0x01000040 */
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 4096);
    wm_proxy_queue q;
    load(&q, c, sizeof c);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(r.rewritten, 1);
    cr_expect_eq(q.ready, sizeof c, "same length");
    const uint8_t want[] = { 0x27, 0x00, 0x00, 0x10, 0x00 };
    cr_expect(memcmp(q.buf + 13, want, sizeof want) == 0);
    cr_expect_eq(ss.cfg[WM_PROXY_U2C].maximum_packet_size, 4096);

    wm_proxy_session_init(&ss, 4096);
    load(&q, CONNECT_LIMITS, sizeof CONNECT_LIMITS);   /* announces 64: kept */
    r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q);
    cr_expect_eq(r.rewritten, 0);
    cr_expect(memcmp(q.buf, CONNECT_LIMITS, sizeof CONNECT_LIMITS) == 0);
}

Test(proxy_frame, successful_connack_announces_the_bound_a_refusal_is_untouched)
{
    const uint8_t ok[] = { 0x20, 0x03, 0x00, 0x00, 0x00 };
    const uint8_t refused[] = { 0x20, 0x03, 0x00, 0x87, 0x00 };   /* Not authorized */
    wm_proxy_session ss;
    wm_proxy_session_init(&ss, 1000);
    wm_proxy_queue q;
    load(&q, ok, sizeof ok);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_U2C, &q);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_expect_eq(r.rewritten, 1);
    wm_mqtt5_packet pkt;
    size_t len;
    decode_at(&q, 0, WM_MQTT5_FROM_SERVER, &pkt, &len);
    cr_expect_eq(pkt.props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u, 1000);
    cr_expect(ss.connack_sent);

    wm_proxy_session_init(&ss, 1000);
    load(&q, refused, sizeof refused);
    r = wm_proxy_frame(&ss, WM_PROXY_U2C, &q);
    cr_expect_eq(r.rewritten, 0);
    cr_expect(memcmp(q.buf, refused, sizeof refused) == 0);
}

Test(proxy_queue, splice_grows_and_shrinks_in_place)
{
    wm_proxy_queue q;
    load(&q, "abcdef", 6);
    cr_assert(wm_proxy_queue_splice(&q, 2, 2, "XYZ", 3));
    cr_expect_eq(q.tail, 7);
    cr_expect(memcmp(q.buf, "abXYZef", 7) == 0);
    cr_assert(wm_proxy_queue_splice(&q, 0, 3, "", 0));
    cr_expect(memcmp(q.buf, "YZef", 4) == 0);
    q.ready = 2;
    cr_expect_not(wm_proxy_queue_splice(&q, 1, 1, "q", 1), "released bytes are not rewritten");
}
