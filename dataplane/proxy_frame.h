/* MQTT v5 framing of a proxied connection, both directions, with the codec's
 * streaming decoder (codec/mqtt5_decode.h).
 *
 * wm_proxy_frame() consumes the unframed bytes of one direction's queue
 * ([ready, tail), see proxy_queue.h): every complete packet is fully decoded
 * (so a malformed one is caught before any of its bytes reach the peer) and
 * `ready` moves past it, its bytes untouched (pass-through is byte-identical);
 * it stops at the first incomplete packet. The one exception to byte for
 * byte: a CONNECT or successful CONNACK whose Maximum Packet Size is absent
 * or above the proxy's max_packet is rewritten to announce max_packet, so
 * neither end sends the proxy more than it can frame (§3.1.2.11.4,
 * §3.2.2.3.6); filtering, a client's own Maximum Packet Size goes to the
 * broker WM_PROXY_SID_ROOM bytes larger (room for the identifier the proxy
 * strips from deliveries, proxy_filter.h). A malformed packet, or one over
 * the Maximum Packet Size, stops that direction for good: the packets before
 * it are still delivered, the connection is then closed after telling the
 * sender why (MQTT 5.0 §4.13.1: the receiver of a Malformed Packet or
 * Protocol Error closes the Network Connection, and a Server SHOULD send a
 * DISCONNECT with the reason code first, or a CONNACK before CONNECT is
 * acknowledged, §3.1.4 / §3.2.2.2).
 *
 * Held behind the CONNACK: on a filtered connection (ss->filter), the
 * client's packets after its CONNECT stay unframed in their queue until the
 * broker's CONNACK has been framed towards the client (an AUTH or DISCONNECT
 * at their front goes on: enhanced authentication needs AUTH before the
 * CONNACK, §4.12, and [MQTT-3.1.2-30] allows nothing else then). After a
 * successful CONNACK the caller frames them (result `connack`); after a
 * refusing one they are never framed. Why (MQTT 5.0 §3.1.4 lets a client
 * send before its CONNACK; [MQTT-3.2.0-1] makes the CONNACK the server's
 * first packet): everything the filter answers itself (SUBACK refusals,
 * --prefilter acknowledgements) then follows the CONNACK, nothing is
 * answered on behalf of a client the broker refuses, and the filter's
 * decisions that depend on the CONNACK (Subscription Identifier Available,
 * the broker's Maximum Packet Size, which also bounds the held packets'
 * decoding) are taken knowing it. Cost: a pipelining client's packets wait
 * one broker round trip; held bytes count against the connection's buffer
 * bound like queued ones (wm_proxy_session_holding). Unfiltered, the relay
 * answers nothing itself and nothing is held.
 *
 * The session learns the limits each end announced, because the decoder
 * checks packets against the receiver's: the client's CONNECT carries its
 * Maximum Packet Size and Topic Alias Maximum (§3.1.2.11.4-5), which bound
 * packets from the broker; the broker's CONNACK carries its own (§3.2.2.3.6,
 * §3.2.2.3.8), which bound packets from the client. The proxy's own
 * max_packet caps both.
 *
 * A packet the filter holds (WM_PROXY_HOLD: a SUBSCRIBE whose content
 * filter is being compiled) stops the direction there, unframed, so the
 * packets behind it keep their order; the complete ones already received
 * behind it are shown to wm_proxy_filter_prefetch (decoded, not consumed),
 * once each, so that what they need is prepared together; a PINGRESP
 * among them is framed at once, ahead of the held packet, and so is a
 * PINGREQ while no other that passed a hold awaits its PINGRESP; the proxy
 * answers the others itself, in the client's queue (queues[WM_PROXY_U2C]),
 * so a held client keeps its keep-alive (REVIEW6 finding 2) and a flood of
 * them costs the bytes received, not a move of the held bytes each
 * (REVIEW8 finding 3; ss->pings_wait: one waits for room); the broker's
 * DISCONNECT among them is framed in place of the held packets, which are
 * dropped (the broker closes next: nothing held would be released; it
 * keeps the unacknowledged deliveries in the session), and the hold ends
 * (REVIEW7 finding 4). The next call presents the held packet again.
 *
 * Direction index = the side that sent the bytes: WM_PROXY_C2U (0, from the
 * client, WM_MQTT5_FROM_CLIENT) and WM_PROXY_U2C (1, from the broker). One
 * session per connection, one thread; no allocation.
 */
#ifndef WM_DATAPLANE_PROXY_FRAME_H
#define WM_DATAPLANE_PROXY_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/mqtt5_decode.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_queue.h"

typedef enum wm_proxy_frame_verdict {
    WM_PROXY_FRAME_OK = 0,       /* everything complete was framed */
    WM_PROXY_FRAME_MALFORMED,    /* a packet broke MQTT 5.0: err/offset say how */
    WM_PROXY_FRAME_TOO_LARGE,    /* a packet over the Maximum Packet Size (0x95) */
    WM_PROXY_FRAME_NO_ROOM,      /* the filter could not queue a packet it had to send */
} wm_proxy_frame_verdict;

typedef struct wm_proxy_frame_result {
    uint32_t packets;            /* complete packets framed by this call (pings passed ahead of a held one too) */
    uint32_t pings_answered;     /* PINGREQs behind a held packet the proxy answered itself (not in packets) */
    uint32_t publishes;          /* of which PUBLISH */
    uint32_t rewritten;          /* CONNECT/CONNACK made to announce max_packet */
    uint32_t dropped;            /* packets withheld by the filter */
    uint32_t replaced;           /* packets the filter rewrote */
    bool held;                   /* stopped at a packet the filter holds (WM_PROXY_HOLD): it and what
                                    follows stay unframed until the next call */
    wm_proxy_frame_verdict verdict;
    wm_mqtt5_err err;            /* MALFORMED / TOO_LARGE: the codec's error */
    uint8_t reason_code;         /* reason code to give the sender (0x81, 0x82, 0x94, 0x95...) */
    uint32_t offset;             /* byte of the bad packet where it went wrong */
    bool connack;                /* the broker's CONNACK was framed: frame the client's held packets
                                    (unless ss->connack_refused) */
    bool connect_again;          /* MALFORMED: the client's second CONNECT, a Protocol Error (0x82,
                                    MQTT-3.1.0-2; err is WM_MQTT5_E_OK: each packet alone is valid) */
    bool old_version;            /* MALFORMED: the client's CONNECT is MQTT 3.1 or 3.1.1
                                    (ss->client_level): the proxy is v5-only */
} wm_proxy_frame_result;

typedef struct wm_proxy_session {
    wm_mqtt5_config cfg[2];      /* decoder configuration per direction */
    uint32_t max_packet;         /* the proxy's own bound, bytes */
    bool connack_sent;           /* the broker's CONNACK went to the client */
    bool connack_refused;        /* ... with a reason code >= 0x80 */
    bool connect_seen;           /* the client's CONNECT went to the broker */
    uint8_t client_level;        /* protocol level of a refused MQTT 3.1 (3) or 3.1.1 (4) CONNECT, else 0 */
    bool disconnect_seen[2];     /* a DISCONNECT was framed from side dir: that side ended the
                                    connection itself, nobody needs telling why it closes */
    bool stopped[2];             /* a direction hit an error */
    /* Filtering (NULL = byte-for-byte relay): every framed packet goes
     * through wm_proxy_filter_packet(); queues[2] are the connection's two
     * queues (queues[1 - dir] receives the proxy's answers to side dir);
     * scratch[scratch_cap] holds rewritten packets (max_packet + 65,546). */
    wm_proxy_filter *filter;
    wm_proxy_queue *queues;
    uint8_t *scratch;
    uint32_t scratch_cap;
    uint32_t peeked[2];          /* held: bytes after the held packet shown to wm_proxy_filter_prefetch */
    bool ping_out;               /* a PINGREQ of the client's passed a held packet to the broker, and no
                                    PINGRESP has come since: the next ones behind a hold the proxy answers */
    bool pings_wait;             /* a PINGREQ behind a held packet waits for room in the client's queue
                                    for its PINGRESP: frame the client's side again once a send to it ends */
} wm_proxy_session;

/* Starts a session: no limits announced yet (Topic Alias Maximum 0, the
 * spec's default), max_packet (bytes, >= 2) as the Maximum Packet Size, no
 * filter (set filter, queues and scratch after this call to filter). */
void wm_proxy_session_init(wm_proxy_session *ss, uint32_t max_packet);

/* Whether the client's packets after its CONNECT are held behind the
 * broker's CONNACK (see above): filtered, CONNECT sent, and no CONNACK yet
 * or a refusing one. */
static inline bool wm_proxy_session_holding(const wm_proxy_session *ss)
{
    return ss->filter && ss->connect_seen && (!ss->connack_sent || ss->connack_refused);
}

/* Frames q, the queue of direction dir (WM_PROXY_C2U / WM_PROXY_U2C). After a
 * non-OK verdict the direction stays stopped: later calls frame nothing and
 * return the same verdict kind. */
wm_proxy_frame_result wm_proxy_frame(wm_proxy_session *ss, int dir, wm_proxy_queue *q);

/* Bytes: the longest packet wm_proxy_error_packet writes. */
#define WM_PROXY_ERROR_PACKET_MAX 8
/* The packet that tells the sender of direction dir that it broke the
 * protocol with reason_code: to a client before its CONNACK, a CONNACK with
 * that reason code (§3.2.2.2), in the 3.1.1 layout with return code 0x01
 * "unacceptable protocol version" (MQTT 3.1.1 §3.2.2.3, the same in 3.1) to
 * a client whose CONNECT was 3.1 or 3.1.1 (ss->client_level), which reads
 * no other; otherwise a DISCONNECT with it (§3.14.2.1).
 * Writes at most WM_PROXY_ERROR_PACKET_MAX bytes to out; returns the count, 0
 * if nothing should be sent (a broker that has not acknowledged CONNECT).
 * Pure; the connection's thread. */
uint32_t wm_proxy_error_packet(const wm_proxy_session *ss, int dir, uint8_t reason_code, uint8_t *out);

#endif
