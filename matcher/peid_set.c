/* Compact peid sets and de-duplication (see peid_set.h). */
#include "matcher/peid_set.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define BLOCK_BITS 16
#define KEYS (1u << (28 - BLOCK_BITS)) /* ids are below 2^28 */

size_t wm_peid_unique_scratch(size_t n) { return n + KEYS + 1; }

void wm_peid_range(const uint32_t *ids, size_t n, uint32_t *lo, uint32_t *hi)
{
    uint32_t l = UINT32_MAX, h = 0;
    size_t i = 0;
#if defined(__AVX512F__)
    /* GCC 12 at -O2 leaves the scalar loop alone. */
    __m512i vl = _mm512_set1_epi32(-1), vh = _mm512_setzero_si512();
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_loadu_si512((const void *)(ids + i));
        vl = _mm512_min_epu32(vl, v);
        vh = _mm512_max_epu32(vh, v);
    }
    l = _mm512_reduce_min_epu32(vl);
    h = _mm512_reduce_max_epu32(vh);
#endif
    for (; i < n; i++) {
        l = ids[i] < l ? ids[i] : l;
        h = ids[i] > h ? ids[i] : h;
    }
    *lo = l;
    *hi = h;
}

/* Appends the ids of src[0..n) (all in one block) not seen before in this
 * call to dst at *k. A bit per low half: set it, keep the id if it was
 * clear — no branch on the data. The bits are cleared again through the
 * kept ids, so the cost is O(n), not O(block). dst may be src. */
static void dedup_block(uint32_t *dst, size_t *k, const uint32_t *src, size_t n, uint64_t *bits)
{
    size_t k0 = *k, j = k0;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = src[i], w = (v >> 6) & 1023;
        uint64_t b = 1ull << (v & 63), old = bits[w];
        bits[w] = old | b;
        dst[j] = v;
        j += (old & b) == 0;
    }
    for (size_t i = k0; i < j; i++) bits[(dst[i] >> 6) & 1023] = 0;
    *k = j;
}

size_t wm_peid_unique(uint32_t *ids, size_t n, uint32_t *tmp, uint64_t *bits)
{
    if (n == 0) return 0;
    uint32_t lo, hi;
    wm_peid_range(ids, n, &lo, &hi);
    uint32_t k0 = lo >> BLOCK_BITS, nk = (hi >> BLOCK_BITS) - k0 + 1;
    size_t k = 0;
    if (nk == 1) {
        dedup_block(ids, &k, ids, n, bits);
        return k;
    }
    /* Counting sort by block into tmp, then each block back into ids. */
    uint32_t *start = tmp, *sorted = tmp + KEYS + 1;
    memset(start, 0, (nk + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++) start[(ids[i] >> BLOCK_BITS) - k0 + 1]++;
    for (uint32_t b = 0; b < nk; b++) start[b + 1] += start[b];
    for (size_t i = 0; i < n; i++) sorted[start[(ids[i] >> BLOCK_BITS) - k0]++] = ids[i];
    /* start[b] is now the end of block b. */
    for (uint32_t b = 0, s = 0; b < nk; s = start[b++]) dedup_block(ids, &k, sorted + s, start[b] - s, bits);
    return k;
}

static inline uint8_t *packed(const wm_peid_set *s) { return (uint8_t *)(void *)(s->low + s->n); }

wm_peid_set *wm_peid_set_new(const uint32_t *ids, size_t n)
{
    uint32_t lo, hi;
    wm_peid_range(ids, n, &lo, &hi);
    uint32_t b0 = n ? lo >> BLOCK_BITS : 0, span = n ? (hi >> BLOCK_BITS) - b0 : 0;
    uint8_t hbits = span == 0 ? 0 : span < 16 ? 4 : span < 256 ? 8 : 16;
    wm_peid_set *s = malloc(sizeof *s + n * sizeof(uint16_t) + (n * hbits + 7) / 8);
    if (!s) return NULL;
    s->n = (uint32_t)n;
    s->block0 = (uint16_t)b0;
    s->hbits = hbits;
    s->pad = 0;
    uint8_t *h = packed(s);
    size_t i = 0;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    /* 16 peids a step: low halves and blocks narrowed by vpmovdw/vpmovdb,
     * nibble pairs joined by one multiply-add (a + 16 b). */
    const __m512i base = _mm512_set1_epi32((int)b0);
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_loadu_si512((const void *)(ids + i));
        _mm256_storeu_si256((void *)(s->low + i), _mm512_cvtepi32_epi16(v));
        __m512i b = _mm512_sub_epi32(_mm512_srli_epi32(v, BLOCK_BITS), base);
        if (hbits == 4) {
            __m128i pairs = _mm_maddubs_epi16(_mm512_cvtepi32_epi8(b), _mm_set1_epi16(0x1001));
            _mm_storel_epi64((void *)(h + i / 2), _mm_packus_epi16(pairs, pairs));
        } else if (hbits == 8) {
            _mm_storeu_si128((void *)(h + i), _mm512_cvtepi32_epi8(b));
        } else if (hbits == 16) {
            _mm256_storeu_si256((void *)(h + 2 * i), _mm512_cvtepi32_epi16(b));
        }
    }
#endif
    for (size_t j = i; j < n; j++) s->low[j] = (uint16_t)ids[j];
    if (hbits == 4) {
        for (; i + 1 < n; i += 2)
            h[i / 2] = (uint8_t)(((ids[i] >> BLOCK_BITS) - b0) | ((ids[i + 1] >> BLOCK_BITS) - b0) << 4);
        if (n & 1) h[n / 2] = (uint8_t)((ids[n - 1] >> BLOCK_BITS) - b0);
    } else if (hbits == 8) {
        for (; i < n; i++) h[i] = (uint8_t)((ids[i] >> BLOCK_BITS) - b0);
    } else if (hbits == 16) {
        for (; i < n; i++) {
            uint16_t v = (uint16_t)((ids[i] >> BLOCK_BITS) - b0);
            memcpy(h + 2 * i, &v, 2);
        }
    }
    return s;
}

size_t wm_peid_set_next(const wm_peid_set *s, size_t *cursor, uint32_t *out, size_t max)
{
    size_t i = *cursor, k = 0, end = s->n - i < max ? s->n : i + max;
    const uint8_t *h = packed(s);
    uint32_t b0 = s->block0;
    for (; i < end; i++, k++) {
        uint32_t b;
        switch (s->hbits) {
        case 0: b = 0; break;
        case 4: b = (h[i / 2] >> (4 * (i & 1))) & 15; break;
        case 8: b = h[i]; break;
        default: { uint16_t v; memcpy(&v, h + 2 * i, 2); b = v; }
        }
        out[k] = (b + b0) << BLOCK_BITS | s->low[i];
    }
    *cursor = i;
    return k;
}
