/* The data plane's match table and match log: the MQTT session layer's sink
 * (mqtt_session.h, struct wm_mqtt_sink) over the matcher (matcher/matcher.h).
 *
 *   - The resolution (--resolution R.wmr, control/resolution.h) is loaded
 *     once: its peid dictionary interned, every neighborhood defined under
 *     its name (wm_matcher_nbhd_define_ids).
 *   - Subscriptions learned from SUBSCRIBE packets (and preloaded with --subs)
 *     are keyed clientid#subscription-identifier, or clientid#filter without
 *     one; a SUBSCRIBE of a filter the client already has replaces it (MQTT
 *     5.0 §3.8.4), UNSUBSCRIBE removes it. A `nbhd` that names no
 *     neighborhood of the resolution is counted (WM_MQTT_SUB_NBHD_UNKNOWN)
 *     and the subscription is NOT installed: a subscriber asking for an
 *     unknown neighborhood must never receive everything.
 *   - Every client PUBLISH is looked up (topic index ∩ peid filter) and, with
 *     --match-log, written as one JSON line:
 *       {"seq": N, "client": "...", "topic": "...", "peids": [...], "matched": ["key", ...]}
 *     seq is the worker's PUBLISH sequence number (one log file per worker
 *     when there are several: FILE.<worker>), keys are sorted and unique.
 *
 * Concurrency: lookups are lock-free (one wm_matcher_reader per worker,
 * quiescent once per burst through wm_match_worker_quiescent). Subscription
 * changes are rare control events: they take a spinlock, with the worker's
 * reader offline meanwhile, so exactly one thread writes the matcher at a
 * time; wm_match_reclaim frees removed subscriptions after a grace period.
 * The match log is a per-worker stdio buffer of 1 MiB (one write(2) per MiB). */
#ifndef WM_DATAPLANE_MATCH_SINK_H
#define WM_DATAPLANE_MATCH_SINK_H

#include <stdint.h>
#include <stdio.h>

#include "dataplane/mqtt_session.h"

struct wm_match_table;  /* shared by every worker */
struct wm_match_worker; /* one per worker */

#define WM_MATCH_COUNTERS(X)                                                     \
    X(nbhds)               /* neighborhoods defined from the resolution */        \
    X(subs_live)                                                                  \
    X(subs_replaced)       /* SUBSCRIBE of a filter the client already had */     \
    X(subs_removed)                                                               \
    X(unsub_unknown)       /* UNSUBSCRIBE of a filter not installed */            \
    X(subs_preloaded)      /* from --subs */                                      \
    X(lookups)                                                                    \
    X(lookup_errors)                                                              \
    X(log_lines)

struct wm_match_counters {
#define WM_MATCH_X_FIELD(n) uint64_t n;
    WM_MATCH_COUNTERS(WM_MATCH_X_FIELD)
#undef WM_MATCH_X_FIELD
};

/* Creates the table; loads the resolution at res_path (NULL: no spatial
 * neighborhoods, every nbhd subscription is then unknown). On failure
 * returns NULL with a message (file, offset, reason) in err. */
struct wm_match_table *wm_match_table_new(const char *res_path, uint32_t max_subs, char *err, size_t errlen);

/* Preloads subscriptions from JSON lines, one object per line:
 *   {"client": "c", "filter": "traffic/#", "nbhd": "name", "subid": 3, "qos": 1, "no_local": false}
 * (client and filter required). Returns the number installed, or -1 with
 * "FILE:LINE: reason" in err for the first bad line (nothing after it is read). */
long wm_match_table_preload(struct wm_match_table *t, const char *path, char *err, size_t errlen);

void wm_match_table_free(struct wm_match_table *t);

/* Calls fn for up to max installed subscriptions (key, client, filter), under
 * the writer lock (for telemetry; not for the hot path). Returns how many
 * are installed in all. */
uint64_t wm_match_table_visit(struct wm_match_table *t, unsigned max,
                              void (*fn)(void *ctx, const char *key, const char *client, const char *filter),
                              void *ctx);

/* Table-wide counters (subscription side) plus lookups of every worker. */
void wm_match_table_counters(struct wm_match_table *t, struct wm_match_counters *out);

/* Creates a worker's side on the calling (worker) thread: its matcher reader
 * and result buffers, and its match log (log_path NULL: none). NULL on error. */
struct wm_match_worker *wm_match_worker_new(struct wm_match_table *t, const char *log_path, char *err, size_t errlen);
/* Flushes the log and unregisters the reader (on the worker thread). */
void wm_match_worker_free(struct wm_match_worker *w);

/* The sink to give the worker's MQTT layer (ctx = w). */
struct wm_mqtt_sink wm_match_worker_sink(struct wm_match_worker *w);

/* Once per burst, on the worker: a quiescent state, and every reclaim_ns a
 * reclamation of removed subscriptions (non-blocking for other readers). */
void wm_match_worker_quiescent(struct wm_match_worker *w, uint64_t now_ns);

#endif
