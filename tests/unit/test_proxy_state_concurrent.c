/* The --state saver's mirror (dataplane/proxy_state.h) taken from the
 * session table while workers change it (run under TSan by `make test
 * TSAN=1 TEST_FILTER=concurrent`): 4 threads, each a --prefilter reader as
 * the proxy's workers are, make, fill, empty, leave and drop sessions of
 * their own client identifiers (records registered in the matcher), while
 * the main thread syncs the mirror over and over (bounded holds of the
 * registry's lock), marks the ceilings taken saved (identifiers handed out
 * by the workers below them, dataplane/proxy_registry.h _session_sid) and
 * reclaims (sessions expire, grace periods waited for). Once they stop, a last sync must give exactly what a
 * new mirror of the table gives (same sessions with the same records; the
 * order is the mirror's own). Own main() under TSan
 * (tests/lib/concurrent_check.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_spatial.h"
#include "dataplane/proxy_state.h"
#include "tests/lib/concurrent_check.h"
#include "tests/lib/reload_fixture.h"

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
    uint64_t rd_gen;
    wm_matcher_reader *rd = wm_proxy_registry_reader(w->g, &rd_gen);
    CHECK(rd, "reader");
    unsigned seed = w->id * 7919u + 1;
    char cid[32], f[48];
    for (int i = 0; i < ROUNDS; i++) {
        unsigned k = (unsigned)rand_r(&seed);
        snprintf(cid, sizeof cid, "w%u-%u", w->id, k % CIDS);
        uint32_t n = (uint32_t)strlen(cid);
        bool fresh = (k >> 8) % 4 == 0;
        wm_proxy_session_ref r =
            wm_proxy_registry_session_attach(w->g, rd, (const uint8_t *)cid, n, fresh, true, none, NULL);
        /* a filtered SUBSCRIBE's identifier: below the saved ceiling, or wait */
        uint32_t sid;
        (void)wm_proxy_registry_session_sid(w->g, rd, (const uint8_t *)cid, n, r.gen, 0, &sid);
        for (unsigned j = 0; j < (k >> 12) % 6; j++) {
            snprintf(f, sizeof f, "t/%u/#", (k >> (j + 3)) % 9);
            wm_proxy_saved_sub rec = { f, (uint32_t)strlen(f), WM_PROXY_SID_BASE + j, (k >> 20) % 2 ? "X1" : NULL,
                                       WM_SUB_NONE, (k >> 21) % 3 == 0 ? "//s:a[@v > 1]" : NULL };
            rec.reg_sub = wm_proxy_registry_add(w->g, rd, (wm_mqtt5_bytes){ (const uint8_t *)f, rec.filter_len },
                                                rec.nbhd, rec.xpath != NULL, NULL);
            if (!wm_proxy_registry_session_put(w->g, rd, (const uint8_t *)cid, n, r.gen, &rec))
                wm_proxy_registry_remove(w->g, rd, rec.reg_sub, 0);
        }
        if ((k >> 24) % 3 == 0) wm_proxy_registry_session_del(w->g, rd, (const uint8_t *)cid, n, r.gen, "t/1/#", 5);
        /* expiry: now (dropped), soon (the main thread's reclaim), or never */
        uint64_t exp = (k >> 26) % 3 == 0 ? 0 : (k >> 26) % 3 == 1 ? 1 : UINT64_MAX;
        wm_proxy_registry_session_detach(w->g, rd, (const uint8_t *)cid, n, r.gen, exp);
        wm_matcher_quiescent(rd);
    }
    wm_matcher_reader_free(rd);
    atomic_fetch_add(&done, 1);
    return NULL;
}

static char *text(const wm_proxy_state_mirror *m)
{
    char *t;
    size_t n;
    CHECK(wm_proxy_state_format(m, 1, false, 1790000000, 5000000000000ull, &t, &n) == 0, "format");
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

static void mirror_under_churn(void)
{
    static const char *const x1[] = { "sq1", "p_in", NULL };
    const wm_test_nbhd nb[] = { { "X1", x1 } };
    char *path = wm_test_write_wmr(wm_test_tmpdir(), "x.wmr", nb, 1), err[256];
    CHECK(path, "fixture");
    wm_proxy_spatial *sp = wm_proxy_spatial_open(path, WM_PROXY_SPATIAL_SUBS_MAX, err, sizeof err);
    CHECK(sp, "%s", err);
    free(path);
    wm_proxy_registry *g = wm_proxy_registry_new(wm_proxy_spatial_matcher(sp), THREADS * CIDS, 8);
    wm_proxy_state_mirror *m = wm_proxy_state_mirror_new(g);
    CHECK(g && m, "registry");
    pthread_t th[THREADS];
    worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){ g, i };
        CHECK(pthread_create(&th[i], NULL, churn, &w[i]) == 0, "thread");
    }
    uint64_t syncs = 0;
    wm_proxy_registry_stats st;
    while (atomic_load(&done) < THREADS) {
        CHECK(wm_proxy_state_sync(m) == 0, "sync");
        /* as after a write: the ceilings taken are on disk, waiters woken */
        if (syncs % 4 == 0) wm_proxy_registry_ceilings_saved(g);
        if (wm_proxy_registry_sid_urgent(g)) wm_proxy_registry_sid_urgent_clear(g);
        (void)wm_proxy_registry_sid_wake(g);
        wm_proxy_registry_reclaim(g, 2);
        syncs++;
    }
    wm_proxy_registry_stats_get(g, &st);
    uint64_t during = st.copy_entries;
    for (unsigned i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    wm_proxy_registry_reclaim(g, 2);
    CHECK(wm_proxy_state_sync(m) == 0, "sync");
    wm_proxy_registry_stats_get(g, &st);
    CHECK(syncs > 10, "syncs while the workers ran: %" PRIu64, syncs);
    CHECK(during > st.sessions_live, "the mirror took changes while they happened: %" PRIu64, during);
    CHECK(st.copy_hold_max_entries <= WM_PROXY_STATE_HOLD_ENTRIES, "%" PRIu64 " entries in one hold", st.copy_hold_max_entries);
    /* a second mirror started now sees the table as it is */
    char *t1 = text(m);
    wm_proxy_state_mirror_free(m);
    wm_proxy_state_mirror *m2 = wm_proxy_state_mirror_new(g);
    CHECK(wm_proxy_state_sync(m2) == 0, "sync");
    char *t2 = text(m2), *c1 = canonical(t1), *c2 = canonical(t2);
    CHECK(strcmp(c1, c2) == 0, "the mirror:\n%s\na new mirror:\n%s", c1, c2);
    CHECK(strstr(t1, "\nsub "), "records in the table: %s", t1);
    LOG_INFO("proxy_state_concurrent: %" PRIu64 " syncs, %" PRIu64 " entries taken, %" PRIu64 " sessions at the end",
             syncs, st.copy_entries, st.sessions_live);
    free(c1);
    free(c2);
    free(t1);
    free(t2);
    wm_proxy_state_mirror_free(m2);
    wm_proxy_registry_free(g);
    wm_proxy_spatial_close(sp);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    mirror_under_churn();
    fprintf(stderr, "[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(proxy_state_concurrent, the_mirror_taken_under_churn_ends_equal_to_the_table, .timeout = 600) { mirror_under_churn(); }
#endif
