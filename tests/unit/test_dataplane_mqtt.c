/* The MQTT v5 session layer on top of the flow table, driven by crafted
 * Ethernet frames whose TCP payloads are MQTT bytes built field by field
 * (tests/lib/mqtt5_build.h): packets split at every byte (inside the fixed
 * header too), several packets per segment, reordering, topic aliases across
 * segments, SUBSCRIBE learning, malformed MQTT, other protocol versions, RST
 * and loss inside a packet, and the bounds (packet size, staging); the
 * session model: SUBACK/UNSUBACK, session lifetime, CONNACK limits, QoS 2,
 * Wills and their delay (in the test's packet time, now_ns). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/match_sink.h"
#include "dataplane/mqtt_session.h"
#include "dataplane/qos2_store.h"
#include "dataplane/pkt_path.h"
#include "tests/lib/mqtt5_build.h"
#include "tests/lib/pkt_craft.h"

/* ------------------------------------------------------------ recording sink */

struct ev_pub {
    char client[64], topic[300];
    char peids[4][32];
    uint32_t n_peids;
    uint64_t seq;
    bool will;
    char ctype[64], payload[64];
    uint8_t qos, retain;
    int n_sess_before; /* session events reported before it */
};
struct ev_sub {
    char client[64], filter[64], nbhd[32];
    uint32_t subid;
    int unsub;
};

static struct ev_pub pubs[64];
static int n_pubs;
static int n_sess;
static struct ev_sub subs[64];
static int n_subs;

static void cp(char *dst, size_t cap, const void *src, size_t n)
{
    cr_assert(n < cap);
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

static enum wm_mqtt_pub_outcome sink_publish(void *ctx, const struct wm_mqtt_publish *p)
{
    cr_assert(n_pubs < 64);
    struct ev_pub *e = &pubs[n_pubs++];
    cp(e->client, sizeof e->client, p->client, p->client_len);
    cp(e->topic, sizeof e->topic, p->topic, p->topic_len);
    e->n_peids = p->n_peids;
    for (uint32_t i = 0; i < p->n_peids && i < 4; i++) cp(e->peids[i], 32, p->peids[i].p, p->peids[i].len);
    e->seq = p->seq;
    e->will = p->will;
    const wm_mqtt5_props *pr = &p->pkt->props;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_CONTENT_TYPE))
        cp(e->ctype, sizeof e->ctype, pr->v[WM_MQTT5_PROP_CONTENT_TYPE].s.p, pr->v[WM_MQTT5_PROP_CONTENT_TYPE].s.len);
    else
        e->ctype[0] = 0;
    cp(e->payload, sizeof e->payload, p->pkt->payload.p, p->pkt->payload.len < 63 ? p->pkt->payload.len : 63);
    e->qos = p->pkt->qos;
    e->retain = p->pkt->retain;
    e->n_sess_before = n_sess;
    /* The test's rule: topics under m/ match. */
    return strncmp(e->topic, "m/", 2) == 0 ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH;
}

static enum wm_mqtt_sub_status record_sub(const struct wm_mqtt_subscribe *s, int unsub)
{
    cr_assert(n_subs < 64);
    struct ev_sub *e = &subs[n_subs++];
    cp(e->client, sizeof e->client, s->client, s->client_len);
    cp(e->filter, sizeof e->filter, s->filter.p, s->filter.len);
    cp(e->nbhd, sizeof e->nbhd, s->nbhd.p, s->nbhd.len);
    e->subid = s->subscription_id;
    e->unsub = unsub;
    return strcmp(e->nbhd, "nowhere") == 0 ? WM_MQTT_SUB_NBHD_UNKNOWN : WM_MQTT_SUB_INSTALLED;
}
static enum wm_mqtt_sub_status sink_subscribe(void *ctx, const struct wm_mqtt_subscribe *s) { return record_sub(s, 0); }
static void sink_unsubscribe(void *ctx, const struct wm_mqtt_subscribe *s) { record_sub(s, 1); }

struct ev_sess {
    enum wm_mqtt_session_kind kind;
    char client[64];
    uint32_t expiry_s;
    uint64_t conn;
};
static struct ev_sess sess[16];
static uint16_t resume_qos2 = 0; /* a packet id the sink hands back at RESUME (0: none) */

static void sink_session(void *ctx, const struct wm_mqtt_session_event *e)
{
    if (n_sess == 16) return; /* tests that open many connections do not look */
    struct ev_sess *x = &sess[n_sess++];
    x->kind = e->kind;
    cp(x->client, sizeof x->client, e->client, e->client_len);
    x->expiry_s = e->expiry_s;
    x->conn = e->conn;
    if (e->kind == WM_MQTT_SESSION_RESUME && resume_qos2) {
        e->qos2[0] = resume_qos2;
        *e->n_qos2 = 1;
    }
}

static const struct wm_mqtt_sink sink = {sink_subscribe, sink_unsubscribe, sink_publish, NULL, sink_session};

/* ------------------------------------------------------------ fixture */

static struct wm_pkt_path path;
static struct wm_mqtt_layer layer;
static void *path_mem, *layer_mem;
static uint64_t now_ns = 1000000000ull;
/* The worker frames go to: the fixture's, or a second one (two workers). */
static struct wm_pkt_path *cur_path = &path;
static struct wm_mqtt_layer *cur_layer = &layer;

static void setup_with(uint32_t max_packet, uint32_t staging)
{
    struct wm_mqtt_config mc;
    wm_mqtt_config_default(&mc);
    mc.max_packet = max_packet;
    mc.staging_buffers = staging;
    mc.alias_slots = 16;
    free(layer_mem);
    layer_mem = malloc(wm_mqtt_layer_memsize(&mc));
    cr_assert_eq(wm_mqtt_layer_init(&layer, layer_mem, &mc, &sink), 0);
    struct wm_pkt_path_config pc = {.mqtt_ports = {1883}, .n_ports = 1};
    wm_flow_table_config_default(&pc.flows);
    pc.flows.max_flows = 64;
    pc.flows.ooo_pool_blocks = 64;
    pc.flows.user_size = (uint32_t)wm_mqtt_session_size();
    free(path_mem);
    cr_assert_eq(posix_memalign(&path_mem, 64, wm_pkt_path_memsize(&pc)), 0);
    cr_assert_eq(wm_pkt_path_init(&path, path_mem, &pc, &wm_mqtt_stream_ops, &layer), 0);
    n_pubs = n_subs = n_sess = 0;
    resume_qos2 = 0;
    cur_path = &path;
    cur_layer = &layer;
}
static void setup(void) { setup_with(65536, 8); }
static void teardown(void)
{
    free(path_mem);
    free(layer_mem);
    path_mem = layer_mem = NULL;
}

/* Re-initialises the layer (the path keeps pointing at it) with the
 * default bounds except these (0: default). */
static void layer_with(uint32_t pending_subscribes, uint32_t wills, uint32_t will_max)
{
    struct wm_mqtt_config mc;
    wm_mqtt_config_default(&mc);
    mc.alias_slots = 16;
    if (pending_subscribes) mc.pending_subscribes = pending_subscribes;
    if (wills) mc.wills = wills;
    if (will_max) mc.will_max = will_max;
    free(layer_mem);
    layer_mem = malloc(wm_mqtt_layer_memsize(&mc));
    cr_assert_eq(wm_mqtt_layer_init(&layer, layer_mem, &mc, &sink), 0);
}

/* The outcome sums hold once every stream has ended. */
static void assert_publish_conservation(void)
{
    wm_flow_table_flush(&path.flows);
    wm_mqtt_layer_finish(&layer);
    cr_assert(wm_mqtt_publish_conserved(&layer.c), "publish seen %lu, outcomes do not sum to it",
              (unsigned long)layer.c.publish_seen);
    cr_assert(wm_pkt_path_check_conservation(&path));
    cr_assert_eq(layer.stage_free_n, layer.cfg.staging_buffers, "staging buffers leaked");
    cr_assert_eq(layer.alias_free_n, layer.cfg.alias_slots, "alias slots leaked");
    cr_assert_eq(layer.pending_n, 0, "pending SUBSCRIBEs leaked");
}

struct conv {
    struct wm_craft c, s;
    uint32_t cisn, sisn, coff, soff;
};

static uint8_t frame[16384];

static void send_seg(const struct wm_craft *ep, uint32_t seq, uint32_t ack, uint8_t flags, const void *p, size_t n)
{
    size_t len = wm_craft_frame(frame, sizeof frame, ep, seq, ack, flags, p, n);
    cr_assert(len > 0);
    now_ns += 1000;
    cur_layer->now_ns = now_ns; /* as the worker sets it before each frame */
    cr_assert_eq(wm_pkt_path_frame(cur_path, frame, len, now_ns, NULL), WM_PKT_TCP);
}

static void open_conv(struct conv *v, uint16_t cport)
{
    memset(v, 0, sizeof *v);
    wm_craft_ip4(&v->c, "192.0.2.10", cport, "192.0.2.1", 1883);
    v->s = wm_craft_reverse(&v->c);
    v->cisn = 1000u * cport;
    v->sisn = 77;
    send_seg(&v->c, v->cisn, 0, WM_TCP_SYN, NULL, 0);
    send_seg(&v->s, v->sisn, v->cisn + 1, WM_TCP_SYN | WM_TCP_ACK, NULL, 0);
}

/* Client bytes at the next stream offset (or at off if given >= 0). */
static void c2s_at(struct conv *v, uint32_t off, const void *p, size_t n)
{
    send_seg(&v->c, v->cisn + 1 + off, v->sisn + 1, WM_TCP_ACK | WM_TCP_PSH, p, n);
}
static void c2s(struct conv *v, const void *p, size_t n)
{
    c2s_at(v, v->coff, p, n);
    v->coff += (uint32_t)n;
}
static void s2c(struct conv *v, const void *p, size_t n)
{
    send_seg(&v->s, v->sisn + 1 + v->soff, v->cisn + 1 + v->coff, WM_TCP_ACK | WM_TCP_PSH, p, n);
    v->soff += (uint32_t)n;
}

/* ------------------------------------------------------------ MQTT bytes */

static size_t connect_pkt(uint8_t *out, const char *client, uint8_t version)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_str(&body, "MQTT");
    wm_tb_u8(&body, version);
    wm_tb_u8(&body, 0x02);
    wm_tb_u16(&body, 60);
    if (version == 5) wm_tb_props(&body, &props);
    wm_tb_str(&body, client);
    size_t n = wm_tb_packet(&pkt, 0x10, &body);
    memcpy(out, pkt.b, n);
    return n;
}

/* A successful CONNACK; the broker allows 64 topic aliases (beyond what the
 * layer follows), and adds the properties in extra (raw bytes). */
static size_t connack_props(uint8_t *out, const char *assigned, bool present, const void *extra, size_t extra_n)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u8(&body, present);
    wm_tb_u8(&body, 0);
    if (assigned) {
        wm_tb_u8(&props, 0x12);
        wm_tb_str(&props, assigned);
    }
    if (!extra_n) {
        wm_tb_u8(&props, 0x22);
        wm_tb_u16(&props, 64);
    }
    wm_tb_raw(&props, extra, extra_n);
    wm_tb_props(&body, &props);
    size_t n = wm_tb_packet(&pkt, 0x20, &body);
    memcpy(out, pkt.b, n);
    return n;
}

static size_t connack_pkt(uint8_t *out, const char *assigned) { return connack_props(out, assigned, false, NULL, 0); }

/* A SUBACK for packet id pid with n reason codes. */
static size_t suback_pkt(uint8_t *out, uint16_t pid, const uint8_t *codes, size_t n)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u16(&body, pid);
    wm_tb_props(&body, &props);
    wm_tb_raw(&body, codes, n);
    size_t len = wm_tb_packet(&pkt, 0x90, &body);
    memcpy(out, pkt.b, len);
    return len;
}

static size_t publish_pkt(uint8_t *out, const char *topic, uint16_t alias, const char *peid1, const char *peid2,
                          size_t payload_len)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_str(&body, topic);
    wm_tb_u16(&body, 9); /* QoS 1 packet identifier */
    if (alias) {
        wm_tb_u8(&props, 0x23);
        wm_tb_u16(&props, alias);
    }
    const char *peids[2] = {peid1, peid2};
    for (int i = 0; i < 2; i++) {
        if (!peids[i]) continue;
        wm_tb_u8(&props, 0x26);
        wm_tb_str(&props, "peid");
        wm_tb_str(&props, peids[i]);
    }
    wm_tb_props(&body, &props);
    for (size_t i = 0; i < payload_len; i++) wm_tb_u8(&body, (uint8_t)('a' + i % 26));
    size_t n = wm_tb_packet(&pkt, 0x32, &body);
    memcpy(out, pkt.b, n);
    return n;
}

static size_t subscribe_pkt(uint8_t *out, uint32_t subid, const char *nbhd, const char *f1, const char *f2)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u16(&body, 3);
    if (subid) {
        wm_tb_u8(&props, 0x0b);
        wm_tb_vbi(&props, subid);
    }
    if (nbhd) {
        wm_tb_u8(&props, 0x26);
        wm_tb_str(&props, "nbhd");
        wm_tb_str(&props, nbhd);
    }
    wm_tb_props(&body, &props);
    wm_tb_str(&body, f1);
    wm_tb_u8(&body, 1);
    if (f2) {
        wm_tb_str(&body, f2);
        wm_tb_u8(&body, 0);
    }
    size_t n = wm_tb_packet(&pkt, 0x82, &body);
    memcpy(out, pkt.b, n);
    return n;
}

static size_t unsubscribe_pkt(uint8_t *out, const char *f)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u16(&body, 4);
    wm_tb_props(&body, &props);
    wm_tb_str(&body, f);
    size_t n = wm_tb_packet(&pkt, 0xa2, &body);
    memcpy(out, pkt.b, n);
    return n;
}

/* An UNSUBACK for packet id pid with n reason codes. */
static size_t unsuback_pkt(uint8_t *out, uint16_t pid, const uint8_t *codes, size_t n)
{
    size_t len = suback_pkt(out, pid, codes, n);
    out[0] = 0xb0;
    return len;
}

/* An UNSUBSCRIBE (packet id pid) of n filters. */
static size_t unsubscribe_n(uint8_t *out, uint16_t pid, const char *const *f, int n)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u16(&body, pid);
    wm_tb_props(&body, &props);
    for (int i = 0; i < n; i++) wm_tb_str(&body, f[i]);
    size_t len = wm_tb_packet(&pkt, 0xa2, &body);
    memcpy(out, pkt.b, len);
    return len;
}

static void connect_as(struct conv *v, uint16_t port, const char *client)
{
    uint8_t b[256];
    open_conv(v, port);
    c2s(v, b, connect_pkt(b, client, 5));
    s2c(v, b, connack_pkt(b, NULL));
}

/* ------------------------------------------------------------ tests */

TestSuite(mqtt, .init = setup, .fini = teardown);

Test(mqtt, several_packets_in_one_segment_are_decoded_in_place)
{
    struct conv v;
    open_conv(&v, 50000);
    uint8_t seg[1024];
    size_t n = connect_pkt(seg, "car-1", 5);
    n += publish_pkt(seg + n, "m/road/1", 0, "road-1", NULL, 20);
    n += publish_pkt(seg + n, "x/road/2", 0, "road-2", "road-3", 20);
    seg[n++] = 0xc0; /* PINGREQ */
    seg[n++] = 0x00;
    c2s(&v, seg, n);
    cr_assert_eq(layer.c.connect_v5, 1);
    cr_assert_eq(layer.c.zero_copy_packets, 4);
    cr_assert_eq(layer.c.staged_packets, 0);
    cr_assert_eq(n_pubs, 0, "PUBLISHes before the CONNACK wait for it (§3.1.4)");
    cr_assert_eq(layer.c.publish_held, 2);
    uint8_t b[64];
    s2c(&v, b, connack_pkt(b, NULL));
    cr_assert_eq(n_pubs, 2);
    cr_assert_str_eq(pubs[0].client, "car-1");
    cr_assert_str_eq(pubs[0].topic, "m/road/1");
    cr_assert_str_eq(pubs[0].peids[0], "road-1");
    cr_assert_eq(pubs[1].n_peids, 2);
    cr_assert_str_eq(pubs[1].peids[1], "road-3");
    cr_assert_eq(pubs[1].seq, pubs[0].seq + 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MATCHED], 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_NO_MATCH], 1);
    cr_assert_eq(layer.c.packets[WM_DIR_C2S][12], 1, "PINGREQ counted");
    assert_publish_conservation();
}

/* A copy of a segment with a wrong IPv4 header checksum (damaged on the way,
 * or injected on the path) comes before the true one at the same sequence
 * number: it is dropped as ip4_bad_checksum, so the true segment is the
 * stream's bytes rather than a "duplicate" of the first copy. A frame the
 * NIC marks bad (wm_pkt_path_hw_bad) is counted once and parsed not at all. */
Test(mqtt, a_bad_ipv4_checksum_copy_does_not_replace_the_true_segment)
{
    struct conv v;
    open_conv(&v, 50001);
    uint8_t seg[256], evil[256];
    size_t n = connect_pkt(seg, "car-1", 5);
    c2s(&v, seg, n);
    s2c(&v, evil, connack_pkt(evil, NULL));
    size_t ne = publish_pkt(evil, "m/evil", 0, "road-1", NULL, 20);
    n = publish_pkt(seg, "m/good", 0, "road-1", NULL, 20);
    cr_assert_eq(ne, n);
    size_t len = wm_craft_frame(frame, sizeof frame, &v.c, v.cisn + 1 + v.coff, v.sisn + 1, WM_TCP_ACK | WM_TCP_PSH,
                                evil, ne);
    frame[14 + 10] ^= 0x5a;
    cr_assert_eq(wm_pkt_path_frame(&path, frame, len, now_ns, NULL), WM_PKT_IP4_BAD_CHECKSUM);
    c2s(&v, seg, n);
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/good");
    cr_assert_eq(path.c.verdict[WM_PKT_IP4_BAD_CHECKSUM], 1);
    cr_assert_eq(path.flows.c.disposition[WM_SD_DUPLICATE], 0);
    wm_pkt_path_hw_bad(&path, 60, WM_PKT_L4_BAD_CHECKSUM_HW);
    wm_pkt_path_hw_bad(&path, 60, WM_PKT_IP4_BAD_CHECKSUM);
    cr_assert_eq(path.c.verdict[WM_PKT_IP4_BAD_CHECKSUM], 2);
    cr_assert_eq(path.c.verdict[WM_PKT_L4_BAD_CHECKSUM_HW], 1);
    assert_publish_conservation();
}

Test(mqtt, a_publish_split_at_every_byte)
{
    uint8_t pub[512];
    /* > 127 bytes: a 2-byte Remaining Length, so splits fall inside it too. */
    size_t n = publish_pkt(pub, "m/road/segment/42", 0, "road-42", NULL, 150);
    cr_assert_gt(n, 130);
    cr_assert_eq(pub[1] & 0x80, 0x80, "two-byte Remaining Length");
    for (size_t k = 1; k < n; k++) {
        struct conv v;
        connect_as(&v, (uint16_t)(20000 + k), "splitter");
        int before = n_pubs;
        c2s(&v, pub, k);
        cr_assert_eq(n_pubs, before, "nothing before the packet is whole (split %zu)", k);
        c2s(&v, pub + k, n - k);
        cr_assert_eq(n_pubs, before + 1, "split at %zu", k);
        cr_assert_str_eq(pubs[before].topic, "m/road/segment/42");
        cr_assert_str_eq(pubs[before].peids[0], "road-42");
        send_seg(&v.c, v.cisn + 1 + v.coff, 0, WM_TCP_RST, NULL, 0);
        n_pubs = 0;
    }
    cr_assert_eq(layer.c.staged_packets, n - 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MATCHED], n - 1);
    assert_publish_conservation();
}

Test(mqtt, three_way_split_inside_the_fixed_header)
{
    uint8_t pub[512];
    size_t n = publish_pkt(pub, "m/a", 0, "p", NULL, 200);
    struct conv v;
    connect_as(&v, 40000, "c3");
    c2s(&v, pub, 1);     /* type byte */
    c2s(&v, pub + 1, 1); /* first Remaining Length byte (continuation bit set) */
    c2s(&v, pub + 2, n - 2);
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/a");
    assert_publish_conservation();
}

Test(mqtt, reordered_segments_still_decode)
{
    uint8_t pub[512];
    size_t n = publish_pkt(pub, "m/ooo", 0, "p", NULL, 100);
    struct conv v;
    connect_as(&v, 40001, "c4");
    uint32_t base = v.coff;
    c2s_at(&v, base + 60, pub + 60, n - 60);
    c2s_at(&v, base + 20, pub + 20, 40);
    cr_assert_eq(n_pubs, 0);
    c2s_at(&v, base, pub, 20);
    v.coff += (uint32_t)n;
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/ooo");
    assert_publish_conservation();
}

Test(mqtt, topic_aliases_across_segments)
{
    uint8_t a[512], b[512];
    struct conv v;
    connect_as(&v, 40002, "aliaser");
    size_t na = publish_pkt(a, "m/road/7", 3, "road-7", NULL, 10); /* binds alias 3 */
    size_t nb = publish_pkt(b, "", 3, "road-8", NULL, 10);         /* uses it */
    c2s(&v, a, na);
    c2s(&v, b, 5); /* the aliased PUBLISH split across segments */
    c2s(&v, b + 5, nb - 5);
    cr_assert_eq(n_pubs, 2);
    cr_assert_str_eq(pubs[1].topic, "m/road/7");
    cr_assert_str_eq(pubs[1].peids[0], "road-8");
    cr_assert_eq(layer.c.alias_set, 1);
    cr_assert_eq(layer.c.alias_used, 1);
    /* An alias never bound, and one beyond the followed range. */
    nb = publish_pkt(b, "", 4, "x", NULL, 1);
    c2s(&v, b, nb);
    nb = publish_pkt(b, "", WM_MQTT_MAX_ALIASES + 1, "x", NULL, 1);
    c2s(&v, b, nb);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_ALIAS_UNKNOWN], 2);
    cr_assert_eq(layer.c.alias_beyond_bound, 1);
    cr_assert_eq(n_pubs, 2);
    /* Server -> client aliases are separate: the server's alias 3 is unset. */
    nb = publish_pkt(b, "", 3, "x", NULL, 1);
    s2c(&v, b, nb);
    cr_assert_eq(layer.c.publish_from_server, 1);
    assert_publish_conservation();
}

Test(mqtt, subscriptions_are_learned)
{
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 40003, "watcher");
    c2s(&v, b, subscribe_pkt(b, 17, "monaco-centre", "traffic/#", "parking/+"));
    cr_assert_eq(n_subs, 0, "nothing before the broker's SUBACK");
    s2c(&v, b, suback_pkt(b, 3, (const uint8_t[]){1, 0}, 2));
    c2s(&v, b, subscribe_pkt(b, 0, "nowhere", "x/#", NULL));
    s2c(&v, b, suback_pkt(b, 3, (const uint8_t[]){1}, 1));
    c2s(&v, b, unsubscribe_pkt(b, "parking/+"));
    cr_assert_eq(n_subs, 3, "nothing before the broker's UNSUBACK");
    s2c(&v, b, unsuback_pkt(b, 4, (const uint8_t[]){0}, 1));
    cr_assert_eq(n_subs, 4);
    cr_assert_str_eq(subs[0].client, "watcher");
    cr_assert_str_eq(subs[0].filter, "traffic/#");
    cr_assert_eq(subs[0].subid, 17);
    cr_assert_str_eq(subs[0].nbhd, "monaco-centre");
    cr_assert_str_eq(subs[1].filter, "parking/+");
    cr_assert_eq(subs[1].subid, 17);
    cr_assert_eq(subs[2].subid, 0);
    cr_assert_eq(subs[3].unsub, 1);
    cr_assert_str_eq(subs[3].filter, "parking/+");
    cr_assert_eq(layer.c.subscribe_filters, 3);
    cr_assert_eq(layer.c.subs_installed, 2);
    cr_assert_eq(layer.c.subs_nbhd_unknown, 1);
    cr_assert_eq(layer.c.unsubscribe_filters, 1);
    assert_publish_conservation();
}

Test(mqtt, assigned_client_identifier)
{
    uint8_t b[256];
    struct conv v;
    open_conv(&v, 40004);
    c2s(&v, b, connect_pkt(b, "", 5));
    s2c(&v, b, connack_pkt(b, "auto-1234"));
    c2s(&v, b, publish_pkt(b, "m/x", 0, "p", NULL, 1));
    cr_assert_str_eq(pubs[0].client, "auto-1234");
    assert_publish_conservation();
}

Test(mqtt, malformed_publish_is_counted_and_the_direction_stops)
{
    uint8_t b[256];
    struct conv v;
    connect_as(&v, 40005, "bad");
    size_t n = publish_pkt(b, "m/x", 0, "p", NULL, 4);
    b[0] = 0x36; /* QoS 3 */
    c2s(&v, b, n);
    cr_assert_eq(layer.c.malformed[WM_MQTT5_E_PUBLISH_QOS3], 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MALFORMED], 1);
    cr_assert_eq(layer.c.dirs_broken, 1);
    n = publish_pkt(b, "m/x", 0, "p", NULL, 4);
    c2s(&v, b, n);
    cr_assert_eq(n_pubs, 0);
    cr_assert_eq(layer.c.ignored_bytes, n);
    /* The server direction still decodes. */
    s2c(&v, b, publish_pkt(b, "m/y", 0, "p", NULL, 1));
    cr_assert_eq(layer.c.publish_from_server, 1);
    /* A bad property deep inside a packet: reason counted. */
    struct conv w;
    connect_as(&w, 40006, "bad2");
    n = publish_pkt(b, "m/x", 0, "p", NULL, 4);
    b[10] = 0x7f; /* the first property identifier (after topic, packet id, length) becomes unknown */
    c2s(&w, b, n);
    cr_assert_eq(layer.c.malformed[WM_MQTT5_E_PROPERTY_UNKNOWN], 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MALFORMED], 2);
    assert_publish_conservation();
}

Test(mqtt, other_protocol_versions_are_counted_not_followed)
{
    uint8_t b[256];
    struct conv v;
    open_conv(&v, 40007);
    c2s(&v, b, connect_pkt(b, "old", 4)); /* MQTT 3.1.1 */
    cr_assert_eq(layer.c.connect_other_version, 1);
    cr_assert_eq(layer.c.connect_v5, 0);
    cr_assert_eq(layer.c.dirs_broken, 0);
    c2s(&v, b, publish_pkt(b, "m/x", 0, "p", NULL, 1));
    cr_assert_eq(n_pubs, 0);
    assert_publish_conservation();
}

Test(mqtt, rst_inside_a_publish_truncates_it)
{
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 40008, "resetter");
    size_t n = publish_pkt(b, "m/x", 0, "p", NULL, 100);
    c2s(&v, b, n / 2);
    send_seg(&v.c, v.cisn + 1 + v.coff, 0, WM_TCP_RST, NULL, 0);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_TRUNCATED], 1);
    cr_assert_eq(layer.c.truncated_packets, 1);
    cr_assert_eq(layer.stage_free_n, layer.cfg.staging_buffers);
    assert_publish_conservation();
}

Test(mqtt, a_lost_segment_inside_a_publish_truncates_it)
{
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 40009, "lossy");
    size_t n = publish_pkt(b, "m/x", 0, "p", NULL, 100);
    uint32_t base = v.coff;
    c2s_at(&v, base, b, 30);
    c2s_at(&v, base + 60, b + 60, n - 60);
    /* The broker acknowledges everything, again and again: bytes 30..59
     * are gone for good. */
    for (int i = 0; i < WM_ACKED_HOLE_GRACE; i++)
        send_seg(&v.s, v.sisn + 1 + v.soff, v.cisn + 1 + base + (uint32_t)n, WM_TCP_ACK, NULL, 0);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_TRUNCATED], 1);
    cr_assert_eq(n_pubs, 0);
    assert_publish_conservation();
}

Test(mqtt, packets_over_the_size_bound_are_skipped)
{
    setup_with(128, 4);
    uint8_t b[1024];
    struct conv v;
    connect_as(&v, 40010, "big");
    size_t n = publish_pkt(b, "m/x", 0, "p", NULL, 300);
    c2s(&v, b, n); /* whole in one segment */
    c2s(&v, b, 50); /* split */
    c2s(&v, b + 50, n - 50);
    size_t small = publish_pkt(b, "m/ok", 0, "p", NULL, 10);
    c2s(&v, b, small);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_TOO_LARGE], 2);
    cr_assert_eq(layer.c.too_large_packets, 2);
    cr_assert_eq(n_pubs, 1, "the stream continues after a skipped packet");
    cr_assert_str_eq(pubs[0].topic, "m/ok");
    assert_publish_conservation();
}

Test(mqtt, staging_pool_exhaustion_is_counted)
{
    setup_with(65536, 1);
    uint8_t b[512];
    struct conv v, w;
    connect_as(&v, 40011, "one");
    connect_as(&w, 40012, "two");
    size_t n = publish_pkt(b, "m/x", 0, "p", NULL, 50);
    c2s(&v, b, 20); /* takes the only staging buffer */
    c2s(&w, b, 20); /* none left */
    cr_assert_eq(layer.c.staging_full, 1);
    c2s(&w, b + 20, n - 20);
    c2s(&v, b + 20, n - 20);
    c2s(&w, b, n); /* after the skipped packet, w decodes again */
    cr_assert_eq(n_pubs, 2);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_STAGING_FULL], 1);
    assert_publish_conservation();
}

Test(mqtt, publish_before_connect_is_not_matched)
{
    uint8_t b[256];
    struct conv v;
    open_conv(&v, 40013);
    c2s(&v, b, publish_pkt(b, "m/x", 0, "p", NULL, 1));
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_NOT_CONNECTED], 1);
    cr_assert_eq(n_pubs, 0);
    assert_publish_conservation();
}

/* ------------------------------------------------------------ the broker's side */

/* A CONNECT with Clean Start clean and, if expiry >= 0, a Session Expiry
 * Interval. */
static size_t connect_sess(uint8_t *out, const char *client, bool clean, long expiry)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_str(&body, "MQTT");
    wm_tb_u8(&body, 5);
    wm_tb_u8(&body, clean ? 0x02 : 0x00);
    wm_tb_u16(&body, 60);
    if (expiry >= 0) {
        wm_tb_u8(&props, 0x11);
        wm_tb_u32(&props, (uint32_t)expiry);
    }
    wm_tb_props(&body, &props);
    wm_tb_str(&body, client);
    size_t n = wm_tb_packet(&pkt, 0x10, &body);
    memcpy(out, pkt.b, n);
    return n;
}

/* A DISCONNECT with reason 0 and, if expiry >= 0, a Session Expiry Interval. */
static size_t disconnect_pkt(uint8_t *out, long expiry)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u8(&body, 0);
    if (expiry >= 0) {
        wm_tb_u8(&props, 0x11);
        wm_tb_u32(&props, (uint32_t)expiry);
    }
    wm_tb_props(&body, &props);
    size_t n = wm_tb_packet(&pkt, 0xe0, &body);
    memcpy(out, pkt.b, n);
    return n;
}

/* A QoS qos PUBLISH (flags: DUP, RETAIN) with packet id pid. */
static size_t publish_q(uint8_t *out, const char *topic, uint8_t qos, bool dup, bool retain, uint16_t pid)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_str(&body, topic);
    if (qos) wm_tb_u16(&body, pid);
    wm_tb_props(&body, &props);
    wm_tb_u8(&body, 'x');
    size_t n = wm_tb_packet(&pkt, (uint8_t)(0x30 | (dup ? 8 : 0) | qos << 1 | (retain ? 1 : 0)), &body);
    memcpy(out, pkt.b, n);
    return n;
}

Test(mqtt, only_filters_the_suback_grants_are_installed)
{
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 41000, "s");
    c2s(&v, b, subscribe_pkt(b, 5, NULL, "a/#", "b/#"));
    /* an answer to another packet id changes nothing */
    s2c(&v, b, suback_pkt(b, 99, (const uint8_t[]){0}, 1));
    cr_assert_eq(layer.c.suback_unknown, 1);
    cr_assert_eq(n_subs, 0);
    s2c(&v, b, suback_pkt(b, 3, (const uint8_t[]){0x87, 0x01}, 2)); /* a/# not authorized */
    cr_assert_eq(n_subs, 1);
    cr_assert_str_eq(subs[0].filter, "b/#");
    cr_assert_eq(layer.c.subs_refused_by_broker, 1);
    cr_assert_eq(layer.c.subs_granted, 1);
    /* a SUBSCRIBE whose SUBACK never comes is never installed */
    c2s(&v, b, subscribe_pkt(b, 6, NULL, "c/#", NULL));
    send_seg(&v.c, v.cisn + 1 + v.coff, 0, WM_TCP_RST, NULL, 0);
    cr_assert_eq(n_subs, 1);
    cr_assert_eq(layer.c.subscribes_unacknowledged, 1);
    assert_publish_conservation();
}

Test(mqtt, pending_subscribes_are_bounded)
{
    layer_with(1, 0, 0);
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 41001, "s");
    c2s(&v, b, subscribe_pkt(b, 5, NULL, "a/#", NULL));
    c2s(&v, b, subscribe_pkt(b, 6, NULL, "b/#", NULL)); /* no room: not followed */
    cr_assert_eq(layer.c.subscribe_untracked, 1);
    s2c(&v, b, suback_pkt(b, 3, (const uint8_t[]){0}, 1));
    s2c(&v, b, suback_pkt(b, 3, (const uint8_t[]){0}, 1));
    cr_assert_eq(n_subs, 1);
    cr_assert_str_eq(subs[0].filter, "a/#");
    cr_assert_eq(layer.c.suback_unknown, 1);
    /* UNSUBSCRIBEs share the bound: with the slot taken, one is not followed and removes nothing */
    const char *const f[] = {"a/#"};
    c2s(&v, b, subscribe_pkt(b, 7, NULL, "c/#", NULL));
    c2s(&v, b, unsubscribe_n(b, 8, f, 1));
    cr_assert_eq(layer.c.unsubscribe_untracked, 1);
    s2c(&v, b, unsuback_pkt(b, 8, (const uint8_t[]){0}, 1));
    cr_assert_eq(layer.c.unsuback_unknown, 1);
    cr_assert_eq(n_subs, 1);
    assert_publish_conservation();
}

/* REVIEW12 #23: the worker's pool of pending copies is shared, so one
 * session holds at most its share (pending_per_session, by default a
 * sixteenth): a client whose SUBACKs do not come (it pipelines SUBSCRIBEs,
 * or the broker is slow) no longer leaves another client's SUBSCRIBE
 * untracked, i.e. never installed. */
Test(mqtt, one_session_holds_at_most_its_share_of_the_pending_pool)
{
    layer_with(32, 0, 0);   /* a share of 2 */
    cr_assert_eq(layer.cfg.pending_per_session, 2);
    uint8_t b[512];
    struct conv hog, other;
    connect_as(&hog, 41010, "hog");
    for (uint32_t i = 0; i < 40; i++) c2s(&hog, b, subscribe_pkt(b, 1 + i, NULL, "h/#", NULL));
    cr_assert_eq(layer.pending_n, 2);
    cr_assert_eq(layer.c.subscribe_untracked, 38);
    cr_assert_eq(layer.c.pending_over_share, 38);
    connect_as(&other, 41011, "other");
    c2s(&other, b, subscribe_pkt(b, 7, NULL, "o/#", NULL));
    cr_assert_eq(layer.c.subscribe_untracked, 38, "the other client's SUBSCRIBE is tracked");
    s2c(&other, b, suback_pkt(b, 3, (const uint8_t[]){0}, 1));
    cr_assert_eq(n_subs, 1);
    cr_assert_str_eq(subs[0].filter, "o/#");
    /* the hog's share comes back with its SUBACKs */
    s2c(&hog, b, suback_pkt(b, 3, (const uint8_t[]){0}, 1));
    c2s(&hog, b, subscribe_pkt(b, 99, NULL, "h2/#", NULL));
    cr_assert_eq(layer.c.subscribe_untracked, 38);
    cr_assert_eq(layer.pending_n, 2);
    assert_publish_conservation();
}

/* jemalloc's per-thread count of bytes allocated: the plain build links
 * jemalloc, as every program of the project does; the sanitizer builds
 * bring their own allocator and no jemalloc (weak: 0 there, and the
 * allocation check is the plain build's). */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));
static uint64_t thread_allocated(void)
{
    uint64_t v = 0;
    size_t len = sizeof v;
    if (mallctl) cr_assert_eq(mallctl("thread.allocated", &v, &len, NULL, 0), 0, "jemalloc's thread.allocated");
    return v;
}

/* A SUBSCRIBE (packet id 3) of filter f whose properties carry a `pad`
 * User Property of pad bytes first, so that the filter lies beyond them. */
static size_t subscribe_pad(uint8_t *out, size_t pad, const char *f)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_u16(&body, 3);
    char v[1024];
    cr_assert(pad < sizeof v);
    memset(v, 'p', pad);
    v[pad] = 0;
    wm_tb_u8(&props, 0x26);
    wm_tb_str(&props, "pad");
    wm_tb_str(&props, v);
    wm_tb_props(&body, &props);
    wm_tb_str(&body, f);
    wm_tb_u8(&body, 1);
    size_t n = wm_tb_packet(&pkt, 0x82, &body);
    memcpy(out, pkt.b, n);
    return n;
}

/* Pending copies come from the layer's pool, allocated with it: holding
 * SUBSCRIBEs, UNSUBSCRIBEs and PUBLISHes sent before the CONNACK allocates
 * nothing (before 2026-12-02 each one was a malloc on the worker's packet
 * path). A copy of several chunks decodes whole at its SUBACK; one over its
 * session's share of the bytes, or finding the bytes taken, is not kept,
 * counted by reason. */
Test(mqtt, pending_copies_come_from_the_layers_pool)
{
    struct wm_mqtt_config mc;
    wm_mqtt_config_default(&mc);
    mc.alias_slots = 16;
    mc.pending_subscribes = 48;                 /* a share of 3 copies per session */
    mc.pending_bytes = 48 * WM_MQTT_PEND_CHUNK; /* ... and of 3 chunks */
    free(layer_mem);
    layer_mem = malloc(wm_mqtt_layer_memsize(&mc));
    cr_assert_eq(wm_mqtt_layer_init(&layer, layer_mem, &mc, &sink), 0);
    cr_assert_eq(layer.pend_chunk_share, 3);
    static uint8_t sub[16][512], three[1024], four[1280], pub[512], ack[64];
    size_t sub_n[16], three_n, four_n, pub_n, ack_n;
    char f[32];
    for (int i = 0; i < 16; i++) {
        snprintf(f, sizeof f, "s%d/#", i);
        sub_n[i] = subscribe_pkt(sub[i], 0, NULL, f, NULL);
        cr_assert_leq(sub_n[i], WM_MQTT_PEND_CHUNK);
    }
    three_n = subscribe_pad(three, 600, "long/#"); /* 3 chunks, its filter in the third */
    cr_assert(three_n > 2 * WM_MQTT_PEND_CHUNK && three_n <= 3 * WM_MQTT_PEND_CHUNK);
    four_n = subscribe_pad(four, 800, "four/#");   /* 4 chunks: over the share */
    cr_assert(four_n > 3 * WM_MQTT_PEND_CHUNK);
    pub_n = publish_pkt(pub, "m/early", 0, NULL, NULL, 8);
    ack_n = suback_pkt(ack, 3, (const uint8_t[]){0}, 1);
    struct conv v[16];
    uint8_t b[256];
    for (int i = 0; i < 16; i++) connect_as(&v[i], (uint16_t)(42100 + i), (snprintf(f, sizeof f, "c%d", i), f));
    struct conv early;
    open_conv(&early, 42200);
    c2s(&early, b, connect_pkt(b, "early", 5));

    uint64_t before = thread_allocated();
    for (int i = 0; i < 16; i++) /* 3 each: every copy of the pool */
        for (int k = 0; k < 3; k++) c2s(&v[i], sub[i], sub_n[i]);
    uint64_t after = thread_allocated();
    cr_assert_eq(layer.pending_n, 48);
    cr_assert_eq(after - before, 0, "%llu bytes allocated to hold 48 SUBSCRIBEs",
                 (unsigned long long)(after - before));
    c2s(&early, pub, pub_n); /* no room: matched at once, as always */
    cr_assert_eq(layer.c.publish_unheld, 1);
    cr_assert_eq(layer.c.pending_bytes_full, 1, "every chunk is taken too");
    cr_assert_eq(n_pubs, 1);
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < 3; k++) s2c(&v[i], ack, ack_n);
    cr_assert_eq(layer.pending_n, 0);
    cr_assert_eq(n_subs, 48);

    /* a copy of three chunks: its filter, beyond the first two, is installed whole */
    c2s(&v[0], three, three_n);
    s2c(&v[0], ack, ack_n);
    cr_assert_eq(n_subs, 49);
    cr_assert_str_eq(subs[48].filter, "long/#");
    /* four chunks: over the session's share */
    c2s(&v[0], four, four_n);
    cr_assert_eq(layer.c.pending_over_share, 1);
    cr_assert_eq(layer.c.subscribe_untracked, 1);
    /* the bytes taken (16 sessions x 3 chunks), with copies free: the next is not kept */
    for (int i = 0; i < 16; i++) c2s(&v[i], three, three_n);
    cr_assert_eq(layer.pending_n, 16);
    cr_assert_eq(layer.pend_chunks_free, 0);
    c2s(&early, pub, pub_n);
    cr_assert_eq(layer.c.pending_bytes_full, 2);
    cr_assert_eq(layer.c.publish_unheld, 2);
    /* connections lost before their SUBACKs give the copies back */
    for (int i = 0; i < 16; i++) send_seg(&v[i].c, v[i].cisn + 1 + v[i].coff, 0, WM_TCP_RST, NULL, 0);
    cr_assert_eq(layer.c.subscribes_unacknowledged, 16);
    cr_assert_eq(layer.pend_chunks_free, 48, "chunks leaked");
    assert_publish_conservation();
}

Test(mqtt, session_lifetime_events)
{
    uint8_t b[256];
    struct conv v, w, x;
    /* expiry from CONNECT, changed by DISCONNECT */
    open_conv(&v, 41002);
    c2s(&v, b, connect_sess(b, "a", true, 30));
    cr_assert_eq(n_sess, 0, "the session starts with the broker's CONNACK");
    s2c(&v, b, connack_pkt(b, NULL));
    cr_assert_eq(n_sess, 1);
    cr_assert_eq(sess[0].kind, WM_MQTT_SESSION_NEW);
    c2s(&v, b, disconnect_pkt(b, 5));
    cr_assert_eq(n_sess, 2);
    cr_assert_eq(sess[1].kind, WM_MQTT_SESSION_END);
    cr_assert_eq(sess[1].expiry_s, 5);
    send_seg(&v.c, v.cisn + 1 + v.coff, 0, WM_TCP_RST, NULL, 0);
    cr_assert_eq(n_sess, 2, "one end per connection");
    /* resumed; the CONNACK's expiry wins; lost with RST */
    open_conv(&w, 41003);
    c2s(&w, b, connect_sess(b, "a", false, 30));
    uint8_t sei[] = {0x11, 0, 0, 0, 7};
    s2c(&w, b, connack_props(b, NULL, true, sei, sizeof sei));
    cr_assert_eq(sess[2].kind, WM_MQTT_SESSION_RESUME);
    send_seg(&w.c, w.cisn + 1 + w.coff, 0, WM_TCP_RST, NULL, 0);
    cr_assert_eq(sess[3].kind, WM_MQTT_SESSION_END);
    cr_assert_eq(sess[3].expiry_s, 7);
    /* expiry 0 cannot be raised by DISCONNECT (§3.14.2.2.2) */
    open_conv(&x, 41004);
    c2s(&x, b, connect_sess(b, "b", true, -1));
    s2c(&x, b, connack_pkt(b, NULL));
    c2s(&x, b, disconnect_pkt(b, 100));
    cr_assert_eq(sess[5].kind, WM_MQTT_SESSION_END);
    cr_assert_eq(sess[5].expiry_s, 0);
    cr_assert_eq(layer.c.disconnect_expiry_from_zero, 1);
    /* a refused CONNACK starts nothing; a shutdown ends nothing */
    struct conv y;
    open_conv(&y, 41005);
    c2s(&y, b, connect_sess(b, "c", true, -1));
    s2c(&y, (const uint8_t[]){0x20, 0x03, 0x00, 0x87, 0x00}, 5);
    cr_assert_eq(layer.c.connack_refused, 1);
    struct conv z;
    connect_as(&z, 41006, "d");
    cr_assert_eq(n_sess, 7);
    wm_flow_table_flush(&path.flows);
    cr_assert_eq(n_sess, 7, "a shutdown is not the end of a connection");
    assert_publish_conservation();
}

Test(mqtt, the_brokers_connack_limits_apply_to_client_publishes)
{
    uint8_t b[512];
    /* Topic Alias Maximum 2, Maximum Packet Size 64, Maximum QoS 1, Retain Available 0 */
    const uint8_t lim[] = {0x22, 0, 2, 0x27, 0, 0, 0, 64, 0x24, 1, 0x25, 0};
    struct conv v[5];
    for (int i = 0; i < 5; i++) {
        open_conv(&v[i], (uint16_t)(41010 + i));
        c2s(&v[i], b, connect_pkt(b, "lim", 5));
        s2c(&v[i], b, connack_props(b, NULL, false, lim, sizeof lim));
        c2s(&v[i], b, publish_q(b, "m/ok", 1, false, false, 1));
    }
    cr_assert_eq(n_pubs, 5);
    c2s(&v[0], b, publish_pkt(b, "m/a", 3, NULL, NULL, 1));   /* alias 3 > 2 */
    c2s(&v[1], b, publish_pkt(b, "m/big", 0, NULL, NULL, 80)); /* > 64 bytes */
    c2s(&v[2], b, publish_q(b, "m/q2", 2, false, false, 2));   /* QoS 2 > 1 */
    c2s(&v[3], b, publish_q(b, "m/r", 0, false, true, 0));     /* retained */
    c2s(&v[4], b, publish_pkt(b, "m/a", 2, NULL, NULL, 1));    /* alias 2: allowed */
    cr_assert_eq(n_pubs, 6);
    cr_assert_str_eq(pubs[5].topic, "m/a");
    cr_assert_eq(layer.c.malformed[WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE], 1);
    cr_assert_eq(layer.c.malformed[WM_MQTT5_E_PACKET_TOO_LARGE], 1);
    cr_assert_eq(layer.c.limit_qos, 1);
    cr_assert_eq(layer.c.limit_retain, 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MALFORMED], 4);
    /* the broker disconnected each of them: nothing more is followed */
    for (int i = 0; i < 4; i++) c2s(&v[i], b, publish_q(b, "m/after", 0, false, false, 0));
    cr_assert_eq(n_pubs, 6);
    assert_publish_conservation();
}

Test(mqtt, nothing_after_the_brokers_disconnect_is_matched)
{
    uint8_t b[256];
    struct conv v;
    connect_as(&v, 41020, "p");
    c2s(&v, b, publish_q(b, "m/1", 0, false, false, 0));
    s2c(&v, (const uint8_t[]){0xe0, 0x02, 0x94, 0x00}, 4); /* Topic Alias invalid */
    cr_assert_eq(layer.c.server_disconnects, 1);
    cr_assert_eq(sess[n_sess - 1].kind, WM_MQTT_SESSION_END);
    c2s(&v, b, publish_q(b, "m/2", 0, false, false, 0));
    cr_assert_eq(n_pubs, 1);
    assert_publish_conservation();
}

static void rst(struct conv *v) { send_seg(&v->c, v->cisn + 1 + v->coff, 0, WM_TCP_RST, NULL, 0); }

static const uint8_t *pubrel(uint16_t id)
{
    static uint8_t b[4] = {0x62, 0x02};
    b[2] = (uint8_t)(id >> 8);
    b[3] = (uint8_t)id;
    return b;
}

/* mosquitto delivers a QoS 2 message when the PUBREL releases it (checked
 * against mosquitto 2.0.11: nothing reaches a subscriber after PUBLISH +
 * PUBREC, the message after the PUBREL; a second PUBLISH with the same id
 * and DUP 0 before it was not delivered twice). */
Test(mqtt, a_qos2_message_is_matched_at_its_pubrel_once)
{
    uint8_t b[256];
    struct conv v;
    connect_as(&v, 41030, "q");
    c2s(&v, b, publish_q(b, "m/1", 2, false, false, 5));
    cr_assert_eq(n_pubs, 0, "not before its PUBREL");
    cr_assert_eq(layer.c.qos2_waiting, 1);
    c2s(&v, b, publish_q(b, "m/1", 2, false, false, 5)); /* the same id again, DUP 0: the same message */
    c2s(&v, b, publish_q(b, "m/1", 2, true, false, 5));  /* PUBREC lost: sent again */
    cr_assert_eq(n_pubs, 0);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_DUPLICATE], 2);
    cr_assert_eq(layer.c.qos2_duplicates_dup0, 1);
    c2s(&v, pubrel(5), 4);
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/1");
    cr_assert_eq(pubs[0].qos, 2);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MATCHED], 1);
    c2s(&v, pubrel(5), 4); /* PUBCOMP lost: the PUBREL again releases nothing more */
    cr_assert_eq(n_pubs, 1);
    cr_assert_eq(layer.c.qos2_pubrel_unknown, 1);
    c2s(&v, b, publish_q(b, "m/2", 2, true, false, 5)); /* a new message with the free id */
    c2s(&v, pubrel(5), 4);
    cr_assert_eq(n_pubs, 2);
    cr_assert_str_eq(pubs[1].topic, "m/2");
    cr_assert_eq(pubs[1].seq, 2);
    cr_assert_eq(layer.c.qos2_released, 2);
    cr_assert_eq(layer.c.qos2_waiting, 0);
    assert_publish_conservation();
}

Test(mqtt, a_qos2_copy_waits_with_its_detached_session)
{
    uint8_t b[256];
    struct conv v, w, x;
    open_conv(&v, 41031);
    c2s(&v, b, connect_sess(b, "q", true, 60));
    s2c(&v, b, connack_pkt(b, NULL));
    c2s(&v, b, publish_q(b, "m/3", 2, false, false, 9));
    rst(&v); /* detached for 60 s: the broker keeps the message */
    cr_assert_eq(n_pubs, 0);
    resume_qos2 = 9; /* the sink hands the id back */
    open_conv(&w, 41032);
    c2s(&w, b, connect_sess(b, "q", false, 60));
    s2c(&w, b, connack_props(b, NULL, true, NULL, 0));
    c2s(&w, b, publish_q(b, "m/3", 2, true, false, 9));
    cr_assert_eq(layer.c.qos2_duplicates, 1);
    c2s(&w, pubrel(9), 4);
    cr_assert_eq(n_pubs, 1, "released on the resumed connection, from the first one's copy");
    cr_assert_str_eq(pubs[0].topic, "m/3");
    /* a session that ends (expiry 0) before the PUBREL: the broker discards the message */
    c2s(&w, b, publish_q(b, "m/4", 2, false, false, 10));
    c2s(&w, b, disconnect_pkt(b, 0));
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_SESSION_ENDED], 1);
    /* one whose session expires before the PUBREL: gone at its expiry, not at the resume */
    resume_qos2 = 0;
    open_conv(&x, 41033);
    c2s(&x, b, connect_sess(b, "r", true, 60));
    s2c(&x, b, connack_pkt(b, NULL));
    c2s(&x, b, publish_q(b, "m/5", 2, false, false, 11));
    rst(&x);
    layer.now_ns = now_ns + 59 * 1000000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(layer.c.qos2_waiting, 1);
    layer.now_ns = now_ns + 61 * 1000000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(layer.c.qos2_waiting, 0);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_SESSION_ENDED], 2);
    cr_assert_eq(n_pubs, 1);
    assert_publish_conservation();
}

/* Two workers (two layers, each with its own flow table and match worker,
 * one match table, one shared QoS 2 store, as wirematch runs them): a
 * client's QoS 2 exchange is cut after the broker's PUBREC (the connection
 * lost, Session Expiry 60), and its reconnect (Clean Start 0, Session
 * Present 1) lands on the other worker, where the client sends the PUBREL
 * (MQTT 5.0 §4.4: the exchange resumes). The broker then delivers the
 * message, so it is matched there, against the subscriber's subscription.
 * Before 2026-12-02 the copy stayed in the first worker's pool: the PUBREL
 * matched nothing (qos2_pubrel_no_copy) and the message ended as
 * dropped_session_ended at the first worker when the session expired. Run
 * without the store (set_store false) the test shows that failure. */
static void qos2_resumed_on_another_worker(bool set_store)
{
    char err[256];
    wm_load_error lerr;
    struct wm_match_table *t = wm_match_table_new(NULL, NULL, NULL, 1024, &lerr);
    cr_assert_not_null(t, "%s", lerr.reason);
    struct wm_match_worker *mw[2] = {wm_match_worker_new(t, NULL, err, sizeof err),
                                     wm_match_worker_new(t, NULL, err, sizeof err)};
    cr_assert(mw[0] && mw[1], "%s", err);
    struct wm_mqtt_config mc;
    wm_mqtt_config_default(&mc);
    mc.alias_slots = 16;
    mc.qos2_held = 8;
    struct wm_mqtt_sink sk0 = wm_match_worker_sink(mw[0]), sk1 = wm_match_worker_sink(mw[1]);
    free(layer_mem);
    layer_mem = malloc(wm_mqtt_layer_memsize(&mc));
    cr_assert_eq(wm_mqtt_layer_init(&layer, layer_mem, &mc, &sk0), 0);
    static struct wm_pkt_path path2;
    static struct wm_mqtt_layer layer2;
    void *layer2_mem = malloc(wm_mqtt_layer_memsize(&mc)), *path2_mem = NULL;
    cr_assert_eq(wm_mqtt_layer_init(&layer2, layer2_mem, &mc, &sk1), 0);
    struct wm_pkt_path_config pc = {.mqtt_ports = {1883}, .n_ports = 1};
    wm_flow_table_config_default(&pc.flows);
    pc.flows.max_flows = 64;
    pc.flows.ooo_pool_blocks = 64;
    pc.flows.user_size = (uint32_t)wm_mqtt_session_size();
    cr_assert_eq(posix_memalign(&path2_mem, 64, wm_pkt_path_memsize(&pc)), 0);
    cr_assert_eq(wm_pkt_path_init(&path2, path2_mem, &pc, &wm_mqtt_stream_ops, &layer2), 0);
    size_t smem = wm_qos2_store_memsize(mc.qos2_held, mc.qos2_max);
    void *store_mem = malloc(smem);
    struct wm_qos2_store *st = wm_qos2_store_init(store_mem, mc.qos2_held, mc.qos2_max);
    cr_assert_not_null(st);
    if (set_store) {
        wm_mqtt_layer_set_qos2_store(&layer, st);
        wm_mqtt_layer_set_qos2_store(&layer2, st);
    }
    uint8_t b[256];
    struct conv sub, v, w;
    /* worker 0: a subscriber of m/#, and the publisher's first connection */
    connect_as(&sub, 41060, "sub");
    c2s(&sub, b, subscribe_pkt(b, 0, NULL, "m/#", NULL));
    s2c(&sub, b, suback_pkt(b, 3, (const uint8_t[]){1}, 1));
    struct wm_match_counters mcnt;
    wm_match_table_counters(t, &mcnt);
    cr_assert_eq(mcnt.subs_live, 1);
    open_conv(&v, 41061);
    c2s(&v, b, connect_sess(b, "q", true, 60));
    s2c(&v, b, connack_pkt(b, NULL));
    c2s(&v, b, publish_q(b, "m/q2", 2, false, false, 7));
    s2c(&v, (const uint8_t[]){0x50, 0x02, 0x00, 0x07}, 4); /* PUBREC: the broker has it */
    rst(&v); /* lost before the PUBREL: detached for 60 s */
    cr_assert_eq(layer.c.publish_seen, 1);
    /* worker 1: the reconnect resumes the session and completes the exchange */
    cur_path = &path2;
    cur_layer = &layer2;
    open_conv(&w, 41062);
    c2s(&w, b, connect_sess(b, "q", false, 60));
    s2c(&w, b, connack_props(b, NULL, true, NULL, 0));
    c2s(&w, pubrel(7), 4);
    cr_assert_eq(layer2.c.qos2_pubrel_unknown, 0, "the session's identifier travelled with it");
    cr_assert_eq(layer2.c.qos2_pubrel_no_copy, 0, "the PUBREL found no copy of the message");
    cr_assert_eq(layer2.c.publish[WM_MQTT_PUB_MATCHED], 1, "the message is delivered at its PUBREL, on worker 1");
    cr_assert_eq(layer2.c.qos2_released, 1);
    cr_assert_eq(layer.c.qos2_detached_shared, 1);
    cr_assert_eq(layer2.c.qos2_resumed_shared, 1);
    /* the outcomes of both workers sum to the PUBLISHes seen, once all ends */
    c2s(&w, b, disconnect_pkt(b, 0));
    wm_flow_table_flush(&path2.flows);
    wm_mqtt_layer_finish(&layer2);
    cur_path = &path;
    cur_layer = &layer;
    wm_flow_table_flush(&path.flows);
    wm_mqtt_layer_finish(&layer);
    wm_mqtt_layer_finish_shared(&layer);
    struct wm_mqtt_counters sum = layer.c;
    sum.publish_seen += layer2.c.publish_seen;
    for (int o = 0; o < WM_MQTT_PUB_OUTCOME_COUNT; o++) sum.publish[o] += layer2.c.publish[o];
    cr_assert(wm_mqtt_publish_conserved(&sum));
    cr_assert_eq(sum.publish[WM_MQTT_PUB_MATCHED], 1);
    cr_assert_eq(layer.c.qos2_waiting + layer2.c.qos2_waiting, 0);
    cr_assert_eq(wm_qos2_store_detached(st), 0);
    memset(&layer.sink, 0, sizeof layer.sink);
    memset(&layer2.sink, 0, sizeof layer2.sink);
    wm_match_worker_free(mw[0]);
    wm_match_worker_free(mw[1]);
    wm_match_table_free(t);
    wm_qos2_store_fini(st);
    free(store_mem);
    free(path2_mem);
    free(layer2_mem);
}

Test(mqtt, a_qos2_exchange_resumes_on_another_worker) { qos2_resumed_on_another_worker(true); }

/* The shared store's bounds and ends (one layer with a store, as every
 * worker of a multi-worker run has): a copy that finds it full stays in the
 * worker's pool (counted) and still resumes there; a new session of the
 * client (Session Present 0) drops its copy there, and a session that
 * expires before its resume loses it at its expiry (dropped_session_ended
 * both); the outcomes sum up. */
Test(mqtt, the_shared_qos2_store_is_bounded_and_expires)
{
    size_t smem = wm_qos2_store_memsize(1, 4096);
    void *store_mem = malloc(smem);
    struct wm_qos2_store *st = wm_qos2_store_init(store_mem, 1, 4096);
    cr_assert_not_null(st);
    wm_mqtt_layer_set_qos2_store(&layer, st);
    uint8_t b[256];
    struct conv v[6];
    const char *who[3] = {"a", "b", "c"};
    uint32_t expiry[3] = {60, 60, 1};
    for (int i = 0; i < 2; i++) {
        open_conv(&v[i], (uint16_t)(41070 + i));
        c2s(&v[i], b, connect_sess(b, who[i], true, expiry[i]));
        s2c(&v[i], b, connack_pkt(b, NULL));
        c2s(&v[i], b, publish_q(b, "m/s", 2, false, false, (uint16_t)(1 + i)));
        rst(&v[i]);
    }
    cr_assert_eq(layer.c.qos2_detached_shared, 1);
    cr_assert_eq(layer.c.qos2_shared_full, 1, "the store holds one copy");
    cr_assert_eq(wm_qos2_store_detached(st), 1);
    /* a's new session: its old one, and the message with it, are gone */
    open_conv(&v[2], 41072);
    c2s(&v[2], b, connect_sess(b, "a", true, 0));
    s2c(&v[2], b, connack_pkt(b, NULL));
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_SESSION_ENDED], 1);
    cr_assert_eq(wm_qos2_store_detached(st), 0);
    /* c's copy (expiry 1 s) takes the free entry, and expires there */
    open_conv(&v[3], 41073);
    c2s(&v[3], b, connect_sess(b, "c", true, expiry[2]));
    s2c(&v[3], b, connack_pkt(b, NULL));
    c2s(&v[3], b, publish_q(b, "m/s", 2, false, false, 3));
    rst(&v[3]);
    cr_assert_eq(layer.c.qos2_detached_shared, 2);
    now_ns += 2000000000ull;
    layer.now_ns = now_ns;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_SESSION_ENDED], 2);
    /* b's copy, kept in the pool, resumes on this worker */
    resume_qos2 = 2;
    open_conv(&v[4], 41074);
    c2s(&v[4], b, connect_sess(b, "b", false, 60));
    s2c(&v[4], b, connack_props(b, NULL, true, NULL, 0));
    c2s(&v[4], pubrel(2), 4);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_MATCHED], 1);
    wm_mqtt_layer_finish_shared(&layer);
    assert_publish_conservation();
    cr_assert_eq(layer.c.qos2_waiting, 0);
    wm_qos2_store_fini(st);
    free(store_mem);
}

Test(mqtt, qos2_copies_are_bounded)
{
    uint8_t b[8192];
    struct conv v;
    struct wm_mqtt_config mc;
    wm_mqtt_config_default(&mc);
    mc.alias_slots = 16;
    mc.qos2_held = 1;
    mc.qos2_max = 64;
    free(layer_mem);
    layer_mem = malloc(wm_mqtt_layer_memsize(&mc));
    cr_assert_eq(wm_mqtt_layer_init(&layer, layer_mem, &mc, &sink), 0);
    connect_as(&v, 41034, "q");
    c2s(&v, b, publish_q(b, "m/a", 2, false, false, 1)); /* held: the one slot */
    c2s(&v, b, publish_q(b, "m/b", 2, false, false, 2)); /* no slot: matched at once */
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/b");
    c2s(&v, b, publish_q(b, "m/b", 2, false, false, 2)); /* still only once */
    cr_assert_eq(n_pubs, 1);
    c2s(&v, pubrel(2), 4);
    c2s(&v, pubrel(1), 4);
    cr_assert_eq(n_pubs, 2);
    cr_assert_str_eq(pubs[1].topic, "m/a");
    char topic[100];
    memset(topic, 'm', sizeof topic - 1);
    topic[1] = '/';
    topic[sizeof topic - 1] = 0;
    c2s(&v, b, publish_q(b, topic, 2, false, false, 3)); /* over qos2_max: matched at once */
    cr_assert_eq(n_pubs, 3);
    cr_assert_eq(layer.c.qos2_at_publish, 2);
    c2s(&v, b, publish_q(b, "m/c", 2, false, false, 4)); /* held, then the run ends */
    wm_flow_table_flush(&path.flows);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_UNRELEASED], 1);
    assert_publish_conservation();
}

/* A CONNECT with a Will on topic (QoS 1, retained), Will Delay Interval
 * delay (< 0: absent), a `peid` User Property and Content Type text/plain,
 * payload "bye"; Session Expiry expiry (< 0: absent). */
static size_t connect_will_x(uint8_t *out, const char *client, bool clean, long expiry, long delay, const char *topic)
{
    wm_tb body = {0}, props = {0}, will_props = {0}, pkt = {0};
    wm_tb_str(&body, "MQTT");
    wm_tb_u8(&body, 5);
    wm_tb_u8(&body, (uint8_t)((clean ? 0x02 : 0) | 0x04 | 1 << 3 | 0x20)); /* Will, Will QoS 1, Will Retain */
    wm_tb_u16(&body, 60);
    if (expiry >= 0) {
        wm_tb_u8(&props, 0x11);
        wm_tb_u32(&props, (uint32_t)expiry);
    }
    wm_tb_props(&body, &props);
    wm_tb_str(&body, client);
    if (delay >= 0) {
        wm_tb_u8(&will_props, 0x18);
        wm_tb_u32(&will_props, (uint32_t)delay);
    }
    wm_tb_u8(&will_props, 0x26);
    wm_tb_str(&will_props, "peid");
    wm_tb_str(&will_props, "e7");
    wm_tb_u8(&will_props, 0x03);
    wm_tb_str(&will_props, "text/plain");
    wm_tb_props(&body, &will_props);
    wm_tb_str(&body, topic);
    wm_tb_str(&body, "bye");
    size_t n = wm_tb_packet(&pkt, 0x10, &body);
    memcpy(out, pkt.b, n);
    return n;
}

static size_t connect_will(uint8_t *out, const char *client) { return connect_will_x(out, client, true, -1, -1, "m/w"); }


/* A client connection with a Will (clean, expiry, delay), accepted with Session Present present. */
static void will_conn(struct conv *v, uint16_t port, const char *client, bool clean, long expiry, long delay,
                      bool present)
{
    uint8_t b[256];
    open_conv(v, port);
    c2s(v, b, connect_will_x(b, client, clean, expiry, delay, "m/w"));
    s2c(v, b, connack_props(b, NULL, present, NULL, 0));
}

Test(mqtt, wills_are_matched_like_publications)
{
    uint8_t b[256];
    struct conv v, w, x, y, z;
    connect_as(&x, 41039, "p");
    c2s(&x, b, publish_q(b, "m/1", 0, false, false, 0));
    /* lost with RST, Session Expiry 0: the session ends, then the broker publishes the Will */
    open_conv(&v, 41040);
    c2s(&v, b, connect_will(b, "w1"));
    s2c(&v, b, connack_pkt(b, NULL));
    int before = n_sess;
    rst(&v);
    cr_assert_eq(n_pubs, 2);
    struct ev_pub *e = &pubs[1];
    cr_assert(e->will);
    cr_assert_str_eq(e->client, "w1");
    cr_assert_str_eq(e->topic, "m/w");
    cr_assert_eq(e->n_peids, 1);
    cr_assert_str_eq(e->peids[0], "e7");
    cr_assert_str_eq(e->ctype, "text/plain");
    cr_assert_str_eq(e->payload, "bye");
    cr_assert_eq(e->qos, 1);
    cr_assert_eq(e->retain, 1);
    cr_assert_eq(e->seq, 2, "a Will takes the worker's next publication number");
    cr_assert_eq(sess[before].kind, WM_MQTT_SESSION_END);
    cr_assert_eq(e->n_sess_before, before + 1, "the session's end is reported before its Will is published");
    cr_assert(!pubs[0].will);
    /* normal DISCONNECT: discarded; DISCONNECT 0x04: published */
    open_conv(&w, 41041);
    c2s(&w, b, connect_will(b, "w2"));
    s2c(&w, b, connack_pkt(b, NULL));
    c2s(&w, b, disconnect_pkt(b, -1));
    rst(&w);
    cr_assert_eq(n_pubs, 2);
    open_conv(&y, 41042);
    c2s(&y, b, connect_will(b, "w3"));
    s2c(&y, b, connack_pkt(b, NULL));
    c2s(&y, (const uint8_t[]){0xe0, 0x01, 0x04}, 3);
    cr_assert_eq(n_pubs, 3);
    cr_assert_str_eq(pubs[2].client, "w3");
    /* the broker's DISCONNECT publishes it too; a refused CONNACK never accepted it */
    open_conv(&z, 41043);
    c2s(&z, b, connect_will(b, "w4"));
    s2c(&z, b, connack_pkt(b, NULL));
    s2c(&z, (const uint8_t[]){0xe0, 0x01, 0x8d}, 3); /* Keep Alive timeout */
    cr_assert_eq(n_pubs, 4);
    struct conv r;
    open_conv(&r, 41044);
    c2s(&r, b, connect_will(b, "w5"));
    s2c(&r, (const uint8_t[]){0x20, 0x03, 0x00, 0x87, 0x00}, 5);
    rst(&r);
    cr_assert_eq(n_pubs, 4);
    cr_assert_eq(layer.c.wills_kept, 5);
    cr_assert_eq(layer.c.wills_published, 3);
    cr_assert_eq(layer.c.wills_matched, 3);
    cr_assert_eq(layer.c.wills_discarded, 2);
    cr_assert_eq(layer.c.publish_seen, 1, "a Will is not a client PUBLISH");
    /* a shutdown is not the end of a connection: no Will */
    struct conv q;
    open_conv(&q, 41045);
    c2s(&q, b, connect_will(b, "w6"));
    s2c(&q, b, connack_pkt(b, NULL));
    assert_publish_conservation();
    cr_assert_eq(n_pubs, 4);
}

Test(mqtt, the_will_delay_runs_in_packet_time)
{
    uint8_t b[256];
    struct conv v[8];
    /* delay 10 s, Session Expiry 100 s: published 10 s after the loss */
    will_conn(&v[0], 41050, "d1", true, 100, 10, false);
    rst(&v[0]);
    uint64_t t0 = now_ns;
    cr_assert_eq(n_pubs, 0);
    cr_assert_eq(layer.c.wills_waiting, 1);
    now_ns = layer.now_ns = t0 + 9999999999ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(n_pubs, 0);
    now_ns = layer.now_ns = t0 + 10000000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(n_pubs, 1);
    cr_assert(pubs[0].will);
    cr_assert_str_eq(pubs[0].client, "d1");
    cr_assert_eq(layer.c.wills_waiting, 0);
    /* delay 10 s, Session Expiry 3 s: the session ends first */
    will_conn(&v[1], 41051, "d2", true, 3, 10, false);
    rst(&v[1]);
    t0 = now_ns;
    now_ns = layer.now_ns = t0 + 2900000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(n_pubs, 1);
    now_ns = layer.now_ns = t0 + 3000000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(n_pubs, 2);
    cr_assert_str_eq(pubs[1].client, "d2");
    /* delay 10 s, Session Expiry 0: the session ends with the connection, the Will goes at once */
    will_conn(&v[2], 41052, "d3", true, -1, 10, false);
    rst(&v[2]);
    cr_assert_eq(n_pubs, 3);
    /* the client resumes its session within the delay: never published */
    will_conn(&v[3], 41053, "d4", true, 100, 10, false);
    rst(&v[3]);
    open_conv(&v[4], 41054);
    c2s(&v[4], b, connect_sess(b, "d4", false, 100));
    s2c(&v[4], b, connack_props(b, NULL, true, NULL, 0));
    cr_assert_eq(layer.c.wills_cancelled, 1);
    now_ns = layer.now_ns = now_ns + 20000000000ull;
    wm_mqtt_layer_tick(&layer);
    cr_assert_eq(n_pubs, 3);
    /* it reconnects with a new session (Session Present 0): the old one ended, its Will goes then */
    will_conn(&v[5], 41055, "d5", true, 100, 10, false);
    rst(&v[5]);
    n_sess = 0;
    open_conv(&v[6], 41056);
    c2s(&v[6], b, connect_sess(b, "d5", true, 100));
    s2c(&v[6], b, connack_pkt(b, NULL));
    cr_assert_eq(n_pubs, 4);
    cr_assert_str_eq(pubs[3].client, "d5");
    cr_assert_eq(sess[0].kind, WM_MQTT_SESSION_NEW);
    cr_assert_eq(pubs[3].n_sess_before, 1, "published after the new session started");
    cr_assert_eq(layer.c.wills_delayed, 4);
    cr_assert_eq(layer.c.wills_waiting, 0);
    assert_publish_conservation();
}

Test(mqtt, a_will_of_a_connection_taken_over)
{
    uint8_t b[256];
    struct conv v[4];
    /* delay 10: the newer connection resumes the session before the old one ends: never published */
    will_conn(&v[0], 41060, "t", true, 100, 10, false);
    open_conv(&v[1], 41061);
    c2s(&v[1], b, connect_sess(b, "t", false, 100));
    s2c(&v[1], b, connack_props(b, NULL, true, NULL, 0));
    s2c(&v[0], (const uint8_t[]){0xe0, 0x01, 0x8e}, 3); /* Session taken over */
    cr_assert_eq(n_pubs, 0);
    cr_assert_eq(layer.c.wills_cancelled, 1);
    /* delay 0: published when the old connection ends */
    will_conn(&v[2], 41062, "u", true, 100, 0, false);
    open_conv(&v[3], 41063);
    c2s(&v[3], b, connect_sess(b, "u", false, 100));
    s2c(&v[3], b, connack_props(b, NULL, true, NULL, 0));
    cr_assert_eq(n_pubs, 0);
    rst(&v[2]);
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].client, "u");
    assert_publish_conservation();
}

Test(mqtt, wills_are_bounded)
{
    layer_with(0, 1, 40);
    uint8_t b[256];
    struct conv v[3];
    open_conv(&v[0], 41070);
    c2s(&v[0], b, connect_will_x(b, "a", true, -1, -1, "m/a-topic-that-is-far-too-long-for-40-bytes"));
    s2c(&v[0], b, connack_pkt(b, NULL));
    cr_assert_eq(layer.c.wills_too_large, 1);
    will_conn(&v[1], 41071, "b", true, -1, -1, false); /* takes the one slot */
    will_conn(&v[2], 41072, "c", true, -1, -1, false);
    cr_assert_eq(layer.c.wills_untracked, 1);
    rst(&v[0]);
    rst(&v[2]);
    cr_assert_eq(n_pubs, 0, "a Will not kept is never matched");
    rst(&v[1]);
    cr_assert_eq(n_pubs, 1);
    will_conn(&v[0], 41073, "d", true, -1, -1, false); /* the slot is free again */
    cr_assert_eq(layer.c.wills_kept, 2);
    assert_publish_conservation();
}

/* The end of the run is not the end of a connection: no Will is published,
 * those still held and those waiting for their delay are counted. */
Test(mqtt, wills_at_the_end_of_the_run_are_counted_not_published)
{
    struct conv v, w;
    will_conn(&v, 41095, "held", true, -1, -1, false);
    will_conn(&w, 41096, "late", true, 600, 600, false);
    rst(&w); /* waits 600 s for its delay */
    cr_assert_eq(layer.c.wills_waiting, 1);
    wm_flow_table_flush(&path.flows);
    wm_mqtt_layer_finish(&layer);
    cr_assert_eq(n_pubs, 0);
    cr_assert_eq(layer.c.wills_held_at_end, 1);
    cr_assert_eq(layer.c.wills_waiting, 1);
    cr_assert_eq(layer.c.wills_published + layer.c.wills_discarded, 0);
}

Test(mqtt, a_pubrec_error_releases_the_qos2_id)
{
    uint8_t b[256];
    struct conv v;
    connect_as(&v, 41080, "q");
    c2s(&v, b, publish_q(b, "m/1", 2, false, false, 5));
    s2c(&v, (const uint8_t[]){0x50, 0x03, 0x00, 0x05, 0x10}, 5); /* PUBREC 0x10 No matching subscribers: success */
    c2s(&v, b, publish_q(b, "m/1", 2, true, false, 5));          /* still the same message */
    cr_assert_eq(layer.c.qos2_duplicates, 1);
    s2c(&v, (const uint8_t[]){0x50, 0x03, 0x00, 0x05, 0x97}, 5); /* PUBREC 0x97 Quota exceeded: exchange over */
    cr_assert_eq(layer.c.qos2_pubrec_errors, 1);
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_REFUSED], 1, "refused: no PUBREL comes, never delivered");
    c2s(&v, b, publish_q(b, "m/2", 2, true, false, 5)); /* a new message with the released id */
    c2s(&v, pubrel(5), 4);
    cr_assert_eq(n_pubs, 1);
    cr_assert_str_eq(pubs[0].topic, "m/2");
    cr_assert_eq(layer.c.qos2_duplicates, 1);
    assert_publish_conservation();
}

/* A CONNECT with Keep Alive ka and Session Expiry 0. */
static size_t connect_ka(uint8_t *out, const char *client, uint16_t ka)
{
    size_t n = connect_pkt(out, client, 5);
    out[n - strlen(client) - 2 - 1 - 2] = (uint8_t)(ka >> 8); /* Keep Alive, before the empty properties */
    out[n - strlen(client) - 2 - 1 - 1] = (uint8_t)ka;
    return n;
}

/* A quiet connection keeps its session for as long as the broker keeps the
 * connection: 1.5 x Keep Alive (+ WM_MQTT_KEEPALIVE_GRACE_S), for ever with
 * Keep Alive 0 (§3.1.2.10); the flow table's eviction ends no session. */
Test(mqtt, a_quiet_connection_keeps_its_session_for_its_keep_alive)
{
    uint8_t b[256];
    struct conv v[3];
    const uint16_t ka[3] = {0, 10, 600};
    const char *id[3] = {"ka0", "ka10", "ka600"};
    for (int i = 0; i < 3; i++) {
        open_conv(&v[i], (uint16_t)(41100 + i));
        c2s(&v[i], b, connect_ka(b, id[i], ka[i]));
        s2c(&v[i], b, connack_pkt(b, NULL));
    }
    int ends = n_sess;
    uint64_t t0 = now_ns;
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 16ull * 1000000000ull, 8);
    cr_assert_eq(n_sess, ends, "ka10 is still within 1.5 x 10 s + grace");
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 18ull * 1000000000ull, 8);
    cr_assert_eq(n_sess, ends + 1);
    cr_assert_str_eq(sess[n_sess - 1].client, "ka10");
    cr_assert_eq(sess[n_sess - 1].kind, WM_MQTT_SESSION_END);
    /* 600 s (the table's idle limit) is not ka600's: the broker waits 900 s */
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 700ull * 1000000000ull, 8);
    cr_assert_eq(n_sess, ends + 1);
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 903ull * 1000000000ull, 8);
    cr_assert_eq(n_sess, ends + 2);
    cr_assert_str_eq(sess[n_sess - 1].client, "ka600");
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 86400ull * 1000000000ull, 8);
    cr_assert_eq(n_sess, ends + 2, "Keep Alive 0: the broker never closes it for silence");
    cr_assert_eq(path.flows.active, 1);
    /* The CONNACK's Server Keep Alive is the one that applies (§3.2.2.3.14). */
    struct conv w;
    open_conv(&w, 41110);
    c2s(&w, b, connect_ka(b, "ska", 0));
    s2c(&w, b, connack_props(b, NULL, false, (const uint8_t[]){0x13, 0x00, 0x04}, 3));
    t0 = now_ns;
    for (int k = 0; k < 8; k++) wm_flow_table_expire(&path.flows, t0 + 9ull * 1000000000ull, 8);
    cr_assert_str_eq(sess[n_sess - 1].client, "ska");
    cr_assert_eq(sess[n_sess - 1].kind, WM_MQTT_SESSION_END);
    assert_publish_conservation();
}

Test(mqtt, an_evicted_connection_ends_no_session)
{
    uint8_t b[256];
    struct conv v, w[64];
    open_conv(&v, 41120);
    c2s(&v, b, connect_ka(b, "quiet", 0));
    s2c(&v, b, connack_pkt(b, NULL));
    c2s(&v, b, publish_q(b, "m/q", 2, false, false, 3)); /* awaiting its PUBREL */
    int ends = n_sess;
    for (int i = 0; i < 64; i++) open_conv(&w[i], (uint16_t)(41200 + i)); /* 64 more: the table is full */
    cr_assert_eq(path.flows.c.closed[WM_FLOW_CLOSE_EVICTED], 1);
    cr_assert_eq(layer.c.sessions_unobserved, 1);
    for (int i = 0; i < n_sess; i++)
        cr_assert(i < ends || sess[i].kind != WM_MQTT_SESSION_END, "no session ended");
    cr_assert_eq(layer.c.publish[WM_MQTT_PUB_UNOBSERVED], 1);
    assert_publish_conservation();
}

Test(mqtt, unsubscribe_takes_effect_at_the_unsuback)
{
    uint8_t b[512];
    struct conv v;
    connect_as(&v, 41090, "u");
    const char *const f[] = {"a/#", "b/#", "c/#"};
    c2s(&v, b, unsubscribe_n(b, 7, f, 3));
    cr_assert_eq(n_subs, 0, "nothing before the broker's UNSUBACK");
    s2c(&v, b, suback_pkt(b, 7, (const uint8_t[]){0, 0, 0}, 3)); /* a SUBACK answers no UNSUBSCRIBE */
    cr_assert_eq(layer.c.suback_unknown, 1);
    s2c(&v, b, unsuback_pkt(b, 8, (const uint8_t[]){0, 0, 0}, 3));
    cr_assert_eq(layer.c.unsuback_unknown, 1);
    cr_assert_eq(n_subs, 0);
    s2c(&v, b, unsuback_pkt(b, 7, (const uint8_t[]){0x00, 0x11, 0x87}, 3));
    cr_assert_eq(n_subs, 2, "0x00 and 0x11 remove, 0x87 keeps");
    cr_assert(subs[0].unsub && subs[1].unsub);
    cr_assert_str_eq(subs[0].filter, "a/#");
    cr_assert_str_eq(subs[1].filter, "b/#");
    cr_assert_eq(layer.c.unsubs_removed, 1);
    cr_assert_eq(layer.c.unsubs_no_subscription, 1);
    cr_assert_eq(layer.c.unsubs_refused_by_broker, 1);
    cr_assert_eq(layer.c.unsubscribe_filters, 3);
    /* one whose UNSUBACK never comes removes nothing */
    c2s(&v, b, unsubscribe_n(b, 9, f, 1));
    rst(&v);
    cr_assert_eq(n_subs, 2);
    cr_assert_eq(layer.c.unsubscribes_unacknowledged, 1);
    assert_publish_conservation();
}
