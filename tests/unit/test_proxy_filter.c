/* The proxy's spatial filtering (dataplane/proxy_filter.h) through its
 * framing (dataplane/proxy_frame.h), on a two-neighborhood resolution of the
 * small test world: broker packets a real mosquitto never sends (topic
 * aliases towards the client) and exact queue contents after withheld
 * packets in the middle of a chunk. Input packets are written field by field
 * (tests/lib/mqtt5_build.h); outputs are decoded with the codec. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_vbi.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_frame.h"
#include "tests/lib/mqtt5_build.h"
#include "tests/lib/proxy_wire.h"
#include "tests/lib/reload_fixture.h"

static wm_proxy_spatial *sp;
static wm_proxy_filter_shared fsh;
static wm_proxy_counters ctr;
static wm_proxy_session ss;
static wm_proxy_filter flt;
static wm_proxy_queue q[2];
static uint8_t qmem[2][8192], scratch[70000];

static void setup(void)
{
    static const char *const n1[] = { "sq1", "p_in", NULL };
    static const char *const n2[] = { "far", NULL };
    const wm_test_nbhd nb[] = { { "N1", n1 }, { "N2", n2 } };
    sp = wm_test_proxy_spatial("f.wmr", nb, 2);
    fsh = (wm_proxy_filter_shared){ .sp = sp, .max_records = 16 };
    wm_test_proxy_wire(&ss, 4096, &flt, &fsh, &ctr, q, qmem[0], sizeof qmem[0], scratch, sizeof scratch);
}

static void teardown(void)
{
    wm_proxy_filter_reset(&flt);
    wm_proxy_spatial_close(sp);
}

TestSuite(proxy_filter, .init = setup, .fini = teardown);

/* Feeds bytes from side dir, frames them; the framer must accept them. */
static void feed(int dir, const void *p, size_t n)
{
    cr_assert(wm_proxy_queue_append(&q[dir], p, (uint32_t)n));
    cr_assert_eq(wm_proxy_frame(&ss, dir, &q[dir]).verdict, WM_PROXY_FRAME_OK);
}

/* Takes the next framed packet of queue d (what the proxy sends on), decoded. */
static bool next(int d, wm_mqtt5_packet *pkt)
{
    return wm_test_proxy_next(&q[d], d, pkt);
}

static void drain_all(void)
{
    wm_mqtt5_packet p;
    for (int d = 0; d < 2; d++) while (next(d, &p)) {}
}

/* CONNECT with Topic Alias Maximum tam and Maximum Packet Size max_packet
 * (0: none), then the broker's CONNACK, with Subscription Identifier
 * Available sid_avail (-1: none). */
static void connect_with(uint16_t tam, uint32_t max_packet, int sid_avail)
{
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    wm_tb_str(&b, "MQTT"); wm_tb_u8(&b, 5); wm_tb_u8(&b, 0x02); wm_tb_u16(&b, 60);
    wm_tb_u8(&pr, 0x22); wm_tb_u16(&pr, tam);
    if (max_packet) { wm_tb_u8(&pr, 0x27); wm_tb_u16(&pr, (uint16_t)(max_packet >> 16)); wm_tb_u16(&pr, (uint16_t)max_packet); }
    wm_tb_props(&b, &pr);
    wm_tb_str(&b, "c");
    feed(WM_PROXY_C2U, out.b, wm_tb_packet(&out, 0x10, &b));
    wm_tb b2 = { 0 }, pr2 = { 0 }, out2 = { 0 };
    if (sid_avail >= 0) { wm_tb_u8(&pr2, 0x29); wm_tb_u8(&pr2, (uint8_t)sid_avail); }
    wm_tb_u8(&b2, 0); wm_tb_u8(&b2, 0); wm_tb_props(&b2, &pr2);
    feed(WM_PROXY_U2C, out2.b, wm_tb_packet(&out2, 0x20, &b2));
    drain_all();
}

static void connect_alias_max(uint16_t tam)
{
    connect_with(tam, 0, -1);
}

/* SUBSCRIBE id `pid` of filter with a `nbhd` property (NULL: none), then the
 * broker's SUBACK granting QoS 1. */
static void subscribe(uint16_t pid, const char *filter, const char *nbhd, bool grant)
{
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    wm_tb_u16(&b, pid);
    if (nbhd) { wm_tb_u8(&pr, 0x26); wm_tb_str(&pr, "nbhd"); wm_tb_str(&pr, nbhd); }
    wm_tb_props(&b, &pr);
    wm_tb_str(&b, filter); wm_tb_u8(&b, 1);
    feed(WM_PROXY_C2U, out.b, wm_tb_packet(&out, 0x82, &b));
    if (!grant) return;
    wm_tb a = { 0 }, apr = { 0 }, aout = { 0 };
    wm_tb_u16(&a, pid); wm_tb_props(&a, &apr); wm_tb_u8(&a, 1);
    feed(WM_PROXY_U2C, aout.b, wm_tb_packet(&aout, 0x90, &a));
}

/* A broker PUBLISH: topic (may be ""), alias (0 = none), one peid, one
 * Subscription Identifier, QoS and packet id. */
static size_t publish(wm_tb *out, const char *topic, uint16_t alias, const char *peid, uint32_t sid, int qos,
                      uint16_t pid)
{
    wm_tb b = { 0 }, pr = { 0 };
    wm_tb_str(&b, topic);
    if (qos) wm_tb_u16(&b, pid);
    if (sid) { wm_tb_u8(&pr, 0x0B); wm_tb_vbi(&pr, sid); }
    if (alias) { wm_tb_u8(&pr, 0x23); wm_tb_u16(&pr, alias); }
    if (peid) { wm_tb_u8(&pr, 0x26); wm_tb_str(&pr, "peid"); wm_tb_str(&pr, peid); }
    wm_tb_props(&b, &pr);
    wm_tb_raw(&b, "x", 1);
    memset(out, 0, sizeof *out);
    return wm_tb_packet(out, (uint8_t)(0x30 | qos << 1), &b);
}

/* Not derived from the neighborhood's index (N2 is index 1): the session's
 * first proxy identifier, so that a reload renumbering neighborhoods cannot
 * make two records share one. */
Test(proxy_filter, nbhd_subscribe_gets_the_next_proxy_identifier_of_the_session)
{
    connect_alias_max(4);
    subscribe(1, "t/#", "N2", true);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBSCRIBE);
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u, WM_PROXY_SID_BASE);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(ctr.filter_sid_added, 1);
}

/* A process's identifiers on the wire are turned by its epoch (the last
 * one here: the session's first goes out as 0x0FFFFFFE, its second wraps to
 * 0x0F000000), so a restarted proxy, whose sessions number again from the
 * start, never takes what the broker sends for an earlier process's first
 * subscription for its own. */
Test(proxy_filter, identifiers_on_the_wire_are_turned_by_the_process_epoch)
{
    fsh.sid_epoch = WM_PROXY_SID_SPAN - 1;
    connect_alias_max(4);
    subscribe(1, "t/#", "N1", true);
    subscribe(2, "u/#", "N1", true);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u, WM_PROXY_SID_PLAIN - 1);
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u, WM_PROXY_SID_BASE);
    drain_all();
    wm_tb a, b, c;
    size_t na = publish(&a, "t/a", 0, "p_in", WM_PROXY_SID_PLAIN - 1, 0, 0);  /* t/#: delivered */
    size_t nb = publish(&b, "t/b", 0, "p_in", WM_PROXY_SID_BASE, 0, 0);      /* u/#'s identifier on t/b: no record */
    size_t nc = publish(&c, "u/c", 0, "p_in", WM_PROXY_SID_BASE, 0, 0);      /* u/#: delivered */
    feed(WM_PROXY_U2C, a.b, na);
    feed(WM_PROXY_U2C, b.b, nb);
    feed(WM_PROXY_U2C, c.b, nc);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert(p.topic.len == 3 && memcmp(p.topic.p, "t/a", 3) == 0);
    cr_assert_not(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert(p.topic.len == 3 && memcmp(p.topic.p, "u/c", 3) == 0);
    cr_assert_not(next(WM_PROXY_U2C, &p));
    cr_assert_eq(ctr.filter_withheld[0], 1);
}

Test(proxy_filter, withheld_binding_makes_the_next_alias_only_publish_carry_its_topic)
{
    connect_alias_max(4);
    subscribe(1, "t/#", "N1", true);
    drain_all();
    uint32_t sid = WM_PROXY_SID_BASE + 0;
    wm_tb a, b, c;
    size_t na = publish(&a, "t/a", 1, "far", sid, 0, 0);    /* binds alias 1, outside N1: withheld */
    size_t nb = publish(&b, "", 1, "p_in", sid, 0, 0);      /* alias only, inside: must carry "t/a" */
    size_t nc = publish(&c, "", 1, "sq1", sid, 0, 0);       /* the client knows it now */
    feed(WM_PROXY_U2C, a.b, na);
    feed(WM_PROXY_U2C, b.b, nb);
    feed(WM_PROXY_U2C, c.b, nc);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.topic.len, 3);
    cr_assert(memcmp(p.topic.p, "t/a", 3) == 0);
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_TOPIC_ALIAS].u, 1);
    cr_assert_not(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.topic.len, 0, "the second alias-only PUBLISH stays alias-only");
    cr_assert_not(next(WM_PROXY_U2C, &p));
    cr_assert_eq(ctr.filter_alias_rewritten[WM_PROXY_U2C], 1);
    cr_assert_eq(ctr.filter_withheld[0], 1);
}

Test(proxy_filter, rebinding_a_known_alias_in_a_withheld_publish_is_not_lost)
{
    connect_alias_max(4);
    subscribe(1, "t/#", "N1", true);
    drain_all();
    uint32_t sid = WM_PROXY_SID_BASE + 0;
    wm_tb a, b, c;
    size_t na = publish(&a, "t/a", 2, "p_in", sid, 0, 0);   /* forwarded: the client binds 2 -> t/a */
    size_t nb = publish(&b, "t/b", 2, "far", sid, 0, 0);    /* withheld rebinding 2 -> t/b */
    size_t nc = publish(&c, "", 2, "p_in", sid, 0, 0);      /* means t/b: the client must be told */
    feed(WM_PROXY_U2C, a.b, na);
    feed(WM_PROXY_U2C, b.b, nb);
    feed(WM_PROXY_U2C, c.b, nc);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert(p.topic.len == 3 && memcmp(p.topic.p, "t/a", 3) == 0);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert(p.topic.len == 3 && memcmp(p.topic.p, "t/b", 3) == 0);
}

Test(proxy_filter, withheld_qos2_is_received_and_completed_for_the_client)
{
    connect_alias_max(0);
    subscribe(1, "t/#", "N1", true);
    drain_all();
    wm_tb a;
    size_t na = publish(&a, "t/q", 0, "far", WM_PROXY_SID_BASE, 2, 77);
    feed(WM_PROXY_U2C, a.b, na);
    wm_mqtt5_packet p;
    cr_assert_not(next(WM_PROXY_U2C, &p));
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBREC);
    cr_assert_eq(p.packet_id, 77);
    const uint8_t pubrel[] = { 0x62, 0x02, 0x00, 77 };
    feed(WM_PROXY_U2C, pubrel, sizeof pubrel);
    cr_assert_not(next(WM_PROXY_U2C, &p), "the PUBREL must not reach the client");
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBCOMP);
    cr_assert_eq(p.packet_id, 77);
    /* Another PUBREL (a packet id the client itself received) goes through. */
    const uint8_t pubrel2[] = { 0x62, 0x02, 0x00, 78 };
    feed(WM_PROXY_U2C, pubrel2, sizeof pubrel2);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBREL);
}

Test(proxy_filter, withheld_packets_inside_one_chunk_leave_the_others_intact)
{
    connect_alias_max(0);
    subscribe(1, "t/#", "N1", true);
    drain_all();
    uint8_t chunk[1024];
    size_t n = 0;
    const char *peid[] = { "p_in", "far", "far", "sq1", "far", "p_in" };
    for (int i = 0; i < 6; i++) {
        wm_tb t;
        size_t k = publish(&t, "t/x", 0, peid[i], WM_PROXY_SID_BASE, 1, (uint16_t)(i + 1));
        memcpy(chunk + n, t.b, k);
        n += k;
    }
    feed(WM_PROXY_U2C, chunk, n - 5);   /* the last one incomplete */
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p)); cr_assert_eq(p.packet_id, 1);
    cr_assert(next(WM_PROXY_U2C, &p)); cr_assert_eq(p.packet_id, 4);
    cr_assert_not(next(WM_PROXY_U2C, &p));
    feed(WM_PROXY_U2C, chunk + n - 5, 5);
    cr_assert(next(WM_PROXY_U2C, &p)); cr_assert_eq(p.packet_id, 6);
    /* The proxy's PUBACKs for 2, 3 and 5 wait behind the client's for 1 and 4
     * (MQTT 5.0 [MQTT-4.6.0-2], dataplane/proxy_answers.h); the client's come
     * in one chunk, each followed by those due after it. */
    cr_assert_not(next(WM_PROXY_C2U, &p), "a PUBACK of the proxy overtook the client's");
    const uint8_t acks[] = { 0x40, 0x02, 0x00, 1, 0x40, 0x02, 0x00, 4, 0x40, 0x02, 0x00, 6 };
    feed(WM_PROXY_C2U, acks, sizeof acks);
    for (uint16_t id = 1; id <= 6; id++) {
        cr_assert(next(WM_PROXY_C2U, &p));
        cr_assert_eq(p.type, WM_MQTT5_PUBACK);
        cr_assert_eq(p.packet_id, id);
    }
    cr_assert_not(next(WM_PROXY_C2U, &p));
    cr_assert_eq(ctr.filter_withheld[1], 3);
    cr_assert_eq(ctr.filter_acks_waited, 3);
}

Test(proxy_filter, unknown_neighborhood_is_refused_by_the_proxy_alone)
{
    connect_alias_max(0);
    subscribe(9, "t/#", "nowhere", false);
    wm_mqtt5_packet p;
    cr_assert_not(next(WM_PROXY_C2U, &p), "the SUBSCRIBE must not reach the broker");
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(p.packet_id, 9);
    cr_assert_eq(p.count, 1);
    cr_assert_eq(p.payload.p[0], 0x80);
    cr_assert(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_REASON_STRING));
    cr_assert_eq(ctr.filter_suback_unknown_nbhd, 1);
}

Test(proxy_filter, refused_filter_is_forgotten_and_plain_deliveries_pass)
{
    connect_alias_max(0);
    subscribe(1, "t/#", "N1", false);
    wm_tb a = { 0 }, apr = { 0 }, aout = { 0 };
    wm_tb_u16(&a, 1); wm_tb_props(&a, &apr); wm_tb_u8(&a, 0x87);   /* broker: not authorized */
    feed(WM_PROXY_U2C, aout.b, wm_tb_packet(&aout, 0x90, &a));
    subscribe(2, "u/#", NULL, true);
    drain_all();
    wm_tb t;
    size_t k = publish(&t, "u/1", 0, "far", WM_PROXY_SID_PLAIN, 0, 0);
    feed(WM_PROXY_U2C, t.b, k);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_not(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));
    cr_assert_eq(ctr.filter_withheld[0], 0);
}

Test(proxy_filter, refusal_of_more_than_512_filters_is_one_suback_with_a_code_each)
{
    connect_alias_max(0);
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    wm_tb_u16(&b, 7);
    wm_tb_u8(&pr, 0x26); wm_tb_str(&pr, "nbhd"); wm_tb_str(&pr, "nowhere");
    wm_tb_props(&b, &pr);
    for (int i = 0; i < 1000; i++) { wm_tb_str(&b, "a"); wm_tb_u8(&b, 1); }
    feed(WM_PROXY_C2U, out.b, wm_tb_packet(&out, 0x82, &b));
    wm_mqtt5_packet p;
    cr_assert_not(next(WM_PROXY_C2U, &p));
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(p.packet_id, 7);
    cr_assert_eq(p.count, 1000);
    for (int i = 0; i < 1000; i++) cr_assert_eq(p.payload.p[i], 0x80);
    cr_assert_eq(ctr.filter_failed, 0);
}

Test(proxy_filter, broker_without_identifiers_nbhd_subscribe_refused_0xA1_plain_forwarded_unchanged)
{
    connect_with(0, 0, 0);
    subscribe(3, "t/#", "N1", false);
    wm_mqtt5_packet p;
    cr_assert_not(next(WM_PROXY_C2U, &p), "the SUBSCRIBE must not reach the broker");
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(p.packet_id, 3);
    cr_assert_eq(p.payload.p[0], 0xA1);
    cr_assert(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_REASON_STRING));
    cr_assert_eq(ctr.filter_sid_unavailable, 1);
    subscribe(4, "u/#", NULL, true);
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBSCRIBE);
    cr_assert_not(wm_mqtt5_props_has(&p.props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));
    cr_assert_eq(ctr.filter_sid_added, 0);
    drain_all();
    wm_tb t;
    size_t k = publish(&t, "u/1", 0, "far", 0, 0, 0);
    feed(WM_PROXY_U2C, t.b, k);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBLISH);
}

Test(proxy_filter, restored_topic_over_the_client_maximum_packet_size_is_discarded_and_acked)
{
    connect_with(4, 60, -1);
    subscribe(1, "t/#", "N1", true);
    drain_all();
    uint32_t sid = WM_PROXY_SID_BASE + 0;
    char topic[31];
    memset(topic, 'x', 30);
    topic[0] = 't'; topic[1] = '/'; topic[30] = 0;
    wm_tb a, b = { 0 }, bb = { 0 }, bpr = { 0 }, c;
    size_t na = publish(&a, topic, 1, "far", sid, 1, 5);    /* binds alias 1, outside N1: withheld */
    /* Inside N1, alias only, with a padding User Property: 47 bytes as
     * sent, 77 with its topic back. */
    wm_tb_str(&bb, ""); wm_tb_u16(&bb, 6);
    wm_tb_u8(&bpr, 0x0B); wm_tb_vbi(&bpr, sid);
    wm_tb_u8(&bpr, 0x23); wm_tb_u16(&bpr, 1);
    wm_tb_u8(&bpr, 0x26); wm_tb_str(&bpr, "peid"); wm_tb_str(&bpr, "p_in");
    wm_tb_u8(&bpr, 0x26); wm_tb_str(&bpr, "pad"); wm_tb_str(&bpr, "0123456789");
    wm_tb_props(&bb, &bpr);
    wm_tb_raw(&bb, "x", 1);
    size_t nb = wm_tb_packet(&b, 0x32, &bb);
    size_t nc = publish(&c, "", 2, "p_in", sid, 0, 0);      /* unrelated alias: unknown, passes as is */
    cr_assert_leq(na, 60);
    cr_assert_leq(nb, 60);
    cr_assert_gt(nb + 30, 60);
    feed(WM_PROXY_U2C, a.b, na);
    feed(WM_PROXY_U2C, b.b, nb);
    feed(WM_PROXY_U2C, c.b, nc);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_TOPIC_ALIAS].u, 2, "the oversized delivery must not reach the client");
    cr_assert_not(next(WM_PROXY_U2C, &p));
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBACK);
    cr_assert_eq(p.packet_id, 5);
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBACK);
    cr_assert_eq(p.packet_id, 6);
    cr_assert_eq(ctr.filter_too_large, 1);
    cr_assert_eq(ctr.filter_withheld[1], 2);
}

Test(proxy_filter, subscribe_over_the_broker_maximum_packet_size_with_the_identifier_is_refused_by_the_proxy)
{
    /* CONNACK with Maximum Packet Size 30. */
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    wm_tb_str(&b, "MQTT"); wm_tb_u8(&b, 5); wm_tb_u8(&b, 0x02); wm_tb_u16(&b, 60);
    wm_tb_props(&b, &pr);
    wm_tb_str(&b, "c");
    feed(WM_PROXY_C2U, out.b, wm_tb_packet(&out, 0x10, &b));
    wm_tb b2 = { 0 }, pr2 = { 0 }, out2 = { 0 };
    wm_tb_u8(&pr2, 0x27); wm_tb_u16(&pr2, 0); wm_tb_u16(&pr2, 30);
    wm_tb_u8(&b2, 0); wm_tb_u8(&b2, 0); wm_tb_props(&b2, &pr2);
    feed(WM_PROXY_U2C, out2.b, wm_tb_packet(&out2, 0x20, &b2));
    drain_all();
    subscribe(2, "t/34567890", "N1", false);   /* 29 bytes; 34 with the proxy's identifier */
    wm_mqtt5_packet p;
    cr_assert_not(next(WM_PROXY_C2U, &p), "the SUBSCRIBE must not reach the broker");
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(p.packet_id, 2);
    cr_assert_eq(p.payload.p[0], 0x83);
    cr_assert_eq(ctr.filter_too_large, 1);
    cr_assert_eq(ctr.filter_nbhd_subscribes, 0);
    subscribe(3, "t/3", "N1", false);           /* 22 + 5 bytes: fits */
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBSCRIBE);
    /* the refused SUBSCRIBE used the first one (identifiers are never handed out twice) */
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u, WM_PROXY_SID_BASE + 1);
}

/* A client that pipelines (§3.1.4): CONNECT, a SUBSCRIBE the proxy refuses
 * and a PUBLISH in one chunk. Nothing after the CONNECT is framed until the
 * broker's CONNACK, so the refusal follows the CONNACK ([MQTT-3.2.0-1]) and
 * the SUBSCRIBE is judged with the CONNACK's Subscription Identifier
 * Available 0 (0xA1, not an identifier added for a broker without them). */
static size_t pipelined(wm_tb *out)
{
    wm_tb c = { 0 }, cb = { 0 }, cpr = { 0 }, s = { 0 }, sb = { 0 }, spr = { 0 }, p = { 0 }, pb = { 0 }, ppr = { 0 };
    wm_tb_str(&cb, "MQTT"); wm_tb_u8(&cb, 5); wm_tb_u8(&cb, 0x02); wm_tb_u16(&cb, 60);
    wm_tb_props(&cb, &cpr); wm_tb_str(&cb, "c");
    size_t n = wm_tb_packet(&c, 0x10, &cb);
    wm_tb_u16(&sb, 4);
    wm_tb_u8(&spr, 0x26); wm_tb_str(&spr, "nbhd"); wm_tb_str(&spr, "N1");
    wm_tb_props(&sb, &spr); wm_tb_str(&sb, "t/#"); wm_tb_u8(&sb, 1);
    size_t ns = wm_tb_packet(&s, 0x82, &sb);
    wm_tb_str(&pb, "t/1"); wm_tb_props(&pb, &ppr); wm_tb_raw(&pb, "x", 1);
    size_t np = wm_tb_packet(&p, 0x30, &pb);
    *out = (wm_tb){ 0 };
    wm_tb_raw(out, c.b, n); wm_tb_raw(out, s.b, ns); wm_tb_raw(out, p.b, np);
    return n + ns + np;
}

static wm_proxy_frame_result connack(uint8_t code, int sid_avail)
{
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    if (sid_avail >= 0) { wm_tb_u8(&pr, 0x29); wm_tb_u8(&pr, (uint8_t)sid_avail); }
    wm_tb_u8(&b, 0); wm_tb_u8(&b, code); wm_tb_props(&b, &pr);
    size_t n = wm_tb_packet(&out, 0x20, &b);
    cr_assert(wm_proxy_queue_append(&q[WM_PROXY_U2C], out.b, (uint32_t)n));
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_U2C, &q[WM_PROXY_U2C]);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    return r;
}

Test(proxy_filter, packets_pipelined_after_connect_wait_for_the_connack_and_are_judged_with_it)
{
    wm_tb in;
    feed(WM_PROXY_C2U, in.b, pipelined(&in));
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_CONNECT);
    cr_assert_not(next(WM_PROXY_C2U, &p), "nothing after the CONNECT goes on before the CONNACK");
    cr_assert_not(next(WM_PROXY_U2C, &p), "nothing from the proxy before the CONNACK");
    cr_assert(wm_proxy_session_holding(&ss));
    cr_assert(connack(0, 0).connack);
    cr_assert_not(wm_proxy_session_holding(&ss));
    cr_assert_eq(wm_proxy_frame(&ss, WM_PROXY_C2U, &q[WM_PROXY_C2U]).verdict, WM_PROXY_FRAME_OK);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_CONNACK);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_SUBACK);
    cr_assert_eq(p.payload.p[0], 0xA1, "judged with the CONNACK's Subscription Identifier Available 0");
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBLISH);
    cr_assert_not(next(WM_PROXY_C2U, &p));
}

Test(proxy_filter, packets_pipelined_by_a_client_the_broker_refuses_are_never_framed)
{
    wm_tb in;
    feed(WM_PROXY_C2U, in.b, pipelined(&in));
    drain_all();
    cr_assert(connack(0x87, -1).connack);
    cr_assert(wm_proxy_session_holding(&ss), "after a refusing CONNACK the rest stays held");
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q[WM_PROXY_C2U]);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_assert_eq(r.packets, 0);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_CONNACK);
    cr_assert_not(next(WM_PROXY_U2C, &p), "no SUBACK for a refused client");
    cr_assert_not(next(WM_PROXY_C2U, &p));
    cr_assert_eq(ctr.filter_sid_unavailable + ctr.filter_nbhd_subscribes, 0);
}

Test(proxy_filter, auth_before_the_connack_goes_on_while_the_rest_is_held)
{
    wm_tb c = { 0 }, cb = { 0 }, cpr = { 0 }, a = { 0 }, ab = { 0 }, in = { 0 };
    wm_tb_str(&cb, "MQTT"); wm_tb_u8(&cb, 5); wm_tb_u8(&cb, 0x02); wm_tb_u16(&cb, 60);
    wm_tb_u8(&cpr, 0x15); wm_tb_str(&cpr, "SCRAM-SHA-1");   /* Authentication Method: §4.12 */
    wm_tb_props(&cb, &cpr); wm_tb_str(&cb, "c");
    size_t n = wm_tb_packet(&c, 0x10, &cb);
    wm_tb_u8(&ab, 0x18); wm_tb_props(&ab, &cpr);   /* AUTH: Continue authentication, its Method (§3.15.2.2.2) */
    size_t na = wm_tb_packet(&a, 0xF0, &ab);
    wm_tb_raw(&in, c.b, n); wm_tb_raw(&in, a.b, na); wm_tb_raw(&in, "\xc0\x00", 2);   /* + PINGREQ */
    feed(WM_PROXY_C2U, in.b, n + na + 2);
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_CONNECT);
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.type, WM_MQTT5_AUTH);
    cr_assert_not(next(WM_PROXY_C2U, &p), "the PINGREQ waits for the CONNACK");
}

/* The client's Maximum Packet Size 60 goes to the broker as 65: the broker
 * counts the proxy's identifier (WM_PROXY_SID_ROOM) that the client never
 * sees, so a message that reaches the client within 60 bytes is not dropped
 * by the broker; what is over 60 once rewritten is the proxy's to discard. */
Test(proxy_filter, client_maximum_packet_size_goes_to_the_broker_with_room_for_the_proxy_identifier)
{
    wm_tb b = { 0 }, pr = { 0 }, out = { 0 };
    wm_tb_str(&b, "MQTT"); wm_tb_u8(&b, 5); wm_tb_u8(&b, 0x02); wm_tb_u16(&b, 60);
    wm_tb_u8(&pr, 0x27); wm_tb_u16(&pr, 0); wm_tb_u16(&pr, 60);
    wm_tb_props(&b, &pr);
    wm_tb_str(&b, "c");
    feed(WM_PROXY_C2U, out.b, wm_tb_packet(&out, 0x10, &b));
    wm_mqtt5_packet p;
    cr_assert(next(WM_PROXY_C2U, &p));
    cr_assert_eq(p.props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u, 60 + WM_PROXY_SID_ROOM);
    cr_assert(connack(0, -1).connack);
    drain_all();
    subscribe(1, "t/#", NULL, true);   /* plain: the proxy's plain identifier added */
    drain_all();
    char topic[80];
    /* 64 bytes from the broker with the plain identifier: 59 for the client, forwarded */
    memset(topic, 'a', sizeof topic); topic[1] = '/'; topic[0] = 't'; topic[51] = 0;
    wm_tb t;
    size_t n = publish(&t, topic, 0, NULL, WM_PROXY_SID_PLAIN, 1, 7);
    cr_assert_eq(n, 64);
    feed(WM_PROXY_U2C, t.b, n);
    cr_assert(next(WM_PROXY_U2C, &p));
    cr_assert_eq(p.type, WM_MQTT5_PUBLISH);
    cr_assert_eq(p.packet_id, 7);
    cr_assert_eq(1 + wm_mqtt5_vbi_size(p.remaining_length) + p.remaining_length, 59);
    /* 62 bytes without any identifier (a subscription the proxy never saw): over the client's 60 */
    topic[51] = 'a'; topic[41] = 0;
    n = publish(&t, topic, 0, "p_in", 0, 1, 8);
    cr_assert_eq(n, 62);
    feed(WM_PROXY_U2C, t.b, n);
    cr_assert_not(next(WM_PROXY_U2C, &p), "over the client's own Maximum Packet Size");
    /* its PUBACK follows the client's for 7 (MQTT 5.0 [MQTT-4.6.0-2], dataplane/proxy_answers.h) */
    cr_assert_not(next(WM_PROXY_C2U, &p), "the proxy's PUBACK 8 overtook the client's PUBACK 7");
    const uint8_t puback7[] = { 0x40, 0x02, 0x00, 7 };
    feed(WM_PROXY_C2U, puback7, sizeof puback7);
    for (uint16_t id = 7; id <= 8; id++) {
        cr_assert(next(WM_PROXY_C2U, &p));
        cr_assert_eq(p.type, WM_MQTT5_PUBACK);
        cr_assert_eq(p.packet_id, id);
    }
    cr_assert_eq(ctr.filter_too_large, 1);
}
