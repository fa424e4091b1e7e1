/* OGC Touches for two LineStrings without building a DE-9IM graph.
 *
 * GEOS evaluates Touches through a full relate (topology graph, allocations)
 * even for prepared geometries, and road adjacency is almost entirely
 * LineString-LineString Touches. For two LineStrings A and B (OGC Simple
 * Features 06-103r4 §6.1.6.2: a curve's boundary is its two end points
 * unless it is closed, then empty; §6.1.15.3 Touches: the interiors do not
 * intersect and the geometries do):
 *
 *   Touches(A, B)  <=>  A ∩ B ≠ ∅  and  every point of A ∩ B is in ∂A ∪ ∂B
 *
 * A ∩ B is decided segment pair by segment pair with exact orientation tests
 * (a floating-point filter, GEOS's robust orientation index when the filter
 * cannot decide): a collinear overlap of positive length puts interior
 * points of both in the intersection; a proper crossing does too, unless a
 * non-simple line passes through one of the end points exactly there;
 * otherwise the intersection is a vertex, compared exactly with the end
 * points.
 * tests/unit/test_relate_lines.c checks it against GEOSTouches_r on every
 * road pair of Monaco whose envelopes meet and on random degenerate lines.
 * Thread safe (pure; the GEOS context is only used for its orientation index).
 */
#ifndef WM_CONTROL_RELATE_LINES_H
#define WM_CONTROL_RELATE_LINES_H

#include <geos_c.h>
#include <stddef.h>

/* A and B as vertex arrays (x0, y0, x1, y1, ...), na and nb vertices, each
 * >= 2 (repeated consecutive vertices allowed). Returns 1 if they touch,
 * else 0. */
int wm_relate_lines_touch(GEOSContextHandle_t ctx, const double *a, size_t na, const double *b, size_t nb);

#endif
