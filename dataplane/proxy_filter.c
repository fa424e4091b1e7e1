/* See proxy_filter.h. The state is small per connection and the common
 * cases are checked first: a PUBLISH without Subscription Identifiers, or
 * on a connection without neighborhood subscriptions, is forwarded after
 * one walk of its properties. */
#include "dataplane/proxy_filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/mqtt5_encode.h"
#include "codec/mqtt5_topic.h"
#include "codec/mqtt5_vbi.h"
#include "control/peid_props.h"
#include "dataplane/proxy_share.h"

struct wm_proxy_sub_rec {
    char *filter;
    uint32_t filter_len;
    uint32_t sid;        /* 0 = none */
    int64_t nbhd;        /* -1 = plain; index in the current resolution, NBHD_GONE if not in it */
    char *name;          /* the neighborhood's name (kept across reloads), NULL = plain */
    uint16_t pending;    /* packet id of the unacknowledged SUBSCRIBE; 0 = installed */
    uint32_t pos;        /* index of the filter in that SUBSCRIBE */
    bool dead;           /* to be removed at the end of a SUBACK */
    uint32_t reg_sub;    /* its handle in the prefilter registry, WM_SUB_NONE if not there */
    char *xpath;         /* content filter text (kept across reloads), NULL = none */
    uint32_t slot;       /* its slot in the worker's table; 0 with xpath: compiles for no schema (passes nothing) */
    bool shared;         /* holds a reference in the process's shared subscriptions (dataplane/proxy_share.h) */
    uint64_t order;      /* its SUBSCRIBE's place in wm_proxy_filter.order; 0 = restored from the session */
};

/* An UNSUBSCRIBE relayed to the broker, awaiting its UNSUBACK. */
struct wm_proxy_unsub {
    uint16_t pid;
    uint64_t order;      /* its place in wm_proxy_filter.order */
    uint8_t *filters;    /* copy of its payload (the filters, wire format) */
    uint32_t len;
};

static void unsub_apply(wm_proxy_filter *f, const wm_proxy_unsub *u, const wm_mqtt5_packet *ack);

/* The neighborhood of a record whose name the resolution no longer has
 * (reloaded since): an index past the last one, which contains nothing. */
#define NBHD_GONE ((int64_t)UINT32_MAX)

/* Most peids of one PUBLISH the proxy looks at; content filters decided by
 * one decode of the payload (more: decided in batches). Subscription
 * Identifiers are not bounded: every one is evaluated. */
#define MAX_CANDS 64

/* ------------------------------------------------------------ content filters */

/* The grace periods of a worker's table (proxy_filter.h): its one thread
 * frees the replaced snapshot and reader within the commit, so a grace
 * period started by a commit is over once the commit returns. The reader
 * hooks are never called (the table only starts and checks). */
static int qsbr_register(void *ctx, unsigned *idx) { (void)ctx; *idx = 0; return 0; }
static void qsbr_reader(void *ctx, unsigned idx) { (void)ctx; (void)idx; }
static uint64_t qsbr_start(void *ctx) { (void)ctx; return 1; }
static bool qsbr_check(void *ctx, uint64_t tok, bool wait) { (void)ctx; (void)tok; (void)wait; return true; }
static const wm_qsbr_ops one_thread_grace = { NULL, qsbr_register, qsbr_reader, qsbr_reader, qsbr_reader,
                                              qsbr_reader, qsbr_start, qsbr_check };

int wm_proxy_content_open(wm_proxy_content *ct, const wm_schema_reg *reg)
{
    ct->rd = NULL;
    ct->req.job = NULL;
    ct->awaiting = 0;
    ct->dropped = false;
    if (!(ct->tab = wm_content_new_borrowed(reg))) return -1;
    wm_content_reuse_slots(ct->tab, &one_thread_grace, WM_CONTENT_MAX_SLOTS);
    return 0;
}

/* The compile in flight has run: its snapshot is published with a new
 * reader; the old ones are freed at once (one thread), which ends the grace
 * period of the slots the change dropped: they are free for the next new
 * text (the table stays as small as the live texts). */
static void content_publish(wm_proxy_content *ct)
{
    wm_content_job *j = ct->req.job;
    ct->req.job = NULL;
    wm_content_snap *old = NULL;
    char why[300];
    wm_content_stats st;
    wm_content_get_stats(ct->tab, &st);
    uint64_t builds = st.builds;
    int rc = wm_content_job_end(ct->tab, j, &old, why, sizeof why);
    wm_content_get_stats(ct->tab, &st);
    if (ct->cnt) ct->cnt->filter_content_set_builds += st.builds - builds;
    /* failed: the old snapshot stays; the job's new texts are REFUSED with the reason */
    if (rc) return;
    if (ct->cnt) ct->cnt->filter_content_compiles++;
    wm_content_reader *rd = wm_content_reader_new(wm_content_current(ct->tab), &(wm_exi_limits){ .mem_cap = ct->mem_cap });
    wm_content_reader_free(ct->rd);
    ct->rd = rd;   /* NULL on out of memory: no content filter passes */
    wm_content_snap_free(old);
    wm_content_reclaim(ct->tab, false);
}

void wm_proxy_content_kick(wm_proxy_content *ct)
{
    if (ct->req.job && ct->dropped && wm_content_job_stale(ct->tab)) {
        /* every new text of the compile in flight lost its client: nobody
         * waits for it. Abandoned (cancelled; one inside its set build runs
         * on to its end on its thread, its result discarded), so the next
         * compile, of what is still wanted, starts now, on another thread. */
        wm_content_job_drop(ct->tab);   /* reads the job: before it can be freed */
        wm_content_job_free(ct->cc ? wm_proxy_compiler_abandon(ct->cc, &ct->req) : NULL);
        ct->req.job = NULL;
        if (ct->cnt) ct->cnt->filter_content_cancelled++;
    }
    ct->dropped = false;
    if (!ct->tab || ct->req.job) return;
    int rc;
    if (!(ct->req.job = wm_content_job_begin(ct->tab, &rc))) return;   /* nothing changed (or out of memory) */
    if (ct->cc) {
        wm_proxy_compiler_submit(ct->cc, &ct->req);
        return;
    }
    wm_content_job_run(ct->req.job);
    content_publish(ct);
}

bool wm_proxy_content_poll(wm_proxy_content *ct)
{
    if (!ct->req.job || !wm_proxy_compile_done(&ct->req)) return false;
    content_publish(ct);
    wm_proxy_content_kick(ct);
    return true;
}

/* Settles the table now, on the worker: the compile in flight published
 * (content_drain), then whatever changed since compiled inline
 * (content_settle). For what cannot wait: a reload (the only compile
 * left on the worker). */
static void content_drain(wm_proxy_content *ct)
{
    if (!ct->req.job) return;
    if (ct->cc) wm_proxy_compiler_wait(ct->cc, &ct->req);
    content_publish(ct);
}

static void content_settle(wm_proxy_content *ct)
{
    content_drain(ct);
    wm_proxy_compiler *cc = ct->cc;
    ct->cc = NULL;
    wm_proxy_content_kick(ct);
    ct->cc = cc;
}

void wm_proxy_content_close(wm_proxy_content *ct)
{
    if (ct->req.job) {
        /* nobody waits for it: a running one is cancelled and left to its
         * thread (dataplane/proxy_compile.h) */
        wm_content_job_free(ct->cc ? wm_proxy_compiler_abandon(ct->cc, &ct->req) : ct->req.job);
        ct->req.job = NULL;
    }
    /* a compile seen done may still be writing req.wake_fd, which the
     * caller may close next */
    if (ct->cc) wm_proxy_compiler_sync(ct->cc);
    wm_content_reader_free(ct->rd);
    wm_content_free(ct->tab);
    ct->rd = NULL;
    ct->tab = NULL;
}

/* Counts the slots of a reference just taken: the most a table used, and
 * the new texts that took a slot an earlier text had left. */
static void count_slots(const wm_proxy_filter_shared *sh, wm_proxy_counters *c, uint32_t live, uint32_t used)
{
    wm_content *tab = sh->content->tab;
    if (wm_content_count(tab) > live && wm_content_slots(tab) == used) c->filter_content_slots_reused++;
    if (wm_content_slots(tab) > c->filter_content_slots_peak) c->filter_content_slots_peak = wm_content_slots(tab);
}

/* A reference to text[0..len) in the worker's table, slots counted:
 * validated (wm_content_ref: a new text is validated here, on the worker) or
 * awaited (wm_content_want: PENDING, validated by the next compile). */
static int content_ref(const wm_proxy_filter_shared *sh, wm_proxy_counters *c, const char *text, size_t len,
                       bool validate, uint32_t *slot, char *why, size_t whylen)
{
    wm_content *tab = sh->content->tab;
    uint32_t live = wm_content_count(tab), used = wm_content_slots(tab);
    wm_content_stats st;
    wm_content_get_stats(tab, &st);
    uint64_t cached = st.room_cached;
    int rc = validate ? wm_content_ref(tab, text, len, slot, why, whylen)
                      : wm_content_want(tab, text, len, slot, why, whylen);
    if (rc == 0) count_slots(sh, c, live, used);
    wm_content_get_stats(tab, &st);
    c->filter_content_room_cached += st.room_cached - cached;
    return rc;
}

/* Drops a reference; the slot leaves the automaton with the next compile
 * (the worker's loop starts it: wm_proxy_content_kick). */
static void slot_unref(const wm_proxy_filter_shared *sh, uint32_t slot)
{
    if (!slot) return;
    wm_content_unref(sh->content->tab, slot);
    sh->content->dropped = true;
}

/* ------------------------------------------------------------ awaited texts */

static uint32_t want_index(const wm_proxy_filter *f, uint32_t slot)
{
    for (uint32_t i = 0; slot && i < f->n_want; i++)
        if (f->want[i] == slot) return i;
    return UINT32_MAX;
}

static void want_drop(wm_proxy_filter *f, uint32_t i)
{
    f->sh->content->awaiting--;
    slot_unref(f->sh, f->want[i]);
    f->want[i] = f->want[--f->n_want];
}

/* Has a record of f the content filter text? */
static bool rec_has_text(const wm_proxy_filter *f, const char *text, size_t len, uint32_t skip)
{
    for (uint32_t i = 0; i < f->n_recs; i++)
        if (i != skip && f->recs[i].xpath && strlen(f->recs[i].xpath) == len && !memcmp(f->recs[i].xpath, text, len))
            return true;
    return false;
}

/* Is record r's filter one of SUBSCRIBE sub's? Then sub replaces it (§3.8.4). */
static bool rec_replaced_by(const wm_proxy_sub_rec *r, const wm_mqtt5_packet *sub)
{
    size_t pos = 0;
    wm_mqtt5_subscription e;
    while (wm_mqtt5_subscription_next(sub, &pos, &e))
        if (r->filter_len == e.filter.len && memcmp(r->filter, e.filter.p, e.filter.len) == 0) return true;
    return false;
}

/* Would text, the content filter of SUBSCRIBE sub, be one more distinct
 * text for the connection, over its bound? A text that only records sub
 * replaces hold (same filter, §3.8.4) does not count: it goes with them
 * when the SUBACK comes (if the broker refuses sub, it stays and the new
 * text goes). Looked for only at the bound, and only until enough is freed. */
static bool over_quota(const wm_proxy_filter *f, const char *text, size_t len, uint32_t slot,
                       const wm_mqtt5_packet *sub)
{
    if (want_index(f, slot) != UINT32_MAX || rec_has_text(f, text, len, UINT32_MAX)) return false;
    uint32_t held = f->n_texts + f->n_want;
    if (held < f->sh->max_texts) return false;
    uint32_t freed = 0, need = held - f->sh->max_texts + 1;
    for (uint32_t i = 0; i < f->n_recs && freed < need; i++) {
        const char *x = f->recs[i].xpath;
        if (!x || !rec_replaced_by(&f->recs[i], sub)) continue;
        /* stays with a record sub does not replace, or counted at an earlier one */
        bool kept = false;
        for (uint32_t j = 0; j < f->n_recs && !kept; j++)
            kept = j != i && f->recs[j].xpath && strcmp(f->recs[j].xpath, x) == 0 &&
                   (j < i || !rec_replaced_by(&f->recs[j], sub));
        freed += !kept;
    }
    return freed < need;
}

/* Awaits text: an interest (wm_content_want, no compile) the next compile
 * validates. 0, or -1 / -2 (why set) as wm_content_want, or -3: the
 * worker's interests awaiting a compile are at their bound (max_awaiting). */
static int want_add(wm_proxy_filter *f, const char *text, size_t len, char *why, size_t whylen)
{
    const wm_proxy_filter_shared *sh = f->sh;
    if (sh->content->awaiting >= sh->content->max_awaiting) {
        snprintf(why, whylen, "%u content filters of this worker's connections are awaiting a compile (at most %u, "
                 "4 x wirematch-proxy --max-xpath-per-conn); try again later", sh->content->awaiting,
                 sh->content->max_awaiting);
        return -3;
    }
    if (f->n_want == f->cap_want) {
        uint32_t cap = f->cap_want ? 2 * f->cap_want : 4;
        uint32_t *w = realloc(f->want, (size_t)cap * sizeof *w);
        if (!w) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        f->want = w;
        f->cap_want = cap;
    }
    uint32_t slot;
    int rc = content_ref(sh, f->c, text, len, false, &slot, why, whylen);
    if (rc) return rc;
    f->want[f->n_want++] = slot;
    sh->content->awaiting++;
    return 0;
}

/* The packet's content filter: its first `xpath` User Property. */
static bool xpath_prop(const wm_mqtt5_packet *pkt, wm_mqtt5_bytes *xp)
{
    size_t pos = 0;
    wm_mqtt5_pair up;
    while (wm_mqtt5_user_prop_next(&pkt->props, &pos, &up))
        if (up.key.len == 5 && memcmp(up.key.p, "xpath", 5) == 0) {
            *xp = up.value;
            return true;
        }
    return false;
}

void wm_proxy_filter_prefetch(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt)
{
    wm_proxy_content *ct = f->sh->content;
    wm_mqtt5_bytes xp;
    if (dir != WM_PROXY_C2U || pkt->type != WM_MQTT5_SUBSCRIBE || !ct || !ct->tab || f->gone || !xpath_prop(pkt, &xp))
        return;
    const char *text = (const char *)xp.p, *r;
    uint32_t slot = wm_content_find(ct->tab, text, xp.len);
    char why[300];
    if (wm_content_state(ct->tab, slot, &r) != WM_CONTENT_S_READY && !over_quota(f, text, xp.len, slot, pkt) &&
        want_index(f, slot) == UINT32_MAX)
        want_add(f, text, xp.len, why, sizeof why);   /* refused or no room: seen when it is framed */
}

void wm_proxy_filter_client_gone(wm_proxy_filter *f)
{
    f->gone = true;
    while (f->n_want) want_drop(f, f->n_want - 1);
}

void wm_proxy_filter_init(wm_proxy_filter *f, const wm_proxy_filter_shared *sh, wm_proxy_counters *c)
{
    memset(f, 0, sizeof *f);
    f->sh = sh;
    f->c = c;
    f->problem_info = true;
    f->sid_next = WM_PROXY_SID_BASE;
}

static void alias_free(wm_proxy_alias_tab *t)
{
    for (uint32_t i = 0; t->topic && i <= t->max; i++) free(t->topic[i]);
    free(t->topic);
    free(t->known);
    memset(t, 0, sizeof *t);
}

/* A subscription the broker holds: mirrored into the session entry, which
 * owns its --prefilter registration (made with the record, at its
 * SUBSCRIBE: prefilter_add) from then on (it outlives the connection). */
static void rec_install(wm_proxy_filter *f, wm_proxy_sub_rec *r)
{
    r->pending = 0;
    if (f->sess_gen) {
        wm_proxy_saved_sub kept = { r->filter, r->filter_len, r->sid, r->name, r->reg_sub, r->xpath };
        if (wm_proxy_registry_session_put(f->sh->reg, f->sh->rd, f->cid, f->cid_len, f->sess_gen, &kept))
            r->reg_sub = WM_SUB_NONE;
    }
}

void wm_proxy_filter_reset(wm_proxy_filter *f)
{
    uint64_t expire = 0;
    if (f->session_expiry == 0xFFFFFFFFu) {
        expire = UINT64_MAX;
    } else if (f->session_expiry) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        expire = ((uint64_t)ts.tv_sec + f->session_expiry) * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    /* An UNSUBSCRIBE whose UNSUBACK never came back was relayed: the broker
     * takes it as it takes a SUBSCRIBE left so (below), in order. */
    for (uint32_t u = 0; u < f->n_unsubs; u++) {
        unsub_apply(f, &f->unsubs[u], NULL);
        free(f->unsubs[u].filters);
    }
    free(f->unsubs);
    for (uint32_t i = 0; i < f->n_recs; i++) {
        /* A SUBSCRIBE whose SUBACK never came back may have been installed
         * by the broker (the client can close right after sending it): the
         * session keeps it as if it had, so the connection resuming the
         * session filters its deliveries and --prefilter counts it. If the
         * broker refused it, the extra record only restricts. */
        if (f->recs[i].pending && !f->recs[i].dead && f->sess_gen) rec_install(f, &f->recs[i]);
        if (f->sh->reg && f->recs[i].reg_sub != WM_SUB_NONE)
            wm_proxy_registry_remove(f->sh->reg, f->sh->rd, f->recs[i].reg_sub, expire);
        slot_unref(f->sh, f->recs[i].slot);
        if (f->recs[i].shared)
            wm_proxy_shares_unref(wm_proxy_registry_shares(f->sh->reg), f->recs[i].filter, f->recs[i].filter_len);
        free(f->recs[i].filter);
        free(f->recs[i].name);
        free(f->recs[i].xpath);
    }
    while (f->n_want) want_drop(f, f->n_want - 1);
    free(f->want);
    if (f->sess_gen)
        wm_proxy_registry_session_detach(f->sh->reg, f->sh->rd, f->cid, f->cid_len, f->sess_gen, expire);
    free(f->cid);
    free(f->recs);
    alias_free(&f->alias[0]);
    alias_free(&f->alias[1]);
    free(f->qos2_withheld[0]);
    free(f->qos2_withheld[1]);
    wm_proxy_answers_reset(&f->answers[0]);
    wm_proxy_answers_reset(&f->answers[1]);
    wm_proxy_filter_init(f, f->sh, f->c);
}

/* ------------------------------------------------------------ records */

/* A proxy identifier of the session (BASE up) as this process puts it on
 * the wire, turned by its epoch (proxy_filter.h), and back. PLAIN and the
 * client's own identifiers are never turned. */
static uint32_t sid_to_wire(const wm_proxy_filter *f, uint32_t sid)
{
    if (sid < WM_PROXY_SID_BASE || sid >= WM_PROXY_SID_PLAIN) return sid;
    return WM_PROXY_SID_BASE + (uint32_t)(((uint64_t)(sid - WM_PROXY_SID_BASE) + f->sh->sid_epoch) % WM_PROXY_SID_SPAN);
}

static uint32_t sid_from_wire(const wm_proxy_filter *f, uint32_t w)
{
    if (w < WM_PROXY_SID_BASE || w >= WM_PROXY_SID_PLAIN) return w;
    return WM_PROXY_SID_BASE + (uint32_t)(((uint64_t)(w - WM_PROXY_SID_BASE) + WM_PROXY_SID_SPAN -
                                           f->sh->sid_epoch % WM_PROXY_SID_SPAN) % WM_PROXY_SID_SPAN);
}

static bool rec_filter_is(const wm_proxy_sub_rec *r, wm_mqtt5_bytes fl)
{
    return r->filter_len == fl.len && memcmp(r->filter, fl.p, fl.len) == 0;
}

/* References the connection's records of shared filter fl hold on its
 * group (dataplane/proxy_share.h): the ones a new subscription of fl
 * replaces (§3.8.4). */
static uint64_t own_share_refs(const wm_proxy_filter *f, wm_mqtt5_bytes fl)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < f->n_recs; i++) n += f->recs[i].shared && rec_filter_is(&f->recs[i], fl);
    return n;
}

/* Shared record i goes while another record of the connection with the same
 * filter stays (a replacement refused by the broker or rolled back, an
 * UNSUBSCRIBE while a re-subscription is pending): the group's spec is the
 * one that stays, if nobody else is in it (rec_add let the replacement take
 * it). */
static void share_leave(wm_proxy_filter *f, uint32_t i)
{
    wm_mqtt5_bytes fl = { (const uint8_t *)f->recs[i].filter, f->recs[i].filter_len };
    for (uint32_t k = 0; k < f->n_recs; k++)
        if (k != i && !f->recs[k].dead && f->recs[k].shared && rec_filter_is(&f->recs[k], fl)) {
            wm_proxy_shares_respec(wm_proxy_registry_shares(f->sh->reg), f->recs[i].filter, f->recs[i].filter_len,
                                   f->recs[k].name, f->recs[k].xpath, own_share_refs(f, fl));
            return;
        }
}

static void rec_remove(wm_proxy_filter *f, uint32_t i)
{
    if (f->recs[i].nbhd >= 0 || f->recs[i].xpath) f->n_nbhd_recs--;
    if (f->recs[i].xpath && !rec_has_text(f, f->recs[i].xpath, strlen(f->recs[i].xpath), i)) f->n_texts--;
    slot_unref(f->sh, f->recs[i].slot);
    if (f->recs[i].shared) {
        share_leave(f, i);
        wm_proxy_shares_unref(wm_proxy_registry_shares(f->sh->reg), f->recs[i].filter, f->recs[i].filter_len);
    }
    if (f->sh->reg && f->recs[i].reg_sub != WM_SUB_NONE)
        wm_proxy_registry_remove(f->sh->reg, f->sh->rd, f->recs[i].reg_sub, 0);
    free(f->recs[i].filter);
    free(f->recs[i].name);
    free(f->recs[i].xpath);
    f->recs[i] = f->recs[--f->n_recs];
}

/* A content filter's slot in the worker's current table for text[0..len):
 * 0 if it compiles for no schema there (or no --schemas, or no room).
 * validate: a new text is validated now, on the worker (a reload); else it
 * is awaited, validated and compiled by the next compile on the compile
 * thread (a restored record: PENDING until then, REFUSED and passing
 * nothing if it compiles for no schema). */
static uint32_t slot_ref(const wm_proxy_filter *f, const char *text, size_t len, bool validate)
{
    uint32_t slot = 0;
    char why[300];
    const wm_proxy_filter_shared *sh = f->sh;
    if (!sh->content || !sh->content->tab || content_ref(sh, f->c, text, len, validate, &slot, why, sizeof why))
        return 0;
    return slot;
}

/* Records a subscription; name: its neighborhood's (NUL-terminated), NULL
 * for none, nbhd its index; xpath (may be NULL) is its content filter, which
 * takes a reference in the worker's table (validated by the caller when it
 * comes from a SUBSCRIBE; from a session entry it is awaited, compiled by
 * the worker's next compile, and one that no longer compiles passes
 * nothing). A shared subscription takes a
 * reference to its group's spec (dataplane/proxy_share.h); restored: the
 * broker holds it already, so it is taken even when the group's members
 * here use another spec (counted). Returns REC_OK, REC_FULL if the record
 * cannot be made (records full, memory), or REC_SHARE_CONFLICT (nothing
 * recorded; why[0..whylen) names the group's spec). */
enum { REC_OK, REC_FULL, REC_SHARE_CONFLICT };
static int rec_add(wm_proxy_filter *f, wm_mqtt5_bytes fl, uint32_t sid, int64_t nbhd, const char *name,
                   uint16_t pid, uint32_t pos, const wm_mqtt5_bytes *xpath, bool restored, char *why, size_t whylen)
{
    if (f->n_recs == f->sh->max_records) return REC_FULL;
    if (f->n_recs == f->cap_recs) {
        uint32_t cap = f->cap_recs ? f->cap_recs * 2 : 8;
        wm_proxy_sub_rec *r = realloc(f->recs, (size_t)cap * sizeof *r);
        if (!r) return false;
        f->recs = r;
        f->cap_recs = cap;
    }
    char *s = malloc(fl.len ? fl.len : 1), *nm = name ? strdup(name) : NULL, *xp = NULL;
    if (xpath && (xp = malloc((size_t)xpath->len + 1))) {
        memcpy(xp, xpath->p, xpath->len);
        xp[xpath->len] = 0;
    }
    if (!s || (name && !nm) || (xpath && !xp)) {
        free(s);
        free(nm);
        free(xp);
        return REC_FULL;
    }
    memcpy(s, fl.p, fl.len);
    bool shared = false;
    if (f->sh->reg && wm_topic_share_split((const char *)fl.p, fl.len, NULL)) {
        int rc = wm_proxy_shares_ref(wm_proxy_registry_shares(f->sh->reg), (const char *)fl.p, fl.len, nm, xp,
                                     own_share_refs(f, fl), restored, why, whylen);
        if (rc == 1 && !restored) {
            free(s);
            free(nm);
            free(xp);
            return REC_SHARE_CONFLICT;
        }
        if (rc == 1) f->c->filter_share_mixed_restored++;
        shared = rc >= 0;
    }
    /* from a SUBSCRIBE the text is READY (found, not validated again) */
    uint32_t slot = xp ? slot_ref(f, xp, xpath->len, false) : 0;
    if (xp && !rec_has_text(f, xp, xpath->len, UINT32_MAX)) f->n_texts++;
    f->recs[f->n_recs++] = (wm_proxy_sub_rec){ s, fl.len, sid, nbhd, nm, pid, pos, false, WM_SUB_NONE, xp, slot, shared,
                                               pid ? f->order + 1 : 0 };
    /* filtered records (neighborhood or content) keep the slow path of on_publish_down on */
    if (nbhd >= 0 || xp) f->n_nbhd_recs++;
    return REC_OK;
}

/* Does topic t match the record's filter (the inner filter of a shared one)? */
static bool rec_matches(const wm_proxy_sub_rec *r, wm_mqtt5_bytes t)
{
    wm_topic_share sh;
    if (wm_topic_share_split(r->filter, r->filter_len, &sh))
        return wm_topic_match(sh.filter, sh.filter_len, (const char *)t.p, t.len);
    return wm_topic_match(r->filter, r->filter_len, (const char *)t.p, t.len);
}

void wm_proxy_filter_reload_begin(wm_proxy_filter_shared *sh, const wm_proxy_spatial *sp,
                                  const wm_schema_reg *schemas, wm_proxy_content *old)
{
    sh->sp = sp;
    memset(old, 0, sizeof *old);
    if (sh->content) {
        /* the compile thread holds &sh->content->req until the job has run */
        content_drain(sh->content);
        *old = *sh->content;
        /* A new table over the new registry; filled by _retable, committed
         * once by _end. On out of memory it stays NULL: no content filter
         * passes (every slot is 0). The compile in flight is the old
         * table's (closed by _end). */
        wm_proxy_content_open(sh->content, schemas);
    }
    if (sh->reg && wm_proxy_registry_prefilter(sh->reg)) {
        /* The old reader's matcher is closed once every worker has moved
         * on: a reader of the new one (freeing the old takes the thread
         * offline; the new one is online). NULL: every PUBLISH passes. */
        if (sh->rd) wm_matcher_reader_free(sh->rd);
        sh->rd = wm_proxy_registry_reader(sh->reg, &sh->rd_gen);
    }
}

void wm_proxy_filter_reload_end(wm_proxy_filter_shared *sh, wm_proxy_content *old)
{
    /* A set that does not compile together leaves no snapshot: no reader, nothing passes. */
    if (sh->content && sh->content->tab) content_settle(sh->content);
    wm_proxy_content_close(old);
}

void wm_proxy_filter_retable(wm_proxy_filter *f, uint32_t *nbhd_gone, uint32_t *xpath_gone)
{
    for (uint32_t i = 0; i < f->n_recs; i++) {
        wm_proxy_sub_rec *r = &f->recs[i];
        if (r->name) {
            r->nbhd = wm_proxy_spatial_nbhd(f->sh->sp, (const uint8_t *)r->name, (uint32_t)strlen(r->name));
            if (r->nbhd < 0) {
                r->nbhd = NBHD_GONE;
                (*nbhd_gone)++;
            }
        }
        /* The old table goes as a whole: its references are not dropped one by one. */
        if (r->xpath) {
            r->slot = slot_ref(f, r->xpath, strlen(r->xpath), true);
            if (!r->slot) (*xpath_gone)++;
        }
    }
    /* Likewise the texts awaited: a held SUBSCRIBE asks again in the new
     * table when it is framed again. */
    f->n_want = 0;
}

/* ------------------------------------------------------------ packets the proxy sends */

/* The proxy's answer p[0..n) to side s, the sender of the packet it
 * answers, into the queue towards it (back), behind the peer's answers to
 * s's earlier packets (dataplane/proxy_answers.h). */
static bool answer(wm_proxy_filter *f, int s, wm_proxy_queue *back, const uint8_t *p, uint32_t n)
{
    wm_proxy_answers_put_result r = wm_proxy_answers_put(&f->answers[s], back, p, n);
    if (r == WM_PROXY_ANSWERS_WAITS) f->c->filter_acks_waited++;
    if (r == WM_PROXY_ANSWERS_OVERFLOW) f->c->filter_acks_overflow++;
    return r != WM_PROXY_ANSWERS_FAILED;
}

static bool send_ack(wm_proxy_filter *f, int s, wm_proxy_queue *back, uint8_t type, uint16_t pid, uint8_t reason)
{
    wm_mqtt5_packet a;
    memset(&a, 0, sizeof a);
    a.type = type;
    a.packet_id = pid;
    a.reason_code = reason;
    uint8_t out[8];
    size_t n;
    if (wm_mqtt5_encode(&a, out, sizeof out, &n) != WM_MQTT5_ENC_OK) return false;
    return answer(f, s, back, out, (uint32_t)n);
}

/* A SUBACK refusing every filter of `sub` with `code`, with `why` as Reason
 * String when the client wants problem information and it fits. */
static bool send_suback_refusal(wm_proxy_filter *f, const wm_mqtt5_packet *sub, uint8_t code, const char *why,
                                uint32_t client_max, wm_proxy_queue *back)
{
    /* One reason code per filter: the SUBACK grows with the SUBSCRIBE
     * (count <= its length), plus fixed header, id and properties. */
    size_t why_len = strlen(why), cap = (size_t)sub->count + why_len + 32;
    uint8_t *codes = malloc(sub->count ? sub->count : 1), *out = malloc(cap);
    bool ok = false;
    if (!codes || !out) goto done;
    memset(codes, code, sub->count);
    wm_mqtt5_packet a;
    memset(&a, 0, sizeof a);
    a.type = WM_MQTT5_SUBACK;
    a.packet_id = sub->packet_id;
    a.payload = (wm_mqtt5_bytes){ codes, sub->count };
    a.count = sub->count;
    size_t n;
    if (f->problem_info) {
        a.props.present = 1ull << WM_MQTT5_PROP_REASON_STRING;
        a.props.v[WM_MQTT5_PROP_REASON_STRING].s = (wm_mqtt5_bytes){ (const uint8_t *)why, (uint32_t)why_len };
        if (wm_mqtt5_encode(&a, out, cap, &n) == WM_MQTT5_ENC_OK && (!client_max || n <= client_max)) {
            ok = answer(f, WM_PROXY_C2U, back, out, (uint32_t)n);
            goto done;
        }
        a.props.present = 0;   /* §3.9.2.1.2: not if it would exceed the Maximum Packet Size */
    }
    ok = wm_mqtt5_encode(&a, out, cap, &n) == WM_MQTT5_ENC_OK && answer(f, WM_PROXY_C2U, back, out, (uint32_t)n);
done:
    free(codes);
    free(out);
    return ok;
}

/* Receives a QoS 2 PUBLISH from side dir on its receiver's behalf: PUBREC
 * now, PUBCOMP when its PUBREL comes (on_pubrel). */
static bool receive_qos2(wm_proxy_filter *f, int dir, uint16_t id, uint8_t reason, wm_proxy_queue *back)
{
    if (!f->qos2_withheld[dir] && !(f->qos2_withheld[dir] = calloc(65536 / 64, sizeof(uint64_t)))) return false;
    if (!send_ack(f, dir, back, WM_MQTT5_PUBREC, id, reason)) return false;
    /* A PUBREL follows only a PUBREC below 0x80 (§4.3.3): after an error one
     * (--prefilter's 0x83) the identifier is free again, and its next PUBREL
     * belongs to a PUBLISH the broker has. */
    if (reason < 0x80) f->qos2_withheld[dir][id >> 6] |= 1ull << (id & 63);
    return true;
}

/* ------------------------------------------------------------ sessions */

static bool set_cid(wm_proxy_filter *f, wm_mqtt5_bytes id)
{
    uint8_t *c = malloc(id.len ? id.len : 1);
    if (!c) return false;
    memcpy(c, id.p, id.len);
    free(f->cid);
    f->cid = c;
    f->cid_len = id.len;
    return true;
}

/* A record kept by the session entry comes back, installed. */
static void restore_rec(void *ctx, const wm_proxy_saved_sub *k)
{
    wm_proxy_filter *f = ctx;
    if (k->sid >= f->sid_next && k->sid < WM_PROXY_SID_PLAIN) f->sid_next = k->sid + 1;
    int64_t nbhd = -1;
    if (k->nbhd) {
        nbhd = wm_proxy_spatial_nbhd(f->sh->sp, (const uint8_t *)k->nbhd, (uint32_t)strlen(k->nbhd));
        if (nbhd < 0) nbhd = NBHD_GONE;
    }
    /* No room: this connection cannot attribute that subscription's
     * deliveries. A content filter that no longer compiles (the registry was
     * reloaded since) is recorded passing nothing. */
    wm_mqtt5_bytes xp = { (const uint8_t *)k->xpath, k->xpath ? (uint32_t)strlen(k->xpath) : 0 };
    char why[400];
    if (rec_add(f, (wm_mqtt5_bytes){ (const uint8_t *)k->filter, k->filter_len }, k->sid, nbhd, k->nbhd, 0, 0,
                k->xpath ? &xp : NULL, true, why, sizeof why) != REC_OK)
        f->subs_unknown = true;
}

/* Has a record a content filter that is not compiled yet (restored from
 * the session entry, awaiting the worker's next compile)? */
static bool resume_pending(const wm_proxy_filter *f)
{
    const char *r;
    for (uint32_t i = 0; i < f->n_recs; i++)
        if (f->recs[i].slot && wm_content_state(f->sh->content->tab, f->recs[i].slot, &r) == WM_CONTENT_S_PENDING)
            return true;
    return false;
}

/* A resumed session's content filters that its worker took no more (they
 * compile for no schema of the registry now, or not together with the texts
 * accepted on the worker since): MQTT 5 has no packet that withdraws one
 * subscription from a client (only a DISCONNECT of the whole connection), so
 * the session goes on, those records pass nothing (counted per withheld
 * delivery), and each is counted and logged with its reason. A SUBSCRIBE of
 * the same filter and text gets the reason in its SUBACK (or the filter
 * back, if room came back meanwhile). */
static void report_resume_refused(wm_proxy_filter *f)
{
    const char *r = NULL;
    for (uint32_t i = 0; i < f->n_recs; i++) {
        const wm_proxy_sub_rec *rec = &f->recs[i];
        if (!rec->xpath) continue;
        if (rec->slot && wm_content_state(f->sh->content->tab, rec->slot, &r) != WM_CONTENT_S_REFUSED) continue;
        f->c->filter_resume_refused++;
        fprintf(stderr, "wirematch-proxy: session \"%.*s\" resumed: subscription \"%.*s\" passes nothing, its content "
                        "filter is refused: %s\n", (int)(f->cid_len > 200 ? 200 : f->cid_len), (const char *)f->cid,
                (int)(rec->filter_len > 200 ? 200 : rec->filter_len), rec->filter,
                rec->slot ? r : "it compiles for no schema of the registry in force");
    }
}

/* Do a resumed session's deliveries still wait for its content filters'
 * compile? Once they no longer do, the records it refused are reported
 * (looked at with each packet of the connection until then). */
static bool resume_waits(wm_proxy_filter *f)
{
    if (!f->resume_wait) return false;
    if ((f->resume_wait = resume_pending(f))) return true;
    report_resume_refused(f);
    return false;
}

/* The broker accepted the connection: which session goes on (§3.2.2.1.1). */
static bool on_connack(wm_proxy_filter *f, const wm_mqtt5_packet *pkt)
{
    if (pkt->reason_code >= 0x80 || f->connected || !f->sh->reg) return true;
    f->connected = true;
    if (!f->cid) {
        /* A CONNACK for no CONNECT (a broker breaking the protocol): no
         * session to name; if it claims one, nothing in it is known. */
        f->subs_unknown = pkt->session_present;
        return true;
    }
    const wm_mqtt5_props *pr = &pkt->props;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER) &&
        !set_cid(f, pr->v[WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER].s))
        return false;
    /* The broker's own Session Expiry Interval wins (§3.2.2.3.2). */
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL))
        f->session_expiry = pr->v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u;
    bool fresh = f->clean_start || !pkt->session_present;
    wm_proxy_session_ref ref = wm_proxy_registry_session_attach(f->sh->reg, f->sh->rd, f->cid, f->cid_len, fresh,
                                                                f->session_expiry != 0, restore_rec, f);
    f->sess_gen = ref.gen;
    if (ref.gen)
        wm_proxy_registry_session_interval(f->sh->reg, f->sh->rd, f->cid, f->cid_len, ref.gen, f->session_expiry);
    if (ref.sid_next > f->sid_next) f->sid_next = ref.sid_next;
    if (!ref.complete) f->subs_unknown = true;
    /* The session's queued deliveries follow the CONNACK at once: if some
     * of its content filters are not compiled yet, they wait for the
     * compile (on the compile thread, started at the worker's next turn);
     * what it refuses is reported once it is published. */
    if ((f->resume_wait = resume_pending(f))) f->c->filter_resume_held++;
    else report_resume_refused(f);
    return true;
}

/* ------------------------------------------------------------ client -> broker */

/* The largest packet the client takes: its own Maximum Packet Size, not the
 * one announced for it to the broker (WM_PROXY_SID_ROOM more), within the
 * proxy's bound (cfg). 0 = none. */
static uint32_t client_max_of(const wm_proxy_filter *f, const wm_mqtt5_config cfg[2])
{
    uint32_t m = cfg[WM_PROXY_U2C].maximum_packet_size;
    return f->client_max && (!m || f->client_max < m) ? f->client_max : m;
}

/* A SUBSCRIBE the proxy refuses never reaches the broker, so a filter of it
 * that the connection already subscribed to keeps its subscription at the
 * broker, and its record here, unchanged: the §3.8.4 replacement happens
 * only for a subscription that is made (a broker refusing one, as
 * mosquitto's ACL does, keeps the old one too). The old neighborhood or
 * content filter goes on deciding its deliveries, which the client could
 * not know from the refusal alone: the Reason String names the first such
 * subscription and what still filters it, and each such filter is counted
 * (refused_kept). Before 2026-12-02 this was silent (REVIEW12 #29). */
static wm_proxy_action refuse(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, uint8_t code, const char *why,
                              uint32_t client_max, wm_proxy_queue *back)
{
    const wm_proxy_sub_rec *kept = NULL;
    uint32_t n_kept = 0;
    size_t pos = 0;
    wm_mqtt5_subscription e;
    while (wm_mqtt5_subscription_next(pkt, &pos, &e))
        for (uint32_t i = 0; i < f->n_recs; i++)
            if (!f->recs[i].dead && rec_filter_is(&f->recs[i], e.filter)) {
                if (!kept) kept = &f->recs[i];
                n_kept++;
                break;
            }
    char full[1200];
    if (kept) {
        f->c->filter_refused_kept += n_kept;
        char more[48] = "";
        if (n_kept > 1) snprintf(more, sizeof more, " (and %u more filters)", n_kept - 1);
        int fl = kept->filter_len > 100 ? 100 : (int)kept->filter_len;
        if (kept->name && kept->xpath)
            snprintf(full, sizeof full, "%s; the existing subscription to \"%.*s\"%s stays unchanged, with "
                     "neighborhood \"%.100s\" and xpath \"%.100s\"", why, fl, kept->filter, more, kept->name, kept->xpath);
        else if (kept->name || kept->xpath)
            snprintf(full, sizeof full, "%s; the existing subscription to \"%.*s\"%s stays unchanged, with %s "
                     "\"%.100s\"", why, fl, kept->filter, more, kept->name ? "neighborhood" : "xpath",
                     kept->name ? kept->name : kept->xpath);
        else
            snprintf(full, sizeof full, "%s; the existing subscription to \"%.*s\"%s stays unchanged, without "
                     "neighborhood or xpath", why, fl, kept->filter, more);
        why = full;
    }
    return send_suback_refusal(f, pkt, code, why, client_max, back) ? WM_PROXY_DROP : WM_PROXY_FAIL;
}

/* Beyond enum wm_content_state: why a content filter was not taken. */
enum { XPATH_QUOTA = 16, XPATH_NO_SLOT, XPATH_NO_ROOM, XPATH_BUSY, XPATH_GONE };

/* Where the content filter xpath of SUBSCRIBE sub stands for f: READY (its
 * slot referenced in *vslot), REFUSED (reason in why: it compiles for no
 * schema, no --schemas), PENDING (awaited: the compile is requested, the
 * SUBSCRIBE waits), XPATH_QUOTA (one distinct text more than the
 * connection's max_texts), XPATH_NO_SLOT (the worker's table is full),
 * XPATH_NO_ROOM (valid alone, but the worker's set does not compile with it
 * on top of the texts accepted before it; a text refused so for another
 * SUBSCRIBE is tried again once a text has gone, control/content_filters.h
 * "No room"), XPATH_BUSY (the worker's texts awaiting a
 * compile are at their bound) or XPATH_GONE (not compiled, and the client
 * left: nobody waits for it). A text's interest is dropped once it is
 * READY or REFUSED. */
static int xpath_ready(wm_proxy_filter *f, const wm_mqtt5_packet *sub, wm_mqtt5_bytes xpath, uint32_t *vslot,
                       char *why, size_t whylen)
{
    wm_proxy_content *ct = f->sh->content;
    if (!ct || !ct->tab) {   /* no --schemas; or out of memory at a reload */
        snprintf(why, whylen, "no schema registry is loaded (wirematch-proxy --schemas)");
        return WM_CONTENT_S_REFUSED;
    }
    const char *text = (const char *)xpath.p, *r;
    uint32_t slot = wm_content_find(ct->tab, text, xpath.len), wi = want_index(f, slot);
    if (wi == UINT32_MAX && over_quota(f, text, xpath.len, slot, sub)) return XPATH_QUOTA;
    int st = wm_content_state(ct->tab, slot, &r);
    /* refused for want of room for another SUBSCRIBE: wanted again, tried
     * again if texts have gone since, else refused again at once (below) */
    if (st == WM_CONTENT_S_REFUSED && wi == UINT32_MAX && wm_content_no_room(ct->tab, slot)) st = WM_CONTENT_S_PENDING;
    if (st == WM_CONTENT_S_READY) {
        content_ref(f->sh, f->c, text, xpath.len, true, vslot, why, whylen);   /* found: cannot fail */
    } else if (st != WM_CONTENT_S_REFUSED) {
        if (f->gone) return XPATH_GONE;
        if (wi != UINT32_MAX) return WM_CONTENT_S_PENDING;
        int rc = want_add(f, text, xpath.len, why, whylen);
        if (rc) return rc == -2 ? XPATH_NO_SLOT : rc == -3 ? XPATH_BUSY : WM_CONTENT_S_REFUSED;
        wi = f->n_want - 1;
        slot = f->want[wi];
        /* REFUSED at once: proved not to fit, and no text has gone since (no compile) */
        if ((st = wm_content_state(ct->tab, slot, &r)) != WM_CONTENT_S_REFUSED) {
            f->c->filter_xpath_held++;
            return WM_CONTENT_S_PENDING;
        }
    }
    if (st == WM_CONTENT_S_REFUSED) {
        snprintf(why, whylen, "%s", r);
        if (wm_content_no_room(ct->tab, slot)) st = XPATH_NO_ROOM;
    }
    if (wi != UINT32_MAX) want_drop(f, wi);
    return st;
}

/* --prefilter: the SUBSCRIBE's records from `first` on are registered now,
 * before the broker has them: one the registry cannot take (a table full,
 * memory: REVIEW14 finding 1) is refused to this client alone, the whole
 * SUBSCRIBE with 0x97 Quota exceeded (0x8F Topic Filter invalid if the
 * matcher finds it invalid; MQTT 5.0 §3.9.3), as --max-subs-per-conn does,
 * so that the registry stays exact for everyone. Registered at the SUBSCRIBE
 * rather than at its SUBACK, a subscription counts from the moment the
 * broker may install it (a refused one leaves with its record, on_suback),
 * which only lets more pass. Returns true if it refused (*a: the action). */
static bool prefilter_add(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, uint32_t first, uint32_t client_max,
                          wm_proxy_queue *back, wm_proxy_action *a)
{
    if (!f->sh->reg || !wm_proxy_registry_prefilter(f->sh->reg)) return false;
    for (uint32_t i = first; i < f->n_recs; i++) {
        wm_proxy_sub_rec *r = &f->recs[i];
        wm_matcher_status st;
        r->reg_sub = wm_proxy_registry_add(f->sh->reg, f->sh->rd,
                                           (wm_mqtt5_bytes){ (const uint8_t *)r->filter, r->filter_len }, r->name,
                                           r->xpath != NULL, &st);
        if (r->reg_sub != WM_SUB_NONE) continue;
        char why[400];
        snprintf(why, sizeof why, "the proxy's subscription registry (--prefilter) cannot take \"%.*s\": %s",
                 r->filter_len > 100 ? 100 : (int)r->filter_len, r->filter, wm_matcher_status_message(st));
        while (f->n_recs > first) rec_remove(f, f->n_recs - 1);   /* (with their registrations) */
        f->c->filter_suback_prefilter += pkt->count;
        *a = refuse(f, pkt, st == WM_MATCHER_E_INVALID_FILTER ? 0x8F : 0x97, why, client_max, back);
        return true;
    }
    return false;
}

static wm_proxy_action on_subscribe_x(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const wm_mqtt5_config cfg[2],
                                      wm_proxy_queue *back, uint8_t *scratch, uint32_t cap, uint32_t *out_len,
                                      uint32_t *vslot)
{
    const wm_mqtt5_props *pr = &pkt->props;
    uint32_t client_max = client_max_of(f, cfg);
    uint32_t sid = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER)
                       ? pr->v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u : 0;
    if (sid >= WM_PROXY_SID_BASE) {
        f->c->filter_sid_reserved++;
        char why[128];
        snprintf(why, sizeof why, "subscription identifiers from %u up are reserved by wirematch-proxy",
                 WM_PROXY_SID_BASE);
        return refuse(f, pkt, 0x83, why, client_max, back);
    }
    int64_t nbhd = -1;
    bool has_nbhd = false, has_xpath = false;
    wm_mqtt5_bytes xpath = { 0 };
    size_t pos = 0;
    wm_mqtt5_pair up;
    while ((!has_nbhd || !has_xpath) && wm_mqtt5_user_prop_next(pr, &pos, &up)) {
        if (!has_nbhd && up.key.len == 4 && memcmp(up.key.p, "nbhd", 4) == 0) {
            has_nbhd = true;
            nbhd = wm_proxy_spatial_nbhd(f->sh->sp, up.value.p, up.value.len);
            if (nbhd < 0) {
                f->c->filter_suback_unknown_nbhd += pkt->count;
                char why[160];
                snprintf(why, sizeof why, "unknown neighborhood \"%.*s\"", up.value.len > 100 ? 100 : (int)up.value.len,
                         (const char *)up.value.p);
                return refuse(f, pkt, 0x80, why, client_max, back);
            }
        } else if (!has_xpath && up.key.len == 5 && memcmp(up.key.p, "xpath", 5) == 0) {
            has_xpath = true;
            xpath = up.value;
        }
    }
    /* A content filter is validated and compiled before anything reaches
     * the broker: a bad one is never installed (the subscriber must not get
     * everything), and the broker delivers for a good one only once the
     * worker's automaton has it. */
    if (has_xpath) {
        char why[360], msg[400];
        int st = xpath_ready(f, pkt, xpath, vslot, why, sizeof why);
        if (st == WM_CONTENT_S_PENDING) return WM_PROXY_HOLD;
        if (st == XPATH_GONE) {
            f->c->filter_xpath_dropped_gone++;
            return WM_PROXY_DROP;
        }
        if (st == XPATH_BUSY) {
            f->c->filter_suback_compile_busy += pkt->count;
            return refuse(f, pkt, 0x97, why, client_max, back);
        }
        if (st == XPATH_QUOTA) {
            f->c->filter_suback_xpath_quota += pkt->count;
            snprintf(msg, sizeof msg, "too many distinct content filters on this connection (at most %u, "
                     "wirematch-proxy --max-xpath-per-conn)", f->sh->max_texts);
            return refuse(f, pkt, 0x97, msg, client_max, back);
        }
        if (st == XPATH_NO_SLOT || st == XPATH_NO_ROOM) {
            f->c->filter_suback_xpath_quota += pkt->count;
            snprintf(msg, sizeof msg, "the worker's content filters are full: %s", why);
            return refuse(f, pkt, 0x97, msg, client_max, back);
        }
        if (st != WM_CONTENT_S_READY) {
            f->c->filter_suback_bad_xpath += pkt->count;
            snprintf(msg, sizeof msg, "invalid xpath: %s", why);
            return refuse(f, pkt, 0x80, msg, client_max, back);
        }
    }
    bool filtered = nbhd >= 0 || *vslot;
    /* A broker without identifiers (§3.2.2.3.12) cannot tell the proxy which
     * subscription a delivery is for, so a filter cannot be kept: refuse it
     * here rather than let the broker refuse an identifier. */
    if (filtered && f->sid_unavailable) {
        f->c->filter_sid_unavailable++;
        return refuse(f, pkt, 0xA1, "the broker does not support Subscription Identifiers, which "
                      "neighborhood and content subscriptions need", client_max, back);
    }
    /* A filtered subscription that outlives the connection must be kept in
     * the session table, or the connection resuming the session could not
     * filter it (it would withhold everything it cannot attribute). */
    if (filtered && f->connected && f->session_expiry && !f->sess_gen && f->sh->reg) {
        f->c->filter_session_full++;
        return refuse(f, pkt, 0x97, "the proxy's table of persistent sessions is full", client_max, back);
    }
    /* Every subscription without an identifier gets one, so every delivery
     * names what it was delivered for, even from a broker that sends one
     * PUBLISH for several overlapping subscriptions (§3.3.4). A filtered one
     * gets an identifier the session never used: one derived from the
     * neighborhood or content filter would be renumbered by a reload and
     * could then name an old record's queued deliveries. */
    bool add_sid = sid == 0 && !f->sid_unavailable;
    if (add_sid && filtered) {
        /* The session entry numbers (one numbering for every connection
         * attached to it, and with --state only below what the file holds:
         * a kill then never lets the next process hand it out again). A
         * connection without an entry numbers on its own: its session ends
         * with it. */
        wm_proxy_sid_status st = f->sess_gen ? wm_proxy_registry_session_sid(f->sh->reg, f->sh->rd, f->cid, f->cid_len,
                                                                             f->sess_gen, f->sid_next, &sid)
                                             : WM_PROXY_SID_STALE;
        if (st == WM_PROXY_SID_STALE) {
            st = f->sid_next < WM_PROXY_SID_PLAIN ? WM_PROXY_SID_OK : WM_PROXY_SID_NONE_LEFT;
            sid = f->sid_next;
        }
        if (st == WM_PROXY_SID_WAIT) {
            /* until the next save has it (the worker is woken then), or
             * saves have failed for WM_PROXY_STATE_UNWRITABLE_NS (woken
             * too, then answered UNSAVED); a client gone meanwhile is not
             * waited for */
            if (f->gone) return WM_PROXY_DROP;
            f->c->filter_sid_wait++;
            return WM_PROXY_HOLD;
        }
        if (st == WM_PROXY_SID_UNSAVED) {
            /* Handing out an identifier the file does not cover would let
             * the next process, after a crash, give it to another
             * subscription of the session (its deliveries then judged by
             * the wrong record): refused, the client may try again. */
            f->c->filter_sid_unsaved++;
            return refuse(f, pkt, 0x80, "the proxy cannot write its --state file, so it cannot reserve a "
                          "subscription identifier for this session now; try again later", client_max, back);
        }
        if (st == WM_PROXY_SID_NONE_LEFT) {
            f->c->filter_records_full++;
            return refuse(f, pkt, 0x97, "the proxy has no subscription identifier left for this session",
                          client_max, back);
        }
        if (sid >= f->sid_next) f->sid_next = sid + 1;
    } else if (add_sid) {
        sid = WM_PROXY_SID_PLAIN;
    }
    else if (sid == 0) sid = WM_PROXY_SID_PLAIN;   /* recorded as plain; deliveries carry none */
    /* Records for this SUBSCRIBE, pending until the broker's SUBACK. A
     * filtered subscription that cannot be recorded must not reach the
     * broker unfiltered: refuse it (Quota exceeded, §3.9.3). */
    uint32_t first = f->n_recs;
    wm_proxy_action refused;
    wm_mqtt5_subscription e;
    pos = 0;
    for (uint32_t i = 0; wm_mqtt5_subscription_next(pkt, &pos, &e); i++) {
        char why[400], msg[700];
        int rc = rec_add(f, e.filter, sid, nbhd, nbhd >= 0 ? wm_proxy_spatial_nbhd_name(f->sh->sp, (uint32_t)nbhd) : NULL,
                         pkt->packet_id, i, has_xpath ? &xpath : NULL, false, why, sizeof why);
        if (rc == REC_OK) continue;
        if (rc == REC_SHARE_CONFLICT) {
            /* The broker would give each message to one member, whose filter
             * may reject what another member wants (dataplane/proxy_share.h). */
            while (f->n_recs > first) rec_remove(f, f->n_recs - 1);
            f->c->filter_share_refused += pkt->count;
            snprintf(msg, sizeof msg, "shared subscription \"%.*s\": %s; all its members must use the same "
                     "neighborhood and xpath, since the broker gives each message to one of them",
                     e.filter.len > 100 ? 100 : (int)e.filter.len, (const char *)e.filter.p, why);
            return refuse(f, pkt, 0x9E, msg, client_max, back);
        }
        f->c->filter_records_full++;
        /* (with --prefilter a plain one too: unrecorded, it would not be
         * registered, and the prefilter would keep what it should receive) */
        if (filtered || (f->sh->reg && wm_proxy_registry_prefilter(f->sh->reg))) {
            while (f->n_recs > first) rec_remove(f, f->n_recs - 1);
            return refuse(f, pkt, 0x97, "too many subscriptions on this connection", client_max, back);
        }
    }
    if (prefilter_add(f, pkt, first, client_max, back, &refused)) return refused;
    if (nbhd >= 0) f->c->filter_nbhd_subscribes++;
    if (*vslot) f->c->filter_xpath_subscribes++;
    if (!add_sid) return WM_PROXY_KEEP;
    wm_mqtt5_packet p2 = *pkt;
    uint32_t wire = sid_to_wire(f, sid);
    p2.props.subscription_identifiers = &wire;
    p2.props.subscription_identifier_count = 1;
    size_t n;
    if (wm_mqtt5_encode(&p2, scratch, cap, &n) != WM_MQTT5_ENC_OK) return WM_PROXY_FAIL;
    uint32_t broker_max = cfg[WM_PROXY_C2U].maximum_packet_size;
    if (broker_max && n > broker_max) {
        /* The identifier made it too large for the broker (§3.1.2.24 on the
         * sender side): not sent; the client gets its answer from the proxy. */
        while (f->n_recs > first) rec_remove(f, f->n_recs - 1);
        if (nbhd >= 0) f->c->filter_nbhd_subscribes--;
        if (*vslot) f->c->filter_xpath_subscribes--;
        f->c->filter_too_large++;
        return refuse(f, pkt, 0x83, "the proxy's Subscription Identifier makes this SUBSCRIBE exceed "
                      "the broker's Maximum Packet Size", client_max, back);
    }
    f->c->filter_sid_added++;
    *out_len = (uint32_t)n;
    return WM_PROXY_REPLACE;
}

/* The validation reference to the content filter (if any) is held while the
 * records take theirs, then dropped; so is the connection's interest in it
 * once the SUBSCRIBE is decided. */
static wm_proxy_action on_subscribe(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const wm_mqtt5_config cfg[2],
                                    wm_proxy_queue *back, uint8_t *scratch, uint32_t cap, uint32_t *out_len)
{
    uint32_t vslot = 0;
    wm_proxy_action a = on_subscribe_x(f, pkt, cfg, back, scratch, cap, out_len, &vslot);
    if (vslot) slot_unref(f->sh, vslot);
    /* Decided (refused before its text was looked at, too): the interest
     * a look behind a held packet took for it goes. */
    wm_proxy_content *ct = f->sh->content;
    wm_mqtt5_bytes xp;
    if (a != WM_PROXY_HOLD && ct && ct->tab && xpath_prop(pkt, &xp)) {
        uint32_t wi = want_index(f, wm_content_find(ct->tab, (const char *)xp.p, xp.len));
        if (wi != UINT32_MAX) want_drop(f, wi);
    }
    return a;
}

/* Record r is about to go (UNSUBSCRIBE, or a SUBACK replacing it): the
 * broker may still deliver what it had queued for it, with its identifier
 * (§3.10.4, §3.8.4). A proxy identifier is never used again in the session,
 * so matching no record it is withheld; a client identifier that no record
 * explains can no longer be trusted to be plain. */
static void rec_forget(wm_proxy_filter *f, const wm_proxy_sub_rec *r)
{
    if ((r->nbhd >= 0 || r->xpath) && r->sid < WM_PROXY_SID_BASE) f->subs_unknown = true;
}

/* Filter fl leaves the session as the broker applied UNSUBSCRIBE u: the
 * records of the SUBSCRIBEs before u go (one after u is the broker's too). */
static void unsub_filter(wm_proxy_filter *f, wm_mqtt5_bytes fl, uint64_t order)
{
    /* The entry may hold it even if this connection does not (records full). */
    if (f->sess_gen)
        wm_proxy_registry_session_del(f->sh->reg, f->sh->rd, f->cid, f->cid_len, f->sess_gen,
                                      (const char *)fl.p, fl.len);
    for (uint32_t i = f->n_recs; i-- > 0;)
        if (f->recs[i].order < order && rec_filter_is(&f->recs[i], fl)) {
            rec_forget(f, &f->recs[i]);
            rec_remove(f, i);
        }
}

/* UNSUBSCRIBE u as its UNSUBACK ack answers it (NULL: taken as applied):
 * 0x00 Success and 0x11 No subscription existed delete, a code >= 0x80 (or
 * none) leaves the subscription with the broker (§3.11.3). */
static void unsub_apply(wm_proxy_filter *f, const wm_proxy_unsub *u, const wm_mqtt5_packet *ack)
{
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_UNSUBSCRIBE;
    p.payload = (wm_mqtt5_bytes){ u->filters, u->len };
    size_t pos = 0;
    wm_mqtt5_subscription e;
    for (uint32_t i = 0; wm_mqtt5_subscription_next(&p, &pos, &e); i++) {
        if (ack && (i >= ack->count || ack->payload.p[i] >= 0x80)) {
            f->c->filter_unsub_refused++;
            continue;
        }
        unsub_filter(f, e.filter, u->order);
    }
}

/* UNSUBSCRIBEs a connection keeps awaiting their UNSUBACK, and their bytes:
 * a client that sends them without reading its answers (the broker then
 * waits to write them) must not grow the proxy's memory with its input. */
#define MAX_UNSUBS 1024u
#define MAX_UNSUB_BYTES (1u << 20)

static void on_unsubscribe(wm_proxy_filter *f, const wm_mqtt5_packet *pkt)
{
    uint64_t order = ++f->order;
    if (!f->n_recs && !f->sess_gen) return;   /* nothing its UNSUBACK could forget */
    uint8_t *copy = NULL;
    if (f->n_unsubs < MAX_UNSUBS && f->unsub_bytes + pkt->payload.len <= MAX_UNSUB_BYTES)
        copy = malloc(pkt->payload.len ? pkt->payload.len : 1);
    if (f->n_unsubs == f->cap_unsubs && copy) {
        uint32_t cap = f->cap_unsubs ? 2 * f->cap_unsubs : 4;
        wm_proxy_unsub *u = realloc(f->unsubs, (size_t)cap * sizeof *u);
        if (u) {
            f->unsubs = u;
            f->cap_unsubs = cap;
        }
    }
    if (!copy || f->n_unsubs == f->cap_unsubs) {
        /* over the bounds or out of memory: applied now, as if the broker granted it */
        f->c->filter_unsub_untracked++;
        free(copy);
        wm_proxy_unsub now = { pkt->packet_id, order, (uint8_t *)pkt->payload.p, pkt->payload.len };
        unsub_apply(f, &now, NULL);
        return;
    }
    memcpy(copy, pkt->payload.p, pkt->payload.len);
    f->unsubs[f->n_unsubs++] = (wm_proxy_unsub){ pkt->packet_id, order, copy, pkt->payload.len };
    f->unsub_bytes += pkt->payload.len;
}

/* ------------------------------------------------------------ broker -> client */

static void on_unsuback(wm_proxy_filter *f, const wm_mqtt5_packet *pkt)
{
    for (uint32_t u = 0; u < f->n_unsubs; u++) {
        if (f->unsubs[u].pid != pkt->packet_id) continue;
        wm_proxy_unsub done = f->unsubs[u];
        memmove(&f->unsubs[u], &f->unsubs[u + 1], (size_t)(f->n_unsubs - u - 1) * sizeof *f->unsubs);
        f->n_unsubs--;
        f->unsub_bytes -= done.len;
        unsub_apply(f, &done, pkt);
        free(done.filters);
        return;
    }
}

static void on_suback(wm_proxy_filter *f, const wm_mqtt5_packet *pkt)
{
    bool any = false;
    for (uint32_t i = 0; i < f->n_recs; i++) {
        wm_proxy_sub_rec *r = &f->recs[i];
        if (r->pending != pkt->packet_id || r->dead) continue;
        any = true;
        if (r->pos >= pkt->count || pkt->payload.p[r->pos] >= 0x80) {
            r->dead = true;
            continue;
        }
        /* The new subscription replaces an installed one of the same filter (§3.8.4). */
        for (uint32_t j = 0; j < f->n_recs; j++)
            if (j != i && !f->recs[j].pending && !f->recs[j].dead && f->recs[j].filter_len == r->filter_len &&
                memcmp(f->recs[j].filter, r->filter, r->filter_len) == 0) {
                rec_forget(f, &f->recs[j]);
                f->recs[j].dead = true;
            }
        rec_install(f, r);
    }
    if (any)
        for (uint32_t i = f->n_recs; i-- > 0;)
            if (f->recs[i].dead) rec_remove(f, i);
}

static bool alias_tab_ready(wm_proxy_alias_tab *t, uint32_t max)
{
    if (t->max) return true;
    if (!max) return false;
    t->topic = calloc((size_t)max + 1, sizeof *t->topic);
    t->known = calloc((size_t)max + 1, 1);
    if (!t->topic || !t->known) { alias_free(t); return false; }
    t->max = max;
    return true;
}

static void alias_bind(wm_proxy_alias_tab *t, uint32_t a, wm_mqtt5_bytes topic)
{
    if (a > t->max) return;
    uint8_t *cur = t->topic[a];
    if (cur && ((uint32_t)cur[0] << 8 | cur[1]) == topic.len && memcmp(cur + 2, topic.p, topic.len) == 0) return;
    uint8_t *s = realloc(cur, (size_t)topic.len + 2);
    if (!s) { free(cur); t->topic[a] = NULL; t->known[a] = 0; return; }
    s[0] = (uint8_t)(topic.len >> 8);
    s[1] = (uint8_t)topic.len;
    memcpy(s + 2, topic.p, topic.len);
    t->topic[a] = s;
    t->known[a] = 0;
}

static bool alias_topic(const wm_proxy_alias_tab *t, uint32_t a, wm_mqtt5_bytes *topic)
{
    if (a > t->max || !t->topic[a]) return false;
    *topic = (wm_mqtt5_bytes){ t->topic[a] + 2, (uint32_t)t->topic[a][0] << 8 | t->topic[a][1] };
    return true;
}

/* The peids of a PUBLISH (peid_props.h: at most WM_PEIDS_MAX, checked
 * before any record is tested), resolved to ids once when a neighborhood is
 * to be tested; unknown ones are in no neighborhood. */
typedef struct peid_set {
    bool done;
    uint32_t n_text, n;
    wm_mqtt5_bytes text[WM_PEIDS_MAX];
    uint32_t id[WM_PEIDS_MAX];
} peid_set;

static bool in_nbhd(const wm_proxy_filter *f, peid_set *ps, uint32_t nbhd)
{
    if (!ps->done) {
        ps->done = true;
        for (uint32_t i = 0; i < ps->n_text; i++) {
            uint32_t id = wm_proxy_spatial_peid(f->sh->sp, ps->text[i].p, ps->text[i].len);
            if (id != WM_PEID_NONE) ps->id[ps->n++] = id;
        }
    }
    for (uint32_t i = 0; i < ps->n; i++)
        if (wm_proxy_spatial_contains(f->sh->sp, nbhd, ps->id[i])) return true;
    return false;
}

/* Records whose spatial side passed and whose content filter remains to be
 * decided: all of them by one decode of the payload, MAX_CANDS distinct
 * content slots at a time. */
typedef struct content_cands {
    uint32_t n;
    uint32_t slot[MAX_CANDS];
    wm_mqtt5_bytes topic;         /* the delivery's (its alias resolved), for reports */
} content_cands;

static bool content_passes(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const content_cands *cc);

/* Adds a candidate; true if a full batch had to be decided and passed. */
static bool cand_add(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, content_cands *cc, uint32_t slot)
{
    for (uint32_t i = 0; i < cc->n; i++)
        if (cc->slot[i] == slot) return false;
    if (cc->n == MAX_CANDS) {
        if (content_passes(f, pkt, cc)) return true;
        cc->n = 0;
    }
    cc->slot[cc->n++] = slot;
    return false;
}

/* A delivery for identifier sid: passes if a recorded subscription with
 * that identifier and a filter matching the topic has no neighborhood or
 * one with the peid, and no content filter (one with a content filter goes
 * to cc). With none recorded, only a client identifier on a session whose
 * subscriptions are all known passes (it can only be a subscription
 * without filter); *unknown tells the caller. */
static bool sid_passes(wm_proxy_filter *f, uint32_t sid, wm_mqtt5_bytes topic, const wm_mqtt5_packet *pkt,
                       peid_set *ps, bool *unknown, content_cands *cc)
{
    bool seen = false;
    for (uint32_t i = 0; i < f->n_recs; i++) {
        const wm_proxy_sub_rec *r = &f->recs[i];
        /* An empty topic is an alias the proxy never saw bound: any filter. */
        if (r->sid != sid || (topic.len && !rec_matches(r, topic))) continue;
        if (r->nbhd < 0 || in_nbhd(f, ps, (uint32_t)r->nbhd)) {
            if (!r->xpath) return true;
            /* slot 0: its query compiles for no schema of the registry in force */
            if (r->slot && cand_add(f, pkt, cc, r->slot)) return true;
        }
        seen = true;
    }
    if (seen) return false;
    if (sid < WM_PROXY_SID_BASE && !f->subs_unknown) return true;
    *unknown = true;
    return false;
}

/* The topic of a PUBLISH from side dir, through the aliases its receiver
 * announced room for (§3.3.2.3.4): a topic + alias binds, an empty topic
 * uses the binding. *need_topic: the receiver has not seen the binding (a
 * withheld PUBLISH made it), so the topic must be put back. */
typedef struct alias_use {
    uint32_t alias;
    wm_mqtt5_bytes topic;
    bool need_topic;
} alias_use;

static alias_use alias_resolve(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt, const wm_mqtt5_config cfg[2])
{
    const wm_mqtt5_props *pr = &pkt->props;
    wm_proxy_alias_tab *at = &f->alias[dir];
    alias_use u = { 0, pkt->topic, false };
    u.alias = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS) ? pr->v[WM_MQTT5_PROP_TOPIC_ALIAS].u : 0;
    if (u.alias && alias_tab_ready(at, cfg[dir].topic_alias_maximum)) {
        if (u.topic.len) alias_bind(at, u.alias, u.topic);
        else if (alias_topic(at, u.alias, &u.topic)) u.need_topic = !at->known[u.alias];
    }
    return u;
}

/* The receiver sees (forwarded) or does not see (withheld) this PUBLISH. */
static void alias_outcome(wm_proxy_filter *f, int dir, const alias_use *u, const wm_mqtt5_packet *pkt, bool forwarded)
{
    wm_proxy_alias_tab *at = &f->alias[dir];
    if (!u->alias || u->alias > at->max) return;
    if (forwarded) at->known[u->alias] = 1;
    else if (pkt->topic.len) at->known[u->alias] = 0;   /* a binding the receiver never got */
}

/* A delivery decoded by its options header although its Content Type's
 * options contradict it (wm_content_reader_conflict; the header wins, §5.4):
 * a mis-configured publisher. Counted; reported on stderr with the topic
 * and the receiving client (the publisher may be connected elsewhere) at
 * the worker's 1st, 2nd, 4th, 8th... such delivery, so that a stream of them
 * costs a line per doubling. */
static void report_conflict(wm_proxy_filter *f, const wm_mqtt5_bytes *ct, wm_mqtt5_bytes topic, const char *why)
{
    uint64_t n = ++f->c->filter_content_header_conflicts;
    if (n & (n - 1)) return;
    fprintf(stderr, "wirematch-proxy: topic \"%.*s\" (delivered to client \"%.*s\"): Content Type \"%.*s\": %s; "
                    "decoded with the header's options (EXI 1.0 §5.4) [%" PRIu64 " such deliveries on this worker]\n",
            (int)topic.len, (const char *)topic.p, (int)f->cid_len, f->cid ? (const char *)f->cid : "",
            (int)ct->len, (const char *)ct->p, why, n);
}

/* One decode of the payload decides every content candidate (whole stream
 * validated); the PUBLISH passes if one of them does. */
static bool content_passes(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const content_cands *cc)
{
    const wm_mqtt5_props *pr = &pkt->props;
    bool has_ct = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_CONTENT_TYPE);
    const wm_mqtt5_bytes *ct = &pr->v[WM_MQTT5_PROP_CONTENT_TYPE].s;
    bool pass[MAX_CANDS];
    wm_exi_error e;
    enum wm_content_outcome o = WM_CONTENT_TOO_LARGE;   /* no reader: out of memory at the last change */
    f->c->filter_content_pubs++;
    if (f->sh->content && f->sh->content->rd)
        o = wm_content_match(f->sh->content->rd, has_ct ? (const char *)ct->p : NULL, has_ct ? ct->len : 0,
                             pkt->payload.p, pkt->payload.len, cc->slot, cc->n, pass, &e);
    f->c->filter_content[o]++;
    if (o != WM_CONTENT_OK) return false;
    const char *conflict = wm_content_reader_conflict(f->sh->content->rd);
    if (conflict) report_conflict(f, ct, cc->topic, conflict);
    for (uint32_t i = 0; i < cc->n; i++)
        if (pass[i]) return true;
    return false;
}

static wm_proxy_action on_publish_down(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const wm_mqtt5_config cfg[2],
                                       wm_proxy_queue *back, uint8_t *scratch, uint32_t cap, uint32_t *out_len)
{
    const wm_mqtt5_props *pr = &pkt->props;
    /* A resumed session's deliveries wait for its content filters (and
     * what follows them, in order; PINGRESP goes on, proxy_frame.h). */
    if (resume_waits(f)) return WM_PROXY_HOLD;
    alias_use au = alias_resolve(f, WM_PROXY_U2C, pkt, cfg);
    wm_mqtt5_bytes topic = au.topic;
    bool need_topic = au.need_topic;
    /* Every identifier is evaluated, streamed from the properties (there
     * are as many as the packet's size allows, §3.3.4). */
    uint32_t n = 0, nk = 0, s;
    size_t pos = 0;
    bool proxy_sid = false, pass = false;
    peid_set ps;
    ps.done = false;
    ps.n = 0;
    /* Over the bound the publication reaches nobody, as in the data plane
     * and the prefilter (peid_props.h). */
    ps.n_text = wm_peids_collect(pr, ps.text);
    if (ps.n_text == WM_PEIDS_TOO_MANY) {
        f->c->filter_too_many_peids++;
        goto withhold;
    }
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER))
        while (wm_mqtt5_subid_next(pr, &pos, &s)) {
            n++;
            if (s == WM_PROXY_SID_PLAIN) pass = true;
            if (s >= WM_PROXY_SID_BASE) proxy_sid = true;
            else nk++;
        }
    if (n == 0 || (!proxy_sid && f->n_nbhd_recs == 0 && !f->subs_unknown)) pass = true;
    bool unknown = false;
    content_cands cc = { .topic = topic };
    for (pos = 0; !pass && wm_mqtt5_subid_next(pr, &pos, &s);)
        pass = sid_passes(f, sid_from_wire(f, s), topic, pkt, &ps, &unknown, &cc);
    if (!pass && cc.n) pass = content_passes(f, pkt, &cc);
    if (!pass && unknown) f->c->filter_unknown_sid++;

    uint32_t client_max = client_max_of(f, cfg);
    if (pass && !proxy_sid && !need_topic) {
        uint32_t len = 1 + (uint32_t)wm_mqtt5_vbi_size(pkt->remaining_length) + pkt->remaining_length;
        if (!client_max || len <= client_max) {
            alias_outcome(f, WM_PROXY_U2C, &au, pkt, true);
            return WM_PROXY_KEEP;
        }
        /* Within what the proxy announced for the client, not within its own bound. */
        f->c->filter_too_large++;
    } else if (pass) {
        /* The client's own identifiers stay: on the stack, or (more than
         * MAX_CANDS, only from a broker listing that many) allocated for
         * this packet. */
        uint32_t kept_buf[MAX_CANDS], *kept = nk <= MAX_CANDS ? kept_buf : malloc((size_t)nk * sizeof *kept);
        if (!kept) return WM_PROXY_FAIL;
        nk = 0;
        for (pos = 0; wm_mqtt5_subid_next(pr, &pos, &s);)
            if (s < WM_PROXY_SID_BASE) kept[nk++] = s;
        wm_mqtt5_packet p2 = *pkt;
        if (need_topic) p2.topic = topic;
        p2.props.subscription_identifiers = kept;
        p2.props.subscription_identifier_count = nk;
        size_t len;
        wm_mqtt5_enc_status es = wm_mqtt5_encode(&p2, scratch, cap, &len);
        if (kept != kept_buf) free(kept);
        if (es != WM_MQTT5_ENC_OK) return WM_PROXY_FAIL;
        if (!client_max || len <= client_max) {
            alias_outcome(f, WM_PROXY_U2C, &au, pkt, true);
            if (proxy_sid) f->c->filter_sid_stripped++;
            if (need_topic) f->c->filter_alias_rewritten[WM_PROXY_U2C]++;
            *out_len = (uint32_t)len;
            return WM_PROXY_REPLACE;
        }
        /* Still too large for the client once rewritten (the topic put back,
         * or over its own bound already): §3.1.2.24 says discard it as if
         * delivered, so it is withheld. */
        f->c->filter_too_large++;
    }
withhold:
    alias_outcome(f, WM_PROXY_U2C, &au, pkt, false);
    f->c->filter_withheld[pkt->qos]++;
    if (pkt->qos == 1) {
        if (!send_ack(f, WM_PROXY_U2C, back, WM_MQTT5_PUBACK, pkt->packet_id, 0)) return WM_PROXY_FAIL;
        f->c->filter_acked_on_behalf++;
    } else if (pkt->qos == 2) {
        if (!receive_qos2(f, WM_PROXY_U2C, pkt->packet_id, 0, back)) return WM_PROXY_FAIL;
        f->c->filter_acked_on_behalf++;
    }
    return WM_PROXY_DROP;
}

/* Could a content filter select this PUBLISH at all? Only if its Content
 * Type names an EXI schema of the registry in force (else every content
 * filter withholds it, on_publish_down). Cheap: no payload is looked at. */
static bool content_possible(const wm_proxy_filter *f, const wm_mqtt5_props *pr)
{
    const wm_proxy_content *ct = f->sh->content;
    if (!ct || !ct->tab) return false;   /* no content filter can exist */
    if (!wm_mqtt5_props_has(pr, WM_MQTT5_PROP_CONTENT_TYPE)) return false;
    const wm_mqtt5_bytes *v = &pr->v[WM_MQTT5_PROP_CONTENT_TYPE].s;
    const wm_schema_reg *reg = wm_content_registry(ct->tab);
    const char *name;
    size_t nl;
    return reg && wm_exi_content_type_schema((const char *)v->p, v->len, &name, &nl) &&
           wm_schema_reg_find(reg, name, nl) != UINT32_MAX;
}

/* --prefilter: a client PUBLISH that no registered subscription can receive
 * stays here. */
static wm_proxy_action on_publish_up(wm_proxy_filter *f, const wm_mqtt5_packet *pkt, const wm_mqtt5_config cfg[2],
                                     wm_proxy_queue *back, uint8_t *scratch, uint32_t cap, uint32_t *out_len)
{
    alias_use au = alias_resolve(f, WM_PROXY_C2U, pkt, cfg);
    wm_mqtt5_bytes text[WM_PEIDS_MAX];
    uint32_t n = wm_peids_collect(&pkt->props, text);
    /* Over the bound nobody receives it (peid_props.h), retained or not. */
    bool too_many = n == WM_PEIDS_TOO_MANY;
    bool pass = !too_many && (pkt->retain || au.topic.len == 0); /* retained: for later subscribers; no topic: the broker judges */
    if (!pass && !too_many) {
        wm_match_str peids[WM_PEIDS_MAX];
        for (uint32_t i = 0; i < n; i++) peids[i] = (wm_match_str){ (const char *)text[i].p, text[i].len };
        pass = wm_proxy_registry_receivable(f->sh->reg, f->sh->rd, f->sh->rd_gen, au.topic, peids, n,
                                            content_possible(f, &pkt->props));
    }
    alias_outcome(f, WM_PROXY_C2U, &au, pkt, pass);
    if (pass) {
        if (!au.need_topic) return WM_PROXY_KEEP;
        wm_mqtt5_packet p2 = *pkt;
        p2.topic = au.topic;
        size_t len;
        if (wm_mqtt5_encode(&p2, scratch, cap, &len) != WM_MQTT5_ENC_OK) return WM_PROXY_FAIL;
        f->c->filter_alias_rewritten[WM_PROXY_C2U]++;
        *out_len = (uint32_t)len;
        return WM_PROXY_REPLACE;
    }
    f->c->filter_prefiltered[pkt->qos]++;
    /* 0x10 No matching subscribers: what the broker itself would answer (§3.4.2.1);
     * over the peid bound 0x83 Implementation specific error ("valid, but the
     * receiver is not willing to accept it"), which no subscription explains. */
    uint8_t rc = 0x10;
    if (too_many) {
        f->c->filter_prefiltered_too_many_peids++;
        rc = 0x83;
    }
    if (pkt->qos == 1 && !send_ack(f, WM_PROXY_C2U, back, WM_MQTT5_PUBACK, pkt->packet_id, rc)) return WM_PROXY_FAIL;
    if (pkt->qos == 2 && !receive_qos2(f, WM_PROXY_C2U, pkt->packet_id, rc, back)) return WM_PROXY_FAIL;
    return WM_PROXY_DROP;
}

/* A PUBREL from side dir for a QoS 2 PUBLISH the proxy withheld: completed
 * by the proxy (PUBCOMP) and not forwarded. Returns KEEP for any other. */
static wm_proxy_action on_pubrel(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt, wm_proxy_queue *back)
{
    uint16_t id = pkt->packet_id;
    uint64_t *bits = f->qos2_withheld[dir];
    if (!bits || !(bits[id >> 6] >> (id & 63) & 1)) return WM_PROXY_KEEP;
    if (!send_ack(f, dir, back, WM_MQTT5_PUBCOMP, id, 0)) return WM_PROXY_FAIL;
    bits[id >> 6] &= ~(1ull << (id & 63));
    f->c->filter_pubcomp_on_behalf++;
    return WM_PROXY_DROP;
}

static wm_proxy_action filter_packet(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt,
                                     const wm_mqtt5_config cfg[2], wm_proxy_queue *back,
                                     uint8_t *scratch, uint32_t scratch_cap, uint32_t *out_len)
{
    resume_waits(f);
    if (dir == WM_PROXY_C2U) {
        switch (pkt->type) {
        case WM_MQTT5_CONNECT:   /* the first: a second one ends the connection (proxy_frame.c) */
            f->problem_info = !wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION) ||
                              pkt->props.v[WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION].u != 0;
            f->clean_start = pkt->connect.clean_start;
            f->client_max = wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE)
                                ? pkt->props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u : 0;
            if (!set_cid(f, pkt->connect.client_id)) return WM_PROXY_FAIL;
            __attribute__((fallthrough));   /* and the Session Expiry Interval */
        case WM_MQTT5_DISCONNECT:
            if (wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL)) {
                uint32_t iv = pkt->props.v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u;
                /* A DISCONNECT may change the interval, but not from 0 to
                 * non-zero (§3.14.2.2.2): the broker does not take it as a
                 * valid DISCONNECT (it answers 0x82 Protocol Error) and the
                 * session ends with the connection, so the proxy must not
                 * keep it either (before 2026-12-02 it did: its --prefilter
                 * registrations stayed for the new interval). */
                if (pkt->type == WM_MQTT5_DISCONNECT && f->session_expiry == 0 && iv != 0) {
                    f->c->filter_expiry_from_zero++;
                    return WM_PROXY_KEEP;
                }
                f->session_expiry = iv;
                if (f->sess_gen)
                    wm_proxy_registry_session_interval(f->sh->reg, f->sh->rd, f->cid, f->cid_len, f->sess_gen,
                                                       f->session_expiry);
            }
            return WM_PROXY_KEEP;
        case WM_MQTT5_PUBLISH:
            return f->sh->reg && wm_proxy_registry_prefilter(f->sh->reg)
                       ? on_publish_up(f, pkt, cfg, back, scratch, scratch_cap, out_len) : WM_PROXY_KEEP;
        case WM_MQTT5_PUBREL: return on_pubrel(f, WM_PROXY_C2U, pkt, back);
        case WM_MQTT5_SUBSCRIBE: {
            wm_proxy_action a = on_subscribe(f, pkt, cfg, back, scratch, scratch_cap, out_len);
            if (a == WM_PROXY_KEEP || a == WM_PROXY_REPLACE) f->order++;   /* relayed */
            return a;
        }
        case WM_MQTT5_UNSUBSCRIBE: on_unsubscribe(f, pkt); return WM_PROXY_KEEP;
        default: return WM_PROXY_KEEP;
        }
    }
    switch (pkt->type) {
    case WM_MQTT5_CONNACK:
        f->sid_unavailable = wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE) &&
                             pkt->props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE].u == 0;
        return on_connack(f, pkt) ? WM_PROXY_KEEP : WM_PROXY_FAIL;
    case WM_MQTT5_PUBLISH: return on_publish_down(f, pkt, cfg, back, scratch, scratch_cap, out_len);
    case WM_MQTT5_PUBREL: return on_pubrel(f, WM_PROXY_U2C, pkt, back);
    case WM_MQTT5_SUBACK: on_suback(f, pkt); return WM_PROXY_KEEP;
    case WM_MQTT5_UNSUBACK: on_unsuback(f, pkt); return WM_PROXY_KEEP;
    default: return WM_PROXY_KEEP;
    }
}

wm_proxy_action wm_proxy_filter_packet(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt,
                                       const wm_mqtt5_config cfg[2], wm_proxy_queue *back,
                                       uint8_t *scratch, uint32_t scratch_cap, uint32_t *out_len)
{
    wm_proxy_action a = filter_packet(f, dir, pkt, cfg, back, scratch, scratch_cap, out_len);
    if (a == WM_PROXY_KEEP || a == WM_PROXY_REPLACE) wm_proxy_filter_passed(f, dir, pkt);
    return a;
}

void wm_proxy_filter_passed(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt)
{
    /* what goes on: the order of the answers to each side (proxy_answers.h) */
    if (wm_proxy_answers_expected(dir, pkt)) f->answers[dir].asked++;
    if (wm_proxy_answers_is_answer(dir, pkt)) wm_proxy_answers_relayed(&f->answers[1 - dir]);
}
