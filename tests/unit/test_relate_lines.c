/* control/relate_lines.h against GEOS's own relate (GEOSTouches_r): on every
 * ordered pair of Monaco road edges whose envelopes meet, and on random
 * lines over a 4x4 integer grid, where shared vertices, collinear overlaps,
 * closed lines, repeated vertices and self-intersections are frequent. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "control/relate_lines.h"
#include "control/world_impl.h"

Test(relate_lines, monaco_road_pairs_agree_with_geos)
{
    const char *root = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/world/monaco.geojson", root ? root : "../shared");
    wm_world_error err;
    wm_world *w = wm_world_load_file(path, NULL, &err);
    cr_assert(w, "%s", err.message);
    size_t pairs = 0, touching = 0;
    for (uint32_t a = 0; a < w->n; a++) {
        if (!w->line_n[a]) continue;
        for (uint32_t b = 0; b < w->n; b++) {
            if (a == b || !w->line_n[b]) continue;
            const wm_world_envelope *x = &w->env[a], *y = &w->env[b];
            if (x->xmax < y->xmin || y->xmax < x->xmin || x->ymax < y->ymin || y->ymax < x->ymin) continue;
            int ours = wm_relate_lines_touch(w->geos, w->line_xy[a], w->line_n[a], w->line_xy[b], w->line_n[b]);
            char geos = GEOSTouches_r(w->geos, w->geom[a], w->geom[b]);
            cr_assert_eq(ours, geos, "%s touches %s: ours %d, GEOS %d", w->peid[a], w->peid[b], ours, geos);
            pairs++;
            touching += (size_t)ours;
        }
    }
    cr_expect_gt(pairs, 30000, "%zu pairs", pairs);
    cr_expect_eq(touching, 20396, "the directed road Touches pairs PostGIS finds");
    wm_world_free(w);
}

static uint64_t rng = 88172645463325252ull;
static unsigned next(unsigned n)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static size_t random_line(double *v, bool closed)
{
    size_t n = 2 + next(4);
    for (;;) {
        for (size_t k = 0; k < n; k++) { v[2 * k] = next(4); v[2 * k + 1] = next(4) * 0.5; }
        if (closed) { v[2 * n] = v[0]; v[2 * n + 1] = v[1]; }
        size_t m = n + (closed ? 1 : 0);
        size_t distinct = 0;
        for (size_t k = 1; k < m; k++) distinct += v[2 * k] != v[0] || v[2 * k + 1] != v[1];
        if (distinct) return m;
    }
}

static GEOSGeometry *make(GEOSContextHandle_t h, const double *v, size_t n)
{
    GEOSCoordSequence *s = GEOSCoordSeq_create_r(h, (unsigned)n, 2);
    for (size_t k = 0; k < n; k++) GEOSCoordSeq_setXY_r(h, s, (unsigned)k, v[2 * k], v[2 * k + 1]);
    return GEOSGeom_createLineString_r(h, s);
}

Test(relate_lines, random_degenerate_lines_agree_with_geos)
{
    GEOSContextHandle_t h = GEOS_init_r();
    int runs = 200000;
#if defined(__SANITIZE_ADDRESS__)
    runs = 20000;
#endif
    size_t touching = 0;
    for (int i = 0; i < runs; i++) {
        double a[24], b[24];
        size_t na = random_line(a, next(5) == 0), nb = random_line(b, next(5) == 0);
        if (next(3) == 0) { b[0] = a[2 * (na - 1)]; b[1] = a[2 * (na - 1) + 1]; } /* share an end point */
        GEOSGeometry *ga = make(h, a, na), *gb = make(h, b, nb);
        /* Only valid lines reach the resolver (the loader checks). */
        char geos = GEOSisValid_r(h, ga) == 1 && GEOSisValid_r(h, gb) == 1 ? GEOSTouches_r(h, ga, gb) : 2;
        if (geos == 2) { GEOSGeom_destroy_r(h, ga); GEOSGeom_destroy_r(h, gb); continue; }
        int ours = wm_relate_lines_touch(h, a, na, b, nb);
        if (ours != geos) {
            char *wa = GEOSGeomToWKT_r(h, ga), *wb = GEOSGeomToWKT_r(h, gb);
            cr_assert_eq(ours, geos, "%s touches %s: ours %d, GEOS %d", wa, wb, ours, geos);
        }
        touching += (size_t)ours;
        GEOSGeom_destroy_r(h, ga);
        GEOSGeom_destroy_r(h, gb);
    }
    cr_expect_gt(touching, (size_t)runs / 50, "the generator must produce touching pairs (%zu)", touching);
    GEOS_finish_r(h);
}
