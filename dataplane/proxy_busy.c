/* See proxy_busy.h. */
#include "dataplane/proxy_busy.h"

#include "codec/mqtt5_decode.h"

#include <string.h>

wm_proxy_busy_status wm_proxy_busy_feed(wm_proxy_busy *b, uint32_t max_packet, const uint8_t *p, uint32_t n)
{
    if (b->nhdr == 0xFF) return WM_PROXY_BUSY_BAD;
    if (b->framed && b->left == 0) return WM_PROXY_BUSY_CONNECT;
    while (!b->framed && n) {
        b->hdr[b->nhdr++] = *p++;
        n--;
        /* The codec's framer checks type, flags, direction and Remaining
         * Length as soon as the bytes allow; the body is only counted. */
        wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = max_packet };
        wm_mqtt5_result r;
        wm_mqtt5_status st = wm_mqtt5_frame(&cfg, b->hdr, b->nhdr, &r);
        if (st == WM_MQTT5_ERROR || (b->hdr[0] >> 4) != WM_MQTT5_CONNECT) {
            b->nhdr = 0xFF;
            return WM_PROXY_BUSY_BAD;
        }
        if (st == WM_MQTT5_DONE) {               /* Remaining Length 0: not a valid CONNECT either */
            b->nhdr = 0xFF;
            return WM_PROXY_BUSY_BAD;
        }
        if (r.length) {                          /* header whole: the rest is counted */
            b->framed = true;
            b->left = (uint32_t)(r.length - b->nhdr);
        } else if (b->nhdr == sizeof b->hdr) {   /* cannot happen: the framer decides within 5 bytes */
            b->nhdr = 0xFF;
            return WM_PROXY_BUSY_BAD;
        }
    }
    if (!b->framed) return WM_PROXY_BUSY_MORE;
    b->left -= n < b->left ? n : b->left;
    return b->left ? WM_PROXY_BUSY_MORE : WM_PROXY_BUSY_CONNECT;
}
