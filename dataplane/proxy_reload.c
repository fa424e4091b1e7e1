/* See proxy_reload.h. */
#include "dataplane/proxy_reload.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_filter.h"

struct wm_proxy_tables {
    char *res_path, *schemas_path;
    wm_proxy_registry *prefilter;
    unsigned workers;
    _Atomic(wm_proxy_tableset *) cur;
    _Atomic uint64_t gen;
    _Atomic uint64_t *seen;     /* [workers]: newest generation each one uses */
    wm_proxy_tableset *retired; /* replaced, still possibly in use; NULL = none */
    _Atomic uint64_t nbhd_gone, xpath_gone; /* reported by the workers for gen */
    uint64_t ok, failed;
};

static void set_free(wm_proxy_tableset *s)
{
    if (!s) return;
    wm_proxy_spatial_close(s->sp);
    wm_schema_reg_free(s->schemas);
    free(s);
}

wm_proxy_tables *wm_proxy_tables_new(const char *res_path, wm_proxy_spatial *sp, const char *schemas_path,
                                     wm_schema_reg *schemas, unsigned workers, wm_proxy_registry *prefilter)
{
    wm_proxy_tables *t = calloc(1, sizeof *t);
    wm_proxy_tableset *s = calloc(1, sizeof *s);
    if (!t || !s) goto fail;
    t->res_path = strdup(res_path);
    t->schemas_path = schemas_path ? strdup(schemas_path) : NULL;
    t->seen = calloc(workers ? workers : 1, sizeof *t->seen);
    if (!t->res_path || (schemas_path && !t->schemas_path) || !t->seen) goto fail;
    t->prefilter = prefilter;
    t->workers = workers;
    *s = (wm_proxy_tableset){ sp, schemas };
    atomic_init(&t->cur, s);
    atomic_init(&t->gen, 0);
    return t;
fail:
    if (t) {
        free(t->res_path);
        free(t->schemas_path);
        free((void *)t->seen);
    }
    free(t);
    free(s);
    return NULL;
}

void wm_proxy_tables_free(wm_proxy_tables *t)
{
    if (!t) return;
    set_free(atomic_load(&t->cur));
    set_free(t->retired);
    free((void *)t->seen);
    free(t->res_path);
    free(t->schemas_path);
    free(t);
}

const wm_proxy_tableset *wm_proxy_tables_current(const wm_proxy_tables *t)
{
    return atomic_load_explicit(&((wm_proxy_tables *)t)->cur, memory_order_acquire);
}

bool wm_proxy_tables_settle(wm_proxy_tables *t)
{
    if (!t->retired) return true;
    uint64_t g = atomic_load(&t->gen);
    for (unsigned i = 0; i < t->workers; i++)
        if (atomic_load_explicit(&t->seen[i], memory_order_acquire) != g) return false;
    set_free(t->retired);
    t->retired = NULL;
    fprintf(stderr, "wirematch-proxy: SIGHUP: reload %" PRIu64 " in use by every worker; live subscriptions "
                    "withheld from now on: %" PRIu64 " (neighborhood not in the file), %" PRIu64
                    " (xpath compiles for no schema)\n",
            g, atomic_load(&t->nbhd_gone), atomic_load(&t->xpath_gone));
    return true;
}

int wm_proxy_tables_reload(wm_proxy_tables *t, char *err, size_t errcap)
{
    wm_proxy_tableset *s = calloc(1, sizeof *s);
    char why[WM_LOAD_ERROR_TEXT_MAX];
    wm_load_error le;
    uint32_t pf_gone = 0;
    if (!s) {
        snprintf(err, errcap, "out of memory");
    } else if (!wm_proxy_tables_settle(t)) {
        snprintf(err, errcap, "the previous reload has not reached every worker yet");
    } else if (!(s->sp = wm_proxy_spatial_open(t->res_path, wm_proxy_spatial_subs(atomic_load(&t->cur)->sp), why,
                                               sizeof why))) {
        snprintf(err, errcap, "--resolution %s", why);
    } else if (t->schemas_path && wm_schema_reg_load(t->schemas_path, &s->schemas, &le)) {
        snprintf(err, errcap, "--schemas %s", wm_load_error_format(&le, why, sizeof why));
    } else if (t->prefilter &&
               wm_proxy_registry_rebind(t->prefilter, wm_proxy_spatial_matcher(s->sp), &pf_gone, err, errcap)) {
        /* err has the reason */
    } else {
        t->retired = atomic_load(&t->cur);
        atomic_store(&t->nbhd_gone, 0);
        atomic_store(&t->xpath_gone, 0);
        atomic_store_explicit(&t->cur, s, memory_order_release);
        atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
        t->ok++;
        int n = snprintf(err, errcap, "%s (%u neighborhoods)", t->res_path, wm_proxy_spatial_nbhd_count(s->sp));
        if (t->schemas_path && n >= 0 && (size_t)n < errcap)
            n += snprintf(err + n, errcap - (size_t)n, " and %s (%u schemas)", t->schemas_path, s->schemas->n);
        if (t->prefilter && n >= 0 && (size_t)n < errcap)
            snprintf(err + n, errcap - (size_t)n, "; --prefilter: %u registrations whose neighborhood the file lacks",
                     pf_gone);
        return 0;
    }
    set_free(s);
    t->failed++;
    return -1;
}

const wm_proxy_tableset *wm_proxy_tables_poll(wm_proxy_tables *t, uint64_t *gen)
{
    uint64_t g = atomic_load_explicit(&t->gen, memory_order_acquire);
    if (g == *gen) return NULL;
    *gen = g;
    return atomic_load_explicit(&t->cur, memory_order_acquire);
}

void wm_proxy_tables_ack(wm_proxy_tables *t, unsigned w, uint64_t gen, uint32_t nbhd_gone, uint32_t xpath_gone)
{
    atomic_fetch_add(&t->nbhd_gone, nbhd_gone);
    atomic_fetch_add(&t->xpath_gone, xpath_gone);
    if (w < t->workers) atomic_store_explicit(&t->seen[w], gen, memory_order_release);
}

void wm_proxy_tables_stats(const wm_proxy_tables *t, uint64_t *ok, uint64_t *failed)
{
    *ok = t->ok;
    *failed = t->failed;
}
