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
 * Thread safety: the writer steps (wm_posting_try_*, *_over): the one
 * writer. Reading (wm_posting_read, wm_posting_has, and the overflow vector
 * when wm_posting_has_over): any reader inside a QSBR read side.
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
#define WM_POSTING_READ_ROOM 32u /* wm_posting_read output */

typedef struct wm_posting {
    uint32_t v[WM_POSTING_INLINE]; /* atomic: neighborhood id + 1, 0 = free */
    uint32_t over;                 /* atomic: 1 = the overflow vector may hold entries */
} __attribute__((aligned(64))) wm_posting;

/* Reader: the slot's entries as neighborhood ids, out[k] = entry k - 1
 * (out has room for WM_POSTING_INLINE + 1), and the mask of the occupied
 * ones. Each entry is read once and untorn; an entry changed concurrently
 * is seen either before or after the change. */
static inline uint32_t wm_posting_read(const wm_posting *p, uint32_t *out)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    /* Aligned 64-byte loads: each 4-byte element is read untorn. */
    const __m512i one = _mm512_set1_epi32(1);
    __m512i a = _mm512_load_si512((const void *)p->v);
    __m512i b = _mm512_load_si512((const void *)(p->v + 16));
    uint32_t ma = _mm512_test_epi32_mask(a, a), mb = _mm512_test_epi32_mask(b, b) & 0x7FFF;
    _mm512_storeu_si512((void *)out, _mm512_sub_epi32(a, one));
    _mm512_storeu_si512((void *)(out + 16), _mm512_sub_epi32(b, one));
    return ma | mb << 16;
#else
    uint32_t mask = 0;
    for (uint32_t k = 0; k < WM_POSTING_INLINE; k++) {
        uint32_t x = __atomic_load_n(&p->v[k], __ATOMIC_ACQUIRE);
        out[k] = x - 1;
        mask |= (uint32_t)(x != 0) << k;
    }
    return mask;
#endif
}

/* Reader: whether x is among the entries of out[0..32) selected by mask
 * (wm_posting_read's output and result). */
static inline bool wm_posting_has(const uint32_t *out, uint32_t mask, uint32_t x)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    const __m512i v = _mm512_set1_epi32((int)x);
    return (_mm512_mask_cmpeq_epi32_mask((__mmask16)mask, _mm512_loadu_si512((const void *)out), v) |
            _mm512_mask_cmpeq_epi32_mask((__mmask16)(mask >> 16), _mm512_loadu_si512((const void *)(out + 16)), v)) != 0;
#else
    for (; mask; mask &= mask - 1)
        if (out[__builtin_ctz(mask)] == x) return true;
    return false;
#endif
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

/* What a writer step did. */
typedef enum wm_posting_op {
    WM_POSTING_NOT_HERE = 0, /* add: that line is full; remove: x is not in that line */
    WM_POSTING_DONE,         /* x went in / came out */
    WM_POSTING_PRESENT,      /* add: x was there already (the caller listed it twice); nothing changed */
    WM_POSTING_NOMEM,        /* add to the overflow vector: allocation failure, nothing changed */
} wm_posting_op;

/* Writer internals: entries of line `half` equal to v, as a bit mask. */
static inline uint32_t wm_posting_line_eq(const wm_posting *p, uint32_t half, uint32_t v)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    __m512i line = _mm512_load_si512((const void *)(p->v + 16 * half));
    uint32_t m = _mm512_cmpeq_epi32_mask(line, _mm512_set1_epi32((int)v));
#else
    uint32_t m = 0;
    for (uint32_t k = 0; k < 16; k++)
        if (k + 16 * half < WM_POSTING_INLINE && p->v[k + 16 * half] == v) m |= 1u << k;
#endif
    return half ? m & 0x7FFF : m; /* the second line's last word is `over` */
}

/* x goes into a free entry of line `half` unless the line holds it already
 * (a peid listed twice in a neighborhood: the second copy is found here,
 * in the line the first one took, at no extra miss). */
static inline wm_posting_op wm_posting_put_in(wm_posting *p, uint32_t half, uint32_t x)
{
    if (wm_posting_line_eq(p, half, x + 1)) return WM_POSTING_PRESENT;
    uint32_t free = wm_posting_line_eq(p, half, 0);
    if (!free) return WM_POSTING_NOT_HERE;
    __atomic_store_n(&p->v[16 * half + (uint32_t)__builtin_ctz(free)], x + 1, __ATOMIC_RELEASE);
    return WM_POSTING_DONE;
}

/* Writer: clears x from line `half`: DONE, or NOT_HERE if the line lacks it. */
static inline wm_posting_op wm_posting_clear_in(wm_posting *p, uint32_t half, uint32_t x)
{
    uint32_t at = wm_posting_line_eq(p, half, x + 1);
    if (!at) return WM_POSTING_NOT_HERE;
    __atomic_store_n(&p->v[16 * half + (uint32_t)__builtin_ctz(at)], 0, __ATOMIC_RELEASE);
    return WM_POSTING_DONE;
}

/* Writer (x < 2^31), in three steps so that a caller inserting into many
 * slots can keep its cache misses overlapped: wm_posting_try_add touches
 * only the line x prefers (prefetch it with wm_posting_prefetch_add) and
 * fails when that line is full; wm_posting_try_add_other tries the other
 * line (wm_posting_prefetch_other); wm_posting_add_over appends to the
 * overflow vector. A caller that lists x twice for one slot learns it
 * (WM_POSTING_PRESENT) from whichever step placed the first copy, provided
 * every copy goes through the same steps in the same order — as when each
 * step runs over all of them before the next. Removal mirrors it. */
static inline wm_posting_op wm_posting_try_add(wm_posting *p, uint32_t x) { return wm_posting_put_in(p, x & 1, x); }
/* The second step (above): x into the line it does not prefer. */
static inline wm_posting_op wm_posting_try_add_other(wm_posting *p, uint32_t x) { return wm_posting_put_in(p, ~x & 1, x); }
/* DONE, PRESENT or NOMEM; over is this peid's overflow vector. */
wm_posting_op wm_posting_add_over(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r);
/* Prefetches (for writing) the line wm_posting_try_add_other(p, x) touches. */
static inline __attribute__((always_inline)) void wm_posting_prefetch_other(const wm_posting *p, uint32_t x)
{
    __builtin_prefetch((const char *)p + (~x & 1) * 64, 1);
}

/* Writer: removes x from the line it prefers, then (next function) from the
 * other: DONE or NOT_HERE, like wm_posting_clear_in. */
static inline wm_posting_op wm_posting_try_remove(wm_posting *p, uint32_t x) { return wm_posting_clear_in(p, x & 1, x); }
/* The other line's step of wm_posting_try_remove. */
static inline wm_posting_op wm_posting_try_remove_other(wm_posting *p, uint32_t x) { return wm_posting_clear_in(p, ~x & 1, x); }
/* False if x is not in the overflow vector either. */
bool wm_posting_remove_over(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r);

#endif
