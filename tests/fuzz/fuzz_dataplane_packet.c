/* Fuzz target over the data plane's per-packet path (dataplane/pkt_path.h):
 * frames -> parse -> flow table -> TCP reassembly -> MQTT v5 sessions
 * (dataplane/mqtt_session.h) -> match (a sink that learns up to 16
 * subscriptions and matches with the codec's reference wm_topic_match).
 *
 * Input: records of [len lo][len hi][time step] followed by len bytes of
 * frame (len taken modulo 2048, cut at the end of input). The time step
 * advances the clock by step * 100 ms so timeouts fire. The parser drops a
 * frame whose IPv4 header checksum is wrong, which would stop nearly every
 * mutated frame before TCP: the header checksum of an IPv4 frame (up to two
 * VLAN tags) is refilled, unless bit 15 of the record's length asks for the
 * bytes as they are (so wrong checksums are fuzzed too). The table is tiny
 * (8 flows, 12 out-of-order blocks, 3 per direction) so every bound is hit.
 *
 * Invariants checked (abort on violation): the consumer sees on_open before
 * data and exactly one on_close after; data chunks are non-empty and
 * readable; at the end every block, staging buffer and alias slot is back in
 * its pool, no entry is left, every frame is counted exactly once and every
 * client PUBLISH seen has exactly one outcome. The wrapping consumer checks
 * the flow-table contract, then hands every event to the MQTT layer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "dataplane/mqtt_session.h"
#include "dataplane/pkt_path.h"
#include "tests/lib/pkt_craft.h"

struct fuzz_session {
    int open;
    uint8_t ended[2];
    uint64_t bytes[2];
    uint32_t digest;
};

static uint64_t opens, closes;
static struct wm_mqtt_layer layer;

/* The fuzz session sits after the MQTT session in the user area. */
static struct fuzz_session *fs(struct wm_flow *f)
{
    return (struct fuzz_session *)((uint8_t *)wm_flow_user(f) + ((wm_mqtt_session_size() + 7) & ~(size_t)7));
}

static char sub_filters[16][64];
static size_t sub_len[16];
static unsigned n_sub;

static enum wm_mqtt_sub_status f_subscribe(void *ctx, const struct wm_mqtt_subscribe *s)
{
    if (n_sub == 16 || s->filter.len >= 64) return WM_MQTT_SUB_REJECTED;
    memcpy(sub_filters[n_sub], s->filter.p, s->filter.len);
    sub_len[n_sub++] = s->filter.len;
    return WM_MQTT_SUB_INSTALLED;
}

static enum wm_mqtt_pub_outcome f_publish(void *ctx, const struct wm_mqtt_publish *p)
{
    for (unsigned i = 0; i < n_sub; i++)
        if (wm_topic_match(sub_filters[i], sub_len[i], p->topic, p->topic_len)) return WM_MQTT_PUB_MATCHED;
    return WM_MQTT_PUB_NO_MATCH;
}

static const struct wm_mqtt_sink sink = {f_subscribe, NULL, f_publish, NULL, NULL};

#define CHECK(c)                                                                \
    do {                                                                        \
        if (!(c)) {                                                             \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
            abort();                                                            \
        }                                                                       \
    } while (0)

static void f_open(void *ctx, struct wm_flow *f)
{
    struct fuzz_session *s = fs(f);
    memset(s, 0, sizeof *s);
    s->open = 1;
    opens++;
    wm_mqtt_stream_ops.on_open(&layer, f);
}

static void f_data(void *ctx, struct wm_flow *f, int dir, const uint8_t *p, uint32_t n)
{
    struct fuzz_session *s = fs(f);
    CHECK(s->open && n > 0 && (dir == 0 || dir == 1) && !s->ended[dir]);
    for (uint32_t i = 0; i < n; i++) s->digest = s->digest * 31 + p[i];
    s->bytes[dir] += n;
    CHECK(s->bytes[dir] == f->dir[dir].delivered);
    wm_mqtt_stream_ops.on_data(&layer, f, dir, p, n);
}

static void f_dir_end(void *ctx, struct wm_flow *f, int dir, enum wm_dir_end why)
{
    struct fuzz_session *s = fs(f);
    CHECK(s->open && !s->ended[dir]);
    s->ended[dir] = 1;
    wm_mqtt_stream_ops.on_dir_end(&layer, f, dir, why);
}

static void f_close(void *ctx, struct wm_flow *f, enum wm_flow_close_reason why)
{
    struct fuzz_session *s = fs(f);
    CHECK(s->open);
    s->open = 0;
    closes++;
    wm_mqtt_stream_ops.on_close(&layer, f, why);
}

static const struct wm_stream_ops ops = {f_open, f_data, f_dir_end, f_close};

static void refill_ip4_checksum(uint8_t *f, size_t len)
{
    size_t off = 12;
    for (int tags = 0; tags <= 2 && off + 2 <= len; tags++) {
        unsigned type = (unsigned)f[off] << 8 | f[off + 1];
        if (type == 0x0800) {
            off += 2;
            if (off + 20 <= len && off + (size_t)(f[off] & 0x0f) * 4 <= len) wm_craft_ip4_checksum(f + off);
            return;
        }
        if (type != 0x8100 && type != 0x88a8 && type != 0x9100) return;
        off += 4;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void *mem, *mqtt_mem;
    static struct wm_pkt_path path;
    struct wm_mqtt_config mcfg;
    wm_mqtt_config_default(&mcfg);
    mcfg.max_packet = 512;
    mcfg.staging_buffers = 3;
    mcfg.alias_slots = 6;
    if (!mqtt_mem) CHECK((mqtt_mem = malloc(wm_mqtt_layer_memsize(&mcfg))) != NULL);
    CHECK(wm_mqtt_layer_init(&layer, mqtt_mem, &mcfg, &sink) == 0);
    n_sub = 0;
    struct wm_pkt_path_config cfg = {.mqtt_ports = {1883, 8883}, .n_ports = 2};
    wm_flow_table_config_default(&cfg.flows);
    cfg.flows.max_flows = 8;
    cfg.flows.ooo_pool_blocks = 12;
    cfg.flows.ooo_blocks_per_dir = 3;
    cfg.flows.user_size = (uint32_t)(((wm_mqtt_session_size() + 7) & ~(size_t)7) + sizeof(struct fuzz_session));
    cfg.flows.syn_timeout_ns = 1000000000ull;
    cfg.flows.idle_timeout_ns = 10000000000ull;
    cfg.flows.closed_timeout_ns = 2000000000ull;
    if (!mem) CHECK(posix_memalign(&mem, 64, wm_pkt_path_memsize(&cfg)) == 0);
    CHECK(wm_pkt_path_init(&path, mem, &cfg, &ops, NULL) == 0);
    opens = closes = 0;

    uint64_t now = 1000000000ull;
    size_t off = 0;
    while (size - off >= 3) {
        size_t len = (size_t)(data[off] | data[off + 1] << 8) % 2048;
        int keep_checksum = data[off + 1] >> 7;
        now += (uint64_t)data[off + 2] * 100000000ull;
        off += 3;
        if (len > size - off) len = size - off;
        /* An exact-size copy so reading one byte past the frame is caught. */
        uint8_t *frame = malloc(len ? len : 1);
        memcpy(frame, data + off, len);
        if (!keep_checksum) refill_ip4_checksum(frame, len);
        wm_pkt_path_frame(&path, frame, len, now, NULL);
        free(frame);
        off += len;
        wm_flow_table_expire(&path.flows, now, 4);
    }
    wm_flow_table_flush(&path.flows);
    wm_mqtt_layer_finish(&layer);
    CHECK(path.flows.active == 0);
    CHECK(path.flows.ooo.n_free == path.flows.ooo.n_blocks);
    CHECK(opens == closes);
    CHECK(wm_pkt_path_check_conservation(&path));
    CHECK(wm_mqtt_publish_conserved(&layer.c));
    CHECK(layer.stage_free_n == mcfg.staging_buffers);
    CHECK(layer.alias_free_n == mcfg.alias_slots);
    CHECK(layer.pending_n == 0); /* pending SUBSCRIBE copies freed with their connection */
    return 0;
}
