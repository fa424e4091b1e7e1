/* wm_posting: one peid's posting list in the spatial filter mapping
 * (peid -> neighborhoods containing it, spaPS §V-B2 main-memory mode),
 * shaped so that the common case is one 128-byte slot and no pointer.
 *
 * Why this shape: a lookup reads one posting list per publication peid and
 * a new neighborhood inserts into one list per member peid, both at random
 * over all peids, so each is a cache miss and nothing else should be. With
 * a pointer to a separately allocated block every access was two dependent
 * misses (slot, then block) and an insert that outgrew its block a malloc
 * + copy + deferred free. Here a slot is two cache lines of entries,
 * 16 in the first and 15 in the second, with no header: an entry holds
 * neighborhood id + 1, 0 = free. A neighborhood goes into the line chosen
 * by its id's parity (the other line when that one is full), so inserting
 * or removing it touches ONE random line — a 2,000-peid neighborhood costs
 * 2,000 line misses, which prefetching overlaps, instead of 4,000 dependent
 * ones. A reader prefetches both lines and scans them (with AVX-512, one
 * compare per line). Lists longer than 31 spill into an wm_rvec kept
 * beside the slots (the last word of the slot says whether there is one).
 *
 * Concurrency (one writer, lock-free readers under QSBR): entries never
 * move. An insert fills a free entry with one release store, a removal
 * clears it with one store; a reader sees each entry either fully or not
 * at all, and never the same neighborhood twice, because a neighborhood
 * lists each peid once and its id is recycled only after a grace period.
 * Entries are unordered.
 *
 * Thread safety: wm_posting_add/remove/destroy: the one writer.
 * Reading (wm_posting_mask, wm_posting_at, the overflow vector while
 * wm_posting_has_over): any reader inside a QSBR read side.
 */
#ifndef WM_MATCHER_POSTING_H
#define WM_MATCHER_POSTING_H

#include <stdbool.h>
#include <stdint.h>

#include "matcher/qsbr.h"
#include "matcher/rvec.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define WM_POSTING_INLINE 31u

typedef struct wm_posting {
    uint32_t v[WM_POSTING_INLINE]; /* atomic: neighborhood id + 1, 0 = free */
    uint32_t over;                 /* atomic: 1 = the overflow vector may hold entries */
} __attribute__((aligned(64))) wm_posting;

/* Reader: bit k set = entry k looked occupied (a hint: re-read it with
 * wm_posting_at, which may have changed since). */
static inline uint32_t wm_posting_mask(const wm_posting *p)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    /* Aligned 64-byte loads: each 4-byte element is read untorn. */
    __m512i a = _mm512_load_si512((const void *)p->v);
    __m512i b = _mm512_load_si512((const void *)(p->v + 16));
    uint32_t lo = _mm512_test_epi32_mask(a, a), hi = _mm512_test_epi32_mask(b, b);
    return (lo | hi << 16) & ((1u << WM_POSTING_INLINE) - 1);
#else
    uint32_t mask = 0;
    for (uint32_t k = 0; k < WM_POSTING_INLINE; k++)
        if (__atomic_load_n(&p->v[k], __ATOMIC_RELAXED)) mask |= 1u << k;
    return mask;
#endif
}

/* Reader: entry k (neighborhood id + 1, or 0 when free). */
static inline uint32_t wm_posting_at(const wm_posting *p, uint32_t k)
{
    return __atomic_load_n(&p->v[k], __ATOMIC_ACQUIRE);
}

/* Reader: whether the overflow vector must be read too. */
static inline bool wm_posting_has_over(const wm_posting *p)
{
    return __atomic_load_n(&p->over, __ATOMIC_ACQUIRE) != 0;
}

/* Prefetches both cache lines of a slot for a reader. always_inline: GCC 12
 * judges an out-of-line function made only of prefetches free of side
 * effects and deletes its calls. */
static inline __attribute__((always_inline)) void wm_posting_prefetch(const wm_posting *p)
{
    __builtin_prefetch(p);
    __builtin_prefetch((const char *)p + 64);
}

/* Prefetches, for writing, the one line where x would be inserted. */
static inline __attribute__((always_inline)) void wm_posting_prefetch_add(const wm_posting *p, uint32_t x)
{
    __builtin_prefetch((const char *)p + (x & 1) * 64, 1);
}

/* What wm_posting_add/remove did. */
typedef enum wm_posting_op {
    WM_POSTING_FAILED = 0, /* add: allocation failure, nothing changed; remove: x not present */
    WM_POSTING_SLOT,       /* x went into / came out of the slot */
    WM_POSTING_SPILL,      /* x went into / came out of the overflow vector */
} wm_posting_op;

/* Writer: adds x (< 2^31, not already present); over is this peid's
 * overflow vector. Fails only on allocation failure when the list spills. */
wm_posting_op wm_posting_add(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r);
/* Writer: removes x. */
wm_posting_op wm_posting_remove(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r);

#endif
