/* LineString Touches without a topology graph (see control/relate_lines.h). */
#include "control/relate_lines.h"

#include <math.h>
#include <stdbool.h>

/* Sign of the orientation of p relative to the directed line a->b: 1 left,
 * -1 right, 0 collinear, exact. The filter is Shewchuk's orient2d error bound
 * (ccwerrboundA); undecided cases go to GEOS's DD-precision predicate. */
static int orient(GEOSContextHandle_t ctx, const double *a, const double *b, const double *p)
{
    double l = (b[0] - a[0]) * (p[1] - a[1]), r = (b[1] - a[1]) * (p[0] - a[0]);
    double det = l - r, bound = 3.3306690738754716e-16 * (fabs(l) + fabs(r));
    if (det > bound) return 1;
    if (-det > bound) return -1;
    if (l == 0 && r == 0) return 0;
    return GEOSOrientationIndex_r(ctx, a[0], a[1], b[0], b[1], p[0], p[1]);
}

static bool same(const double *p, const double *q) { return p[0] == q[0] && p[1] == q[1]; }

/* q inside the bounding box of segment p0-p1. */
static bool within(const double *q, const double *p0, const double *p1)
{
    return q[0] >= fmin(p0[0], p1[0]) && q[0] <= fmax(p0[0], p1[0]) && q[1] >= fmin(p0[1], p1[1]) &&
           q[1] <= fmax(p0[1], p1[1]);
}

typedef struct line {
    const double *v;
    size_t n;
    bool closed;
} line;

static bool on_boundary(const line *l, const double *p)
{
    return !l->closed && (same(p, l->v) || same(p, l->v + 2 * (l->n - 1)));
}

/* Segment pair: 0 disjoint, 1 meets only at boundary points, -1 the interiors meet. */
static int segment_pair(GEOSContextHandle_t ctx, const line *A, const line *B, const double *a0, const double *a1,
                        const double *b0, const double *b1)
{
    if (fmax(a0[0], a1[0]) < fmin(b0[0], b1[0]) || fmax(b0[0], b1[0]) < fmin(a0[0], a1[0]) ||
        fmax(a0[1], a1[1]) < fmin(b0[1], b1[1]) || fmax(b0[1], b1[1]) < fmin(a0[1], a1[1]))
        return 0;
    int o1 = orient(ctx, a0, a1, b0), o2 = orient(ctx, a0, a1, b1);
    if (o1 * o2 > 0) return 0;
    int o3 = orient(ctx, b0, b1, a0), o4 = orient(ctx, b0, b1, a1);
    if (o3 * o4 > 0) return 0;
    const double *p;
    if (o1 == 0 && o2 == 0) {
        /* Collinear: compare along the axis on which a extends. */
        int ax = fabs(a1[0] - a0[0]) >= fabs(a1[1] - a0[1]) ? 0 : 1;
        double alo = fmin(a0[ax], a1[ax]), ahi = fmax(a0[ax], a1[ax]);
        double blo = fmin(b0[ax], b1[ax]), bhi = fmax(b0[ax], b1[ax]);
        double lo = fmax(alo, blo), hi = fmin(ahi, bhi);
        if (lo > hi) return 0;
        if (lo < hi) return -1; /* an overlap of positive length */
        p = a0[ax] == lo ? a0 : a1; /* end to end: the shared vertex */
    } else if (o1 && o2 && o3 && o4) {
        /* A proper crossing, interior to both segments and a vertex of
         * neither; it is still a boundary point when a non-simple line passes
         * through one of the end points there. */
        const double *ends[4] = { A->v, A->v + 2 * (A->n - 1), B->v, B->v + 2 * (B->n - 1) };
        for (int k = 0; k < 4; k++) {
            const line *l = k < 2 ? A : B;
            const double *q = ends[k];
            if (!l->closed && within(q, a0, a1) && within(q, b0, b1) && !orient(ctx, a0, a1, q) && !orient(ctx, b0, b1, q))
                return 1;
        }
        return -1;
    } else {
        p = o1 == 0 ? b0 : o2 == 0 ? b1 : o3 == 0 ? a0 : a1;
    }
    return on_boundary(A, p) || on_boundary(B, p) ? 1 : -1;
}

int wm_relate_lines_touch(GEOSContextHandle_t ctx, const double *a, size_t na, const double *b, size_t nb)
{
    line A = { a, na, same(a, a + 2 * (na - 1)) }, B = { b, nb, same(b, b + 2 * (nb - 1)) };
    bool meet = false;
    for (size_t i = 0; i + 1 < na; i++) {
        const double *a0 = a + 2 * i, *a1 = a0 + 2;
        if (same(a0, a1)) continue; /* its point is a vertex of a neighbouring segment */
        for (size_t j = 0; j + 1 < nb; j++) {
            const double *b0 = b + 2 * j, *b1 = b0 + 2;
            if (same(b0, b1)) continue;
            int r = segment_pair(ctx, &A, &B, a0, a1, b0, b1);
            if (r < 0) return 0;
            meet |= r > 0;
        }
    }
    return meet;
}
