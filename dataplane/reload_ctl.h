/* The data plane's control thread: hot reload on SIGHUP and the periodic
 * housekeeping of the match tables (match_sink.h: grace periods, frees).
 *
 * Why a thread of its own: a reload compiles files (milliseconds to
 * seconds) and waits for a QSBR grace period, which a worker lcore must
 * never do (it would stall its queue, and a reader waiting for its own
 * grace period deadlocks). This thread is a DPDK control thread
 * (rte_ctrl_thread_create), never a reader; it sleeps between 50 ms polls.
 *
 * SIGHUP only sets a flag (async-signal-safe); the thread then reloads and
 * reports on stderr:
 *   wirematch: reload: generation N (nbhds X, preloaded subs Y, learned subs Z, dropped D)
 *   wirematch: reload refused, the running tables stay: REASON
 *
 * Thread safety: start/stop from the main thread; wm_reload_ctl_request
 * from anywhere, signal handlers included. */
#ifndef WM_DATAPLANE_RELOAD_CTL_H
#define WM_DATAPLANE_RELOAD_CTL_H

#include "dataplane/match_sink.h"

/* Starts the thread over t. Returns 0 or a negative errno. */
int wm_reload_ctl_start(struct wm_match_table *t);
/* Asks for a reload (async-signal-safe). */
void wm_reload_ctl_request(void);
/* Stops and joins the thread (a reload in progress finishes first). */
void wm_reload_ctl_stop(void);

#endif
