/* Two-line posting slots of the spatial filter mapping (see posting.h). */
#include "matcher/posting.h"

_Static_assert(sizeof(wm_posting) == 128, "a posting slot is two cache lines");

wm_posting_op wm_posting_add_over(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r)
{
    const wm_rvec_blk *b = over->blk;
    for (uint32_t i = 0; b && i < b->len; i++)
        if (b->v[i] == x) return WM_POSTING_PRESENT;
    if (!wm_rvec_push(over, x, NULL, r, NULL, NULL)) return WM_POSTING_NOMEM;
    /* After the push: a reader that sees the flag finds the entry. */
    if (!p->over) __atomic_store_n(&p->over, 1, __ATOMIC_RELEASE);
    return WM_POSTING_DONE;
}

bool wm_posting_remove_over(wm_posting *p, wm_rvec *over, uint32_t x, wm_retire *r)
{
    if (!p->over || !wm_rvec_remove_value(over, x, r)) return false;
    if (wm_rvec_live(over) == 0) __atomic_store_n(&p->over, 0, __ATOMIC_RELEASE);
    return true;
}
