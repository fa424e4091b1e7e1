/* See proxy_queue.h. Compaction happens only between sends (never under a
 * send in flight) and moves only the held bytes, which back-pressure keeps
 * small, so its cost stays proportional to what a slow peer left behind. */
#include "dataplane/proxy_queue.h"

#include <string.h>

void wm_proxy_queue_init(wm_proxy_queue *q, uint8_t *buf, uint32_t cap)
{
    q->buf = buf;
    q->cap = cap;
    q->head = q->ready = q->tail = q->sending = 0;
}

static void compact(wm_proxy_queue *q)
{
    if (q->head == 0 || q->sending) return;
    uint32_t held = q->tail - q->head;
    if (held) memmove(q->buf, q->buf + q->head, held);
    q->ready -= q->head;
    q->tail = held;
    q->head = 0;
}

bool wm_proxy_queue_append(wm_proxy_queue *q, const void *data, uint32_t n)
{
    if (q->cap - q->tail < n) {
        compact(q);
        if (q->cap - q->tail < n) return false;
    }
    memcpy(q->buf + q->tail, data, n);
    q->tail += n;
    return true;
}

bool wm_proxy_queue_next_send(wm_proxy_queue *q, const uint8_t **p, uint32_t *len)
{
    if (q->sending || q->ready == q->head) return false;
    *p = q->buf + q->head;
    *len = q->ready - q->head;
    q->sending = *len;
    return true;
}

void wm_proxy_queue_sent(wm_proxy_queue *q, uint32_t n)
{
    if (n > q->sending) n = q->sending;
    q->head += n;
    q->sending = 0;
    if (q->head == q->tail) q->head = q->ready = q->tail = 0;
    else compact(q);
}
