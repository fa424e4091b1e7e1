/* The proxy's registry of every subscription made through it, for
 * --prefilter: "can any current subscription receive this PUBLISH?" asked
 * by every worker for every client PUBLISH, while subscriptions come and go
 * on any worker.
 *
 * It is the matcher (matcher/matcher.h) that holds the resolution's
 * neighborhoods (dataplane/proxy_spatial.h): a subscription is its topic
 * filter plus its neighborhood, a PUBLISH its topic plus its peids, and the
 * matcher's lookup is exactly the question (topic index ∩ spatial filter).
 *
 * Concurrency (the matcher's one-writer / many-readers rule and QSBR):
 * writes (add, remove, expire) are serialised by a mutex, so any worker may
 * make them; each worker is a reader with its own wm_matcher_reader, which
 * must be OFFLINE while it takes the mutex (wm_proxy_registry_add/_remove do
 * that themselves for the calling worker) and while it blocks for I/O, and
 * reports a quiescent state after each batch. Memory unlinked by removals
 * is freed by wm_proxy_registry_reclaim(), called periodically by a thread
 * that is not a reader (the main thread), which waits for a grace period.
 *
 * Conservative by construction: a subscription the matcher cannot take
 * (filter it rejects, table full) marks the registry broken, after which
 * every PUBLISH counts as receivable (nothing is dropped on a guess).
 *
 * Persistent sessions: when a connection whose session outlives it closes,
 * its subscriptions stay registered (the broker keeps them and queues for
 * the absent client) until its Session Expiry Interval has passed.
 * Subscriptions made through other entry points of the broker are invisible.
 */
#ifndef WM_DATAPLANE_PROXY_REGISTRY_H
#define WM_DATAPLANE_PROXY_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/mqtt5_props.h"
#include "matcher/matcher.h"

typedef struct wm_proxy_registry wm_proxy_registry;

/* A registry over m (which holds the neighborhoods; it must outlive the
 * registry). NULL on allocation failure. */
wm_proxy_registry *wm_proxy_registry_new(wm_matcher *m);
void wm_proxy_registry_free(wm_proxy_registry *g);

/* Worker: registers the calling thread as a reader (online). NULL on failure. */
wm_matcher_reader *wm_proxy_registry_reader(wm_proxy_registry *g);

/* Worker (rd = its reader, taken offline for the call): registers topic
 * filter f with neighborhood `nbhd` (the name's matcher id from
 * wm_matcher_nbhd_find, or WM_NBHD_NONE). Returns the subscription id, or
 * WM_SUB_NONE if the matcher refused it (then the registry is broken). */
uint32_t wm_proxy_registry_add(wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes f, uint32_t nbhd);

/* Worker: unregisters sub now (expire_ns == 0) or once CLOCK_MONOTONIC
 * passes expire_ns (UINT64_MAX = never: a session that does not expire). */
void wm_proxy_registry_remove(wm_proxy_registry *g, wm_matcher_reader *rd, uint32_t sub, uint64_t expire_ns);

/* Worker (online reader): could any registered subscription receive a
 * PUBLISH of this topic with these peids (User Property `peid` values)? */
bool wm_proxy_registry_receivable(const wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes topic,
                                  const wm_match_str *peids, uint32_t n_peids);

/* Main thread (not a reader): removes expired subscriptions and frees what
 * removals unlinked, waiting for one grace period. */
void wm_proxy_registry_reclaim(wm_proxy_registry *g, uint64_t now_ns);

/* Counts since start (any thread). */
typedef struct wm_proxy_registry_stats {
    uint64_t added, removed, refused, deferred_live;
    bool broken;
} wm_proxy_registry_stats;
void wm_proxy_registry_stats_get(wm_proxy_registry *g, wm_proxy_registry_stats *st);

#endif
