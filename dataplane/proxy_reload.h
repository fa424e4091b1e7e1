/* Hot reload of the proxy's resolution (SIGHUP), as the data plane's
 * dataplane/reload_ctl.h does for its tables: the main thread loads the
 * file again; if it is bad, it is refused with its reason and the live
 * tables stay; if good, it is published and every worker, at its next loop
 * turn, swaps it in and resolves the neighborhoods of its connections'
 * recorded subscriptions again by name (wm_proxy_filter_retable), so live
 * connections keep their subscriptions. The old tables are closed once
 * every worker has moved on. The persistent-session table keeps names, so
 * sessions resumed later are resolved in the new file too.
 *
 * Not with --prefilter: the prefilter's registry holds its subscriptions in
 * the first file's matcher, so a reload is refused with that reason.
 *
 * Threads: _new, _reload, _settle, _free and _stats on the main thread;
 * _poll and _ack on worker `w` (each worker its own index) at any time.
 */
#ifndef WM_DATAPLANE_PROXY_RELOAD_H
#define WM_DATAPLANE_PROXY_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/proxy_spatial.h"

typedef struct wm_proxy_tables wm_proxy_tables;

/* Opens path as the proxy's spatial tables: wm_proxy_spatial_open plus the
 * proxy's own bound (every neighborhood needs a Subscription Identifier of
 * its own, dataplane/proxy_filter.h). NULL with a one-line reason in
 * err[0..errcap). */
wm_proxy_spatial *wm_proxy_tables_open(const char *path, char *err, size_t errcap);

/* Takes over `initial` (opened from path) for `workers` workers; locked:
 * every reload is refused (--prefilter). NULL on allocation failure (then
 * initial is still the caller's). */
wm_proxy_tables *wm_proxy_tables_new(const char *path, wm_proxy_spatial *initial, unsigned workers, bool locked);

/* Closes every tables it holds. No worker may use them any more. */
void wm_proxy_tables_free(wm_proxy_tables *t);

/* The tables in use now (for a worker starting up). */
const wm_proxy_spatial *wm_proxy_tables_current(const wm_proxy_tables *t);

/* Main thread: loads the file again and publishes it. 0 on success; -1
 * (counted as failed, the live tables unchanged) with the reason in
 * err[0..errcap) if the file is bad, the reload is locked, or the previous
 * one has not reached every worker yet. */
int wm_proxy_tables_reload(wm_proxy_tables *t, char *err, size_t errcap);

/* Main thread: closes the replaced tables once every worker acknowledged
 * the newest. Returns true if none is left waiting. */
bool wm_proxy_tables_settle(wm_proxy_tables *t);

/* Worker w: the newer tables if some were published since *gen (then *gen
 * is updated), else NULL. One atomic load when nothing changed. */
const wm_proxy_spatial *wm_proxy_tables_poll(wm_proxy_tables *t, uint64_t *gen);

/* Worker w: it no longer uses any tables older than gen. */
void wm_proxy_tables_ack(wm_proxy_tables *t, unsigned w, uint64_t gen);

/* Reloads applied and refused since start (main thread). */
void wm_proxy_tables_stats(const wm_proxy_tables *t, uint64_t *ok, uint64_t *failed);

#endif
