/* One direction of a proxied connection: the bytes received from one side
 * and not yet sent to the other, in one bounded, contiguous buffer.
 *
 * Why contiguous and copied: io_uring's provided buffers are shared by every
 * connection of a thread, so a slow peer must not hold them; copying a
 * received chunk into its direction's own buffer returns the provided buffer
 * to the ring at once. It also gives the MQTT framer whole packets in one
 * piece, writable in place (a frame may later have to be withheld or
 * rewritten).
 *
 * Layout, all offsets in bytes from buf, 0 <= head <= ready <= tail <= cap:
 *   [head, ready)  framed and to be sent to the peer (the "send queue")
 *   [ready, tail)  received but not framed yet (at most one partial packet
 *                  once framing runs)
 *   sending        bytes of the send in flight, starting at head (0 = none);
 *                  the kernel may read them until it completes, so nothing
 *                  moves while sending != 0.
 *
 * Pure memory operations, no allocation (the caller owns buf); one thread.
 */
#ifndef WM_DATAPLANE_PROXY_QUEUE_H
#define WM_DATAPLANE_PROXY_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wm_proxy_queue {
    uint8_t *buf;
    uint32_t cap;      /* bytes */
    uint32_t head;
    uint32_t ready;
    uint32_t tail;
    uint32_t sending;
} wm_proxy_queue;

/* Binds q to caller memory buf of cap bytes and empties it. */
void wm_proxy_queue_init(wm_proxy_queue *q, uint8_t *buf, uint32_t cap);

/* Bytes framed and waiting to be sent (in flight included). */
static inline uint32_t wm_proxy_queue_pending(const wm_proxy_queue *q) { return q->ready - q->head; }

/* Bytes held in total: send queue plus unframed bytes. */
static inline uint32_t wm_proxy_queue_held(const wm_proxy_queue *q) { return q->tail - q->head; }

/* Appends n bytes. Compacts first if that makes room and no send is in
 * flight. Returns true if the bytes were stored, false (q unchanged) if they
 * do not fit now; the caller keeps them and retries after a send completes. */
bool wm_proxy_queue_append(wm_proxy_queue *q, const void *data, uint32_t n);

/* The next send: *len bytes from *p (the whole send queue). Returns false if
 * a send is in flight or nothing is pending; otherwise marks them in flight. */
bool wm_proxy_queue_next_send(wm_proxy_queue *q, const uint8_t **p, uint32_t *len);

/* A send completed with n bytes written (0 < n <= sending; a short write
 * leaves the rest pending). Clears the in-flight mark and compacts, moving the
 * held bytes to the front so the whole capacity is free again. */
void wm_proxy_queue_sent(wm_proxy_queue *q, uint32_t n);

#endif
