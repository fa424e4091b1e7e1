/* The data plane's match tables and match log; see match_sink.h.
 *
 * Lifetimes. A learned subscription is a `sub_node` (its key, filter, and
 * its neighborhood BY NAME, so a reload can re-resolve it). Every table set
 * that contains it holds the node as the subscription's matcher cookie
 * (tagged WM_TABLES_COOKIE_EXT). A worker only dereferences cookies of the
 * set it attached to at the start of its burst, and only until its next
 * quiescent state; the set that is current when a node is unlinked no
 * longer returns it, and later sets are built without it. So one grace
 * period after the unlink nobody can reach the node: it is retired to
 * `node_retire` and freed by housekeeping.
 *
 * The preloaded subscriptions' keys (the file's ids, decoded from JSON) are
 * per set: they hang off the set as its user data and die with it. */
#include "dataplane/match_sink.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <rte_spinlock.h>

#include "control/content_filters.h"
#include "control/reload.h"
#include "control/tables.h"
#include "dataplane/match_log.h"
#include "dataplane/peid_cache.h"
#include "matcher/matcher.h"
#include "matcher/qsbr.h"
#include "matcher/share_pick.h"

/* The writer lock. rte_spinlock's exchange is inline assembly, invisible to
 * ThreadSanitizer, so the TSan build states the ordering it provides. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire(p)
#define TSAN_RELEASE(p) __tsan_release(p)
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)0)
#endif

static inline void tlock(rte_spinlock_t *l)
{
    rte_spinlock_lock(l);
    TSAN_ACQUIRE(l);
}

static inline void tunlock(rte_spinlock_t *l)
{
    TSAN_RELEASE(l);
    rte_spinlock_unlock(l);
}

struct sub_node {
    struct sub_node *next;   /* bucket chain */
    uint32_t sub;            /* matcher subscription id in the current set */
    uint32_t next_sub;       /* reload: id in the set being built */
    uint32_t hash;
    uint32_t subid;
    uint8_t qos, no_local, drop;
    uint32_t key_hash;       /* stable member identity for wm_share_pick_hash */
    char *client, *filter, *key;
    char *nbhd;              /* neighborhood name, NULL: none */
    char *xpath;             /* content filter text, NULL: none */
    uint32_t slot, next_slot; /* its content slot in the current / next set */
    uint32_t trie_charge;    /* wildcard-trie nodes charged to its client's share (install) */
    /* Under lock: a re-SUBSCRIBE whose content filter awaits its compile
     * does not replace the subscription in force at once (MQTT 5.0 §3.8.4
     * replaces it with one that is made; a refused one must leave it as it
     * was): it waits behind it, in the matcher as a pending candidate (so
     * async workers skip it, waiting ones wait for its compile), off the
     * bucket chain, which holds the oldest node of the key only. older and
     * newer chain the nodes of one key in arrival order (settle_chain). */
    struct sub_node *older, *newer;
    /* newer != NULL, for workers (written under lock, read relaxed): in wait
     * mode the node is as good as pending, since whether it or the newer
     * one decides is known only at the newer one's compile (w_content) */
    _Atomic uint8_t superseded;
    struct sub_node *snext;  /* settle_pending's list of chains to settle */
    uint8_t smark;           /* ... this (oldest) node is on it */
    uint8_t sstate;          /* settle_chain: the node's enum wm_content_state */
    /* Under lock: the pending list, of nodes whose filter awaits the compile
     * that validates it (settle_pending). Workers do not read it: for them a
     * filter is pending while the content snapshot they decide with lacks
     * it (w_pending_apart), which follows the set they read, not this list. */
    struct sub_node *pnext, **pprev;
    struct client_rec *owner;        /* under lock: its client's session */
    struct sub_node *cnext, **cprev; /* under lock: the client's subscriptions */
    /* What the broker does not send it (match_sink.h, "Deliveries"): written
     * under lock, read by workers (relaxed: a PUBLISH racing a session event
     * sees either state, as it would in the broker). */
    _Atomic uint32_t gate_max;       /* the subscriber's Maximum Packet Size (0: none) */
    _Atomic uint8_t gate_offline;    /* its session is detached: no QoS 0 is queued for it */
};

/* A client's session as the table follows it (match_sink.h, "Sessions"):
 * its learned subscriptions, the connection holding it, and, once that
 * connection ended with a non-zero Session Expiry Interval, when it
 * expires. Freed when it holds nothing. */
struct client_rec {
    struct client_rec *next;     /* bucket chain */
    uint32_t hash;
    char *client;
    struct sub_node *subs;
    uint64_t trie_nodes;         /* its learned subscriptions' trie_charge, against client_trie_nodes */
    const struct wm_match_worker *conn_w; /* the connection holding it (NULL: none) */
    uint64_t conn;
    uint64_t deadline_ns;        /* detached: packet time it expires (UINT64_MAX never); 0 attached */
    uint32_t n_qos2;             /* detached: QoS 2 ids awaiting PUBREL */
    uint16_t qos2[WM_MQTT_QOS2_INFLIGHT];
};

/* A set's preloaded keys, cookie-indexed, with their member hashes. */
struct set_keys {
    uint32_t n;
    char **key;
    uint32_t *key_hash;
};

struct wm_match_table {
    wm_reload *rl;
    char *res_path, *subs_path, *schemas_path;
    pthread_mutex_t reload_mu;   /* reloads and housekeeping: rl's writer */
    rte_spinlock_t lock;         /* the current set's matcher writer; the learned registry */
    const wm_tables *cur;        /* under lock: the current set */
    struct sub_node **buckets;
    uint32_t mask;
    struct client_rec **cbuckets; /* under lock: sessions by client id (mask) */
    /* the earliest deadline of a detached session (UINT64_MAX: none);
     * written under lock, read by workers once per burst */
    atomic_uint_fast64_t next_deadline;
    /* learned subscriptions with a gate (gate_max or gate_offline set):
     * written under lock, read by workers once per PUBLISH; 0 skips the gate */
    atomic_uint_fast32_t gated;
    /* nodes with a re-SUBSCRIBE waiting behind them (sub_node.superseded):
     * written under lock, read by waiting workers once per PUBLISH; 0 skips
     * the check */
    atomic_uint_fast32_t superseded;
    wm_retire node_retire;       /* under lock: unlinked nodes */
    uint32_t max_subs;
    uint32_t max_trie_nodes;     /* the matcher's bound (wm_match_bounds) */
    uint32_t client_trie_nodes;  /* one client's share of it for learned subscriptions */
    uint32_t xpath_slots;        /* content slots per set (wm_match_table_set_xpath_slots) */
    size_t exi_mem_cap;          /* per-payload decoding memory, 0 = codec default (wm_match_table_set_exi_mem_cap) */
    uint32_t max_groups;
    enum wm_share_policy share_policy;
    wm_load_error last_error;    /* under reload_mu: the last refused reload's */
    char last_xpath_error[400];  /* under lock: why the last `xpath` was refused */
    char log_error[WM_MATCH_LOG_ERROR_MAX]; /* under lock: the first match-log write failure */
    struct wm_match_counters c;  /* under lock */
    struct sub_node *pend;       /* under lock: nodes whose content filter is pending */
    /* The compile thread's wake-up and the waiting workers' (wait mode). */
    pthread_mutex_t work_mu;
    pthread_cond_t work_cv, done_cv;
    bool work;                   /* under work_mu: content filters changed since the thread looked */
    atomic_bool kick;            /* set under lock by a change; the changer wakes the thread after unlocking */
    atomic_uint_fast64_t rounds; /* compile rounds settled (compiles and reloads): waiters watch it */
    void (*hook)(void *ctx, bool done);
    void *hook_ctx;
};

struct wm_match_worker {
    struct wm_match_table *t;
    wm_reload_reader *rd;
    wm_matcher_reader *r;        /* of the attached set */
    const wm_tables *tables;     /* the attached set */
    wm_match_result res;
    const char **keys;
    uint32_t *member_hash;       /* scratch: one matched group's member hashes */
    uint32_t *rr;                /* round-robin cursor per group id (this worker's) */
    struct wm_match_log *mlog;   /* --match-log, or NULL */
    FILE *log;                   /* its stream */
    char *log_path;
    struct wm_match_counters c;  /* lookups, errors, log lines, content stage */
    struct wm_peid_cache *peids; /* peid string -> id, hot peids in one line */
    /* content stage: the snapshot of the attached set's filters and this worker's decoders */
    const wm_content_snap *csnap;
    uint64_t csnap_id;           /* its wm_content_snap_id: the address may come back for another */
    wm_content_reader *creader;
    uint32_t *cslot;             /* [max_subs]: candidates' content slots */
    uint32_t *cpos;              /* [max_subs]: where each candidate sits (see w_content) */
    bool *cpass;
    uint8_t *cdrop;              /* [2 * max_subs]: result positions to remove (zero between calls) */
    wm_exi_error cerr;           /* the last content failure (match log) */
    const char *cconflict;       /* the last decode's Content Type / options header contradiction, or NULL
                                  * (wm_content_reader_conflict; match log) */
    enum wm_content_outcome cout;
    bool had_content;
    bool wait;                   /* wait mode: a PUBLISH with a pending candidate waits for its compile */
    uint32_t *ppos;              /* [max_subs]: result positions of pending candidates */
    uint32_t *gsub;              /* [2 * max_subs]: subscriptions the gate removed from this PUBLISH */
    uint8_t *gwhy;               /* ... why: 1 too large, 2 QoS 0 to a detached session */
    uint32_t ngate;
    uint32_t npend;              /* ... of the PUBLISH being matched */
#ifdef WM_TEST_HOOKS
    void (*lookup_hook)(void *ctx); /* test builds only: wm_match_worker_set_lookup_hook */
    void *lookup_hook_ctx;
#endif
};

/* FNV-1a of a subscription key: a member's identity for hash picking that,
 * unlike a matcher id, survives reloads and re-subscriptions. */
static uint32_t key_hash(const char *k)
{
    uint32_t h = 2166136261u;
    for (; *k; k++) h = (h ^ (uint8_t)*k) * 16777619u;
    return h;
}

static uint32_t hash2(const char *a, size_t al, const char *b, size_t bl)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < al; i++) h = (h ^ (uint8_t)a[i]) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (size_t i = 0; i < bl; i++) h = (h ^ (uint8_t)b[i]) * 16777619u;
    return h;
}

static char *dupn(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n) memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

static void node_free(struct sub_node *n)
{
    free(n->client);
    free(n->filter);
    free(n->key);
    free(n->nbhd);
    free(n->xpath);
    free(n);
}

static void snap_retired(void *ctx, uint64_t arg)
{
    (void)arg;
    wm_content_snap_free(ctx);
}

/* Writer (lock held): the content counters of the current set. */
static void content_counts(struct wm_match_table *t, const wm_content *c)
{
    t->c.xpath_filters = wm_content_count(c);
    t->c.xpath_slots = wm_content_slots(c);
}

/* The table's content stats, for the counters' deltas across a call. */
static wm_content_stats content_stats(const wm_content *c)
{
    wm_content_stats st;
    wm_content_get_stats(c, &st);
    return st;
}

/* Writer (lock held): a reference to a filter text, validated now
 * (wm_content_ref: a compile, for the control thread) or left for the next
 * compile (wm_content_want: no compile, for a worker). When every slot is
 * live or waiting for its grace period, waits for one grace period (the
 * caller's reader is paused; other workers pass quiescent states between
 * bursts): a stall of one grace period, counted, instead of a refusal. */
static int content_ref(struct wm_match_table *t, wm_content *c, const char *x, size_t len, uint32_t *slot,
                       char *why, size_t whylen, bool validate)
{
    int (*take)(wm_content *, const char *, size_t, uint32_t *, char *, size_t) =
        validate ? wm_content_ref : wm_content_want;
    uint64_t cached = content_stats(c).room_cached;
    int rc = take(c, x, len, slot, why, whylen);
    if (rc == -2) {
        t->c.xpath_slot_waits++;
        wm_content_reclaim(c, true);
        rc = take(c, x, len, slot, why, whylen);
    }
    t->c.xpath_room_cached += content_stats(c).room_cached - cached;
    return rc ? -1 : 0;
}

/* Writer (lock held): the content filters changed; the compile thread is
 * woken by the changer once it has released the lock (wake_compiler). */
static void content_changed(struct wm_match_table *t) { atomic_store_explicit(&t->kick, true, memory_order_relaxed); }

static void wake_compiler(struct wm_match_table *t)
{
    if (!atomic_exchange_explicit(&t->kick, false, memory_order_relaxed)) return;
    pthread_mutex_lock(&t->work_mu);
    t->work = true;
    pthread_cond_signal(&t->work_cv);
    pthread_mutex_unlock(&t->work_mu);
}

/* After pending filters were settled (a compile or a reload): wakes the
 * workers waiting for one (wait mode). */
static void rounds_settled(struct wm_match_table *t)
{
    pthread_mutex_lock(&t->work_mu);
    atomic_fetch_add_explicit(&t->rounds, 1, memory_order_release);
    pthread_cond_broadcast(&t->done_cv);
    pthread_mutex_unlock(&t->work_mu);
}

/* Writer (lock held): the pending list. */
static void pend_link(struct wm_match_table *t, struct sub_node *n)
{
    n->pnext = t->pend;
    if (t->pend) t->pend->pprev = &n->pnext;
    n->pprev = &t->pend;
    t->pend = n;
    t->c.xpath_pending++;
}

/* Takes n off the pending list (if it is on it). */
static void pend_drop(struct wm_match_table *t, struct sub_node *n)
{
    if (!n->pprev) return;
    *n->pprev = n->pnext;
    if (n->pnext) n->pnext->pprev = n->pprev;
    n->pnext = NULL;
    n->pprev = NULL;
    t->c.xpath_pending--;
}

static void node_retired(void *ctx, uint64_t arg)
{
    (void)arg;
    node_free(ctx);
}

static void set_keys_free(void *p)
{
    struct set_keys *k = p;
    if (!k) return;
    for (uint32_t i = 0; i < k->n; i++) free(k->key[i]);
    free(k->key);
    free(k->key_hash);
    free(k);
}

/* Decodes the set's subscription ids (JSON text) into report keys. */
static int set_keys_attach(wm_tables *nt)
{
    struct set_keys *k = calloc(1, sizeof *k);
    size_t n = wm_tables_sub_count(nt);
    if (!k || !(k->key = calloc(n ? n : 1, sizeof *k->key)) || !(k->key_hash = calloc(n ? n : 1, sizeof *k->key_hash))) {
        if (k) free(k->key);
        free(k);
        return -1;
    }
    for (size_t i = 0; i < n; i++, k->n++) {
        const char *text = wm_tables_sub_id(nt, i);
        json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
        char num[32];
        const char *s = text;
        if (json_is_string(v)) s = json_string_value(v);
        else if (json_is_integer(v)) snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v)), s = num;
        k->key[i] = strdup(s);
        json_decref(v);
        if (!k->key[i]) {
            set_keys_free(k);
            return -1;
        }
        k->key_hash[i] = key_hash(k->key[i]);
    }
    wm_tables_set_user(nt, k, set_keys_free);
    return 0;
}

static uint32_t nbhd_id(const wm_tables *set, const char *name)
{
    return name ? wm_matcher_nbhd_find(wm_tables_matcher(set), name, strlen(name)) : WM_NBHD_NONE;
}

static wm_matcher_status node_add(wm_matcher *m, struct sub_node *n, uint32_t nbhd, uint32_t slot, uint32_t *sub)
{
    wm_sub_spec spec = {n->filter, strlen(n->filter), n->client, strlen(n->client), nbhd, n->qos, n->no_local != 0,
                        slot, WM_TABLES_COOKIE_EXT | (uint64_t)(uintptr_t)n};
    return wm_matcher_sub_add(m, &spec, sub, NULL);
}

/* Writer (lock held): the session record of a client, created if asked
 * (NULL: none, or out of memory). */
static struct client_rec *client_find(struct wm_match_table *t, const char *client, size_t cl, bool create)
{
    uint32_t h = hash2(client, cl, "", 0);
    struct client_rec **pp = &t->cbuckets[h & t->mask];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && strlen((*pp)->client) == cl && memcmp((*pp)->client, client, cl) == 0) return *pp;
    if (!create) return NULL;
    struct client_rec *r = calloc(1, sizeof *r);
    if (r && !(r->client = dupn(client, cl))) {
        free(r);
        r = NULL;
    }
    if (r) {
        r->hash = h;
        *pp = r;
    }
    return r;
}

/* Writer (lock held): frees r if it holds nothing (no subscription, no
 * connection, no expiry pending). */
static void client_gc(struct wm_match_table *t, struct client_rec *r)
{
    if (r->subs || r->conn_w || r->deadline_ns) return;
    struct client_rec **pp = &t->cbuckets[r->hash & t->mask];
    while (*pp != r) pp = &(*pp)->next;
    *pp = r->next;
    free(r->client);
    free(r);
}

static void client_link(struct client_rec *r, struct sub_node *n)
{
    r->trie_nodes += n->trie_charge;
    n->owner = r;
    n->cnext = r->subs;
    if (r->subs) r->subs->cprev = &n->cnext;
    n->cprev = &r->subs;
    r->subs = n;
}

static void client_unlink(struct sub_node *n)
{
    if (!n->cprev) return;
    if (n->owner) n->owner->trie_nodes -= n->trie_charge;
    *n->cprev = n->cnext;
    if (n->cnext) n->cnext->cprev = n->cprev;
    n->cnext = NULL;
    n->cprev = NULL;
}

/* Writer (lock held): node n's delivery gate (match_sink.h, "Deliveries"),
 * keeping the table's count of gated nodes. */
static void gate_set(struct wm_match_table *t, struct sub_node *n, uint32_t max_packet, bool offline)
{
    bool was = atomic_load_explicit(&n->gate_max, memory_order_relaxed) ||
               atomic_load_explicit(&n->gate_offline, memory_order_relaxed);
    atomic_store_explicit(&n->gate_max, max_packet, memory_order_relaxed);
    atomic_store_explicit(&n->gate_offline, offline, memory_order_relaxed);
    bool is = max_packet || offline;
    if (was != is) atomic_fetch_add_explicit(&t->gated, is ? 1 : (uint_fast32_t)-1, memory_order_relaxed);
}

/* Writer (lock held): the session's subscriptions, detached or back. */
static void gate_session(struct wm_match_table *t, struct client_rec *r, bool offline, const uint32_t *max_packet)
{
    for (struct sub_node *n = r->subs; n; n = n->cnext)
        gate_set(t, n, max_packet ? *max_packet : atomic_load_explicit(&n->gate_max, memory_order_relaxed),
                 offline);
}

/* A refusal that a bound of the table caused names the option that sets
 * it and its value: the matcher's text names only its config field
 * ("wildcard trie full (max_trie_nodes) [full_nodes]"). */
static int bound_hint(const struct wm_match_table *t, wm_load_error *err)
{
    static const struct { wm_matcher_status st; const char *opt; } bound[] = {
        {WM_MATCHER_E_FULL_NODES, "--max-trie-nodes"}, {WM_MATCHER_E_FULL_SUBS, "--max-subs"},
        {WM_MATCHER_E_FULL_FILTERS, "--max-subs"}, {WM_MATCHER_E_FULL_CLIENTS, "--max-subs"}};
    if (!err) return -1;
    size_t n = strlen(err->reason);
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++) {
        char tag[40];
        size_t k = (size_t)snprintf(tag, sizeof tag, "[%s]", wm_matcher_status_name(bound[i].st));
        if (n < k || strcmp(err->reason + n - k, tag) != 0) continue;
        uint32_t v = bound[i].st == WM_MATCHER_E_FULL_NODES ? t->max_trie_nodes : t->max_subs;
        snprintf(err->reason + n, sizeof err->reason - n, ": raise %s (now %u)", bound[i].opt, v);
        break;
    }
    return -1;
}

/* Writer, under the lock: node n's superseded flag set to `on`, keeping
 * the table's count. */
static void sup_set(struct wm_match_table *t, struct sub_node *n, bool on)
{
    if (atomic_load_explicit(&n->superseded, memory_order_relaxed) == on) return;
    atomic_store_explicit(&n->superseded, on, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->superseded, on ? 1 : (uint_fast32_t)-1, memory_order_relaxed);
}

/* Writer, under the lock: the flags of the chain n is on, after it changed. */
static void sup_chain(struct wm_match_table *t, struct sub_node *n)
{
    if (!n) return;
    while (n->older) n = n->older;
    for (; n; n = n->newer) sup_set(t, n, n->newer != NULL);
}

/* Compiles a new set, carries the learned subscriptions into it and
 * publishes it. Under reload_mu. */
static int load_set(struct wm_match_table *t, wm_load_error *err)
{
    wm_tables_paths paths = {t->res_path, t->subs_path, t->schemas_path};
    wm_tables *nt = wm_tables_compile_paths(wm_reload_config(t->rl), &paths, err);
    if (!nt) return bound_hint(t, err);
    wm_content *content = wm_tables_content(nt);
    wm_content_reuse_slots(content, wm_reload_config(t->rl)->qsbr, t->xpath_slots);
    if (set_keys_attach(nt) != 0) {
        wm_tables_free(nt);
        return wm_load_error_set(err, NULL, 0, "out of memory");
    }
    wm_matcher *m = wm_tables_matcher(nt);
    tlock(&t->lock);
    for (uint32_t b = 0; t->buckets && b <= t->mask; b++)
        for (struct sub_node *h = t->buckets[b]; h; h = h->next) {
          /* A key's chain (settle_chain): the reload validates every node, so
           * the newest valid one is the subscription in the new set and
           * replaces the older ones (drop 2). */
          struct sub_node *keep = NULL;
          for (struct sub_node *n = h; n; n = n->newer) {
            uint32_t nb = nbhd_id(nt, n->nbhd);
            n->drop = n->nbhd && nb == WM_NBHD_NONE;
            n->next_slot = 0;
            /* the filter is re-validated against the new registry: one that no
             * longer compiles drops the subscription, as a lost neighborhood does */
            char why[300];
            if (!n->drop && n->xpath &&
                content_ref(t, content, n->xpath, strlen(n->xpath), &n->next_slot, why, sizeof why, true)) {
                n->drop = 1;
                snprintf(t->last_xpath_error, sizeof t->last_xpath_error, "%s (reload, %s)", why, n->key);
            }
            if (!n->drop) keep = n;
          }
          for (struct sub_node *n = h; n; n = n->newer) {
            if (n->drop) continue;
            if (n != keep) { /* replaced by a newer valid one; its reference goes with the new set's first commit */
                n->drop = 2;
                if (n->next_slot) wm_content_unref(content, n->next_slot);
                n->next_slot = 0;
                continue;
            }
            uint32_t nb = nbhd_id(nt, n->nbhd);
            wm_matcher_status st = node_add(m, n, nb, n->next_slot, &n->next_sub);
            if (st != WM_MATCHER_OK) {
                tunlock(&t->lock);
                wm_tables_free(nt);
                wm_load_error_set(err, NULL, 0, "learned subscription %s (filter %s) does not fit the new tables: %s [%s]",
                                  n->key, n->filter, wm_matcher_status_message(st), wm_matcher_status_name(st));
                return bound_hint(t, err);
            }
          }
        }
    /* nobody reads the new set yet: its compile-time snapshot goes at once */
    wm_content_snap *first = NULL;
    char why[300];
    if (wm_content_commit(content, &first, why, sizeof why)) {
        tunlock(&t->lock);
        wm_tables_free(nt);
        return wm_load_error_set(err, NULL, 0, "learned content filters do not fit the new tables: %s", why);
    }
    wm_content_snap_free(first);
    if (wm_reload_publish(t->rl, nt) != 0) {
        tunlock(&t->lock);
        wm_tables_free(nt);
        return wm_load_error_set(err, NULL, 0, "out of memory");
    }
    t->cur = nt;
    /* Every carried filter was validated and is in the new set's snapshot.
     * A worker still on the old set keeps finding the ones pending there
     * pending (w_pending_apart asks the snapshot of the set it reads): the old
     * set never compiled them, and never will. */
    while (t->pend) pend_drop(t, t->pend);
    for (uint32_t b = 0; t->buckets && b <= t->mask; b++)
        for (struct sub_node **pp = &t->buckets[b]; *pp;) {
            struct sub_node *h = *pp, *keep = NULL, *next = h->next;
            bool replaced = false;
            for (struct sub_node *n = h, *nx; n; n = nx) {
                nx = n->newer;
                if (n->older) t->c.subs_replace_pending--; /* waited behind h */
                n->older = n->newer = NULL;
                sup_set(t, n, false);
                if (!n->drop) {
                    keep = n;
                    continue;
                }
                if (n->drop == 2) replaced = true;
                else t->c.reload_subs_dropped++;
                gate_set(t, n, 0, false);
                client_unlink(n);
                struct client_rec *r = n->owner;
                wm_retire_call(&t->node_retire, node_retired, n, 0);
                if (r) client_gc(t, r);
            }
            if (!keep) {
                *pp = next;
                t->c.subs_live--;
                continue;
            }
            if (replaced) t->c.subs_replaced++;
            keep->next = next;
            keep->sub = keep->next_sub;
            keep->slot = keep->next_slot;
            *pp = keep;
            pp = &keep->next;
        }
    t->c.nbhds = wm_tables_nbhd_count(nt);
    content_counts(t, content);
    t->c.subs_preloaded = wm_tables_sub_count(nt);
    t->c.generation = wm_reload_generation(t->rl);
    tunlock(&t->lock);
    rounds_settled(t);
    return 0;
}

struct wm_match_table *wm_match_table_new(const char *res_path, const char *subs_path, const char *schemas_path,
                                          uint32_t max_subs, wm_load_error *err)
{
    struct wm_match_bounds b = {.max_subs = max_subs};
    return wm_match_table_new_bounded(res_path, subs_path, schemas_path, &b, err);
}

void wm_match_bounds_resolve(struct wm_match_bounds *b)
{
    if (!b->max_trie_nodes)
        b->max_trie_nodes = b->max_subs > (1u << 28) / WM_MATCHER_TRIE_NODES_PER_FILTER
                                ? 1u << 28 : b->max_subs * WM_MATCHER_TRIE_NODES_PER_FILTER;
    if (!b->client_trie_nodes) {
        b->client_trie_nodes = b->max_trie_nodes / WM_MATCH_CLIENT_TRIE_SHARE;
        if (b->client_trie_nodes < WM_MATCH_CLIENT_TRIE_MIN) b->client_trie_nodes = WM_MATCH_CLIENT_TRIE_MIN;
    }
}

struct wm_match_table *wm_match_table_new_bounded(const char *res_path, const char *subs_path, const char *schemas_path,
                                                  const struct wm_match_bounds *bounds, wm_load_error *err)
{
    struct wm_match_bounds b = *bounds;
    wm_match_bounds_resolve(&b);
    uint32_t max_subs = b.max_subs;
    struct wm_match_table *t = calloc(1, sizeof *t);
    if (!t) {
        wm_load_error_set(err, NULL, 0, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&t->reload_mu, NULL);
    pthread_mutex_init(&t->work_mu, NULL);
    pthread_cond_init(&t->work_cv, NULL);
    pthread_cond_init(&t->done_cv, NULL);
    rte_spinlock_init(&t->lock);
    t->max_subs = max_subs;
    t->max_trie_nodes = b.max_trie_nodes;
    t->client_trie_nodes = b.client_trie_nodes;
    t->c.trie_nodes_max = b.max_trie_nodes;
    t->c.client_trie_nodes = b.client_trie_nodes;
    /* live filters <= subscriptions; the other half of the slots absorbs
     * those waiting for their grace period between two housekeeping runs */
    t->xpath_slots = max_subs > WM_CONTENT_MAX_SLOTS / 2 ? WM_CONTENT_MAX_SLOTS : 2 * max_subs;
    uint32_t nb = 16;
    while (nb < max_subs) nb <<= 1;
    t->buckets = calloc(nb, sizeof *t->buckets);
    t->cbuckets = calloc(nb, sizeof *t->cbuckets);
    t->mask = nb - 1;
    atomic_init(&t->next_deadline, UINT64_MAX);
    atomic_init(&t->gated, 0);
    atomic_init(&t->superseded, 0);
    wm_matcher_config cfg = {0};
    cfg.max_subs = max_subs;
    cfg.max_trie_nodes = b.max_trie_nodes;
    cfg.max_peids = 1u << 22;
    cfg.max_groups = t->max_groups = 4096;
    t->rl = wm_reload_new(&cfg);
    wm_retire_init(&t->node_retire, wm_reload_config(t->rl)->qsbr);
    t->res_path = res_path ? strdup(res_path) : NULL;
    t->subs_path = subs_path ? strdup(subs_path) : NULL;
    t->schemas_path = schemas_path ? strdup(schemas_path) : NULL;
    if (!t->buckets || !t->cbuckets || !t->rl || (res_path && !t->res_path) || (subs_path && !t->subs_path) ||
        (schemas_path && !t->schemas_path)) {
        wm_load_error_set(err, NULL, 0, "out of memory");
        wm_match_table_free(t);
        return NULL;
    }
    if (load_set(t, err) != 0) {
        wm_match_table_free(t);
        return NULL;
    }
    return t;
}

int wm_match_table_reload(struct wm_match_table *t, wm_load_error *err)
{
    wm_load_error local;
    if (!err) err = &local;
    pthread_mutex_lock(&t->reload_mu);
    int rc = load_set(t, err);
    tlock(&t->lock);
    if (rc == 0) t->c.reloads++;
    else t->c.reload_failures++;
    tunlock(&t->lock);
    if (rc != 0) t->last_error = *err;
    else wm_reload_reclaim(t->rl, true);
    pthread_mutex_unlock(&t->reload_mu);
    return rc;
}

void wm_match_table_housekeeping(struct wm_match_table *t)
{
    pthread_mutex_lock(&t->reload_mu);
    wm_reload_reclaim(t->rl, true);
    /* Workers waiting for this lock are paused, so the grace periods below
     * never wait for them. */
    tlock(&t->lock);
    if (t->cur) wm_matcher_reclaim(wm_tables_matcher(t->cur), true);
    wm_retire_reclaim(&t->node_retire, true);
    /* after the snapshots: a slot's grace period starts at the commit that dropped it */
    if (t->cur) wm_content_reclaim(wm_tables_content(t->cur), true);
    tunlock(&t->lock);
    pthread_mutex_unlock(&t->reload_mu);
}

void wm_match_table_set_share_policy(struct wm_match_table *t, enum wm_share_policy p) { t->share_policy = p; }

void wm_match_table_set_exi_mem_cap(struct wm_match_table *t, size_t bytes) { t->exi_mem_cap = bytes; }

void wm_match_table_set_xpath_slots(struct wm_match_table *t, uint32_t n)
{
    pthread_mutex_lock(&t->reload_mu);
    tlock(&t->lock);
    t->xpath_slots = n;
    wm_content_reuse_slots(wm_tables_content(t->cur), wm_reload_config(t->rl)->qsbr, n);
    tunlock(&t->lock);
    pthread_mutex_unlock(&t->reload_mu);
}

void wm_match_table_last_error(struct wm_match_table *t, wm_load_error *out)
{
    pthread_mutex_lock(&t->reload_mu);
    *out = t->last_error;
    pthread_mutex_unlock(&t->reload_mu);
}

void wm_match_table_last_xpath_error(struct wm_match_table *t, char *buf, size_t len)
{
    tlock(&t->lock);
    snprintf(buf, len, "%s", t->last_xpath_error);
    tunlock(&t->lock);
}

void wm_match_table_log_error(struct wm_match_table *t, char *buf, size_t len)
{
    tlock(&t->lock);
    snprintf(buf, len, "%s", t->log_error);
    tunlock(&t->lock);
}

void wm_match_table_free(struct wm_match_table *t)
{
    if (!t) return;
    wm_retire_fini(&t->node_retire);
    for (uint32_t b = 0; t->buckets && b <= t->mask; b++)
        for (struct sub_node *n = t->buckets[b], *nx; n; n = nx) {
            nx = n->next;
            node_free(n);
        }
    free(t->buckets);
    for (uint32_t b = 0; t->cbuckets && b <= t->mask; b++)
        for (struct client_rec *r = t->cbuckets[b], *nx; r; r = nx) {
            nx = r->next;
            free(r->client);
            free(r);
        }
    free(t->cbuckets);
    wm_reload_free(t->rl);
    free(t->res_path);
    free(t->subs_path);
    free(t->schemas_path);
    pthread_mutex_destroy(&t->reload_mu);
    pthread_cond_destroy(&t->work_cv);
    pthread_cond_destroy(&t->done_cv);
    pthread_mutex_destroy(&t->work_mu);
    free(t);
}

static struct sub_node **find_slot(struct wm_match_table *t, const char *client, size_t cl, const char *filter,
                                   size_t fl, uint32_t h)
{
    struct sub_node **pp = &t->buckets[h & t->mask];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && strlen((*pp)->client) == cl && memcmp((*pp)->client, client, cl) == 0 &&
            strlen((*pp)->filter) == fl && memcmp((*pp)->filter, filter, fl) == 0)
            return pp;
    return pp;
}

/* Writer, under the lock: takes node n out of the matcher, the pending
 * list, its session and its content filter, and retires it for a grace
 * period. Its key's chain (older/newer) is the caller's. */
static void node_unlink(struct wm_match_table *t, struct sub_node *n)
{
    wm_matcher_sub_remove(wm_tables_matcher(t->cur), n->sub);
    gate_set(t, n, 0, false);
    sup_set(t, n, false);
    pend_drop(t, n);
    client_unlink(n);
    if (n->slot) {
        /* the next compile leaves a filter without references out; until
         * then the removed subscription is unreachable anyway */
        wm_content_unref(wm_tables_content(t->cur), n->slot);
        content_changed(t);
        content_counts(t, wm_tables_content(t->cur));
    }
    wm_retire_call(&t->node_retire, node_retired, n, 0);
}

/* Writer, under the lock: takes node n out of its key's chain (the next
 * one, if n was the oldest, takes its place in the bucket) and unlinks it. */
static void node_take(struct wm_match_table *t, struct sub_node *n)
{
    struct sub_node *rest = n->older ? n->older : n->newer;
    if (rest) { /* the chain's nodes share one filter, so its trie charge stays with the client */
        rest->trie_charge += n->trie_charge;
        n->trie_charge = 0;
    }
    if (!n->older) {
        struct sub_node **pp = find_slot(t, n->client, strlen(n->client), n->filter, strlen(n->filter), n->hash);
        if (n->newer) {
            n->newer->older = NULL;
            n->newer->next = n->next;
            *pp = n->newer;
            t->c.subs_replace_pending--;
        } else {
            *pp = n->next;
        }
    } else {
        n->older->newer = n->newer;
        if (n->newer) n->newer->older = n->older;
        t->c.subs_replace_pending--;
    }
    n->older = n->newer = NULL;
    node_unlink(t, n);
    sup_chain(t, rest);
}

/* Writer, under the lock: removes the subscription of bucket slot pp with
 * the re-SUBSCRIBEs waiting behind it. */
static void remove_node(struct wm_match_table *t, struct sub_node **pp)
{
    struct sub_node *n = *pp;
    while (n->newer) node_take(t, n->newer);
    node_take(t, n);
    t->c.subs_live--;
    t->c.subs_removed++;
}

static char *make_key(const struct wm_mqtt_subscribe *s)
{
    char idbuf[16];
    const char *tail = (const char *)s->filter.p;
    size_t tl = s->filter.len;
    if (s->subscription_id) {
        tl = (size_t)snprintf(idbuf, sizeof idbuf, "%u", s->subscription_id);
        tail = idbuf;
    }
    char *k = malloc(s->client_len + 1 + tl + 1);
    if (k) {
        memcpy(k, s->client, s->client_len);
        k[s->client_len] = '#';
        memcpy(k + s->client_len + 1, tail, tl);
        k[s->client_len + 1 + tl] = 0;
    }
    return k;
}

/* A refused SUBSCRIBE replaces nothing (§3.8.4 replaces a subscription
 * with one that is made): the client's subscription of that filter, if
 * any, stays with its filters, as in the proxy, which answers the refusal
 * and keeps its record. Counted, since the old filters go on deciding. */
static void refused_kept(struct wm_match_table *t, const struct wm_mqtt_subscribe *s)
{
    uint32_t h = hash2(s->client, s->client_len, (const char *)s->filter.p, s->filter.len);
    if (*find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, h)) t->c.subs_refused_kept++;
}

static enum wm_mqtt_sub_status install(struct wm_match_table *t, const struct wm_mqtt_subscribe *s)
{
    uint32_t nbhd = WM_NBHD_NONE;
    wm_matcher *m = wm_tables_matcher(t->cur);
    /* Present is what counts, not the length: an empty `nbhd` names no
     * neighborhood and an empty `xpath` is no query (refused below as
     * wmctl match and the proxy refuse them), never "no filter". */
    if (s->nbhd.p) {
        nbhd = wm_matcher_nbhd_find(m, (const char *)s->nbhd.p, s->nbhd.len);
        if (nbhd == WM_NBHD_NONE) {
            refused_kept(t, s);
            return WM_MQTT_SUB_NBHD_UNKNOWN;
        }
    }
    wm_content *content = wm_tables_content(t->cur);
    uint32_t slot = 0;
    bool pending = false;
    if (s->xpath.p) {
        char why[300];
        const char *refused = NULL;
        /* No compile here (a worker must keep polling): a new text is
         * PENDING, validated and compiled by the compile thread
         * (wm_match_table_compile); a known one is settled already. A
         * refused filter is never installed (or is removed when its compile
         * refuses it): the subscriber must not receive everything. */
        if (content_ref(t, content, (const char *)s->xpath.p, s->xpath.len, &slot, why, sizeof why, false)) {
            refused = why;
        } else {
            enum wm_content_state cs = wm_content_state(content, slot, &refused);
            if (cs == WM_CONTENT_S_REFUSED) {
                snprintf(why, sizeof why, "%s", refused);
                wm_content_unref(content, slot);
                refused = why;
            }
            pending = cs == WM_CONTENT_S_PENDING;
        }
        if (refused) {
            snprintf(t->last_xpath_error, sizeof t->last_xpath_error, "%.*s: %s", (int)s->client_len, s->client, why);
            t->c.subs_xpath_refused++;
            refused_kept(t, s);
            return WM_MQTT_SUB_XPATH_INVALID;
        }
    }
    struct sub_node *n = calloc(1, sizeof *n);
    if (n) {
        n->client = dupn(s->client, s->client_len);
        n->filter = dupn(s->filter.p, s->filter.len);
        n->key = make_key(s);
        n->nbhd = s->nbhd.len ? dupn(s->nbhd.p, s->nbhd.len) : NULL;
        n->xpath = s->xpath.len ? dupn(s->xpath.p, s->xpath.len) : NULL;
        n->slot = slot;
        n->subid = s->subscription_id;
        n->qos = s->qos;
        n->no_local = s->no_local;
    }
    if (!n || !n->client || !n->filter || !n->key || (s->nbhd.len && !n->nbhd) || (s->xpath.len && !n->xpath)) {
        if (n) node_free(n);
        if (slot) wm_content_unref(content, slot);
        return WM_MQTT_SUB_REJECTED;
    }
    struct client_rec *rec = client_find(t, s->client, s->client_len, true);
    if (!rec) {
        node_free(n);
        if (slot) wm_content_unref(content, slot);
        return WM_MQTT_SUB_REJECTED;
    }
    n->key_hash = key_hash(n->key);
    n->hash = hash2(s->client, s->client_len, (const char *)s->filter.p, s->filter.len);
    struct sub_node **pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, n->hash);
    if (*pp && pending) {
        /* §3.8.4 replaces the subscription with one that is made: until its
         * compile accepts the filter, the one in force goes on deciding
         * (settle_chain) */
        struct sub_node *last = *pp;
        while (last->newer) last = last->newer;
        wm_matcher_status st = node_add(m, n, nbhd, slot, &n->sub);
        if (st != WM_MATCHER_OK) {
            node_free(n);
            wm_content_unref(content, slot);
            content_changed(t);
            if (st >= WM_MATCHER_E_FULL_SUBS && st <= WM_MATCHER_E_FULL_GROUPS) {
                t->c.subs_full++;
                return WM_MQTT_SUB_FULL;
            }
            return WM_MQTT_SUB_REJECTED;
        }
        last->newer = n;
        n->older = last;
        /* the filter of the one in force: no new trie node, no charge of
         * its own (node_take hands the chain's charge to its survivor) */
        n->trie_charge = 0;
        sup_chain(t, n);
        client_link(rec, n);
        gate_set(t, n, s->max_packet, rec->deadline_ns != 0);
        t->c.subs_replace_pending++;
        t->c.subs_xpath++;
        pend_link(t, n);
        content_changed(t);
        content_counts(t, content);
        return WM_MQTT_SUB_INSTALLED;
    }
    /* The client's share of the wildcard trie ("Bounds" in match_sink.h): a
     * subscription is charged the nodes its filter adds now, a replacement
     * (same filter, so the same nodes) inherits its predecessor's charge. */
    if (*pp) {
        n->trie_charge = (*pp)->trie_charge;
    } else {
        n->trie_charge = wm_matcher_trie_cost(m, (const char *)s->filter.p, s->filter.len);
        if (n->trie_charge && rec->trie_nodes + n->trie_charge > t->client_trie_nodes) {
            node_free(n);
            if (slot) wm_content_unref(content, slot);
            client_gc(t, rec);
            t->c.subs_quota++;
            return WM_MQTT_SUB_QUOTA;
        }
    }
    if (*pp) { /* §3.8.4: the new subscription replaces the existing one */
        remove_node(t, pp);
        t->c.subs_removed--;
        t->c.subs_replaced++;
        pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, n->hash);
    }
    /* Removed subscriptions (ended sessions) keep their ids until a grace
     * period passes: at the bound the matcher waits for it itself (this
     * worker's reader is paused; the others pass quiescent states between
     * bursts) rather than refuse, and says so in its grace_waits. */
    wm_matcher_stats ms;
    wm_matcher_stats_get(m, &ms);
    uint64_t waits = ms.grace_waits;
    wm_matcher_status st = node_add(m, n, nbhd, slot, &n->sub);
    wm_matcher_stats_get(m, &ms);
    if (ms.grace_waits != waits) t->c.subs_full_waits++;
    if (st != WM_MATCHER_OK) {
        node_free(n);
        if (slot) {
            wm_content_unref(content, slot);
            content_changed(t);
        }
        client_gc(t, rec);
        if (st == WM_MATCHER_E_FULL_NODES) { /* --max-trie-nodes */
            t->c.subs_trie_full++;
            return WM_MQTT_SUB_FULL;
        }
        if (st >= WM_MATCHER_E_FULL_SUBS && st <= WM_MATCHER_E_FULL_GROUPS) { /* a bound derived from max_subs */
            t->c.subs_full++;
            return WM_MQTT_SUB_FULL;
        }
        return WM_MQTT_SUB_REJECTED;
    }
    n->next = NULL;
    *pp = n;
    client_link(rec, n);
    gate_set(t, n, s->max_packet, rec->deadline_ns != 0);
    t->c.subs_live++;
    if (slot) t->c.subs_xpath++;
    if (pending) {
        pend_link(t, n);
        content_changed(t);
    }
    content_counts(t, content);
    return WM_MQTT_SUB_INSTALLED;
}

static void uninstall(struct wm_match_table *t, const struct wm_mqtt_subscribe *s)
{
    uint32_t h = hash2(s->client, s->client_len, (const char *)s->filter.p, s->filter.len);
    struct sub_node **pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, h);
    if (*pp) {
        struct client_rec *r = (*pp)->owner;
        remove_node(t, pp);
        if (r) client_gc(t, r);
    } else {
        t->c.unsub_unknown++;
    }
}

/* Writer (lock held): the client's session is gone (ended, expired, or
 * replaced by a new one): so are its subscriptions (MQTT 5.0 §4.1). */
static void session_drop(struct wm_match_table *t, struct client_rec *r)
{
    while (r->subs) {
        struct sub_node *n = r->subs;
        struct sub_node **pp = find_slot(t, n->client, strlen(n->client), n->filter, strlen(n->filter), n->hash);
        remove_node(t, pp);
        t->c.subs_removed--;
        t->c.subs_session_ended++;
    }
    r->n_qos2 = 0;
}

/* Writer (lock held): r is no longer detached. */
static void detach_clear(struct wm_match_table *t, struct client_rec *r)
{
    if (r->deadline_ns) t->c.sessions_detached--;
    r->deadline_ns = 0;
}

/* Writer (lock held): drops the detached sessions whose expiry passed at
 * packet time now_ns and recomputes the earliest deadline. A scan of the
 * sessions, run only when a deadline has passed. */
static void sessions_expire(struct wm_match_table *t, uint64_t now_ns)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t b = 0; b <= t->mask; b++)
        for (struct client_rec *r = t->cbuckets[b], *nx; r; r = nx) {
            nx = r->next;
            if (!r->deadline_ns) continue;
            if (r->deadline_ns > now_ns) {
                if (r->deadline_ns < next) next = r->deadline_ns;
                continue;
            }
            session_drop(t, r);
            detach_clear(t, r);
            t->c.sessions_expired++;
            client_gc(t, r);
        }
    atomic_store_explicit(&t->next_deadline, next, memory_order_relaxed);
}

/* Writer (lock held): one session event of worker w (mqtt_session.h). */
static void session_event(struct wm_match_table *t, const struct wm_match_worker *w,
                          const struct wm_mqtt_session_event *e)
{
    struct client_rec *r = client_find(t, e->client, e->client_len, e->kind != WM_MQTT_SESSION_END);
    if (!r) return;
    if (e->kind == WM_MQTT_SESSION_END) {
        /* A connection the session was taken from (§3.1.4-3: a new CONNECT
         * of the same client id) ends nothing. */
        if (r->conn_w != w || r->conn != e->conn) return;
        r->conn_w = NULL;
        if (e->expiry_s == 0) {
            session_drop(t, r);
            t->c.sessions_ended++;
        } else {
            r->deadline_ns = e->expiry_s == UINT32_MAX ? UINT64_MAX : e->now_ns + (uint64_t)e->expiry_s * 1000000000u;
            t->c.sessions_detached++;
            gate_session(t, r, true, NULL);
            r->n_qos2 = *e->n_qos2 < WM_MQTT_QOS2_INFLIGHT ? *e->n_qos2 : WM_MQTT_QOS2_INFLIGHT;
            memcpy(r->qos2, e->qos2, r->n_qos2 * sizeof *r->qos2);
            if (r->deadline_ns < atomic_load_explicit(&t->next_deadline, memory_order_relaxed))
                atomic_store_explicit(&t->next_deadline, r->deadline_ns, memory_order_relaxed);
        }
        client_gc(t, r);
        return;
    }
    detach_clear(t, r);
    r->conn_w = w;
    r->conn = e->conn;
    if (e->kind == WM_MQTT_SESSION_NEW) {
        if (r->subs) t->c.sessions_discarded++;
        session_drop(t, r);
    }
    gate_session(t, r, false, &e->max_packet); /* RESUME: back online, with this CONNECT's limit */
    if (e->kind == WM_MQTT_SESSION_RESUME && r->n_qos2) {
        memcpy(e->qos2, r->qos2, r->n_qos2 * sizeof *r->qos2);
        *e->n_qos2 = r->n_qos2;
        r->n_qos2 = 0;
    }
}

/* Writer (lock held): the nodes of one key, oldest first (h), after a
 * compile decided some of them (match_sink.h, "A re-SUBSCRIBE"). The newest
 * node in force or accepted (READY) is the subscription from now on: the
 * older ones it replaces go (§3.8.4), refused ones go with their reason,
 * and those still pending (their text came after the compile began) wait
 * behind it. With none accepted, the oldest still pending leads. */
static void settle_chain(struct wm_match_table *t, wm_content *c, struct sub_node *h)
{
    struct sub_node *keep = NULL;
    for (struct sub_node *x = h; x; x = x->newer) {
        const char *why;
        x->sstate = x->pprev ? (uint8_t)wm_content_state(c, x->slot, &why) : (uint8_t)WM_CONTENT_S_READY;
        if (x->sstate == WM_CONTENT_S_READY) keep = x;
    }
    bool replaced = keep && keep->older, before_keep = keep != NULL;
    for (struct sub_node *x = h, *nx; x; x = nx) {
        nx = x->newer;
        if (x == keep) {
            pend_drop(t, x);
            before_keep = false;
            continue;
        }
        if (before_keep) { /* replaced by keep, whatever its own state */
            if (x->sstate == WM_CONTENT_S_REFUSED) {
                t->c.subs_xpath--;
                t->c.subs_xpath_refused++;
            }
            node_take(t, x);
            continue;
        }
        if (x->sstate != WM_CONTENT_S_REFUSED) continue;
        const char *why;
        wm_content_state(c, x->slot, &why);
        snprintf(t->last_xpath_error, sizeof t->last_xpath_error, "%s: %s", x->client, why);
        /* A worker whose lookup returned the node before this removal
         * still finds it pending (the snapshot just published lacks the
         * refused text: wait mode waits for this round, then matches
         * without it; async skips it), never a candidate decided by a
         * refused filter (a replay's content_candidates then depended
         * on timing). */
        if (x->older) t->c.subs_refused_kept++; /* what it would have replaced stays in force */
        struct client_rec *r = x->owner;
        bool last = !x->older && !x->newer;
        node_take(t, x);
        if (last) t->c.subs_live--;
        if (r) client_gc(t, r);
        t->c.subs_xpath--;
        t->c.subs_xpath_refused++;
    }
    if (replaced) t->c.subs_replaced++;
}

/* Writer (lock held), after a compile: the pending subscriptions whose
 * filter it validated become visible (READY) or are removed (REFUSED, with
 * the reason); those whose text came after the compile began stay. Each
 * key's nodes are settled together (settle_chain), once: the chains are
 * gathered first, since settling one removes nodes from the pending list. */
static void settle_pending(struct wm_match_table *t, wm_content *c)
{
    struct sub_node *todo = NULL;
    for (struct sub_node *n = t->pend; n; n = n->pnext) {
        const char *why;
        if (wm_content_state(c, n->slot, &why) == WM_CONTENT_S_PENDING) continue;
        struct sub_node *h = n;
        while (h->older) h = h->older;
        if (h->smark) continue;
        h->smark = 1;
        h->snext = todo;
        todo = h;
    }
    while (todo) {
        struct sub_node *h = todo;
        todo = h->snext;
        h->smark = 0;
        h->snext = NULL;
        settle_chain(t, c, h);
    }
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int wm_match_table_compile(struct wm_match_table *t)
{
    pthread_mutex_lock(&t->reload_mu); /* the current set stays while its job runs */
    tlock(&t->lock);
    wm_content *c = wm_tables_content(t->cur);
    int rc;
    wm_content_job *j = wm_content_job_begin(c, &rc);
    tunlock(&t->lock);
    if (!j) {
        pthread_mutex_unlock(&t->reload_mu);
        return rc;
    }
    if (t->hook) t->hook(t->hook_ctx, false);
    uint64_t t0 = mono_ns();
    wm_content_job_run(j); /* the heavy part, with no lock: workers go on */
    uint64_t us = (mono_ns() - t0) / 1000;
    if (t->hook) t->hook(t->hook_ctx, true);
    tlock(&t->lock);
    wm_content_snap *old = NULL;
    char why[300];
    uint64_t builds = content_stats(c).builds;
    rc = wm_content_job_end(c, j, &old, why, sizeof why);
    t->c.xpath_set_builds += content_stats(c).builds - builds;
    if (old) wm_retire_call(&t->node_retire, snap_retired, old, 0);
    settle_pending(t, c);
    if (rc == 0) t->c.xpath_compiles++;
    else t->c.xpath_compile_failures++;
    t->c.xpath_compile_us_last = us;
    if (us > t->c.xpath_compile_us_max) t->c.xpath_compile_us_max = us;
    content_counts(t, c);
    tunlock(&t->lock);
    pthread_mutex_unlock(&t->reload_mu);
    rounds_settled(t);
    return rc ? -1 : 1;
}

void wm_match_table_wait_work(struct wm_match_table *t, unsigned timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    ts.tv_sec += timeout_ms / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&t->work_mu);
    while (!t->work)
        if (pthread_cond_timedwait(&t->work_cv, &t->work_mu, &ts) != 0) break;
    t->work = false;
    pthread_mutex_unlock(&t->work_mu);
}

void wm_match_table_set_compile_hook(struct wm_match_table *t, void (*fn)(void *ctx, bool done), void *ctx)
{
    t->hook = fn;
    t->hook_ctx = ctx;
}

void wm_match_table_counters(struct wm_match_table *t, struct wm_match_counters *out)
{
    tlock(&t->lock);
    *out = t->c;
    if (t->cur) {
        wm_matcher_stats ms;
        wm_matcher_stats_get(wm_tables_matcher(t->cur), &ms);
        out->trie_nodes = ms.trie_nodes;
    }
    tunlock(&t->lock);
}

uint64_t wm_match_table_visit(struct wm_match_table *t, unsigned max,
                              void (*fn)(void *ctx, const char *key, const char *client, const char *filter),
                              void *ctx)
{
    unsigned n = 0;
    tlock(&t->lock);
    for (uint32_t b = 0; b <= t->mask && n < max; b++)
        for (struct sub_node *x = t->buckets[b]; x && n < max; x = x->next, n++) fn(ctx, x->key, x->client, x->filter);
    uint64_t live = t->c.subs_live;
    tunlock(&t->lock);
    return live;
}

/* ------------------------------------------------------------ worker side */

/* Follows the content snapshot of the attached set. Called where the
 * current snapshot cannot be freed before the worker's next quiescent
 * state: online (after the quiescent state of a burst end, or within a
 * burst), or under the writer lock. The snapshot the worker held may be
 * gone (it passed a quiescent state or was offline since) and its address
 * taken by a newer one: the identity decides, and the old reader is freed
 * without touching its snapshot. */
static void content_attach(struct wm_match_worker *w)
{
    const wm_content_snap *s = w->tables ? wm_content_current(wm_tables_content(w->tables)) : NULL;
    uint64_t id = wm_content_snap_id(s);
    if (s == w->csnap && id == w->csnap_id) return;
    wm_content_reader_free(w->creader);
    w->creader = s ? wm_content_reader_new(s, &(wm_exi_limits){ .mem_cap = w->t->exi_mem_cap }) : NULL;
    w->csnap = s;
    w->csnap_id = id;
}

static void attach(struct wm_match_worker *w);

/* After its own subscription change the worker attaches to the current set:
 * a reload published just before took the change into a set the worker
 * would otherwise read only from its next burst, so a PUBLISH later in
 * this burst would miss it. It holds nothing from a lookup here (results
 * are consumed within w_publish). */
static enum wm_mqtt_sub_status w_subscribe(void *ctx, const struct wm_mqtt_subscribe *s)
{
    struct wm_match_worker *w = ctx;
    wm_reload_reader_pause(w->rd);
    tlock(&w->t->lock);
    enum wm_mqtt_sub_status st = install(w->t, s);
    content_attach(w);
    tunlock(&w->t->lock);
    wake_compiler(w->t);
    wm_reload_reader_resume(w->rd);
    attach(w);
    return st;
}

static void w_unsubscribe(void *ctx, const struct wm_mqtt_subscribe *s)
{
    struct wm_match_worker *w = ctx;
    wm_reload_reader_pause(w->rd);
    tlock(&w->t->lock);
    uninstall(w->t, s);
    content_attach(w);
    tunlock(&w->t->lock);
    wake_compiler(w->t);
    wm_reload_reader_resume(w->rd);
    attach(w);
}

static void w_session(void *ctx, const struct wm_mqtt_session_event *e)
{
    struct wm_match_worker *w = ctx;
    wm_reload_reader_pause(w->rd);
    tlock(&w->t->lock);
    session_event(w->t, w, e);
    content_attach(w);
    tunlock(&w->t->lock);
    wake_compiler(w->t);
    wm_reload_reader_resume(w->rd);
    attach(w);
}

static void json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fputc('\\', f), fputc(c, f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The report key of a matched subscription of the attached set, and its
 * member hash (*h, if h is not NULL). */
static const char *sub_key(const struct wm_match_worker *w, uint32_t sub, uint32_t *h)
{
    uint64_t cookie = wm_matcher_sub_cookie(wm_tables_matcher(w->tables), sub);
    if (cookie & WM_TABLES_COOKIE_EXT) {
        const struct sub_node *n = (const struct sub_node *)(uintptr_t)(cookie & ~WM_TABLES_COOKIE_EXT);
        if (h) *h = n->key_hash;
        return n->key;
    }
    const struct set_keys *k = wm_tables_user(w->tables);
    if (cookie >= k->n) {
        if (h) *h = 0;
        return "?";
    }
    if (h) *h = k->key_hash[cookie];
    return k->key[cookie];
}

/* The member of a matched $share group that receives the message
 * (match_sink.h, "Shared subscriptions"). */
static const char *share_member(struct wm_match_worker *w, const wm_match_group *g, const struct wm_mqtt_publish *p)
{
    const uint32_t *m = w->res.members + g->first;
    uint32_t i;
    if (w->t->share_policy == WM_SHARE_HASH) {
        for (uint32_t k = 0; k < g->count; k++) sub_key(w, m[k], &w->member_hash[k]);
        i = wm_share_pick_hash(p->client, p->client_len, w->member_hash, g->count);
    } else {
        i = wm_share_pick_rr(&w->rr[g->group < w->t->max_groups ? g->group : 0], g->count);
    }
    return sub_key(w, m[i], NULL);
}

static void count_content(struct wm_match_counters *c, enum wm_content_outcome o)
{
    switch (o) {
    case WM_CONTENT_OK: c->content_decoded++; break;
    case WM_CONTENT_NO_CONTENT_TYPE: c->content_no_content_type++; break;
    case WM_CONTENT_NOT_EXI: c->content_not_exi++; break;
    case WM_CONTENT_BAD_CONTENT_TYPE: c->content_bad_content_type++; break;
    case WM_CONTENT_UNKNOWN_SCHEMA: c->content_unknown_schema++; break;
    case WM_CONTENT_NOT_APPLICABLE: c->content_no_filter_for_schema++; break;
    case WM_CONTENT_DECODE_ERROR: c->content_decode_error++; break;
    default: c->content_value_too_large++; break;
    }
}

/* A content-filtered candidate at result position pos, gathered for
 * w_pending_apart. */
static inline void w_candidate(struct wm_match_worker *w, const wm_matcher *m, uint32_t sub, uint32_t pos,
                               uint32_t *nc)
{
    uint32_t slot = wm_matcher_sub_content(m, sub);
    if (slot) w->cslot[*nc] = slot, w->cpos[(*nc)++] = pos;
}

/* Sets apart (into ppos) the candidates cslot[0..*nc) whose filter is still
 * pending for this worker: the content snapshot of the set it reads does
 * not have it. That is the one answer that follows the set: a reload may
 * have carried the subscription into a newer set whose snapshot has the
 * filter while this worker still reads the old one, which never compiled
 * it (and a state kept per subscription, shared by both sets, would have
 * said "compiled" here). Preloaded filters are in every snapshot of their
 * set. First follows the set's current snapshot (a compile may have
 * published one since the worker's burst began; it cannot be freed before
 * the worker's next quiescent state). */
static void w_pending_apart(struct wm_match_worker *w, uint32_t *nc)
{
    content_attach(w);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < *nc; k++) {
        if (!wm_content_snap_has(w->csnap, w->cslot[k])) {
            w->ppos[w->npend++] = w->cpos[k];
            continue;
        }
        w->cslot[kept] = w->cslot[k];
        w->cpos[kept++] = w->cpos[k];
    }
    *nc = kept;
}

/* Decides the candidates cslot[0..nc) with one decode of the payload;
 * marks the failures in cdrop. */
static void w_decide(struct wm_match_worker *w, const struct wm_mqtt_publish *p, uint32_t nc)
{
    w->had_content = true;
    w->c.content_pubs++;
    w->c.content_candidates += nc;
    const wm_mqtt5_props *pr = &p->pkt->props;
    bool has_ct = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_CONTENT_TYPE);
    const wm_mqtt5_bytes *ct = &pr->v[WM_MQTT5_PROP_CONTENT_TYPE].s;
    memset(&w->cerr, 0, sizeof w->cerr);
    w->cconflict = NULL;
    if (w->creader) {
        w->cout = wm_content_match(w->creader, has_ct ? (const char *)ct->p : NULL, has_ct ? ct->len : 0,
                                   p->pkt->payload.p, p->pkt->payload.len, w->cslot, nc, w->cpass, &w->cerr);
        /* decoded by its header all the same (§5.4): counted, and named in
         * the match log with the publisher and topic */
        if ((w->cconflict = wm_content_reader_conflict(w->creader))) w->c.content_header_conflicts++;
    } else { /* no snapshot reader (out of memory at the last change): nobody passes */
        for (uint32_t k = 0; k < nc; k++) w->cpass[k] = false;
        w->cout = WM_CONTENT_TOO_LARGE;
        snprintf(w->cerr.msg, sizeof w->cerr.msg, "no content filter context (out of memory)");
    }
    count_content(&w->c, w->cout);
    for (uint32_t k = 0; k < nc; k++) {
        w->cdrop[w->cpos[k]] = !w->cpass[k];
        w->c.content_passed += w->cpass[k];
    }
}

/* Removes from the result the positions marked in cdrop (subscriptions
 * 0..n_subs, then shared members), keeping each group's remaining members
 * together (a group left with none is gone), and clears the marks. */
static void w_compact(struct wm_match_worker *w)
{
    wm_match_result *r = &w->res;
    uint8_t *drop = w->cdrop;
    uint32_t ns = 0;
    for (uint32_t i = 0; i < r->n_subs; i++) {
        if (!drop[i]) r->subs[ns++] = r->subs[i];
        drop[i] = 0;
    }
    uint32_t nm = 0, ng = 0;
    for (uint32_t g = 0; g < r->n_groups; g++) {
        wm_match_group grp = r->groups[g];
        uint32_t first = nm;
        for (uint32_t j = grp.first; j < grp.first + grp.count; j++) {
            if (!drop[r->n_subs + j]) r->members[nm++] = r->members[j];
            drop[r->n_subs + j] = 0;
        }
        if (nm > first) r->groups[ng++] = (wm_match_group){grp.group, first, nm - first};
    }
    r->n_subs = ns;
    r->n_members = nm;
    r->n_groups = ng;
}

static uint32_t vbi_len(uint64_t n) { return n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : 4; }

/* The delivery gate (match_sink.h, "Deliveries"): what the broker would
 * not send a matched subscriber, taken off the result before a shared
 * group picks its member (as the content stage does):
 *   - a message over the subscriber's Maximum Packet Size (§3.1.2.11.4,
 *     [MQTT-3.1.2-25]: the broker discards it), its size as the broker
 *     forwards it: the full topic (no Topic Alias), a packet identifier if
 *     the delivered QoS (min of the publication's and the granted one) is
 *     not 0, the publication's properties (a Will's without its Will Delay
 *     Interval) plus the subscriber's Subscription Identifier;
 *   - a QoS 0 delivery to a detached session (client away, session not
 *     expired): brokers do not queue QoS 0 for it (mosquitto's
 *     queue_qos0_messages is false by default).
 * Only learned subscriptions have a gate (preloaded ones belong to no
 * session). */
static void w_gate(struct wm_match_worker *w, const wm_matcher *m, const struct wm_mqtt_publish *p)
{
    const wm_mqtt5_packet *pk = p->pkt;
    uint64_t props = pk->props.raw.len;
    if (wm_mqtt5_props_has(&pk->props, WM_MQTT5_PROP_TOPIC_ALIAS)) props -= 3;
    if (p->will && wm_mqtt5_props_has(&pk->props, WM_MQTT5_PROP_WILL_DELAY_INTERVAL)) props -= 5;
    uint64_t base = 2 + (uint64_t)p->topic_len + pk->payload.len;
    wm_match_result *r = &w->res;
    uint32_t n = r->n_subs + r->n_members, dropped = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sub = i < r->n_subs ? r->subs[i] : r->members[i - r->n_subs];
        uint64_t cookie = wm_matcher_sub_cookie(m, sub);
        if (!(cookie & WM_TABLES_COOKIE_EXT)) continue;
        const struct sub_node *nd = (const struct sub_node *)(uintptr_t)(cookie & ~WM_TABLES_COOKIE_EXT);
        uint32_t max = atomic_load_explicit(&nd->gate_max, memory_order_relaxed);
        bool offline = atomic_load_explicit(&nd->gate_offline, memory_order_relaxed);
        uint8_t qos = pk->qos < nd->qos ? pk->qos : nd->qos;
        uint8_t why = 0;
        if (offline && qos == 0) {
            why = 2;
            w->c.deliveries_qos0_offline++;
        } else if (max) {
            uint64_t pl = props + (nd->subid ? 1 + vbi_len(nd->subid) : 0);
            uint64_t rem = base + (qos ? 2 : 0) + vbi_len(pl) + pl;
            if (1 + vbi_len(rem) + rem > max) {
                why = 1;
                w->c.deliveries_too_large++;
            }
        }
        if (!why) continue;
        w->cdrop[i] = 1;
        w->gsub[w->ngate] = sub;
        w->gwhy[w->ngate++] = why;
        dropped++;
    }
    if (dropped) w_compact(w);
}

/* A retained message the broker sent a subscriber for its new subscription
 * (mqtt_session.h, "Retained messages"): of what matched it, only that
 * subscriber's own learned subscriptions are its receivers, and of those
 * only the one its Subscription Identifier names when it carries one;
 * shared subscriptions receive no retained messages (MQTT 5.0 §4.8.2). */
static void w_retained_only(struct wm_match_worker *w, const wm_matcher *m, const struct wm_mqtt_publish *p)
{
    const wm_mqtt5_props *pr = &p->pkt->props;
    bool has_id = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER);
    uint32_t id = has_id ? pr->v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u : 0;
    wm_match_result *r = &w->res;
    uint32_t n = r->n_subs + r->n_members, dropped = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool keep = false;
        uint64_t cookie = i < r->n_subs ? wm_matcher_sub_cookie(m, r->subs[i]) : 0;
        if (cookie & WM_TABLES_COOKIE_EXT) {
            const struct sub_node *nd = (const struct sub_node *)(uintptr_t)(cookie & ~WM_TABLES_COOKIE_EXT);
            keep = strlen(nd->client) == p->client_len && memcmp(nd->client, p->client, p->client_len) == 0 &&
                   (!has_id || nd->subid == id);
        }
        if (keep) continue;
        w->cdrop[i] = 1;
        dropped++;
    }
    if (dropped) w_compact(w);
}

/* The content stage (ARCHITECTURE.md §3): the subscriptions and shared
 * members that survived topic and spatial matching and carry a content
 * filter are decided by ONE decode of the payload with the schema its
 * Content Type names; those that fail are removed from the result. Without
 * such a candidate nothing is decoded. A publication without a usable
 * Content Type or with a bad payload reaches none of them (counted by
 * reason). A candidate whose filter is still pending (match_sink.h, "When a
 * new content filter applies") is not reached, counted; in wait mode the
 * function returns false instead, deciding nothing, and the caller waits
 * for the compile and matches again. */
/* Wait mode: whether the result holds a subscription a re-SUBSCRIBE waits
 * behind (match_sink.h, "A re-SUBSCRIBE"): which of the two decides is
 * known at the newer one's compile, so the PUBLISH waits for it as for a
 * pending filter. Read after the lookup: a compile that settled the pair
 * in between left the flag set on the replaced node (or cleared it on the
 * one a refusal keeps, whose lookup also returned the refused newer one,
 * pending for this worker), so the worker waits and matches again. */
static bool w_superseded(struct wm_match_worker *w, const wm_matcher *m)
{
    const wm_match_result *r = &w->res;
    for (uint32_t i = 0; i < r->n_subs + r->n_members; i++) {
        uint64_t cookie = wm_matcher_sub_cookie(m, i < r->n_subs ? r->subs[i] : r->members[i - r->n_subs]);
        if (!(cookie & WM_TABLES_COOKIE_EXT)) continue;
        const struct sub_node *nd = (const struct sub_node *)(uintptr_t)(cookie & ~WM_TABLES_COOKIE_EXT);
        if (atomic_load_explicit(&nd->superseded, memory_order_relaxed)) return true;
    }
    return false;
}

static bool w_content(struct wm_match_worker *w, const wm_matcher *m, const struct wm_mqtt_publish *p)
{
    wm_match_result *r = &w->res;
    uint32_t nc = 0;
    w->had_content = false;
    w->npend = 0;
    if (w->wait && atomic_load_explicit(&w->t->superseded, memory_order_relaxed) && w_superseded(w, m)) return false;
    for (uint32_t i = 0; i < r->n_subs; i++) w_candidate(w, m, r->subs[i], i, &nc);
    for (uint32_t j = 0; j < r->n_members; j++) w_candidate(w, m, r->members[j], r->n_subs + j, &nc);
    if (!nc) return true;
    w_pending_apart(w, &nc);
    if (w->npend && w->wait) return false;
    uint8_t *drop = w->cdrop;
    for (uint32_t k = 0; k < w->npend; k++) drop[w->ppos[k]] = 1;
    w->c.content_pending += w->npend;
    if (nc) w_decide(w, p, nc);
    w_compact(w); /* remove what failed or is pending */
    return true;
}

/* Wait mode: a candidate's filter was pending when the worker had seen
 * `round` compile rounds settled. Waits, holding nothing from the lookup
 * and with its reader paused (grace periods go on), until a later round has
 * settled (a compile, or a reload, which validates every learned filter),
 * then follows the current set; the caller matches again. A round that did
 * not take this filter (it came after the round began) makes the caller
 * wait once more. The round is sure to come: the caller read `round`, THEN
 * followed the current set and its snapshot (w_publish), and whatever
 * settles a filter publishes (a snapshot that has it, a set that carries
 * it, a matcher without its refused subscription) before the count moves;
 * so a filter pending there is settled by a round after `round`. */
static void wait_compile(struct wm_match_worker *w, uint64_t round)
{
    struct wm_match_table *t = w->t;
    w->c.content_waits++;
    wm_reload_reader_pause(w->rd);
    pthread_mutex_lock(&t->work_mu);
    while (atomic_load_explicit(&t->rounds, memory_order_acquire) == round)
        pthread_cond_wait(&t->done_cv, &t->work_mu);
    pthread_mutex_unlock(&t->work_mu);
    wm_reload_reader_resume(w->rd);
    attach(w);
}

static enum wm_mqtt_pub_outcome w_publish(void *ctx, const struct wm_mqtt_publish *p)
{
    struct wm_match_worker *w = ctx;
    wm_match_str peids[WM_MQTT_MAX_PEIDS];
    for (uint32_t i = 0; i < p->n_peids; i++) {
        peids[i].s = (const char *)p->peids[i].p;
        peids[i].len = p->peids[i].len;
    }
    w->c.lookups++;
    for (;;) {
        /* Wait mode: the round count, then the current set (a reload may
         * have published one since the burst began), so that a filter
         * pending in it is settled by a later round (see wait_compile).
         * Async mode follows sets at burst ends only. */
        uint64_t round = 0;
        if (w->wait) {
            round = atomic_load_explicit(&w->t->rounds, memory_order_acquire);
            attach(w);
        }
        if (!w->r) {
            w->c.lookup_errors++;
            return WM_MQTT_PUB_MATCH_ERROR;
        }
        /* wm_matcher_lookup_str's checks, then its peid lookups through the
         * worker's cache and the lookup by ids. */
        const wm_matcher *m = wm_tables_matcher(w->tables);
        uint32_t ids[WM_MQTT_MAX_PEIDS];
        wm_matcher_status st = p->topic_len == 0 ? WM_MATCHER_E_INVALID_TOPIC : WM_MATCHER_OK;
        for (uint32_t i = 0; st == WM_MATCHER_OK && i < p->n_peids; i++) {
            if (peids[i].len == 0) st = WM_MATCHER_E_BAD_PEID;
            else ids[i] = wm_peid_cache_find(w->peids, m, peids[i].s, peids[i].len);
        }
        if (st == WM_MATCHER_OK) {
            /* a retained message's publisher is not known here (No Local does not apply) */
            wm_match_pub pub = {p->topic, p->topic_len, ids, p->n_peids, p->retained ? NULL : p->client,
                                p->retained ? 0 : p->client_len};
            st = wm_matcher_lookup(w->r, &pub, &w->res);
        }
        if (st != WM_MATCHER_OK) {
            w->c.lookup_errors++;
            return WM_MQTT_PUB_MATCH_ERROR;
        }
#ifdef WM_TEST_HOOKS
        /* A pause point for race tests; the production objects have no
         * branch here (match_sink.h). */
        if (w->lookup_hook) w->lookup_hook(w->lookup_hook_ctx);
#endif
        if (w_content(w, m, p)) break;
        wait_compile(w, round);
    }
    w->ngate = 0;
    /* a retained message was sent: observed, not a delivery to decide */
    if (p->retained) w_retained_only(w, wm_tables_matcher(w->tables), p);
    else if (atomic_load_explicit(&w->t->gated, memory_order_relaxed)) w_gate(w, wm_tables_matcher(w->tables), p);
    /* Without a log only the outcome is needed: any subscription or shared
     * group reached means matched, so the keys are not gathered or sorted. */
    if (!w->log) return w->res.n_subs || w->res.n_groups ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH;
    uint32_t nk = 0;
    for (uint32_t i = 0; i < w->res.n_subs; i++) w->keys[nk++] = sub_key(w, w->res.subs[i], NULL);
    /* A shared subscription group delivers to one member. */
    for (uint32_t g = 0; g < w->res.n_groups; g++) w->keys[nk++] = share_member(w, &w->res.groups[g], p);
    if (nk > 1) qsort(w->keys, nk, sizeof *w->keys, cmp_str);
    uint32_t u = 0;
    for (uint32_t i = 0; i < nk; i++)
        if (u == 0 || strcmp(w->keys[u - 1], w->keys[i]) != 0) w->keys[u++] = w->keys[i];
    if (w->log) {
        fprintf(w->log, "{\"seq\": %llu, %s\"client\": ", (unsigned long long)p->seq,
                p->will ? "\"will\": true, " : p->retained ? "\"retained\": true, " : "");
        json_str(w->log, p->client, p->client_len);
        fputs(", \"topic\": ", w->log);
        json_str(w->log, p->topic, p->topic_len);
        fputs(", \"peids\": [", w->log);
        for (uint32_t i = 0; i < p->n_peids; i++) {
            if (i) fputs(", ", w->log);
            json_str(w->log, peids[i].s, peids[i].len);
        }
        fputs("], \"matched\": [", w->log);
        for (uint32_t i = 0; i < u; i++) {
            if (i) fputs(", ", w->log);
            json_str(w->log, w->keys[i], strlen(w->keys[i]));
        }
        fputc(']', w->log);
        /* the subscriptions the broker does not send it, by reason */
        for (uint8_t why = 1; w->ngate && why <= 2; why++) {
            uint32_t ng = 0;
            for (uint32_t i = 0; i < w->ngate; i++)
                if (w->gwhy[i] == why) w->keys[ng++] = sub_key(w, w->gsub[i], NULL);
            if (!ng) continue;
            if (ng > 1) qsort(w->keys, ng, sizeof *w->keys, cmp_str);
            fputs(why == 1 ? ", \"too_large_for\": [" : ", \"qos0_not_queued_for\": [", w->log);
            for (uint32_t i = 0; i < ng; i++) {
                if (i) fputs(", ", w->log);
                json_str(w->log, w->keys[i], strlen(w->keys[i]));
            }
            fputc(']', w->log);
        }
        if (w->npend) fprintf(w->log, ", \"content_pending\": %u", w->npend);
        if (w->had_content) {
            /* only when a candidate had a content filter: what its stage concluded */
            fprintf(w->log, ", \"content\": \"%s\"", wm_content_outcome_name(w->cout));
            if (w->cconflict) {
                fputs(", \"content_warning\": ", w->log);
                json_str(w->log, w->cconflict, strlen(w->cconflict));
            }
            if (w->cout == WM_CONTENT_BAD_CONTENT_TYPE) {
                fputs(", \"content_error\": ", w->log);
                json_str(w->log, w->cerr.msg, strnlen(w->cerr.msg, sizeof w->cerr.msg));
            } else if (w->cout == WM_CONTENT_DECODE_ERROR || w->cout == WM_CONTENT_TOO_LARGE) {
                char msg[sizeof w->cerr.msg + 32];
                int k = snprintf(msg, sizeof msg, "%s at bit %llu", w->cerr.msg, (unsigned long long)w->cerr.bit_pos);
                fputs(", \"content_error\": ", w->log);
                json_str(w->log, msg, k > 0 ? ((size_t)k < sizeof msg ? (size_t)k : sizeof msg - 1) : 0);
            }
        }
        fputs("}\n", w->log);
        w->c.log_lines++;
    }
    return u ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH;
}

/* Attaches to the current set if a reload published one. */
static void attach(struct wm_match_worker *w)
{
    const wm_tables *set = NULL;
    wm_matcher_reader *r = wm_reload_reader_acquire(w->rd, &set);
    if (r) {
        /* A new set is a new matcher (its peid ids differ), possibly at the
         * address of a freed one: the cache must not outlive the switch. */
        if (set != w->tables) wm_peid_cache_reset(w->peids);
        w->r = r;
        w->tables = set;
    }
    content_attach(w);
}

struct wm_match_worker *wm_match_worker_new(struct wm_match_table *t, const char *log_path, char *err, size_t errlen)
{
    struct wm_match_worker *w = calloc(1, sizeof *w);
    if (!w) goto nomem;
    w->t = t;
    uint32_t cap = t->max_subs;
    w->res.subs = malloc(sizeof(uint32_t) * cap);
    w->res.subs_cap = cap;
    w->res.members = malloc(sizeof(uint32_t) * cap);
    w->res.members_cap = cap;
    w->res.groups = malloc(sizeof(wm_match_group) * cap);
    w->res.groups_cap = cap;
    w->keys = malloc(sizeof(char *) * 2 * (size_t)cap);
    w->member_hash = malloc(sizeof(uint32_t) * cap);
    w->rr = calloc(t->max_groups, sizeof(uint32_t));
    /* 64-byte aligned: each two-way set of the cache is then one line. */
    w->peids = aligned_alloc(64, (sizeof *w->peids + 63) & ~(size_t)63);
    if (w->peids) memset(w->peids, 0, sizeof *w->peids);
    w->cslot = malloc(sizeof(uint32_t) * cap);
    w->cpos = malloc(sizeof(uint32_t) * cap);
    w->cpass = malloc(sizeof(bool) * cap);
    w->cdrop = calloc(2 * (size_t)cap, 1);
    w->ppos = malloc(sizeof(uint32_t) * cap);
    w->gsub = malloc(sizeof(uint32_t) * 2 * (size_t)cap);
    w->gwhy = malloc(2 * (size_t)cap);
    if (!w->gsub || !w->gwhy || !w->res.subs || !w->res.members || !w->res.groups || !w->keys || !w->member_hash || !w->rr || !w->peids ||
        !w->cslot || !w->cpos || !w->cpass || !w->cdrop || !w->ppos)
        goto nomem;
    /* A table set's peids are all interned when it is compiled
     * (control/tables.h), never while readers use it, and attach() empties
     * the cache on every switch: an unknown peid stays unknown for the set. */
    w->peids->cache_unknown = true;
    w->rd = wm_reload_reader_new(t->rl);
    if (w->rd) attach(w);
    if (!w->rd || !w->r) {
        snprintf(err, errlen, "cannot register a matcher reader");
        wm_match_worker_free(w);
        return NULL;
    }
    if (log_path) {
        char lerr[WM_MATCH_LOG_ERROR_MAX];
        w->mlog = wm_match_log_open(log_path, 1 << 20, lerr, sizeof lerr);
        w->log_path = strdup(log_path);
        if (!w->mlog || !w->log_path) {
            snprintf(err, errlen, "--match-log %s", w->mlog ? "out of memory" : lerr);
            wm_match_worker_free(w);
            return NULL;
        }
        w->log = wm_match_log_stream(w->mlog);
    }
    return w;
nomem:
    snprintf(err, errlen, "out of memory");
    wm_match_worker_free(w);
    return NULL;
}

void wm_match_worker_free(struct wm_match_worker *w)
{
    if (!w) return;
    struct wm_match_log_result lr = {0, 0};
    wm_match_log_close(w->mlog, &lr);
    if (w->rd) {
        wm_reload_reader_pause(w->rd); /* never spin on the lock while holding grace periods back */
        tlock(&w->t->lock);
        w->t->c.lookups += w->c.lookups;
        w->t->c.lookup_errors += w->c.lookup_errors;
        w->t->c.peid_cache_hits += w->peids->hits;
        w->t->c.peid_cache_misses += w->peids->misses + w->peids->bypassed;
        /* produced = stored + lost: the stream knows what reached the file */
        w->t->c.log_lines += lr.lines_written;
        w->t->c.log_lines_failed += w->c.log_lines - lr.lines_written;
        if (lr.err && !w->t->log_error[0])
            snprintf(w->t->log_error, sizeof w->t->log_error, "%s: %s", w->log_path, strerror(lr.err));
#define WM_MATCH_ADD_CONTENT(n) w->t->c.n += w->c.n;
        WM_MATCH_CONTENT_COUNTERS(WM_MATCH_ADD_CONTENT)
        WM_MATCH_DELIVERY_COUNTERS(WM_MATCH_ADD_CONTENT)
#undef WM_MATCH_ADD_CONTENT
        tunlock(&w->t->lock);
        wm_reload_reader_free(w->rd);
    }
    free(w->res.subs);
    free(w->res.members);
    free(w->res.groups);
    free(w->keys);
    free(w->member_hash);
    free(w->rr);
    free(w->peids);
    wm_content_reader_free(w->creader);
    free(w->cslot);
    free(w->cpos);
    free(w->cpass);
    free(w->cdrop);
    free(w->ppos);
    free(w->log_path);
    free(w->gsub);
    free(w->gwhy);
    free(w);
}

struct wm_mqtt_sink wm_match_worker_sink(struct wm_match_worker *w)
{
    struct wm_mqtt_sink s = {w_subscribe, w_unsubscribe, w_publish, w, w_session};
    return s;
}

void wm_match_worker_set_content_wait(struct wm_match_worker *w, bool wait) { w->wait = wait; }

#ifdef WM_TEST_HOOKS
void wm_match_worker_set_lookup_hook(struct wm_match_worker *w, void (*fn)(void *ctx), void *ctx)
{
    w->lookup_hook = fn;
    w->lookup_hook_ctx = ctx;
}
#endif

void wm_match_worker_quiescent(struct wm_match_worker *w, uint64_t now_ns)
{
    struct wm_match_table *t = w->t;
    /* quiescent first: what attach loads is then safe until the next one */
    wm_reload_reader_quiescent(w->rd);
    if (now_ns >= atomic_load_explicit(&t->next_deadline, memory_order_relaxed)) {
        wm_reload_reader_pause(w->rd);
        tlock(&t->lock);
        sessions_expire(t, now_ns);
        tunlock(&t->lock);
        wake_compiler(t);
        wm_reload_reader_resume(w->rd);
    }
    attach(w);
}
