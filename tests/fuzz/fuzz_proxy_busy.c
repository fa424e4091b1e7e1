/* libFuzzer target for the reading of a refused client's CONNECT
 * (dataplane/proxy_busy.h). Input: byte 0 picks a chunk size (1..256); the
 * rest is what the client sends. Law: fed in chunks, the counter agrees with
 * the codec's framer (wm_mqtt5_frame) on the whole stream — CONNECT exactly
 * with the chunk holding the packet's last byte when the stream starts with
 * a whole CONNECT that has a body, BAD when it starts with anything else
 * (framer error, other type, empty body), MORE while bytes are missing —
 * and once CONNECT or BAD it stays so. */
#include <stdint.h>
#include <stdlib.h>

#include "codec/mqtt5_decode.h"
#include "dataplane/proxy_busy.h"

#define MAX_PACKET 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536) return 0;
    size_t chunk = (size_t)data[0] + 1;
    const uint8_t *s = data + 1;
    size_t n = size - 1;
    wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = MAX_PACKET };
    wm_mqtt5_result r;
    wm_mqtt5_status st = n ? wm_mqtt5_frame(&cfg, s, n, &r) : WM_MQTT5_NEED_MORE;
    bool connect = n && (s[0] >> 4) == WM_MQTT5_CONNECT;
    /* The framer looks at the type byte first, so a stream that is not a
     * CONNECT is BAD from its first byte on whatever the rest. */
    bool bad = n && (!connect || st == WM_MQTT5_ERROR || (st == WM_MQTT5_DONE && r.length <= 2));
    size_t done_at = !bad && st == WM_MQTT5_DONE ? r.length : 0;   /* bytes that make the CONNECT whole */

    wm_proxy_busy b;
    wm_proxy_busy_init(&b);
    wm_proxy_busy_status last = WM_PROXY_BUSY_MORE;
    for (size_t off = 0; off < n; off += chunk) {
        size_t m = n - off < chunk ? n - off : chunk;
        wm_proxy_busy_status got = wm_proxy_busy_feed(&b, MAX_PACKET, s + off, (uint32_t)m);
        if (last != WM_PROXY_BUSY_MORE && got != last) abort();
        if (got == WM_PROXY_BUSY_CONNECT && (!done_at || done_at > off + m || (last == WM_PROXY_BUSY_MORE && done_at <= off)))
            abort();
        if (got == WM_PROXY_BUSY_BAD && !bad) abort();
        last = got;
    }
    if (bad && last != WM_PROXY_BUSY_BAD) abort();
    if (done_at && last != WM_PROXY_BUSY_CONNECT) abort();
    if (!bad && !done_at && last != WM_PROXY_BUSY_MORE) abort();
    return 0;
}
