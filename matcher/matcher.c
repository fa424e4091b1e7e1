/* The matcher: subscriptions, readers and the lookup (see matcher.h).
 *
 * Lookup = topic side, then spatial side, the cheaper way round:
 *   1. fids = filters matching the topic: one hash probe of the whole topic
 *      (wildcard-free filters), plus the trie walk when wildcard filters
 *      exist (topic_index.c).
 *   2. Non-spatial subscriptions of those fids are emitted directly.
 *   3. Spatial subscriptions hang off cells (fid, nbhd). The publication's
 *      posting slots are read first; then either each cell of the matched
 *      fids is tested for "nbhd in one of those slots" (few cells), or each
 *      slot's neighborhoods are walked, keeping those with a cell on a
 *      matched fid: 32 entries at a time against the union of the fids'
 *      neighborhood filters (nbf.h), or one by one against a byte tag per
 *      neighborhood when the filters are missing or too full.
 * Each subscription lives in exactly one list (f_plain[fid] or c_subs[cell])
 * and each (fid, nbhd) cell is visited at most once, so results need no
 * de-duplication beyond marking neighborhoods reached through several peids.
 */
#include "matcher/matcher_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


/* ---------------------------------------------------------------- id pool */

bool wm_idpool_init(wm_idpool *p, uint32_t max)
{
    memset(p, 0, sizeof *p);
    p->max = max;
    p->free = calloc(max, sizeof *p->free);
    return p->free != NULL;
}

void wm_idpool_fini(wm_idpool *p) { free(p->free); memset(p, 0, sizeof *p); }

uint32_t wm_idpool_alloc(wm_idpool *p, wm_retire *r)
{
    uint32_t id;
    /* Below the bound with every free id still in its grace period: wait
     * for it rather than refuse (matcher.h, "Bounds"). */
    if (!p->n_free && p->high >= p->max && p->live < p->max) {
        p->grace_waits++;
        wm_retire_reclaim(r, true);
    }
    if (p->n_free) id = p->free[--p->n_free];
    else if (p->high < p->max) id = p->high++;
    else return WM_NONE;
    p->live++;
    return id;
}

static void idpool_back(void *ctx, uint64_t arg)
{
    wm_idpool *p = ctx;
    p->free[p->n_free++] = (uint32_t)arg;
}

void wm_idpool_release(wm_idpool *p, wm_retire *r, uint32_t id)
{
    p->live--;
    wm_retire_call(r, idpool_back, p, id);
}

/* ---------------------------------------------------------------- status */

static const struct { const char *name, *msg; } status_text[] = {
    [WM_MATCHER_OK] = { "ok", "success" },
    [WM_MATCHER_E_INVALID_FILTER] = { "invalid_filter", "invalid topic filter (MQTT 5.0 4.7, 4.8.2)" },
    [WM_MATCHER_E_INVALID_TOPIC] = { "invalid_topic", "topic name empty or longer than 65,535 bytes (MQTT 5.0 4.7.3)" },
    [WM_MATCHER_E_NO_LOCAL_SHARED] = { "no_local_shared", "No Local on a shared subscription is a Protocol Error (MQTT 5.0 3.8.3.1)" },
    [WM_MATCHER_E_TOO_DEEP] = { "too_deep", "topic filter has more levels than the matcher's max_levels" },
    [WM_MATCHER_E_BAD_QOS] = { "bad_qos", "QoS must be 0, 1 or 2 (MQTT 5.0 3.8.3.1)" },
    [WM_MATCHER_E_BAD_PEID] = { "bad_peid", "peid empty, longer than 65,535 bytes or not interned" },
    [WM_MATCHER_E_BAD_CLIENT] = { "bad_client", "client id longer than 65,535 bytes" },
    [WM_MATCHER_E_BAD_NAME] = { "bad_name", "neighborhood name empty or longer than 65,535 bytes" },
    [WM_MATCHER_E_NBHD_EXISTS] = { "nbhd_exists", "a neighborhood of that name is already defined" },
    [WM_MATCHER_E_UNKNOWN_NBHD] = { "unknown_nbhd", "no such neighborhood" },
    [WM_MATCHER_E_UNKNOWN_SUB] = { "unknown_sub", "no such subscription" },
    [WM_MATCHER_E_FULL_SUBS] = { "full_subs", "subscription table full (max_subs)" },
    [WM_MATCHER_E_FULL_FILTERS] = { "full_filters", "topic filter table full (max_filters)" },
    [WM_MATCHER_E_FULL_NODES] = { "full_nodes", "wildcard trie full (max_trie_nodes)" },
    [WM_MATCHER_E_FULL_NBHDS] = { "full_nbhds", "neighborhood table full (max_nbhds)" },
    [WM_MATCHER_E_FULL_PEIDS] = { "full_peids", "peid table full (max_peids)" },
    [WM_MATCHER_E_FULL_CLIENTS] = { "full_clients", "client table full (max_clients)" },
    [WM_MATCHER_E_FULL_GROUPS] = { "full_groups", "shared-subscription group table full (max_groups)" },
    [WM_MATCHER_E_TOO_MANY_PEIDS] = { "too_many_peids", "publication carries more than WM_MATCH_MAX_PUB_PEIDS peids" },
    [WM_MATCHER_E_TRUNCATED] = { "truncated", "result buffer too small; result truncated" },
    [WM_MATCHER_E_NOMEM] = { "nomem", "out of memory" },
    [WM_MATCHER_E_INVALID_ARG] = { "invalid_arg", "invalid argument" },
};

const char *wm_matcher_status_name(wm_matcher_status st)
{
    return (unsigned)st < sizeof status_text / sizeof status_text[0] ? status_text[st].name : "unknown";
}

const char *wm_matcher_status_message(wm_matcher_status st)
{
    return (unsigned)st < sizeof status_text / sizeof status_text[0] ? status_text[st].msg : "unknown status";
}

/* ---------------------------------------------------------------- lifetime */

/* A zeroed array on 2 MiB-aligned anonymous memory with transparent huge
 * pages requested: the peid slots are read at random on every lookup and
 * every neighborhood install, and with 4 KiB pages most of those reads also
 * miss the TLB. Untouched pages still cost nothing. */
#define HUGE_SZ ((size_t)2 << 20)
static void *huge_calloc(size_t bytes, void **map, size_t *maplen)
{
    size_t len = (bytes + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ + HUGE_SZ;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)p + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1));
    madvise(a, len - (size_t)(a - (char *)p), MADV_HUGEPAGE); /* a hint: failure is harmless */
    *map = p;
    *maplen = len;
    return a;
}

#define DEF(field, v) do { if (!c.field) c.field = (v); } while (0)

wm_matcher *wm_matcher_new(const wm_matcher_config *cfg)
{
    wm_matcher_config c = cfg ? *cfg : (wm_matcher_config){ 0 };
    DEF(max_subs, 1u << 20);
    DEF(max_filters, c.max_subs);
    /* One wildcard filter takes up to max_levels nodes, a typical one a
     * few of its own (its prefix is shared): WM_MATCHER_TRIE_NODES_PER_FILTER
     * per filter holds max_filters such filters (matcher.h). */
    DEF(max_trie_nodes, c.max_filters > (1u << 28) / WM_MATCHER_TRIE_NODES_PER_FILTER
                            ? 1u << 28 : c.max_filters * WM_MATCHER_TRIE_NODES_PER_FILTER);
    DEF(max_nbhds, 1u << 16);
    DEF(max_peids, 1u << 22);
    DEF(max_clients, c.max_subs);
    DEF(max_groups, 1u << 16);
    DEF(max_levels, 64);
    DEF(qsbr, wm_qsbr_urcu());
    const uint32_t lim = 1u << 28;
    if (c.max_subs > lim || c.max_filters > lim || c.max_trie_nodes > lim || c.max_nbhds > lim ||
        c.max_peids > lim || c.max_clients > lim || c.max_groups > lim || c.max_levels > 1024)
        return NULL;
    wm_matcher *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->cfg = c;
    wm_retire_init(&m->retire, c.qsbr);
    bool ok = wm_intern_init(&m->filters, c.max_filters, &m->retire) &&
              wm_intern_init(&m->edges, c.max_trie_nodes, &m->retire) &&
              wm_intern_init(&m->cellkeys, c.max_subs, &m->retire) &&
              wm_intern_init(&m->nbhd_names, c.max_nbhds, &m->retire) &&
              wm_intern_init(&m->peids, c.max_peids, &m->retire) &&
              wm_intern_init(&m->clients, c.max_clients, &m->retire) &&
              wm_intern_init(&m->groups, c.max_groups, &m->retire) &&
              wm_idpool_init(&m->nbhd_ids, c.max_nbhds) && wm_idpool_init(&m->sub_ids, c.max_subs);
    if (ok) {
        m->f_plain = calloc(c.max_filters, sizeof *m->f_plain);
        m->f_cells = calloc(c.max_filters, sizeof *m->f_cells);
        m->f_wild = calloc(c.max_filters, 1);
        m->f_nbf = calloc(c.max_filters, sizeof *m->f_nbf);
        m->n_plus = malloc(((size_t)c.max_trie_nodes + 1) * sizeof(uint32_t));
        m->n_hash_fid = malloc(((size_t)c.max_trie_nodes + 1) * sizeof(uint32_t));
        m->n_end_fid = malloc(((size_t)c.max_trie_nodes + 1) * sizeof(uint32_t));
        m->c_fid = calloc(c.max_subs, sizeof *m->c_fid);
        m->c_nbhd = calloc(c.max_subs, sizeof *m->c_nbhd);
        m->c_subs = calloc(c.max_subs, sizeof *m->c_subs);
        m->c_pos_f = calloc(c.max_subs, sizeof *m->c_pos_f);
        m->c_pos_n = calloc(c.max_subs, sizeof *m->c_pos_n);
        m->nb_set = calloc(c.max_nbhds, sizeof *m->nb_set);
        m->nb_cells = calloc(c.max_nbhds, sizeof *m->nb_cells);
        m->nb_one = calloc(c.max_nbhds, sizeof *m->nb_one);
        m->nb_tag = calloc(c.max_nbhds, sizeof *m->nb_tag);
        m->nb_refs = calloc(c.max_nbhds, sizeof *m->nb_refs);
        m->nb_name = calloc(c.max_nbhds, sizeof *m->nb_name);
        m->nb_size = calloc(c.max_nbhds, sizeof *m->nb_size);
        m->name_nbhd = calloc(c.max_nbhds, sizeof *m->name_nbhd);
        m->p_nbhds = huge_calloc(c.max_peids * sizeof *m->p_nbhds, &m->p_nbhds_map, &m->p_nbhds_maplen);
        m->p_over = calloc(c.max_peids, sizeof *m->p_over);
        m->s_hot = calloc(c.max_subs, sizeof *m->s_hot);
        m->s_cold = calloc(c.max_subs, sizeof *m->s_cold);
        ok = m->f_plain && m->f_cells && m->f_wild && m->f_nbf && m->n_plus && m->n_hash_fid && m->n_end_fid &&
             m->c_fid && m->c_nbhd && m->c_subs && m->c_pos_f && m->c_pos_n && m->nb_set && m->nb_cells && m->nb_one && m->nb_tag &&
             m->nb_refs && m->nb_name && m->nb_size && m->name_nbhd && m->p_nbhds && m->p_over && m->s_hot && m->s_cold;
    }
    if (!ok) { wm_matcher_free(m); return NULL; }
    m->n_plus[0] = m->n_hash_fid[0] = m->n_end_fid[0] = WM_NONE; /* the root */
    return m;
}

void wm_matcher_free(wm_matcher *m)
{
    if (!m) return;
    wm_retire_fini(&m->retire);
    if (m->f_plain)
        for (uint32_t i = 0; i < m->filters.high; i++) { wm_rvec_destroy(&m->f_plain[i]); wm_rvec_destroy(&m->f_cells[i]); }
    if (m->f_nbf)
        for (uint32_t i = 0; i < m->filters.high; i++) free(m->f_nbf[i]);
    if (m->c_subs)
        for (uint32_t i = 0; i < m->cellkeys.high; i++) wm_rvec_destroy(&m->c_subs[i]);
    if (m->nb_set)
        for (uint32_t i = 0; i < m->nbhd_ids.high; i++)
            if (m->nb_refs[i]) { free(m->nb_set[i]); wm_rvec_destroy(&m->nb_cells[i]); }
    if (m->p_over)
        for (uint32_t i = 0; i < m->peids.high; i++) wm_rvec_destroy(&m->p_over[i]);
    wm_retire_fini(&m->retire);
    wm_intern_fini(&m->filters); wm_intern_fini(&m->edges); wm_intern_fini(&m->cellkeys);
    wm_intern_fini(&m->nbhd_names); wm_intern_fini(&m->peids); wm_intern_fini(&m->clients);
    wm_intern_fini(&m->groups);
    wm_idpool_fini(&m->nbhd_ids); wm_idpool_fini(&m->sub_ids);
    free(m->f_plain); free(m->f_cells); free(m->f_wild); free(m->f_nbf); free(m->n_plus); free(m->n_hash_fid); free(m->n_end_fid);
    free(m->c_fid); free(m->c_nbhd); free(m->c_subs); free(m->c_pos_f); free(m->c_pos_n);
    free(m->nb_set); free(m->nb_cells); free(m->nb_one); free(m->nb_tag); free(m->nb_refs); free(m->nb_name); free(m->nb_size); free(m->name_nbhd);
    if (m->p_nbhds_map) munmap(m->p_nbhds_map, m->p_nbhds_maplen);
    free(m->p_over);
    free(m->s_hot); free(m->s_cold); free(m->sort_tmp); free(m->dedup_bits);
    free(m);
}

const wm_matcher_config *wm_matcher_get_config(const wm_matcher *m) { return &m->cfg; }

size_t wm_matcher_reclaim(wm_matcher *m, bool wait) { return wm_retire_reclaim(&m->retire, wait); }

void wm_matcher_stats_get(const wm_matcher *m, wm_matcher_stats *st)
{
    st->subs = m->sub_ids.live;
    st->filters = m->filters.live;
    st->trie_nodes = m->edges.live;
    st->nbhds = m->nbhd_ids.live;
    st->peids = m->peids.live;
    st->clients = m->clients.live;
    st->groups = m->groups.live;
    st->cells = m->cellkeys.live;
    st->nbhd_peids = m->nbhd_peids;
    st->spilled_postings = m->spilled_postings;
    st->grace_waits = m->sub_ids.grace_waits + m->nbhd_ids.grace_waits + m->filters.grace_waits +
                      m->edges.grace_waits + m->cellkeys.grace_waits + m->nbhd_names.grace_waits +
                      m->clients.grace_waits + m->groups.grace_waits;
    st->pending_reclaim = m->retire.n;
}

/* ---------------------------------------------------------------- interning */

wm_matcher_status wm_matcher_peid_intern(wm_matcher *m, const char *s, size_t len, uint32_t *id)
{
    if (!m || !id || (len && !s)) return WM_MATCHER_E_INVALID_ARG;
    if (len == 0 || len > 65535) return WM_MATCHER_E_BAD_PEID;
    uint32_t p = wm_intern_find(&m->peids, 0, s, len);
    if (p == WM_INTERN_NONE) {
        p = wm_intern_get(&m->peids, 0, s, len, NULL, NULL, NULL); /* permanent: never put */
        if (p == WM_INTERN_NONE)
            return m->peids.live >= m->peids.max_ids ? WM_MATCHER_E_FULL_PEIDS : WM_MATCHER_E_NOMEM;
    }
    *id = p;
    return WM_MATCHER_OK;
}

uint32_t wm_matcher_peid_find(const wm_matcher *m, const char *s, size_t len)
{
    return wm_intern_find(&m->peids, 0, s, len);
}


/* ---------------------------------------------------------------- subscriptions */

static void moved_sub(void *ctx, uint32_t sub, uint32_t pos) { ((wm_matcher *)ctx)->s_cold[sub].pos = pos; }
static void moved_cell_f(void *ctx, uint32_t cell, uint32_t pos) { ((wm_matcher *)ctx)->c_pos_f[cell] = pos; }
static void moved_cell_n(void *ctx, uint32_t cell, uint32_t pos) { ((wm_matcher *)ctx)->c_pos_n[cell] = pos; }

static size_t count_levels(const char *f, size_t len)
{
    size_t n = 1;
    for (const char *p = f; (p = memchr(p, '/', (size_t)(f + len - p))) != NULL; p++) n++;
    return n;
}

/* Runs before a new fid is published: the exact-topic probe may find it at
 * once, and must see whether it is a wildcard filter. */
static void filter_init(void *ctx, uint32_t fid, const char *f, size_t len)
{
    wm_matcher *m = ctx;
    wm_rvec_init(&m->f_plain[fid]);
    wm_rvec_init(&m->f_cells[fid]);
    __atomic_store_n(&m->f_wild[fid], memchr(f, '+', len) || memchr(f, '#', len), __ATOMIC_RELAXED);
}

/* Takes a reference on the fid of inner filter f, attaching it to the index
 * when new. */
static wm_matcher_status filter_get(wm_matcher *m, const char *f, size_t len, uint32_t *fid)
{
    bool created;
    uint32_t id = wm_intern_get(&m->filters, 0, f, len, &created, filter_init, m);
    if (id == WM_INTERN_NONE)
        return m->filters.live >= m->filters.max_ids ? WM_MATCHER_E_FULL_FILTERS : WM_MATCHER_E_NOMEM;
    if (created) {
        if (m->f_wild[id]) {
            wm_matcher_status st = wm_topic_index_attach(m, id, f, len);
            if (st) { wm_intern_put(&m->filters, id); return st; }
        }
    }
    *fid = id;
    return WM_MATCHER_OK;
}

uint32_t wm_matcher_trie_cost(const wm_matcher *m, const char *filter, size_t len)
{
    size_t off;
    if (!m || !filter || wm_topic_filter_validate(filter, len, &off) != WM_TOPIC_OK) return 0;
    wm_topic_share share;
    const char *f = filter;
    size_t flen = len;
    if (wm_topic_share_split(filter, len, &share)) { f = share.filter; flen = share.filter_len; }
    if (!memchr(f, '+', flen) && !memchr(f, '#', flen)) return 0; /* the exact table's, not the trie's */
    if (wm_intern_find(&m->filters, 0, f, flen) != WM_INTERN_NONE) return 0; /* attached already */
    return wm_topic_index_cost(m, f, flen);
}

static void filter_put(wm_matcher *m, uint32_t fid)
{
    if (m->filters.refs[fid] == 1 && m->f_wild[fid]) {
        size_t len;
        const char *f = wm_intern_key(&m->filters, fid, &len);
        wm_topic_index_detach(m, fid, f, len);
    }
    wm_intern_put(&m->filters, fid);
}

/* The one live element of a short list (compaction keeps tombstones under
 * half of a block, so the scan is short), or WM_NONE. */
static uint32_t only_live(const wm_rvec *v)
{
    if (wm_rvec_live(v) != 1) return WM_NONE;
    const wm_rvec_blk *b = v->blk;
    for (uint32_t i = 0; i < b->len; i++)
        if (b->v[i] != WM_RVEC_DEAD) return b->v[i];
    return WM_NONE;
}

/* Recomputes nb_one[nb] after its cell list or the subscription list of
 * its only cell changed (writer). */
void wm_matcher_nbhd_summarize(wm_matcher *m, uint32_t nb)
{
    uint64_t v = wm_rvec_live(&m->nb_cells[nb]) == 0 ? WM_NB_NO_CELL : WM_NB_MANY_CELLS;
    uint32_t c = only_live(&m->nb_cells[nb]);
    if (c != WM_NONE) {
        uint32_t s = only_live(&m->c_subs[c]);
        bool plain = s != WM_NONE && m->s_hot[s].group == WM_NONE && !m->s_hot[s].no_local;
        v = (uint64_t)m->c_fid[c] << 32 | (plain ? WM_NB_ONE_SUB | s : c);
    }
    __atomic_store_n(&m->nb_one[nb], v, __ATOMIC_RELEASE);
    uint8_t tag = v == WM_NB_NO_CELL ? WM_NB_TAG_NONE : v == WM_NB_MANY_CELLS ? WM_NB_TAG_MANY : wm_nb_tag((uint32_t)(v >> 32));
    __atomic_store_n(&m->nb_tag[nb], tag, __ATOMIC_RELEASE);
}

/* Takes a reference on cell (fid, nbhd), creating and linking it when new. */
static wm_matcher_status cell_get(wm_matcher *m, uint32_t fid, uint32_t nb, uint32_t *cell)
{
    bool created;
    uint32_t c = wm_intern_get(&m->cellkeys, fid, (const char *)&nb, sizeof nb, &created, NULL, NULL);
    if (c == WM_INTERN_NONE)
        return m->cellkeys.live >= m->cellkeys.max_ids ? WM_MATCHER_E_FULL_SUBS : WM_MATCHER_E_NOMEM;
    if (created) {
        m->c_fid[c] = fid;
        m->c_nbhd[c] = nb;
        wm_rvec_init(&m->c_subs[c]);
        wm_nbf_cell_add(m, fid, nb); /* before the link: a superset is harmless */
        /* Linked while empty: a reader reaching it finds no subscription. */
        if (!wm_rvec_push(&m->f_cells[fid], c, &m->c_pos_f[c], &m->retire, moved_cell_f, m)) {
            wm_intern_put(&m->cellkeys, c);
            return WM_MATCHER_E_NOMEM;
        }
        if (!wm_rvec_push(&m->nb_cells[nb], c, &m->c_pos_n[c], &m->retire, moved_cell_n, m)) {
            wm_rvec_remove_at(&m->f_cells[fid], m->c_pos_f[c], &m->retire, moved_cell_f, m);
            wm_nbf_cell_removed(m, fid);
            wm_intern_put(&m->cellkeys, c);
            return WM_MATCHER_E_NOMEM;
        }
        wm_matcher_nbhd_summarize(m, nb);
    }
    *cell = c;
    return WM_MATCHER_OK;
}

static void cell_put(wm_matcher *m, uint32_t c)
{
    if (m->cellkeys.refs[c] == 1) {
        wm_rvec_remove_at(&m->f_cells[m->c_fid[c]], m->c_pos_f[c], &m->retire, moved_cell_f, m);
        wm_nbf_cell_removed(m, m->c_fid[c]);
        wm_rvec_remove_at(&m->nb_cells[m->c_nbhd[c]], m->c_pos_n[c], &m->retire, moved_cell_n, m);
        wm_matcher_nbhd_summarize(m, m->c_nbhd[c]);
        /* Its subscription list is already empty (and its block dropped). */
    }
    wm_intern_put(&m->cellkeys, c);
}

static wm_matcher_status fail(wm_matcher_error *err, wm_matcher_status st)
{
    if (err) err->status = st;
    return st;
}

wm_matcher_status wm_matcher_sub_add(wm_matcher *m, const wm_sub_spec *sp, uint32_t *sub, wm_matcher_error *err)
{
    if (err) *err = (wm_matcher_error){ 0 };
    if (!m || !sp || !sub || !sp->filter || (sp->client_len && !sp->client)) return fail(err, WM_MATCHER_E_INVALID_ARG);
    size_t off = 0;
    wm_topic_status ts = wm_topic_filter_validate(sp->filter, sp->filter_len, &off);
    if (ts != WM_TOPIC_OK) {
        if (err) { err->topic_status = ts; err->offset = off; }
        return fail(err, WM_MATCHER_E_INVALID_FILTER);
    }
    wm_topic_share share;
    bool shared = wm_topic_share_split(sp->filter, sp->filter_len, &share);
    const char *f = shared ? share.filter : sp->filter;
    size_t flen = shared ? share.filter_len : sp->filter_len;
    if (shared && sp->no_local) return fail(err, WM_MATCHER_E_NO_LOCAL_SHARED);
    if (sp->qos > 2) return fail(err, WM_MATCHER_E_BAD_QOS);
    if (sp->client_len > 65535) return fail(err, WM_MATCHER_E_BAD_CLIENT);
    if (count_levels(f, flen) > m->cfg.max_levels) return fail(err, WM_MATCHER_E_TOO_DEEP);
    uint32_t nb = sp->nbhd;
    if (nb != WM_NBHD_NONE && (nb >= m->nbhd_ids.high || m->nb_refs[nb] == 0)) return fail(err, WM_MATCHER_E_UNKNOWN_NBHD);

    wm_matcher_status st;
    uint32_t s = wm_idpool_alloc(&m->sub_ids, &m->retire);
    if (s == WM_NONE) return fail(err, WM_MATCHER_E_FULL_SUBS);
    uint32_t client = wm_intern_get(&m->clients, 0, sp->client ? sp->client : "", sp->client_len, NULL, NULL, NULL);
    if (client == WM_INTERN_NONE) {
        st = m->clients.live >= m->clients.max_ids ? WM_MATCHER_E_FULL_CLIENTS : WM_MATCHER_E_NOMEM;
        goto undo_sub;
    }
    uint32_t fid;
    if ((st = filter_get(m, f, flen, &fid))) goto undo_client;
    uint32_t group = WM_NONE;
    if (shared) {
        group = wm_intern_get(&m->groups, fid, share.name, share.name_len, NULL, NULL, NULL);
        if (group == WM_INTERN_NONE) {
            st = m->groups.live >= m->groups.max_ids ? WM_MATCHER_E_FULL_GROUPS : WM_MATCHER_E_NOMEM;
            goto undo_filter;
        }
    }
    uint32_t cell = WM_NONE;
    if (nb != WM_NBHD_NONE && (st = cell_get(m, fid, nb, &cell))) goto undo_group;

    m->s_hot[s] = (wm_sub_hot){ .client_key = wm_hash_bytes(0, sp->client ? sp->client : "", sp->client_len),
                                .client = client, .group = group, .no_local = sp->no_local, .qos = sp->qos,
                                .live = 1, .content = sp->content };
    m->s_cold[s] = (wm_sub_cold){ .cookie = sp->cookie, .fid = fid, .cell = cell, .nbhd = nb };
    /* The one store that makes the subscription visible. */
    wm_rvec *list = cell == WM_NONE ? &m->f_plain[fid] : &m->c_subs[cell];
    if (!wm_rvec_push(list, s, &m->s_cold[s].pos, &m->retire, moved_sub, m)) {
        st = WM_MATCHER_E_NOMEM;
        m->s_hot[s].live = 0;
        if (cell != WM_NONE) cell_put(m, cell);
        goto undo_group;
    }
    if (nb != WM_NBHD_NONE) {
        m->nb_refs[nb]++;
        wm_matcher_nbhd_summarize(m, nb);
    }
    *sub = s;
    return WM_MATCHER_OK;

undo_group:
    if (group != WM_NONE) wm_intern_put(&m->groups, group);
undo_filter:
    filter_put(m, fid);
undo_client:
    wm_intern_put(&m->clients, client);
undo_sub:
    wm_idpool_release(&m->sub_ids, &m->retire, s);
    return fail(err, st);
}

wm_matcher_status wm_matcher_sub_remove(wm_matcher *m, uint32_t s)
{
    if (!m || s >= m->sub_ids.high || !m->s_hot[s].live) return WM_MATCHER_E_UNKNOWN_SUB;
    wm_sub_hot *h = &m->s_hot[s];
    wm_sub_cold *c = &m->s_cold[s];
    /* The store that hides it (and, for a spatial subscription, the
     * neighborhood summary that may name it directly). */
    if (c->cell == WM_NONE) wm_rvec_remove_at(&m->f_plain[c->fid], c->pos, &m->retire, moved_sub, m);
    else wm_rvec_remove_at(&m->c_subs[c->cell], c->pos, &m->retire, moved_sub, m);
    h->live = 0;
    if (c->cell != WM_NONE) {
        wm_matcher_nbhd_summarize(m, c->nbhd);
        cell_put(m, c->cell);
        wm_matcher_nbhd_unref(m, c->nbhd);
    }
    if (h->group != WM_NONE) wm_intern_put(&m->groups, h->group);
    filter_put(m, c->fid);
    wm_intern_put(&m->clients, h->client);
    wm_idpool_release(&m->sub_ids, &m->retire, s);
    return WM_MATCHER_OK;
}

size_t wm_matcher_apply(wm_matcher *m, wm_matcher_op *ops, size_t n, bool wait)
{
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        wm_matcher_op *op = &ops[i];
        if (op->kind == WM_OP_ADD) {
            wm_matcher_sub_add(m, &op->add, &op->sub, &op->result);
        } else {
            op->result = (wm_matcher_error){ 0 };
            op->result.status = op->kind == WM_OP_REMOVE ? wm_matcher_sub_remove(m, op->sub) : WM_MATCHER_E_INVALID_ARG;
        }
        if (op->result.status != WM_MATCHER_OK) failed++;
    }
    wm_matcher_reclaim(m, wait);
    return failed;
}

uint64_t wm_matcher_sub_cookie(const wm_matcher *m, uint32_t s) { return m->s_cold[s].cookie; }
uint32_t wm_matcher_sub_content(const wm_matcher *m, uint32_t s) { return m->s_hot[s].content; }
uint8_t wm_matcher_sub_qos(const wm_matcher *m, uint32_t s) { return m->s_hot[s].qos; }

/* ---------------------------------------------------------------- readers */

wm_matcher_reader *wm_matcher_reader_new(wm_matcher *m)
{
    wm_matcher_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->m = m;
    r->stack_cap = 2 * (m->cfg.max_levels + 2) + 4;
    r->fmark = calloc((size_t)m->cfg.max_filters + 1, sizeof *r->fmark); /* + the guard entry (walk_ents) */
    r->nmark = calloc(m->cfg.max_nbhds, sizeof *r->nmark);
    r->fids = calloc(m->cfg.max_filters, sizeof *r->fids);
    r->ent = calloc((size_t)WM_POSTING_READ_ROOM * WM_MATCH_MAX_PUB_PEIDS, sizeof *r->ent);
    r->stack = calloc(r->stack_cap, sizeof *r->stack);
    if (!r->fmark || !r->nmark || !r->fids || !r->stack || !r->ent ||
        m->cfg.qsbr->reader_register(m->cfg.qsbr->ctx, &r->qidx) != 0) {
        free(r->fmark); free(r->nmark); free(r->fids); free(r->stack); free(r->ent); free(r);
        return NULL;
    }
    return r;
}

void wm_matcher_reader_free(wm_matcher_reader *r)
{
    if (!r) return;
    const wm_qsbr_ops *q = r->m->cfg.qsbr;
    wm_qsbr_reader_offline(q, r->qidx);
    q->reader_unregister(q->ctx, r->qidx);
    free(r->fmark); free(r->nmark); free(r->fids); free(r->stack); free(r->ent); free(r);
}

void wm_matcher_quiescent(wm_matcher_reader *r) { wm_qsbr_reader_quiescent(r->m->cfg.qsbr, r->qidx); }
void wm_matcher_reader_offline(wm_matcher_reader *r) { wm_qsbr_reader_offline(r->m->cfg.qsbr, r->qidx); }
void wm_matcher_reader_online(wm_matcher_reader *r)
{
    const wm_qsbr_ops *q = r->m->cfg.qsbr;
    q->reader_online(q->ctx, r->qidx);
}

/* ---------------------------------------------------------------- lookup */

typedef struct emit_ctx {
    const wm_sub_hot *hot;
    const wm_matcher *m;
    uint64_t client_key;  /* valid once have_key: hashed on the first No Local subscription met */
    bool have_key;
    const char *client;  /* NULL: publisher unknown, No Local removes nothing */
    size_t client_len;
    wm_match_result *res;
    bool truncated;
} emit_ctx;

/* No Local (§3.8.3.1): is the publisher this subscription's own client?
 * The key rules out almost every pair; equal keys are confirmed on the
 * strings (the subscription's client string lives as long as it does).
 * Most lookups meet no No Local subscription, so the publisher's key is
 * hashed only when one is. */
static inline bool own_publication(emit_ctx *e, const wm_sub_hot *h)
{
    if (!e->client) return false;
    if (!e->have_key) {
        e->client_key = wm_hash_bytes(0, e->client, e->client_len);
        e->have_key = true;
    }
    if (h->client_key != e->client_key) return false;
    size_t n;
    const char *k = wm_intern_key(&e->m->clients, h->client, &n);
    return n == e->client_len && memcmp(k, e->client, n) == 0;
}

static inline void emit_list(emit_ctx *e, const wm_rvec *v)
{
    uint32_t n;
    const wm_rvec_blk *b = wm_rvec_snapshot(v, &n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = wm_rvec_at(b, i);
        if (s == WM_RVEC_DEAD) continue;
        const wm_sub_hot *h = &e->hot[s];
        if (h->no_local && own_publication(e, h)) continue;
        wm_match_result *res = e->res;
        if (h->group == WM_NONE) {
            if (res->n_subs < res->subs_cap) res->subs[res->n_subs++] = s;
            else e->truncated = true;
        } else {
            if (res->n_members < res->members_cap) res->members[res->n_members++] = s;
            else e->truncated = true;
        }
    }
}

/* A subscription known to have no group and no No Local (nb_one). */
static inline void emit_plain(emit_ctx *e, uint32_t s)
{
    wm_match_result *res = e->res;
    if (res->n_subs < res->subs_cap) res->subs[res->n_subs++] = s;
    else e->truncated = true;
}

static inline uint64_t member_key(const wm_sub_hot *hot, uint32_t s) { return (uint64_t)hot[s].group << 32 | s; }

/* Heap sort of members by (group, sub): no allocation, O(n log n) worst. */
static void sift(const wm_sub_hot *hot, uint32_t *a, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && member_key(hot, a[c + 1]) > member_key(hot, a[c])) c++;
        if (member_key(hot, a[i]) >= member_key(hot, a[c])) return;
        uint32_t t = a[i]; a[i] = a[c]; a[c] = t;
        i = c;
    }
}

static void sort_members(const wm_sub_hot *hot, uint32_t *a, size_t n)
{
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            uint32_t x = a[i];
            uint64_t k = member_key(hot, x);
            size_t j = i;
            while (j && member_key(hot, a[j - 1]) > k) { a[j] = a[j - 1]; j--; }
            a[j] = x;
        }
        return;
    }
    for (size_t i = n / 2; i-- > 0;) sift(hot, a, i, n);
    for (size_t end = n; end-- > 1;) {
        uint32_t t = a[0]; a[0] = a[end]; a[end] = t;
        sift(hot, a, 0, end);
    }
}

static void group_members(const wm_sub_hot *hot, wm_match_result *res, emit_ctx *e)
{
    sort_members(hot, res->members, res->n_members);
    for (uint32_t i = 0; i < res->n_members; i++) {
        uint32_t g = hot[res->members[i]].group;
        if (res->n_groups && res->groups[res->n_groups - 1].group == g) {
            res->groups[res->n_groups - 1].count++;
            continue;
        }
        if (res->n_groups == res->groups_cap) { e->truncated = true; res->n_members = i; break; }
        res->groups[res->n_groups++] = (wm_match_group){ g, i, 1 };
    }
}

/* The peid side, one neighborhood of a posting list: through its summary
 * when it serves one topic filter, else through its cells; a cell counts
 * when its fid matched the topic. dedup: several peids, so a neighborhood
 * may come up more than once. */
static inline __attribute__((always_inline)) void visit_nbhd(wm_matcher_reader *r, emit_ctx *e, uint32_t nb, bool dedup, uint32_t ep)
{
    const wm_matcher *m = r->m;
    if (dedup) {
        if (r->nmark[nb] == ep) return;
        r->nmark[nb] = ep;
    }
    uint64_t one = __atomic_load_n(&m->nb_one[nb], __ATOMIC_ACQUIRE);
    if (one == WM_NB_NO_CELL) return;
    if (one != WM_NB_MANY_CELLS) {
        if (r->fmark[one >> 32] != ep) return;
        uint32_t lo = (uint32_t)one;
        if (lo & WM_NB_ONE_SUB) emit_plain(e, lo & ~WM_NB_ONE_SUB);
        else emit_list(e, &m->c_subs[lo]);
        return;
    }
    uint32_t nc;
    const wm_rvec_blk *cb = wm_rvec_snapshot(&m->nb_cells[nb], &nc);
    for (uint32_t q = 0; q < nc; q++) {
        uint32_t c = wm_rvec_at(cb, q);
        if (c != WM_RVEC_DEAD && r->fmark[m->c_fid[c]] == ep) emit_list(e, &m->c_subs[c]);
    }
}

/* The peid side over one posting slot's neighborhoods (nbs[k] for each
 * bit k of mask). Most neighborhoods reached fail the topic test, so the
 * walk tests each by its one-byte tag against the set of the matched
 * fids' tags (tags: a 256-bit set, WM_NB_TAG_MANY always in it) without a
 * branch, collects the candidates, and only then reads each candidate's
 * summary, which decides: a tag is a hint (it may collide, or trail a
 * concurrent change like any read racing the writer). */
static inline __attribute__((always_inline)) void walk_ents(wm_matcher_reader *r, emit_ctx *e, const uint32_t *nbs,
                                                            uint32_t mask, bool dedup, uint32_t ep,
                                                            const uint64_t tags[4])
{
    const wm_matcher *m = r->m;
    const uint8_t *nb_tag = m->nb_tag;
    uint32_t *nmark = r->nmark;
    uint32_t cand[WM_POSTING_READ_ROOM], nc = 0;
    for (; mask; mask &= mask - 1) {
        uint32_t nb = nbs[__builtin_ctz(mask)];
        if (dedup) {
            if (nmark[nb] == ep) continue;
            nmark[nb] = ep;
        }
        uint32_t t = __atomic_load_n(&nb_tag[nb], __ATOMIC_RELAXED);
        cand[nc] = nb;
        nc += (uint32_t)(tags[t >> 6] >> (t & 63)) & 1;
    }
    for (uint32_t i = 0; i < nc; i++) visit_nbhd(r, e, cand[i], false, ep);
}

wm_matcher_status wm_matcher_lookup(wm_matcher_reader *r, const wm_match_pub *pub, wm_match_result *res)
{
    const wm_matcher *m = r->m;
    res->n_subs = res->n_members = res->n_groups = 0;
    if (pub->n_peids > WM_MATCH_MAX_PUB_PEIDS) return WM_MATCHER_E_TOO_MANY_PEIDS;
    if (++r->epoch == 0) { /* wrapped: forget every old mark */
        memset(r->fmark, 0, ((size_t)m->cfg.max_filters + 1) * sizeof *r->fmark);
        memset(r->nmark, 0, m->cfg.max_nbhds * sizeof *r->nmark);
        r->epoch = 1;
    }
    const uint32_t ep = r->epoch;

    /* 1. topic side */
    uint32_t nf = 0;
    uint32_t fid = wm_intern_find(&m->filters, 0, pub->topic, pub->topic_len);
    if (fid != WM_INTERN_NONE && !__atomic_load_n(&m->f_wild[fid], __ATOMIC_RELAXED)) r->fids[nf++] = fid;
    if (__atomic_load_n(&m->n_wild, __ATOMIC_ACQUIRE)) nf = wm_topic_index_match(r, pub->topic, pub->topic_len, nf);
    if (nf == 0) return WM_MATCHER_OK;

    emit_ctx e = { .hot = m->s_hot, .m = m, .client = pub->client, .client_len = pub->client_len, .res = res };
    uint64_t cost_topic = 0;
    /* nbf: the union of the neighborhood filters of the matched fids with
     * cells, or NULL once one of them has none (too few cells to keep one). */
    wm_nbf ubuf;
    const wm_nbf *nbf = NULL;
    bool nbf_ok = true;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t f = r->fids[i];
        r->fmark[f] = ep;
        emit_list(&e, &m->f_plain[f]);
        uint32_t n;
        wm_rvec_snapshot(&m->f_cells[f], &n);
        cost_topic += n;
        if (!n || !nbf_ok) continue;
        const wm_nbf *x = __atomic_load_n(&m->f_nbf[f], __ATOMIC_ACQUIRE);
        if (!x) nbf_ok = false;
        else if (!nbf) nbf = x;
        else {
            if (nbf != &ubuf) { wm_nbf_copy(&ubuf, nbf); nbf = &ubuf; }
            wm_nbf_or(&ubuf, x);
        }
    }
    /* Past ~1/8 of the bits set, false candidates cost more than the tag walk. */
    if (!nbf_ok || cost_topic > WM_NBF_BITS / 8) nbf = NULL;

    /* 2. spatial side, cheaper way round */
    uint32_t np = pub->n_peids;
    if (cost_topic && np) {
        uint64_t cost_peid = 0, cost_over = 0;
        for (uint32_t j = 0; j < np; j++) {
            uint32_t p = pub->peids[j];
            if (p >= m->cfg.max_peids) { r->ent_mask[j] = 0; continue; }
            r->ent_mask[j] = wm_posting_read(&m->p_nbhds[p], r->ent + WM_POSTING_READ_ROOM * j);
            cost_peid += (uint32_t)__builtin_popcount(r->ent_mask[j]);
            if (wm_posting_has_over(&m->p_nbhds[p])) {
                uint32_t n;
                wm_rvec_snapshot(&m->p_over[p], &n);
                cost_over += n;
            }
        }
        cost_peid += cost_over;
        /* Few cells: ask of each whether its neighborhood is in one of the
         * slots just read (a vector compare per peid; not when a slot spilled,
         * its overflow vector would be scanned per cell). */
        if (!cost_over && cost_topic * np * 4 <= cost_peid) {
            for (uint32_t i = 0; i < nf; i++) {
                uint32_t n;
                const wm_rvec_blk *b = wm_rvec_snapshot(&m->f_cells[r->fids[i]], &n);
                for (uint32_t k = 0; k < n; k++) {
                    uint32_t c = wm_rvec_at(b, k);
                    if (c == WM_RVEC_DEAD) continue;
                    uint32_t nb = m->c_nbhd[c];
                    for (uint32_t j = 0; j < np; j++)
                        if (wm_posting_has(r->ent + WM_POSTING_READ_ROOM * j, r->ent_mask[j], nb)) {
                            emit_list(&e, &m->c_subs[c]);
                            break;
                        }
                }
            }
        } else if (cost_peid && nbf) {
            for (uint32_t j = 0; j < np; j++) {
                uint32_t p = pub->peids[j];
                if (p >= m->cfg.max_peids) continue;
                const uint32_t *ids = r->ent + WM_POSTING_READ_ROOM * j;
                for (uint32_t c = wm_nbf_select(nbf, ids, r->ent_mask[j]); c; c &= c - 1)
                    visit_nbhd(r, &e, ids[__builtin_ctz(c)], np > 1, ep);
                if (!wm_posting_has_over(&m->p_nbhds[p])) continue;
                uint32_t no;
                const wm_rvec_blk *ob = wm_rvec_snapshot(&m->p_over[p], &no);
                for (uint32_t k = 0; k < no; k++) {
                    uint32_t nb = wm_rvec_at(ob, k);
                    if (nb != WM_RVEC_DEAD && wm_nbf_test(nbf, nb)) visit_nbhd(r, &e, nb, np > 1, ep);
                }
            }
        } else if (cost_peid) {
            uint64_t tags[4] = { 0 };
            tags[WM_NB_TAG_MANY >> 6] |= 1ull << (WM_NB_TAG_MANY & 63);
            for (uint32_t i = 0; i < nf; i++) {
                uint32_t t = wm_nb_tag(r->fids[i]);
                tags[t >> 6] |= 1ull << (t & 63);
            }
            for (uint32_t j = 0; j < np; j++) {
                uint32_t p = pub->peids[j];
                if (p >= m->cfg.max_peids) continue;
                const wm_posting *ps = &m->p_nbhds[p];
                if (np > 1) walk_ents(r, &e, r->ent + WM_POSTING_READ_ROOM * j, r->ent_mask[j], true, ep, tags);
                else walk_ents(r, &e, r->ent, r->ent_mask[0], false, ep, tags);
                if (!wm_posting_has_over(ps)) continue;
                uint32_t no;
                const wm_rvec_blk *ob = wm_rvec_snapshot(&m->p_over[p], &no);
                for (uint32_t k = 0; k < no; k++) {
                    uint32_t nb = wm_rvec_at(ob, k);
                    if (nb != WM_RVEC_DEAD) visit_nbhd(r, &e, nb, np > 1, ep);
                }
            }
        }
    }
    if (res->n_members) group_members(m->s_hot, res, &e);
    return e.truncated ? WM_MATCHER_E_TRUNCATED : WM_MATCHER_OK;
}

/* Burst: the publication's posting slots (two random lines each). */
static inline __attribute__((always_inline)) void prefetch_slots(const wm_matcher *m, const wm_match_pub *p)
{
    uint32_t np = p->n_peids < 4 ? p->n_peids : 4;
    for (uint32_t j = 0; j < np; j++)
        if (p->peids[j] < m->cfg.max_peids) wm_posting_prefetch(&m->p_nbhds[p->peids[j]]);
}

uint32_t wm_matcher_lookup_burst(wm_matcher_reader *r, const wm_match_pub *pubs, uint32_t n,
                                 wm_match_result *res, wm_matcher_status *statuses)
{
    enum { AHEAD = 6 };
    const wm_matcher *m = r->m;
    uint32_t failed = 0;
    for (uint32_t i = 0; i < n && i < AHEAD; i++) prefetch_slots(m, &pubs[i]);
    for (uint32_t i = 0; i < n; i++) {
        if (i + AHEAD < n) prefetch_slots(m, &pubs[i + AHEAD]);
        wm_matcher_status st = wm_matcher_lookup(r, &pubs[i], &res[i]);
        if (statuses) statuses[i] = st;
        failed += st != WM_MATCHER_OK;
    }
    return failed;
}

wm_matcher_status wm_matcher_lookup_str(wm_matcher_reader *r, const char *topic, size_t topic_len,
                                        const wm_match_str *peids, uint32_t n_peids,
                                        const char *client, size_t client_len, wm_match_result *res)
{
    res->n_subs = res->n_members = res->n_groups = 0;
    if (!topic || topic_len == 0 || topic_len > WM_TOPIC_MAX_LEN) return WM_MATCHER_E_INVALID_TOPIC;
    if (n_peids > WM_MATCH_MAX_PUB_PEIDS) return WM_MATCHER_E_TOO_MANY_PEIDS;
    for (uint32_t j = 0; j < n_peids; j++) {
        if (peids[j].len == 0 || peids[j].len > 65535) return WM_MATCHER_E_BAD_PEID;
        r->peids[j] = wm_intern_find(&r->m->peids, 0, peids[j].s, peids[j].len);
    }
    wm_match_pub pub = {
        .topic = topic, .topic_len = topic_len, .peids = r->peids, .n_peids = n_peids,
        .client = client, .client_len = client_len,
    };
    return wm_matcher_lookup(r, &pub, res);
}
