/* DPDK telemetry commands under /wirematch/, readable with the stock
 * dpdk-telemetry.py (socket /var/run/dpdk/<prefix>/dpdk_telemetry.v2):
 *
 *   /wirematch/stats   every counter of dp_stats.h summed over workers, one
 *                      dict per group: {"packets": {"rx": N, ...}, "segments": ...}
 *                      (read while workers run, so sums may be a burst apart)
 *   /wirematch/flows   per worker: lcore, queue, active connections, capacity,
 *                      out-of-order blocks in use, opened, midstream, closed
 *   /wirematch/subscriptions  "count" of installed subscriptions and up to 200
 *                      of them as "key filter" strings (match_sink.h)
 *
 * Thread safety: the callbacks run on DPDK's telemetry thread and only read
 * worker counters (see dp_stats.h). Register once, before workers start. */
#ifndef WM_DATAPLANE_TELEMETRY_H
#define WM_DATAPLANE_TELEMETRY_H

#include "dataplane/worker.h"

/* Registers the commands over workers[0..n) (kept by pointer until exit).
 * Returns 0, or a negative errno from rte_telemetry_register_cmd. */
int wm_telemetry_register(struct wm_worker *workers, unsigned n);
/* Adds /wirematch/subscriptions over the match table (kept by pointer). */
int wm_telemetry_register_subs(struct wm_match_table *t);

/* Makes the commands report nothing (DPDK cannot unregister them); call
 * before freeing the workers. */
void wm_telemetry_detach(void);

#endif
