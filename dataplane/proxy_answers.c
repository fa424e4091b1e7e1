/* See proxy_answers.h. The waiting answers are records in one buffer, taken
 * from its front and appended at its end; it is compacted when an append
 * does not fit, so it grows only to the most that waited at once. */
#include "dataplane/proxy_answers.h"

#include <stdlib.h>

#include "dataplane/proxy.h"

enum { REC_HDR = sizeof(uint64_t) + sizeof(uint32_t) };

bool wm_proxy_answers_expected(int dir, const wm_mqtt5_packet *pkt)
{
    switch (pkt->type) {
    case WM_MQTT5_PUBLISH: return pkt->qos > 0;
    case WM_MQTT5_PUBREL: return true;
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE:
    case WM_MQTT5_PINGREQ: return dir == WM_PROXY_C2U;
    default: return false;
    }
}

bool wm_proxy_answers_is_answer(int dir, const wm_mqtt5_packet *pkt)
{
    switch (pkt->type) {
    case WM_MQTT5_PUBACK:
    case WM_MQTT5_PUBREC:
    case WM_MQTT5_PUBCOMP: return true;
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK:
    case WM_MQTT5_PINGRESP: return dir == WM_PROXY_U2C;
    default: return false;
    }
}

/* Into q at its framed end: after what is queued for the side, before the
 * peer's bytes not framed yet. */
static bool inject(wm_proxy_queue *q, const uint8_t *p, uint32_t n)
{
    if (!wm_proxy_queue_splice(q, q->ready, 0, p, n)) return false;
    q->ready += n;
    return true;
}

bool wm_proxy_answers_release(wm_proxy_answers *a, wm_proxy_queue *q)
{
    while (wm_proxy_answers_due(a)) {
        uint32_t n;
        memcpy(&n, a->buf + a->head + sizeof(uint64_t), sizeof n);
        if (!inject(q, a->buf + a->head + REC_HDR, n)) return false;
        a->head += REC_HDR + n;
    }
    if (a->head == a->tail) a->head = a->tail = 0;
    return true;
}

/* Room for need more bytes at the end of buf: compacted, or grown. */
static bool room(wm_proxy_answers *a, uint32_t need)
{
    if (a->cap - a->tail >= need) return true;
    if (a->head) {
        memmove(a->buf, a->buf + a->head, a->tail - a->head);
        a->tail -= a->head;
        a->head = 0;
        if (a->cap - a->tail >= need) return true;
    }
    uint32_t cap = a->cap ? a->cap : 256;
    while (cap - a->tail < need) cap *= 2;
    uint8_t *b = realloc(a->buf, cap);
    if (!b) return false;
    a->buf = b;
    a->cap = cap;
    return true;
}

wm_proxy_answers_put_result wm_proxy_answers_put(wm_proxy_answers *a, wm_proxy_queue *q, const uint8_t *p, uint32_t n)
{
    if (a->head == a->tail && a->answered == a->asked) return inject(q, p, n) ? WM_PROXY_ANSWERS_SENT : WM_PROXY_ANSWERS_FAILED;
    if (a->tail - a->head + REC_HDR + n > WM_PROXY_ANSWERS_MAX) {
        /* the bound: what waits goes now, in its order, and this one after it */
        uint64_t answered = a->answered;
        a->answered = a->asked;
        bool ok = wm_proxy_answers_release(a, q);
        a->answered = answered;
        return ok && inject(q, p, n) ? WM_PROXY_ANSWERS_OVERFLOW : WM_PROXY_ANSWERS_FAILED;
    }
    if (!room(a, REC_HDR + n)) return WM_PROXY_ANSWERS_FAILED;
    memcpy(a->buf + a->tail, &a->asked, sizeof a->asked);
    memcpy(a->buf + a->tail + sizeof(uint64_t), &n, sizeof n);
    memcpy(a->buf + a->tail + REC_HDR, p, n);
    a->tail += REC_HDR + n;
    return WM_PROXY_ANSWERS_WAITS;
}

void wm_proxy_answers_reset(wm_proxy_answers *a)
{
    free(a->buf);
    *a = (wm_proxy_answers){ 0 };
}
