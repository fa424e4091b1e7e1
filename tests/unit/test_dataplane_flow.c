/* TCP connection tracking and per-direction reassembly, driven by crafted
 * frames through the real parser: segments split anywhere, several messages in
 * one segment, reordering, duplicates, overlapping retransmissions with other
 * bytes (first copy wins), a missing segment, RST, FIN, midstream starts,
 * IPv6, VLANs, bounds of the out-of-order buffers and of the flow table. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/flow_table.h"
#include "dataplane/pkt_parse.h"
#include "tests/lib/pkt_craft.h"

/* ------------------------------------------------------------ recorder */

#define REC_MAX_FLOWS 1024
#define REC_CAP 65536

struct rec_flow {
    uint8_t *bytes[2];
    size_t len[2];
    int opened, closed, close_reason;
    int dir_end[2];    /* 0 none, 1 + enum wm_dir_end */
    const uint8_t *last_ptr[2];
};

static struct rec_flow rec[REC_MAX_FLOWS + 1];
static int rec_closes[WM_FLOW_CLOSE_COUNT];
static uint64_t rec_idle_ns[REC_MAX_FLOWS + 1]; /* the idle limit a consumer gives flow id i (0: table's) */

static struct rec_flow *rec_of(struct wm_flow *f)
{
    cr_assert(f->id <= REC_MAX_FLOWS, "too many flows for the recorder");
    return &rec[f->id];
}

static void rec_open(void *ctx, struct wm_flow *f)
{
    struct rec_flow *r = rec_of(f);
    cr_assert_eq(r->opened, r->closed, "on_open twice without on_close");
    r->opened++;
    r->dir_end[0] = r->dir_end[1] = 0;
    f->idle_ns = rec_idle_ns[f->id];
}

static void rec_data(void *ctx, struct wm_flow *f, int dir, const uint8_t *p, uint32_t n)
{
    struct rec_flow *r = rec_of(f);
    cr_assert(r->opened > r->closed, "data outside open/close");
    cr_assert(n > 0);
    if (!r->bytes[dir]) r->bytes[dir] = malloc(REC_CAP);
    cr_assert(r->len[dir] + n <= REC_CAP);
    memcpy(r->bytes[dir] + r->len[dir], p, n);
    r->len[dir] += n;
    r->last_ptr[dir] = p;
}

static void rec_dir_end(void *ctx, struct wm_flow *f, int dir, enum wm_dir_end why)
{
    struct rec_flow *r = rec_of(f);
    cr_assert_eq(r->dir_end[dir], 0, "direction ended twice");
    r->dir_end[dir] = 1 + (int)why;
}

static void rec_close(void *ctx, struct wm_flow *f, enum wm_flow_close_reason why)
{
    struct rec_flow *r = rec_of(f);
    cr_assert_eq(r->opened, r->closed + 1, "on_close without on_open");
    r->closed++;
    r->close_reason = why;
    rec_closes[why]++;
}

static const struct wm_stream_ops rec_ops = {rec_open, rec_data, rec_dir_end, rec_close};

static struct wm_flow_table table;
static void *table_mem;
static uint64_t now_ns;
static uint64_t segments;

static void reset_recorder(void)
{
    for (int i = 0; i <= REC_MAX_FLOWS; i++) {
        free(rec[i].bytes[0]);
        free(rec[i].bytes[1]);
    }
    memset(rec, 0, sizeof rec);
    memset(rec_closes, 0, sizeof rec_closes);
}

static void setup_table(uint32_t max_flows, uint32_t pool_blocks, uint16_t per_dir)
{
    struct wm_flow_table_config cfg;
    wm_flow_table_config_default(&cfg);
    cfg.max_flows = max_flows;
    cfg.ooo_pool_blocks = pool_blocks;
    cfg.ooo_blocks_per_dir = per_dir;
    cfg.user_size = 40;
    free(table_mem);
    cr_assert_eq(posix_memalign(&table_mem, 64, wm_flow_table_memsize(&cfg)), 0);
    cr_assert_eq(wm_flow_table_init(&table, table_mem, &cfg, &rec_ops, NULL), 0);
    reset_recorder();
    now_ns = 1000000000ull;
    segments = 0;
}

static void default_setup(void) { setup_table(256, 256, 32); }
static void teardown(void)
{
    reset_recorder();
    free(table_mem);
    table_mem = NULL;
}

/* Every processed segment has exactly one disposition. */
static void assert_conservation(void)
{
    uint64_t sum = 0;
    for (int d = 0; d < WM_SD_COUNT; d++) sum += table.c.disposition[d];
    cr_assert_eq(sum, segments, "dispositions %lu != segments %lu", (unsigned long)sum,
                 (unsigned long)segments);
}

/* ------------------------------------------------------------ driving */

static uint8_t frame[4096];

static enum wm_seg_disposition send(const struct wm_craft *ep, uint32_t seq, uint32_t ack, uint8_t flags,
                                    const void *p, size_t n)
{
    size_t len = wm_craft_frame(frame, sizeof frame, ep, seq, ack, flags, p, n);
    cr_assert(len > 0);
    struct wm_pkt_info pi;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_TCP);
    segments++;
    now_ns += 1000;
    return wm_flow_table_process(&table, &pi, now_ns, NULL);
}

struct conv {
    struct wm_craft c, s; /* client -> server and server -> client endpoints */
    uint32_t cisn, sisn;
};

static void conv_ip4(struct conv *v, uint16_t cport, uint32_t cisn, uint32_t sisn)
{
    wm_craft_ip4(&v->c, "192.0.2.10", cport, "192.0.2.1", 1883);
    v->s = wm_craft_reverse(&v->c);
    v->cisn = cisn;
    v->sisn = sisn;
}

static void handshake(const struct conv *v)
{
    cr_assert_eq(send(&v->c, v->cisn, 0, WM_TCP_SYN, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(send(&v->s, v->sisn, v->cisn + 1, WM_TCP_SYN | WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(send(&v->c, v->cisn + 1, v->sisn + 1, WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
}

/* Client data at stream offset off (0 = first byte after the SYN). The ack
 * only covers the server's SYN, so it never declares server bytes lost. */
static enum wm_seg_disposition c2s(const struct conv *v, uint32_t off, const void *p, size_t n)
{
    return send(&v->c, v->cisn + 1 + off, v->sisn + 1, WM_TCP_ACK | WM_TCP_PSH, p, n);
}

static enum wm_seg_disposition s2c(const struct conv *v, uint32_t off, const void *p, size_t n)
{
    return send(&v->s, v->sisn + 1 + off, v->cisn + 1, WM_TCP_ACK | WM_TCP_PSH, p, n);
}

static struct rec_flow *only_flow(void) { return &rec[1]; }

static void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

/* ------------------------------------------------------------ tests */

TestSuite(flow, .init = default_setup, .fini = teardown);

Test(flow, in_order_segments_are_zero_copy)
{
    struct conv v;
    conv_ip4(&v, 40000, 1000, 5000);
    handshake(&v);
    /* Two MQTT PINGREQs and a PUBLISH in one segment: one delivery, in place. */
    static const uint8_t several[] = {0xc0, 0x00, 0xc0, 0x00, 0x30, 0x05, 0x00, 0x01, 'a', 'h', 'i'};
    cr_assert_eq(c2s(&v, 0, several, sizeof several), WM_SD_DELIVERED);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->len[WM_DIR_C2S], sizeof several);
    cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], several, sizeof several), 0);
    size_t l3 = 14 + 20 + 20;
    cr_assert_eq(r->last_ptr[WM_DIR_C2S], frame + l3, "delivered from the packet buffer itself");
    cr_assert_eq(table.c.stream.zero_copy_segments, 1);
    cr_assert_eq(table.c.stream.ooo_bytes, 0);
    cr_assert_eq(s2c(&v, 0, "\xd0\x00", 2), WM_SD_DELIVERED);
    cr_assert_eq(r->len[WM_DIR_S2C], 2);
    cr_assert_eq(table.c.opened_syn, 1);
    assert_conservation();
}

Test(flow, a_message_split_at_every_byte)
{
    uint8_t msg[64];
    fill_pattern(msg, sizeof msg, 1);
    uint16_t port = 30000;
    for (size_t a = 0; a <= sizeof msg; a++) {
        for (size_t b = a; b <= sizeof msg; b += 7) {
            struct conv v;
            conv_ip4(&v, port++, 0xfffffff0u + (uint32_t)a, 77); /* crosses 2^32 for small a */
            handshake(&v);
            if (a) cr_assert_eq(c2s(&v, 0, msg, a), WM_SD_DELIVERED);
            if (b > a) cr_assert_eq(c2s(&v, (uint32_t)a, msg + a, b - a), WM_SD_DELIVERED);
            if (sizeof msg > b) cr_assert_eq(c2s(&v, (uint32_t)b, msg + b, sizeof msg - b), WM_SD_DELIVERED);
            struct wm_flow_key key;
            struct wm_pkt_info pi;
            size_t len = wm_craft_frame(frame, sizeof frame, &v.c, 0, 0, WM_TCP_ACK, NULL, 0);
            wm_pkt_parse(frame, len, &pi);
            wm_flow_key_make(&pi, &key);
            struct wm_flow *f = wm_flow_table_lookup(&table, &key);
            cr_assert_not_null(f);
            struct rec_flow *r = &rec[f->id];
            cr_assert_eq(r->len[WM_DIR_C2S], sizeof msg, "split %zu/%zu", a, b);
            cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], msg, sizeof msg), 0, "split %zu/%zu", a, b);
            cr_assert_eq(send(&v.c, v.cisn + 1 + sizeof msg, v.sisn + 1, WM_TCP_RST, NULL, 0), WM_SD_RST);
        }
    }
    assert_conservation();
}

Test(flow, out_of_order_every_permutation_of_four)
{
    uint8_t msg[4 * 300];
    fill_pattern(msg, sizeof msg, 2);
    int perm[4] = {0, 1, 2, 3};
    uint16_t port = 20000;
    /* Heap's algorithm over the 24 orders. */
    int c[4] = {0}, i = 0, runs = 0;
    for (;;) {
        struct conv v;
        conv_ip4(&v, port++, 123456, 654321);
        handshake(&v);
        for (int k = 0; k < 4; k++) {
            enum wm_seg_disposition d = c2s(&v, (uint32_t)perm[k] * 300, msg + perm[k] * 300, 300);
            cr_assert(d == WM_SD_DELIVERED || d == WM_SD_BUFFERED);
        }
        runs++;
        struct rec_flow *r = &rec[runs];
        cr_assert_eq(r->len[WM_DIR_C2S], sizeof msg, "order %d%d%d%d", perm[0], perm[1], perm[2], perm[3]);
        cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], msg, sizeof msg), 0);
        while (i < 4 && c[i] >= i) c[i++] = 0;
        if (i >= 4) break;
        int j = (i % 2) ? c[i] : 0;
        int tmp = perm[j]; perm[j] = perm[i]; perm[i] = tmp;
        c[i]++;
        i = 1;
    }
    cr_assert_eq(runs, 24);
    cr_assert_eq(table.ooo.n_free, table.ooo.n_blocks, "every block returned to the pool");
    assert_conservation();
}

Test(flow, duplicates_are_dropped_and_counted)
{
    struct conv v;
    conv_ip4(&v, 40001, 1, 2);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "abcd", 4), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&v, 0, "abcd", 4), WM_SD_DUPLICATE);
    cr_assert_eq(c2s(&v, 8, "ijkl", 4), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&v, 8, "ijkl", 4), WM_SD_BUFFERED); /* duplicate of buffered bytes */
    cr_assert_eq(c2s(&v, 4, "efgh", 4), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&v, 4, "efgh", 4), WM_SD_DUPLICATE);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->len[WM_DIR_C2S], 12);
    cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], "abcdefghijkl", 12), 0);
    cr_assert_eq(table.c.stream.duplicate_bytes, 8);
    cr_assert_eq(table.c.stream.overlap_bytes, 4);
    cr_assert_eq(table.c.disposition[WM_SD_DUPLICATE], 2);
    assert_conservation();
}

Test(flow, overlapping_retransmissions_first_copy_wins)
{
    struct conv v;
    conv_ip4(&v, 40002, 100, 200);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "AAAA", 4), WM_SD_DELIVERED);
    /* Overlaps delivered bytes with other content: only the new tail counts. */
    cr_assert_eq(c2s(&v, 2, "xxBB", 4), WM_SD_DELIVERED);
    /* Buffered ahead of a hole, then an overlapping copy with other bytes. */
    cr_assert_eq(c2s(&v, 10, "DDDD", 4), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&v, 8, "CCyyyyEE", 8), WM_SD_BUFFERED);
    /* The hole is filled by a segment overlapping everything. */
    cr_assert_eq(c2s(&v, 0, "zzzzzzCCzzzzzzzzFF", 18), WM_SD_DELIVERED);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->len[WM_DIR_C2S], 18);
    cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], "AAAABBCCCCDDDDEEFF", 18), 0, "%.*s", 18,
                 (const char *)r->bytes[WM_DIR_C2S]);
    cr_assert_eq(table.c.stream.duplicate_bytes, 2 + 6);
    assert_conservation();
}

Test(flow, missing_segment_acknowledged_marks_direction_lost)
{
    struct conv v;
    conv_ip4(&v, 40003, 7000, 9000);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "part1", 5), WM_SD_DELIVERED);
    /* bytes 5..9 never reach us */
    cr_assert_eq(c2s(&v, 10, "part3", 5), WM_SD_BUFFERED);
    cr_assert_eq(table.c.dir_lost_acked, 0);
    /* The server acknowledges all 15 bytes. The capture may show an ACK
     * before the data it covers, so the hole is final only once it stays
     * open for WM_ACKED_HOLE_GRACE more packets (duplicate ACKs here). */
    struct rec_flow *r = only_flow();
    for (int i = 0; i < WM_ACKED_HOLE_GRACE; i++) {
        cr_assert_eq(r->dir_end[WM_DIR_C2S], 0, "lost too early, after %d packets", i);
        cr_assert_eq(send(&v.s, v.sisn + 1, v.cisn + 1 + 15, WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    }
    cr_assert_eq(r->dir_end[WM_DIR_C2S], 1 + WM_DIR_END_LOST);
    cr_assert_eq(r->dir_end[WM_DIR_S2C], 0);
    cr_assert_eq(table.c.dir_lost_acked, 1);
    cr_assert_eq(table.c.stream.discarded_bytes, 5);
    cr_assert_eq(r->len[WM_DIR_C2S], 5, "nothing is guessed over the hole");
    cr_assert_eq(c2s(&v, 15, "more", 4), WM_SD_DIR_ENDED);
    cr_assert_eq(r->len[WM_DIR_C2S], 5);
    /* The other direction still streams. */
    cr_assert_eq(s2c(&v, 0, "ok", 2), WM_SD_DELIVERED);
    cr_assert_eq(r->len[WM_DIR_S2C], 2);
    cr_assert_eq(table.ooo.n_free, table.ooo.n_blocks);
    assert_conservation();
}

Test(flow, ack_seen_before_its_data_is_not_a_loss)
{
    struct conv v;
    conv_ip4(&v, 40016, 7000, 9000);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "part1", 5), WM_SD_DELIVERED);
    /* The capture shows the server's ACK of bytes 5..9 before those bytes. */
    cr_assert_eq(send(&v.s, v.sisn + 1, v.cisn + 1 + 10, WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(s2c(&v, 0, "x", 1), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&v, 5, "part2", 5), WM_SD_DELIVERED);
    for (int i = 0; i < 2 * WM_ACKED_HOLE_GRACE; i++)
        cr_assert_eq(send(&v.s, v.sisn + 2, v.cisn + 1 + 10, WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(table.c.dir_lost_acked, 0);
    cr_assert_eq(only_flow()->len[WM_DIR_C2S], 10);
    assert_conservation();
}

Test(flow, hole_open_at_close_is_lost)
{
    struct conv v;
    conv_ip4(&v, 40004, 1, 1);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "a", 1), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&v, 2, "c", 1), WM_SD_BUFFERED);
    wm_flow_table_flush(&table);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->dir_end[WM_DIR_C2S], 1 + WM_DIR_END_LOST);
    cr_assert_eq(r->close_reason, WM_FLOW_CLOSE_SHUTDOWN);
    cr_assert_eq(table.c.dir_lost_at_close, 1);
    cr_assert_eq(table.active, 0);
    assert_conservation();
}

Test(flow, rst_mid_stream_closes)
{
    struct conv v;
    conv_ip4(&v, 40005, 10, 20);
    handshake(&v);
    /* Half of an MQTT PUBLISH, then the client resets. */
    cr_assert_eq(c2s(&v, 0, "\x30\x10\x00\x03", 4), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&v, 8, "late", 4), WM_SD_BUFFERED);
    cr_assert_eq(send(&v.c, v.cisn + 1 + 4, 0, WM_TCP_RST, NULL, 0), WM_SD_RST);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->closed, 1);
    cr_assert_eq(r->close_reason, WM_FLOW_CLOSE_RST);
    cr_assert_eq(table.c.closed[WM_FLOW_CLOSE_RST], 1);
    cr_assert_eq(table.c.dir_lost_at_close, 1);
    cr_assert_eq(c2s(&v, 4, "more", 4), WM_SD_AFTER_CLOSE);
    cr_assert_eq(r->len[WM_DIR_C2S], 4);
    cr_assert_eq(table.ooo.n_free, table.ooo.n_blocks);
    /* The same endpoints start a new connection: a new consumer session. */
    conv_ip4(&v, 40005, 5000, 6000);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "new", 3), WM_SD_DELIVERED);
    cr_assert_eq(r->opened, 2);
    cr_assert_eq(r->len[WM_DIR_C2S], 7);
    assert_conservation();
}

Test(flow, fin_in_both_directions_closes)
{
    struct conv v;
    conv_ip4(&v, 40006, 300, 400);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "bye", 3), WM_SD_DELIVERED);
    /* FIN arrives before the data it follows: kept until the hole fills. */
    cr_assert_eq(send(&v.c, v.cisn + 1 + 6, v.sisn + 1, WM_TCP_FIN | WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    struct rec_flow *r = only_flow();
    cr_assert_eq(r->dir_end[WM_DIR_C2S], 0);
    cr_assert_eq(c2s(&v, 3, "end", 3), WM_SD_DELIVERED);
    cr_assert_eq(r->dir_end[WM_DIR_C2S], 1 + WM_DIR_END_FIN);
    cr_assert_eq(send(&v.s, v.sisn + 1, v.cisn + 8, WM_TCP_FIN | WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(r->dir_end[WM_DIR_S2C], 1 + WM_DIR_END_FIN);
    cr_assert_eq(r->closed, 1);
    cr_assert_eq(r->close_reason, WM_FLOW_CLOSE_FIN);
    cr_assert_eq(table.c.dir_fin, 2);
    cr_assert_eq(send(&v.c, v.cisn + 8, v.sisn + 2, WM_TCP_ACK, NULL, 0), WM_SD_AFTER_CLOSE);
    cr_assert_eq(table.c.midstream, 0, "the last ACK is not a new connection");
    cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], "byeend", 6), 0);
    assert_conservation();
}

Test(flow, midstream_connections_are_counted_not_delivered)
{
    struct conv v;
    conv_ip4(&v, 40007, 1, 2);
    for (int i = 0; i < 5; i++) cr_assert_eq(c2s(&v, (uint32_t)i * 4, "data", 4), WM_SD_MIDSTREAM);
    cr_assert_eq(s2c(&v, 0, "resp", 4), WM_SD_MIDSTREAM);
    cr_assert_eq(table.c.midstream, 1);
    cr_assert_eq(table.c.stream.delivered_bytes, 0);
    cr_assert_eq(rec[1].opened, 0);
    /* A pure ACK of an unknown connection creates nothing. */
    struct conv w;
    conv_ip4(&w, 40008, 1, 2);
    cr_assert_eq(send(&w.c, 1, 1, WM_TCP_ACK, NULL, 0), WM_SD_NO_FLOW);
    cr_assert_eq(table.active, 1);
    assert_conservation();
}

Test(flow, handshake_seen_from_the_syn_ack)
{
    struct conv v;
    conv_ip4(&v, 40009, 1111, 2222);
    /* The SYN was not captured. */
    cr_assert_eq(send(&v.s, v.sisn, v.cisn + 1, WM_TCP_SYN | WM_TCP_ACK, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(c2s(&v, 0, "cli", 3), WM_SD_DELIVERED);
    cr_assert_eq(s2c(&v, 0, "srv", 3), WM_SD_DELIVERED);
    struct rec_flow *r = only_flow();
    cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], "cli", 3), 0, "client identified from the SYN-ACK");
    cr_assert_eq(memcmp(r->bytes[WM_DIR_S2C], "srv", 3), 0);
    cr_assert_eq(table.c.opened_synack, 1);
    assert_conservation();
}

Test(flow, server_data_before_syn_ack_has_no_isn)
{
    struct conv v;
    conv_ip4(&v, 40010, 1, 2);
    cr_assert_eq(send(&v.c, v.cisn, 0, WM_TCP_SYN, NULL, 0), WM_SD_CONTROL);
    cr_assert_eq(send(&v.c, v.cisn, 0, WM_TCP_SYN, NULL, 0), WM_SD_DUPLICATE);
    cr_assert_eq(table.c.syn_retransmits, 1);
    cr_assert_eq(s2c(&v, 0, "x", 1), WM_SD_NO_ISN);
    assert_conservation();
}

Test(flow, ipv6_and_vlans_are_separate_connections)
{
    struct conv v6;
    wm_craft_ip6(&v6.c, "2001:db8::10", 41000, "2001:db8::1", 1883);
    v6.s = wm_craft_reverse(&v6.c);
    v6.cisn = 42;
    v6.sisn = 4242;
    handshake(&v6);
    cr_assert_eq(c2s(&v6, 3, "def", 3), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&v6, 0, "abc", 3), WM_SD_DELIVERED);
    cr_assert_eq(memcmp(rec[1].bytes[WM_DIR_C2S], "abcdef", 6), 0);

    /* The same addresses and ports on VLAN 10 and on QinQ 20/30. */
    struct conv a, b;
    conv_ip4(&a, 41001, 5, 6);
    a.c.nvlan = 1; a.c.vlan_id[0] = 10;
    a.s = wm_craft_reverse(&a.c);
    b = a;
    b.c.nvlan = b.s.nvlan = 2;
    b.c.vlan_tpid[0] = b.s.vlan_tpid[0] = 0x88a8;
    b.c.vlan_id[0] = b.s.vlan_id[0] = 20;
    b.c.vlan_id[1] = b.s.vlan_id[1] = 30;
    handshake(&a);
    handshake(&b);
    cr_assert_eq(c2s(&a, 0, "vlan10", 6), WM_SD_DELIVERED);
    cr_assert_eq(c2s(&b, 0, "qinq", 4), WM_SD_DELIVERED);
    cr_assert_eq(table.active, 3);
    cr_assert_eq(memcmp(rec[2].bytes[WM_DIR_C2S], "vlan10", 6), 0);
    cr_assert_eq(memcmp(rec[3].bytes[WM_DIR_C2S], "qinq", 4), 0);
    assert_conservation();
}

Test(flow, per_direction_buffer_bound)
{
    setup_table(16, 64, 2);
    struct conv v;
    conv_ip4(&v, 40011, 1, 2);
    handshake(&v);
    uint8_t big[3000];
    fill_pattern(big, sizeof big, 3);
    cr_assert_eq(c2s(&v, 10, big, 3000), WM_SD_BUFFERED); /* two blocks */
    cr_assert_eq(c2s(&v, 5000, big, 10), WM_SD_OOO_OVERFLOW);
    cr_assert_eq(table.c.dir_lost_ooo_flow, 1);
    cr_assert_eq(only_flow()->dir_end[WM_DIR_C2S], 1 + WM_DIR_END_LOST);
    cr_assert_eq(table.ooo.n_free, 64);
    cr_assert_eq(c2s(&v, 0, big, 10), WM_SD_DIR_ENDED);
    assert_conservation();
}

Test(flow, per_core_pool_bound)
{
    setup_table(16, 3, 8);
    struct conv v, w;
    conv_ip4(&v, 40012, 1, 2);
    conv_ip4(&w, 40013, 1, 2);
    handshake(&v);
    handshake(&w);
    cr_assert_eq(c2s(&v, 10, "a", 1), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&v, 20, "b", 1), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&w, 10, "c", 1), WM_SD_BUFFERED);
    cr_assert_eq(c2s(&w, 20, "d", 1), WM_SD_OOO_OVERFLOW);
    cr_assert_eq(table.c.dir_lost_ooo_core, 1);
    cr_assert_eq(table.ooo.n_free, 1, "the lost direction gave its block back");
    cr_assert_eq(c2s(&v, 0, "0123456789", 10), WM_SD_DELIVERED);
    cr_assert_eq(rec[1].len[WM_DIR_C2S], 11);
    assert_conservation();
}

Test(flow, table_filled_beyond_its_bound_evicts_lru)
{
    setup_table(64, 64, 4);
    struct conv v[200];
    for (int i = 0; i < 200; i++) {
        conv_ip4(&v[i], (uint16_t)(10000 + i), (uint32_t)i * 1000, 77);
        handshake(&v[i]);
        /* Flow 0 stays recently used, so it survives every eviction. */
        if (i > 0) cr_assert_eq(c2s(&v[0], (uint32_t)i - 1, "x", 1), WM_SD_DELIVERED);
    }
    cr_assert_eq(table.active, 64);
    cr_assert_eq(table.c.closed[WM_FLOW_CLOSE_EVICTED], 200 - 64);
    cr_assert_eq(rec_closes[WM_FLOW_CLOSE_EVICTED], 200 - 64);
    cr_assert_eq(rec[1].closed, 0, "the busy flow was never evicted");
    cr_assert_eq(rec[2].close_reason, WM_FLOW_CLOSE_EVICTED);
    cr_assert_eq(rec[2].closed, 1);
    cr_assert_eq(rec[200].closed, 0);
    /* An evicted connection continuing mid-stream is counted as such. */
    cr_assert_eq(c2s(&v[1], 0, "late", 4), WM_SD_MIDSTREAM);
    cr_assert_eq(table.c.midstream, 1);
    assert_conservation();
}

Test(flow, idle_connections_time_out)
{
    struct conv v;
    conv_ip4(&v, 40014, 1, 2);
    handshake(&v);
    cr_assert_eq(wm_flow_table_expire(&table, now_ns + 1000, 16), 0);
    cr_assert_eq(wm_flow_table_expire(&table, now_ns + table.cfg.idle_timeout_ns + 1, 16), 1);
    cr_assert_eq(only_flow()->close_reason, WM_FLOW_CLOSE_TIMEOUT);
    cr_assert_eq(table.active, 0);
}

/* Idle limits differ per connection (the MQTT layer sets them from the Keep
 * Alive): the least recently used connection need not be the first to
 * expire, and one that never expires must not hold the others up. */
Test(flow, per_connection_idle_limits)
{
    memset(rec_idle_ns, 0, sizeof rec_idle_ns);
    rec_idle_ns[1] = WM_FLOW_IDLE_NEVER; /* Keep Alive 0: quiet for ever, still there */
    rec_idle_ns[2] = WM_FLOW_IDLE_NEVER;
    rec_idle_ns[3] = 17ull * 1000000000ull; /* Keep Alive 10 */
    struct conv v[4];
    for (int i = 0; i < 4; i++) {
        conv_ip4(&v[i], (uint16_t)(40100 + i), 100u * (uint32_t)i + 1, 7);
        handshake(&v[i]);
    }
    uint64_t t0 = now_ns;
    /* one entry looked at per call: the two that never expire are passed, burst after burst */
    unsigned ended = 0;
    for (int k = 0; k < 8; k++) ended += wm_flow_table_expire(&table, t0 + 18ull * 1000000000ull, 1);
    cr_assert_eq(ended, 1);
    cr_assert_eq(rec[3].close_reason, WM_FLOW_CLOSE_TIMEOUT);
    cr_assert_eq(rec[4].closed, 0, "its limit is the table's 600 s");
    for (int k = 0; k < 8; k++) ended += wm_flow_table_expire(&table, t0 + table.cfg.idle_timeout_ns + 1000, 1);
    cr_assert_eq(ended, 2);
    cr_assert_eq(rec[4].close_reason, WM_FLOW_CLOSE_TIMEOUT);
    for (int k = 0; k < 8; k++) ended += wm_flow_table_expire(&table, t0 + 100 * table.cfg.idle_timeout_ns, 8);
    cr_assert_eq(ended, 2);
    cr_assert_eq(rec[1].closed + rec[2].closed, 0);
    cr_assert_eq(table.active, 2);
    memset(rec_idle_ns, 0, sizeof rec_idle_ns);
}

Test(flow, reused_endpoints_with_a_new_isn)
{
    struct conv v;
    conv_ip4(&v, 40015, 100, 200);
    handshake(&v);
    cr_assert_eq(c2s(&v, 0, "one", 3), WM_SD_DELIVERED);
    conv_ip4(&v, 40015, 999999, 888888);
    handshake(&v);
    cr_assert_eq(rec[1].close_reason, WM_FLOW_CLOSE_REUSED);
    cr_assert_eq(c2s(&v, 0, "two", 3), WM_SD_DELIVERED);
    cr_assert_eq(memcmp(rec[1].bytes[WM_DIR_C2S], "onetwo", 6), 0);
    cr_assert_eq(rec[1].opened, 2);
    assert_conservation();
}

/* Random segmentation, reordering within a bounded window, duplicates and
 * overlapping retransmissions of the same bytes: the stream always comes
 * out whole. */
Test(flow, random_reordering_property)
{
    setup_table(1024, 4096, 64);
    int iters = getenv("WM_FAST_TESTS") ? 100 : 1000;
#if defined(__SANITIZE_ADDRESS__)
    iters = 100;
#endif
    srand(12345);
    static uint8_t msg[20000];
    for (int it = 0; it < iters; it++) {
        size_t n = 1 + (size_t)rand() % 20000;
        fill_pattern(msg, n, (unsigned)it);
        struct conv v;
        conv_ip4(&v, (uint16_t)(1024 + it), (uint32_t)rand() * 2654435761u, (uint32_t)rand());
        handshake(&v);
        /* cut into segments of 1..1460 bytes */
        uint32_t cuts[64], ncut = 0, pos = 0;
        while (pos < n && ncut < 63) {
            cuts[ncut++] = pos;
            pos += 1 + (uint32_t)rand() % 1460;
        }
        cuts[ncut] = (uint32_t)n;
        int order[64];
        for (uint32_t k = 0; k < ncut; k++) order[k] = (int)k;
        for (uint32_t k = 0; k + 1 < ncut; k++) {
            if (rand() % 3 == 0) {
                uint32_t j = k + 1 + (uint32_t)rand() % (ncut - k - 1 < 4 ? ncut - k - 1 : 4);
                int t = order[k]; order[k] = order[j]; order[j] = t;
            }
        }
        for (uint32_t k = 0; k < ncut; k++) {
            uint32_t s = cuts[order[k]], e = order[k] + 1 <= (int)ncut ? cuts[order[k] + 1] : (uint32_t)n;
            if (e > n) e = (uint32_t)n;
            c2s(&v, s, msg + s, e - s);
            if (rand() % 5 == 0) c2s(&v, s, msg + s, e - s);
            if (rand() % 7 == 0 && e - s > 2) c2s(&v, s + 1, msg + s + 1, (e - s) / 2);
        }
        struct rec_flow *r = &rec[it + 1];
        cr_assert_eq(r->len[WM_DIR_C2S], n, "iteration %d: %zu of %zu bytes", it, r->len[WM_DIR_C2S], n);
        cr_assert_eq(memcmp(r->bytes[WM_DIR_C2S], msg, n), 0, "iteration %d", it);
        free(r->bytes[0]);
        r->bytes[0] = NULL;
        cr_assert_eq(send(&v.c, v.cisn + 1 + (uint32_t)n, 0, WM_TCP_RST, NULL, 0), WM_SD_RST);
    }
    cr_assert_eq(table.ooo.n_free, table.ooo.n_blocks);
    assert_conservation();
}
