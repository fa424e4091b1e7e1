/* See proxy_reload.h. */
#include "dataplane/proxy_reload.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_filter.h"

struct wm_proxy_tables {
    char *path;
    bool locked;
    unsigned workers;
    _Atomic(const wm_proxy_spatial *) cur;
    _Atomic uint64_t gen;
    _Atomic uint64_t *seen;     /* [workers]: newest generation each one uses */
    wm_proxy_spatial *retired;  /* replaced, still possibly in use; NULL = none */
    uint64_t ok, failed;
};

wm_proxy_spatial *wm_proxy_tables_open(const char *path, char *err, size_t errcap)
{
    wm_proxy_spatial *sp = wm_proxy_spatial_open(path, err, errcap);
    if (sp && wm_proxy_spatial_nbhd_count(sp) >= WM_PROXY_SID_PLAIN - WM_PROXY_SID_BASE) {
        snprintf(err, errcap, "%s: more than %u neighborhoods", path, WM_PROXY_SID_PLAIN - WM_PROXY_SID_BASE - 1);
        wm_proxy_spatial_close(sp);
        sp = NULL;
    }
    return sp;
}

wm_proxy_tables *wm_proxy_tables_new(const char *path, wm_proxy_spatial *initial, unsigned workers, bool locked)
{
    wm_proxy_tables *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->path = strdup(path);
    t->seen = calloc(workers ? workers : 1, sizeof *t->seen);
    if (!t->path || !t->seen) {
        free(t->path);
        free((void *)t->seen);
        free(t);
        return NULL;
    }
    t->locked = locked;
    t->workers = workers;
    atomic_init(&t->cur, initial);
    atomic_init(&t->gen, 0);
    return t;
}

void wm_proxy_tables_free(wm_proxy_tables *t)
{
    if (!t) return;
    wm_proxy_spatial_close((wm_proxy_spatial *)atomic_load(&t->cur));
    wm_proxy_spatial_close(t->retired);
    free((void *)t->seen);
    free(t->path);
    free(t);
}

const wm_proxy_spatial *wm_proxy_tables_current(const wm_proxy_tables *t)
{
    return atomic_load_explicit(&((wm_proxy_tables *)t)->cur, memory_order_acquire);
}

bool wm_proxy_tables_settle(wm_proxy_tables *t)
{
    if (!t->retired) return true;
    uint64_t g = atomic_load(&t->gen);
    for (unsigned i = 0; i < t->workers; i++)
        if (atomic_load_explicit(&t->seen[i], memory_order_acquire) != g) return false;
    wm_proxy_spatial_close(t->retired);
    t->retired = NULL;
    return true;
}

int wm_proxy_tables_reload(wm_proxy_tables *t, char *err, size_t errcap)
{
    wm_proxy_spatial *sp = NULL;
    if (t->locked)
        snprintf(err, errcap, "not supported with --prefilter (its registry holds the first file's neighborhoods)");
    else if (!wm_proxy_tables_settle(t))
        snprintf(err, errcap, "the previous reload has not reached every worker yet");
    else
        sp = wm_proxy_tables_open(t->path, err, errcap);
    if (!sp) {
        t->failed++;
        return -1;
    }
    t->retired = (wm_proxy_spatial *)atomic_load(&t->cur);
    atomic_store_explicit(&t->cur, sp, memory_order_release);
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
    t->ok++;
    return 0;
}

const wm_proxy_spatial *wm_proxy_tables_poll(wm_proxy_tables *t, uint64_t *gen)
{
    uint64_t g = atomic_load_explicit(&t->gen, memory_order_acquire);
    if (g == *gen) return NULL;
    *gen = g;
    return atomic_load_explicit(&t->cur, memory_order_acquire);
}

void wm_proxy_tables_ack(wm_proxy_tables *t, unsigned w, uint64_t gen)
{
    if (w < t->workers) atomic_store_explicit(&t->seen[w], gen, memory_order_release);
}

void wm_proxy_tables_stats(const wm_proxy_tables *t, uint64_t *ok, uint64_t *failed)
{
    *ok = t->ok;
    *failed = t->failed;
}
