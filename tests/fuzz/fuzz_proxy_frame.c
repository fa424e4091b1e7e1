/* libFuzzer target for the proxy's framing (dataplane/proxy_frame.h).
 * Input: byte 0 picks the direction (bit 0) and a chunk size (bits 1..7,
 * 1..128 bytes); the rest is the TCP stream. Laws checked:
 *  - framing fed in chunks ends exactly where framing of the whole stream
 *    ends, with the same verdict, packet and PUBLISH counts (TCP may split
 *    the stream anywhere);
 *  - ready only moves forward, never past tail; both runs release the same
 *    bytes, and they are the input's unless a CONNECT/CONNACK was rewritten
 *    to announce the proxy's Maximum Packet Size (then the rewritten packet
 *    must decode, and announce it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy.h"
#include "dataplane/proxy_frame.h"

#define CAP 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > CAP) return 0;
    int dir = data[0] & 1;
    size_t chunk = (size_t)(data[0] >> 1) + 1;
    const uint8_t *s = data + 1;
    size_t n = size - 1;
    static uint8_t whole_mem[CAP], part_mem[CAP];

    wm_proxy_session a, b;
    wm_proxy_session_init(&a, 4096);
    wm_proxy_session_init(&b, 4096);
    wm_proxy_queue qa, qb;
    wm_proxy_queue_init(&qa, whole_mem, CAP);
    wm_proxy_queue_init(&qb, part_mem, CAP);
    if (!wm_proxy_queue_append(&qa, s, (uint32_t)n)) abort();
    wm_proxy_frame_result ra = wm_proxy_frame(&a, dir, &qa);
    if (qa.ready > qa.tail) abort();

    uint32_t packets = 0, publishes = 0, rewritten = 0, last_ready = 0;
    wm_proxy_frame_verdict v = WM_PROXY_FRAME_OK;
    for (size_t off = 0; off < n && v == WM_PROXY_FRAME_OK; off += chunk) {
        size_t m = n - off < chunk ? n - off : chunk;
        if (!wm_proxy_queue_append(&qb, s + off, (uint32_t)m)) abort();
        wm_proxy_frame_result r = wm_proxy_frame(&b, dir, &qb);
        if (qb.ready < last_ready || qb.ready > qb.tail) abort();
        last_ready = qb.ready;
        packets += r.packets;
        publishes += r.publishes;
        rewritten += r.rewritten;
        v = r.verdict;
        if (v != WM_PROXY_FRAME_OK && (r.reason_code != ra.reason_code || r.err != ra.err)) abort();
    }
    if (v != ra.verdict || packets != ra.packets || publishes != ra.publishes || rewritten != ra.rewritten ||
        qb.ready != qa.ready || memcmp(whole_mem, part_mem, qa.ready) != 0)
        abort();
    if (!ra.rewritten && memcmp(whole_mem, s, qa.ready) != 0) abort();
    if (ra.rewritten) {
        /* Re-frame what was released with a fresh session: it must all decode. */
        wm_proxy_session c;
        wm_proxy_session_init(&c, 4096);
        wm_proxy_queue qc;
        static uint8_t again[CAP];
        wm_proxy_queue_init(&qc, again, CAP);
        if (!wm_proxy_queue_append(&qc, whole_mem, qa.ready)) abort();
        wm_proxy_frame_result rc = wm_proxy_frame(&c, dir, &qc);
        if (rc.verdict != WM_PROXY_FRAME_OK || qc.ready != qa.ready || rc.rewritten != 0) abort();
    }
    return 0;
}
