/* The proxy's process-wide registry of subscriptions made through it, for
 * two uses:
 *  - persistent sessions (always, with --resolution): what each client
 *    session's subscriptions are filtered by, kept by client identifier
 *    while the broker keeps the session, so that a connection resuming it
 *    (Clean Start 0) knows which Subscription Identifier means which
 *    neighborhood (below, "Sessions");
 *  - --prefilter: "can any current subscription receive this PUBLISH?"
 *    asked by every worker for every client PUBLISH, while subscriptions
 *    come and go on any worker.
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
 * Registrations are held by handle (what _add returns, what sessions and
 * connections keep), each with its topic filter and neighborhood NAME, so a
 * reload of the resolution (wm_proxy_registry_rebind) registers every one
 * again in the new file's matcher and the handles stay. A registration whose
 * neighborhood the current file lacks can receive nothing: it is kept by
 * name, out of the matcher, and looked up again at the next reload.
 *
 * Conservative by construction: a filter deeper than the matcher indexes is
 * registered widened (its first max_levels - 1 levels and '#', a superset);
 * one the matcher cannot take (a table full, memory, invalid) is refused to
 * the caller, which refuses the subscription to its client before the
 * broker has it (proxy_filter.c), so the registry stays exact. Only a
 * subscription the broker already holds that cannot be registered (a --state
 * session restored at start into tables too small) marks the registry
 * broken, after which every PUBLISH counts as receivable (nothing is dropped
 * on a guess). Before 2026-12-02 any refusal did, so one client's valid
 * SUBSCRIBE of 65 levels turned --prefilter off for everyone (REVIEW14
 * finding 1).
 *
 * Persistent sessions: when a connection whose session outlives it closes,
 * its subscriptions stay registered (the broker keeps them and queues for
 * the absent client) until its Session Expiry Interval has passed.
 * Subscriptions made through other entry points of the broker are invisible.
 *
 * Sessions (MQTT v5 §4.1, §3.1.2.4, §3.1.2.11.2): one entry per client
 * identifier whose session may outlive its connection, attached to by the
 * connection(s) using it (a take-over briefly has two), holding one record
 * per installed subscription: topic filter, Subscription Identifier and
 * neighborhood NAME (so that a record survives a reload of the resolution
 * and is resolved again by name). The connection mirrors every change into
 * it (SUBACK installs, UNSUBSCRIBE, replacement of a filter). It is dropped
 * when a connection starts a fresh session (Clean Start 1, or a CONNACK
 * with Session Present 0) and when its session expires (last connection
 * closed + Session Expiry Interval; 0 = at once). Bounded: at most
 * max_sessions entries and max_subs records per entry. An entry that could
 * not record everything (per-entry bound, memory), or that was created for
 * a session the broker already held (proxy restarted, table was full) is
 * "incomplete": the connection that resumes it must treat every
 * Subscription Identifier it does not know as possibly filtered (withhold).
 * Entries are identified by client identifier + generation: a connection
 * whose entry was dropped and recreated by another connection changes
 * nothing any more.
 */
#ifndef WM_DATAPLANE_PROXY_REGISTRY_H
#define WM_DATAPLANE_PROXY_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/mqtt5_props.h"
#include "matcher/matcher.h"

/* Subscription Identifiers the proxy adds (dataplane/proxy_filter.h): from
 * BASE up to the largest identifier MQTT allows (268,435,455, §3.8.2.1.2),
 * handed out per session in order; PLAIN, the top one, is added to every
 * subscription without neighborhood or content filter (always passes). */
#define WM_PROXY_SID_BASE 0x0F000000u
#define WM_PROXY_SID_MAX  0x0FFFFFFFu
#define WM_PROXY_SID_PLAIN WM_PROXY_SID_MAX
/* How many proxy identifiers a session has (BASE .. PLAIN - 1). */
#define WM_PROXY_SID_SPAN (WM_PROXY_SID_PLAIN - WM_PROXY_SID_BASE)
/* With --state, how many identifiers a session reserves ahead in the file
 * (wm_proxy_registry_session_sid): what a kill can cost a session that
 * handed out identifiers since the last save (16,777,215 / 4,096 = 4,096
 * such kills), and half of it (2,048 filtered SUBSCRIBEs) what it can hand
 * out within one save interval (at most 10 s) before one waits for a save. */
#define WM_PROXY_SID_RESERVE 4096u

typedef struct wm_proxy_registry wm_proxy_registry;

/* A registry of at most max_sessions persistent sessions of at most
 * max_subs records each, with --prefilter over m (which holds the
 * neighborhoods; it must outlive the registry or the next rebind), or without
 * (m NULL). NULL on
 * allocation failure. */
wm_proxy_registry *wm_proxy_registry_new(wm_matcher *m, uint32_t max_sessions, uint32_t max_subs);

/* True if the registry serves --prefilter (made with a matcher). */
bool wm_proxy_registry_prefilter(const wm_proxy_registry *g);
void wm_proxy_registry_free(wm_proxy_registry *g);

/* The process's shared subscriptions (dataplane/proxy_share.h), made and
 * freed with the registry; any thread. */
struct wm_proxy_shares *wm_proxy_registry_shares(wm_proxy_registry *g);

/* Worker: registers the calling thread as a reader (online) of the current
 * matcher, and its generation in *gen (for _receivable). NULL on failure,
 * and always without --prefilter (no reader is needed then: every rd
 * argument below may be NULL). Free it with wm_matcher_reader_free on the
 * same thread, before the matcher is closed (after a rebind: before the
 * worker acknowledges the reload, dataplane/proxy_reload.h). */
wm_matcher_reader *wm_proxy_registry_reader(wm_proxy_registry *g, uint64_t *gen);

/* Worker (rd = its reader or NULL, taken offline for the call): registers
 * topic filter f (bytes) with neighborhood `nbhd` (a NUL-terminated name,
 * NULL for none; looked up in the current file); content: the subscription
 * has a content filter (see _receivable). A filter deeper than the matcher's
 * max_levels is registered widened (see the file comment; counted
 * widened_too_deep). Returns the handle, or WM_SUB_NONE if it could not be
 * registered: *why (if not NULL) says why, a WM_MATCHER_E_FULL_* (a table of
 * the matcher full), WM_MATCHER_E_NOMEM (memory, or no handle left) or
 * WM_MATCHER_E_INVALID_FILTER; nothing is registered then and the registry
 * is unchanged (the caller must not let the subscription reach the broker,
 * or the prefilter could keep what it should receive). *why is
 * WM_MATCHER_OK on success. */
uint32_t wm_proxy_registry_add(wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes f, const char *nbhd,
                               bool content, wm_matcher_status *why);

/* Worker: unregisters handle sub now (expire_ns == 0) or once CLOCK_MONOTONIC
 * passes expire_ns (UINT64_MAX = never: a session that does not expire). */
void wm_proxy_registry_remove(wm_proxy_registry *g, wm_matcher_reader *rd, uint32_t sub, uint64_t expire_ns);

/* Worker (online reader rd of generation rd_gen, or NULL): could any
 * registered subscription receive a PUBLISH of this topic with these peids
 * (User Property `peid` values)? content: whether a content filter could
 * select it (its Content Type names an EXI schema of the registry in
 * force); if not, only subscriptions without content filter count (a
 * shared one with a content filter always counts). The content filter
 * itself is not evaluated: that would mean decoding the payload at ingress.
 * One lookup either way. True (cannot tell) when rd is NULL or of a
 * matcher a rebind replaced since (its view is frozen: subscriptions made
 * since are not in it), when the registry is broken or the lookup fails.
 * No lock, no allocation. */
bool wm_proxy_registry_receivable(const wm_proxy_registry *g, wm_matcher_reader *rd, uint64_t rd_gen,
                                  wm_mqtt5_bytes topic, const wm_match_str *peids, uint32_t n_peids, bool content);

/* Main thread (not a reader), on a reload of the resolution: registers every
 * live registration again in m (the new file's matcher, which must outlive
 * the registry or the next rebind), neighborhoods looked up by name, then
 * makes m current: from then on writes go to m, and readers of the old
 * matcher answer "receivable" until they take a reader of m. *gone: the
 * registrations whose neighborhood m lacks (kept by name, out of the
 * matcher). Returns 0 (also without --prefilter: nothing to do), or -1 with
 * the reason in err[0..errcap) if m refused one (table full, out of memory):
 * nothing changed, and the caller must discard m (it holds what was added).
 * Holds the registry's lock meanwhile: workers that register wait. */
int wm_proxy_registry_rebind(wm_proxy_registry *g, wm_matcher *m, uint32_t *gone, char *err, size_t errcap);

/* Main thread (not a reader): removes expired subscriptions and sessions
 * and frees what removals unlinked, waiting for one grace period. */
void wm_proxy_registry_reclaim(wm_proxy_registry *g, uint64_t now_ns);

/* ------------------------------------------------------------ sessions */

/* A subscription record of a session. filter: bytes (not NUL-terminated);
 * nbhd: NUL-terminated neighborhood name, NULL for none; xpath: its content
 * filter (NUL-terminated XPath text), NULL for none; reg_sub: its
 * --prefilter registration (WM_SUB_NONE if none), owned by the entry once
 * stored (removed with the record). Views valid during the callback only. */
typedef struct wm_proxy_saved_sub {
    const char *filter;
    uint32_t filter_len;
    uint32_t sid;
    const char *nbhd;
    uint32_t reg_sub;
    const char *xpath;
} wm_proxy_saved_sub;

/* What wm_proxy_registry_session_attach found. */
typedef struct wm_proxy_session_ref {
    uint64_t gen;       /* the entry attached to; 0 = none (table full, counted) */
    bool complete;      /* every subscription of the session is known */
    uint32_t sid_next;  /* proxy identifiers (below) from here up were never put in the entry;
                           WM_PROXY_SID_BASE for a new entry */
} wm_proxy_session_ref;

/* Worker, on a successful CONNACK: the connection of client identifier
 * cid[0..cid_len) (the CONNECT's, or the broker's Assigned Client
 * Identifier) starts using its session. fresh: the broker started a new
 * session (Clean Start 1 or Session Present 0): any entry is dropped (its
 * prefilter registrations removed) and an empty, complete one made. Else
 * the entry's records are handed to each(ctx, rec) (under the registry's
 * lock: each must not call the registry) and complete says whether they are
 * all (an incomplete entry's records are handed too: each is a subscription
 * the broker granted, only others may be missing); with no entry, an empty incomplete one is made (the broker has a
 * session the proxy does not know). keep: make an entry even if none is
 * needed (the session may outlive the connection); without it and without
 * an entry, nothing is made (gen 0, complete = fresh). Never fails: when the
 * table is full, gen is 0 (the connection is untracked; counted as
 * sessions_full) and complete is fresh. */
wm_proxy_session_ref wm_proxy_registry_session_attach(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                                      uint32_t cid_len, bool fresh, bool keep,
                                                      void (*each)(void *ctx, const wm_proxy_saved_sub *rec),
                                                      void *ctx);

/* Worker: records (or replaces, by filter) a subscription of entry gen of
 * cid; a proxy identifier (rec->sid) raises the entry's sid_next past it
 * even if the record is not kept. Replacing a filtered record with a client
 * identifier makes the entry incomplete, as _session_del. Returns true if the entry took it (and owns rec->reg_sub); false if
 * gen is no longer the entry (nothing changed) or the record could not be
 * kept (max_subs, memory: the entry becomes incomplete, counted as
 * records_lost); the caller keeps reg_sub then. */
bool wm_proxy_registry_session_put(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid, uint32_t cid_len,
                                   uint64_t gen, const wm_proxy_saved_sub *rec);

/* What wm_proxy_registry_session_sid did. */
typedef enum wm_proxy_sid_status {
    WM_PROXY_SID_OK,         /* *sid is the session's next identifier, now used */
    WM_PROXY_SID_NONE_LEFT,  /* the session used all WM_PROXY_SID_SPAN of them */
    WM_PROXY_SID_WAIT,       /* --state: not below the ceiling on disk yet; a reservation
                              * is queued for the next save (try again once woken, see
                              * wm_proxy_registry_sid_wake) */
    WM_PROXY_SID_STALE,      /* gen is no longer the entry: nothing changed */
    WM_PROXY_SID_UNSAVED,    /* --state: as WAIT, but saves are failing
                              * (wm_proxy_registry_ceilings_unwritable): nothing to wait
                              * for; the reservation is queued all the same */
} wm_proxy_sid_status;

/* Worker: hands out the next proxy identifier of entry gen of cid (a
 * filtered SUBSCRIBE's; floor: the connection's own next one, which the
 * entry's is raised to). Without a saver (wm_proxy_registry_track) it is
 * the entry's next one. With one, an identifier is handed out only below
 * the ceiling the --state file on disk holds for the session (so that a
 * load after a kill, which starts the session there, never hands it out
 * again): at or past it, the entry's ceiling to write is raised
 * WM_PROXY_SID_RESERVE past it and the call answers WAIT (UNSAVED while
 * saves are declared failing); once half the
 * reservation is used, the next is raised the same way ahead of need. The
 * entry is marked changed (the next save writes its new next identifier).
 * A WAIT that makes the registry urgent calls the _on_urgent function after
 * the lock is released. Lock taken (rd offline meanwhile). */
wm_proxy_sid_status wm_proxy_registry_session_sid(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                                  uint32_t cid_len, uint64_t gen, uint32_t floor, uint32_t *sid);

/* Worker: forgets the record of filter[0..len) of entry gen (UNSUBSCRIBE),
 * removing its prefilter registration. A filtered record (neighborhood or
 * content) with a client identifier makes the entry incomplete: the broker
 * may still deliver what it had queued for it (MQTT 5.0 §3.10.4), and that
 * identifier could then be taken for a plain subscription's (a proxy one is
 * never reused in the session, so it stays unexplained and withheld). No-op if absent or gen is stale. */
void wm_proxy_registry_session_del(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid, uint32_t cid_len,
                                   uint64_t gen, const char *filter, uint32_t filter_len);

/* Worker: the Session Expiry Interval (s, 0xFFFFFFFF never) in force on
 * the connection attached to entry gen (CONNACK, or a DISCONNECT changing
 * it, MQTT 5.0 §3.14.2.2.2), so that a save while it is attached knows when
 * the session would end if the proxy were killed then (the detach never
 * comes). 0 counts like any other value: the session ends with the
 * connection, and a save while it is attached writes it as expired (before
 * 2026-12-02 a 0 was ignored, so a DISCONNECT ending the session, or a
 * resume with interval 0, left the previous connection's interval in the
 * entry: a kill then made the next process keep the session as
 * persistent). Until the first call after an attach the interval is not
 * known (written "live": never). No-op if gen is stale. */
void wm_proxy_registry_session_interval(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                        uint32_t cid_len, uint64_t gen, uint32_t interval_s);

/* Worker, when the connection closes: detaches from entry gen. Once no
 * connection is attached, the entry expires at CLOCK_MONOTONIC expire_ns
 * (0 = now, UINT64_MAX = never), which wm_proxy_registry_reclaim applies. */
void wm_proxy_registry_session_detach(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                      uint32_t cid_len, uint64_t gen, uint64_t expire_ns);

/* ------------------------------------------------------------ saving sessions */

/* A session entry as wm_proxy_registry_sessions_take copies it and
 * wm_proxy_registry_session_restore takes it (the --state file,
 * dataplane/proxy_state.h). cid: bytes, not NUL-terminated. */
typedef struct wm_proxy_saved_session {
    const uint8_t *cid;
    uint32_t cid_len;
    uint32_t sid_next;     /* WM_PROXY_SID_BASE .. WM_PROXY_SID_PLAIN */
    bool incomplete;       /* see "Sessions" above */
    bool attached;         /* a connection uses it now: its expiry is not known yet */
    uint64_t expire_ns;    /* not attached: CLOCK_MONOTONIC deadline; UINT64_MAX = never */
    uint32_t interval;     /* attached: the Session Expiry Interval (s) of its connection
                            * (wm_proxy_registry_session_interval), 0xFFFFFFFF never; see interval_set */
    uint32_t ceiling;      /* taken: no identifier of the session from here up is handed out
                            * before a save that wrote it completed (>= sid_next); restore ignores it */
    bool interval_set;     /* attached: interval was given since the attach (0 then means the
                            * session ends with its connection, not "not known") */
} wm_proxy_saved_session;

/* Any thread: a counter that moves whenever a session entry changes (made,
 * dropped, expired, a record put or deleted, attached, detached), so that a
 * saver knows whether there is anything new to write. Lock-free. */
uint64_t wm_proxy_registry_changes(wm_proxy_registry *g);

/* The saver's side (dataplane/proxy_state.h): it keeps a copy of the table
 * of its own and takes from the registry only what changed since, a bounded
 * piece per hold of the lock, so that a worker that changes a session waits
 * for one such piece at most, however large the table. Entries are known to
 * it by generation (unique in the registry's life: an entry made again for a
 * client identifier has another one). */

/* An entry as the saver takes it: one block (free() frees all of it). s.cid
 * and the records' strings point into the block; reg_sub is WM_SUB_NONE. */
typedef struct wm_proxy_session_copy {
    struct wm_proxy_session_copy *next;
    uint64_t gen;
    wm_proxy_saved_session s;
    uint32_t n;                    /* records */
    wm_proxy_saved_sub recs[];
} wm_proxy_session_copy;

/* What one wm_proxy_registry_sessions_take handed over (the caller's, freed
 * with wm_proxy_registry_batch_free). Applied in this order: reset, gone,
 * copies. */
typedef struct wm_proxy_session_batch {
    bool reset;                    /* forget every entry taken before: each live one is queued again */
    uint64_t *gone;                /* generations of entries dropped since the last take (malloc'ed) */
    size_t n_gone;
    wm_proxy_session_copy *copies; /* changed entries, in the order they first changed; a list */
    uint32_t n_copies;
    uint64_t queued;               /* changed entries queued when the hold began (taken ones included) */
    bool more;                     /* changed entries still queued after it */
} wm_proxy_session_batch;

/* The saver, once (any thread that is not a worker holding the lock; at
 * start, before the file is loaded, so that its order is kept): from now on
 * every change of an entry queues it for the saver, and every drop of an
 * entry the saver has taken is logged; every entry already there is queued.
 * Without it (no --state) nothing is queued or logged. */
void wm_proxy_registry_track(wm_proxy_registry *g);

/* The saver (after _track; one thread): takes, in one hold of the lock, the
 * drop log and up to max_entries changed entries, stopping before the one
 * that would make the copies more than max_bytes (the first is taken
 * whatever its size: the hold is bounded by max(max_bytes, one entry)).
 * Each is a memcpy of the entry (one malloc), no formatting; taken entries
 * leave the queue until they change again. Counted in the stats' copy_*.
 * Returns 0, or -1 if memory ran out (*b holds what was taken before; the
 * entry that did not fit stays queued). */
int wm_proxy_registry_sessions_take(wm_proxy_registry *g, uint32_t max_entries, size_t max_bytes,
                                    wm_proxy_session_batch *b);

/* The saver, after a write (while running: the file written "clean 0")
 * completed: the ceilings of every copy taken since the previous such call
 * are on disk (wm_proxy_registry_session_sid may hand out below them), and
 * saves are no longer failing (ends _ceilings_unwritable). One store under
 * the lock: each entry applies it when it is next used. */
void wm_proxy_registry_ceilings_saved(wm_proxy_registry *g);

/* The saver, when its saves have failed for its bound
 * (WM_PROXY_STATE_UNWRITABLE_NS): until the next _ceilings_saved, a hand-out
 * that would wait answers UNSAVED, and the next _sid_wake is true if some
 * hand-out waits (it is then answered UNSAVED). Takes the lock. */
void wm_proxy_registry_ceilings_unwritable(wm_proxy_registry *g);

/* Before the workers run (one thread): fn(ctx) is called, from the worker's
 * thread and with no lock held, each time a hand-out makes the registry
 * urgent (below) from not urgent, so that the saver writes at once instead
 * of at its next tick; fn must be cheap and safe on any thread (a signal to
 * the saver's thread). NULL: none. */
void wm_proxy_registry_on_urgent(wm_proxy_registry *g, void (*fn)(void *ctx), void *ctx);

/* Any thread, lock-free: a hand-out waits for a save (answered WAIT since
 * the last _sid_urgent_clear): the saver should write soon. The saver
 * clears it when a save starts syncing (what was queued then is in it). */
bool wm_proxy_registry_sid_urgent(wm_proxy_registry *g);
void wm_proxy_registry_sid_urgent_clear(wm_proxy_registry *g);

/* The saver's thread only, after each save: true if a write completed (or
 * _ceilings_unwritable was called) since the last call and some hand-out was
 * answered WAIT before it: the caller then wakes every worker, which tries
 * its held SUBSCRIBEs again (one told to wait again counts again). Lock-free. */
bool wm_proxy_registry_sid_wake(wm_proxy_registry *g);

/* Frees what *b holds (any thread) and empties it. */
void wm_proxy_registry_batch_free(wm_proxy_session_batch *b);

/* The saver, when it lost track (memory ran out applying a batch): the next
 * take has reset set and queues every entry again. Takes the lock. */
void wm_proxy_registry_sessions_resync(wm_proxy_registry *g);

/* At start, before any worker runs (no reader): makes the entry s with
 * records recs[0..n) (filter, sid, nbhd, xpath as in wm_proxy_saved_sub;
 * reg_sub ignored: with --prefilter each record is registered here, and an
 * attached session is taken as detached with expiry never, since the
 * connection that used it is gone). The strings are copied.
 * Returns 0, or -1 with the reason in err[0..errcap): a client identifier
 * already in the table, more than max_subs records, two records of one
 * filter, max_sessions reached, out of memory (nothing of s is kept then). */
int wm_proxy_registry_session_restore(wm_proxy_registry *g, const wm_proxy_saved_session *s,
                                      const wm_proxy_saved_sub *recs, uint32_t n, char *err, size_t errcap);

/* Counts since start (any thread). */
typedef struct wm_proxy_registry_stats {
    uint64_t added, removed, refused;
    uint64_t widened_too_deep;     /* of added: deeper than the matcher's max_levels, registered widened */
    uint64_t refused_full, refused_nomem, refused_invalid;  /* refused, by reason (wm_proxy_registry_add) */
    uint64_t live;                 /* gauge: registrations */
    uint64_t deferred_live;        /* gauge: prefilter registrations kept for sessions (closed, or in the table) */
    bool broken;
    uint64_t sessions_live;        /* gauge: entries */
    uint64_t sessions_restored;    /* attaches that handed over a complete entry */
    uint64_t sessions_incomplete;  /* attaches to an incomplete entry (or none, for a resumed session) */
    uint64_t sessions_dropped;     /* entries dropped: fresh session */
    uint64_t sessions_expired;     /* entries dropped: session expired */
    uint64_t sessions_full;        /* attaches refused: max_sessions reached */
    uint64_t records_lost;         /* records not kept: max_subs or memory */
    /* The registry's lock: the longest any thread waited for it and held it
     * (ns, CLOCK_MONOTONIC; a holder preempted meanwhile counts in full). */
    uint64_t lock_wait_max_ns, lock_hold_max_ns;
    /* What the saver's holds of the lock copied (the --state file,
     * dataplane/proxy_state.h): holds, entries and bytes (client identifiers
     * and record strings) in all, and the most one hold copied and took. */
    uint64_t copy_holds, copy_entries, copy_bytes;
    uint64_t copy_hold_max_entries, copy_hold_max_bytes, copy_hold_max_ns;
} wm_proxy_registry_stats;
/* Copies the counts since start and the gauges (live, deferred_live,
 * sessions_live; deferred_live walks the session table) into *st. Any
 * thread: it takes the registry's lock (a worker's add or remove waits
 * meanwhile; the summary and its tests call it, not the hot path). */
void wm_proxy_registry_stats_get(wm_proxy_registry *g, wm_proxy_registry_stats *st);

#endif
