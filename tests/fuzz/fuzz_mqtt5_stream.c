/* Fuzzes the streaming MQTT v5 decoder and the encoder (codec/mqtt5_decode.h,
 * codec/mqtt5_encode.h).
 *
 * Input: byte 0 = options (bit 0: direction; bit 1: enforce a Maximum Packet
 * Size of 1 + 16 * byte 1; bit 2: check payload formats; bits 2-7: seed of
 * the chunk sizes), byte 1 = Topic
 * Alias Maximum (and packet size), the rest = the TCP byte stream. The stream
 * is delivered in pseudo-random chunks (1..64 bytes, from the seed) and the
 * decoder is called after every chunk on an exact-size heap copy of the bytes
 * received so far, as a connection would, so ASan sees any read past them.
 *
 * Laws checked besides "no crash, no sanitizer report":
 *  - NEED_MORE asks for >= 1 byte, and for exactly the missing count once the
 *    fixed header is complete;
 *  - the outcome is prefix-stable: the result reached on a prefix equals the
 *    result of decoding all remaining input at once (same packet or same
 *    error at the same offset);
 *  - errors carry one of the codec's reason codes and an offset within the
 *    bytes given (at most their end, where a missing field would start); decoded views lie inside the packet;
 *  - decode -> encode -> decode gives an equal packet, re-encoding is
 *    byte-identical (canonical), and the canonical form is never longer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_encode.h"
#include "tests/lib/mqtt5_equal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static bool inside(wm_mqtt5_bytes b, const uint8_t *p, size_t n)
{
    return b.len == 0 || (b.p >= p && b.p + b.len <= p + n);
}

static void check_views(const wm_mqtt5_packet *k, const uint8_t *p)
{
    size_t n = k->length;
    CHECK(inside(k->props.raw, p, n) || k->type == WM_MQTT5_PINGREQ || k->type == WM_MQTT5_PINGRESP);
    if (k->type == WM_MQTT5_PUBLISH) CHECK(inside(k->topic, p, n) && inside(k->payload, p, n));
    if (k->type == WM_MQTT5_CONNECT) CHECK(inside(k->connect.client_id, p, n));
    /* The iterators walk exactly the counted items. */
    size_t pos = 0, c = 0;
    wm_mqtt5_pair kv;
    while (wm_mqtt5_user_prop_next(&k->props, &pos, &kv)) {
        CHECK(inside(kv.key, p, n) && inside(kv.value, p, n));
        c++;
    }
    CHECK(c == k->props.user_property_count);
    if (k->type == WM_MQTT5_SUBSCRIBE || k->type == WM_MQTT5_UNSUBSCRIBE) {
        wm_mqtt5_subscription s;
        pos = c = 0;
        while (wm_mqtt5_subscription_next(k, &pos, &s)) { CHECK(inside(s.filter, p, n)); c++; }
        CHECK(c == k->count && c > 0);
    }
}

/* decode -> encode -> decode -> encode. */
static void check_reencode(const wm_mqtt5_config *cfg, const wm_mqtt5_packet *k)
{
    size_t n = 0, m = 0;
    CHECK(wm_mqtt5_encode(k, NULL, 0, &n) == WM_MQTT5_ENC_BUFFER_TOO_SMALL);
    CHECK(n <= k->length);
    uint8_t *a = malloc(n), *b = malloc(n);
    CHECK(wm_mqtt5_encode(k, a, n, &m) == WM_MQTT5_ENC_OK && m == n);
    wm_mqtt5_packet d;
    wm_mqtt5_result r;
    CHECK(wm_mqtt5_decode(cfg, a, n, &d, &r) == WM_MQTT5_DONE && r.length == n);
    CHECK(wm_mqtt5_packet_equal(k, &d, NULL, 0));
    CHECK(wm_mqtt5_encode(&d, b, n, &m) == WM_MQTT5_ENC_OK && m == n);
    CHECK(memcmp(a, b, n) == 0);
    free(a);
    free(b);
}

static bool reason_ok(uint8_t rc)
{
    return rc == 0x81 || rc == 0x82 || rc == 0x84 || rc == 0x94 || rc == 0x95 || rc == 0x99;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    wm_mqtt5_config cfg = {
        .from = (data[0] & 1) ? WM_MQTT5_FROM_SERVER : WM_MQTT5_FROM_CLIENT,
        .maximum_packet_size = (data[0] & 2) ? 1u + 16u * data[1] : 0,
        .topic_alias_maximum = data[1],
        .check_payload_format = (data[0] & 4) != 0,
    };
    uint32_t seed = 0x9E3779B9u ^ (uint32_t)(data[0] >> 2) * 2654435761u;
    const uint8_t *in = data + 2;
    size_t len = size - 2, off = 0, avail = 0;

    while (off < len) {
        seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5;
        avail += 1 + seed % 64;
        if (avail > len) avail = len;
        for (;;) {
            size_t have = avail - off;
            uint8_t *win = malloc(have ? have : 1);
            memcpy(win, in + off, have);
            wm_mqtt5_packet k;
            wm_mqtt5_result r;
            wm_mqtt5_status st = wm_mqtt5_decode(&cfg, win, have, &k, &r);
            CHECK(st == r.status);
            if (st == WM_MQTT5_NEED_MORE) {
                CHECK(r.need >= 1);
                if (r.length) CHECK(r.length > have && r.need == r.length - have);
                free(win);
                if (avail == len) return 0;   /* the stream ends inside a packet */
                break;
            }
            /* Prefix stability: all remaining input at once gives the same. */
            wm_mqtt5_packet w;
            wm_mqtt5_result rw;
            wm_mqtt5_status sw = wm_mqtt5_decode(&cfg, in + off, len - off, &w, &rw);
            CHECK(sw == st);
            if (st == WM_MQTT5_ERROR) {
                CHECK(rw.err == r.err && rw.offset == r.offset && rw.reason_code == r.reason_code);
                CHECK(r.err != WM_MQTT5_E_OK && reason_ok(r.reason_code));
                CHECK(r.reason_code == wm_mqtt5_err_reason(r.err));
                /* == have: a field missing at the packet's end. */
                CHECK(r.offset <= have);
                free(win);
                return 0;                     /* a receiver closes the connection */
            }
            CHECK(r.length >= 2 && r.length <= have && rw.length == r.length);
            CHECK(!cfg.maximum_packet_size || r.length <= cfg.maximum_packet_size);
            CHECK(wm_mqtt5_packet_equal(&k, &w, NULL, 0));
            check_views(&k, win);
            check_reencode(&cfg, &k);
            free(win);
            off += r.length;
            if (off == avail) break;
        }
    }
    return 0;
}
