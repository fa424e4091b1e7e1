/* Content filters compiled away from the proxy's workers
 * (dataplane/proxy_compile.h, control/content_filters.h "Compiling away from
 * the writer"): two worker threads, each with its own table, hand their new
 * texts to the compile threads (two) and go on matching publications with the
 * snapshot they have while the compile runs. Each round a worker wants a
 * batch of new texts (all distinct, one of them refused: an unbalanced
 * matches() pattern), drops the previous batch, starts one compile
 * (wm_proxy_content_kick) and keeps matching until wm_proxy_content_poll
 * publishes it (a text wanted after the compile started, "late", goes into
 * the next one with the next batch). Whenever a text of the batch is READY
 * (or REFUSED with its reason, for the bad one) it must give, with the
 * reader in hand, the answer its text implies: pack A (a "Cel" record with
 * v = 21.5) passes `@v > K` iff K < 21.5, pack B (only "V") never; so READY
 * never comes before a published snapshot has the text. ASan/TSan watch the handover: the job made on the worker, run on
 * the compile thread, ended on the worker. Run under ThreadSanitizer by CI
 * (`make test TSAN=1 TEST_FILTER=concurrent`; own main() there,
 * tests/lib/concurrent_check.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/proxy_filter.h"
#include "tests/lib/concurrent_check.h"
#include "tests/lib/exi_fixture.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ROUNDS 12
#else
#define ROUNDS 40
#endif
#define BATCH 6

static wm_schema_reg *REG;
static wm_proxy_compiler *CC;
static uint8_t pack[2][512];
static size_t pack_len[2];

static const char CT[] = "application/exi; schema=senml";

/* The text of worker id, round r, item j, and its threshold (INT32_MIN: refused). */
static int text_of(int id, int r, int j, char *out, size_t cap)
{
    if (j == BATCH - 1) {
        snprintf(out, cap, "//s:senml[matches(@n, '(w%d-%d')]", id, r);
        return INT32_MIN;
    }
    int k = (r * 11 + j * 7 + id * 5) % 61 - 30;
    /* matches(): a Hyperscan pattern per text, as in the storm of finding 7 */
    snprintf(out, cap, "//s:senml[@u = 'Cel' and @v > %d and not(matches(@n, '^w%d-%d-%d$'))]", k, id, r, j);
    return k;
}

static bool passes(wm_content_reader *rd, uint32_t slot, int d)
{
    bool pass = false;
    wm_exi_error e;
    enum wm_content_outcome o =
        wm_content_match(rd, CT, strlen(CT), pack[d], pack_len[d], &slot, 1, &pass, &e);
    CHECK(o == WM_CONTENT_OK, "outcome %s", wm_content_outcome_name(o));
    return pass;
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    wm_proxy_counters cnt;
    memset(&cnt, 0, sizeof cnt);
    wm_proxy_content ct;
    memset(&ct, 0, sizeof ct);
    CHECK(wm_proxy_content_open(&ct, REG) == 0, "open");
    ct.cc = CC;
    ct.req.wake_fd = -1;
    ct.cnt = &cnt;
    wm_proxy_content_kick(&ct);                       /* the empty table's first snapshot */
    while (!wm_proxy_content_poll(&ct)) usleep(100);
    uint32_t slot[BATCH] = { 0 }, prev[BATCH] = { 0 };
    int k[BATCH];
    char text[160], err[300];
    uint64_t served = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < BATCH; j++) {
            k[j] = text_of(id, r, j, text, sizeof text);
            CHECK(wm_content_want(ct.tab, text, strlen(text), &slot[j], err, sizeof err) == 0, "want: %s", err);
            if (prev[j]) wm_content_unref(ct.tab, prev[j]);
        }
        wm_proxy_content_kick(&ct);
        /* a text wanted once the compile started waits for the next one */
        uint32_t late;
        snprintf(text, sizeof text, "//s:senml[@v > %d and @n != 'late-%d-%d']", r, id, r);
        CHECK(wm_content_want(ct.tab, text, strlen(text), &late, err, sizeof err) == 0, "want: %s", err);
        const char *why;
        for (bool pending = true; pending;) {
            pending = false;
            for (int j = 0; j < BATCH; j++) {
                enum wm_content_state st = wm_content_state(ct.tab, slot[j], &why);
                if (st == WM_CONTENT_S_PENDING) {
                    pending = true;
                } else if (k[j] == INT32_MIN) {
                    CHECK(st == WM_CONTENT_S_REFUSED && why && strstr(why, "matches"),
                          "worker %d round %d: bad text state %d (%s)", id, r, (int)st, why ? why : "");
                } else {
                    /* READY means the reader in hand has it: never a text without its automaton */
                    CHECK(st == WM_CONTENT_S_READY, "worker %d round %d item %d: state %d", id, r, j, (int)st);
                    CHECK(passes(ct.rd, slot[j], 0) == (k[j] < 21.5), "worker %d round %d item %d (K %d): pack A",
                          id, r, j, k[j]);
                    CHECK(!passes(ct.rd, slot[j], 1), "worker %d round %d item %d: pack B passed", id, r, j);
                }
            }
            if (pending && !wm_proxy_content_poll(&ct)) {
                /* the worker serves on with what it has (a dropped slot may be
                 * known as unused there: any outcome) */
                bool pass;
                wm_exi_error e;
                if (ct.rd && prev[0]) wm_content_match(ct.rd, CT, strlen(CT), pack[0], pack_len[0], &prev[0], 1, &pass, &e);
                served++;
            }
        }
        wm_content_unref(ct.tab, late);
        memcpy(prev, slot, sizeof prev);
    }
    wm_proxy_content_close(&ct);
    LOG_INFO("proxy_compile_concurrent: worker %d, %d rounds of %d texts, %llu compiles, %llu matches served "
             "while compiles ran", id, ROUNDS, BATCH, (unsigned long long)cnt.filter_content_compiles,
             (unsigned long long)served);
    CHECK(cnt.filter_content_compiles >= ROUNDS, "%llu compiles", (unsigned long long)cnt.filter_content_compiles);
    return NULL;
}

static void compile_off_worker(void)
{
    char dir[] = "/tmp/wm_proxy_compile_XXXXXX", reg[128];
    const char *why = wm_test_senml_fixture(dir, reg, sizeof reg, pack, pack_len);
    CHECK(!why, "%s", why);
    wm_load_error le;
    CHECK(wm_schema_reg_load(reg, &REG, &le) == 0, "%s", le.reason);
    CC = wm_proxy_compiler_start(2);
    CHECK(CC, "compile thread");
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, worker_main, (void *)(intptr_t)i) == 0, "thread");
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    wm_proxy_compiler_stop(CC);
    wm_schema_reg_free(REG);
    unlink(reg);
    rmdir(dir);
}

/* Nobody waits for a compile (REVIEW6 finding 3): one compile thread to
 * start with; table a's heavy batch runs on it while table b's batch is
 * queued behind; every text of b's batch loses its client (unref) and the
 * next kick abandons b's job (stale: taken out of the FIFO, freed) and makes
 * the next one (a thread is started for it, a's being busy); a's worker ends
 * while a's job runs (abandoned: cancelled, freed by its thread). Then the
 * next compile of b publishes without the dropped texts, a's thread stops
 * at its next text, and the stop joins every thread (nothing detached).
 * ASan/TSan watch the jobs changing hands. */
static void cancel_and_abandon(void)
{
    char dir[] = "/tmp/wm_proxy_cancel_XXXXXX", reg[128], err[512], text[160];
    const char *why = wm_test_senml_fixture(dir, reg, sizeof reg, pack, pack_len);
    CHECK(!why, "%s", why);
    wm_load_error le;
    CHECK(wm_schema_reg_load(reg, &REG, &le) == 0, "%s", le.reason);
    CC = wm_proxy_compiler_start(1);
    CHECK(CC, "compile thread");
    wm_proxy_counters ca, cb;
    memset(&ca, 0, sizeof ca);
    memset(&cb, 0, sizeof cb);
    wm_proxy_content a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK(wm_proxy_content_open(&a, REG) == 0 && wm_proxy_content_open(&b, REG) == 0, "open");
    a.cc = b.cc = CC;
    a.req.wake_fd = b.req.wake_fd = -1;
    a.cnt = &ca;
    b.cnt = &cb;
    wm_proxy_content_kick(&a);
    wm_proxy_content_kick(&b);
    while (!wm_proxy_content_poll(&a)) usleep(100);
    while (!wm_proxy_content_poll(&b)) usleep(100);
    uint32_t slot[BATCH], s;
    for (int i = 0; i < 12; i++) {
        snprintf(text, sizeof text, "//s:senml[matches(@vs, '.{200}a%d')]", i);
        CHECK(wm_content_want(a.tab, text, strlen(text), &s, err, sizeof err) == 0, "want: %s", err);
    }
    wm_proxy_content_kick(&a);
    for (int j = 0; j < BATCH; j++) {
        snprintf(text, sizeof text, "//s:senml[@v > %d]", j);
        CHECK(wm_content_want(b.tab, text, strlen(text), &slot[j], err, sizeof err) == 0, "want: %s", err);
    }
    wm_proxy_content_kick(&b);
    for (int j = 0; j < BATCH; j++) wm_content_unref(b.tab, slot[j]);
    b.dropped = true;
    wm_proxy_content_kick(&b);
    CHECK(cb.filter_content_cancelled == 1, "b's job with no text wanted any more: %llu cancelled",
          (unsigned long long)cb.filter_content_cancelled);
    wm_proxy_content_close(&a);   /* abandoned while it runs (or still queued) */
    while (cb.filter_content_compiles < 2) {
        wm_proxy_content_poll(&b);
        usleep(100);
    }
    CHECK(wm_content_count(b.tab) == 0, "%u texts live in b", wm_content_count(b.tab));
    wm_proxy_content_close(&b);
    /* a's abandoned job stops at its next text (it was cancelled) */
    for (int i = 0; i < 60000 && wm_proxy_compiler_busy(CC); i++) usleep(1000);
    CHECK(!wm_proxy_compiler_busy(CC), "the abandoned compile still runs after 60 s");
    CHECK(!wm_proxy_compiler_stop(CC), "a compile was still running at the stop");
    wm_schema_reg_free(REG);
    unlink(reg);
    rmdir(dir);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    compile_off_worker();
    cancel_and_abandon();
    fprintf(stderr, "[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(proxy_compile_concurrent, compiles_handed_over_while_the_worker_serves, .timeout = 600) { compile_off_worker(); }
Test(proxy_compile_concurrent, cancelled_and_abandoned_compiles, .timeout = 600) { cancel_and_abandon(); }
#endif
