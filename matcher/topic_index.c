/* The wildcard half of the topic index (MQTT 5.0 §4.7).
 *
 * Wildcard-free filters never come here: a topic name can only equal them
 * byte for byte, so matcher.c finds them with one hash probe of the whole
 * topic. Filters with '+' or '#' live in a trie whose edges are entries of
 * one hash table keyed by (parent node, level bytes): an exact child is one
 * probe per topic level, and each node carries its '+' child and its "#"
 * filter precomputed, so no probe is spent on wildcard levels.
 *
 * The walk is a depth-first search with an explicit, bounded stack: every
 * trie node lies at depth <= max_levels, so at most max_levels + 1 pending
 * (node, offset) pairs ever wait on it. Each node corresponds to one filter
 * prefix, so a topic reaches each node at most once and every fid is
 * reported at most once.
 */
#include "matcher/matcher_int.h"

#include <string.h>

static inline uint32_t ld(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void st(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Level i of f: [*start, end) with end returned. */
static size_t level_end(const char *f, size_t len, size_t start)
{
    const char *slash = memchr(f + start, '/', len - start);
    return slash ? (size_t)(slash - f) : len;
}

/* Runs before the new edge is published (wm_intern_get's init hook), so
 * a reader that finds the edge never sees a recycled node's fields. */
static void node_init(void *ctx, uint32_t edge, const char *key, size_t n)
{
    wm_matcher *m = ctx;
    uint32_t node = edge + 1;
    (void)key; (void)n;
    st(&m->n_plus[node], WM_NONE);
    st(&m->n_hash_fid[node], WM_NONE);
    st(&m->n_end_fid[node], WM_NONE);
}

/* Drops the edge references of path[0..n) (deepest first). */
static void put_path(wm_matcher *m, const uint32_t *edge, const uint32_t *parent, const uint8_t *plus, size_t n)
{
    while (n--) {
        if (wm_intern_put(&m->edges, edge[n]) && plus[n]) st(&m->n_plus[parent[n]], WM_NONE);
    }
}

/* The trie path of a wildcard filter, root first. attach=true creates the
 * edges it lacks (one reference each) and links fid at the end; attach=false
 * unlinks fid and drops the references attach took. Both walk the same
 * levels: '#' is always last and hangs off its parent node. */
static wm_matcher_status walk(wm_matcher *m, uint32_t fid, const char *f, size_t len, bool attach)
{
    uint32_t maxl = m->cfg.max_levels;
    uint32_t edge[maxl], parent[maxl];
    uint8_t plus[maxl];
    size_t depth = 0, pos = 0;
    uint32_t node = 0, *slot;
    for (;;) {
        size_t e = level_end(f, len, pos), ll = e - pos;
        if (ll == 1 && f[pos] == '#') { slot = &m->n_hash_fid[node]; break; }
        if (depth >= maxl) { put_path(m, edge, parent, plus, depth); return WM_MATCHER_E_TOO_DEEP; }
        bool created = false;
        uint32_t id = attach ? wm_intern_get(&m->edges, node, f + pos, ll, &created, node_init, m)
                             : wm_intern_find(&m->edges, node, f + pos, ll);
        if (id == WM_INTERN_NONE) { /* attach only: detach walks edges attach made */
            /* (full is told before put_path gives this filter's new edges
             * back: after, the table is below its bound again, and a full
             * trie was reported as out of memory) */
            wm_matcher_status full = m->edges.live >= m->edges.max_ids ? WM_MATCHER_E_FULL_NODES : WM_MATCHER_E_NOMEM;
            put_path(m, edge, parent, plus, depth);
            return full;
        }
        edge[depth] = id; parent[depth] = node; plus[depth] = (ll == 1 && f[pos] == '+');
        if (created && plus[depth]) st(&m->n_plus[node], id + 1);
        depth++;
        node = id + 1;
        if (e == len) { slot = &m->n_end_fid[node]; break; }
        pos = e + 1;
    }
    if (attach) {
        st(slot, fid);
        __atomic_add_fetch(&m->n_wild, 1, __ATOMIC_RELEASE);
    } else {
        st(slot, WM_NONE);
        put_path(m, edge, parent, plus, depth);
        __atomic_sub_fetch(&m->n_wild, 1, __ATOMIC_RELEASE);
    }
    return WM_MATCHER_OK;
}

wm_matcher_status wm_topic_index_attach(wm_matcher *m, uint32_t fid, const char *f, size_t len)
{
    return walk(m, fid, f, len, true);
}

void wm_topic_index_detach(wm_matcher *m, uint32_t fid, const char *f, size_t len)
{
    walk(m, fid, f, len, false);
}

uint32_t wm_topic_index_match(wm_matcher_reader *r, const char *t, size_t len, uint32_t nf)
{
    const wm_matcher *m = r->m;
    uint32_t *stk = r->stack;
    uint32_t sp = 0;
    /* §4.7.2: wildcards at the first level do not match '$' topics. */
    bool dollar = len > 0 && t[0] == '$';
    const uint32_t done = (uint32_t)len + 1; /* offset meaning "all levels consumed" */
    stk[sp++] = 0; stk[sp++] = 0;
    while (sp) {
        uint32_t off = stk[--sp];
        uint32_t node = stk[--sp];
        uint32_t hf = ld(&m->n_hash_fid[node]);
        if (off == done) {
            /* "a/#" matches "a" (§4.7.1.2): the '#' also covers its parent. */
            uint32_t ef = ld(&m->n_end_fid[node]);
            if (ef != WM_NONE) r->fids[nf++] = ef;
            if (hf != WM_NONE) r->fids[nf++] = hf;
            continue;
        }
        bool root_dollar = dollar && node == 0;
        if (hf != WM_NONE && !root_dollar) r->fids[nf++] = hf;
        size_t e = level_end(t, len, off);
        uint32_t next = e == len ? done : (uint32_t)e + 1;
        uint32_t pl = ld(&m->n_plus[node]);
        if (pl != WM_NONE && !root_dollar && sp + 2 <= r->stack_cap) { stk[sp++] = pl; stk[sp++] = next; }
        uint32_t id = wm_intern_find(&m->edges, node, t + off, e - off);
        if (id != WM_INTERN_NONE && sp + 2 <= r->stack_cap) { stk[sp++] = id + 1; stk[sp++] = next; }
    }
    return nf;
}

uint32_t wm_topic_index_cost(const wm_matcher *m, const char *f, size_t len)
{
    uint32_t node = 0, n = 0, depth = 0;
    bool found = true;
    for (size_t pos = 0;; depth++) {
        size_t e = level_end(f, len, pos), ll = e - pos;
        if (ll == 1 && f[pos] == '#') break; /* '#' hangs off its parent: no node of its own */
        if (depth >= m->cfg.max_levels) break;
        if (found) {
            uint32_t id = wm_intern_find(&m->edges, node, f + pos, ll);
            if (id == WM_INTERN_NONE) found = false;
            else node = id + 1;
        }
        if (!found) n++;
        if (e == len) break;
        pos = e + 1;
    }
    return n;
}
