/* Neighborhood resolution with GEOS (semantics in control/resolver.h). */
#include "control/resolver.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "control/relate_lines.h"
#include "control/world_impl.h"

typedef struct vec {
    uint32_t *v;
    size_t n, cap;
} vec;

static bool vec_push(vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        uint32_t *nv = realloc(a->v, nc * sizeof *nv);
        if (!nv) return false;
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = x;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void sort_unique(vec *a)
{
    if (a->n < 2) return;
    qsort(a->v, a->n, sizeof *a->v, cmp_u32);
    size_t m = 1;
    for (size_t k = 1; k < a->n; k++)
        if (a->v[k] != a->v[m - 1]) a->v[m++] = a->v[k];
    a->n = m;
}

/* The state of one stage's evaluation, shared with the tree callback. */
typedef struct stage_eval {
    wm_world *w;
    const wm_nbhd_stage *st;
    uint32_t r;                       /* the current reference */
    const GEOSPreparedGeometry *prep; /* its prepared form */
    uint32_t s_ref, s_sel, s_cand;    /* stamps of this stage (s_cand per reference for D) */
    vec *out;
    bool failed;                      /* GEOS exception or allocation failure */
    bool nomem;
} stage_eval;

/* 1 related, 0 not, 2 GEOS exception (GEOS's own convention). */
static char related(stage_eval *se, uint32_t e)
{
    wm_world *w = se->w;
    switch (se->st->rel) {
    case WM_REL_EQUALS: {
        /* Equal point sets have identical extreme coordinates. */
        const wm_world_envelope *a = &w->env[se->r], *b = &w->env[e];
        if (a->xmin != b->xmin || a->ymin != b->ymin || a->xmax != b->xmax || a->ymax != b->ymax) return 0;
        return GEOSEquals_r(w->geos, w->geom[se->r], w->geom[e]);
    }
    case WM_REL_INTERSECTS: return GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
    case WM_REL_TOUCHES: {
        if (w->line_n[se->r] && w->line_n[e])
            return (char)wm_relate_lines_touch(w->geos, w->line_xy[se->r], w->line_n[se->r], w->line_xy[e], w->line_n[e]);
        /* Prepared touches is a full relate; the prepared intersects test
         * (indexed) rules out most candidates first. */
        char i = GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
        return i == 1 ? GEOSPreparedTouches_r(w->geos, se->prep, w->geom[e]) : i;
    }
    case WM_REL_CONTAINS: return GEOSPreparedContains_r(w->geos, se->prep, w->geom[e]);
    case WM_REL_DWITHIN: return GEOSPreparedDistanceWithin_r(w->geos, se->prep, w->geom[e], se->st->distance_m);
    case WM_REL_DISJOINT: break; /* handled by count_cb */
    }
    return 2;
}

static void select_cb(void *item, void *ud)
{
    stage_eval *se = ud;
    uint32_t e = (uint32_t)((uintptr_t)item - 1);
    wm_world *w = se->w;
    if (se->failed || w->mark_ref[e] == se->s_ref || w->mark_sel[e] == se->s_sel) return;
    char rel = related(se, e);
    if (rel == 2) { se->failed = true; return; }
    if (!rel) return;
    w->mark_sel[e] = se->s_sel;
    if (!vec_push(se->out, e)) se->failed = se->nomem = true;
}

/* D: counts, per candidate, the references it intersects. */
static void count_cb(void *item, void *ud)
{
    stage_eval *se = ud;
    uint32_t e = (uint32_t)((uintptr_t)item - 1);
    wm_world *w = se->w;
    if (se->failed || w->mark_ref[e] == se->s_ref || w->mark_cand[e] == se->s_cand) return;
    w->mark_cand[e] = se->s_cand; /* once per reference, even if e is in several layers */
    char rel = GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
    if (rel == 2) { se->failed = true; return; }
    if (w->mark_sel[e] != se->s_sel) { w->mark_sel[e] = se->s_sel; w->count[e] = 0; }
    w->count[e] += (uint32_t)rel;
}

/* Marks the layers whose category matches one of the stage's filters. */
static void pick_layers(wm_world *w, const wm_nbhd_stage *st)
{
    for (size_t l = 0; l < w->n_layers; l++) {
        const char *name = w->layers[l].name;
        size_t nl = strlen(name);
        w->layer_pick[l] = 0;
        for (size_t c = 0; c < st->n_cats && !w->layer_pick[l]; c++)
            w->layer_pick[l] = wm_topic_match(st->cats[c], strlen(st->cats[c]), name, nl);
    }
}

/* A filter that selects no category of the world is a typo (raod/#), the
 * category-side twin of an unknown peid, not an intentionally empty stage
 * (one writes that with a category that exists): refused with its position. */
static bool cats_known(const wm_world *w, const wm_nbhd *n, wm_nbhd_error *err)
{
    for (size_t i = 0; i < n->n_stages; i++) {
        const wm_nbhd_stage *st = &n->stages[i];
        for (size_t c = 0; c < st->n_cats; c++) {
            size_t fl = strlen(st->cats[c]);
            bool any = false;
            for (size_t l = 0; l < w->n_layers && !any; l++)
                any = wm_topic_match(st->cats[c], fl, w->layers[l].name, strlen(w->layers[l].name));
            if (any) continue;
            err->status = WM_NBHD_ERR_UNKNOWN_CATEGORY;
            err->pos = st->cat_pos ? st->cat_pos[c] : st->pos;
            snprintf(err->message, sizeof err->message, "category filter \"%.120s\" matches none of the world's %zu "
                     "categories", st->cats[c], w->n_layers);
            return false;
        }
    }
    return true;
}

/* N = Select(refs, Cats, Cond); refs sorted and unique. */
static bool select_stage(wm_world *w, const vec *refs, const wm_nbhd_stage *st, vec *out, wm_nbhd_error *err)
{
    out->n = 0;
    if (refs->n == 0) return true;
    pick_layers(w, st);
    stage_eval se = { .w = w, .st = st, .out = out };
    /* Stamps: refs, selected, final D pass, then one per reference (D). */
    uint32_t base = wm_world_stamps(w, (uint32_t)refs->n + 3);
    se.s_ref = base;
    for (size_t k = 0; k < refs->n; k++) w->mark_ref[refs->v[k]] = se.s_ref;
    se.s_sel = base + 1;
    bool disjoint = st->rel == WM_REL_DISJOINT;

    wm_world_candidates cand;
    if (!wm_world_candidates_for_pick(w, &cand)) se.failed = se.nomem = true;
    for (size_t k = 0; k < refs->n && !se.failed && cand.tree; k++) {
        se.r = refs->v[k];
        se.prep = NULL;
        if (st->rel != WM_REL_EQUALS && !(se.prep = wm_world_prepared(w, se.r))) { se.failed = true; break; }
        GEOSGeometry *query = w->geom[se.r], *grown = NULL;
        if (st->rel == WM_REL_DWITHIN) {
            const wm_world_envelope *e = &w->env[se.r];
            double d = st->distance_m;
            if (!(grown = GEOSGeom_createRectangle_r(w->geos, e->xmin - d, e->ymin - d, e->xmax + d, e->ymax + d))) {
                se.failed = true;
                break;
            }
            query = grown;
        }
        se.s_cand = base + 3 + (uint32_t)k;
        GEOSSTRtree_query_r(w->geos, cand.tree, query, disjoint ? count_cb : select_cb, &se);
        if (grown) GEOSGeom_destroy_r(w->geos, grown);
    }
    if (!se.failed && disjoint) {
        /* Selected unless it intersects every reference. */
        for (size_t m = 0; m < cand.n_members; m++) {
            uint32_t e = cand.members[m];
            if (w->mark_ref[e] == se.s_ref) continue;
            uint32_t hits = w->mark_sel[e] == se.s_sel ? w->count[e] : 0;
            if (hits < refs->n && !vec_push(out, e)) { se.failed = se.nomem = true; break; }
        }
    }
    if (se.failed) {
        err->status = se.nomem ? WM_NBHD_ERR_NOMEM : WM_NBHD_ERR_GEOMETRY;
        err->pos = st->pos;
        snprintf(err->message, sizeof err->message, "%s%.200s", se.nomem ? "out of memory" : "GEOS failed: ",
                 se.nomem ? "" : w->geos_msg);
        return false;
    }
    sort_unique(out);
    return true;
}

void wm_nbhd_result_free(wm_nbhd_result *r)
{
    if (!r) return;
    for (size_t k = 0; k < WM_NBHD_MAX_STAGES; k++) free(r->stage[k]);
    free(r->result);
    memset(r, 0, sizeof *r);
}

wm_nbhd_status wm_resolve(wm_world *w, const wm_nbhd *n, wm_nbhd_result *out, wm_nbhd_error *err)
{
    wm_nbhd_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    memset(out, 0, sizeof *out);
    if (n->n_stages == 0 || n->n_stages > WM_NBHD_MAX_STAGES) {
        err->status = WM_NBHD_ERR_LIMIT;
        err->pos = n->pos;
        snprintf(err->message, sizeof err->message, "a neighborhood has 1..%u stages", WM_NBHD_MAX_STAGES);
        return err->status;
    }
    vec refs = { 0 }, sel = { 0 };
    bool ok = true;
    const wm_nbhd_stage *s1 = &n->stages[0];
    for (size_t k = 0; k < s1->n_peids && ok; k++) {
        int64_t idx = wm_world_find(w, s1->peids[k].peid, s1->peids[k].len);
        if (idx < 0) {
            err->status = WM_NBHD_ERR_UNKNOWN_PEID;
            err->pos = s1->peids[k].pos;
            snprintf(err->message, sizeof err->message, "unknown peid \"%.200s\"", s1->peids[k].peid);
            ok = false;
        } else if (!vec_push(&refs, (uint32_t)idx)) {
            ok = false;
        }
    }
    ok = ok && cats_known(w, n, err);
    sort_unique(&refs);
    out->n_stages = n->n_stages;
    out->visible = n->visible;
    for (size_t i = 0; i < n->n_stages && ok; i++) {
        const wm_nbhd_stage *st = &n->stages[i];
        if (i > 0) {
            refs.n = 0;
            for (size_t j = 0; j < i && ok; j++)
                if (st->ref_stages >> j & 1)
                    for (size_t m = 0; m < out->stage_len[j] && ok; m++) ok = vec_push(&refs, out->stage[j][m]);
            sort_unique(&refs);
        }
        if (!ok) break;
        if (!(ok = select_stage(w, &refs, st, &sel, err))) break;
        out->stage[i] = malloc((sel.n ? sel.n : 1) * sizeof(uint32_t));
        if (!(ok = out->stage[i] != NULL)) break;
        if (sel.n) memcpy(out->stage[i], sel.v, sel.n * sizeof(uint32_t));
        out->stage_len[i] = sel.n;
    }
    if (ok) {
        vec res = { 0 };
        for (size_t i = 0; i < n->n_stages && ok; i++)
            if (n->visible >> i & 1)
                for (size_t m = 0; m < out->stage_len[i] && ok; m++) ok = vec_push(&res, out->stage[i][m]);
        sort_unique(&res);
        if (ok && !res.v) ok = (res.v = malloc(sizeof(uint32_t))) != NULL;
        out->result = res.v;
        out->result_len = res.n;
    }
    free(refs.v);
    free(sel.v);
    if (!ok) {
        if (err->status == WM_NBHD_OK) {
            err->status = WM_NBHD_ERR_NOMEM;
            snprintf(err->message, sizeof err->message, "out of memory");
        }
        wm_nbhd_result_free(out);
        return err->status;
    }
    return WM_NBHD_OK;
}

wm_nbhd_status wm_resolve_text(wm_world *w, const char *line, size_t len, wm_nbhd_result *out, wm_nbhd_error *err)
{
    wm_nbhd n;
    memset(out, 0, sizeof *out);
    wm_nbhd_status st = wm_nbhd_parse_one(line, len, &n, err);
    if (st != WM_NBHD_OK) return st;
    st = wm_resolve(w, &n, out, err);
    wm_nbhd_free(&n);
    return st;
}
