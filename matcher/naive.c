/* The reference matcher (see naive.h). */
#include "matcher/naive.h"

#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"

typedef struct naive_sub {
    uint32_t id;
    char *filter;   /* inner filter (after $share/{name}/) */
    char *client;
    bool no_local, spatial;
    uint32_t *peids; /* sorted */
    size_t n_peids;
} naive_sub;

struct wm_naive {
    naive_sub *subs;
    size_t n, cap;
};

wm_naive *wm_naive_new(void) { return calloc(1, sizeof(wm_naive)); }

static void sub_free(naive_sub *s) { free(s->filter); free(s->client); free(s->peids); }

void wm_naive_free(wm_naive *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->n; i++) sub_free(&n->subs[i]);
    free(n->subs);
    free(n);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

bool wm_naive_add(wm_naive *n, uint32_t id, const char *filter, const char *client, bool no_local,
                  bool spatial, const uint32_t *peids, size_t n_peids)
{
    if (n->n == n->cap) {
        size_t nc = n->cap ? n->cap * 2 : 64;
        naive_sub *ns = realloc(n->subs, nc * sizeof *ns);
        if (!ns) return false;
        n->subs = ns; n->cap = nc;
    }
    wm_topic_share sh;
    const char *f = filter;
    size_t flen = strlen(filter);
    if (wm_topic_share_split(filter, flen, &sh)) { f = sh.filter; flen = sh.filter_len; }
    naive_sub s = { .id = id, .no_local = no_local, .spatial = spatial };
    s.filter = strndup(f, flen);
    s.client = strdup(client ? client : "");
    if (spatial && n_peids) {
        s.peids = malloc(n_peids * sizeof *s.peids);
        if (s.peids) {
            memcpy(s.peids, peids, n_peids * sizeof *s.peids);
            qsort(s.peids, n_peids, sizeof *s.peids, cmp_u32);
        }
        s.n_peids = n_peids;
    }
    if (!s.filter || !s.client || (spatial && n_peids && !s.peids)) { sub_free(&s); return false; }
    n->subs[n->n++] = s;
    return true;
}

bool wm_naive_remove(wm_naive *n, uint32_t id)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->subs[i].id == id) {
            sub_free(&n->subs[i]);
            n->subs[i] = n->subs[--n->n];
            return true;
        }
    return false;
}

size_t wm_naive_count(const wm_naive *n) { return n->n; }

size_t wm_naive_match(const wm_naive *n, const char *topic, const uint32_t *peids, size_t n_peids,
                      const char *client, uint32_t *out, size_t cap)
{
    size_t k = 0, tlen = strlen(topic);
    for (size_t i = 0; i < n->n; i++) {
        const naive_sub *s = &n->subs[i];
        if (!wm_topic_match(s->filter, strlen(s->filter), topic, tlen)) continue;
        if (s->no_local && client && strcmp(client, s->client) == 0) continue;
        if (s->spatial) {
            bool hit = false;
            for (size_t j = 0; j < n_peids && s->n_peids && !hit; j++)
                hit = bsearch(&peids[j], s->peids, s->n_peids, sizeof *peids, cmp_u32) != NULL;
            if (!hit) continue;
        }
        if (k < cap) out[k] = s->id;
        k++;
    }
    qsort(out, k < cap ? k : cap, sizeof *out, cmp_u32);
    return k;
}
