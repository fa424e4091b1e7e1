/* Content-filter compiles off the worker (dataplane/match_sink.h, "When a
 * new content filter applies"): a worker thread subscribes with new XPath
 * texts and matches publications while a control thread compiles them
 * (wm_match_table_compile, as the data plane's reload_ctl thread does).
 *
 *   worker_matches_during_compile: a burst of 1,000 new filters; the
 *     compile hook holds every compile of the burst until the worker has
 *     matched 50 more publications, so a compile that ran ON the worker (or
 *     made it wait) would never end: the hook gives up after 60 s and the
 *     test fails. Meanwhile a filter compiled before the burst matches
 *     exactly as its text says, and the burst's pending subscriptions reach
 *     nothing (counted in content_pending); after the compile every one of
 *     them matches as its own text says. The 1,000 SUBSCRIBEs cost at most
 *     two compiles (coalescing: the one begun at the first SUBSCRIBE, then
 *     one for all the rest).
 *   wait_mode_sees_its_subscribe: a worker in wait mode matches a PUBLISH
 *     right after its SUBSCRIBE as if the filter had been compiled at the
 *     SUBSCRIBE (it waited once, counted); an already compiled text does
 *     not wait.
 *   refused_after_compile, unsubscribe_and_reload_while_pending: a text
 *     that compiles for no schema is installed pending, never matches, and
 *     is removed with its reason by the compile; a pending subscription
 *     removed or carried by a reload before its compile leaves nothing
 *     dangling (ASan).
 *   refused_between_lookup_and_check: the compile refuses a pending
 *     filter and removes its subscription right after a worker's lookup
 *     returned it and before the worker told its pending candidates apart
 *     (held there by the worker's lookup hook and the compile hook). The
 *     worker must still see it pending (async: skipped, content_pending;
 *     wait mode: waits once, then matches without it), never a candidate
 *     decided by the refused filter: content_candidates counts the one
 *     compiled candidate. Before, the refusal cleared the flag and the worker
 *     counted 2: the intermittent ('content_candidates', 321, 320) of
 *     tests/integration/dataplane_content.sh.
 *   resubscribe_{async,wait}: a re-SUBSCRIBE (same client, same filter)
 *     whose new `xpath` must still compile does not replace the
 *     subscription in force until its compile accepts it (MQTT 5.0 §3.8.4,
 *     house rule: a refusal never corrupts what was good): meanwhile the old
 *     filter decides (async: with the new one counted pending; wait mode:
 *     the PUBLISH waits for the compile, then the survivor decides); a
 *     refused one leaves the old one in force (subs_refused_kept), an
 *     accepted one replaces it (subs_replaced); an UNSUBSCRIBE takes both.
 *     Before 2026-12-02 the re-SUBSCRIBE replaced the old subscription at
 *     once and its refusal left the client with none.
 *   no_room_refused_at_once: a text valid alone that does not fit with
 *     the accepted ones is refused by its compile; subscribed again while
 *     the set has lost nothing it is refused at the SUBSCRIBE with the same
 *     reason, without a compile (REVIEW7 finding 2: before, every SUBSCRIBE
 *     of it cost a failing compile); once a text has gone it is tried again.
 *   reload_between_lookup_and_check_{async,wait},
 *   reload_within_a_burst_{async,wait}: a reload carries a pending
 *     subscription into a new set (where it compiles its filter) while the
 *     worker still reads the old set, where that filter was never compiled:
 *     between the PUBLISH's lookup and its content stage (the lookup hook),
 *     or between the worker's last quiescent state and the PUBLISH. Async:
 *     still pending on the old set (content_pending), never decided there
 *     (no_filter_for_schema); wait mode: delivered, matched against the
 *     new set. Before, the reload cleared the subscription's one pending
 *     flag for both sets: async counted no_filter_for_schema, and wait
 *     mode lost the delivery.
 *
 * Run under ThreadSanitizer by CI (`make test TSAN=1 TEST_FILTER=concurrent`;
 * own main() there, tests/lib/concurrent_check.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/match_sink.h"
#include "tests/lib/concurrent_check.h"
#include "tests/lib/exi_fixture.h"

#define BURST 1000
#define DURING 50  /* publications the worker must match while one compile runs */
#define MAX_COMPILES 64

static struct wm_match_table *T;
static uint8_t pack[2][512];
static size_t pack_len[2];
static char dir[64], reg[128];

/* the compile thread */
static pthread_t ctl;
static atomic_bool ctl_stop;
/* the hook: what the worker did while each compile ran */
static atomic_bool hold;           /* hold compiles until the worker matched DURING more */
static atomic_ulong pubs;          /* publications the worker matched */
static atomic_bool worker_done;
static unsigned long win_start[MAX_COMPILES], win_end[MAX_COMPILES];
static atomic_int n_win;
static atomic_bool hook_gave_up;
static atomic_bool hold_publish;     /* hold compiles until the worker is about to publish */
static atomic_bool about_to_publish;
static atomic_bool gate;             /* compiles wait before their heavy part while set */
static atomic_bool arm_lookup;       /* the worker's next lookup opens the gate, waits for the settle */

static wm_mqtt5_bytes bytes(const char *s) { return (wm_mqtt5_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) }; }

static void hook(void *ctx, bool done)
{
    (void)ctx;
    int k = atomic_load(&n_win);
    if (k >= MAX_COMPILES) return;
    if (!done) {
        for (int ms = 0; ms < 60000 && atomic_load(&gate); ms++) usleep(1000);
        if (atomic_load(&gate)) atomic_store(&hook_gave_up, true);
        win_start[k] = atomic_load(&pubs);
        if (!atomic_load(&hold)) return;
        /* Bounded: a worker that cannot match while this compile runs never
         * gets there, and the test fails on hook_gave_up. */
        for (int ms = 0; ms < 60000 && atomic_load(&pubs) < win_start[k] + DURING && !atomic_load(&worker_done); ms++)
            usleep(1000);
        if (atomic_load(&pubs) < win_start[k] + DURING && !atomic_load(&worker_done)) atomic_store(&hook_gave_up, true);
    } else {
        for (int ms = 0; ms < 60000 && atomic_load(&hold_publish) && !atomic_load(&about_to_publish); ms++) usleep(1000);
        win_end[k] = atomic_load(&pubs);
        atomic_store(&n_win, k + 1);
    }
}

/* The compile side of reload_ctl.c's loop. (Not its housekeeping: that
 * waits for grace periods under the writer lock, which a test thread that
 * reads counters while it is a reader would never let pass; the real
 * workers take that lock paused. test_content_concurrent runs it.) */
static void *ctl_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&ctl_stop)) {
        int rc = wm_match_table_compile(T);
        if (rc != 1) wm_match_table_wait_work(T, 5);
    }
    return NULL;
}

/* no_compiler: no compile thread: pending filters stay pending until a reload. */
static bool no_compiler;

static void setup_with(bool compiler)
{
    wm_load_error err;
    no_compiler = !compiler;
    strcpy(dir, "/tmp/wm_cc_XXXXXX");
    const char *why = wm_test_senml_fixture(dir, reg, sizeof reg, pack, pack_len);
    CHECK(!why, "%s", why);
    T = wm_match_table_new(NULL, NULL, reg, 65536, &err);
    CHECK(T, "%s", err.reason);
    atomic_store(&ctl_stop, false);
    atomic_store(&hold, false);
    atomic_store(&pubs, 0);
    atomic_store(&worker_done, false);
    atomic_store(&n_win, 0);
    atomic_store(&hook_gave_up, false);
    atomic_store(&hold_publish, false);
    atomic_store(&about_to_publish, false);
    atomic_store(&gate, false);
    atomic_store(&arm_lookup, false);
    wm_match_table_set_compile_hook(T, hook, NULL);
    if (compiler) CHECK(pthread_create(&ctl, NULL, ctl_main, NULL) == 0, "compile thread");
}

static void setup(void) { setup_with(true); }

static void teardown(void)
{
    atomic_store(&ctl_stop, true);
    if (!no_compiler) pthread_join(ctl, NULL);
    wm_match_table_free(T);
    unlink(reg);
    rmdir(dir);
}

static struct wm_match_counters counters(void)
{
    struct wm_match_counters c;
    wm_match_table_counters(T, &c);
    return c;
}

static enum wm_mqtt_sub_status subscribe(struct wm_mqtt_sink *sk, const char *client, const char *filter, const char *xp)
{
    struct wm_mqtt_subscribe s = { client, (uint32_t)strlen(client), bytes(filter), 0, { 0 }, xp ? bytes(xp) : (wm_mqtt5_bytes){ 0 },
                                   1, false, 0 };
    return sk->subscribe(sk->ctx, &s);
}

static void unsubscribe(struct wm_mqtt_sink *sk, const char *client, const char *filter)
{
    struct wm_mqtt_subscribe s = { client, (uint32_t)strlen(client), bytes(filter), 0, { 0 }, { 0 }, 0, false, 0 };
    sk->unsubscribe(sk->ctx, &s);
}

/* Pack d published on topic; counted in pubs. */
static enum wm_mqtt_pub_outcome publish(struct wm_mqtt_sink *sk, const char *topic, int d)
{
    static uint64_t seq;
    enum wm_mqtt_pub_outcome o = (enum wm_mqtt_pub_outcome)wm_test_publish_exi(
        sk, ++seq, topic, "application/exi; schema=senml", pack[d], pack_len[d]);
    atomic_fetch_add(&pubs, 1);
    return o;
}

/* Burst filter i: pack 0 (a Cel record with v = 21.5) passes iff K < 21.5;
 * the name test keeps every text distinct. */
static int burst_k(int i) { return i % 61 - 30; }
static void burst_text(int i, char *xp, size_t cap)
{
    snprintf(xp, cap, "//s:senml[@u = 'Cel' and @v > %d and @n != 'b%d']", burst_k(i), i);
}

/* Until no learned filter is pending, the worker keeps matching (its
 * burst ends are its quiescent states). Bounded. */
static void settle(struct wm_match_worker *w, struct wm_mqtt_sink *sk)
{
    for (int k = 0; k < 600000 && counters().xpath_pending; k++) {
        publish(sk, "none", 0);
        wm_match_worker_quiescent(w, 0);
        if (k % 64 == 63) usleep(100);
    }
    CHECK(counters().xpath_pending == 0, "filters still pending");
}

static void worker_matches_during_compile(void)
{
    setup();
    char err[256], xp[128], topic[32];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    CHECK(subscribe(&sk, "r", "t/r", "//s:senml[@u = 'Cel']") == WM_MQTT_SUB_INSTALLED, "ready subscription");
    settle(w, &sk);
    uint64_t before = counters().xpath_compiles;
    atomic_store(&hold, true);
    int first = atomic_load(&n_win);
    for (int i = 0; i < BURST; i++) {
        burst_text(i, xp, sizeof xp);
        snprintf(topic, sizeof topic, "t/b/%d", i);
        CHECK(subscribe(&sk, "b", topic, xp) == WM_MQTT_SUB_INSTALLED, "burst subscription %d", i);
    }
    /* while the burst compiles: the compiled filter answers by its text,
     * the pending ones reach nobody */
    unsigned long during = 0, pending_seen = 0;
    for (int k = 0; counters().xpath_pending; k++) {
        CHECK(publish(&sk, "t/r", 0) == WM_MQTT_PUB_MATCHED, "compiled filter, pack 0, during the compile");
        CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH, "compiled filter, pack 1, during the compile");
        snprintf(topic, sizeof topic, "t/b/%d", k % BURST);
        enum wm_mqtt_pub_outcome o = publish(&sk, topic, 0);
        /* pending: nothing; compiled meanwhile: its own answer */
        CHECK(o == WM_MQTT_PUB_NO_MATCH || (o == WM_MQTT_PUB_MATCHED && burst_k(k % BURST) < 21.5),
              "burst filter %d during the compile: %s", k % BURST, wm_mqtt_pub_outcome_name(o));
        during += 3;
        wm_match_worker_quiescent(w, 0);
        CHECK(k < 10000000, "the burst never compiled");
    }
    atomic_store(&worker_done, true);
    atomic_store(&hold, false);
    wm_match_worker_quiescent(w, 0);
    struct wm_match_counters c = counters();
    int wins = atomic_load(&n_win) - first;
    CHECK(!atomic_load(&hook_gave_up), "a compile waited 60 s for the worker to match %d publications", DURING);
    CHECK(wins >= 1 && c.xpath_compiles - before == (uint64_t)wins, "%d compile windows, %llu compiles", wins,
          (unsigned long long)(c.xpath_compiles - before));
    CHECK(c.xpath_compiles - before <= 2, "%d SUBSCRIBEs took %llu compiles, not coalesced", BURST,
          (unsigned long long)(c.xpath_compiles - before));
    for (int k = first; k < first + wins; k++)
        CHECK(win_end[k] - win_start[k] >= DURING, "compile %d: the worker matched %lu publications while it ran",
              k - first, win_end[k] - win_start[k]);
    /* after: every burst filter answers by its own text */
    for (int i = 0; i < BURST; i++) {
        snprintf(topic, sizeof topic, "t/b/%d", i);
        enum wm_mqtt_pub_outcome o = publish(&sk, topic, 0);
        CHECK(o == (burst_k(i) < 21.5 ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH), "burst filter %d after: %s", i,
              wm_mqtt_pub_outcome_name(o));
        CHECK(publish(&sk, topic, 1) == WM_MQTT_PUB_NO_MATCH, "burst filter %d, pack 1", i);
    }
    wm_match_worker_free(w);
    c = counters();
    pending_seen = c.content_pending;
    CHECK(c.content_pending > 0 && c.xpath_filters == BURST + 1 && c.subs_xpath == BURST + 1 && c.subs_xpath_refused == 0,
          "pending %llu, filters %llu, subs_xpath %llu, refused %llu", (unsigned long long)c.content_pending,
          (unsigned long long)c.xpath_filters, (unsigned long long)c.subs_xpath, (unsigned long long)c.subs_xpath_refused);
    LOG_INFO("during_compile: %d SUBSCRIBEs, %d compiles (longest %llu us), %lu publications matched while pending, "
             "%llu pending candidates skipped", BURST, wins, (unsigned long long)c.xpath_compile_us_max, during,
             (unsigned long long)pending_seen);
    teardown();
}

static void wait_mode_sees_its_subscribe(void)
{
    setup();
    char err[256];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    wm_match_worker_set_content_wait(w, true);
    atomic_store(&hold_publish, true);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    for (int i = 0; i < 20; i++) {
        char xp[128], topic[32];
        burst_text(i, xp, sizeof xp);
        snprintf(topic, sizeof topic, "t/w/%d", i);
        CHECK(subscribe(&sk, "w", topic, xp) == WM_MQTT_SUB_INSTALLED, "subscription %d", i);
        atomic_store(&about_to_publish, true);
        enum wm_mqtt_pub_outcome o = publish(&sk, topic, 0);
        atomic_store(&about_to_publish, false);
        CHECK(o == (burst_k(i) < 21.5 ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH), "filter %d right after: %s", i,
              wm_mqtt_pub_outcome_name(o));
        CHECK(publish(&sk, topic, 1) == WM_MQTT_PUB_NO_MATCH, "filter %d, pack 1", i);
        /* a second subscriber of the same, compiled text does not wait */
        CHECK(subscribe(&sk, "w2", topic, xp) == WM_MQTT_SUB_INSTALLED, "second subscription %d", i);
        CHECK(publish(&sk, topic, 0) == o, "filter %d, two subscribers", i);
        wm_match_worker_quiescent(w, 0);
    }
    wm_match_worker_free(w);
    struct wm_match_counters c = counters();
    /* each compile was held until the worker was about to publish, so it
     * found the filter pending (unless the compile won the last few
     * microseconds of the race, which it cannot do 20 times) */
    CHECK(c.content_waits >= 1 && c.content_waits <= 20 && c.content_pending == 0, "waits %llu (1..20), pending %llu",
          (unsigned long long)c.content_waits, (unsigned long long)c.content_pending);
    LOG_INFO("wait mode: 20 SUBSCRIBE + PUBLISH pairs, %llu PUBLISHes waited for their compile",
             (unsigned long long)c.content_waits);
    teardown();
}

static void refused_after_compile(void)
{
    setup();
    char err[256], why[400];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    /* unbound prefix: compiles for no schema */
    CHECK(subscribe(&sk, "bad", "t/x", "//q:senml") == WM_MQTT_SUB_INSTALLED, "installed pending");
    CHECK(subscribe(&sk, "all", "t/x", NULL) == WM_MQTT_SUB_INSTALLED, "plain subscription");
    settle(w, &sk);
    wm_match_table_last_xpath_error(T, why, sizeof why);
    struct wm_match_counters c = counters();
    CHECK(c.subs_xpath_refused == 1 && c.subs_xpath == 0 && c.subs_live == 1, "refused %llu, subs_xpath %llu, live %llu",
          (unsigned long long)c.subs_xpath_refused, (unsigned long long)c.subs_xpath, (unsigned long long)c.subs_live);
    CHECK(strstr(why, "bad: schema senml") != NULL, "%s", why);
    /* the refused text went with its last subscription: a new one is
     * compiled (and refused) again, and matches nothing meanwhile */
    CHECK(subscribe(&sk, "bad2", "t/x", "//q:senml") == WM_MQTT_SUB_INSTALLED, "installed pending again");
    CHECK(publish(&sk, "t/x", 0) == WM_MQTT_PUB_MATCHED, "the plain subscriber");
    settle(w, &sk);
    c = counters();
    CHECK(c.subs_xpath_refused == 2 && c.subs_live == 1, "refused %llu, live %llu",
          (unsigned long long)c.subs_xpath_refused, (unsigned long long)c.subs_live);
    wm_match_worker_free(w);
    teardown();
}

/* The worker's lookup hook: once armed, lets the held compile go and waits
 * (bounded) until it has settled its pending filters. */
static void lookup_hook(void *ctx)
{
    (void)ctx;
    if (!atomic_exchange(&arm_lookup, false)) return;
    atomic_store(&gate, false);
    for (int ms = 0; ms < 60000 && counters().xpath_pending; ms++) usleep(1000);
}

/* A worker in wait or async mode whose lookups pass lookup_hook. */
static struct wm_match_worker *hooked_worker(bool wait)
{
    char err[256];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    wm_match_worker_set_content_wait(w, wait);
    wm_match_worker_set_lookup_hook(w, lookup_hook, NULL);
    return w;
}

static void refused_between_lookup_and_check(void)
{
    for (int wait = 0; wait <= 1; wait++) {
        setup();
        struct wm_match_worker *w = hooked_worker(wait);
        struct wm_mqtt_sink sk = wm_match_worker_sink(w);
        CHECK(subscribe(&sk, "good", "t/r", "//s:senml[@u = 'Cel']") == WM_MQTT_SUB_INSTALLED, "compiled filter");
        settle(w, &sk);
        atomic_store(&gate, true);
        /* unbound prefix: compiles for no schema; pending until the held compile */
        CHECK(subscribe(&sk, "bad", "t/r", "//q:senml") == WM_MQTT_SUB_INSTALLED, "installed pending");
        CHECK(counters().xpath_pending == 1, "pending before the PUBLISH");
        atomic_store(&arm_lookup, true);
        /* pack 0 is a Cel record: the compiled filter passes it */
        enum wm_mqtt_pub_outcome o = publish(&sk, "t/r", 0);
        CHECK(!atomic_load(&arm_lookup) && !atomic_load(&hook_gave_up) && counters().xpath_pending == 0,
              "the compile did not settle between the lookup and the content stage");
        CHECK(o == WM_MQTT_PUB_MATCHED, "%s: %s", wait ? "wait" : "async", wm_mqtt_pub_outcome_name(o));
        wm_match_worker_free(w); /* sums the worker's content counters into the table's */
        struct wm_match_counters c = counters();
        CHECK(c.subs_xpath_refused == 1 && c.subs_live == 1, "refused %llu, live %llu",
              (unsigned long long)c.subs_xpath_refused, (unsigned long long)c.subs_live);
        CHECK(c.content_candidates == 1 && c.content_passed == 1 && c.content_pubs == 1,
              "%s: candidates %llu (want 1: the refused subscription is no candidate), passed %llu, content_pubs %llu",
              wait ? "wait" : "async", (unsigned long long)c.content_candidates, (unsigned long long)c.content_passed,
              (unsigned long long)c.content_pubs);
        CHECK(wait ? c.content_waits == 1 && c.content_pending == 0 : c.content_waits == 0 && c.content_pending == 1,
              "%s: waits %llu, pending %llu", wait ? "wait" : "async", (unsigned long long)c.content_waits,
              (unsigned long long)c.content_pending);
        teardown();
    }
}

static void no_room_refused_at_once(void)
{
    setup();
    char err[256], why[400], wa[64] = "//s:senml", wb[64] = "//s:bn";
    for (int i = 0; i < 10; i++) {   /* each valid alone, not both: WM_XPF_MAX_STATES */
        strcat(wa, "/*");
        strcat(wb, "/*");
    }
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    CHECK(subscribe(&sk, "a", "t/a", wa) == WM_MQTT_SUB_INSTALLED, "A");
    settle(w, &sk);
    CHECK(subscribe(&sk, "b", "t/b", wb) == WM_MQTT_SUB_INSTALLED, "B installed pending");
    settle(w, &sk);
    struct wm_match_counters c = counters();
    wm_match_table_last_xpath_error(T, why, sizeof why);
    CHECK(c.subs_xpath_refused == 1 && c.subs_xpath == 1, "refused %llu, subs_xpath %llu",
          (unsigned long long)c.subs_xpath_refused, (unsigned long long)c.subs_xpath);
    CHECK(strstr(why, "b: it compiles alone") && strstr(why, "WM_XPF_MAX_STATES"), "%s", why);
    uint64_t builds = c.xpath_set_builds, compiles = c.xpath_compiles;
    CHECK(builds >= 2, "set builds %llu", (unsigned long long)builds);
    for (int k = 0; k < 3; k++) {
        CHECK(subscribe(&sk, "b2", "t/b", wb) == WM_MQTT_SUB_XPATH_INVALID, "B's text again, refused at once (%d)", k);
        wm_match_table_last_xpath_error(T, why, sizeof why);
        CHECK(strstr(why, "b2: it compiles alone"), "%s", why);
    }
    for (int k = 0; k < 50; k++) {   /* give a (wrong) compile time to happen */
        publish(&sk, "none", 0);
        wm_match_worker_quiescent(w, 0);
        usleep(1000);
    }
    c = counters();
    CHECK(c.xpath_room_cached == 3 && c.xpath_set_builds == builds && c.xpath_compiles == compiles,
          "cached %llu, set builds %llu -> %llu, compiles %llu -> %llu", (unsigned long long)c.xpath_room_cached,
          (unsigned long long)builds, (unsigned long long)c.xpath_set_builds, (unsigned long long)compiles,
          (unsigned long long)c.xpath_compiles);
    /* A goes: B's text is tried again, and fits */
    unsubscribe(&sk, "a", "t/a");
    CHECK(subscribe(&sk, "b3", "t/b", wb) == WM_MQTT_SUB_INSTALLED, "B's text once A has gone");
    settle(w, &sk);
    c = counters();
    CHECK(c.subs_live == 1 && c.subs_xpath == 2 && c.subs_xpath_refused == 4, "live %llu, subs_xpath %llu, refused %llu",
          (unsigned long long)c.subs_live, (unsigned long long)c.subs_xpath, (unsigned long long)c.subs_xpath_refused);
    wm_match_worker_free(w);
    teardown();
}

static atomic_bool reload_done;
static int reload_rc;
static wm_load_error reload_err;

static void *reload_main(void *arg)
{
    (void)arg;
    reload_rc = wm_match_table_reload(T, &reload_err);
    atomic_store(&reload_done, true);
    return NULL;
}

static void unsubscribe_and_reload_while_pending(void)
{
    setup();
    char err[512];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    atomic_store(&hold, true); /* the compile waits for the worker: the changes below happen while it is pending */
    for (int i = 0; i < 200; i++) {
        char xp[128], topic[32];
        burst_text(i, xp, sizeof xp);
        snprintf(topic, sizeof topic, "t/u/%d", i);
        CHECK(subscribe(&sk, "u", topic, xp) == WM_MQTT_SUB_INSTALLED, "subscription %d", i);
        if (i % 2) unsubscribe(&sk, "u", topic);
        publish(&sk, topic, 0);
        wm_match_worker_quiescent(w, 0);
    }
    /* a reload validates (and carries) the pending ones itself; it waits
     * for a grace period, so it runs on its own thread while the worker
     * goes on passing quiescent states */
    atomic_store(&hold, false);
    atomic_store(&worker_done, true);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, reload_main, NULL) == 0, "reload thread");
    for (int k = 0; !atomic_load(&reload_done); k++) {
        publish(&sk, "none", 0);
        wm_match_worker_quiescent(w, 0);
        if (k % 64 == 63) usleep(100);
    }
    pthread_join(th, NULL);
    CHECK(reload_rc == 0, "reload: %s", reload_err.reason);
    settle(w, &sk);
    for (int i = 0; i < 200; i++) {
        char topic[32];
        snprintf(topic, sizeof topic, "t/u/%d", i);
        enum wm_mqtt_pub_outcome o = publish(&sk, topic, 0);
        CHECK(o == (i % 2 == 0 && burst_k(i) < 21.5 ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH), "filter %d: %s", i,
              wm_mqtt_pub_outcome_name(o));
    }
    struct wm_match_counters c = counters();
    CHECK(c.subs_live == 100 && c.xpath_filters == 100, "live %llu, filters %llu", (unsigned long long)c.subs_live,
          (unsigned long long)c.xpath_filters);
    wm_match_worker_free(w);
    teardown();
}

/* The reload of reload_while_pending: started on its own thread (it waits
 * for a grace period the worker holds until its next quiescent state);
 * returns once the new set is published (bounded). */
static pthread_t reload_th;
static uint64_t reload_gen;

static void reload_start(void)
{
    atomic_store(&reload_done, false);
    reload_gen = counters().generation;
    CHECK(pthread_create(&reload_th, NULL, reload_main, NULL) == 0, "reload thread");
    for (int ms = 0; ms < 60000 && counters().generation == reload_gen && !atomic_load(&reload_done); ms++)
        usleep(1000);
}

/* The worker's lookup hook of reload_while_pending: once armed, the reload
 * lands between the lookup (on the old set) and the content stage. */
static void reload_lookup_hook(void *ctx)
{
    (void)ctx;
    if (atomic_exchange(&arm_lookup, false)) reload_start();
}

/* A reload lands while a learned filter is pending (no compile thread: it
 * is still pending when the reload validates and carries it) and the
 * worker is still on the old set, where that filter was never compiled:
 *   between = true: between the PUBLISH's lookup and its content stage
 *     (held there by the worker's lookup hook);
 *   between = false: after the worker's last quiescent state and before
 *     the PUBLISH (a reload within a burst).
 * Async: the old set cannot decide the filter, so the candidate stays
 * pending there (content_pending; never "no_filter_for_schema", a decision
 * by a set that never had the filter); the worker's next burst, on the new
 * set, matches it by its text. Wait mode: the PUBLISH is matched against
 * the new set, where the filter is compiled: delivered. Before, the reload
 * cleared the subscription's one pending flag, shared by both sets: the
 * old set's worker decided it there (no_filter_for_schema) and in wait
 * mode the delivery was lost. */
static void reload_while_pending(bool between, bool wait)
{
    const char *mode = wait ? "wait" : "async";
    setup_with(false);
    char err[256];
    struct wm_match_worker *w = wm_match_worker_new(T, NULL, err, sizeof err);
    CHECK(w, "%s", err);
    wm_match_worker_set_content_wait(w, wait);
    if (between) wm_match_worker_set_lookup_hook(w, reload_lookup_hook, NULL);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    CHECK(subscribe(&sk, "p", "t/r", "//s:senml[@u = 'Cel']") == WM_MQTT_SUB_INSTALLED, "installed pending");
    CHECK(counters().xpath_pending == 1, "pending before the reload");
    if (between) atomic_store(&arm_lookup, true);
    else reload_start();
    /* pack 0 is a Cel record: the filter passes it */
    enum wm_mqtt_pub_outcome o = publish(&sk, "t/r", 0);
    CHECK(!atomic_load(&arm_lookup) && counters().generation == reload_gen + 1 && counters().xpath_pending == 0,
          "%s: the reload did not publish before the content stage", mode);
    CHECK(o == (wait ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH), "%s: %s", mode, wm_mqtt_pub_outcome_name(o));
    for (int k = 0; !atomic_load(&reload_done); k++) {
        wm_match_worker_quiescent(w, 0);
        if (k % 64 == 63) usleep(100);
    }
    pthread_join(reload_th, NULL);
    CHECK(reload_rc == 0, "reload: %s", reload_err.reason);
    /* the next burst, on the new set: the filter by its text */
    CHECK(publish(&sk, "t/r", 0) == WM_MQTT_PUB_MATCHED, "%s: after the reload, pack 0", mode);
    CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH, "%s: after the reload, pack 1", mode);
    wm_match_worker_free(w); /* sums the worker's content counters into the table's */
    struct wm_match_counters c = counters();
    unsigned long long pend = c.content_pending, cand = c.content_candidates, pass = c.content_passed,
                       nf = c.content_no_filter_for_schema, waits = c.content_waits;
    CHECK(nf == 0 && cand == 2u + wait && pass == 1u + wait && pend == (wait ? 0u : 1u),
          "%s: no_filter_for_schema %llu (want 0), candidates %llu, passed %llu, pending %llu", mode, nf, cand,
          pass, pend);
    /* between: the reload's round came after the PUBLISH read the round
     * count, so it waits once (and at once); before the PUBLISH: it
     * follows the new set without a wait */
    CHECK(waits == (wait && between ? 1u : 0u), "%s: waits %llu", mode, waits);
    teardown();
}

/* resubscribe_{async,wait} (header comment). Pack 0 holds a Cel record,
 * pack 1 only a V one. */
static void resubscribe_waits_for_its_compile(bool wait)
{
    const char *mode = wait ? "wait" : "async";
    setup();
    struct wm_match_worker *w = hooked_worker(wait);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    CHECK(subscribe(&sk, "c", "t/r", "//s:senml[@u = 'Cel']") == WM_MQTT_SUB_INSTALLED, "first subscription");
    settle(w, &sk);
    CHECK(publish(&sk, "t/r", 0) == WM_MQTT_PUB_MATCHED && publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH,
          "%s: the first filter", mode);

    /* refused by its compile (unbound prefix), held until the PUBLISH */
    atomic_store(&gate, true);
    CHECK(subscribe(&sk, "c", "t/r", "//q:senml") == WM_MQTT_SUB_INSTALLED, "re-SUBSCRIBE pending");
    struct wm_match_counters c = counters();
    CHECK(c.subs_replace_pending == 1 && c.xpath_pending == 1 && c.subs_live == 1,
          "%s: waiting behind: replace_pending %llu, pending %llu, live %llu", mode,
          (unsigned long long)c.subs_replace_pending, (unsigned long long)c.xpath_pending,
          (unsigned long long)c.subs_live);
    if (wait) atomic_store(&arm_lookup, true); /* the compile settles between this lookup and its content stage */
    enum wm_mqtt_pub_outcome o = publish(&sk, "t/r", 0);
    CHECK(o == WM_MQTT_PUB_MATCHED, "%s: while the re-SUBSCRIBE's filter compiles, the old one decides: %s", mode,
          wm_mqtt_pub_outcome_name(o));
    if (!wait) CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH, "async: the old filter still refuses pack 1");
    atomic_store(&gate, false);
    settle(w, &sk);
    c = counters();
    CHECK(c.subs_refused_kept == 1 && c.subs_xpath_refused == 1 && c.subs_live == 1 && c.subs_replace_pending == 0 &&
              c.subs_replaced == 0,
          "%s: refused: kept %llu, refused %llu, live %llu, replace_pending %llu, replaced %llu", mode,
          (unsigned long long)c.subs_refused_kept, (unsigned long long)c.subs_xpath_refused,
          (unsigned long long)c.subs_live, (unsigned long long)c.subs_replace_pending,
          (unsigned long long)c.subs_replaced);
    o = publish(&sk, "t/r", 0);
    CHECK(o == WM_MQTT_PUB_MATCHED, "%s: after the refusal the old subscription is in force: %s", mode,
          wm_mqtt_pub_outcome_name(o));
    CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH, "%s: with its own filter", mode);

    /* accepted: replaces the old one at its compile, not before */
    atomic_store(&gate, true);
    CHECK(subscribe(&sk, "c", "t/r", "//s:senml[@u = 'V']") == WM_MQTT_SUB_INSTALLED, "second re-SUBSCRIBE");
    if (!wait) {
        CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_NO_MATCH, "async: the old filter decides until the compile");
    } else {
        atomic_store(&arm_lookup, true);
        CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_MATCHED, "wait: matched as if compiled at the SUBSCRIBE");
    }
    atomic_store(&gate, false);
    settle(w, &sk);
    c = counters();
    CHECK(c.subs_replaced == 1 && c.subs_live == 1 && c.subs_replace_pending == 0, "%s: replaced %llu, live %llu",
          mode, (unsigned long long)c.subs_replaced, (unsigned long long)c.subs_live);
    CHECK(publish(&sk, "t/r", 1) == WM_MQTT_PUB_MATCHED && publish(&sk, "t/r", 0) == WM_MQTT_PUB_MATCHED,
          "%s: the new filter decides", mode);

    /* an UNSUBSCRIBE takes the subscription and the re-SUBSCRIBE behind it */
    atomic_store(&gate, true);
    CHECK(subscribe(&sk, "c", "t/r", "//s:senml[@n = 'other']") == WM_MQTT_SUB_INSTALLED, "third re-SUBSCRIBE");
    unsubscribe(&sk, "c", "t/r");
    c = counters();
    CHECK(c.subs_live == 0 && c.subs_replace_pending == 0 && c.xpath_pending == 0, "%s: unsubscribed: live %llu",
          mode, (unsigned long long)c.subs_live);
    atomic_store(&gate, false);
    CHECK(publish(&sk, "t/r", 0) == WM_MQTT_PUB_NO_MATCH, "%s: nothing left", mode);
    wm_match_worker_free(w);
    teardown();
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    worker_matches_during_compile();
    wait_mode_sees_its_subscribe();
    refused_after_compile();
    unsubscribe_and_reload_while_pending();
    refused_between_lookup_and_check();
    no_room_refused_at_once();
    resubscribe_waits_for_its_compile(false);
    resubscribe_waits_for_its_compile(true);
    for (int wait = 0; wait <= 1; wait++) {
        reload_while_pending(true, wait);
        reload_while_pending(false, wait);
    }
    fprintf(stderr, "[====] Synthesis: Tested: 12 | Passing: 12 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(content_compile_concurrent, worker_matches_during_compile, .timeout = 600) { worker_matches_during_compile(); }
Test(content_compile_concurrent, wait_mode_sees_its_subscribe, .timeout = 600) { wait_mode_sees_its_subscribe(); }
Test(content_compile_concurrent, refused_after_compile, .timeout = 600) { refused_after_compile(); }
Test(content_compile_concurrent, unsubscribe_and_reload_while_pending, .timeout = 600) { unsubscribe_and_reload_while_pending(); }
Test(content_compile_concurrent, refused_between_lookup_and_check, .timeout = 600) { refused_between_lookup_and_check(); }
Test(content_compile_concurrent, no_room_refused_at_once, .timeout = 600) { no_room_refused_at_once(); }
Test(content_compile_concurrent, resubscribe_async, .timeout = 600) { resubscribe_waits_for_its_compile(false); }
Test(content_compile_concurrent, resubscribe_wait, .timeout = 600) { resubscribe_waits_for_its_compile(true); }
Test(content_compile_concurrent, reload_between_lookup_and_check_async, .timeout = 600) { reload_while_pending(true, false); }
Test(content_compile_concurrent, reload_between_lookup_and_check_wait, .timeout = 600) { reload_while_pending(true, true); }
Test(content_compile_concurrent, reload_within_a_burst_async, .timeout = 600) { reload_while_pending(false, false); }
Test(content_compile_concurrent, reload_within_a_burst_wait, .timeout = 600) { reload_while_pending(false, true); }
#endif
