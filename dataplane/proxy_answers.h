/* The order of the answers one side of a proxied connection receives (issue
 * 7, REVIEW6 finding 5): an answer the proxy makes itself waits behind the
 * peer's answers to that side's earlier packets.
 *
 * Why: with --resolution the proxy answers some packets itself — towards
 * the client, --prefilter's PUBACK / PUBREC 0x10 and its PUBCOMP, SUBACK
 * refusals; towards the broker, the PUBACK / PUBREC / PUBCOMP of deliveries
 * it withholds (dataplane/proxy_filter.h) — while the peer's answers to
 * earlier packets of the same side may still be on their way. Queued at
 * once, the proxy's answer overtook them (PUBACK 2 before PUBACK 1). Towards
 * the broker that breaks MQTT 5.0 §4.6, whose rules bind the Client (the
 * proxy and the client together are the broker's client): PUBACKs in the
 * order of the QoS 1 PUBLISHes received [MQTT-4.6.0-2], PUBRECs in the order
 * of the QoS 2 ones [MQTT-4.6.0-3]. Towards the client §4.6 asks nothing of
 * a Server, but a broker answers a connection's packets in order
 * (mosquitto does), clients may count on it, and the README promises that a
 * client's later packets keep their order; so the same rule holds both ways.
 *
 * How (counters, no per-packet list): for side s, `asked` counts s's
 * packets forwarded that the peer answers (PUBLISH QoS 1/2, PUBREL; from
 * the client also SUBSCRIBE, UNSUBSCRIBE, PINGREQ), `answered` the peer's
 * answers relayed to s (PUBACK, PUBREC, PUBCOMP; from the broker also
 * SUBACK, UNSUBACK, PINGRESP). An answer the proxy makes for s when
 * answered == asked and nothing waits goes into s's queue at once (the
 * common case); otherwise it waits with asked as it was then, and goes
 * right after the peer's answer that makes `answered` reach that value. So
 * it follows as many peer answers as s had outstanding packets before it:
 * exactly the earlier ones when the peer answers in order (mosquitto; a
 * client obeying §4.6 for PUBACKs and PUBRECs; a peer answering out of
 * order gives up its own order anyway). Only a peer that never answers a
 * packet it must answer (§4.3) keeps them waiting, as it keeps its own.
 *
 * Bound: WM_PROXY_ANSWERS_MAX bytes wait per side; one more releases those
 * waiting at once (in their order, ahead of the peer's outstanding answers)
 * and is counted (filter.acks_overflow): a side that pipelines that many
 * packets the proxy answers behind one the peer is slow to answer gets its
 * answers early rather than unbounded memory. Allocated on the first
 * answer that waits, grown to the most that waited, freed with the state.
 * One connection, one thread.
 */
#ifndef WM_DATAPLANE_PROXY_ANSWERS_H
#define WM_DATAPLANE_PROXY_ANSWERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "codec/mqtt5_packet.h"
#include "dataplane/proxy_queue.h"

#define WM_PROXY_ANSWERS_MAX 65536

typedef struct wm_proxy_answers {
    uint64_t asked;       /* the side's packets forwarded that the peer answers */
    uint64_t answered;    /* the peer's answers relayed to the side (<= asked) */
    uint8_t *buf;         /* waiting answers: records { uint64_t after; uint32_t len; bytes[len] } */
    uint32_t head, tail, cap;
} wm_proxy_answers;

/* Does the receiver answer pkt, sent by side dir (WM_PROXY_C2U / _U2C)? */
bool wm_proxy_answers_expected(int dir, const wm_mqtt5_packet *pkt);
/* Is pkt, sent by side dir, an answer to a packet of the other side? */
bool wm_proxy_answers_is_answer(int dir, const wm_mqtt5_packet *pkt);

/* An answer the peer made has been relayed to the side of a: counted. */
static inline void wm_proxy_answers_relayed(wm_proxy_answers *a)
{
    if (a->answered < a->asked) a->answered++;
}

/* Whether answers made by the proxy may go now (wm_proxy_answers_release). */
static inline bool wm_proxy_answers_due(const wm_proxy_answers *a)
{
    uint64_t after;
    if (a->head == a->tail) return false;
    memcpy(&after, a->buf + a->head, sizeof after);
    return after <= a->answered;
}

/* The proxy answers the side of a with the packet p[0..n) (copied; the
 * caller keeps p): into q (the queue towards that side, at its framed end)
 * now, or to wait (above). */
typedef enum wm_proxy_answers_put_result {
    WM_PROXY_ANSWERS_FAILED = 0, /* q has no room for what must go now, or out of memory: nothing queued
                                    (the caller closes the connection as for any packet it cannot send) */
    WM_PROXY_ANSWERS_SENT,       /* into q now */
    WM_PROXY_ANSWERS_WAITS,      /* behind the peer's outstanding answers */
    WM_PROXY_ANSWERS_OVERFLOW,   /* into q now, after the waiting ones released early (the bound) */
} wm_proxy_answers_put_result;
/* Puts the answer p[0..n) (bytes of one whole packet, copied) for a's side:
 * into q now or held behind the peer's outstanding answers (the result
 * says which; FAILED: nothing queued, the caller closes the connection).
 * The connection's thread only. */
wm_proxy_answers_put_result wm_proxy_answers_put(wm_proxy_answers *a, wm_proxy_queue *q, const uint8_t *p, uint32_t n);

/* Moves the waiting answers that are due (answered has reached their
 * place) into q at its framed end, in order; q must have no unframed gap
 * before its unframed bytes (the caller frames past what it relayed
 * first). Returns false if q has no room (those left wait). */
bool wm_proxy_answers_release(wm_proxy_answers *a, wm_proxy_queue *q);

/* Frees what waits; a may be used again (counters from 0). */
void wm_proxy_answers_reset(wm_proxy_answers *a);

#endif
