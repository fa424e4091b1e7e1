/* DPDK telemetry commands under /wirematch/, readable with the stock
 * dpdk-telemetry.py (socket /var/run/dpdk/<prefix>/dpdk_telemetry.v2):
 *
 *   /wirematch/stats   every counter of dp_stats.h summed over workers, one
 *                      dict per group: {"packets": {"rx": N, ...}, "segments": ...}
 *                      (read while workers run, so sums may be a burst apart)
 *   /wirematch/flows[,N]  per worker ("worker<i>"): lcore, queue, active
 *                      connections, capacity, out-of-order blocks in use,
 *                      opened, midstream, closed, evicted; and the N (1..32,
 *                      default 10) biggest connections by stream bytes as
 *                      "flow1".."flowN" (endpoints, client id, state, packets
 *                      and bytes per direction, idle time), each worker asked
 *                      through flow_report.h (waits up to 200 ms per worker)
 *   /wirematch/subscriptions  "count" of learned subscriptions and up to 200
 *                      of them as "key filter" strings (match_sink.h), and the
 *                      tables' state: generation, reloads, reload_failures,
 *                      reload_subs_dropped, nbhds, subs_preloaded, last_error
 *   /wirematch/reload  re-reads --resolution/--subs now (match_sink.h):
 *                      {"result": "ok"|"refused", "error": REFUSAL, + the state}
 *                      REFUSAL (and last_error) is {"file": F, "line": N,
 *                      "reason": R} (line only when the reason has one,
 *                      file only when it names one; {} for no failure):
 *                      DPDK cuts each string at 127 bytes, and apart the
 *                      position survives a long path
 *
 * A command that cannot answer says why, as {"error": REASON} (never the
 * bare null DPDK prints for a failed callback): a parameter it does not
 * take or an N out of range, no match tables (subscriptions, reload:
 * wirematch started without --resolution/--subs/--schemas), wirematch
 * shutting down, out of memory.
 *
 * Thread safety: the callbacks run on DPDK's telemetry thread and only read
 * worker counters (see dp_stats.h). Register once, before workers start. */
#ifndef WM_DATAPLANE_TELEMETRY_H
#define WM_DATAPLANE_TELEMETRY_H

#include "dataplane/worker.h"

/* Registers the four commands over workers[0..n) (kept by pointer until
 * exit). Returns 0, or a negative errno from rte_telemetry_register_cmd. */
int wm_telemetry_register(struct wm_worker *workers, unsigned n);
/* Gives /wirematch/subscriptions and /wirematch/reload the match table
 * (kept by pointer until wm_telemetry_detach); without it they answer an
 * error. */
void wm_telemetry_register_subs(struct wm_match_table *t);

/* Makes the commands report nothing (DPDK cannot unregister them); call
 * before freeing the workers. */
void wm_telemetry_detach(void);

#endif
