/* The data plane's match tables and match log: the MQTT session layer's
 * sink (mqtt_session.h, struct wm_mqtt_sink) over the control plane's
 * hot-swappable tables (control/tables.h, control/reload.h).
 *
 *   - The resolution (--resolution R.wmr) and the preloaded subscriptions
 *     (--subs S.jsonl, the SUBS format of control/match_input.h) are
 *     compiled by wm_tables_compile, all or nothing, into a table set that
 *     wm_reload publishes with one pointer store (QSBR: workers attach to
 *     a set between bursts and never wait).
 *   - Hot reload (wm_match_table_reload: SIGHUP, telemetry /wirematch/reload)
 *     re-reads both files. A bad file is reported with its reason and
 *     position (control/load_error.h: file, line or byte offset, reason;
 *     "R.wmr: REASON [status] at byte N", "S.jsonl:LINE: REASON" as text),
 *     counted (reload_failures), and the running tables stay live.
 *   - Subscriptions learned from SUBSCRIBE packets live in the current
 *     set's matcher too (control/tables.h, "Extension by the holder"), so
 *     one lookup answers for both. They are keyed
 *     clientid#subscription-identifier, or clientid#filter without one; a
 *     SUBSCRIBE of a filter the client already has replaces it (MQTT 5.0
 *     §3.8.4), UNSUBSCRIBE removes it (at its UNSUBACK, mqtt_session.h). A `nbhd` naming no neighborhood of
 *     the current resolution is counted (WM_MQTT_SUB_NBHD_UNKNOWN) and NOT
 *     installed: a subscriber asking for an unknown neighborhood must never
 *     receive everything. Nor does such a refused SUBSCRIBE (or one whose
 *     `xpath` is refused) replace the subscription the client already has
 *     of that filter: it stays with its neighborhood and content filter, as
 *     the proxy keeps it when it answers the refusal (proxy_filter.c), and
 *     is counted (subs_refused_kept).
 *   - A reload carries every learned subscription into the new set BEFORE
 *     it is published, re-resolving its neighborhood BY NAME in the new
 *     resolution: a PUBLISH is matched against one set, old or new, never
 *     a mix. A learned subscription whose neighborhood the new resolution
 *     no longer defines is removed and counted (reload_subs_dropped), never
 *     installed without its neighborhood. If learned subscriptions do not
 *     fit the new set (a matcher bound), the reload fails as a whole.
 *   - Sessions (the sink's `session` member, mqtt_session.h): learned
 *     subscriptions belong to their client's session. A new session
 *     (Session Present 0) removes the client id's earlier ones; the end of
 *     the connection holding the session removes them (Session Expiry 0) or
 *     detaches the session until its expiry, measured in the packet time
 *     the workers pass to wm_match_worker_quiescent (one atomic load per
 *     burst; the sweep, under the writer lock, runs only when the earliest
 *     deadline has passed); a resumed session cancels it. The end of a
 *     connection the session was taken from (a newer CONNECT of the client
 *     id, on any worker) ends nothing. Removed subscriptions keep their ids
 *     in the matcher for a grace period: a SUBSCRIBE that finds the bound
 *     (max_subs) taken by live and such removed ones waits for it (in the
 *     matcher, matcher.h "Bounds"; counted in subs_full_waits); it is
 *     refused (subs_full) only when max_subs are live.
 *   - Bounds: max_subs subscriptions and max_trie_nodes wildcard-trie
 *     nodes (one wildcard filter of L distinct levels takes L of them, up
 *     to 64; the default holds max_subs filters of 8 such levels). Learned
 *     subscriptions draw on the same tables as the preloaded ones, so each
 *     client's learned subscriptions may add at most client_trie_nodes
 *     trie nodes (charged what wm_matcher_trie_cost says at the install,
 *     given back at the removal): one client subscribing deep distinct
 *     filters cannot fill the trie for every later subscriber. Beyond its
 *     share a SUBSCRIBE is refused (WM_MQTT_SUB_QUOTA, subs_quota: what a
 *     broker enforcing the share would answer with SUBACK reason code 0x97
 *     Quota exceeded, MQTT 5.0 §3.9.3; the data plane only watches, so it
 *     counts it and does not install it); with the trie itself full,
 *     subs_trie_full. A load or reload refused by a bound names the option
 *     that sets it ("wildcard trie full (max_trie_nodes) [full_nodes]:
 *     raise --max-trie-nodes (now N)").
 *   - Preloaded subscriptions belong to the file: traffic neither replaces
 *     nor removes them (an UNSUBSCRIBE of one counts as unsub_unknown);
 *     they are reported by their file "id" (an integer id as its decimal
 *     string).
 *   - Shared subscriptions (MQTT 5.0 §4.8.2): a matched "$share/{name}/..."
 *     group delivers to ONE member, and the log reports the member the
 *     broker would deliver to under the configured policy
 *     (matcher/share_pick.h), among the group's members that match this
 *     PUBLISH (a member whose neighborhood excludes it is not a candidate):
 *       WM_SHARE_ROUND_ROBIN (default) — per worker and group, members in
 *         matcher order taken in turn; what brokers commonly do by default;
 *       WM_SHARE_HASH — rendezvous hash of (publisher client id, member key):
 *         a publisher sticks to one member while the member set is
 *         unchanged, across reloads too (members are identified by their
 *         keys, not by matcher ids).
 *     Which member a real broker picks is its own choice (the spec leaves
 *     it open), so this is a model, not a measurement.
 *   - Content filters (control/content_filters.h): a SUBSCRIBE's `xpath`
 *     user property (a --subs line's "xpath") is the subscription's content
 *     filter, kept in the matcher's content slot. All live filters are
 *     compiled, per schema, into one automaton (Hyperscan included), never
 *     per packet and never on a worker: see "When a new content filter
 *     applies" below. A filter that compiles for no schema of the registry
 *     (--schemas) is counted (subs_xpath_refused, last_xpath_error) and its
 *     subscription is NOT installed, or removed as soon as its compile finds
 *     it invalid. After topic and spatial matching, if some candidate has a
 *     content filter, the payload is decoded ONCE (whole stream validated)
 *     with the schema the PUBLISH's Content Type names (and the out-of-band
 *     EXI options of its registry line and Content Type parameters,
 *     control/schema_registry.h wm_schema_reg_bind), deciding every such
 *     candidate; the others are untouched. A PUBLISH without a Content Type,
 *     with another media type or an unknown schema, or whose payload does
 *     not decode reaches none of its content-filtered candidates; each case
 *     is counted (WM_MATCH_CONTENT_COUNTERS). A reload re-validates learned
 *     filters against the new registry (a filter that no longer compiles
 *     drops its subscription, counted in reload_subs_dropped).
 *   - When a new content filter applies. A SUBSCRIBE whose `xpath` text is
 *     already compiled (another subscription uses it) applies like any
 *     other: to every PUBLISH the worker handles after it, and on the other
 *     workers from their next burst. A NEW text costs a compile of the whole
 *     set (1.7 ms for 10 filters, 110 ms for 10,000 here), which must not
 *     stop a worker polling its queue: the worker only installs the
 *     subscription with its filter PENDING (wm_content_want, no compile)
 *     and wakes the compile thread (wm_match_table_compile: the data
 *     plane's control thread, reload_ctl.h). The compile thread validates
 *     and compiles every pending text of the set at once (a burst of N new
 *     filters costs one or two compiles, not N), publishes the new snapshot
 *     through the same QSBR path as a reload, and then marks the
 *     subscriptions ready. The filter applies to every PUBLISH a worker
 *     matches after that. Until then a worker either
 *       async (default for live ports): does not deliver to the pending
 *         subscription (never "everything"; counted per candidate in
 *         content_pending, and "content_pending": N in the match log), and
 *         goes on with the next packet; or
 *       wait (wm_match_worker_set_content_wait; a one-shot capture replay,
 *         where waiting loses no packet and the result must not depend on
 *         timing): a PUBLISH that has a pending candidate waits for the
 *         compile (counted in content_waits) and is then matched against
 *         it, so the result is that of compiling at the SUBSCRIBE.
 *     "Pending" is per table set: a candidate is pending for a worker while
 *     the content snapshot of the set it reads lacks the filter. A reload
 *     compiles every learned filter into the new set; a worker still
 *     reading the old set (async: until its burst ends) finds the ones that
 *     were pending there still pending, since the old set never compiled
 *     them, while a worker in wait mode follows the current set at every
 *     PUBLISH, so it waits for the reload (or finds it done) and matches
 *     against the new set.
 *     A refused filter (it compiles for no schema) is known only after its
 *     compile: the subscription, installed meanwhile (pending, so it never
 *     received anything), is then removed; a PUBLISH whose lookup returned
 *     it just before still finds it pending, never a decided candidate.
 *     A re-SUBSCRIBE (same client, same filter; §3.8.4 replaces the
 *     subscription) whose `xpath` text is pending does not replace the
 *     subscription in force at once: a refused one must leave it as it was.
 *     It waits behind it (counted in subs_replace_pending), installed in the
 *     matcher as a pending candidate: async workers skip it while the old
 *     one goes on deciding; waiting workers wait for its compile whenever
 *     the old one is a candidate (whichever survives decides: the result of
 *     compiling at the SUBSCRIBE). The compile that accepts it removes the
 *     old one (subs_replaced); one that refuses it removes only it
 *     (subs_refused_kept). A reload keeps the newest valid one of the key.
 *     An UNSUBSCRIBE applies at its UNSUBACK; the next compile leaves the
 *     unreferenced filter out. A reload validates every learned filter
 *     itself, pending ones included.
 *   - Deliveries: after the content stage, a matched learned subscription
 *     the broker would not send the message to is taken off the result
 *     (before a shared group picks its member), counted
 *     (WM_MATCH_DELIVERY_COUNTERS) and named in the log line: a message
 *     larger, as forwarded to it, than its client's CONNECT Maximum Packet
 *     Size (MQTT 5.0 §3.1.2.11.4; "too_large_for": [keys]), or one of
 *     delivered QoS 0 while its session is detached (brokers queue no
 *     QoS 0 for an absent client; "qos0_not_queued_for": [keys]). Both
 *     states follow the session events; a table-wide count of such
 *     subscriptions lets a PUBLISH skip the check when there is none.
 *   - Every client PUBLISH is looked up (topic index ∩ peid filter, then
 *     the content stage) and, with --match-log, written as one JSON line:
 *       {"seq": N, "client": "...", "topic": "...", "peids": [...], "matched": ["key", ...]}
 *     (a Will Message the broker publishes, mqtt_session.h "Wills", is
 *     matched the same way and its line has "will": true after "seq"; a
 *     retained message the broker sends a new subscriber, "Retained
 *     messages" there, has "retained": true, its subscriber as "client",
 *     and only that subscriber's own subscriptions, no gate),
 *     plus, when a candidate had a content filter, "content": OUTCOME
 *     (wm_content_outcome_name) and, for a bad payload, "content_error":
 *     "REASON at bit N" (for a bad Content Type parameter: "position P: REASON").
 *     seq is the worker's PUBLISH sequence number (one log file per worker
 *     when there are several: FILE.<worker>), keys are sorted and unique.
 *
 * Concurrency: lookups are lock-free (one wm_reload_reader per worker,
 * attach + quiescent once per burst through wm_match_worker_quiescent).
 * Subscription changes are rare control events: they take a spinlock, with
 * the worker's reader paused meanwhile, so exactly one thread writes the
 * current matcher at a time; then the worker attaches to the current set at
 * once (a reload just before may have taken the change into a newer set
 * than the one it reads), so its next PUBLISH sees its own change. Reloads,
 * content compiles and housekeeping (grace periods, frees) run on a control
 * thread that is NOT a reader (the telemetry thread, or the main program's
 * control thread); they are serialised with each other by a mutex, and a
 * compile holds the writer spinlock only to take its job and to publish
 * it, never while it compiles. The match log is a per-worker stdio buffer
 * of 1 MiB (one write(2) per MiB) over match_log.h, which counts the lines
 * a failed write lost (log_lines_failed, wm_match_table_log_error). */
#ifndef WM_DATAPLANE_MATCH_SINK_H
#define WM_DATAPLANE_MATCH_SINK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "control/load_error.h"
#include "dataplane/mqtt_session.h"

struct wm_match_table;  /* shared by every worker */

enum wm_share_policy { WM_SHARE_ROUND_ROBIN = 0, WM_SHARE_HASH };
struct wm_match_worker; /* one per worker */

#define WM_MATCH_COUNTERS(X)                                                     \
    X(nbhds)               /* neighborhoods of the current resolution */          \
    X(subs_preloaded)      /* subscriptions of the current --subs file */         \
    X(subs_live)           /* learned subscriptions installed */                  \
    X(subs_replaced)       /* SUBSCRIBE of a filter the client already had */     \
    X(subs_refused_kept)   /* refused (nbhd unknown, xpath refused) for a filter the client already had: kept */ \
    X(subs_replace_pending) /* re-SUBSCRIBEs whose new `xpath` awaits its compile while the subscription \
                               they replace goes on deciding (gauge) */ \
    X(subs_removed)                                                               \
    X(unsub_unknown)       /* UNSUBSCRIBE of a filter not learned */              \
    X(subs_full)           /* learned subscriptions refused: max_subs (--max-subs) reached */ \
    X(subs_trie_full)      /* ... refused: the wildcard trie (--max-trie-nodes) is full */ \
    X(subs_quota)          /* ... refused: its client's share of the trie (--client-trie-nodes) is used */ \
    X(trie_nodes)          /* wildcard-trie nodes live in the current set (gauge) */ \
    X(trie_nodes_max)      /* the bound of them (--max-trie-nodes) */ \
    X(client_trie_nodes)   /* one client's share of them for learned subscriptions (--client-trie-nodes) */ \
    X(subs_full_waits)     /* a SUBSCRIBE found the bound full and waited a grace period for removed ones */ \
    X(subs_session_ended)  /* learned subs removed because their session ended */ \
    X(sessions_ended)      /* sessions ended with their connection (expiry 0) */  \
    X(sessions_expired)    /* detached sessions whose Session Expiry Interval ran out */ \
    X(sessions_discarded)  /* sessions with subscriptions replaced by a new one (Session Present 0) */ \
    X(sessions_detached)   /* sessions awaiting their expiry (gauge) */           \
    X(generation)          /* table sets published (1 after the start) */       \
    X(reloads)             /* successful reloads after the start */               \
    X(reload_failures)     /* reloads refused: bad file, bounds; old set kept */  \
    X(reload_subs_dropped) /* learned subs removed: their nbhd left the resolution */ \
    X(subs_xpath)          /* learned subscriptions installed with an `xpath` */ \
    X(subs_xpath_refused)  /* `xpath` refused: not installed (last_xpath_error) */ \
    X(xpath_filters)       /* distinct content filters live in the current set */ \
    X(xpath_slots)         /* content slots used (live, waiting, free): bounded by reuse */ \
    X(xpath_slot_waits)    /* a new filter waited one grace period for a free slot */ \
    X(xpath_pending)       /* learned subscriptions whose filter awaits its compile (gauge) */ \
    X(xpath_compiles)      /* content compiles published by the compile thread */ \
    X(xpath_compile_failures) /* ... that did not compile together (their new filters refused) */ \
    X(xpath_compile_us_last) /* wall time of the last compile, microseconds */ \
    X(xpath_compile_us_max)  /* ... of the longest one */                        \
    X(xpath_set_builds)    /* set builds those compiles tried (more than one: texts that did not fit) */ \
    X(xpath_room_cached)   /* new filters refused at once: proved not to fit, nothing gone since */ \
    X(lookups)                                                                    \
    X(lookup_errors)                                                              \
    X(peid_cache_hits)     /* peid ids found in the workers' caches (peid_cache.h) */ \
    X(peid_cache_misses)   /* ... asked of the matcher */                         \
    X(log_lines)           /* match-log lines stored in the file (counted when a worker side is freed) */ \
    X(log_lines_failed)    /* ... produced but not stored: a write failed (log_error says why) */ \
    WM_MATCH_CONTENT_COUNTERS(X)                                                  \
    WM_MATCH_DELIVERY_COUNTERS(X)

/* The delivery gate, per worker (summed when a worker side is freed):
 * matched subscriptions the broker does not send the message
 * ("Deliveries"); not outcomes: a PUBLISH all of whose subscriptions are
 * gated is no_match. */
#define WM_MATCH_DELIVERY_COUNTERS(X)                                             \
    X(deliveries_too_large)         /* over the subscriber's CONNECT Maximum Packet Size */ \
    X(deliveries_qos0_offline)      /* QoS 0 to a detached session: not queued */

/* The content stage, per worker (summed when a worker side is freed):
 * content_pubs = PUBLISHes with at least one content-filtered candidate
 * after topic and spatial matching = the sum of the outcome counters
 * content_decoded .. content_value_too_large (control/content_filters.h). */
#define WM_MATCH_CONTENT_COUNTERS(X)                                              \
    X(content_pubs)                                                               \
    X(content_decoded)              /* decoded; candidates passed or not */       \
    X(content_no_content_type)      /* no Content Type: no candidate reached */   \
    X(content_not_exi)              /* not "application/exi; schema=NAME" */      \
    X(content_bad_content_type)     /* application/exi, bad/unknown parameter */  \
    X(content_unknown_schema)       /* NAME not in --schemas */                   \
    X(content_no_filter_for_schema) /* no candidate's filter compiles for it */   \
    X(content_decode_error)         /* payload not valid EXI for the schema */    \
    X(content_value_too_large)                                                    \
    X(content_header_conflicts)     /* decoded with an options header its Content Type's options contradict */ \
    X(content_candidates)           /* content-filtered candidates decided */     \
    X(content_passed)               /* ... that passed */                         \
    X(content_pending)              /* candidates not reached: filter not compiled yet (async) */ \
    X(content_waits)                /* PUBLISHes that waited for a compile (wait mode) */

struct wm_match_counters {
#define WM_MATCH_X_FIELD(n) uint64_t n;
    WM_MATCH_COUNTERS(WM_MATCH_X_FIELD)
#undef WM_MATCH_X_FIELD
};

/* Creates the table and compiles res_path (NULL: no neighborhoods, every
 * nbhd subscription is then unknown), subs_path (NULL: none) and
 * schemas_path (the schema registry, control/schema_registry.h; NULL: none,
 * every `xpath` is then refused) into the first set; the paths are copied
 * and re-read by every reload. max_subs
 * bounds the subscriptions (preloaded + learned). On failure returns NULL
 * with *err filled (NULL: not reported): the file at fault and its line or
 * byte offset, the reason (control/load_error.h). Call from the control
 * thread, before workers start. */
struct wm_match_table *wm_match_table_new(const char *res_path, const char *subs_path, const char *schemas_path,
                                          uint32_t max_subs, wm_load_error *err);

/* The default share of one client: 1/16 of max_trie_nodes, at least 256
 * nodes (4 filters of 64 distinct levels). */
#define WM_MATCH_CLIENT_TRIE_SHARE 16u
#define WM_MATCH_CLIENT_TRIE_MIN 256u

/* The bounds of a match table (0 = the default). */
struct wm_match_bounds {
    uint32_t max_subs;          /* subscriptions, preloaded + learned (required, >= 1) */
    uint32_t max_trie_nodes;    /* wildcard-trie nodes of the matcher, preloaded + learned;
                                   default WM_MATCHER_TRIE_NODES_PER_FILTER * max_subs (matcher.h) */
    uint32_t client_trie_nodes; /* trie nodes one client's learned subscriptions may add; default
                                   max_trie_nodes / WM_MATCH_CLIENT_TRIE_SHARE, at least WM_MATCH_CLIENT_TRIE_MIN */
};

/* Fills the zero fields of *b with their defaults (above). Pure, any thread. */
void wm_match_bounds_resolve(struct wm_match_bounds *b);

/* wm_match_table_new with every bound given (see "Bounds" above); the
 * table's counters trie_nodes_max and client_trie_nodes report the
 * resolved ones. Same errors and thread rules as wm_match_table_new. */
struct wm_match_table *wm_match_table_new_bounded(const char *res_path, const char *subs_path, const char *schemas_path,
                                                  const struct wm_match_bounds *bounds, wm_load_error *err);

/* Re-reads both files and, only if everything compiled and every learned
 * subscription that keeps its neighborhood fits, swaps the new set in.
 * Returns 0, or -1 with *err filled as wm_match_table_new (err may be NULL;
 * a failure of the learned subscriptions names no file) and also kept for
 * wm_match_table_last_error. Blocks for a grace period (workers must keep
 * passing quiescent states); call from a thread that is not a reader.
 * Thread safe against other reloads, housekeeping, telemetry. */
int wm_match_table_reload(struct wm_match_table *t, wm_load_error *err);

/* The shared-subscription policy (default round robin). Before workers start. */
void wm_match_table_set_share_policy(struct wm_match_table *t, enum wm_share_policy p);

/* Bounds the content-filter slots of every table set (live filters plus
 * those waiting for their grace period; control/content_filters.h,
 * wm_content_reuse_slots); default 2 * max_subs, at most
 * WM_CONTENT_MAX_SLOTS. A new filter that finds every slot taken waits for
 * one grace period on the worker that saw it (counted: xpath_slot_waits).
 * Before workers start. */
void wm_match_table_set_xpath_slots(struct wm_match_table *t, uint32_t n);

/* The memory cap of decoding one PUBLISH's EXI payload for its content
 * filters (wm_exi_limits.mem_cap, bytes; 0 = the codec's default, 4 MiB;
 * control/exi_mem_cap.h gives the operator's range): a payload that needs
 * more is a decode error for its filters (counted like any other), never
 * more memory. Before workers start. */
void wm_match_table_set_exi_mem_cap(struct wm_match_table *t, size_t bytes);

/* Frees what removals and reloads retired once their grace period has
 * passed (blocks for one when something waits). From a non-reader thread,
 * periodically (e.g. every 100 ms). */
void wm_match_table_housekeeping(struct wm_match_table *t);

/* The compile thread's step ("When a new content filter applies"): if the
 * content filters changed since the last compile, validates the pending
 * texts and compiles every live one (the current set's wm_content job),
 * holding the writer spinlock only to take the job and to publish it, then
 * makes the pending subscriptions ready or removes the refused ones, and
 * wakes the workers waiting for it. Returns 1 (a compile ran: call again,
 * more may have come meanwhile), 0 (nothing changed) or -1 (out of memory,
 * or the set did not compile together: its new filters are refused, with
 * the reason in last_xpath_error, and the published snapshot stays).
 * Blocks reloads and housekeeping while it compiles. From a thread that is
 * not a reader; thread safe against the workers and the other table calls. */
int wm_match_table_compile(struct wm_match_table *t);

/* The compile thread's sleep: returns when a SUBSCRIBE or UNSUBSCRIBE
 * changed the content filters since the last return, or after timeout_ms
 * milliseconds. Any thread (one waiter at a time). */
void wm_match_table_wait_work(struct wm_match_table *t, unsigned timeout_ms);

/* Instrumentation (tests, benchmarks): fn(ctx, false) is called on the
 * compile thread right before a compile's heavy part, fn(ctx, true) right
 * after, with no lock held; fn may block (the workers go on). fn NULL: none.
 * Before the compile thread starts. */
void wm_match_table_set_compile_hook(struct wm_match_table *t, void (*fn)(void *ctx, bool done), void *ctx);

/* The last reload failure (kept after a later good reload), copied into
 * *out; a cleared error (wm_load_error_failed false) if none. Any thread;
 * waits for a reload in progress. */
void wm_match_table_last_error(struct wm_match_table *t, wm_load_error *out);
/* Why the last `xpath` was refused ("CLIENT: schema NAME: position P:
 * reason", "" if none), copied into buf. Any thread. */
void wm_match_table_last_xpath_error(struct wm_match_table *t, char *buf, size_t len);

/* Room for wm_match_table_log_error's text: the log's path and the errno text. */
#define WM_MATCH_LOG_ERROR_MAX (4096 + 128)
/* Why match-log lines were lost: "PATH: strerror text" of the first failed
 * write or close among the worker sides freed so far (match_log.h), "" if
 * none; copied into buf[0..len). Any thread. */
void wm_match_table_log_error(struct wm_match_table *t, char *buf, size_t len);

/* After every worker side is freed. */
void wm_match_table_free(struct wm_match_table *t);

/* Calls fn for up to max learned subscriptions (key, client, filter), under
 * the writer lock (for telemetry; not for the hot path). Returns how many
 * are installed in all. */
uint64_t wm_match_table_visit(struct wm_match_table *t, unsigned max,
                              void (*fn)(void *ctx, const char *key, const char *client, const char *filter),
                              void *ctx);

/* Table-wide counters (subscription side, reloads) plus the lookups of
 * every worker side freed so far. */
void wm_match_table_counters(struct wm_match_table *t, struct wm_match_counters *out);

/* Creates a worker's side on the calling (worker) thread: its table reader
 * and result buffers, and its match log (log_path NULL: none). NULL on error. */
struct wm_match_worker *wm_match_worker_new(struct wm_match_table *t, const char *log_path, char *err, size_t errlen);
/* Flushes the log and unregisters the reader (on the worker thread). */
void wm_match_worker_free(struct wm_match_worker *w);

/* Wait mode for this worker ("When a new content filter applies"): a
 * PUBLISH with a candidate whose filter is pending waits for its compile
 * (the reader paused meanwhile) instead of skipping that candidate. The
 * worker then follows the current table set at every PUBLISH (two atomic
 * loads when neither set nor snapshot changed), not only at its burst ends.
 * Something must run wm_match_table_compile, or the worker waits forever.
 * Default off. On the worker's thread, or before it runs. */
void wm_match_worker_set_content_wait(struct wm_match_worker *w, bool wait);

#ifdef WM_TEST_HOOKS
/* Test builds only (WM_TEST_HOOKS, which the Makefile defines for the test
 * binaries and their own copy of this file's object, never for the
 * programs): a pause point would otherwise cost every PUBLISH a branch.
 * fn(ctx) is called on the worker's thread after each topic/spatial lookup
 * of a PUBLISH and before its content stage tells its pending candidates
 * from the others (again after each wait of wait mode), holding no lock,
 * its reader online. fn may block, but then nothing may wait for this
 * worker's grace period (a reload, a housekeeping run) meanwhile. fn NULL:
 * none. On the worker's thread, or before it runs. */
void wm_match_worker_set_lookup_hook(struct wm_match_worker *w, void (*fn)(void *ctx), void *ctx);
#endif

/* The sink to give the worker's MQTT layer (ctx = w). */
struct wm_mqtt_sink wm_match_worker_sink(struct wm_match_worker *w);

/* Once per burst, on the worker, where it holds nothing from a lookup:
 * reports a quiescent state, expires the detached sessions whose deadline
 * has passed at now_ns (the packet time of the worker's MQTT layer,
 * wm_mqtt_layer.now_ns; "Sessions" above), then attaches to the current
 * table set (after a reload) and content snapshot (after a compile). */
void wm_match_worker_quiescent(struct wm_match_worker *w, uint64_t now_ns);

#endif
