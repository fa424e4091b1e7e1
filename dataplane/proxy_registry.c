/* See proxy_registry.h. */
#include "dataplane/proxy_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct deferred {
    uint32_t sub;
    uint64_t expire_ns;
} deferred;

struct wm_proxy_registry {
    wm_matcher *m;
    pthread_mutex_t mu;
    deferred *def;          /* subscriptions of closed persistent sessions */
    size_t n_def, cap_def;
    uint64_t added, removed, refused;
    atomic_bool broken;
};

wm_proxy_registry *wm_proxy_registry_new(wm_matcher *m)
{
    wm_proxy_registry *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->m = m;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

void wm_proxy_registry_free(wm_proxy_registry *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    free(g->def);
    free(g);
}

wm_matcher_reader *wm_proxy_registry_reader(wm_proxy_registry *g) { return wm_matcher_reader_new(g->m); }

static void lock(wm_proxy_registry *g, wm_matcher_reader *rd)
{
    /* Offline first: the reclaiming thread holds the mutex while it waits
     * for every online reader's quiescent state. */
    if (rd) wm_matcher_reader_offline(rd);
    pthread_mutex_lock(&g->mu);
}

static void unlock(wm_proxy_registry *g, wm_matcher_reader *rd)
{
    pthread_mutex_unlock(&g->mu);
    if (rd) wm_matcher_reader_online(rd);
}

uint32_t wm_proxy_registry_add(wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes f, uint32_t nbhd)
{
    wm_sub_spec spec = { .filter = (const char *)f.p, .filter_len = f.len, .nbhd = nbhd };
    uint32_t sub = WM_SUB_NONE;
    lock(g, rd);
    if (wm_matcher_sub_add(g->m, &spec, &sub, NULL) == WM_MATCHER_OK) {
        g->added++;
    } else {
        sub = WM_SUB_NONE;
        g->refused++;
        atomic_store(&g->broken, true);
    }
    unlock(g, rd);
    return sub;
}

void wm_proxy_registry_remove(wm_proxy_registry *g, wm_matcher_reader *rd, uint32_t sub, uint64_t expire_ns)
{
    if (sub == WM_SUB_NONE) return;
    lock(g, rd);
    if (expire_ns == 0) {
        if (wm_matcher_sub_remove(g->m, sub) == WM_MATCHER_OK) g->removed++;
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

bool wm_proxy_registry_receivable(const wm_proxy_registry *g, wm_matcher_reader *rd, wm_mqtt5_bytes topic,
                                  const wm_match_str *peids, uint32_t n_peids)
{
    if (atomic_load_explicit(&g->broken, memory_order_relaxed)) return true;
    /* One slot each: a truncated result still says "at least one". */
    uint32_t subs[1], members[1];
    wm_match_group groups[1];
    wm_match_result res = { subs, 1, members, 1, groups, 1, 0, 0, 0 };
    wm_matcher_status st = wm_matcher_lookup_str(rd, (const char *)topic.p, topic.len, peids, n_peids, NULL, 0, &res);
    if (st == WM_MATCHER_E_TRUNCATED) return true;
    if (st != WM_MATCHER_OK) return true;   /* cannot tell: forward */
    return res.n_subs + res.n_groups > 0;
}

void wm_proxy_registry_reclaim(wm_proxy_registry *g, uint64_t now_ns)
{
    pthread_mutex_lock(&g->mu);
    size_t k = 0;
    for (size_t i = 0; i < g->n_def; i++) {
        if (g->def[i].expire_ns <= now_ns) {
            if (wm_matcher_sub_remove(g->m, g->def[i].sub) == WM_MATCHER_OK) g->removed++;
        } else {
            g->def[k++] = g->def[i];
        }
    }
    g->n_def = k;
    wm_matcher_reclaim(g->m, true);
    pthread_mutex_unlock(&g->mu);
}

void wm_proxy_registry_stats_get(wm_proxy_registry *g, wm_proxy_registry_stats *st)
{
    pthread_mutex_lock(&g->mu);
    st->added = g->added;
    st->removed = g->removed;
    st->refused = g->refused;
    st->deferred_live = g->n_def;
    st->broken = atomic_load(&g->broken);
    pthread_mutex_unlock(&g->mu);
}
