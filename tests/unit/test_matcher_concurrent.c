/* One writer churning subscriptions (and the neighborhoods they own) while
 * reader threads look up, checking every result for torn or stale state.
 * Run under ThreadSanitizer by CI (`make test TSAN=1 TEST_FILTER=concurrent`).
 *
 * What a reader can check without stopping the writer:
 *   - soundness: every returned subscription really matches the publication
 *     according to its descriptor (topic by wm_topic_match, neighborhood by
 *     set membership, No Local) — a half-built or recycled subscription
 *     would break this — and was not removed before the lookup started;
 *   - completeness: every subscription that was live during the whole
 *     lookup (its slot held the same cookie before and after) and matches
 *     is returned;
 *   - no subscription is returned twice.
 * Ordering facts used: the writer fills a descriptor, then adds the
 * subscription, then publishes its cookie in a slot; on removal it clears
 * the slot, removes, then stamps the descriptor's removal sequence number.
 *
 * Under ThreadSanitizer Criterion's runner itself cannot start: its
 * sandbox maps a shared arena at random addresses that TSan reserves
 * ("Could not initialize inheritable arena", Snaipe/Criterion#274, then a
 * SEGV inside libcriterion). So in the TSan build this file brings its own
 * main(), runs the same test body without the sandbox and prints the
 * Synthesis line scripts/run-tests.sh reads; any TSan report makes the
 * process exit non-zero (TSan's exitcode), which fails the run.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "matcher/matcher.h"
#include "tests/lib/matcher_workload.h"
#include "tests/lib/concurrent_check.h"

#define NSLOTS 48
#define NTEMPL 6          /* neighborhood templates */
#define TEMPL_PEIDS 40
#define NPEIDS 64
#define NREADERS 2
#define MAXDESC (1 << 16)


static const char *const filters[] = {
    "t/a", "t/+", "t/#", "#", "+/a", "t/b", "$share/g/t/a", "$share/g/t/+", "$share/h/#", "u/+/x",
};
static const char *const topics[] = { "t/a", "t/b", "u/v/x", "t", "$SYS/a" };
#define NFILTERS (sizeof filters / sizeof filters[0])
#define NTOPICS (sizeof topics / sizeof topics[0])

typedef struct desc {
    uint32_t filter;      /* index into filters */
    int templ;            /* neighborhood template or -1 */
    uint32_t client;      /* c0..c3 */
    bool no_local;
    uint64_t removed_seq; /* atomic; 0 = not removed */
} desc;

static struct {
    wm_matcher *m;
    uint32_t templ[NTEMPL][TEMPL_PEIDS];
    desc d[MAXDESC];
    uint32_t slot[NSLOTS];      /* atomic: cookie of the live sub in the slot, 0 = none */
    uint32_t slot_sub[NSLOTS];  /* writer only */
    uint64_t seq;               /* atomic: completed writer operations */
    int stop;                   /* atomic */
    long lookups[NREADERS], returned[NREADERS];
} G;

static bool desc_matches(const desc *d, const char *topic, const uint32_t *peids, uint32_t np, uint32_t client)
{
    const char *f = filters[d->filter];
    wm_topic_share sh;
    size_t flen = strlen(f);
    if (wm_topic_share_split(f, flen, &sh)) { f = sh.filter; flen = sh.filter_len; }
    if (!wm_topic_match(f, flen, topic, strlen(topic))) return false;
    if (d->no_local && client == d->client) return false;
    if (d->templ < 0) return true;
    for (uint32_t j = 0; j < np; j++)
        for (int k = 0; k < TEMPL_PEIDS; k++)
            if (G.templ[d->templ][k] == peids[j]) return true;
    return false;
}

static void *reader_main(void *arg)
{
    int me = (int)(intptr_t)arg;
    wl_rng rng = { 1000 + (uint64_t)me };
    wm_matcher_reader *r = wm_matcher_reader_new(G.m);
    CHECK(r != NULL, "reader");
    static __thread uint32_t subs[4096], members[4096], seen[MAXDESC];
    static __thread wm_match_group groups[256];
    uint32_t before[NSLOTS];
    uint32_t stamp = 0;
    char pbuf[3][16];
    while (!__atomic_load_n(&G.stop, __ATOMIC_ACQUIRE)) {
        const char *topic = topics[wl_below(&rng, NTOPICS)];
        uint32_t np = wl_below(&rng, 3), peids[3];
        wm_match_str pstr[3];
        for (uint32_t j = 0; j < np; j++) {
            peids[j] = wl_below(&rng, NPEIDS);
            snprintf(pbuf[j], sizeof pbuf[j], "p%u", peids[j]);
            pstr[j] = (wm_match_str){ pbuf[j], strlen(pbuf[j]) };
        }
        uint32_t client = wl_below(&rng, 5);
        char cl[8];
        snprintf(cl, sizeof cl, "c%u", client);

        uint64_t seq0 = __atomic_load_n(&G.seq, __ATOMIC_ACQUIRE);
        for (int i = 0; i < NSLOTS; i++) before[i] = __atomic_load_n(&G.slot[i], __ATOMIC_ACQUIRE);
        wm_match_result res = { subs, 4096, members, 4096, groups, 256, 0, 0, 0 };
        wm_matcher_status st = wm_matcher_lookup_str(r, topic, strlen(topic), pstr, np, cl, strlen(cl), &res);
        CHECK(st == WM_MATCHER_OK, "lookup: %s", wm_matcher_status_name(st));
        stamp++;
        uint32_t total = res.n_subs + res.n_members;
        for (uint32_t i = 0; i < total; i++) {
            uint32_t s = i < res.n_subs ? res.subs[i] : res.members[i - res.n_subs];
            uint32_t c = (uint32_t)wm_matcher_sub_cookie(G.m, s);
            CHECK(c > 0 && c < MAXDESC, "garbage cookie %u", c);
            const desc *d = &G.d[c];
            CHECK(desc_matches(d, topic, peids, np, client),
                  "reader %d: sub %u (%s, templ %d, client c%u, no_local %d, removed %llu, seq0 %llu) wrongly matched %s "
                  "(np %u: %u %u, client c%u)", me, c, filters[d->filter], d->templ, d->client, d->no_local,
                  (unsigned long long)__atomic_load_n(&d->removed_seq, __ATOMIC_ACQUIRE), (unsigned long long)seq0,
                  topic, np, np > 0 ? peids[0] : 999, np > 1 ? peids[1] : 999, client);
            uint64_t rm = __atomic_load_n(&d->removed_seq, __ATOMIC_ACQUIRE);
            CHECK(rm == 0 || rm > seq0, "reader %d: sub %u removed at %llu returned by a lookup started at %llu", me,
                      c, (unsigned long long)rm, (unsigned long long)seq0);
            CHECK(seen[c] != stamp, "reader %d: sub %u returned twice", me, c);
            seen[c] = stamp;
        }
        for (int i = 0; i < NSLOTS; i++) {
            uint32_t c = before[i];
            if (c == 0 || __atomic_load_n(&G.slot[i], __ATOMIC_ACQUIRE) != c) continue;
            if (desc_matches(&G.d[c], topic, peids, np, client))
                CHECK(seen[c] == stamp, "reader %d: live sub %u (%s, templ %d) missing for %s", me, c,
                             filters[G.d[c].filter], G.d[c].templ, topic);
        }
        G.lookups[me]++;
        G.returned[me] += total;
        wm_matcher_quiescent(r);
    }
    wm_matcher_reader_free(r);
    return NULL;
}

static void writer_add(wl_rng *rng, int i, uint32_t cookie)
{
    desc *d = &G.d[cookie];
    d->filter = wl_below(rng, NFILTERS);
    d->templ = wl_below(rng, 3) == 0 ? -1 : (int)wl_below(rng, NTEMPL);
    d->client = wl_below(rng, 4);
    d->no_local = !strstr(filters[d->filter], "$share") && wl_below(rng, 2);
    __atomic_store_n(&d->removed_seq, 0, __ATOMIC_RELEASE);
    char cl[8], name[32];
    snprintf(cl, sizeof cl, "c%u", d->client);
    uint32_t nb = WM_NBHD_NONE;
    if (d->templ >= 0) {
        /* A fresh neighborhood per subscription, released at once: the
         * subscription's removal then uninstalls it under the readers. */
        snprintf(name, sizeof name, "n%u", cookie);
        CHECK(wm_matcher_nbhd_define_ids(G.m, name, strlen(name), G.templ[d->templ], TEMPL_PEIDS, &nb) == WM_MATCHER_OK, "define %s", name);
    }
    wm_sub_spec spec = { .filter = filters[d->filter], .filter_len = strlen(filters[d->filter]), .client = cl,
                         .client_len = strlen(cl), .nbhd = nb, .no_local = d->no_local, .cookie = cookie };
    CHECK(wm_matcher_sub_add(G.m, &spec, &G.slot_sub[i], NULL) == WM_MATCHER_OK, "add");
    if (nb != WM_NBHD_NONE) CHECK(wm_matcher_nbhd_release(G.m, nb) == WM_MATCHER_OK, "release");
    __atomic_add_fetch(&G.seq, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&G.slot[i], cookie, __ATOMIC_RELEASE);
}

static void writer_remove(int i)
{
    uint32_t c = G.slot[i];
    __atomic_store_n(&G.slot[i], 0, __ATOMIC_RELEASE);
    CHECK(wm_matcher_sub_remove(G.m, G.slot_sub[i]) == WM_MATCHER_OK, "remove");
    uint64_t s = __atomic_add_fetch(&G.seq, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&G.d[c].removed_seq, s, __ATOMIC_RELEASE);
}

static void writer_churns_readers_check(void)
{
    wm_matcher_config cfg = { .max_subs = 1024, .max_nbhds = 1024, .max_peids = 256, .max_groups = 64 };
    G.m = wm_matcher_new(&cfg);
    CHECK(G.m != NULL, "matcher");
    wl_rng rng = { 7 };
    for (uint32_t p = 0; p < NPEIDS; p++) {
        char b[16];
        uint32_t id;
        snprintf(b, sizeof b, "p%u", p);
        CHECK(wm_matcher_peid_intern(G.m, b, strlen(b), &id) == WM_MATCHER_OK, "intern");
        CHECK(id == p, "peid ids are dense in interning order");
    }
    for (int t = 0; t < NTEMPL; t++)
        for (int k = 0; k < TEMPL_PEIDS; k++) G.templ[t][k] = wl_below(&rng, NPEIDS);
    uint32_t cookie = 1;
    for (int i = 0; i < NSLOTS / 2; i++) writer_add(&rng, i, cookie++);

    pthread_t th[NREADERS];
    for (int i = 0; i < NREADERS; i++) CHECK(pthread_create(&th[i], NULL, reader_main, (void *)(intptr_t)i) == 0, "thread");
    long ops = wl_scaled(60000, 20);
    for (long n = 0; n < ops; n++) {
        int i = (int)wl_below(&rng, NSLOTS);
        if (G.slot[i]) writer_remove(i);
        else if (cookie < MAXDESC) writer_add(&rng, i, cookie++);
        if (n % 256 == 0) wm_matcher_reclaim(G.m, true);
    }
    __atomic_store_n(&G.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < NREADERS; i++) pthread_join(th[i], NULL);
    wm_matcher_reclaim(G.m, true);
    long total = 0, ret = 0;
    for (int i = 0; i < NREADERS; i++) { total += G.lookups[i]; ret += G.returned[i]; }
    LOG_INFO("%ld writer ops, %ld concurrent lookups, %ld subscriptions returned", ops, total, ret);
    CHECK(total > 0, "readers ran");
    CHECK(ret > 0, "the workload must actually match something");
    for (int i = 0; i < NSLOTS; i++) if (G.slot[i]) writer_remove(i);
    wm_matcher_reclaim(G.m, true);
    wm_matcher_stats st;
    wm_matcher_stats_get(G.m, &st);
    CHECK(st.subs == 0, "subs left");
    CHECK(st.nbhds == 0, "every neighborhood uninstalled with its last subscription");
    CHECK(st.cells == 0, "cells left");
    CHECK(st.filters == 0, "filters left");
    CHECK(st.trie_nodes == 0, "trie nodes left");
    wm_matcher_free(G.m);
}

/* A table kept at its bounds by remove/add churn while readers look up,
 * the writer never reclaiming of its own: every add succeeds (the ids of
 * removed entries, still in their grace period, are waited for, never
 * refused below the bound: matcher.h "Bounds"; until 2026-12-02 the first
 * add after a removal was refused full_subs, and nomem for a table such as
 * the clients'), and a lookup of topic b/K returns only K's subscription.
 * Every subscription has its own filter, client and cell or share group,
 * so every interned table is at its bound too. */
#define BOUND 64

static struct {
    wm_matcher *m;
    uint32_t next;  /* atomic: topics b/0 .. b/next-1 have been used */
    int stop;       /* atomic */
    long lookups[NREADERS], returned[NREADERS];
} B;

static void *bound_reader(void *arg)
{
    int me = (int)(intptr_t)arg;
    wl_rng rng = { 77 + (uint64_t)me };
    wm_matcher_reader *r = wm_matcher_reader_new(B.m);
    CHECK(r != NULL, "reader");
    uint32_t subs[BOUND], members[BOUND];
    wm_match_group groups[BOUND];
    wm_match_str peid = { "q0", 2 };
    char t[32];
    while (!__atomic_load_n(&B.stop, __ATOMIC_ACQUIRE)) {
        uint32_t k = wl_below(&rng, __atomic_load_n(&B.next, __ATOMIC_ACQUIRE));
        snprintf(t, sizeof t, "b/%u", k);
        wm_match_result res = { subs, BOUND, members, BOUND, groups, BOUND, 0, 0, 0 };
        wm_matcher_status st = wm_matcher_lookup_str(r, t, strlen(t), &peid, 1, NULL, 0, &res);
        CHECK(st == WM_MATCHER_OK, "lookup %s: %s", t, wm_matcher_status_name(st));
        for (uint32_t i = 0; i < res.n_subs + res.n_members; i++) {
            uint32_t sub = i < res.n_subs ? res.subs[i] : res.members[i - res.n_subs];
            uint64_t c = wm_matcher_sub_cookie(B.m, sub);
            CHECK(c == k, "reader %d: the subscription of b/%llu returned for %s", me, (unsigned long long)c, t);
        }
        B.lookups[me]++;
        B.returned[me] += res.n_subs + res.n_members;
        wm_matcher_quiescent(r);
    }
    wm_matcher_reader_free(r);
    return NULL;
}

/* Subscribes b/k for client ck: every third shared ($share/gk/b/k), every
 * fourth with a neighborhood of its own (nk = {q0}, released at once so
 * that the removal uninstalls it). */
static uint32_t bound_add(uint32_t k)
{
    char f[40], cl[16], nm[16];
    if (k % 3 == 0) snprintf(f, sizeof f, "$share/g%u/b/%u", k, k);
    else snprintf(f, sizeof f, "b/%u", k);
    snprintf(cl, sizeof cl, "c%u", k);
    uint32_t nb = WM_NBHD_NONE, sub = WM_SUB_NONE;
    if (k % 4 == 0) {
        snprintf(nm, sizeof nm, "n%u", k);
        wm_match_str q = { "q0", 2 };
        wm_matcher_status st = wm_matcher_nbhd_define(B.m, nm, strlen(nm), &q, 1, &nb);
        CHECK(st == WM_MATCHER_OK, "define %s at the bound: %s", nm, wm_matcher_status_name(st));
    }
    wm_sub_spec spec = { .filter = f, .filter_len = strlen(f), .client = cl, .client_len = strlen(cl), .nbhd = nb,
                         .cookie = k };
    wm_matcher_status st = wm_matcher_sub_add(B.m, &spec, &sub, NULL);
    CHECK(st == WM_MATCHER_OK, "add %s at the bound: %s", f, wm_matcher_status_name(st));
    if (nb != WM_NBHD_NONE) CHECK(wm_matcher_nbhd_release(B.m, nb) == WM_MATCHER_OK, "release %s", nm);
    return sub;
}

static void churn_at_the_bound_never_refuses(void)
{
    wm_matcher_config cfg = { .max_subs = BOUND, .max_nbhds = BOUND / 4, .max_peids = 8, .max_groups = BOUND / 3 + 1 };
    B.m = wm_matcher_new(&cfg);
    CHECK(B.m != NULL, "matcher");
    uint32_t sub[BOUND];
    for (uint32_t k = 0; k < BOUND; k++) sub[k] = bound_add(k);
    __atomic_store_n(&B.next, BOUND, __ATOMIC_RELEASE);
    pthread_t th[NREADERS];
    for (int i = 0; i < NREADERS; i++) CHECK(pthread_create(&th[i], NULL, bound_reader, (void *)(intptr_t)i) == 0, "thread");
    wl_rng rng = { 11 };
    long ops = wl_scaled(20000, 10);
    for (long n = 0; n < ops; n++) {
        uint32_t i = wl_below(&rng, BOUND);
        CHECK(wm_matcher_sub_remove(B.m, sub[i]) == WM_MATCHER_OK, "remove");
        /* the same kind (share group, neighborhood) as the one removed, so
         * that each table stays at its bound */
        uint32_t k = __atomic_load_n(&B.next, __ATOMIC_ACQUIRE);
        k += (i % 12 + 12 - k % 12) % 12;
        sub[i] = bound_add(k);
        __atomic_store_n(&B.next, k + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&B.stop, 1, __ATOMIC_RELEASE);
    long total = 0, ret = 0;
    for (int i = 0; i < NREADERS; i++) {
        pthread_join(th[i], NULL);
        total += B.lookups[i];
        ret += B.returned[i];
    }
    wm_matcher_stats st;
    wm_matcher_stats_get(B.m, &st);
    LOG_INFO("at the bound: %ld remove+add, %llu grace-period waits, %ld lookups returning %ld", ops,
             (unsigned long long)st.grace_waits, total, ret);
    CHECK(st.subs == BOUND && st.clients == BOUND && st.filters == BOUND, "the tables at their bounds");
    CHECK(st.nbhds == BOUND / 4 && st.cells == BOUND / 4 && st.groups == BOUND / 3 + 1, "the tables at their bounds");
    CHECK(st.grace_waits > 0, "the adds had to wait for grace periods");
    CHECK(total > 0 && ret > 0, "readers ran and matched");
    wm_matcher_reclaim(B.m, true);
    wm_matcher_free(B.m);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    writer_churns_readers_check();
    churn_at_the_bound_never_refuses();
    fprintf(stderr, "[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(matcher_concurrent, writer_churns_readers_check, .timeout = 600) { writer_churns_readers_check(); }
Test(matcher_concurrent, churn_at_the_bound_never_refuses, .timeout = 600) { churn_at_the_bound_never_refuses(); }
#endif
