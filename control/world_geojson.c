/* GeoJSON geometry objects (RFC 7946 §3.1) to GEOS geometries.
 *
 * Only the structure is checked here (types, positions, ring closure,
 * minimum point counts, bounded nesting and coordinate budget); OGC validity
 * is checked by the caller after reprojection, because a transform can change
 * it. Positions keep x and y; a third ordinate is ignored (the relations are
 * 2D, as in PostGIS).
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "control/world_impl.h"

typedef struct gctx {
    GEOSContextHandle_t h;
    uint64_t *left;
    int *limit;
    char *msg;
    size_t cap;
} gctx;

static void *fail_msg(gctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *fail_msg(gctx *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->msg, g->cap, fmt, ap);
    va_end(ap);
    return NULL;
}
#define FAIL fail_msg

static bool position(gctx *g, json_t *p, double *x, double *y)
{
    if (!json_is_array(p) || json_array_size(p) < 2) {
        FAIL(g, "a position must be an array of at least 2 numbers");
        return false;
    }
    json_t *a = json_array_get(p, 0), *b = json_array_get(p, 1);
    if (!json_is_number(a) || !json_is_number(b)) {
        FAIL(g, "a position must hold numbers");
        return false;
    }
    *x = json_number_value(a);
    *y = json_number_value(b);
    if (!isfinite(*x) || !isfinite(*y)) {
        FAIL(g, "a coordinate is not finite");
        return false;
    }
    return true;
}

/* An array of positions -> coordinate sequence of at least min points. */
static GEOSCoordSequence *positions(gctx *g, json_t *arr, size_t min, bool ring, const char *what)
{
    if (!json_is_array(arr)) return FAIL(g, "%s: coordinates must be an array of positions", what);
    size_t n = json_array_size(arr);
    if (n < min) return FAIL(g, "%s: %zu positions, at least %zu needed", what, n, min);
    if (n > *g->left) { *g->limit = 1; return FAIL(g, "coordinate bound reached"); }
    *g->left -= n;
    GEOSCoordSequence *s = GEOSCoordSeq_create_r(g->h, (unsigned)n, 2);
    if (!s) return FAIL(g, "out of memory");
    double x0 = 0, y0 = 0, x = 0, y = 0;
    for (size_t k = 0; k < n; k++) {
        if (!position(g, json_array_get(arr, k), &x, &y)) { GEOSCoordSeq_destroy_r(g->h, s); return NULL; }
        if (k == 0) { x0 = x; y0 = y; }
        GEOSCoordSeq_setXY_r(g->h, s, (unsigned)k, x, y);
    }
    if (ring && (x != x0 || y != y0)) {
        GEOSCoordSeq_destroy_r(g->h, s);
        return FAIL(g, "%s: ring not closed (first and last positions differ)", what);
    }
    return s;
}

static GEOSGeometry *line(gctx *g, json_t *c)
{
    GEOSCoordSequence *s = positions(g, c, 2, false, "LineString");
    return s ? GEOSGeom_createLineString_r(g->h, s) : NULL;
}

static GEOSGeometry *polygon(gctx *g, json_t *c)
{
    if (!json_is_array(c) || json_array_size(c) == 0) return FAIL(g, "Polygon: coordinates must be a non-empty array of rings");
    size_t n = json_array_size(c);
    GEOSGeometry **rings = calloc(n, sizeof *rings);
    if (!rings) return FAIL(g, "out of memory");
    size_t k;
    for (k = 0; k < n; k++) {
        GEOSCoordSequence *s = positions(g, json_array_get(c, k), 4, true, "Polygon ring");
        if (!s || !(rings[k] = GEOSGeom_createLinearRing_r(g->h, s))) break;
    }
    GEOSGeometry *poly = NULL;
    if (k == n) {
        poly = GEOSGeom_createPolygon_r(g->h, rings[0], rings + 1, (unsigned)(n - 1));
        if (!poly) FAIL(g, "Polygon: GEOS refused the rings");
    } else {
        for (size_t j = 0; j < k; j++) GEOSGeom_destroy_r(g->h, rings[j]);
    }
    free(rings);
    return poly;
}

static GEOSGeometry *geometry(gctx *g, json_t *o, unsigned depth);

/* Multi* and GeometryCollection: each element through `part`. */
static GEOSGeometry *collection(gctx *g, json_t *arr, int type, const char *what, unsigned depth)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0) return FAIL(g, "%s: needs a non-empty array", what);
    size_t n = json_array_size(arr);
    GEOSGeometry **parts = calloc(n, sizeof *parts);
    if (!parts) return FAIL(g, "out of memory");
    size_t k;
    for (k = 0; k < n; k++) {
        json_t *e = json_array_get(arr, k);
        GEOSGeometry *p = NULL;
        if (type == GEOS_MULTIPOINT) {
            double x, y;
            if (position(g, e, &x, &y)) {
                if (*g->left == 0) { *g->limit = 1; FAIL(g, "coordinate bound reached"); break; }
                (*g->left)--;
                p = GEOSGeom_createPointFromXY_r(g->h, x, y);
            }
        } else if (type == GEOS_MULTILINESTRING) p = line(g, e);
        else if (type == GEOS_MULTIPOLYGON) p = polygon(g, e);
        else p = geometry(g, e, depth + 1);
        if (!p) break;
        parts[k] = p;
    }
    GEOSGeometry *c = NULL;
    if (k == n) {
        c = GEOSGeom_createCollection_r(g->h, type, parts, (unsigned)n);
        if (!c) FAIL(g, "%s: GEOS refused the parts", what);
    } else {
        for (size_t j = 0; j < k; j++) GEOSGeom_destroy_r(g->h, parts[j]);
    }
    free(parts);
    return c;
}

static GEOSGeometry *geometry(gctx *g, json_t *o, unsigned depth)
{
    if (depth > WM_WORLD_MAX_NESTING) return FAIL(g, "GeometryCollection nested deeper than %u", WM_WORLD_MAX_NESTING);
    if (!json_is_object(o)) return FAIL(g, "geometry must be an object");
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!type) return FAIL(g, "geometry has no \"type\" string");
    json_t *c = json_object_get(o, "coordinates");
    if (!strcmp(type, "GeometryCollection"))
        return collection(g, json_object_get(o, "geometries"), GEOS_GEOMETRYCOLLECTION, "GeometryCollection", depth);
    if (!c) return FAIL(g, "%s has no \"coordinates\"", type);
    if (!strcmp(type, "Point")) {
        double x, y;
        if (!position(g, c, &x, &y)) return NULL;
        if (*g->left == 0) { *g->limit = 1; return FAIL(g, "coordinate bound reached"); }
        (*g->left)--;
        return GEOSGeom_createPointFromXY_r(g->h, x, y);
    }
    if (!strcmp(type, "LineString")) return line(g, c);
    if (!strcmp(type, "Polygon")) return polygon(g, c);
    if (!strcmp(type, "MultiPoint")) return collection(g, c, GEOS_MULTIPOINT, type, depth);
    if (!strcmp(type, "MultiLineString")) return collection(g, c, GEOS_MULTILINESTRING, type, depth);
    if (!strcmp(type, "MultiPolygon")) return collection(g, c, GEOS_MULTIPOLYGON, type, depth);
    return FAIL(g, "unknown geometry type \"%.40s\"", type);
}

GEOSGeometry *wm_world_geojson_geometry(GEOSContextHandle_t ctx, json_t *o, uint64_t *coords_left,
                                        int *limit, char *msg, size_t cap)
{
    gctx g = { ctx, coords_left, limit, msg, cap };
    *limit = 0;
    msg[0] = 0;
    GEOSGeometry *r = geometry(&g, o, 0);
    if (!r && !msg[0]) snprintf(msg, cap, "GEOS could not build the geometry");
    return r;
}
