/* wm_nbf: the neighborhood filter of one topic filter — a 1,024-bit set
 * holding, for every neighborhood with a cell (spatial subscriptions) on
 * that topic filter, bit (neighborhood id mod 1,024). Internal to the
 * matcher (matcher.c reads it, nbf.c maintains it).
 *
 * Why: the peid side of a lookup reads the publication's posting slot (in
 * the spaPS workload ~20 neighborhoods hold each peid) and must keep the
 * neighborhoods that have a cell on a matched topic filter — about one in
 * ten. Testing entries one at a time (a byte per neighborhood, nb_tag) costs
 * a handful of dependent scalar instructions each and was most of a lookup.
 * The filter of the matched topic filter fits in two vector registers, so
 * AVX-512 tests the 32 entries of a slot at once: vpermt2d picks each entry's
 * filter word, a variable shift its bit. A gather of per-neighborhood bytes
 * would do the same without the filter, but gathers are slow on the target
 * (Zen 4: measured slower than the scalar walk).
 *
 * The set is a superset: with at most 1,024 neighborhood ids it is exact;
 * beyond that ids collide, and bits of removed cells stay set until the
 * owner rebuilds the filter. A false candidate costs one visit, which checks
 * the neighborhood's cells and drops it.
 *
 * Concurrency (one writer, lock-free readers under QSBR): the writer sets a
 * cell's bit (atomic OR, release) before it links the cell, so a reader that
 * can reach the cell's subscriptions finds the bit. A rebuild replaces each
 * word by a subset of itself that still holds every live cell's bit, with
 * one atomic store per word: a reader sees every word either before or after,
 * both supersets of the live cells. A reader loads the words with plain
 * vector loads (each 4-byte word untorn), as it reads posting slots.
 */
#ifndef WM_MATCHER_NBF_H
#define WM_MATCHER_NBF_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define WM_NBF_BITS 1024u
#define WM_NBF_WORDS (WM_NBF_BITS / 32)

typedef struct wm_nbf {
    uint32_t w[WM_NBF_WORDS]; /* atomic */
    uint32_t stale;           /* writer: bits set for cells since removed */
} __attribute__((aligned(64))) wm_nbf;

/* Word of w[] holding neighborhood nb's bit (nb modulo WM_NBF_BITS). */
static inline uint32_t wm_nbf_word(uint32_t nb) { return (nb % WM_NBF_BITS) / 32; }

/* Writer: adds neighborhood nb. */
static inline void wm_nbf_set(wm_nbf *f, uint32_t nb)
{
    __atomic_or_fetch(&f->w[wm_nbf_word(nb)], 1u << (nb % 32), __ATOMIC_RELEASE);
}

/* Reader: whether nb may have a cell on the filter's topic filter. */
static inline bool wm_nbf_test(const wm_nbf *f, uint32_t nb)
{
    return (__atomic_load_n(&f->w[wm_nbf_word(nb)], __ATOMIC_RELAXED) >> (nb % 32)) & 1;
}

/* Reader: dst = a (the union of the filters met so far starts as a copy of
 * the first one). dst is the reader's own. */
static inline void wm_nbf_copy(wm_nbf *dst, const wm_nbf *a)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    _mm512_store_si512((void *)dst->w, _mm512_load_si512((const void *)a->w));
    _mm512_store_si512((void *)(dst->w + 16), _mm512_load_si512((const void *)(a->w + 16)));
#else
    for (uint32_t k = 0; k < WM_NBF_WORDS; k++) dst->w[k] = __atomic_load_n(&a->w[k], __ATOMIC_RELAXED);
#endif
}

/* Reader: dst |= a. */
static inline void wm_nbf_or(wm_nbf *dst, const wm_nbf *a)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    for (uint32_t h = 0; h < WM_NBF_WORDS; h += 16)
        _mm512_store_si512((void *)(dst->w + h), _mm512_or_si512(_mm512_load_si512((const void *)(dst->w + h)),
                                                                 _mm512_load_si512((const void *)(a->w + h))));
#else
    for (uint32_t k = 0; k < WM_NBF_WORDS; k++) dst->w[k] |= __atomic_load_n(&a->w[k], __ATOMIC_RELAXED);
#endif
}

/* Reader: of the 32 neighborhood ids ids[0..32) (a posting slot as
 * wm_posting_read writes it), the mask of those selected by mask whose bit
 * is set in f. */
static inline uint32_t wm_nbf_select(const wm_nbf *f, const uint32_t *ids, uint32_t mask)
{
#if defined(__AVX512F__) && !defined(__SANITIZE_THREAD__)
    _Static_assert(WM_NBF_WORDS == 32, "vpermt2d indexes 32 words");
    const __m512i one = _mm512_set1_epi32(1), low5 = _mm512_set1_epi32(31);
    __m512i f0 = _mm512_load_si512((const void *)f->w), f1 = _mm512_load_si512((const void *)(f->w + 16));
    __m512i a = _mm512_loadu_si512((const void *)ids), b = _mm512_loadu_si512((const void *)(ids + 16));
    /* vpermt2d reads bits 4..0 of each index: (id >> 5) % 32 = word of id % 1,024. */
    __m512i wa = _mm512_permutex2var_epi32(f0, _mm512_srli_epi32(a, 5), f1);
    __m512i wb = _mm512_permutex2var_epi32(f0, _mm512_srli_epi32(b, 5), f1);
    uint32_t ca = _mm512_mask_test_epi32_mask((__mmask16)mask, _mm512_srlv_epi32(wa, _mm512_and_si512(a, low5)), one);
    uint32_t cb = _mm512_mask_test_epi32_mask((__mmask16)(mask >> 16), _mm512_srlv_epi32(wb, _mm512_and_si512(b, low5)), one);
    return ca | cb << 16;
#else
    uint32_t c = 0;
    for (; mask; mask &= mask - 1) {
        uint32_t k = (uint32_t)__builtin_ctz(mask);
        if (wm_nbf_test(f, ids[k])) c |= 1u << k;
    }
    return c;
#endif
}

#endif
