/* Append-only, tombstoned, RCU-replaced uint32 arrays (see rvec.h). */
#include "matcher/rvec.h"

#include <stdlib.h>

uint32_t wm_rvec_live(const wm_rvec *v)
{
    return v->blk ? v->blk->len - v->blk->dead : 0;
}

/* A fresh block holding the live elements of old (if any), with room for
 * at least `need` elements in all. */
static wm_rvec_blk *rebuild(const wm_rvec_blk *old, uint32_t need, wm_rvec_moved_fn moved, void *ctx)
{
    /* 1.5x the need, rounded up to 4 elements: amortised O(1) appends
     * without the up-to-2x waste of power-of-two blocks (postings are
     * most of the matcher's memory). */
    if (need > (1u << 30)) return NULL;
    uint32_t cap = (need + need / 2 + 3) & ~3u;
    if (cap < 4) cap = 4;
    wm_rvec_blk *b = malloc(sizeof *b + (size_t)cap * sizeof(uint32_t));
    if (!b) return NULL;
    b->cap = cap; b->dead = 0; b->pad = 0;
    uint32_t n = 0;
    if (old)
        for (uint32_t i = 0; i < old->len; i++) {
            uint32_t x = old->v[i];
            if (x == WM_RVEC_DEAD) continue;
            if (moved && i != n) moved(ctx, x, n);
            b->v[n++] = x;
        }
    b->len = n;
    return b;
}

bool wm_rvec_push(wm_rvec *v, uint32_t x, uint32_t *pos, wm_retire *r, wm_rvec_moved_fn moved, void *ctx)
{
    wm_rvec_blk *b = v->blk;
    if (!b || b->len == b->cap) {
        uint32_t live = b ? b->len - b->dead : 0;
        wm_rvec_blk *nb = rebuild(b, live + 1, moved, ctx);
        if (!nb) return false;
        __atomic_store_n(&v->blk, nb, __ATOMIC_RELEASE);
        if (b) wm_retire_free(r, b);
        b = nb;
    }
    uint32_t i = b->len;
    __atomic_store_n(&b->v[i], x, __ATOMIC_RELAXED);
    __atomic_store_n(&b->len, i + 1, __ATOMIC_RELEASE);
    if (pos) *pos = i;
    return true;
}

static void maybe_compact(wm_rvec *v, wm_retire *r, wm_rvec_moved_fn moved, void *ctx)
{
    wm_rvec_blk *b = v->blk;
    if (b->dead == b->len) {
        /* Empty: drop the block entirely. */
        __atomic_store_n(&v->blk, NULL, __ATOMIC_RELEASE);
        wm_retire_free(r, b);
        return;
    }
    if (b->dead * 2 <= b->len || b->len < 8) return;
    wm_rvec_blk *nb = rebuild(b, b->len - b->dead, moved, ctx);
    if (!nb) return;
    __atomic_store_n(&v->blk, nb, __ATOMIC_RELEASE);
    wm_retire_free(r, b);
}

void wm_rvec_remove_at(wm_rvec *v, uint32_t pos, wm_retire *r, wm_rvec_moved_fn moved, void *ctx)
{
    wm_rvec_blk *b = v->blk;
    if (!b || pos >= b->len || b->v[pos] == WM_RVEC_DEAD) return;
    __atomic_store_n(&b->v[pos], WM_RVEC_DEAD, __ATOMIC_RELAXED);
    b->dead++;
    maybe_compact(v, r, moved, ctx);
}

bool wm_rvec_remove_value(wm_rvec *v, uint32_t x, wm_retire *r)
{
    wm_rvec_blk *b = v->blk;
    if (!b) return false;
    /* From the end: the value most likely to go is the most recent one
     * (a neighborhood added and withdrawn again). */
    for (uint32_t i = b->len; i-- > 0;)
        if (b->v[i] == x) {
            wm_rvec_remove_at(v, i, r, NULL, NULL);
            return true;
        }
    return false;
}

void wm_rvec_destroy(wm_rvec *v)
{
    wm_rvec_blk *b = v->blk;
    __atomic_store_n(&v->blk, NULL, __ATOMIC_RELEASE);
    free(b);
}
