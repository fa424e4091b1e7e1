/* The streaming MQTT v5 decoder (the picohttpparser model).
 *
 * Hand it the bytes received so far, starting at a packet boundary:
 *
 *     wm_mqtt5_result r;
 *     switch (wm_mqtt5_decode(&cfg, buf, len, &pkt, &r)) {
 *     case WM_MQTT5_DONE:      use pkt; consume r.length bytes; loop;
 *     case WM_MQTT5_NEED_MORE: wait for at least r.need more bytes;
 *     case WM_MQTT5_ERROR:     send/close with r.reason_code; r.offset says where;
 *     }
 *
 * It keeps no state between calls: a packet split at any byte decodes the
 * same once all its bytes are there, and a call on an incomplete packet costs
 * only the fixed header scan (at most 5 bytes). r.need is exact once the
 * fixed header (type byte + Remaining Length) is complete, and 1 before. It
 * never reads past buf+len, never allocates, writes only *pkt and *r, and is
 * thread safe for distinct pkt/r. Errors are reported as early as the bytes
 * allow: a bad type or flags byte with 1 byte in hand, a Remaining Length
 * over cfg->maximum_packet_size (0x95) before the body arrives.
 *
 * Rules enforced (the error names are in codec/mqtt5_error.h): fixed header
 * flags per type (§2.1.3), direction (§2.1.2), Remaining Length as a minimal
 * VBI of <= 4 bytes (§1.5.5, §2.1.4), exact field layout of each packet (§3),
 * UTF-8 strings (§1.5.4), properties (§2.2.2: known, allowed in the packet,
 * not repeated unless repeatable, values in range), Packet Identifier != 0
 * where present (§2.2.1), reason codes in the packet's set (§2.4, §3),
 * CONNECT protocol name/version (§3.1.2.1/2), flags (§3.1.2.3-7),
 * Authentication Data only with a Method (§3.1.2.11.10), CONNACK reserved
 * flags and Session Present (§3.2.2.1), PUBLISH QoS/DUP (§3.3.1), topic name
 * (§3.3.2.1, §4.7) and Topic Alias (§3.3.2.3.4), Subscription Identifier
 * (§3.3.4, §3.8.2.1.2), Response Topic (§3.3.2.3.5), SUBSCRIBE options
 * (§3.8.3.1) and filters (§4.7, §4.8.2), at least one filter / reason code
 * (§3.8.3, §3.9.3, §3.10.3, §3.11.3), DISCONNECT Session Expiry from a
 * server (§3.14.2.2.2), DISCONNECT reason codes by sender (§3.14.2.1), and
 * on request (cfg->check_payload_format) UTF-8 payloads (§3.3.2.3.2).
 */
#ifndef WM_CODEC_MQTT5_DECODE_H
#define WM_CODEC_MQTT5_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_error.h"
#include "codec/mqtt5_packet.h"

typedef enum wm_mqtt5_status {
    WM_MQTT5_DONE = 0,   /* a whole packet was decoded (or framed) */
    WM_MQTT5_NEED_MORE,  /* the packet is incomplete: no error so far */
    WM_MQTT5_ERROR,      /* the bytes break a rule: close the connection */
} wm_mqtt5_status;

typedef struct wm_mqtt5_result {
    wm_mqtt5_status status;
    /* DONE: bytes of the packet, to consume. NEED_MORE: total bytes of the
     * packet if the fixed header is complete, else 0. */
    size_t length;
    /* NEED_MORE: bytes still missing (exact when length != 0, else 1). */
    size_t need;
    /* ERROR: what, the reason code to send (0x81, 0x82, 0x84, 0x94, 0x95, 0x99),
     * and the offset from buf of the offending byte or field. */
    wm_mqtt5_err err;
    uint8_t reason_code;
    size_t offset;
} wm_mqtt5_result;

/* Frames the packet at buf: checks the fixed header only (type, flags,
 * direction, Remaining Length, Maximum Packet Size) and reports its length.
 * DONE means all `r->length` bytes are in [buf, buf+len); the body is not
 * checked. Fills *r; returns r->status. */
wm_mqtt5_status wm_mqtt5_frame(const wm_mqtt5_config *cfg, const uint8_t *buf, size_t len,
                               wm_mqtt5_result *r);

/* Frames and fully decodes the packet at buf into *pkt (views into buf).
 * Fills *r; returns r->status. On NEED_MORE and ERROR *pkt is unspecified. */
wm_mqtt5_status wm_mqtt5_decode(const wm_mqtt5_config *cfg, const uint8_t *buf, size_t len,
                                wm_mqtt5_packet *pkt, wm_mqtt5_result *r);

#endif
