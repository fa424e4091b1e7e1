/* Hot reload of the proxy's tables (SIGHUP), as the data plane's
 * dataplane/reload_ctl.h does for its own: the resolution (--resolution)
 * and the schema registry (--schemas) are loaded again together by the
 * main thread, off the workers' path (files read, schemas compiled, the
 * --prefilter registrations put into the new file's matcher). If either
 * file is bad, or the registrations do not fit, the reload is refused with
 * the reason and the tables in force stay, both of them. If good, the pair
 * is published as one set; every worker, at its next loop turn, swaps it in
 * as a whole (dataplane/proxy_filter.h, wm_proxy_filter_reload_begin/_end):
 * its connections' recorded subscriptions get their neighborhoods resolved
 * again by name and their content filters compiled again, from their text,
 * against the new registry, so live connections keep their subscriptions
 * and identifiers. A replaced set is closed once every worker has
 * acknowledged the newer one (no worker holds a pointer into it then; the
 * workers' own content tables over the old registry are freed by the
 * workers before they acknowledge).
 *
 * What a live subscription becomes when the new files no longer support it
 * (safe side: withhold, never leak): a neighborhood the resolution lacks
 * contains nothing; an `xpath` that compiles for no schema of the new
 * registry (a schema removed, or changed so that the query does not type)
 * passes nothing. Its deliveries are withheld (acknowledged to the broker
 * like any withheld one), it stays recorded by name / text, and it is tried
 * again at the next reload. Each worker counts them (summary `reload`
 * {nbhd_gone, xpath_gone}) and _settle reports the totals on stderr once
 * every worker has the new set.
 *
 * Threads: _new, _reload, _settle, _free and _stats on the main thread;
 * _poll and _ack on worker `w` (each worker its own index) at any time.
 */
#ifndef WM_DATAPLANE_PROXY_RELOAD_H
#define WM_DATAPLANE_PROXY_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/schema_registry.h"
#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_spatial.h"

typedef struct wm_proxy_tables wm_proxy_tables;

/* One published set: what a worker filters with. */
typedef struct wm_proxy_tableset {
    wm_proxy_spatial *sp;       /* --resolution */
    wm_schema_reg *schemas;     /* --schemas, NULL without */
} wm_proxy_tableset;

/* Takes over `sp` (opened from res_path) and `schemas` (loaded from
 * schemas_path; both NULL without --schemas) for `workers` workers.
 * prefilter: the --prefilter registry made over sp's matcher (re-registered
 * at each reload), NULL without --prefilter. NULL on allocation failure
 * (then sp and schemas are still the caller's). */
wm_proxy_tables *wm_proxy_tables_new(const char *res_path, wm_proxy_spatial *sp, const char *schemas_path,
                                     wm_schema_reg *schemas, unsigned workers, wm_proxy_registry *prefilter);

/* Closes every set it holds. No worker may use them any more, and the
 * --prefilter registry must be freed before (it points into the matcher). */
void wm_proxy_tables_free(wm_proxy_tables *t);

/* The set in use now (for a worker starting up). */
const wm_proxy_tableset *wm_proxy_tables_current(const wm_proxy_tables *t);

/* Main thread: loads both files again and publishes them as one set. 0 on
 * success (a one-line description in err[0..errcap): what was loaded, how
 * many --prefilter registrations the file lacks the neighborhood of); -1
 * (counted as refused, the set in force unchanged) with the reason in
 * err[0..errcap) if a file is bad ("PATH: reason", "FILE:LINE: reason"),
 * the --prefilter registrations do not fit the new file's matcher, or the
 * previous reload has not reached every worker yet. */
int wm_proxy_tables_reload(wm_proxy_tables *t, char *err, size_t errcap);

/* Main thread: closes the replaced set once every worker acknowledged the
 * newest, and then reports on stderr (one line) how many live subscriptions
 * the workers found without neighborhood / content filter in the new set.
 * Returns true if none is left waiting. */
bool wm_proxy_tables_settle(wm_proxy_tables *t);

/* Worker w: the newer set if one was published since *gen (then *gen is
 * updated), else NULL. One atomic load when nothing changed. */
const wm_proxy_tableset *wm_proxy_tables_poll(wm_proxy_tables *t, uint64_t *gen);

/* Worker w: it no longer uses any set older than gen (nor anything built
 * over one: content tables, a --prefilter reader of the old matcher);
 * nbhd_gone / xpath_gone: its live subscriptions the set of gen lacks the
 * neighborhood of / none of whose schemas compiles the content filter of. */
void wm_proxy_tables_ack(wm_proxy_tables *t, unsigned w, uint64_t gen, uint32_t nbhd_gone, uint32_t xpath_gone);

/* Reloads applied and refused since start (main thread). */
void wm_proxy_tables_stats(const wm_proxy_tables *t, uint64_t *ok, uint64_t *failed);

#endif
