/* Neighborhood resolution (spaPS paper §IV and §V-B1, selectNeighborhood):
 * turns a parsed neighborhood (control/nbhd.h) into per-stage peid sets over
 * a loaded world (control/world.h), in-process, with GEOS.
 *
 *   N[0]   = the stage-1 reference peids
 *   Ref[1] = N[0];  Ref[i] = union of N[j], j in RefStages_i   (i >= 2)
 *   N[i]   = Select(Ref[i], Cats_i, Cond_i)
 *          = { e in Entities(Cats_i) - Ref[i] : exists r in Ref[i], Related(r, e, Cond_i) }
 *   result = union of N[i] over the visible stages
 *
 * Entities(Cats) is the union of the category layers whose name matches one of
 * the stage's filters (wm_topic_match, MQTT 5.0 §4.7). Related(r, e, Cond) is
 * the OGC predicate with the reference first: ST_Equals, ST_Intersects,
 * ST_Disjoint, ST_Touches, ST_Contains(r, e) (r contains e), ST_DWithin(r, e, d)
 * (distance <= d, metres in the world's CRS). Only Ref[i] is excluded from
 * N[i]: an entity of an earlier stage, or a stage-1 reference, can be selected
 * again by a later stage.
 *
 * Evaluation: candidates come from an STRtree over Entities(Cats) (the
 * layer's own tree when one layer matches, else a union tree built on first
 * use and cached in the world) queried with the reference's envelope (grown by
 * d for DW); the reference is a GEOS prepared geometry, cached in the world.
 * Touches between two LineStrings skips GEOS's relate graph
 * (control/relate_lines.h, checked against GEOS). D cannot be pruned that way, since almost
 * everything is disjoint from a reference: e is selected unless it intersects
 * every reference, so the tree finds the intersecting pairs and the layer
 * members are counted against them.
 *
 * Thread safety: calls on one world must not overlap (the world holds the
 * scratch marks and the prepared-geometry cache); different worlds are
 * independent.
 */
#ifndef WM_CONTROL_RESOLVER_H
#define WM_CONTROL_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include "control/nbhd.h"
#include "control/world.h"

/* A resolved neighborhood: entity indices of the world (control/world.h), each
 * array strictly ascending, i.e. in byte order of the peids. */
typedef struct wm_nbhd_result {
    size_t n_stages;
    uint32_t *stage[WM_NBHD_MAX_STAGES];  /* stage[i-1] = N[i] */
    size_t stage_len[WM_NBHD_MAX_STAGES];
    uint64_t visible;                     /* bit i-1 = stage i visible */
    uint32_t *result;                     /* union of the visible stages */
    size_t result_len;
} wm_nbhd_result;

/* Resolves n over w. On success fills *out (free with wm_nbhd_result_free)
 * and returns WM_NBHD_OK. Errors, with *err filled (if not NULL) and *out
 * left empty:
 *   WM_NBHD_ERR_UNKNOWN_PEID  a stage-1 peid is not in the world (pos = the peid's)
 *   WM_NBHD_ERR_UNKNOWN_CATEGORY a category filter of any stage matches none of
 *                             the world's categories (pos = the filter's)
 *   WM_NBHD_ERR_GEOMETRY      GEOS raised an exception in a predicate
 *   WM_NBHD_ERR_NOMEM         allocation failed
 * Cost: per stage, one tree query per reference and layer plus one prepared
 * predicate per candidate (D also walks the selected layers once). */
wm_nbhd_status wm_resolve(wm_world *w, const wm_nbhd *n, wm_nbhd_result *out, wm_nbhd_error *err);

/* Parses one neighborhood line (wm_nbhd_parse_one) and resolves it: the
 * on-line path for a neighborhood named at subscribe time. Errors as for
 * wm_nbhd_parse_one and wm_resolve. */
wm_nbhd_status wm_resolve_text(wm_world *w, const char *line, size_t len, wm_nbhd_result *out, wm_nbhd_error *err);

/* Frees the arrays of a result; safe on a zeroed result and twice. */
void wm_nbhd_result_free(wm_nbhd_result *r);

#endif
