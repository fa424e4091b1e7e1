/* Neighborhoods (resolved spatial filters, spaPS §V-B1) and the spatial
 * filter mapping peid -> neighborhoods (spaPS §V-B2, main-memory mode).
 *
 * Why neighborhoods and not subscriptions in the mapping: the paper's map is
 * peid -> subscription ids, so adding a subscription costs O(filter size)
 * and memory is O(subscriptions x filter size) — 2 G entries for 1 M
 * subscriptions over 2,000-peid filters. Many subscriptions share one
 * neighborhood, so the mapping here is peid -> neighborhood, each set is
 * stored once (peid_set.h, to withdraw it) and reference counted; a
 * subscription on an existing neighborhood is O(1) and only a new
 * neighborhood pays O(filter size).
 *
 * Publication order for readers: a new neighborhood's postings are pushed
 * while no cell refers to it, so no lookup can reach it half-built; its
 * postings are withdrawn only after its last subscription is gone.
 */
#include "matcher/matcher_int.h"
#include "matcher/peid_set.h"

#include <stdlib.h>
#include <string.h>

static bool nbhd_live(const wm_matcher *m, uint32_t id)
{
    return id < m->cfg.max_nbhds && id < m->nbhd_ids.high && m->nb_refs[id] > 0;
}

uint32_t wm_matcher_nbhd_find(const wm_matcher *m, const char *name, size_t name_len)
{
    uint32_t nid = wm_intern_find(&m->nbhd_names, 0, name, name_len);
    return nid == WM_INTERN_NONE ? WM_NBHD_NONE : m->name_nbhd[nid];
}

uint32_t wm_matcher_nbhd_size(const wm_matcher *m, uint32_t id)
{
    return nbhd_live(m, id) ? m->nb_size[id] : 0;
}

/* Each posting insert or removal touches one random slot line (2,000
 * random lines for a 2,000-peid set), so the lines are prefetched far
 * enough ahead for their misses to overlap. The peids whose preferred line
 * is full (a few percent) are set aside and done in a second pass over
 * their other line, prefetched the same way, and those whose two lines are
 * full (under 1 % at 20 neighborhoods per peid) in a third pass over the
 * overflow vectors, instead of each stalling on a miss of its own. */
enum { AHEAD = 24 };

typedef wm_posting_op (*slot_step)(wm_posting *p, uint32_t x);

/* One pass: step() on the slot of each of ids[0..n), prefetching the line
 * it touches; the peids it could not place there are moved to the front of
 * ids and counted; *dups counts those it found placed already. */
static inline __attribute__((always_inline)) size_t pass(wm_matcher *m, uint32_t *ids, size_t n, uint32_t nb,
                                                         slot_step step, bool other, size_t *dups)
{
    size_t nd = 0;
    for (size_t i = 0; i < n + AHEAD; i++) {
        if (i < n) {
            const wm_posting *q = &m->p_nbhds[ids[i]];
            if (other) wm_posting_prefetch_other(q, nb);
            else wm_posting_prefetch_add(q, nb);
        }
        if (i >= AHEAD) {
            uint32_t p = ids[i - AHEAD];
            wm_posting_op op = step(&m->p_nbhds[p], nb);
            if (op == WM_POSTING_NOT_HERE) ids[nd++] = p;
            *dups += op == WM_POSTING_PRESENT;
        }
    }
    return nd;
}

/* The overflow vectors of ids[0..n): their slots' words first (a peid's
 * vector header sits beside the others in p_over), then each block. */
static void prefetch_over(wm_matcher *m, const uint32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) __builtin_prefetch(&m->p_over[ids[i]], 1);
    for (size_t i = 0; i < n; i++) {
        const wm_rvec_blk *b = m->p_over[ids[i]].blk;
        if (b) __builtin_prefetch(b, 1);
    }
}

/* Adds nb to the postings of ids[0..n); ids is overwritten. Returns how
 * many ids were copies of earlier ones (each peid's posting gets nb once),
 * or SIZE_MAX on allocation failure: some are added, the caller withdraws
 * them. */
static size_t postings_add(wm_matcher *m, uint32_t *ids, size_t n, uint32_t nb)
{
    size_t dups = 0;
    n = pass(m, ids, n, nb, wm_posting_try_add, false, &dups);
    n = pass(m, ids, n, nb, wm_posting_try_add_other, true, &dups);
    prefetch_over(m, ids, n);
    for (size_t i = 0; i < n; i++) {
        wm_posting_op op = wm_posting_add_over(&m->p_nbhds[ids[i]], &m->p_over[ids[i]], nb, &m->retire);
        if (op == WM_POSTING_NOMEM) return SIZE_MAX;
        m->spilled_postings += op == WM_POSTING_DONE;
        dups += op == WM_POSTING_PRESENT;
    }
    return dups;
}

/* Removes nb from the postings of ids[0..n) where present (ids is
 * overwritten). */
static void postings_remove(wm_matcher *m, uint32_t *ids, size_t n, uint32_t nb)
{
    size_t none = 0;
    n = pass(m, ids, n, nb, wm_posting_try_remove, false, &none);
    n = pass(m, ids, n, nb, wm_posting_try_remove_other, true, &none);
    prefetch_over(m, ids, n);
    for (size_t i = 0; i < n; i++)
        m->spilled_postings -= wm_posting_remove_over(&m->p_nbhds[ids[i]], &m->p_over[ids[i]], nb, &m->retire);
}

/* Removes nb from the postings of every peid of set, listed in pieces so
 * that no scratch (and no allocation that could fail) is needed. */
static void withdraw(wm_matcher *m, const wm_peid_set *set, uint32_t nb)
{
    uint32_t ids[512];
    size_t cur = 0;
    for (size_t k; (k = wm_peid_set_next(set, &cur, ids, sizeof ids / sizeof *ids)) != 0;)
        postings_remove(m, ids, k, nb);
}

/* Writer scratch for defining n peids: the ids, then a working copy for
 * the posting passes that is also wm_peid_unique's buffer, and that
 * function's bitset (zeroed once; it leaves it zeroed). */
static bool scratch(wm_matcher *m, size_t n)
{
    size_t need = n + wm_peid_unique_scratch(n);
    if (!m->sort_tmp || m->sort_cap < need) {
        size_t cap = need < 8192 ? 8192 : need;
        uint32_t *p = realloc(m->sort_tmp, cap * sizeof *p);
        if (!p) return false;
        m->sort_tmp = p;
        m->sort_cap = (uint32_t)cap;
    }
    if (!m->dedup_bits && !(m->dedup_bits = calloc(1024, sizeof *m->dedup_bits))) return false;
    return true;
}

/* Defines from peid ids already copied into m->sort_tmp[0..n). The
 * postings go in first, from a copy (the passes reorder it), and tell
 * whether some peid was listed twice; only then is the list de-duplicated
 * for the stored set (a well-formed neighborhood lists each peid once, and
 * sorting the list cost as much as the rest of the define). */
static wm_matcher_status define_from_scratch(wm_matcher *m, const char *name, size_t name_len, size_t n, uint32_t *out)
{
    uint32_t *ids = m->sort_tmp, *work = m->sort_tmp + n;
    uint32_t nb = wm_idpool_alloc(&m->nbhd_ids, &m->retire);
    if (nb == WM_NONE) return WM_MATCHER_E_FULL_NBHDS;
    bool created;
    uint32_t nid = wm_intern_get(&m->nbhd_names, 0, name, name_len, &created, NULL, NULL);
    if (nid == WM_INTERN_NONE) {
        wm_idpool_release(&m->nbhd_ids, &m->retire, nb);
        return m->nbhd_names.live >= m->nbhd_names.max_ids ? WM_MATCHER_E_FULL_NBHDS : WM_MATCHER_E_NOMEM;
    }
    /* Cell-less first, then postings: nothing matches through nb until a
     * cell names it. */
    wm_rvec_init(&m->nb_cells[nb]);
    __atomic_store_n(&m->nb_one[nb], WM_NB_NO_CELL, __ATOMIC_RELEASE);
    __atomic_store_n(&m->nb_tag[nb], WM_NB_TAG_NONE, __ATOMIC_RELEASE);
    memcpy(work, ids, n * sizeof *ids);
    size_t dups = postings_add(m, work, n, nb);
    wm_peid_set *set = NULL;
    if (dups != SIZE_MAX) {
        if (dups) n = wm_peid_unique(ids, n, work, m->dedup_bits);
        set = wm_peid_set_new(ids, n);
    }
    if (!set) {
        memcpy(work, ids, n * sizeof *ids); /* a copy listed twice is simply not found the second time */
        postings_remove(m, work, n, nb);
        wm_intern_put(&m->nbhd_names, nid);
        wm_idpool_release(&m->nbhd_ids, &m->retire, nb);
        return WM_MATCHER_E_NOMEM;
    }
    m->nb_set[nb] = set;
    m->nb_refs[nb] = 1;
    m->nb_name[nb] = nid;
    m->nb_size[nb] = (uint32_t)n;
    m->name_nbhd[nid] = nb;
    m->nbhd_peids += n;
    *out = nb;
    return WM_MATCHER_OK;
}

static wm_matcher_status check_name(const wm_matcher *m, const char *name, size_t name_len)
{
    if (!name || name_len == 0 || name_len > 65535) return WM_MATCHER_E_BAD_NAME;
    if (wm_intern_find(&m->nbhd_names, 0, name, name_len) != WM_INTERN_NONE) return WM_MATCHER_E_NBHD_EXISTS;
    return WM_MATCHER_OK;
}

/* Checks shared by both entry points; on OK the scratch holds room for n. */
static wm_matcher_status define_begin(wm_matcher *m, const char *name, size_t name_len, bool have_peids, size_t n,
                                      const uint32_t *id)
{
    if (!m || !id || (n && !have_peids)) return WM_MATCHER_E_INVALID_ARG;
    wm_matcher_status st = check_name(m, name, name_len);
    if (st) return st;
    return scratch(m, n) ? WM_MATCHER_OK : WM_MATCHER_E_NOMEM;
}

wm_matcher_status wm_matcher_nbhd_define_ids(wm_matcher *m, const char *name, size_t name_len,
                                             const uint32_t *peids, size_t n, uint32_t *id)
{
    wm_matcher_status st = define_begin(m, name, name_len, peids != NULL, n, id);
    if (st) return st;
    uint32_t min, max;
    if (n) wm_peid_range(peids, n, &min, &max);
    if (n && max >= m->peids.high) return WM_MATCHER_E_BAD_PEID;
    memcpy(m->sort_tmp, peids, n * sizeof *peids);
    return define_from_scratch(m, name, name_len, n, id);
}

wm_matcher_status wm_matcher_nbhd_define(wm_matcher *m, const char *name, size_t name_len,
                                         const wm_match_str *peids, size_t n, uint32_t *id)
{
    wm_matcher_status st = define_begin(m, name, name_len, peids != NULL, n, id);
    for (size_t i = 0; i < n && !st; i++) st = wm_matcher_peid_intern(m, peids[i].s, peids[i].len, &m->sort_tmp[i]);
    return st ? st : define_from_scratch(m, name, name_len, n, id);
}


void wm_matcher_nbhd_unref(wm_matcher *m, uint32_t nb)
{
    if (--m->nb_refs[nb] != 0) return;
    /* Last reference: no cell names nb any more, so no lookup can produce a
     * match through it; withdraw the postings and free after a grace period. */
    wm_peid_set *set = m->nb_set[nb];
    withdraw(m, set, nb);
    m->nbhd_peids -= m->nb_size[nb];
    wm_rvec_destroy(&m->nb_cells[nb]); /* empty: every cell was removed first */
    free(set); /* the writer's alone: readers never see it */
    wm_idpool_release(&m->nbhd_ids, &m->retire, nb);
}

wm_matcher_status wm_matcher_nbhd_release(wm_matcher *m, uint32_t id)
{
    if (!m || !nbhd_live(m, id) || m->nb_name[id] == WM_NONE) return WM_MATCHER_E_UNKNOWN_NBHD;
    wm_intern_put(&m->nbhd_names, m->nb_name[id]);
    m->nb_name[id] = WM_NONE;
    wm_matcher_nbhd_unref(m, id);
    return WM_MATCHER_OK;
}
