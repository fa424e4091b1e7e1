/* MQTT v5 framing of one direction of a proxied connection.
 *
 * Consumes the unframed bytes of a queue ([ready, tail), see proxy_queue.h),
 * moves `ready` past every complete, valid packet (pass-through: the bytes
 * are left exactly as received) and stops at the first incomplete one. A
 * malformed packet, or one longer than max_packet, stops framing for good:
 * the bytes before it are still delivered, the connection is then closed
 * (MQTT 5.0 §4.13: a malformed packet ends the network connection).
 *
 * from_client: the direction (client -> upstream packets differ from
 * upstream -> client ones: CONNECT only from clients, CONNACK only from
 * servers, ...). One framer per direction, one thread.
 */
#ifndef WM_DATAPLANE_PROXY_FRAME_H
#define WM_DATAPLANE_PROXY_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/proxy_queue.h"

typedef enum wm_proxy_frame_verdict {
    WM_PROXY_FRAME_OK = 0,       /* everything complete was framed */
    WM_PROXY_FRAME_MALFORMED,    /* a packet broke MQTT 5.0; reason/offset say how */
    WM_PROXY_FRAME_TOO_LARGE,    /* a packet's length exceeds max_packet */
} wm_proxy_frame_verdict;

typedef struct wm_proxy_frame_result {
    uint32_t packets;            /* complete packets framed by this call */
    wm_proxy_frame_verdict verdict;
    const char *reason;          /* static text, for MALFORMED / TOO_LARGE */
    uint32_t offset;             /* byte of the bad packet where it went wrong */
    uint8_t reason_code;         /* MQTT reason code for a DISCONNECT (0x81, 0x95, ...) */
} wm_proxy_frame_result;

typedef struct wm_proxy_framer {
    uint32_t packets;            /* total framed in this direction */
    bool stopped;
} wm_proxy_framer;

void wm_proxy_framer_init(wm_proxy_framer *fr);

wm_proxy_frame_result wm_proxy_frame(wm_proxy_framer *fr, wm_proxy_queue *q, bool from_client,
                                     uint32_t max_packet);

#endif
