/* See proxy_registry.h. */
#include "dataplane/proxy_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/proxy_share.h"

typedef struct deferred {
    uint32_t sub;           /* a handle (reg_ent index) */
    uint64_t expire_ns;
} deferred;

/* One --prefilter registration: what the matcher holds, by neighborhood NAME,
 * so that a reload can register it again in the new file's matcher. Its index
 * is the handle the callers hold; it does not change across reloads. */
typedef struct reg_ent {
    char *filter;           /* NULL: a free handle */
    uint32_t filter_len;
    char *nbhd;             /* NULL = none */
    uint32_t sub;           /* its id in g->m; WM_SUB_NONE: the file lacks its neighborhood */
    uint32_t next;          /* rebind: id in the new matcher; free list: next free handle */
    bool content;           /* the subscription has a content filter */
} reg_ent;

/* Content-filtered subscriptions are registered as this client's, with No
 * Local, so that a lookup as this client's publication skips them: one
 * lookup answers "can a subscription without content filter receive it".
 * (A shared subscription cannot have No Local, MQTT 5.0 §3.8.3.1: it stays
 * visible to every lookup, which only errs towards forwarding.) */
static const char content_client[] = "\x01wirematch-proxy:content";

typedef struct sess_rec {
    char *filter;
    uint32_t filter_len;
    uint32_t sid;
    char *nbhd;             /* NULL = none */
    uint32_t reg_sub;
    char *xpath;            /* content filter, NULL = none */
} sess_rec;

/* One persistent session, chained in its hash bucket. */
typedef struct sess {
    struct sess *next;
    uint8_t *cid;
    uint32_t cid_len;
    uint64_t gen;
    uint32_t attached;      /* connections using it */
    uint64_t expire_ns;     /* when none is: CLOCK_MONOTONIC deadline */
    uint32_t interval;      /* while one is: its Session Expiry Interval (s), if interval_set */
    bool interval_set;      /* interval given since the last attach */
    bool incomplete;
    uint32_t sid_next;      /* no proxy identifier from here up was used in the session */
    /* --state reservation ceilings (wm_proxy_registry_session_sid): every
     * identifier handed out is below the ceiling the file on disk holds.
     * ceil_mem: the one to write next; ceil_disk: the one known on disk;
     * ceil_fly: the one the saver copied last, on disk once the write of
     * sequence fly_seq completed (0: none in flight; see ceiling()). */
    uint32_t ceil_mem, ceil_disk, ceil_fly;
    uint64_t fly_seq;
    sess_rec *recs;
    uint32_t n, cap;
    /* The saver's queue of entries changed since it last copied them
     * (wm_proxy_registry_track): first changed, first copied. */
    struct sess *q_next, *q_prev;
    bool queued;
    bool taken;             /* copied by the saver at least once: its drop is logged */
} sess;

struct wm_proxy_registry {
    wm_matcher *m;          /* --prefilter: the current file's (under mu once workers run); NULL = sessions only */
    bool prefilter;         /* m != NULL, fixed at creation: read by workers without the lock */
    _Atomic uint64_t m_gen; /* bumped when m is replaced (rebind) */
    pthread_mutex_t mu;
    reg_ent *ent;           /* handles; under mu */
    uint32_t n_ent, cap_ent, free_ent, live_ent;
    deferred *def;          /* subscriptions of closed persistent sessions */
    size_t n_def, cap_def;
    uint64_t added, removed, refused;
    /* Filters deeper than the matcher's max_levels registered widened
     * (widen()); refusals by reason: a table full (FULL_*), memory, a filter
     * the matcher finds invalid. Under mu. */
    uint64_t widened, refused_full, refused_nomem, refused_invalid;
    bool said_widened, said_refused;
    atomic_bool broken;
    sess **bucket;          /* [n_bucket], a power of 2 */
    uint32_t n_bucket, n_sess, max_sessions, max_subs;
    uint64_t next_gen;
    uint64_t next_expiry;   /* no detached entry expires before (a lower bound; UINT64_MAX none) */
    uint64_t restored, incomplete, dropped, expired, full, lost;
    _Atomic uint64_t changes;   /* session entries changed (wm_proxy_registry_changes) */
    wm_proxy_shares *shares;
    /* How long threads wait for mu and hold it (lock()/unlock()), so that a
     * holder that makes workers wait shows in the summary. Under mu. */
    uint64_t held_since, wait_max_ns, hold_max_ns;
    uint64_t copy_holds, copy_entries, copy_bytes, copy_hold_max_entries, copy_hold_max_bytes, copy_hold_max_ns;
    /* Change tracking for the saver (wm_proxy_registry_track), under mu. */
    bool track;
    bool resync;            /* a drop could not be logged: the saver starts over */
    sess *q_head, *q_tail;
    uint64_t q_len;
    uint64_t *gone;         /* generations of dropped entries the saver had copied */
    size_t n_gone, cap_gone;
    /* Reservation ceilings (wm_proxy_registry_session_sid): copies are
     * tagged with write_seq, the saver's next write; done_seq is the last
     * write that completed (under mu). unwritable: saves have failed for
     * the saver's bound, no hand-out waits (under mu). news moves at each
     * landing and when unwritable is set: what a waiter waits for, read by
     * the saver's thread (wm_proxy_registry_sid_wake, which alone uses
     * wake_seen); urgent: a hand-out waits for a save (urgent_fn is told
     * when it becomes so; set before the workers run); waiters: hand-outs
     * told to wait since the workers were last woken. */
    uint64_t write_seq, done_seq, wake_seen;
    bool unwritable;
    _Atomic uint64_t news;
    atomic_bool urgent;
    _Atomic uint64_t waiters;
    void (*urgent_fn)(void *ctx);
    void *urgent_ctx;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lock held: s leaves the saver's queue. */
static void dequeue(wm_proxy_registry *g, sess *s)
{
    if (!s->queued) return;
    if (s->q_prev) s->q_prev->q_next = s->q_next;
    else g->q_head = s->q_next;
    if (s->q_next) s->q_next->q_prev = s->q_prev;
    else g->q_tail = s->q_prev;
    s->q_next = s->q_prev = NULL;
    s->queued = false;
    g->q_len--;
}

/* Lock held: s joins the tail of the saver's queue (if not in it yet). */
static void enqueue(wm_proxy_registry *g, sess *s)
{
    if (s->queued) return;
    s->q_prev = g->q_tail;
    s->q_next = NULL;
    if (g->q_tail) g->q_tail->q_next = s;
    else g->q_head = s;
    g->q_tail = s;
    s->queued = true;
    g->q_len++;
}

/* Lock held: a session entry changed (s: the entry, NULL if it was dropped,
 * which sess_drop logs). */
static void changed(wm_proxy_registry *g, sess *s)
{
    atomic_fetch_add_explicit(&g->changes, 1, memory_order_relaxed);
    if (g->track && s) enqueue(g, s);
}

wm_proxy_registry *wm_proxy_registry_new(wm_matcher *m, uint32_t max_sessions, uint32_t max_subs)
{
    wm_proxy_registry *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->m = m;
    g->prefilter = m != NULL;
    g->max_sessions = max_sessions;
    g->max_subs = max_subs;
    /* Fixed table: about one entry per bucket at the bound, never resized. */
    g->n_bucket = 64;
    while (g->n_bucket < max_sessions && g->n_bucket < (1u << 20)) g->n_bucket <<= 1;
    g->bucket = calloc(g->n_bucket, sizeof *g->bucket);
    g->shares = wm_proxy_shares_new();
    if (!g->bucket || !g->shares) {
        free(g->bucket);
        wm_proxy_shares_free(g->shares);
        free(g);
        return NULL;
    }
    g->next_gen = 1;
    g->write_seq = 1;
    g->next_expiry = UINT64_MAX;
    g->free_ent = UINT32_MAX;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

static void rec_free(sess_rec *r)
{
    free(r->filter);
    free(r->nbhd);
    free(r->xpath);
}

static void sess_free(sess *s)
{
    for (uint32_t i = 0; i < s->n; i++) rec_free(&s->recs[i]);
    free(s->recs);
    free(s->cid);
    free(s);
}

void wm_proxy_registry_free(wm_proxy_registry *g)
{
    if (!g) return;
    for (uint32_t b = 0; b < g->n_bucket; b++)
        for (sess *s = g->bucket[b], *nx; s; s = nx) { nx = s->next; sess_free(s); }
    free(g->bucket);
    free(g->gone);
    pthread_mutex_destroy(&g->mu);
    for (uint32_t i = 0; i < g->n_ent; i++) {
        free(g->ent[i].filter);
        free(g->ent[i].nbhd);
    }
    free(g->ent);
    free(g->def);
    wm_proxy_shares_free(g->shares);
    free(g);
}

wm_proxy_shares *wm_proxy_registry_shares(wm_proxy_registry *g) { return g->shares; }

bool wm_proxy_registry_prefilter(const wm_proxy_registry *g) { return g->prefilter; }

/* Every taker of mu once workers run goes through lock()/unlock() (rd NULL:
 * not a worker), which time the wait and the hold. */
static void lock(wm_proxy_registry *g, wm_matcher_reader *rd)
{
    /* Offline first: the reclaiming thread holds the mutex while it waits
     * for every online reader's quiescent state. */
    if (rd) wm_matcher_reader_offline(rd);
    if (pthread_mutex_trylock(&g->mu) != 0) {
        uint64_t t0 = mono_ns();
        pthread_mutex_lock(&g->mu);
        uint64_t w = mono_ns() - t0;
        if (w > g->wait_max_ns) g->wait_max_ns = w;
    }
    g->held_since = mono_ns();
}

static void unlock(wm_proxy_registry *g, wm_matcher_reader *rd)
{
    uint64_t h = mono_ns() - g->held_since;
    if (h > g->hold_max_ns) g->hold_max_ns = h;
    pthread_mutex_unlock(&g->mu);
    if (rd) wm_matcher_reader_online(rd);
}

wm_matcher_reader *wm_proxy_registry_reader(wm_proxy_registry *g, uint64_t *gen)
{
    if (!g->prefilter) return NULL;
    /* Under the lock: the matcher and its generation read together. */
    lock(g, NULL);
    wm_matcher_reader *rd = wm_matcher_reader_new(g->m);
    *gen = atomic_load(&g->m_gen);
    unlock(g, NULL);
    return rd;
}

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) { memcpy(d, p, n); d[n] = 0; }
    return d;
}

/* A filter of more levels than the matcher indexes (maxl; MQTT 5.0 §4.7
 * sets no limit) as the filter of its first maxl - 1 levels followed by "#"
 * (maxl levels): a superset of what it matches. '#' can only be a filter's
 * last level, so the kept levels hold none; a kept '+' matches there as it
 * did; the dropped levels, whatever their wildcards, match one level or
 * more of the topic, all of which the '#' matches (it also matches the
 * parent level alone, §4.7.1.2: only more). A topic starting with '$' is
 * matched by neither when the first level is a wildcard (§4.7.2), by both
 * when it is that level itself. A shared subscription keeps its
 * "$share/{ShareName}/" prefix: members of a group with the same deep
 * filter stay one group (a lookup needs one member to answer yes). NULL if
 * memory ran out; the widened length in *out_len. */
static char *widen(const char *f, uint32_t len, uint32_t maxl, uint32_t *out_len)
{
    wm_topic_share sh;
    size_t pos = wm_topic_share_split(f, len, &sh) ? (size_t)(sh.filter - f) : 0;
    for (uint32_t lv = 0; lv + 1 < maxl; lv++) {
        const char *sl = memchr(f + pos, '/', len - pos);
        if (!sl) return NULL;   /* not deeper than maxl: nothing to widen */
        pos = (size_t)(sl - f) + 1;
    }
    char *w = malloc(pos + 1);
    if (!w) return NULL;
    memcpy(w, f, pos);
    w[pos] = '#';
    *out_len = (uint32_t)pos + 1;
    return w;
}

/* Lock held: adds filter with neighborhood `nbhd` (a name, NULL for none)
 * to m. *sub = WM_SUB_NONE (and OK) if m's file has no such neighborhood:
 * such a subscription can receive nothing there. A filter too deep for m is
 * added widened (*widened set): before 2026-12-02 the registry was marked
 * broken then, which turned --prefilter off for every client for the rest of
 * the run, at one client's valid SUBSCRIBE (REVIEW14 finding 1). */
static wm_matcher_status matcher_add(wm_matcher *m, const reg_ent *e, uint32_t *sub, bool *widened)
{
    uint32_t nb = e->nbhd ? wm_matcher_nbhd_find(m, e->nbhd, strlen(e->nbhd)) : WM_NBHD_NONE;
    *sub = WM_SUB_NONE;
    *widened = false;
    if (e->nbhd && nb == WM_NBHD_NONE) return WM_MATCHER_OK;
    wm_sub_spec spec = { .filter = e->filter, .filter_len = e->filter_len, .nbhd = nb };
    wm_topic_share sh;
    if (e->content && !wm_topic_share_split(e->filter, e->filter_len, &sh)) {
        spec.client = content_client;
        spec.client_len = sizeof content_client - 1;
        spec.no_local = true;
    }
    wm_matcher_status st = wm_matcher_sub_add(m, &spec, sub, NULL);
    if (st != WM_MATCHER_E_TOO_DEEP) return st;
    uint32_t wl;
    char *w = widen(e->filter, e->filter_len, wm_matcher_get_config(m)->max_levels, &wl);
    if (!w) return WM_MATCHER_E_NOMEM;
    spec.filter = w;
    spec.filter_len = wl;
    st = wm_matcher_sub_add(m, &spec, sub, NULL);   /* (the matcher copies the filter) */
    free(w);
    *widened = st == WM_MATCHER_OK;
    return st;
}

uint32_t wm_proxy_registry_add(wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes f, const char *nbhd,
                               bool content, wm_matcher_status *why)
{
    uint32_t h = WM_SUB_NONE;
    wm_matcher_status st = WM_MATCHER_E_NOMEM;
    bool widened = false;
    lock(g, rd);
    if (g->free_ent == UINT32_MAX && g->n_ent == g->cap_ent) {
        uint32_t cap = g->cap_ent ? g->cap_ent * 2 : 64;
        reg_ent *ne = cap > g->cap_ent ? realloc(g->ent, (size_t)cap * sizeof *ne) : NULL;
        if (ne) { g->ent = ne; g->cap_ent = cap; }
    }
    reg_ent e = { dup_bytes((const char *)f.p, f.len), f.len, nbhd ? dup_bytes(nbhd, strlen(nbhd)) : NULL,
                  WM_SUB_NONE, 0, content };
    bool room = g->free_ent != UINT32_MAX || g->n_ent < g->cap_ent;
    if (room && e.filter && (!nbhd || e.nbhd)) st = matcher_add(g->m, &e, &e.sub, &widened);
    if (why) *why = st;
    if (st == WM_MATCHER_OK) {
        if (widened) {
            g->widened++;
            if (!g->said_widened)
                fprintf(stderr, "wirematch-proxy: --prefilter: filter \"%.*s\" is too_deep for the subscription "
                                "registry (more than %u levels): registered as its first %u levels followed by "
                                "'#', a superset (more PUBLISHes pass the prefilter, none is kept on its "
                                "account); such filters are counted in prefilter.registry.widened_too_deep\n",
                        f.len > 200 ? 200 : (int)f.len, (const char *)f.p, wm_matcher_get_config(g->m)->max_levels,
                        wm_matcher_get_config(g->m)->max_levels - 1);
            g->said_widened = true;
        }
        if (g->free_ent != UINT32_MAX) {
            h = g->free_ent;
            g->free_ent = g->ent[h].next;
        } else {
            h = g->n_ent++;
        }
        g->ent[h] = e;
        g->live_ent++;
        g->added++;
    } else {
        /* The caller refuses the subscription to its client (proxy_filter.c:
         * SUBACK 0x97, or 0x8F for an invalid filter) before the broker has
         * it, so the registry stays exact for everyone else. Said once, with
         * the filter and the reason; each is counted by reason. */
        if (!g->said_refused)
            fprintf(stderr, "wirematch-proxy: --prefilter: the subscription registry cannot take filter "
                            "\"%.*s\"%s%s (%s: %s): that subscription is refused to its client; further refusals "
                            "are counted in prefilter.registry.refused_*\n",
                    f.len > 200 ? 200 : (int)f.len, (const char *)f.p, nbhd ? " with neighborhood " : "",
                    nbhd ? nbhd : "", wm_matcher_status_name(st), wm_matcher_status_message(st));
        g->said_refused = true;
        free(e.filter);
        free(e.nbhd);
        g->refused++;
        if (st == WM_MATCHER_E_NOMEM) g->refused_nomem++;
        else if (st == WM_MATCHER_E_INVALID_FILTER) g->refused_invalid++;
        else g->refused_full++;
    }
    unlock(g, rd);
    return h;
}

/* Lock held: handle h leaves the matcher and is free again. */
static void ent_remove(wm_proxy_registry *g, uint32_t h)
{
    if (h >= g->n_ent || !g->ent[h].filter) return;
    reg_ent *e = &g->ent[h];
    if (e->sub != WM_SUB_NONE) wm_matcher_sub_remove(g->m, e->sub);
    free(e->filter);
    free(e->nbhd);
    *e = (reg_ent){ NULL, 0, NULL, WM_SUB_NONE, g->free_ent, false };
    g->free_ent = h;
    g->live_ent--;
    g->removed++;
}

void wm_proxy_registry_remove(wm_proxy_registry *g, wm_matcher_reader *rd, uint32_t sub, uint64_t expire_ns)
{
    if (sub == WM_SUB_NONE) return;
    lock(g, rd);
    if (expire_ns == 0) {
        ent_remove(g, sub);
    } else {
        if (g->n_def == g->cap_def) {
            size_t cap = g->cap_def ? g->cap_def * 2 : 64;
            deferred *d = realloc(g->def, cap * sizeof *d);
            if (d) { g->def = d; g->cap_def = cap; }
        }
        /* No room to remember it: it stays registered for good (conservative). */
        if (g->n_def < g->cap_def) g->def[g->n_def++] = (deferred){ sub, expire_ns };
    }
    unlock(g, rd);
}

int wm_proxy_registry_rebind(wm_proxy_registry *g, wm_matcher *m, uint32_t *gone, char *err, size_t errcap)
{
    *gone = 0;
    if (!g->prefilter) return 0;
    lock(g, NULL);
    for (uint32_t i = 0; i < g->n_ent; i++) {
        reg_ent *e = &g->ent[i];
        if (!e->filter) continue;
        bool widened;
        wm_matcher_status st = matcher_add(m, e, &e->next, &widened);
        if (st != WM_MATCHER_OK) {
            /* m is the caller's, thrown away with what was added to it */
            snprintf(err, errcap, "--prefilter: subscription \"%.*s\" does not fit the new tables: %s",
                     e->filter_len > 200 ? 200 : (int)e->filter_len, e->filter, wm_matcher_status_message(st));
            unlock(g, NULL);
            return -1;
        }
        if (e->next == WM_SUB_NONE && e->nbhd) (*gone)++;
    }
    for (uint32_t i = 0; i < g->n_ent; i++) g->ent[i].sub = g->ent[i].filter ? g->ent[i].next : WM_SUB_NONE;
    /* The old matcher gets no more writes; its readers see a frozen view
     * and are told so by the generation (wm_proxy_registry_receivable). */
    g->m = m;
    atomic_fetch_add_explicit(&g->m_gen, 1, memory_order_release);
    unlock(g, NULL);
    return 0;
}

bool wm_proxy_registry_receivable(const wm_proxy_registry *g, wm_matcher_reader *rd, uint64_t rd_gen,
                                  wm_mqtt5_bytes topic, const wm_match_str *peids, uint32_t n_peids, bool content)
{
    if (atomic_load_explicit(&g->broken, memory_order_relaxed)) return true;
    /* No reader, or one of a replaced matcher (a reload this worker has not
     * taken in yet): subscriptions added since are not in its view. */
    if (!rd || atomic_load_explicit(&((wm_proxy_registry *)g)->m_gen, memory_order_acquire) != rd_gen) return true;
    /* One slot each: a truncated result still says "at least one". */
    uint32_t subs[1], members[1];
    wm_match_group groups[1];
    wm_match_result res = { subs, 1, members, 1, groups, 1, 0, 0, 0 };
    wm_matcher_status st = wm_matcher_lookup_str(rd, (const char *)topic.p, topic.len, peids, n_peids,
                                                 content ? NULL : content_client,
                                                 content ? 0 : sizeof content_client - 1, &res);
    if (st == WM_MATCHER_E_TRUNCATED) return true;
    if (st != WM_MATCHER_OK) return true;   /* cannot tell: forward */
    return res.n_subs + res.n_groups > 0;
}

/* ------------------------------------------------------------ sessions */

static uint32_t cid_hash(const uint8_t *p, uint32_t n)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (uint32_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The link pointing at cid's entry (*link NULL if none). Lock held. */
static sess **sess_link(wm_proxy_registry *g, const uint8_t *cid, uint32_t n)
{
    sess **l = &g->bucket[cid_hash(cid, n) & (g->n_bucket - 1)];
    while (*l && !((*l)->cid_len == n && memcmp((*l)->cid, cid, n) == 0)) l = &(*l)->next;
    return l;
}

/* Lock held: the prefilter registration of a record leaves the matcher. */
static void rec_unregister(wm_proxy_registry *g, sess_rec *r)
{
    if (g->m && r->reg_sub != WM_SUB_NONE) ent_remove(g, r->reg_sub);
    r->reg_sub = WM_SUB_NONE;
}

/* Lock held: unlinks and frees the entry at *l. */
static void sess_drop(wm_proxy_registry *g, sess **l)
{
    sess *s = *l;
    *l = s->next;
    if (g->track) {
        dequeue(g, s);
        if (s->taken) {
            if (g->n_gone == g->cap_gone) {
                size_t cap = g->cap_gone ? g->cap_gone * 2 : 64;
                uint64_t *ng = realloc(g->gone, cap * sizeof *ng);
                if (ng) { g->gone = ng; g->cap_gone = cap; }
            }
            if (g->n_gone < g->cap_gone) g->gone[g->n_gone++] = s->gen;
            else g->resync = true;
        }
    }
    for (uint32_t i = 0; i < s->n; i++) rec_unregister(g, &s->recs[i]);
    sess_free(s);
    g->n_sess--;
}

/* Lock held: s's ceilings with the completed writes applied; returns the
 * one that holds whatever happens to the write in flight (the file is
 * either the one on disk or the new one). */
static uint32_t ceiling(const wm_proxy_registry *g, sess *s)
{
    if (s->fly_seq && s->fly_seq <= g->done_seq) {
        s->ceil_disk = s->ceil_fly;
        s->fly_seq = 0;
    }
    return s->fly_seq && s->ceil_fly < s->ceil_disk ? s->ceil_fly : s->ceil_disk;
}

static uint32_t sid_first(const sess *s) { return s->sid_next < WM_PROXY_SID_BASE ? WM_PROXY_SID_BASE : s->sid_next; }

/* Lock held: entry gen of cid, NULL if it is gone or another one. */
static sess *sess_get(wm_proxy_registry *g, const uint8_t *cid, uint32_t n, uint64_t gen)
{
    if (!gen) return NULL;
    sess *s = *sess_link(g, cid, n);
    return s && s->gen == gen ? s : NULL;
}

wm_proxy_session_ref wm_proxy_registry_session_attach(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                                      uint32_t cid_len, bool fresh, bool keep,
                                                      void (*each)(void *ctx, const wm_proxy_saved_sub *rec),
                                                      void *ctx)
{
    wm_proxy_session_ref ref = { 0, fresh, WM_PROXY_SID_BASE };
    lock(g, rd);
    sess **l = sess_link(g, cid, cid_len);
    if (*l && fresh) {
        sess_drop(g, l);
        g->dropped++;
        /* *l now links the bucket's next entry, another client's (REVIEW8 #1) */
        l = sess_link(g, cid, cid_len);
    }
    sess *s = *l;
    if (s) {
        for (uint32_t i = 0; i < s->n; i++) {
            const sess_rec *r = &s->recs[i];
            each(ctx, &(wm_proxy_saved_sub){ r->filter, r->filter_len, r->sid, r->nbhd, r->reg_sub, r->xpath });
        }
        ref.complete = !s->incomplete;
        ref.sid_next = s->sid_next;
        if (s->incomplete) g->incomplete++;
        else g->restored++;
    } else if (keep || !fresh) {
        /* A resumed session with no entry: the broker may hold
         * subscriptions made before this process started or while the
         * table was full. Remembered as incomplete until a fresh start. */
        if (!fresh) g->incomplete++;
        if (g->n_sess == g->max_sessions || !(s = calloc(1, sizeof *s)) || !(s->cid = malloc(cid_len ? cid_len : 1))) {
            if (s) free(s);
            s = NULL;
            g->full++;
        } else {
            memcpy(s->cid, cid, cid_len);
            s->cid_len = cid_len;
            s->gen = g->next_gen++;
            s->incomplete = !fresh;
            s->next = *l;
            *l = s;
            g->n_sess++;
        }
    }
    if (s) {
        /* the new connection's interval comes with its CONNACK (_session_interval),
         * not the previous connection's */
        s->attached++;
        s->interval_set = false;
        ref.gen = s->gen;
    }
    changed(g, s);
    unlock(g, rd);
    return ref;
}

/* A filtered record leaving the session (UNSUBSCRIBE, or replaced by a
 * SUBSCRIBE of the same filter): deliveries the broker had queued for it
 * keep coming with its identifier (§3.10.4, §3.8.4). A proxy identifier is
 * never used again in the session (sid_next), so no record explains it and
 * it is withheld; a client identifier could be taken for a plain
 * subscription's: whoever resumes must withhold identifiers it does not
 * know. */
static bool leaves_unknown(const sess_rec *r)
{
    return (r->nbhd || r->xpath) && r->sid < WM_PROXY_SID_BASE;
}

bool wm_proxy_registry_session_put(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid, uint32_t cid_len,
                                   uint64_t gen, const wm_proxy_saved_sub *rec)
{
    bool ok = false;
    lock(g, rd);
    sess *s = sess_get(g, cid, cid_len, gen);
    if (!s) goto out;
    changed(g, s);
    /* Even a record not kept below used its identifier in the broker's session. */
    if (rec->sid >= WM_PROXY_SID_BASE && rec->sid < WM_PROXY_SID_PLAIN && rec->sid >= s->sid_next)
        s->sid_next = rec->sid + 1;
    uint32_t i = 0;
    while (i < s->n && !(s->recs[i].filter_len == rec->filter_len &&
                         memcmp(s->recs[i].filter, rec->filter, rec->filter_len) == 0)) i++;
    sess_rec r = { dup_bytes(rec->filter, rec->filter_len), rec->filter_len, rec->sid,
                   rec->nbhd ? dup_bytes(rec->nbhd, strlen(rec->nbhd)) : NULL, rec->reg_sub,
                   rec->xpath ? dup_bytes(rec->xpath, strlen(rec->xpath)) : NULL };
    if (i == s->n && s->n == s->cap && s->n < g->max_subs) {
        uint32_t cap = s->cap ? s->cap * 2 : 8;
        sess_rec *nr = realloc(s->recs, (size_t)cap * sizeof *nr);
        if (nr) { s->recs = nr; s->cap = cap; }
    }
    if (!r.filter || (rec->nbhd && !r.nbhd) || (rec->xpath && !r.xpath) || (i == s->n && (s->n == s->cap || s->n >= g->max_subs))) {
        /* Not kept: whoever resumes this session must not trust the rest. */
        rec_free(&r);
        s->incomplete = true;
        g->lost++;
        goto out;
    }
    if (i < s->n) {
        if (leaves_unknown(&s->recs[i])) s->incomplete = true;
        rec_unregister(g, &s->recs[i]);
        rec_free(&s->recs[i]);
    } else {
        s->n++;
    }
    s->recs[i] = r;
    ok = true;
out:
    unlock(g, rd);
    return ok;
}

wm_proxy_sid_status wm_proxy_registry_session_sid(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                                  uint32_t cid_len, uint64_t gen, uint32_t floor, uint32_t *sid)
{
    wm_proxy_sid_status st = WM_PROXY_SID_STALE;
    bool tell = false;
    lock(g, rd);
    sess *s = sess_get(g, cid, cid_len, gen);
    if (!s) goto out;
    if (s->sid_next < floor) s->sid_next = floor;
    s->sid_next = sid_first(s);
    st = WM_PROXY_SID_NONE_LEFT;
    if (s->sid_next >= WM_PROXY_SID_PLAIN) goto out;
    /* (the next save writes the new sid_next: a clean stop's file is exact) */
    changed(g, s);
    uint32_t want = WM_PROXY_SID_PLAIN - s->sid_next > WM_PROXY_SID_RESERVE ? s->sid_next + WM_PROXY_SID_RESERVE
                                                                            : WM_PROXY_SID_PLAIN;
    if (g->track && s->sid_next >= ceiling(g, s)) {
        /* Not below what the file holds: a crash now would let the next
         * process hand this identifier out again (REVIEW7 #12). */
        if (s->ceil_mem < want) s->ceil_mem = want;
        /* No save lands for now: an answer, not a wait with no end (the
         * reservation above goes with the first save that lands, so the
         * client's next try after that is not held). */
        if (g->unwritable) {
            st = WM_PROXY_SID_UNSAVED;
            goto out;
        }
        tell = !atomic_exchange_explicit(&g->urgent, true, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->waiters, 1, memory_order_relaxed);
        st = WM_PROXY_SID_WAIT;
        goto out;
    }
    *sid = s->sid_next++;
    /* Half the reservation used: the next one goes to the file with the
     * next save, before this one runs out. */
    if (g->track && s->sid_next + WM_PROXY_SID_RESERVE / 2 >= s->ceil_mem && s->ceil_mem < want) s->ceil_mem = want;
    st = WM_PROXY_SID_OK;
out:
    unlock(g, rd);
    /* (the saver's thread may sleep for up to its tick otherwise) */
    if (tell && g->urgent_fn) g->urgent_fn(g->urgent_ctx);
    return st;
}

void wm_proxy_registry_on_urgent(wm_proxy_registry *g, void (*fn)(void *ctx), void *ctx)
{
    g->urgent_fn = fn;
    g->urgent_ctx = ctx;
}

bool wm_proxy_registry_sid_urgent(wm_proxy_registry *g)
{
    return atomic_load_explicit(&g->urgent, memory_order_relaxed);
}

void wm_proxy_registry_sid_urgent_clear(wm_proxy_registry *g)
{
    atomic_store_explicit(&g->urgent, false, memory_order_relaxed);
}

void wm_proxy_registry_ceilings_saved(wm_proxy_registry *g)
{
    lock(g, NULL);
    g->done_seq = g->write_seq++;
    g->unwritable = false;
    atomic_fetch_add_explicit(&g->news, 1, memory_order_release);
    unlock(g, NULL);
}

void wm_proxy_registry_ceilings_unwritable(wm_proxy_registry *g)
{
    lock(g, NULL);
    if (!g->unwritable) {
        g->unwritable = true;
        atomic_fetch_add_explicit(&g->news, 1, memory_order_release);
    }
    unlock(g, NULL);
}

bool wm_proxy_registry_sid_wake(wm_proxy_registry *g)
{
    uint64_t l = atomic_load_explicit(&g->news, memory_order_acquire);
    if (l == g->wake_seen) return false;
    /* A waiter counted before news l is seen here (its count precedes the
     * unlock before l). None: l is seen all the same, since a hand-out told
     * to wait after l needs a later one (its ceiling was checked with l's
     * write applied, and unwritable would have answered it). A waiter
     * counted after the exchange is woken at the next news; one woken
     * before its reservation landed waits, and counts, again. */
    g->wake_seen = l;
    return atomic_exchange_explicit(&g->waiters, 0, memory_order_relaxed) != 0;
}

void wm_proxy_registry_session_del(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid, uint32_t cid_len,
                                   uint64_t gen, const char *filter, uint32_t filter_len)
{
    lock(g, rd);
    sess *s = sess_get(g, cid, cid_len, gen);
    for (uint32_t i = 0; s && i < s->n; i++)
        if (s->recs[i].filter_len == filter_len && memcmp(s->recs[i].filter, filter, filter_len) == 0) {
            changed(g, s);
            if (leaves_unknown(&s->recs[i])) s->incomplete = true;
            rec_unregister(g, &s->recs[i]);
            rec_free(&s->recs[i]);
            s->recs[i] = s->recs[--s->n];
            break;
        }
    unlock(g, rd);
}

void wm_proxy_registry_session_interval(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                        uint32_t cid_len, uint64_t gen, uint32_t interval_s)
{
    lock(g, rd);
    sess *s = sess_get(g, cid, cid_len, gen);
    if (s && (!s->interval_set || s->interval != interval_s)) {
        s->interval = interval_s;
        s->interval_set = true;
        changed(g, s);
    }
    unlock(g, rd);
}

void wm_proxy_registry_session_detach(wm_proxy_registry *g, wm_matcher_reader *rd, const uint8_t *cid,
                                      uint32_t cid_len, uint64_t gen, uint64_t expire_ns)
{
    lock(g, rd);
    sess **l = sess_link(g, cid, cid_len);
    if (*l && (*l)->gen == gen && gen && --(*l)->attached == 0) {
        changed(g, *l);
        (*l)->expire_ns = expire_ns;
        if (expire_ns == 0) {
            sess_drop(g, l);
            g->expired++;
        } else if (expire_ns < g->next_expiry) {
            g->next_expiry = expire_ns;
        }
    }
    unlock(g, rd);
}

/* Buckets the expiry scan walks per hold of the lock. */
#define RECLAIM_BUCKETS 1024u

void wm_proxy_registry_reclaim(wm_proxy_registry *g, uint64_t now_ns)
{
    /* The session scan walks the whole table, RECLAIM_BUCKETS a hold, and
     * only once the earliest expiry has come: a large table of sessions
     * that do not expire yet costs the workers nothing. */
    lock(g, NULL);
    bool due = g->n_sess && g->next_expiry <= now_ns;
    if (due) g->next_expiry = UINT64_MAX;   /* lowered again by the scan below and by detaches meanwhile */
    for (uint32_t b0 = 0; due && b0 < g->n_bucket; b0 += RECLAIM_BUCKETS) {
        if (b0) {
            unlock(g, NULL);
            lock(g, NULL);
        }
        for (uint32_t b = b0; b < b0 + RECLAIM_BUCKETS && b < g->n_bucket; b++)
            for (sess **l = &g->bucket[b]; *l;) {
                if ((*l)->attached == 0 && (*l)->expire_ns <= now_ns) {
                    sess_drop(g, l);
                    g->expired++;
                    changed(g, NULL);
                } else {
                    if ((*l)->attached == 0 && (*l)->expire_ns < g->next_expiry) g->next_expiry = (*l)->expire_ns;
                    l = &(*l)->next;
                }
            }
    }
    size_t k = 0;
    for (size_t i = 0; i < g->n_def; i++) {
        if (g->def[i].expire_ns <= now_ns) {
            ent_remove(g, g->def[i].sub);
        } else {
            g->def[k++] = g->def[i];
        }
    }
    g->n_def = k;
    if (g->m) wm_matcher_reclaim(g->m, true);
    unlock(g, NULL);
}

void wm_proxy_registry_stats_get(wm_proxy_registry *g, wm_proxy_registry_stats *st)
{
    lock(g, NULL);
    st->added = g->added;
    st->live = g->live_ent;
    st->removed = g->removed;
    st->refused = g->refused;
    st->widened_too_deep = g->widened;
    st->refused_full = g->refused_full;
    st->refused_nomem = g->refused_nomem;
    st->refused_invalid = g->refused_invalid;
    /* Kept for sessions: closed ones' own, and those the session table holds. */
    st->deferred_live = g->n_def;
    for (uint32_t b = 0; g->n_sess && b < g->n_bucket; b++)
        for (const sess *e = g->bucket[b]; e; e = e->next)
            for (uint32_t i = 0; i < e->n; i++) st->deferred_live += e->recs[i].reg_sub != WM_SUB_NONE;
    st->broken = atomic_load(&g->broken);
    st->sessions_live = g->n_sess;
    st->sessions_restored = g->restored;
    st->sessions_incomplete = g->incomplete;
    st->sessions_dropped = g->dropped;
    st->sessions_expired = g->expired;
    st->sessions_full = g->full;
    st->records_lost = g->lost;
    st->lock_wait_max_ns = g->wait_max_ns;
    st->lock_hold_max_ns = g->hold_max_ns;
    st->copy_holds = g->copy_holds;
    st->copy_entries = g->copy_entries;
    st->copy_bytes = g->copy_bytes;
    st->copy_hold_max_entries = g->copy_hold_max_entries;
    st->copy_hold_max_bytes = g->copy_hold_max_bytes;
    st->copy_hold_max_ns = g->copy_hold_max_ns;
    unlock(g, NULL);
}

uint64_t wm_proxy_registry_changes(wm_proxy_registry *g)
{
    return atomic_load_explicit(&g->changes, memory_order_relaxed);
}

/* Lock held: every entry joins the saver's queue, the drop log is dropped. */
static void requeue_all(wm_proxy_registry *g)
{
    for (uint32_t b = 0; g->n_sess && b < g->n_bucket; b++)
        for (sess *e = g->bucket[b]; e; e = e->next) enqueue(g, e);
    g->n_gone = 0;
    g->resync = false;
}

void wm_proxy_registry_track(wm_proxy_registry *g)
{
    lock(g, NULL);
    g->track = true;
    requeue_all(g);
    unlock(g, NULL);
}

void wm_proxy_registry_sessions_resync(wm_proxy_registry *g)
{
    lock(g, NULL);
    g->resync = true;
    unlock(g, NULL);
}

/* The bytes of e's copy (wm_proxy_session_copy and what its views show). */
static size_t copy_size(const sess *e)
{
    size_t n = sizeof(wm_proxy_session_copy) + (size_t)e->n * sizeof(wm_proxy_saved_sub) + e->cid_len;
    for (uint32_t i = 0; i < e->n; i++) {
        const sess_rec *r = &e->recs[i];
        n += r->filter_len + 1 + (r->nbhd ? strlen(r->nbhd) + 1 : 0) + (r->xpath ? strlen(r->xpath) + 1 : 0);
    }
    return n;
}

static const char *copy_str(char **at, const char *s, size_t n)
{
    char *d = *at;
    memcpy(d, s, n);
    d[n] = 0;
    *at += n + 1;
    return d;
}

/* Lock held: e copied into c (copy_size(e) bytes); the ceiling copied is in
 * flight until the saver's next write completes. */
static void copy_entry(const wm_proxy_registry *g, wm_proxy_session_copy *c, sess *e)
{
    uint32_t next = sid_first(e), ceil = e->ceil_mem > next ? e->ceil_mem : next;
    (void)ceiling(g, e);
    e->ceil_fly = ceil;
    e->fly_seq = g->write_seq;
    char *at = (char *)&c->recs[e->n];
    c->next = NULL;
    c->gen = e->gen;
    c->n = e->n;
    memcpy(at, e->cid, e->cid_len);
    c->s = (wm_proxy_saved_session){ (const uint8_t *)at, e->cid_len, e->sid_next, e->incomplete, e->attached != 0,
                                     e->expire_ns, e->interval, ceil, e->interval_set };
    at += e->cid_len;
    for (uint32_t i = 0; i < e->n; i++) {
        const sess_rec *r = &e->recs[i];
        c->recs[i] = (wm_proxy_saved_sub){ copy_str(&at, r->filter, r->filter_len), r->filter_len, r->sid,
                                           r->nbhd ? copy_str(&at, r->nbhd, strlen(r->nbhd)) : NULL, WM_SUB_NONE,
                                           r->xpath ? copy_str(&at, r->xpath, strlen(r->xpath)) : NULL };
    }
}

int wm_proxy_registry_sessions_take(wm_proxy_registry *g, uint32_t max_entries, size_t max_bytes,
                                    wm_proxy_session_batch *b)
{
    memset(b, 0, sizeof *b);
    wm_proxy_session_copy **tail = &b->copies;
    int rc = 0;
    lock(g, NULL);
    if (g->resync) {
        requeue_all(g);
        b->reset = true;
    }
    /* The log is handed over whole (no copy): a fresh one starts empty. */
    b->gone = g->gone;
    b->n_gone = g->n_gone;
    g->gone = NULL;
    g->n_gone = g->cap_gone = 0;
    b->queued = g->q_len;
    uint64_t bytes = 0;
    while (g->q_head && b->n_copies < max_entries) {
        sess *e = g->q_head;
        size_t n = copy_size(e);
        if (b->n_copies && bytes + n > max_bytes) break;
        wm_proxy_session_copy *c = malloc(n);
        if (!c) { rc = -1; break; }
        copy_entry(g, c, e);
        *tail = c;
        tail = &c->next;
        b->n_copies++;
        bytes += n;
        dequeue(g, e);
        e->taken = true;
    }
    b->more = g->q_head != NULL;
    uint64_t held = mono_ns() - g->held_since;
    g->copy_holds++;
    g->copy_entries += b->n_copies;
    g->copy_bytes += bytes;
    if (b->n_copies > g->copy_hold_max_entries) g->copy_hold_max_entries = b->n_copies;
    if (bytes > g->copy_hold_max_bytes) g->copy_hold_max_bytes = bytes;
    if (held > g->copy_hold_max_ns) g->copy_hold_max_ns = held;
    unlock(g, NULL);
    return rc;
}

void wm_proxy_registry_batch_free(wm_proxy_session_batch *b)
{
    for (wm_proxy_session_copy *c = b->copies, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    free(b->gone);
    memset(b, 0, sizeof *b);
}

/* qsort order of records by filter (length, then bytes). */
static int by_filter(const void *a, const void *b)
{
    const wm_proxy_saved_sub *x = *(const wm_proxy_saved_sub *const *)a, *y = *(const wm_proxy_saved_sub *const *)b;
    if (x->filter_len != y->filter_len) return x->filter_len < y->filter_len ? -1 : 1;
    return memcmp(x->filter, y->filter, x->filter_len);
}

int wm_proxy_registry_session_restore(wm_proxy_registry *g, const wm_proxy_saved_session *s,
                                      const wm_proxy_saved_sub *recs, uint32_t n, char *err, size_t errcap)
{
    if (n > g->max_subs) {
        snprintf(err, errcap, "%u subscriptions, more than --max-subs-per-conn (%u)", n, g->max_subs);
        return -1;
    }
    /* Sorted, so that the check is O(n log n): a session of 4,096 records
     * took 8.4 M comparisons two by two (REVIEW7 #11). */
    const wm_proxy_saved_sub **by = n ? malloc((size_t)n * sizeof *by) : NULL;
    if (n && !by) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) by[i] = &recs[i];
    if (n > 1) qsort(by, n, sizeof *by, by_filter);   /* (qsort wants a non-NULL base even for 0) */
    for (uint32_t i = 1; i < n; i++)
        if (by_filter(&by[i - 1], &by[i]) == 0) {
            size_t a = (size_t)(by[i - 1] - recs), b = (size_t)(by[i] - recs);
            snprintf(err, errcap, "two subscriptions of one filter (its records %zu and %zu)", (a < b ? a : b) + 1,
                     (a < b ? b : a) + 1);
            free(by);
            return -1;
        }
    free(by);
    /* (no worker runs yet: nobody waits, and the load is not counted in the
     * lock's longest hold) */
    pthread_mutex_lock(&g->mu);
    sess **l = sess_link(g, s->cid, s->cid_len);
    sess *e = NULL;
    const char *why = NULL;
    if (*l) why = "client identifier already has a session";
    else if (g->n_sess == g->max_sessions) why = "more sessions than --max-sessions";
    else if (!(e = calloc(1, sizeof *e)) || !(e->cid = malloc(s->cid_len ? s->cid_len : 1)) ||
             (n && !(e->recs = calloc(n, sizeof *e->recs))))
        why = "out of memory";
    for (uint32_t i = 0; !why && i < n; i++) {
        const wm_proxy_saved_sub *r = &recs[i];
        e->recs[i] = (sess_rec){ dup_bytes(r->filter, r->filter_len), r->filter_len, r->sid,
                                 r->nbhd ? dup_bytes(r->nbhd, strlen(r->nbhd)) : NULL, WM_SUB_NONE,
                                 r->xpath ? dup_bytes(r->xpath, strlen(r->xpath)) : NULL };
        e->n = i + 1;
        if (!e->recs[i].filter || (r->nbhd && !e->recs[i].nbhd) || (r->xpath && !e->recs[i].xpath)) why = "out of memory";
    }
    if (why) {
        pthread_mutex_unlock(&g->mu);
        if (e) sess_free(e);
        snprintf(err, errcap, "%s", why);
        return -1;
    }
    memcpy(e->cid, s->cid, s->cid_len);
    e->cid_len = s->cid_len;
    e->cap = n;
    e->gen = g->next_gen++;
    e->incomplete = s->incomplete;
    e->sid_next = s->sid_next;
    /* the file just read holds it: a process loading it again starts there */
    e->ceil_mem = e->ceil_disk = s->sid_next;
    e->expire_ns = s->attached ? UINT64_MAX : s->expire_ns;
    if (e->expire_ns < g->next_expiry) g->next_expiry = e->expire_ns;
    e->next = *l;
    *l = e;
    g->n_sess++;
    changed(g, e);
    pthread_mutex_unlock(&g->mu);
    /* --prefilter: the records count for ingress as any session's do (the
     * registrations are added outside the lock they take themselves; no
     * worker runs yet). */
    for (uint32_t i = 0; g->prefilter && i < n; i++) {
        sess_rec *r = &e->recs[i];
        wm_matcher_status st;
        r->reg_sub = wm_proxy_registry_add(g, NULL, (wm_mqtt5_bytes){ (const uint8_t *)r->filter, r->filter_len },
                                           r->nbhd, r->xpath != NULL, &st);
        /* The broker holds this subscription already: it cannot be refused
         * to anyone now, so the registry is no longer exact. The operator's
         * file (tables too small for it), not a client, turns prefiltering
         * off, and the line says why. */
        if (r->reg_sub == WM_SUB_NONE && !atomic_exchange(&g->broken, true))
            fprintf(stderr, "wirematch-proxy: --prefilter: --state: the subscription registry cannot take the "
                            "restored filter \"%.*s\" (%s): prefiltering is off for the rest of this run\n",
                    r->filter_len > 200 ? 200 : (int)r->filter_len, r->filter, wm_matcher_status_name(st));
    }
    return 0;
}
