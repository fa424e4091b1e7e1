/* Control-plane compile of a resolution file into the matcher's spatial
 * tables (spaPS §V-B2, the spatial filter mapping): every neighborhood of a
 * .wmr (control/resolution.h) becomes a matcher neighborhood of the same
 * name whose peid set is its result (the union of its visible stages), so
 * subscriptions can name it ("nbhd": NAME in `wmctl match`).
 *
 * The file's peid dictionary is interned once (wm_matcher_peid_intern) and
 * the sets are handed over as interned ids (wm_matcher_nbhd_define_ids), so
 * no peid string is looked up per set.
 *
 * Writer-side only (the matcher's single writer thread). Not atomic: on an
 * error, neighborhoods defined before it stay defined (peids stay interned),
 * and the message says which neighborhood failed; hot reload is not part of
 * this function.
 */
#ifndef WM_CONTROL_RESOLUTION_COMPILE_H
#define WM_CONTROL_RESOLUTION_COMPILE_H

#include <stddef.h>

#include "control/resolution.h"
#include "matcher/matcher.h"

/* Defines every neighborhood of r in m. Returns 0, or -1 with a one-line
 * reason in err (matcher status message and the neighborhood's name: a name
 * already defined, table full, out of memory). */
int wm_resolution_compile(wm_matcher *m, const wm_resolution *r, char *err, size_t errcap);

#endif
