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

/* The work a neighborhood may take (WM_NBHD_MAX_WORK, nbhd.h) is counted
 * in units: one per candidate the spatial index hands out (~8 ns here),
 * WM_RELATE_WORK per prepared relation GEOS evaluates (0.2-0.5 us),
 * WM_FULL_RELATE_WORK per full DE-9IM relate (prepared Touches, Equals:
 * up to ~5 us on Monaco's zones). Deterministic, unlike a clock: a
 * neighborhood resolves or is refused the same way on every machine. */
#define WM_RELATE_WORK 64
#define WM_FULL_RELATE_WORK 1024

/* The state of one stage's evaluation, shared with the tree callbacks. */
typedef struct stage_eval {
    wm_world *w;
    const wm_nbhd_stage *st;
    uint32_t r;                       /* the current reference */
    const GEOSPreparedGeometry *prep; /* its prepared form */
    uint32_t e;                       /* by candidate: the current candidate */
    uint32_t s_ref, s_sel, s_cand;    /* stamps of this stage (s_cand per reference for D) */
    uint32_t seen;                    /* by candidate: references of e visited (D) */
    bool hit;                         /* by candidate: e is decided (selected) */
    vec *out;
    uint64_t *work;                   /* the neighborhood's work so far */
    bool failed;                      /* GEOS exception, allocation failure or work bound */
    bool nomem;
    bool over;                        /* the work bound was crossed */
} stage_eval;

/* Adds units of work; false (and the evaluation failed) past the bound. */
static bool spend(stage_eval *se, uint64_t units)
{
    *se->work += units;
    if (*se->work <= WM_NBHD_MAX_WORK) return true;
    se->failed = se->over = true;
    return false;
}

/* 1 related, 0 not, 2 GEOS exception (GEOS's own convention). */
static char related(stage_eval *se, uint32_t e)
{
    wm_world *w = se->w;
    if (!spend(se, WM_RELATE_WORK)) return 2;
    switch (se->st->rel) {
    case WM_REL_EQUALS: {
        /* Equal point sets have identical extreme coordinates. */
        const wm_world_envelope *a = &w->env[se->r], *b = &w->env[e];
        if (a->xmin != b->xmin || a->ymin != b->ymin || a->xmax != b->xmax || a->ymax != b->ymax) return 0;
        return spend(se, WM_FULL_RELATE_WORK) ? GEOSEquals_r(w->geos, w->geom[se->r], w->geom[e]) : 2;
    }
    case WM_REL_INTERSECTS: return GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
    case WM_REL_TOUCHES: {
        if (w->line_n[se->r] && w->line_n[e])
            return (char)wm_relate_lines_touch(w->geos, w->line_xy[se->r], w->line_n[se->r], w->line_xy[e], w->line_n[e]);
        /* Prepared touches is a full relate; the prepared intersects test
         * (indexed) rules out most candidates first. */
        char i = GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
        if (i != 1) return i;
        return spend(se, WM_FULL_RELATE_WORK) ? GEOSPreparedTouches_r(w->geos, se->prep, w->geom[e]) : 2;
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
    if (se->failed || !spend(se, 1) || w->mark_ref[e] == se->s_ref || w->mark_sel[e] == se->s_sel) return;
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
    if (se->failed || !spend(se, 1) || w->mark_ref[e] == se->s_ref || w->mark_cand[e] == se->s_cand) return;
    w->mark_cand[e] = se->s_cand; /* once per reference, even if e is in several layers */
    if (!spend(se, WM_RELATE_WORK)) return;
    char rel = GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[e]);
    if (rel == 2) { se->failed = true; return; }
    if (w->mark_sel[e] != se->s_sel) { w->mark_sel[e] = se->s_sel; w->count[e] = 0; }
    w->count[e] += (uint32_t)rel;
}

/* By candidate (select_stage): item is a reference near the candidate
 * se->e; decides e at the first reference it is related to (for D: the
 * first one it does not intersect). */
static void ref_cb(void *item, void *ud)
{
    stage_eval *se = ud;
    if (se->failed || se->hit || !spend(se, 1)) return;
    uint32_t r = (uint32_t)((uintptr_t)item - 1);
    wm_world *w = se->w;
    se->seen++;
    se->r = r;
    se->prep = NULL;
    if (se->st->rel != WM_REL_EQUALS && !(se->prep = wm_world_prepared(w, r))) {
        se->failed = true;
        return;
    }
    char rel;
    if (se->st->rel == WM_REL_DISJOINT) {
        if (!spend(se, WM_RELATE_WORK)) return;
        rel = GEOSPreparedIntersects_r(w->geos, se->prep, w->geom[se->e]);
        if (rel != 2) rel = !rel;
    } else {
        rel = related(se, se->e);
    }
    if (rel == 2) se->failed = true;
    else if (rel) se->hit = true;
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
/* The grown query box of DWd around entity x (NULL: out of memory). */
static GEOSGeometry *grown_box(wm_world *w, uint32_t x, double d)
{
    const wm_world_envelope *e = &w->env[x];
    return GEOSGeom_createRectangle_r(w->geos, e->xmin - d, e->ymin - d, e->xmax + d, e->ymax + d);
}

/* Select by candidate: each candidate e (not a reference) queries a tree
 * of the references near it and stops at the first that decides it. The
 * same relation, tested the same way (the reference prepared), so the
 * same set as by reference; chosen when the candidates are fewer than the
 * references, where going by reference had every reference enumerate the
 * whole candidate layer (a stage whose references cover the world: 64 such
 * stages took 14 s on Monaco). */
static void select_by_candidate(wm_world *w, const vec *refs, const wm_world_candidates *cand, stage_eval *se)
{
    GEOSSTRtree *rt = GEOSSTRtree_create_r(w->geos, 10);
    if (!rt) { se->failed = se->nomem = true; return; }
    for (size_t k = 0; k < refs->n; k++)
        GEOSSTRtree_insert_r(w->geos, rt, w->geom[refs->v[k]], (void *)(uintptr_t)(refs->v[k] + 1));
    const wm_nbhd_stage *st = se->st;
    for (size_t m = 0; m < cand->n_members && !se->failed; m++) {
        uint32_t e = cand->members[m];
        /* each candidate once (an entity may be in several picked layers) */
        if (w->mark_ref[e] == se->s_ref || w->mark_sel[e] == se->s_sel || w->mark_cand[e] == se->s_cand) continue;
        w->mark_cand[e] = se->s_cand;
        if (!spend(se, 1)) break;
        se->e = e;
        se->hit = false;
        se->seen = 0;
        GEOSGeometry *grown = NULL, *query = w->geom[e];
        if (st->rel == WM_REL_DWITHIN) {
            if (!(grown = grown_box(w, e, st->distance_m))) { se->failed = se->nomem = true; break; }
            query = grown;
        }
        GEOSSTRtree_query_r(w->geos, rt, query, ref_cb, se);
        if (grown) GEOSGeom_destroy_r(w->geos, grown);
        /* D: a reference the index did not hand out is disjoint from e */
        if (!se->failed && st->rel == WM_REL_DISJOINT && se->seen < refs->n) se->hit = true;
        if (se->failed || !se->hit) continue;
        w->mark_sel[e] = se->s_sel;
        if (!vec_push(se->out, e)) se->failed = se->nomem = true;
    }
    GEOSSTRtree_destroy_r(w->geos, rt);
}

static bool select_stage(wm_world *w, const vec *refs, const wm_nbhd_stage *st, size_t stage_no, vec *out,
                         uint64_t *work, wm_nbhd_error *err)
{
    out->n = 0;
    if (refs->n == 0) return true;
    pick_layers(w, st);
    stage_eval se = { .w = w, .st = st, .out = out, .work = work };
    /* Stamps: refs, selected, final D pass, then one per reference (D). */
    uint32_t base = wm_world_stamps(w, (uint32_t)refs->n + 3);
    se.s_ref = base;
    for (size_t k = 0; k < refs->n; k++) w->mark_ref[refs->v[k]] = se.s_ref;
    se.s_sel = base + 1;
    bool disjoint = st->rel == WM_REL_DISJOINT;

    wm_world_candidates cand;
    if (!wm_world_candidates_for_pick(w, &cand)) se.failed = se.nomem = true;
    /* Fewer candidates (not references) than references: go by candidate. */
    size_t n_cand = 0;
    for (size_t m = 0; m < cand.n_members && n_cand < refs->n; m++) n_cand += w->mark_ref[cand.members[m]] != se.s_ref;
    if (!se.failed && cand.tree && n_cand < refs->n) {
        se.s_cand = base + 2;
        select_by_candidate(w, refs, &cand, &se);
        goto done;
    }
    for (size_t k = 0; k < refs->n && !se.failed && cand.tree; k++) {
        se.r = refs->v[k];
        se.prep = NULL;
        if (st->rel != WM_REL_EQUALS && !(se.prep = wm_world_prepared(w, se.r))) { se.failed = true; break; }
        GEOSGeometry *query = w->geom[se.r], *grown = NULL;
        if (st->rel == WM_REL_DWITHIN) {
            if (!(grown = grown_box(w, se.r, st->distance_m))) {
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
done:
    if (se.failed) {
        err->status = se.over ? WM_NBHD_ERR_LIMIT : se.nomem ? WM_NBHD_ERR_NOMEM : WM_NBHD_ERR_GEOMETRY;
        err->pos = st->pos;
        if (se.over)
            snprintf(err->message, sizeof err->message,
                     "the neighborhood needs more than %llu units of work (a spatial-index visit is 1, a relation "
                     "%u, a full relate %u) and is refused at stage %zu (%zu references): narrow its categories or "
                     "distances, or split it", (unsigned long long)WM_NBHD_MAX_WORK, WM_RELATE_WORK, WM_FULL_RELATE_WORK,
                     stage_no, refs->n);
        else
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
    uint64_t work = 0;
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
        if (!(ok = select_stage(w, &refs, st, i + 1, &sel, &work, err))) break;
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
