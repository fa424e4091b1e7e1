/* Decoding a typical ~100-byte PUBLISH (QoS 1, two User Properties and a
 * Message Expiry Interval, 16-byte payload) with the streaming decoder, and
 * references measured in the same run so the ratios mean something on a
 * shared machine with Debian's debug build of Google Benchmark:
 *
 *   bm_ref_memcpy_checksum   copy the packet's bytes and sum them: the floor
 *                            of "touch every byte once"
 *   bm_mqtt5_frame           the fixed header only (wm_mqtt5_frame)
 *   bm_mqtt5_decode_whole    the whole packet in one buffer (issue target:
 *                            >= 30 M packets/s on one core)
 *   bm_mqtt5_decode_split    bytes arrive one at a time and the decoder is
 *                            called after each (the worst case of stream
 *                            resumption: n - 1 NEED_MORE calls, then DONE)
 *   bm_mqtt5_encode          the same packet back to bytes
 *
 * Each iteration is one packet: items_per_second = packets/s.
 * Run: make bench BENCH_FILTER=mqtt5  (or build/bench/bench_mqtt5_decode). */
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_encode.h"
#include "perf/bench.h"

#define BATCH 1000

static uint8_t pkt_bytes[256];
static size_t pkt_len;

/* Built with the codec's encoder from the fields above. */
static void typical_publish(void)
{
    if (pkt_len) return;
    static const wm_mqtt5_pair up[] = {
        { { (const uint8_t *)"peid", 4 }, { (const uint8_t *)"road/motorway/42", 16 } },
        { { (const uint8_t *)"schema", 6 }, { (const uint8_t *)"urn:wm:traffic:v1", 17 } },
    };
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_PUBLISH;
    p.qos = 1;
    p.packet_id = 0x1234;
    p.topic = (wm_mqtt5_bytes){ (const uint8_t *)"monaco/traffic/road42", 21 };
    p.props.present = 1ull << WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL | 1ull << WM_MQTT5_PROP_USER_PROPERTY;
    p.props.v[WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL].u = 60;
    p.props.user_properties = up;
    p.props.user_property_count = 2;
    p.payload = (wm_mqtt5_bytes){ (const uint8_t *)"0123456789abcdef", 16 };
    wm_mqtt5_encode(&p, pkt_bytes, sizeof pkt_bytes, &pkt_len);
}

static const wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = 1 << 20, .topic_alias_maximum = 16 };

static void bm_ref_memcpy_checksum(wm_bench_state *st)
{
    typical_publish();
    uint8_t copy[256];
    uint32_t sum = 0;
    /* The copy goes through a volatile length so the compiler cannot fold
     * the loop into one precomputed sum. */
    volatile size_t vlen = pkt_len;
    while (wm_bench_keep_running_batch(st, BATCH)) {
        for (int i = 0; i < BATCH; i++) {
            size_t n = vlen;
            memcpy(copy, pkt_bytes, n);
            for (size_t k = 0; k < n; k++) sum += copy[k];
        }
        wm_bench_do_not_optimize(&sum);
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_counter(st, "packet_bytes", (double)pkt_len);
}
WM_BENCH(bm_ref_memcpy_checksum);

static void bm_mqtt5_frame(wm_bench_state *st)
{
    typical_publish();
    wm_mqtt5_result r;
    size_t sum = 0;
    while (wm_bench_keep_running_batch(st, BATCH)) {
        for (int i = 0; i < BATCH; i++) {
            if (wm_mqtt5_frame(&cfg, pkt_bytes, pkt_len, &r) != WM_MQTT5_DONE) {
                wm_bench_skip_with_error(st, "frame failed");
                return;
            }
            sum += r.length;
        }
        wm_bench_do_not_optimize(&sum);
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
}
WM_BENCH(bm_mqtt5_frame);

static void bm_mqtt5_decode_whole(wm_bench_state *st)
{
    typical_publish();
    wm_mqtt5_packet p;
    wm_mqtt5_result r;
    size_t sum = 0;
    /* wm_mqtt5_decode lives in another translation unit (no LTO), so the
     * calls cannot be elided; one do_not_optimize per batch keeps the
     * cross-language call out of the per-packet cost. */
    while (wm_bench_keep_running_batch(st, BATCH)) {
        for (int i = 0; i < BATCH; i++) {
            if (wm_mqtt5_decode(&cfg, pkt_bytes, pkt_len, &p, &r) != WM_MQTT5_DONE) {
                wm_bench_skip_with_error(st, "decode failed");
                return;
            }
            sum += p.payload.len;
        }
        wm_bench_do_not_optimize(&sum);
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, wm_bench_iterations(st) * (int64_t)pkt_len);
    wm_bench_counter(st, "packet_bytes", (double)pkt_len);
}
WM_BENCH(bm_mqtt5_decode_whole);

static void bm_mqtt5_decode_split(wm_bench_state *st)
{
    typical_publish();
    wm_mqtt5_packet p;
    wm_mqtt5_result r;
    int64_t calls = 0;
    while (wm_bench_keep_running_batch(st, 10))
        for (int i = 0; i < 10; i++) {
            for (size_t k = 1; k < pkt_len; k++) {
                if (wm_mqtt5_decode(&cfg, pkt_bytes, k, &p, &r) != WM_MQTT5_NEED_MORE) {
                    wm_bench_skip_with_error(st, "prefix decoded");
                    return;
                }
            }
            if (wm_mqtt5_decode(&cfg, pkt_bytes, pkt_len, &p, &r) != WM_MQTT5_DONE) {
                wm_bench_skip_with_error(st, "decode failed");
                return;
            }
            calls += (int64_t)pkt_len;
        }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_rate(st, "calls", (double)calls);
}
WM_BENCH(bm_mqtt5_decode_split);

static void bm_mqtt5_encode(wm_bench_state *st)
{
    typical_publish();
    wm_mqtt5_packet p;
    wm_mqtt5_result r;
    wm_mqtt5_decode(&cfg, pkt_bytes, pkt_len, &p, &r);
    uint8_t out[256];
    size_t n;
    while (wm_bench_keep_running_batch(st, BATCH)) {
        for (int i = 0; i < BATCH; i++) wm_mqtt5_encode(&p, out, sizeof out, &n);
        wm_bench_do_not_optimize(out);
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
}
WM_BENCH(bm_mqtt5_encode);
