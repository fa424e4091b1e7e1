/* Two-line posting slots of the spatial filter mapping (see posting.h). */
#include "matcher/posting.h"

_Static_assert(sizeof(wm_posting) == 128, "a posting slot is two cache lines");

/* Entries of line `half` equal to v, as a bit mask over the line. */
static inline uint32_t line_eq(const wm_posting *p, uint32_t half, uint32_t v)
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

static bool put_in(wm_posting *p, uint32_t half, uint32_t x)
{
    uint32_t free = line_eq(p, half, 0);
    if (!free) return false;
    __atomic_store_n(&p->v[16 * half + (uint32_t)__builtin_ctz(free)], x + 1, __ATOMIC_RELEASE);
    return true;
}

static bool clear_in(wm_posting *p, uint32_t half, uint32_t x)
{
    uint32_t at = line_eq(p, half, x + 1);
    if (!at) return false;
    __atomic_store_n(&p->v[16 * half + (uint32_t)__builtin_ctz(at)], 0, __ATOMIC_RELEASE);
    return true;
}

wm_posting_op wm_posting_add(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r)
{
    if (put_in(p, x & 1, x) || put_in(p, !(x & 1), x)) return WM_POSTING_SLOT;
    if (!wm_rvec_push(over, x, NULL, r, NULL, NULL)) return WM_POSTING_FAILED;
    /* After the push: a reader that sees the flag finds the entry. */
    if (!p->over) __atomic_store_n(&p->over, 1, __ATOMIC_RELEASE);
    return WM_POSTING_SPILL;
}

wm_posting_op wm_posting_remove(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r)
{
    if (clear_in(p, x & 1, x) || clear_in(p, !(x & 1), x)) return WM_POSTING_SLOT;
    if (!p->over || !wm_rvec_remove_value(over, x, r)) return WM_POSTING_FAILED;
    if (wm_rvec_live(over) == 0) __atomic_store_n(&p->over, 0, __ATOMIC_RELEASE);
    return WM_POSTING_SPILL;
}
