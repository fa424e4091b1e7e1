/* Content filters in the data plane's match sink (dataplane/match_sink.h)
 * under concurrency: two worker threads keep re-subscribing with XPath
 * filters whose texts keep changing (every change recompiles the automata
 * and publishes a new snapshot, retiring the old one) and match publications
 * in between, while the control thread compiles the new filters
 * (wm_match_table_compile), runs housekeeping (grace periods, frees of
 * retired snapshots) and reloads the tables (learned filters carried into a
 * new set). The workers are in wait mode (match_sink.h, "When a new content
 * filter applies"): a PUBLISH right after a SUBSCRIBE waits for the compile
 * of its new filter, so every answer is that of its text. Every publication must get the answer its payload
 * implies: pack A (a "Cel" record with v = 21.5) reaches the worker's own
 * subscription, whose filter is `@u = 'Cel' and @v > K` with K < 0; pack B
 * (only "V") reaches none. ASan/TSan catch a snapshot or reader freed under
 * a worker.
 *
 * The second run churns a DISTINCT text per subscription (`... and @v > K
 * and @n != 'wW-I'`, K from -30 to 30, so pack A reaches it iff K < 21.5),
 * through a table of 16 content slots: dropped slots are reused after their
 * grace period (control/content_filters.h), a new filter finding all 16
 * taken waits for one on its worker, and every answer must still be the
 * one its own text gives. (That a lagging reader never sees a reused slot
 * as its previous text is shown deterministically by test_schema_registry's
 * content_slot_reuse; here ASan/TSan watch the same machinery under threads.) Run under ThreadSanitizer by CI (`make test TSAN=1
 * TEST_FILTER=concurrent`; own main() there, tests/lib/concurrent_check.h).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/match_sink.h"
#include "tests/lib/concurrent_check.h"
#include "tests/lib/exi_fixture.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ITER 300
#else
#define ITER 2000
#endif

static struct wm_match_table *T;
static uint8_t pack[2][512];
static size_t pack_len[2];
static atomic_int running;
static pthread_barrier_t start;
static bool distinct; /* the second run: a new text, with its own answer, per subscription */
#define SLOTS 16      /* ... through this many content slots */

static wm_mqtt5_bytes bytes(const char *s) { return (wm_mqtt5_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) }; }

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    char err[256], client[16], xp[128];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    wm_match_worker_set_content_wait(w, true);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    snprintf(client, sizeof client, "c%d", id);
    char filter[16], topic[16];
    if (distinct) {
        snprintf(filter, sizeof filter, "t/%d/#", id);
        snprintf(topic, sizeof topic, "t/%d/x", id);
    } else {
        strcpy(filter, "t/#");
        strcpy(topic, "t/x");
    }
    const char *ct = "application/exi; schema=senml";
    uint64_t seq = 0;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITER; i++) {
        /* a new text most of the time: slots come and go, snapshots are replaced */
        int k = -1 - (i * 7 + id) % 23;
        if (distinct) {
            k = (i * 13 + id * 7) % 61 - 30;
            snprintf(xp, sizeof xp, "//s:senml[@u = 'Cel' and @v > %d and @n != 'w%d-%d']", k, id, i);
        } else {
            snprintf(xp, sizeof xp, "//s:senml[@u = 'Cel' and @v > %d]", k);
        }
        struct wm_mqtt_subscribe s = { client, (uint32_t)strlen(client), bytes(filter), 0, { 0 }, bytes(xp), 1, false, 0 };
        enum wm_mqtt_sub_status ss = sk.subscribe(sk.ctx, &s);
        if (ss != WM_MQTT_SUB_INSTALLED) wm_match_table_last_xpath_error(T, err, sizeof err);
        CHECK(ss == WM_MQTT_SUB_INSTALLED, "subscribe %s: status %d (%s)", xp, (int)ss, ss == WM_MQTT_SUB_XPATH_INVALID ? err : "");
        /* no burst boundary here: a reload published just before the
         * SUBSCRIBE took it into the new set, which the worker must follow
         * at once (match_sink.c, w_subscribe) */
        for (int d = 0; d < 2; d++) {
            enum wm_mqtt_pub_outcome o =
                (enum wm_mqtt_pub_outcome)wm_test_publish_exi(&sk, ++seq, topic, ct, pack[d], pack_len[d]);
            /* (distinct: the worker's own topic, so only its subscription is a candidate) */
            bool want = d == 0 && k < 21.5;
            CHECK(o == (want ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH), "worker %d, iteration %d, pack %d (K %d): %s",
                  id, i, d, k, wm_mqtt_pub_outcome_name(o));
        }
        if (i % 3 == 2) sk.unsubscribe(sk.ctx, &s);
        wm_match_worker_quiescent(w, 0);
    }
    wm_match_worker_free(w);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static void content_under_churn(bool distinct_texts)
{
    distinct = distinct_texts;
    char dir[] = "/tmp/wm_content_conc_XXXXXX", reg[128];
    const char *why = wm_test_senml_fixture(dir, reg, sizeof reg, pack, pack_len);
    CHECK(!why, "%s", why);
    wm_load_error le;
    T = wm_match_table_new(NULL, NULL, reg, 65536, &le);
    CHECK(T, "%s", le.reason);
    if (distinct) wm_match_table_set_xpath_slots(T, SLOTS);
    pthread_t th[2];
    atomic_store(&running, 2);
    pthread_barrier_init(&start, NULL, 3);
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, worker_main, (void *)(intptr_t)i) == 0, "thread");
    unsigned reloads = 0;
    pthread_barrier_wait(&start);
    for (unsigned k = 0; atomic_load(&running) > 0; k++) {
        while (wm_match_table_compile(T) == 1) {}
        wm_match_table_housekeeping(T);
        if (!distinct && k % 3 == 0) { /* (the distinct run keeps one set: its slot count is the test) */
            CHECK(wm_match_table_reload(T, &le) == 0, "reload: %s", le.reason);
            reloads++;
        }
        wm_match_table_wait_work(T, 1);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    struct wm_match_counters c;
    wm_match_table_counters(T, &c);
    CHECK(c.content_pubs == 4 * ITER && c.content_decoded == c.content_pubs, "content_pubs %llu, decoded %llu",
          (unsigned long long)c.content_pubs, (unsigned long long)c.content_decoded);
    if (distinct) {
        /* every subscription had its own text: 2 * ITER of them through few slots */
        CHECK(c.xpath_slots <= SLOTS && c.subs_xpath == 2 * ITER, "%llu content slots used, %llu of %d distinct filters installed",
              (unsigned long long)c.xpath_slots, (unsigned long long)c.subs_xpath, 2 * ITER);
    } else {
        CHECK(reloads > 0, "no reload happened while the workers ran");
        CHECK(c.content_candidates > c.content_pubs, "the workers' subscriptions never met: %llu candidates",
              (unsigned long long)c.content_candidates);
    }
    CHECK(c.subs_xpath_refused == 0 && c.reload_failures == 0, "refused %llu, reload failures %llu",
          (unsigned long long)c.subs_xpath_refused, (unsigned long long)c.reload_failures);
    LOG_INFO("content_concurrent%s: %d iterations x 2 workers, %u reloads, %llu candidates decided, %llu slots used, "
             "%llu slot waits", distinct ? " (distinct texts)" : "", ITER, reloads,
             (unsigned long long)c.content_candidates, (unsigned long long)c.xpath_slots,
             (unsigned long long)c.xpath_slot_waits);
    wm_match_table_free(T);
    unlink(reg);
    rmdir(dir);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    content_under_churn(false);
    content_under_churn(true);
    fprintf(stderr, "[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(content_concurrent, snapshots_under_subscription_churn, .timeout = 600) { content_under_churn(false); }
Test(content_concurrent, distinct_filters_reuse_slots, .timeout = 600) { content_under_churn(true); }
#endif
