/* wm_matcher: which subscriptions does a publication reach?
 *
 * A subscription is (client id, MQTT topic filter, QoS, No Local, optional
 * neighborhood, optional content filter). A publication is (topic name,
 * zero or more peids, publisher client id). It matches a subscription when
 *   - the topic matches the filter exactly as wm_topic_match() says
 *     (MQTT 5.0 §4.7; for "$share/{ShareName}/{filter}" the inner filter,
 *     §4.8.2), and
 *   - if the subscription has a neighborhood, at least one of the
 *     publication's peids is in it (spaPS §V-B2/§V-C: a spatial subscription
 *     never receives a publication without a peid), and
 *   - not (No Local and publisher == subscriber) (MQTT 5.0 §3.8.3.1).
 * Shared subscriptions come back once per ShareName group with the members
 * that match; picking the one member that receives the message is a
 * separate step (matcher/share_pick.h). Content filters are not evaluated
 * here: the subscription's content slot is returned for the EXI stage.
 *
 * Structures (see matcher.c for the why):
 *   topic index   — every distinct filter interned once; wildcard-free
 *                   filters are found with one hash probe of the whole topic
 *                   (exact fast path); wildcard filters in a trie whose edges
 *                   are (parent node, level) hash entries, with the '+' child
 *                   and the '#' filter precomputed on each node.
 *   spatial       — neighborhoods stored once, by name, and reference
 *                   counted: their peids packed (matcher/peid_set.h), plus
 *                   the spaPS spatial filter mapping peid -> neighborhoods
 *                   (O(1) per peid: one two-cache-line slot per peid,
 *                   matcher/posting.h). Subscriptions hang off cells keyed by
 *                   (topic filter, neighborhood). A lookup walks the cheaper
 *                   side first: the topic's cells tested against the peids'
 *                   slots, or the peids' neighborhoods tested against the
 *                   topic filters' neighborhood filters (matcher/nbf.h).
 *   peids          — interned into dense integers once (writer side);
 *                   lookups take interned ids, or strings through
 *                   wm_matcher_lookup_str().
 *   No Local       — decided on the publisher's client id string (a 64-bit
 *                   hash, confirmed by comparing strings), never on an
 *                   interned id: an id looked up at the start of a lookup
 *                   could be stale by the time a subscription of that
 *                   client is added, and the client would get its own
 *                   message back.
 *
 * Concurrency: ONE writer thread calls every function marked "writer"; any
 * number of reader threads, each with its own wm_matcher_reader, call the
 * "reader" functions concurrently with the writer. Readers never lock,
 * never wait and never allocate; a reader sees each subscription either
 * fully added or not at all (each add/remove is atomic for readers; a batch
 * is applied op by op). Unlinked memory is freed after a grace period
 * (QSBR, matcher/qsbr.h): readers MUST call wm_matcher_quiescent() between
 * lookups regularly (e.g. once per burst), or go offline when idle; the
 * writer calls wm_matcher_reclaim(). The QSBR backend is pluggable
 * (liburcu-qsbr by default; the data plane plugs rte_rcu_qsbr in).
 *
 * Bounds: every table has a maximum fixed at creation (wm_matcher_config);
 * crossing one returns a WM_MATCHER_E_FULL_* error and changes nothing. The
 * maxima count live entries only: removed ones whose ids still wait for
 * their grace period do not count, and an add below the bound that finds
 * no free id but such waiting ones waits for the grace period itself
 * (as wm_matcher_reclaim(m, true) does: the writer blocks until every
 * online reader has passed a quiescent state; liburcu takes the writer's
 * own reader, if online, offline meanwhile). So a table kept at its bound
 * under remove/add churn never refuses an add, and E_NOMEM means only
 * that an allocation failed.
 * Memory: the per-id arrays are allocated at their maximum size up front but
 * only touched pages count, so generous maxima cost address space, not RSS.
 */
#ifndef WM_MATCHER_MATCHER_H
#define WM_MATCHER_MATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_topic.h"
#include "matcher/qsbr.h"

#define WM_NBHD_NONE   UINT32_MAX  /* a subscription without neighborhood */
#define WM_PEID_NONE   UINT32_MAX  /* a peid the matcher has never seen */
#define WM_SUB_NONE    UINT32_MAX

/* Most peids one publication may carry (wm_matcher_lookup*). */
#define WM_MATCH_MAX_PUB_PEIDS 256u

typedef enum wm_matcher_status {
    WM_MATCHER_OK = 0,
    WM_MATCHER_E_INVALID_FILTER,   /* the topic filter is invalid (detail in wm_matcher_error) */
    WM_MATCHER_E_INVALID_TOPIC,    /* lookup_str: the topic name is empty or longer than 65,535 bytes */
    WM_MATCHER_E_NO_LOCAL_SHARED,  /* No Local on a shared subscription (MQTT 5.0 §3.8.3.1) */
    WM_MATCHER_E_TOO_DEEP,         /* filter has more levels than config.max_levels */
    WM_MATCHER_E_BAD_QOS,          /* QoS > 2 (§3.8.3.1) */
    WM_MATCHER_E_BAD_PEID,         /* empty peid or longer than 65,535 bytes */
    WM_MATCHER_E_BAD_CLIENT,       /* client id longer than 65,535 bytes */
    WM_MATCHER_E_BAD_NAME,         /* neighborhood name empty or longer than 65,535 bytes */
    WM_MATCHER_E_NBHD_EXISTS,      /* a neighborhood of that name is already defined */
    WM_MATCHER_E_UNKNOWN_NBHD,     /* no live neighborhood with that id */
    WM_MATCHER_E_UNKNOWN_SUB,      /* no live subscription with that id */
    WM_MATCHER_E_FULL_SUBS,        /* config.max_subs subscriptions live */
    WM_MATCHER_E_FULL_FILTERS,     /* config.max_filters distinct topic filters */
    WM_MATCHER_E_FULL_NODES,       /* config.max_trie_nodes wildcard-trie nodes */
    WM_MATCHER_E_FULL_NBHDS,       /* config.max_nbhds neighborhoods */
    WM_MATCHER_E_FULL_PEIDS,       /* config.max_peids distinct peids */
    WM_MATCHER_E_FULL_CLIENTS,     /* config.max_clients distinct client ids */
    WM_MATCHER_E_FULL_GROUPS,      /* config.max_groups shared-subscription groups */
    WM_MATCHER_E_TOO_MANY_PEIDS,   /* lookup with more than WM_MATCH_MAX_PUB_PEIDS peids */
    WM_MATCHER_E_TRUNCATED,        /* lookup: a result buffer was too small; what fits is filled */
    WM_MATCHER_E_NOMEM,            /* allocation failed; nothing changed */
    WM_MATCHER_E_INVALID_ARG,      /* NULL where a value is required, bad config */
} wm_matcher_status;

/* A short stable name ("full_subs") and a one-line explanation. */
const char *wm_matcher_status_name(wm_matcher_status st);
const char *wm_matcher_status_message(wm_matcher_status st);

/* Detail of a failed wm_matcher_sub_add(): for E_INVALID_FILTER the codec's
 * status and the byte offset of the first bad byte in the filter. */
typedef struct wm_matcher_error {
    wm_matcher_status status;
    wm_topic_status topic_status;
    size_t offset;
} wm_matcher_error;

/* The default max_trie_nodes per topic filter (wm_matcher_config). A
 * wildcard filter of L levels takes at most L trie nodes (up to max_levels,
 * 64 by default), fewer when its prefix is shared, none for a wildcard-free
 * filter; 8 holds max_filters filters of 8 distinct levels each, or fewer
 * deeper ones. Until 2026-12-02 the default was max_filters (one node per
 * filter): 32 filters of 63 distinct levels filled a table sized for 2,000
 * subscriptions. Each node costs 36 bytes of address space up front (touched
 * as used) plus its level's bytes when created. */
#define WM_MATCHER_TRIE_NODES_PER_FILTER 8u

typedef struct wm_matcher_config {
    uint32_t max_subs;        /* live subscriptions; default 1 Mi */
    uint32_t max_filters;     /* distinct topic filters; default max_subs */
    uint32_t max_trie_nodes;  /* wildcard-trie nodes = interned (parent, level) edges; default
                                 WM_MATCHER_TRIE_NODES_PER_FILTER * max_filters (at most 2^28) */
    uint32_t max_nbhds;       /* neighborhoods; default 64 Ki */
    uint32_t max_peids;       /* distinct peids ever interned; default 4 Mi */
    uint32_t max_clients;     /* distinct client ids with subscriptions; default max_subs */
    uint32_t max_groups;      /* shared-subscription groups; default 64 Ki */
    uint32_t max_levels;      /* topic-filter levels; default 64 */
    const wm_qsbr_ops *qsbr;  /* NULL = wm_qsbr_urcu() */
} wm_matcher_config;

typedef struct wm_matcher wm_matcher;
typedef struct wm_matcher_reader wm_matcher_reader;

/* A length-delimited string (not NUL-terminated). */
typedef struct wm_match_str {
    const char *s;
    size_t len;
} wm_match_str;

/* ---------------------------------------------------------------- lifetime */

/* Creates an empty matcher. cfg may be NULL (all defaults); zero fields take
 * their default. Returns NULL on allocation failure or a bad config. */
wm_matcher *wm_matcher_new(const wm_matcher_config *cfg);
/* Frees everything. No reader may be registered any more. */
void wm_matcher_free(wm_matcher *m);
/* The configuration in force (defaults filled in). */
const wm_matcher_config *wm_matcher_get_config(const wm_matcher *m);

/* ---------------------------------------------------------------- peids (writer unless noted) */

/* Writer: interns a peid string (1..65,535 bytes) into *id. Peid ids are
 * dense (0, 1, 2, ...) and permanent for the matcher's life, so the data
 * plane may cache them. E_BAD_PEID, E_FULL_PEIDS, E_NOMEM. */
wm_matcher_status wm_matcher_peid_intern(wm_matcher *m, const char *s, size_t len, uint32_t *id);
/* Reader or writer: the id of a peid string, or WM_PEID_NONE (unknown peids
 * match no spatial subscription). No allocation, no lock. */
uint32_t wm_matcher_peid_find(const wm_matcher *m, const char *s, size_t len);

/* ---------------------------------------------------------------- neighborhoods (writer) */

/* Defines neighborhood `name` as the given peid set (a resolved spatial
 * filter, spaPS §V-B1; duplicates are ignored, an empty set is allowed and
 * matches nothing). The set is stored once; subscriptions refer to it by id
 * and hold references, and the definition itself holds one until
 * wm_matcher_nbhd_release(). Peids are interned as needed.
 * Errors: E_BAD_NAME, E_NBHD_EXISTS, E_BAD_PEID, E_FULL_NBHDS, E_FULL_PEIDS,
 * E_NOMEM — on error nothing is defined (interned peids stay interned). */
wm_matcher_status wm_matcher_nbhd_define(wm_matcher *m, const char *name, size_t name_len,
                                         const wm_match_str *peids, size_t n, uint32_t *id);
/* Same with already interned peid ids (from wm_matcher_peid_intern; e.g. a
 * resolution file's peid table interned once). Ids >= the number interned
 * give E_BAD_PEID. */
wm_matcher_status wm_matcher_nbhd_define_ids(wm_matcher *m, const char *name, size_t name_len,
                                             const uint32_t *peids, size_t n, uint32_t *id);
/* The id of a defined neighborhood, or WM_NBHD_NONE. */
uint32_t wm_matcher_nbhd_find(const wm_matcher *m, const char *name, size_t name_len);
/* Drops the definition's reference: the name is free at once; the peid set
 * stays until the last subscription using it is removed. E_UNKNOWN_NBHD
 * if id is not a defined neighborhood. */
wm_matcher_status wm_matcher_nbhd_release(wm_matcher *m, uint32_t id);
/* Number of peids in a live neighborhood (0 for unknown ids). */
uint32_t wm_matcher_nbhd_size(const wm_matcher *m, uint32_t id);

/* ---------------------------------------------------------------- subscriptions (writer) */

typedef struct wm_sub_spec {
    const char *filter;   /* MQTT topic filter, possibly "$share/{ShareName}/{filter}" */
    size_t filter_len;
    const char *client;   /* subscriber's client id (may be empty) */
    size_t client_len;
    uint32_t nbhd;        /* WM_NBHD_NONE or a neighborhood id */
    uint8_t qos;          /* 0..2, stored and reported, not used for matching */
    bool no_local;        /* MQTT 5.0 §3.8.3.1 */
    uint32_t content;     /* content-filter slot: 0 = none; otherwise an id the
                             EXI stage owns, returned by wm_matcher_sub_content() */
    uint64_t cookie;      /* caller's value, returned by wm_matcher_sub_cookie() */
} wm_sub_spec;

/* Adds a subscription and returns its id in *sub (dense, reused after
 * removal + grace period). The matcher does not merge duplicates: the MQTT
 * session layer replaces a client's existing subscription (§3.8.4) by
 * remove + add. err (optional) receives the detail.
 * Errors: E_INVALID_FILTER, E_TOO_DEEP, E_BAD_QOS, E_BAD_CLIENT,
 * E_NO_LOCAL_SHARED, E_UNKNOWN_NBHD, E_FULL_* , E_NOMEM; nothing changes.
 * At a bound freed by removals whose grace period is still running, waits
 * for it ("Bounds" above). */
wm_matcher_status wm_matcher_sub_add(wm_matcher *m, const wm_sub_spec *spec, uint32_t *sub, wm_matcher_error *err);
/* Writer: the wildcard-trie nodes wm_matcher_sub_add() of this filter
 * (bytes, possibly "$share/{ShareName}/{filter}") would create now, of
 * config.max_trie_nodes: 0 for an invalid or wildcard-free filter (those
 * take no trie node) and for a filter already held, else its levels below
 * the deepest prefix already in the trie ('#' takes none), at most
 * max_levels. For a caller that shares the trie among its clients (the
 * data plane's per-client share). Allocates nothing, O(levels). */
uint32_t wm_matcher_trie_cost(const wm_matcher *m, const char *filter, size_t len);
/* Removes a subscription: readers stop seeing it at once; its memory and id
 * are reclaimed after a grace period. E_UNKNOWN_SUB. */
wm_matcher_status wm_matcher_sub_remove(wm_matcher *m, uint32_t sub);

typedef enum wm_matcher_op_kind { WM_OP_ADD, WM_OP_REMOVE } wm_matcher_op_kind;
typedef struct wm_matcher_op {
    wm_matcher_op_kind kind;
    wm_sub_spec add;          /* WM_OP_ADD */
    uint32_t sub;             /* WM_OP_REMOVE: in; WM_OP_ADD: out */
    wm_matcher_error result;  /* out */
} wm_matcher_op;
/* Applies ops in order (each atomic for readers, the batch is not), then
 * one reclamation pass (wm_matcher_reclaim(m, wait)). Returns the number of
 * ops that failed; each op's result says why. */
size_t wm_matcher_apply(wm_matcher *m, wm_matcher_op *ops, size_t n, bool wait);

/* Writer: frees what removals unlinked once a grace period has elapsed.
 * wait=true blocks until every online reader has passed a quiescent state;
 * wait=false frees only if the backend says it already has. Returns the
 * number of deferred items run. */
size_t wm_matcher_reclaim(wm_matcher *m, bool wait);

/* Any thread: fields of a subscription returned by a lookup. Valid until the
 * reader's next quiescent state. */
uint64_t wm_matcher_sub_cookie(const wm_matcher *m, uint32_t sub);
uint32_t wm_matcher_sub_content(const wm_matcher *m, uint32_t sub);
uint8_t wm_matcher_sub_qos(const wm_matcher *m, uint32_t sub);

typedef struct wm_matcher_stats {
    uint32_t subs, filters, trie_nodes, nbhds, peids, clients, groups, cells;
    uint64_t nbhd_peids;      /* sum of live neighborhoods' sizes */
    uint64_t spilled_postings; /* peid -> neighborhood entries that did not fit
                                  in their peid's posting slot (31 entries) */
    uint64_t pending_reclaim; /* items waiting for a grace period */
    uint64_t grace_waits;     /* adds below a bound that waited for the grace period of
                                 removed entries' ids ("Bounds" above), since creation */
} wm_matcher_stats;
/* Writer: current counts. */
void wm_matcher_stats_get(const wm_matcher *m, wm_matcher_stats *st);

/* ---------------------------------------------------------------- readers */

/* Registers the calling thread as a reader (online) and allocates its
 * scratch (O(max_filters + max_nbhds) words, touched as used). One reader
 * per thread; NULL on allocation failure or if the QSBR backend is full. */
wm_matcher_reader *wm_matcher_reader_new(wm_matcher *m);
/* Unregisters and frees (from the reader's thread). */
void wm_matcher_reader_free(wm_matcher_reader *r);
/* Reports a quiescent state: the reader holds nothing returned by earlier
 * lookups (the ids stay meaningful, the memory behind them may go). Cheap
 * (one store); call it between bursts. */
void wm_matcher_quiescent(wm_matcher_reader *r);
/* An idle reader goes offline so it does not hold grace periods back. */
void wm_matcher_reader_offline(wm_matcher_reader *r);
void wm_matcher_reader_online(wm_matcher_reader *r);

/* A publication with interned peids. */
typedef struct wm_match_pub {
    const char *topic;      /* a valid topic name (not checked here: the codec validated it) */
    size_t topic_len;
    const uint32_t *peids;  /* n_peids interned peids; WM_PEID_NONE entries are ignored */
    uint32_t n_peids;       /* <= WM_MATCH_MAX_PUB_PEIDS */
    const char *client;     /* publisher's client id (No Local), NULL when unknown */
    size_t client_len;
} wm_match_pub;

/* One shared-subscription group in a result: members[first, first+count). */
typedef struct wm_match_group {
    uint32_t group;  /* group id (stable while the group has members) */
    uint32_t first;
    uint32_t count;
} wm_match_group;

/* Caller-owned result buffers. Sizing: n_subs + n_members never exceeds the
 * number of live subscriptions and n_groups the number of live groups, so
 * config.max_subs / config.max_groups entries always suffice; smaller
 * buffers are fine when the workload bounds fan-out (E_TRUNCATED otherwise,
 * with what fits filled in). */
typedef struct wm_match_result {
    uint32_t *subs;            /* in: buffer for non-shared matches */
    uint32_t subs_cap;
    uint32_t *members;         /* in: buffer for shared members, grouped by group */
    uint32_t members_cap;
    wm_match_group *groups;    /* in: one entry per matched group */
    uint32_t groups_cap;
    uint32_t n_subs, n_members, n_groups; /* out */
} wm_match_result;

/* Reader: every subscription the publication reaches. subs come in index
 * order (unsorted, each once); members are sorted by (group, sub) and
 * groups by group id. Allocates nothing, takes no lock.
 * Returns OK, E_TOO_MANY_PEIDS (nothing matched) or E_TRUNCATED. */
wm_matcher_status wm_matcher_lookup(wm_matcher_reader *r, const wm_match_pub *pub, wm_match_result *res);
/* Reader: n lookups as one burst (ARCHITECTURE.md §4): while publication
 * i is matched, the posting slots of publication i+6 (two cache lines per
 * peid, up to 4 peids) are prefetched, so their cache misses overlap
 * instead of stalling each lookup in turn. Same results as n calls of
 * wm_matcher_lookup(); statuses[i] (if not NULL) receives each status.
 * Returns the number of lookups that did not return WM_MATCHER_OK. */
uint32_t wm_matcher_lookup_burst(wm_matcher_reader *r, const wm_match_pub *pubs, uint32_t n,
                                 wm_match_result *res, wm_matcher_status *statuses);

/* Reader: the same with peids as strings (unknown ones match nothing
 * spatial). client may be NULL. Additionally E_INVALID_TOPIC for an empty or over-long
 * topic and E_BAD_PEID for an empty peid. */
wm_matcher_status wm_matcher_lookup_str(wm_matcher_reader *r, const char *topic, size_t topic_len,
                                        const wm_match_str *peids, uint32_t n_peids,
                                        const char *client, size_t client_len, wm_match_result *res);

#endif
