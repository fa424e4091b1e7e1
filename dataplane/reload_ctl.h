/* The data plane's control thread: hot reload on SIGHUP, the compiles of
 * the content filters that SUBSCRIBEs bring (match_sink.h, "When a new
 * content filter applies": wm_match_table_compile) and the periodic
 * housekeeping of the match tables (grace periods, frees).
 *
 * Why a thread of its own: a reload compiles files (milliseconds to
 * seconds) and a content compile builds Hyperscan databases (1.7 ms for 10
 * filters to 110 ms for 10,000), and a reload waits for a QSBR grace
 * period: a worker lcore must never do either (it would stall its queue,
 * and a reader waiting for its own grace period deadlocks). This thread is
 * a DPDK control thread (rte_ctrl_thread_create), never a reader. It sleeps
 * until a worker changes the content filters (wm_match_table_wait_work) or
 * 50 ms pass; after a compile it looks again at once, so the filters that
 * came during one compile share the next. Housekeeping runs every 50 ms.
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
