/* The peids of a spatial publish: the values of a PUBLISH's `peid` User
 * Properties (README "Spatial filtering"), read by one rule wherever they
 * decide something: the data plane's match (mqtt_session.c), the proxy's
 * delivery filter and its --prefilter (proxy_filter.c).
 *
 * Why one bound and a refusal: the matcher and the registry take the peids
 * as an array, and the per-packet paths allocate nothing, so a bound stays.
 * Before this rule each place judged a different thing past it (the proxy
 * read the first 64 known peids and withheld silently, the data plane
 * dropped the publication, the prefilter passed it). Now a PUBLISH with more
 * than WM_PEIDS_MAX peid properties reaches no subscriber in all three, and
 * each counts it under "too_many_peids". `wmctl match` applies the same
 * bound (wm_peids_fit) to a PUBS line's "peids" and refuses the line, so it
 * never answers for a publication the data plane would deliver to no one;
 * the rule lives in control/ so that both sides of the arrow reach it.
 *
 * An empty value is no peid: it names no physical entity (a world's ids and
 * a neighborhood's peids are never empty: control/world.h, control/nbhd.h),
 * so it can be in no neighborhood, and MQTT allows it (a UTF-8 string pair
 * may be empty, §1.5.7), so it is no reason to refuse the publication
 * either. It is skipped here, for all three readers: such a PUBLISH reaches
 * the subscriptions without neighborhood, as one without a peid does, and
 * does not count towards the bound. (Before 2026-12-02 the data plane
 * passed it to the matcher, which refuses an empty peid, and dropped the
 * publication as dropped_match_error, while the proxy delivered it;
 * REVIEW12 #17.)
 *
 * Thread safety: pure functions. */
#ifndef WM_CONTROL_PEID_PROPS_H
#define WM_CONTROL_PEID_PROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_props.h"

#define WM_PEIDS_MAX 64              /* peid User Properties a PUBLISH may carry */
#define WM_PEIDS_TOO_MANY UINT32_MAX /* wm_peids_collect: more than WM_PEIDS_MAX */

/* The bound itself: whether a publication may carry n peids. */
static inline bool wm_peids_fit(size_t n) { return n <= WM_PEIDS_MAX; }

/* Writes the non-empty values of pr's `peid` User Properties (key exactly
 * "peid", in the packet's order; views into the packet's bytes; empty
 * values skipped, see above) to out[0..n) and returns n (0..WM_PEIDS_MAX),
 * or WM_PEIDS_TOO_MANY if there are more than WM_PEIDS_MAX (out then holds
 * the first WM_PEIDS_MAX, not to be used). */
uint32_t wm_peids_collect(const wm_mqtt5_props *pr, wm_mqtt5_bytes out[WM_PEIDS_MAX]);

#endif
