/* The --state saver's mirror (dataplane/proxy_state.h) taken from the
 * session table while workers change it (run under TSan by `make test
 * TSAN=1 TEST_FILTER=concurrent`): 4 threads make, fill, empty, leave and
 * drop sessions of their own client identifiers, while the main thread
 * syncs the mirror over and over (bounded holds of the registry's lock) and
 * lets sessions expire. Once they stop, a last sync must give exactly what a
 * new mirror of the table gives (same sessions with the same records; the
 * order is the mirror's own). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

enum { THREADS = 4, CIDS = 64, ROUNDS = 20000 };

static atomic_uint done;

typedef struct worker {
    wm_proxy_registry *g;
    unsigned id;
} worker;

static void none(void *ctx, const wm_proxy_saved_sub *r) { (void)ctx; (void)r; }

static void *churn(void *arg)
{
    worker *w = arg;
    unsigned seed = w->id * 7919u + 1;
    char cid[32], f[48];
    for (int i = 0; i < ROUNDS; i++) {
        unsigned k = (unsigned)rand_r(&seed);
        snprintf(cid, sizeof cid, "w%u-%u", w->id, k % CIDS);
        uint32_t n = (uint32_t)strlen(cid);
        bool fresh = (k >> 8) % 4 == 0;
        wm_proxy_session_ref r =
            wm_proxy_registry_session_attach(w->g, NULL, (const uint8_t *)cid, n, fresh, true, none, NULL);
        for (unsigned j = 0; j < (k >> 12) % 6; j++) {
            snprintf(f, sizeof f, "t/%u/#", (k >> (j + 3)) % 9);
            wm_proxy_saved_sub rec = { f, (uint32_t)strlen(f), WM_PROXY_SID_BASE + j, (k >> 20) % 2 ? "X1" : NULL,
                                       WM_SUB_NONE, (k >> 21) % 3 == 0 ? "//s:a[@v > 1]" : NULL };
            wm_proxy_registry_session_put(w->g, NULL, (const uint8_t *)cid, n, r.gen, &rec);
        }
        if ((k >> 24) % 3 == 0) wm_proxy_registry_session_del(w->g, NULL, (const uint8_t *)cid, n, r.gen, "t/1/#", 5);
        /* expiry: now (dropped), soon (the main thread's reclaim), or never */
        uint64_t exp = (k >> 26) % 3 == 0 ? 0 : (k >> 26) % 3 == 1 ? 1 : UINT64_MAX;
        wm_proxy_registry_session_detach(w->g, NULL, (const uint8_t *)cid, n, r.gen, exp);
    }
    atomic_fetch_add(&done, 1);
    return NULL;
}

static char *text(const wm_proxy_state_mirror *m)
{
    char *t;
    size_t n;
    cr_assert_eq(wm_proxy_state_format(m, 1, false, 1790000000, 5000000000000ull, &t, &n), 0);
    return t;
}

static int by_text(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The text's sessions (each with its "sub" lines, themselves sorted) sorted. */
static char *canonical(const char *t)
{
    size_t n = strlen(t), k = 0;
    char *c = strdup(t), **line = calloc(n + 1, sizeof *line);
    for (char *p = strtok(c, "\n"); p; p = strtok(NULL, "\n")) line[k++] = p;
    char **block = calloc(k + 1, sizeof *block), *out = calloc(n + k + 2, 1);
    size_t nb = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && strncmp(line[j], "sub ", 4) == 0) j++;
        qsort(line + i + 1, j - i - 1, sizeof *line, by_text);
        size_t len = 0;
        for (size_t x = i; x < j; x++) len += strlen(line[x]) + 1;
        char *b = calloc(len + 1, 1);
        for (size_t x = i; x < j; x++) { strcat(b, line[x]); strcat(b, "\n"); }
        block[nb++] = b;
        i = j;
    }
    qsort(block, nb, sizeof *block, by_text);
    for (size_t i = 0; i < nb; i++) { strcat(out, block[i]); free(block[i]); }
    free(block);
    free(line);
    free(c);
    return out;
}

Test(proxy_state_concurrent, the_mirror_taken_under_churn_ends_equal_to_the_table, .timeout = 600)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, THREADS * CIDS, 8);
    wm_proxy_state_mirror *m = wm_proxy_state_mirror_new(g);
    cr_assert(g && m);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){ g, i };
        cr_assert_eq(pthread_create(&th[i], NULL, churn, &w[i]), 0);
    }
    uint64_t syncs = 0;
    wm_proxy_registry_stats st;
    while (atomic_load(&done) < THREADS) {
        cr_assert_eq(wm_proxy_state_sync(m), 0);
        wm_proxy_registry_reclaim(g, 2);
        syncs++;
    }
    wm_proxy_registry_stats_get(g, &st);
    uint64_t during = st.copy_entries;
    for (unsigned i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    wm_proxy_registry_reclaim(g, 2);
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_gt(syncs, 10, "syncs while the workers ran: %" PRIu64, syncs);
    cr_assert_gt(during, st.sessions_live, "the mirror took changes while they happened");
    cr_assert_leq(st.copy_hold_max_entries, WM_PROXY_STATE_HOLD_ENTRIES);
    /* a second mirror started now sees the table as it is */
    char *t1 = text(m);
    wm_proxy_state_mirror_free(m);
    wm_proxy_state_mirror *m2 = wm_proxy_state_mirror_new(g);
    cr_assert_eq(wm_proxy_state_sync(m2), 0);
    char *t2 = text(m2), *c1 = canonical(t1), *c2 = canonical(t2);
    cr_assert_str_eq(c1, c2);
    cr_assert(strstr(t1, "\nsub "), "records in the table: %s", t1);
    printf("proxy_state_concurrent: %" PRIu64 " syncs, %" PRIu64 " entries taken, %" PRIu64 " sessions at the end\n",
           syncs, st.copy_entries, st.sessions_live);
    free(c1);
    free(c2);
    free(t1);
    free(t2);
    wm_proxy_state_mirror_free(m2);
    wm_proxy_registry_free(g);
}
