/* The proxy's spatial tables: one resolution file (.wmr, control/resolution.h)
 * loaded at start and shared read-only by every worker (spaPS §V-B2: the
 * spatial filter of each neighborhood, resolved offline).
 *
 * What the proxy asks of it, per PUBLISH delivered for a neighborhood
 * subscription: "is this peid in that neighborhood?". Peid strings are found
 * through the matcher's peid dictionary (a hash probe, matcher/matcher.h,
 * filled by control/resolution_compile.h from the file's dictionary, so the
 * interned id of a peid IS its dictionary index); membership is a binary
 * search of that index in the neighborhood's result (strictly ascending in
 * the file). Neighborhoods are named by their index in the file, which is
 * stable for the life of the loaded file.
 *
 * Thread safety: after wm_proxy_spatial_open returns, every function but
 * _close only reads and may be called from any number of threads.
 */
#ifndef WM_DATAPLANE_PROXY_SPATIAL_H
#define WM_DATAPLANE_PROXY_SPATIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "matcher/matcher.h"

typedef struct wm_proxy_spatial wm_proxy_spatial;

/* The most subscriptions a proxy's matcher makes room for (the matcher's
 * own default, matcher/matcher.h): about 225 MB of tables, allocated whole. */
#define WM_PROXY_SPATIAL_SUBS_MAX (1u << 20)

/* Reads (a copy, control/resolution.h) and validates path and compiles its neighborhoods into a fresh
 * matcher with room for `subs` subscriptions (the --prefilter registry's,
 * dataplane/proxy_registry.h; 0 = none: a matcher for the neighborhoods
 * alone; more than WM_PROXY_SPATIAL_SUBS_MAX is that), their filters and
 * groups, and the trie nodes of filters of up to 64 levels (at most
 * WM_PROXY_SPATIAL_SUBS_MAX nodes). NULL with a one-line reason in err[0..errcap) ("PATH: reason
 * [status] at byte N" for a bad file, "out of memory", a matcher limit). */
wm_proxy_spatial *wm_proxy_spatial_open(const char *path, uint32_t subs, char *err, size_t errcap);

/* The subscriptions sp's matcher has room for (wm_proxy_spatial_open's
 * subs, capped): a reload opens the new file with the same. */
uint32_t wm_proxy_spatial_subs(const wm_proxy_spatial *sp);

/* Frees. NULL is a no-op. No worker may use it any more. */
void wm_proxy_spatial_close(wm_proxy_spatial *sp);

/* Number of neighborhoods (their indices are 0..count-1). */
uint32_t wm_proxy_spatial_nbhd_count(const wm_proxy_spatial *sp);

/* The index of the neighborhood named name[0..len) (bytes, not
 * NUL-terminated), or -1 if the file has none of that name. */
int64_t wm_proxy_spatial_nbhd(const wm_proxy_spatial *sp, const uint8_t *name, uint32_t len);

/* Name of neighborhood i (NUL-terminated, in the loaded file), NULL if out of range. */
const char *wm_proxy_spatial_nbhd_name(const wm_proxy_spatial *sp, uint32_t i);

/* The dictionary index of peid[0..len), or WM_PEID_NONE if no neighborhood
 * of the file contains it. */
uint32_t wm_proxy_spatial_peid(const wm_proxy_spatial *sp, const uint8_t *peid, uint32_t len);

/* True if neighborhood nbhd contains peid (a dictionary index); false for
 * WM_PEID_NONE or an nbhd out of range. O(log |neighborhood|). */
bool wm_proxy_spatial_contains(const wm_proxy_spatial *sp, uint32_t nbhd, uint32_t peid);

/* The matcher holding the neighborhoods (for the prefilter's subscription
 * registry, dataplane/proxy_registry.h). */
wm_matcher *wm_proxy_spatial_matcher(const wm_proxy_spatial *sp);

#endif
