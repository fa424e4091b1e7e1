/* wm_rvec: a growable array of uint32 that one writer changes while any
 * number of readers iterate it without locks (the matcher's posting lists,
 * subscription lists and cell lists).
 *
 * Why this shape: a reader must see each element either fully added or not
 * at all, and must never see an element twice. So elements are only ever
 * appended (slot written, then the length published with a release store)
 * or tombstoned in place (WM_RVEC_DEAD, a single atomic store); nothing is
 * moved inside a block readers can see. Growth and compaction build a new
 * block and publish it with one pointer store; the old block goes to the
 * retire list and is freed after a grace period (qsbr.h).
 *
 * Positions: compaction renumbers live elements; the writer learns the new
 * position of each through the moved callback, so owners that remember
 * positions (to tombstone in O(1)) stay correct.
 *
 * Thread safety: wm_rvec_push/remove_at/remove_value: one writer.
 * wm_rvec_snapshot + reading the block: any thread, inside a QSBR read side.
 */
#ifndef WM_MATCHER_RVEC_H
#define WM_MATCHER_RVEC_H

#include <stdbool.h>
#include <stdint.h>

#include "matcher/qsbr.h"

#define WM_RVEC_DEAD UINT32_MAX

typedef struct wm_rvec_blk {
    uint32_t cap;
    uint32_t len;   /* atomic: slots [0,len) are published */
    uint32_t dead;  /* writer only: tombstones in [0,len) */
    uint32_t pad;
    uint32_t v[];   /* atomic elements */
} wm_rvec_blk;

typedef struct wm_rvec {
    wm_rvec_blk *blk; /* atomic; NULL = empty */
} wm_rvec;

/* Called for every live element that compaction moved: value, new position. */
typedef void (*wm_rvec_moved_fn)(void *ctx, uint32_t value, uint32_t pos);

/* Reader: the current block (NULL when empty) and its published length. */
static inline const wm_rvec_blk *wm_rvec_snapshot(const wm_rvec *v, uint32_t *len)
{
    const wm_rvec_blk *b = __atomic_load_n(&v->blk, __ATOMIC_ACQUIRE);
    *len = b ? __atomic_load_n(&b->len, __ATOMIC_ACQUIRE) : 0;
    return b;
}
/* Reader: element i of a snapshot (WM_RVEC_DEAD when tombstoned). */
static inline uint32_t wm_rvec_at(const wm_rvec_blk *b, uint32_t i)
{
    return __atomic_load_n(&b->v[i], __ATOMIC_RELAXED);
}

/* Writer: makes v empty without freeing (a recycled id's vector whose old
 * block was already retired). */
static inline void wm_rvec_init(wm_rvec *v) { __atomic_store_n(&v->blk, NULL, __ATOMIC_RELEASE); }

/* Writer: number of live elements. */
uint32_t wm_rvec_live(const wm_rvec *v);
/* Writer: appends x (x != WM_RVEC_DEAD); *pos (if not NULL) receives its
 * position. Returns false on allocation failure (nothing changed). */
bool wm_rvec_push(wm_rvec *v, uint32_t x, uint32_t *pos, wm_retire *r, wm_rvec_moved_fn moved, void *ctx);
/* Writer: tombstones position pos (which must hold a live element) and
 * compacts when more than half the block is dead. Never fails: when the
 * compacted copy cannot be allocated the tombstone simply stays. */
void wm_rvec_remove_at(wm_rvec *v, uint32_t pos, wm_retire *r, wm_rvec_moved_fn moved, void *ctx);
/* Writer: tombstones the last live element equal to x (linear scan).
 * Returns false if x is not present. */
bool wm_rvec_remove_value(wm_rvec *v, uint32_t x, wm_retire *r);
/* Writer: frees the block at once (teardown, no readers left). */
void wm_rvec_destroy(wm_rvec *v);

#endif
