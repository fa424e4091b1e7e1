/* Keeping each topic filter's neighborhood filter (nbf.h) in step with its
 * cells (writer side).
 *
 * A topic filter gets a filter once it has WM_NBF_MIN_CELLS cells: below
 * that the lookup's tag walk is as cheap, and 192 bytes per spatial topic
 * filter would add up with many single-subscription filters. Removing a
 * cell leaves its bit set (another cell may share it, and clearing would
 * need a scan); once as many bits are stale as cells are live, the filter
 * is rebuilt from the live cells, so a rebuild, O(live cells), comes after
 * at least that many removals.
 */
#include "matcher/matcher_int.h"

#include <stdlib.h>
#include <string.h>

#define WM_NBF_MIN_CELLS 4u

/* The bits of fid's live cells, plus nb unless it is WM_NONE. */
static void collect(const wm_matcher *m, uint32_t fid, uint32_t nb, uint32_t w[WM_NBF_WORDS])
{
    memset(w, 0, WM_NBF_WORDS * sizeof *w);
    const wm_rvec_blk *b = m->f_cells[fid].blk;
    for (uint32_t i = 0; b && i < b->len; i++)
        if (b->v[i] != WM_RVEC_DEAD) w[wm_nbf_word(m->c_nbhd[b->v[i]])] |= 1u << (m->c_nbhd[b->v[i]] % 32);
    if (nb != WM_NONE) w[wm_nbf_word(nb)] |= 1u << (nb % 32);
}

void wm_nbf_cell_add(wm_matcher *m, uint32_t fid, uint32_t nb)
{
    wm_nbf *f = m->f_nbf[fid];
    if (f) {
        wm_nbf_set(f, nb);
        return;
    }
    if (wm_rvec_live(&m->f_cells[fid]) + 1 < WM_NBF_MIN_CELLS) return;
    /* On allocation failure fid simply goes on without one. */
    f = aligned_alloc(_Alignof(wm_nbf), sizeof *f);
    if (!f) return;
    collect(m, fid, nb, f->w);
    f->stale = 0;
    __atomic_store_n(&m->f_nbf[fid], f, __ATOMIC_RELEASE);
}

void wm_nbf_cell_removed(wm_matcher *m, uint32_t fid)
{
    wm_nbf *f = m->f_nbf[fid];
    if (!f) return;
    uint32_t live = wm_rvec_live(&m->f_cells[fid]);
    if (live == 0) {
        /* Readers stop finding it, then it goes after a grace period. */
        __atomic_store_n(&m->f_nbf[fid], NULL, __ATOMIC_RELEASE);
        wm_retire_free(&m->retire, f);
        return;
    }
    if (++f->stale < live) return;
    uint32_t w[WM_NBF_WORDS];
    collect(m, fid, WM_NONE, w);
    for (uint32_t k = 0; k < WM_NBF_WORDS; k++)
        if (w[k] != f->w[k]) __atomic_store_n(&f->w[k], w[k], __ATOMIC_RELEASE);
    f->stale = 0;
}
