/* Inside the world model: shared by control/world.c (loading, layers) and
 * control/resolver.c (evaluation). Not a public interface: everything else
 * goes through control/world.h.
 */
#ifndef WM_CONTROL_WORLD_IMPL_H
#define WM_CONTROL_WORLD_IMPL_H

#include <geos_c.h>
#include <stdbool.h>
#include <stdint.h>

#include "control/world.h"

typedef struct wm_world_envelope {
    double xmin, ymin, xmax, ymax;
} wm_world_envelope;

typedef struct wm_world_layer {
    char *name;                 /* the category, e.g. "road/major/primary" */
    uint32_t *members;          /* ascending entity indices */
    size_t n_members;
    GEOSSTRtree *tree;          /* items are entity indices cast to pointers */
} wm_world_layer;

/* The union of several category layers (a stage's Entities(Cats) when its
 * filters match more than one layer), with its own STRtree so that a
 * reference costs one tree query instead of one per layer. Built on first use
 * and cached (least recently used out) because the same filters recur. */
#define WM_WORLD_UNION_CACHE 16
typedef struct wm_world_union {
    uint64_t *key;              /* bitmap of the layers, key_words words; NULL = free slot */
    GEOSSTRtree *tree;
    uint32_t *members;          /* ascending, unique */
    size_t n_members;
    uint64_t last_use;
} wm_world_union;

/* What a stage searches: one tree and the entities in it. */
typedef struct wm_world_candidates {
    GEOSSTRtree *tree;          /* NULL when no layer matches */
    const uint32_t *members;
    size_t n_members;
} wm_world_candidates;

struct wm_world {
    GEOSContextHandle_t geos;
    char geos_msg[256];         /* last GEOS error/notice text */
    int epsg;

    size_t n;                   /* entities, in peid byte order */
    char **peid;
    size_t *peid_len;
    GEOSGeometry **geom;
    wm_world_envelope *env;
    const GEOSPreparedGeometry **prep; /* lazily prepared (references) */
    double **line_xy;           /* LineStrings only: x0,y0,x1,y1,... (else NULL), for control/relate_lines.h */
    uint32_t *line_n;           /* their vertex counts (0 for other types) */

    wm_world_layer *layers;     /* sorted by name */
    size_t n_layers;

    /* Resolver scratch, one slot per entity: generation stamps avoid clearing
     * between stages (a slot "is set" when it equals the current stamp). */
    uint32_t *mark_ref;         /* entity is in the current reference set */
    uint32_t *mark_sel;         /* entity already selected in this stage */
    uint32_t *mark_cand;        /* entity seen as candidate (per reference, for D) */
    uint32_t *count;            /* D: how many references intersect the entity */
    uint32_t stamp;
    uint8_t *layer_pick;        /* per layer: matched by the current category filters */

    wm_world_union unions[WM_WORLD_UNION_CACHE];
    size_t key_words;           /* 64-bit words of a layer bitmap */
    uint64_t *key_scratch;
    uint64_t use_clock;
};

/* The candidates of the layers marked in w->layer_pick: a layer itself when
 * only one is marked, else a cached union. Returns false on allocation or
 * GEOS failure. */
bool wm_world_candidates_for_pick(wm_world *w, wm_world_candidates *out);

/* Reserves k consecutive fresh scratch stamps and returns the first; clears
 * the stamp arrays first when the counter would wrap. */
uint32_t wm_world_stamps(wm_world *w, uint32_t k);

/* The prepared form of entity idx, created on first use; NULL if GEOS fails. */
const GEOSPreparedGeometry *wm_world_prepared(wm_world *w, uint32_t idx);

struct json_t;
/* GeoJSON geometry object -> GEOS geometry (control/world_geojson.c).
 * *coords_left is the remaining coordinate budget, decremented. Returns NULL
 * with a message in msg (and *limit set when the budget ran out). */
GEOSGeometry *wm_world_geojson_geometry(GEOSContextHandle_t ctx, struct json_t *g, uint64_t *coords_left,
                                        int *limit, char *msg, size_t cap);

/* The EPSG code named by a GeoJSON "crs" member (control/world_crs.c):
 * 0 and 4326 both mean WGS84 lon/lat. Returns -1 with a message if the
 * member is malformed or names no EPSG code. */
int wm_world_crs_member_epsg(struct json_t *crs, char *msg, size_t cap);

/* Chooses the metric CRS (target_epsg, or src if projected, or the UTM zone
 * of the centre) and reprojects geoms[0..n) in place with PROJ when it
 * differs from src_epsg. Returns the chosen EPSG code, or -1 with a message
 * (and *bad = index of the failing geometry + 1, or 0). */
int wm_world_crs_reproject(GEOSContextHandle_t ctx, GEOSGeometry **geoms, size_t n, int src_epsg, int target_epsg,
                           uint64_t *bad, char *msg, size_t cap);

#endif
