/* Grammar run-time shared by the EXI decoder and encoder (see exi_rt.h). */
#include "codec/exi_rt.h"

#include <string.h>

bool wm_exi_rt_frame_init(const wm_exi_grammar *g, wm_exi_arena *a, wm_exi_strtab *st, struct wm_exi_bi **bis,
                          uint32_t *n_bis, uint32_t *cap_bis, struct wm_exi_frame *f, uint32_t uri, uint32_t lid,
                          uint32_t elem)
{
    memset(f, 0, sizeof *f);
    f->uri = uri;
    f->lid = lid;
    f->bi = WM_EXI_NONE;
    if (elem == WM_EXI_NONE && !g->schemaless && lid < g->n_lids) elem = wm_exi_grammar_global_elem(g, uri, lid);
    if (elem == WM_EXI_ELEM_FRAGMENT) {
        f->tgram = g->elem_fragment;
        f->state = g->tgrams[f->tgram].start;
        f->nillable = true;
        return true;
    }
    if (elem != WM_EXI_NONE) {
        f->tgram = g->elems[elem].type;
        f->state = g->tgrams[f->tgram].start;
        f->nillable = g->elems[elem].nillable;
        return true;
    }
    f->state = WM_EXI_NONE;
    wm_exi_st_lname *l = &st->lnames[lid];
    if (l->bi == WM_EXI_NONE) {
        if (*n_bis == *cap_bis) {
            uint32_t nc = *cap_bis ? *cap_bis * 2 : 16;
            struct wm_exi_bi *nb = wm_exi_arena_alloc(a, nc * sizeof *nb);
            if (!nb) return false;
            if (*n_bis) memcpy(nb, *bis, *n_bis * sizeof *nb);
            *bis = nb;
            *cap_bis = nc;
        }
        memset(&(*bis)[*n_bis], 0, sizeof **bis);
        if (!wm_exi_strtab_touch(st, lid)) return false;
        l = &st->lnames[lid];
        l->bi = (*n_bis)++;
    }
    f->bi = l->bi;
    f->bi_state = 0;
    return true;
}

bool wm_exi_rt_learn(wm_exi_arena *a, wm_exi_bi_prod **arr, uint32_t *n, uint32_t *cap, uint8_t term, uint32_t uri,
                     uint32_t lid)
{
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        wm_exi_bi_prod *p = wm_exi_arena_alloc(a, nc * sizeof *p);
        if (!p) return false;
        if (*n) memcpy(p, *arr, *n * sizeof *p);
        *arr = p;
        *cap = nc;
    }
    (*arr)[(*n)++] = (wm_exi_bi_prod){ term, uri, lid };
    return true;
}
