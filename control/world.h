/* The world model: the physical entities of spaPS (paper §III, §V-B1 "table
 * PhysEntities" and "view catLayers"), loaded from GeoJSON into GEOS
 * geometries in a metric CRS, with one STRtree per category layer.
 *
 * Input (ARCHITECTURE.md §5, ../shared/data/world/README.md):
 *   - a GeoJSON FeatureCollection (RFC 7946), or a GeoJSON text sequence:
 *     Features one after another, separated by whitespace and/or RS (0x1E)
 *     (RFC 8142), e.g. one Feature per line;
 *   - Feature "id" (string, or integral number printed in decimal) = peid;
 *     unique, non-empty, at most WM_WORLD_MAX_PEID bytes, no NUL;
 *   - "properties"."cats": a string or a list of strings, each a valid MQTT
 *     topic name (levels separated by '/', no wildcards); absent = no
 *     category (the entity can be a reference but is never selected);
 *   - any geometry type (Point, LineString, Polygon, their Multi* forms,
 *     GeometryCollection); 2D (a third ordinate is ignored); it must be
 *     non-empty and OGC-valid (GEOS isValid) after reprojection.
 *   - CRS: a top-level "crs" member {"type":"name","properties":{"name":N}}
 *     with N = "EPSG:n", "urn:ogc:def:crs:EPSG::n" or the OGC CRS84 URN. A
 *     projected CRS in metres is used as is; a geographic one (or no crs
 *     member: WGS84 lon/lat per RFC 7946) is reprojected with PROJ to the UTM
 *     zone (WGS 84, EPSG:326zz/327zz) of the centre of the data's bounding
 *     box. wm_world_options.target_epsg forces the target CRS instead (it
 *     must be projected with metre units).
 * Every distance in this API and in the resolver is in metres of that CRS.
 *
 * Entities are numbered 0..n-1 in byte-wise (memcmp) order of their peids,
 * so sorting entity indices sorts peids the same way.
 *
 * Thread safety: loading is reentrant (each world has its own GEOS context,
 * GEOS_init_r, and its own PROJ context). A loaded world is used by one
 * thread at a time: the resolver (control/resolver.h) keeps per-world scratch
 * and caches prepared geometries inside it. Use one world per thread or
 * serialise calls.
 */
#ifndef WM_CONTROL_WORLD_H
#define WM_CONTROL_WORLD_H

#include <stddef.h>
#include <stdint.h>

#define WM_WORLD_MAX_BYTES     (1ull << 30)  /* default bound on the input size */
#define WM_WORLD_MAX_FEATURES  10000000u     /* default bound on features */
#define WM_WORLD_MAX_COORDS    100000000u    /* default bound on coordinates, all features */
#define WM_WORLD_MAX_PEID      4096u         /* bytes of one peid */
#define WM_WORLD_MAX_CATS      256u          /* categories of one entity */
#define WM_WORLD_MAX_NESTING   16u           /* GeometryCollection nesting depth */

typedef struct wm_world wm_world;

typedef struct wm_world_options {
    int target_epsg;        /* 0: the source CRS if projected, else the UTM zone of the centre */
    uint64_t max_bytes;     /* 0: WM_WORLD_MAX_BYTES */
    uint64_t max_features;  /* 0: WM_WORLD_MAX_FEATURES */
    uint64_t max_coords;    /* 0: WM_WORLD_MAX_COORDS */
} wm_world_options;

typedef enum wm_world_status {
    WM_WORLD_OK = 0,
    WM_WORLD_ERR_IO,            /* the file cannot be opened or read */
    WM_WORLD_ERR_JSON,          /* not JSON (message has line:column from jansson) */
    WM_WORLD_ERR_FEATURE,       /* not a FeatureCollection/Feature, or a Feature without the right members */
    WM_WORLD_ERR_ID,            /* id missing, empty, too long, containing NUL, or not a string/integer */
    WM_WORLD_ERR_DUP_ID,        /* two features with the same peid */
    WM_WORLD_ERR_CATS,          /* properties.cats not a string/list of valid topic names */
    WM_WORLD_ERR_GEOMETRY,      /* malformed GeoJSON geometry (type, coordinates, ring not closed, empty) */
    WM_WORLD_ERR_INVALID_GEOMETRY, /* well-formed but not OGC-valid (reason from GEOS) */
    WM_WORLD_ERR_CRS,           /* unknown/unsupported CRS, or a coordinate PROJ cannot transform */
    WM_WORLD_ERR_LIMIT,         /* a size, feature or coordinate bound crossed */
    WM_WORLD_ERR_NOMEM,
} wm_world_status;

typedef struct wm_world_error {
    wm_world_status status;
    uint64_t feature;           /* 1-based feature number in input order; 0 = not about one feature */
    char message[512];          /* one line, NUL-terminated, includes the feature number and peid when known */
} wm_world_error;

/* Loads a world from a file. Returns NULL and fills *err (if not NULL) on any
 * error; nothing is left allocated then. opt may be NULL (defaults). Like the
 * buffer loader's, the message does not name the file: the caller prefixes
 * it ("PATH: message"). */
wm_world *wm_world_load_file(const char *path, const wm_world_options *opt, wm_world_error *err);

/* Same from a buffer [data, data+len) (not necessarily NUL-terminated),
 * which the caller keeps; the world copies what it needs. */
wm_world *wm_world_load_buffer(const char *data, size_t len, const wm_world_options *opt, wm_world_error *err);

/* Frees the world, its geometries, trees and caches. NULL is a no-op. */
void wm_world_free(wm_world *w);

/* Number of entities. */
size_t wm_world_count(const wm_world *w);

/* The peid of entity idx (< count), NUL-terminated, owned by the world. */
const char *wm_world_peid(const wm_world *w, uint32_t idx);

/* The index of the entity with this peid (binary search, O(log n)), or -1. */
int64_t wm_world_find(const wm_world *w, const char *peid, size_t len);

/* The EPSG code of the metric CRS the geometries are in. */
int wm_world_epsg(const wm_world *w);

/* Category layers: distinct category strings in byte order, 0..n-1. */
size_t wm_world_category_count(const wm_world *w);
const char *wm_world_category(const wm_world *w, size_t cat);
/* Entities of one layer, ascending indices; *n receives the count. */
const uint32_t *wm_world_category_members(const wm_world *w, size_t cat, size_t *n);

#endif
