/* A small hand-drawn world whose relations can be read off the drawing
 * (projected CRS EPSG:32632, metres), shared by the resolver and resolution
 * file tests:
 *
 *   sq1  [0,10]x[0,10]      zone        sq2 [10,20]x[0,10]  zone (shares sq1's east edge)
 *   sq3  [5,15]x[5,15]      zone        dup = sq1 drawn from another start vertex, zone
 *   far  [100,110]^2        zone
 *   p_in (2,2)   shop/a + shop/x        p_edge (10,5) shop/b (on sq1's and sq2's boundary)
 *   l1   (0,-5)-(0,0)  road             l2 (30,0)-(40,0) road/minor/y
 */
#ifndef WM_TESTS_LIB_WORLD_FIXTURE_H
#define WM_TESTS_LIB_WORLD_FIXTURE_H

#include "control/world.h"

extern const char wm_test_small_world_geojson[];

/* Loads it; NULL with *err filled on failure. Free with wm_world_free. */
wm_world *wm_test_small_world(wm_world_error *err);

#endif
