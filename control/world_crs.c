/* The world's coordinate reference system: reading the GeoJSON "crs" member
 * and reprojecting to a metric CRS with PROJ, so that DWd distances are
 * metres (ARCHITECTURE.md §5). RFC 7946 data (no crs member) is WGS84
 * lon/lat and goes to the UTM zone of its centre; a projected CRS in metres is
 * kept as is, which keeps files like monaco.geojson bit-exact, once it is
 * seen to measure metres at the data (scale_ok, as for --crs).
 */
#include <jansson.h>
#include <math.h>
#include <proj.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/world_impl.h"

int wm_world_crs_member_epsg(json_t *crs, char *msg, size_t cap)
{
    if (!crs || json_is_null(crs)) return 0;
    const char *type = json_string_value(json_object_get(crs, "type"));
    const char *name = json_string_value(json_object_get(json_object_get(crs, "properties"), "name"));
    if (!type || strcmp(type, "name") || !name) {
        snprintf(msg, cap, "crs member must be {\"type\":\"name\",\"properties\":{\"name\":...}}");
        return -1;
    }
    if (!strcmp(name, "urn:ogc:def:crs:OGC:1.3:CRS84") || !strcmp(name, "urn:ogc:def:crs:OGC::CRS84") ||
        !strcmp(name, "OGC:CRS84"))
        return 4326;
    const char *num = NULL;
    static const char *const prefixes[] = { "urn:ogc:def:crs:EPSG::", "urn:ogc:def:crs:EPSG:", "EPSG:" };
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0] && !num; k++)
        if (!strncmp(name, prefixes[k], strlen(prefixes[k]))) num = name + strlen(prefixes[k]);
    /* urn:ogc:def:crs:EPSG:<version>:<code> carries a version field. */
    if (num && strchr(num, ':')) num = strrchr(num, ':') + 1;
    long code = 0;
    if (num && *num) {
        char *end;
        code = strtol(num, &end, 10);
        if (*end || code <= 0 || code > 999999) code = 0;
    }
    if (!code) {
        snprintf(msg, cap, "crs \"%.200s\" names no EPSG code (expected EPSG:n or urn:ogc:def:crs:EPSG::n)", name);
        return -1;
    }
    return (int)code;
}

/* Whether EPSG:code is a projected CRS whose first axis is in metres. */
static int crs_kind(PJ_CONTEXT *pc, int code, char *msg, size_t cap)
{
    char def[32];
    snprintf(def, sizeof def, "EPSG:%d", code);
    PJ *crs = proj_create(pc, def);
    if (!crs) {
        snprintf(msg, cap, "PROJ does not know %s", def);
        return -1;
    }
    int kind = 0; /* 0 geographic, 1 projected metric, -1 unsupported */
    PJ_TYPE t = proj_get_type(crs);
    if (t == PJ_TYPE_GEOGRAPHIC_2D_CRS || t == PJ_TYPE_GEOGRAPHIC_3D_CRS) {
        kind = 0;
    } else if (t == PJ_TYPE_PROJECTED_CRS) {
        PJ *cs = proj_crs_get_coordinate_system(pc, crs);
        double conv = 0;
        if (!cs || !proj_cs_get_axis_info(pc, cs, 0, NULL, NULL, NULL, &conv, NULL, NULL, NULL) || conv != 1.0) {
            snprintf(msg, cap, "%s is projected but not in metres", def);
            kind = -1;
        } else {
            kind = 1;
        }
        if (cs) proj_destroy(cs);
    } else {
        snprintf(msg, cap, "%s is neither a geographic nor a projected CRS", def);
        kind = -1;
    }
    proj_destroy(crs);
    return kind;
}

typedef struct xform {
    PJ *pj;
    int failed;
} xform;

static int transform_xy(double *x, double *y, void *ud)
{
    xform *t = ud;
    PJ_COORD c = proj_coord(*x, *y, 0, 0);
    PJ_COORD r = proj_trans(t->pj, PJ_FWD, c);
    if (!isfinite(r.xy.x) || !isfinite(r.xy.y) || r.xy.x == HUGE_VAL) {
        t->failed = 1;
        return 0;
    }
    *x = r.xy.x;
    *y = r.xy.y;
    return 1;
}

/* The lon/lat bounding box of geoms (GeoJSON order x = lon): false, with
 * the reason in msg, when a coordinate is outside [-180,180]x[-90,90]. */
static bool lonlat_bbox(GEOSContextHandle_t ctx, GEOSGeometry **geoms, size_t n, double box[4], char *msg, size_t cap)
{
    double xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        double a, b, c, d;
        if (!GEOSGeom_getExtent_r(ctx, geoms[k], &a, &b, &c, &d)) continue;
        xmin = fmin(xmin, a); ymin = fmin(ymin, b); xmax = fmax(xmax, c); ymax = fmax(ymax, d);
    }
    if (!(xmin >= -180 && xmax <= 180 && ymin >= -90 && ymax <= 90)) {
        snprintf(msg, cap, "coordinates outside WGS84 lon/lat range [-180,180]x[-90,90]: a projected file needs a crs member");
        return false;
    }
    box[0] = xmin, box[1] = ymin, box[2] = xmax, box[3] = ymax;
    return true;
}

/* The lon/lat box of geoms given in the projected EPSG:src: the extent's
 * corners and centre taken back to WGS84 (enough to probe scale_ok with). */
static bool projected_lonlat_bbox(PJ_CONTEXT *pc, GEOSContextHandle_t ctx, GEOSGeometry **geoms, size_t n, int src,
                                  double box[4], char *msg, size_t cap)
{
    double xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        double a, b, c, d;
        if (!GEOSGeom_getExtent_r(ctx, geoms[k], &a, &b, &c, &d)) continue;
        xmin = fmin(xmin, a); ymin = fmin(ymin, b); xmax = fmax(xmax, c); ymax = fmax(ymax, d);
    }
    char s[32];
    snprintf(s, sizeof s, "EPSG:%d", src);
    PJ *pj = proj_create_crs_to_crs(pc, s, "EPSG:4326", NULL);
    PJ *norm = pj ? proj_normalize_for_visualization(pc, pj) : NULL;
    bool ok = norm && xmin <= xmax && ymin <= ymax;
    const double probe[5][2] = { { xmin, ymin }, { xmax, ymin }, { xmin, ymax }, { xmax, ymax },
                                 { (xmin + xmax) / 2, (ymin + ymax) / 2 } };
    box[0] = box[1] = INFINITY, box[2] = box[3] = -INFINITY;
    for (int i = 0; i < 5 && ok; i++) {
        PJ_COORD r = proj_trans(norm, PJ_FWD, proj_coord(probe[i][0], probe[i][1], 0, 0));
        if (!isfinite(r.xy.x) || !isfinite(r.xy.y) || r.xy.x == HUGE_VAL) { ok = false; break; }
        box[0] = fmin(box[0], r.xy.x); box[1] = fmin(box[1], r.xy.y);
        box[2] = fmax(box[2], r.xy.x); box[3] = fmax(box[3], r.xy.y);
    }
    if (!ok) snprintf(msg, cap, "PROJ cannot take the data's extent in %s back to lon/lat to check its scale", s);
    if (norm) proj_destroy(norm);
    if (pj) proj_destroy(pj);
    return ok;
}

/* A CRS named by the user must measure metres at the data: DWd and the
 * metric relations are computed in its plane, so its scale there is the
 * error of every distance (Web Mercator's is 1/cos(lat), 1.38 at Monaco; a
 * UTM zone far from the data is worse or undefined). Probes the box's
 * corners and centre with proj_factors (meridional and parallel scale);
 * false, with the reason in msg, beyond WM_CRS_MAX_SCALE_ERROR. */
#define WM_CRS_MAX_SCALE_ERROR 0.01
static bool scale_ok(PJ_CONTEXT *pc, int target, const double box[4], const char *hint, char *msg, size_t cap)
{
    char t[32];
    snprintf(t, sizeof t, "EPSG:%d", target);
    PJ *crs = proj_create(pc, t);
    if (!crs) {
        snprintf(msg, cap, "PROJ does not know %s", t);
        return false;
    }
    const double probe[5][2] = { { box[0], box[1] }, { box[2], box[1] }, { box[0], box[3] }, { box[2], box[3] },
                                 { (box[0] + box[2]) / 2, (box[1] + box[3]) / 2 } };
    bool ok = true;
    for (int i = 0; i < 5 && ok; i++) {
        PJ_FACTORS f = proj_factors(crs, proj_coord(proj_torad(probe[i][0]), proj_torad(probe[i][1]), 0, 0));
        double worst = fmax(fabs(f.meridional_scale - 1), fabs(f.parallel_scale - 1));
        if (proj_errno(crs) || !isfinite(worst)) {
            snprintf(msg, cap, "%s cannot be evaluated at lon %.4f, lat %.4f of the data (outside its domain): %s",
                     t, probe[i][0], probe[i][1], hint);
            ok = false;
        } else if (worst > WM_CRS_MAX_SCALE_ERROR) {
            snprintf(msg, cap, "%s distorts distances by %.1f %% at lon %.4f, lat %.4f of the data (scale %.4f x %.4f; "
                     "at most %.0f %% is taken): distances in metres would be wrong; %s",
                     t, 100 * worst, probe[i][0], probe[i][1], f.meridional_scale, f.parallel_scale,
                     100 * WM_CRS_MAX_SCALE_ERROR, hint);
            ok = false;
        }
        proj_errno_reset(crs);
    }
    proj_destroy(crs);
    return ok;
}

int wm_world_crs_reproject(GEOSContextHandle_t ctx, GEOSGeometry **geoms, size_t n, int src_epsg, int target_epsg,
                           uint64_t *bad, char *msg, size_t cap)
{
    *bad = 0;
    if (src_epsg == 0) src_epsg = 4326;
    PJ_CONTEXT *pc = proj_context_create();
    if (!pc) { snprintf(msg, cap, "PROJ context creation failed"); return -1; }
    proj_context_use_proj4_init_rules(pc, 0);
    proj_log_level(pc, PJ_LOG_NONE); /* errors are reported through msg, not PROJ's stderr logger */
    int result = -1;
    PJ *pj = NULL, *norm = NULL;
    int src_kind = crs_kind(pc, src_epsg, msg, cap);
    if (src_kind < 0) goto out;
    int target = target_epsg;
    if (!target) {
        if (src_kind == 1) {
            target = src_epsg;
        } else {
            /* The UTM zone of the centre of the bounding box (lon/lat). */
            double box[4];
            if (!lonlat_bbox(ctx, geoms, n, box, msg, cap)) goto out;
            double lon = (box[0] + box[2]) / 2, lat = (box[1] + box[3]) / 2;
            int zone = (int)floor((lon + 180.0) / 6.0) + 1;
            if (zone > 60) zone = 60;
            target = (lat >= 0 ? 32600 : 32700) + zone;
        }
    }
    int tk = crs_kind(pc, target, msg, cap);
    if (tk < 0) goto out;
    if (tk != 1) {
        snprintf(msg, cap, "target CRS EPSG:%d is not projected: relations are evaluated in metres", target);
        goto out;
    }
    /* Only the UTM zone chosen here goes unprobed: a CRS named by --crs or
     * by the file's crs member is as wrong at the data as anywhere else. */
    if (target_epsg || src_kind == 1) {
        double box[4];
        const char *hint = target_epsg ? "name a CRS made for the area, or leave --crs out for the UTM zone of "
                                         "the data's centre"
                                       : "the file's crs member: give the data in lon/lat (RFC 7946) or in a "
                                         "CRS made for the area";
        bool have = src_kind == 0 ? lonlat_bbox(ctx, geoms, n, box, msg, cap)
                                  : projected_lonlat_bbox(pc, ctx, geoms, n, src_epsg, box, msg, cap);
        if (!have || !scale_ok(pc, target, box, hint, msg, cap)) goto out;
    }
    if (target == src_epsg) { result = target; goto out; }

    char s[32], t[32];
    snprintf(s, sizeof s, "EPSG:%d", src_epsg);
    snprintf(t, sizeof t, "EPSG:%d", target);
    pj = proj_create_crs_to_crs(pc, s, t, NULL);
    if (!pj) { snprintf(msg, cap, "PROJ cannot transform %s to %s", s, t); goto out; }
    /* GeoJSON positions are x=lon, y=lat (easting, northing): traditional GIS order. */
    norm = proj_normalize_for_visualization(pc, pj);
    if (!norm) { snprintf(msg, cap, "PROJ cannot normalise the axis order of %s to %s", s, t); goto out; }
    for (size_t k = 0; k < n; k++) {
        xform xf = { norm, 0 };
        GEOSGeometry *r = GEOSGeom_transformXY_r(ctx, geoms[k], transform_xy, &xf);
        if (!r || xf.failed) {
            if (r) GEOSGeom_destroy_r(ctx, r);
            *bad = k + 1;
            snprintf(msg, cap, "PROJ cannot transform a coordinate from %s to %s", s, t);
            goto out;
        }
        GEOSGeom_destroy_r(ctx, geoms[k]);
        geoms[k] = r;
    }
    result = target;
out:
    if (norm) proj_destroy(norm);
    if (pj) proj_destroy(pj);
    proj_context_destroy(pc);
    return result;
}
