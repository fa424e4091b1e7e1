/* Matcher benchmarks on the spaPS evaluation workload (spaPS §VII-A/B):
 * 100 subscribers x 10 subscriptions = 1,000 subscriptions, each with its own
 * spatial filter of 2,000 peids drawn uniformly from 100,000 peids; topic
 * filters "spaps/t0".."spaps/t9" (subscription k of each subscriber on t_k);
 * publications on a uniform topic with one peid drawn from a Zipf(1.0)
 * distribution over a random ranking of the peids.
 *
 *   bm_lookup_default      lookups/s (bursts of 32, CPU time) and p50/p99
 *                          latency (ns, wall clock, single lookups), one core
 *   bm_naive_default       the same publications through the naive reference
 *                          (linear scan with wm_topic_match + set membership):
 *                          the in-run yardstick, compare the ratio
 *   bm_lookup_subs/N       sweep: N subscriptions over min(N, 1,000) shared
 *                          2,000-peid neighborhoods (spaPS Fig. 3b)
 *   bm_lookup_filter/S     sweep: 1,000 subscriptions, filters of S peids (Fig. 3d)
 *   bm_add_filter/S        adding a subscription with a NEW S-peid neighborhood
 *                          (define + add; peids unsorted), p50/p99 of thread
 *                          CPU time per add (Fig. 3e)
 *   bm_add_subs/N          adding a subscription with a new 2,000-peid
 *                          neighborhood at N existing subscriptions (Fig. 3c)
 *   bm_add_shared_nbhd     adding a subscription to an existing neighborhood
 *   bm_memory_1m           1,000,000 subscriptions over 10,000 distinct
 *                          2,000-peid neighborhoods: RSS growth in MiB (run it
 *                          alone: --benchmark_filter=memory)
 * Debian's Google Benchmark is a debug build, but the timed code is ours
 * (-O2): read the ratios against bm_naive_default in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matcher/matcher.h"
#include "matcher/naive.h"
#include "perf/bench.h"

#define UNIVERSE 100000u
#define NTOPICS 10
#define NPUBS 65536
#define BURST 32

typedef struct rng { uint64_t s; } rng;
static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t rbelow(rng *r, uint32_t n) { return (uint32_t)(((rnext(r) >> 32) * (uint64_t)n) >> 32); }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread: "on one core" even when the machine is shared
 * (wall time would count other processes' time slices). */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static void percentiles(uint64_t *v, size_t n, double *p50, double *p99)
{
    qsort(v, n, sizeof *v, cmp_u64);
    *p50 = (double)v[n / 2];
    *p99 = (double)v[(size_t)((double)n * 0.99)];
}

/* ---------------------------------------------------------------- workload */

typedef struct workload {
    wm_matcher *m;
    wm_matcher_reader *r;
    uint32_t nsubs, fsize, nnbhds;
    uint32_t *pub_topic, *pub_peid;
    char topics[NTOPICS][16];
    uint32_t *res_subs, *res_members, res_stride;
    wm_match_group *res_groups;
    wm_naive *naive;
} workload;

/* Zipf(1.0) over the universe, by inverse CDF on a random ranking. */
static void gen_pubs(workload *w, rng *r)
{
    double *cdf = malloc(UNIVERSE * sizeof *cdf);
    uint32_t *rank = malloc(UNIVERSE * sizeof *rank);
    double sum = 0;
    for (uint32_t i = 0; i < UNIVERSE; i++) { sum += 1.0 / (i + 1); cdf[i] = sum; rank[i] = i; }
    for (uint32_t i = UNIVERSE - 1; i > 0; i--) { uint32_t j = rbelow(r, i + 1), t = rank[i]; rank[i] = rank[j]; rank[j] = t; }
    w->pub_topic = malloc(NPUBS * sizeof *w->pub_topic);
    w->pub_peid = malloc(NPUBS * sizeof *w->pub_peid);
    for (uint32_t k = 0; k < NPUBS; k++) {
        double u = (double)(rnext(r) >> 11) / 9007199254740992.0 * sum;
        uint32_t lo = 0, hi = UNIVERSE - 1;
        while (lo < hi) { uint32_t mid = (lo + hi) / 2; if (cdf[mid] < u) lo = mid + 1; else hi = mid; }
        w->pub_peid[k] = rank[lo];
        w->pub_topic[k] = rbelow(r, NTOPICS);
    }
    free(cdf); free(rank);
}

static void random_set(rng *r, uint32_t *out, uint32_t n, uint32_t universe)
{
    /* Distinct peids by rejection against a small open-addressing set. */
    uint32_t cap = 1;
    while (cap < 2 * n) cap <<= 1;
    uint32_t *seen = malloc(cap * sizeof *seen);
    memset(seen, 0xff, cap * sizeof *seen);
    for (uint32_t i = 0; i < n;) {
        uint32_t p = rbelow(r, universe), h = (p * 2654435761u) & (cap - 1);
        while (seen[h] != UINT32_MAX && seen[h] != p) h = (h + 1) & (cap - 1);
        if (seen[h] == p) continue;
        seen[h] = p;
        out[i++] = p;
    }
    free(seen);
}

static void intern_universe(wm_matcher *m, uint32_t universe)
{
    char b[16];
    for (uint32_t i = 0; i < universe; i++) {
        uint32_t id;
        int n = snprintf(b, sizeof b, "p%u", i);
        wm_matcher_peid_intern(m, b, (size_t)n, &id); /* dense: id == i */
    }
}

/* nsubs subscriptions: subscriber i (client "v<i>") holds 10, subscription k
 * on "spaps/t<k>", over nnbhds neighborhoods of fsize peids (round robin). */
static workload *build(uint32_t nsubs, uint32_t fsize, uint32_t nnbhds, bool with_naive)
{
    workload *w = calloc(1, sizeof *w);
    rng r = { 42 };
    wm_matcher_config cfg = { .max_subs = nsubs + 4096, .max_nbhds = nnbhds + 4096, .max_peids = UNIVERSE };
    w->m = wm_matcher_new(&cfg);
    w->r = wm_matcher_reader_new(w->m);
    w->nsubs = nsubs; w->fsize = fsize; w->nnbhds = nnbhds;
    intern_universe(w->m, UNIVERSE);
    if (with_naive) w->naive = wm_naive_new();
    uint32_t *nb = malloc(nnbhds * sizeof *nb), *set = malloc(fsize * sizeof *set);
    uint32_t **sets = with_naive ? calloc(nnbhds, sizeof *sets) : NULL;
    for (uint32_t j = 0; j < nnbhds; j++) {
        char name[32];
        int n = snprintf(name, sizeof name, "n%u", j);
        random_set(&r, set, fsize, UNIVERSE);
        wm_matcher_nbhd_define_ids(w->m, name, (size_t)n, set, fsize, &nb[j]);
        if (sets) { sets[j] = malloc(fsize * sizeof *set); memcpy(sets[j], set, fsize * sizeof *set); }
    }
    for (uint32_t k = 0; k < NTOPICS; k++) snprintf(w->topics[k], sizeof w->topics[k], "spaps/t%u", k);
    for (uint32_t s = 0; s < nsubs; s++) {
        char client[16];
        snprintf(client, sizeof client, "v%u", s / 10);
        const char *f = w->topics[s % 10];
        wm_sub_spec sp = { .filter = f, .filter_len = strlen(f), .client = client, .client_len = strlen(client),
                           .nbhd = nb[s % nnbhds], .cookie = s };
        uint32_t id;
        if (wm_matcher_sub_add(w->m, &sp, &id, NULL) != WM_MATCHER_OK) { fprintf(stderr, "add failed\n"); abort(); }
        if (w->naive) wm_naive_add(w->naive, s, f, client, false, true, sets[s % nnbhds], fsize);
    }
    if (sets) { for (uint32_t j = 0; j < nnbhds; j++) free(sets[j]); free(sets); }
    free(nb); free(set);
    gen_pubs(w, &r);
    w->res_stride = nsubs + 16;
    w->res_subs = malloc((size_t)BURST * w->res_stride * sizeof *w->res_subs);
    w->res_members = malloc(16 * sizeof *w->res_members);
    w->res_groups = malloc(16 * sizeof *w->res_groups);
    return w;
}

static inline uint32_t lookup(workload *w, uint32_t k)
{
    const char *t = w->topics[w->pub_topic[k]];
    wm_match_pub pub = { .topic = t, .topic_len = 8, .peids = &w->pub_peid[k], .n_peids = 1, .client = "pub", .client_len = 3 };
    wm_match_result res = { w->res_subs, w->res_stride, w->res_members, 16, w->res_groups, 16, 0, 0, 0 };
    wm_matcher_lookup(w->r, &pub, &res);
    return res.n_subs;
}

/* Bursts of 32 publications through wm_matcher_lookup_burst (prefetching
 * ahead), 8 bursts between quiescent states, as a data plane would. */
static uint64_t burst(workload *w, uint32_t k)
{
    wm_match_pub pubs[BURST];
    wm_match_result res[BURST];
    for (int i = 0; i < BURST; i++) {
        uint32_t q = (k + (uint32_t)i) & (NPUBS - 1);
        pubs[i] = (wm_match_pub){ .topic = w->topics[w->pub_topic[q]], .topic_len = 8, .peids = &w->pub_peid[q],
                                  .n_peids = 1, .client = "pub", .client_len = 3 };
        res[i] = (wm_match_result){ w->res_subs + (size_t)i * w->res_stride, w->res_stride, w->res_members, 16,
                                    w->res_groups, 16, 0, 0, 0 };
    }
    wm_matcher_lookup_burst(w->r, pubs, BURST, res, NULL);
    uint64_t matched = 0;
    for (int i = 0; i < BURST; i++) matched += res[i].n_subs;
    return matched;
}

static void run_lookups(wm_bench_state *st, workload *w, bool latency)
{
    uint64_t matched = 0;
    uint32_t k = 0;
    while (wm_bench_keep_running_batch(st, 8 * BURST)) {
        for (int i = 0; i < 8; i++) { matched += burst(w, k); k = (k + BURST) & (NPUBS - 1); }
        wm_matcher_quiescent(w->r);
    }
    int64_t it = wm_bench_iterations(st);
    wm_bench_set_items_processed(st, it);
    wm_bench_counter(st, "matches_per_pub", it ? (double)matched / (double)it : 0);
    if (latency) {
        /* Per-lookup latency outside the timed loop: clock reads cost ~20 ns,
         * so time groups of 8 and divide (p50/p99 of 8-lookup means). */
        enum { N = 20000 };
        uint64_t *v = malloc(N * sizeof *v);
        for (int i = 0; i < N; i++) {
            uint64_t t0 = now_ns();
            for (int j = 0; j < 8; j++) { matched += lookup(w, k); k = (k + 1) & (NPUBS - 1); }
            v[i] = (now_ns() - t0) / 8;
        }
        double p50, p99;
        percentiles(v, N, &p50, &p99);
        wm_bench_counter(st, "p50_ns", p50);
        wm_bench_counter(st, "p99_ns", p99);
        free(v);
    }
    wm_bench_do_not_optimize(&matched);
}

static workload *cached(uint32_t nsubs, uint32_t fsize, uint32_t nnbhds, bool naive)
{
    static workload *last;
    if (last && last->nsubs == nsubs && last->fsize == fsize && last->nnbhds == nnbhds && (!naive || last->naive))
        return last;
    if (last) {
        wm_matcher_reader_free(last->r);
        wm_matcher_free(last->m);
        wm_naive_free(last->naive);
        free(last->pub_topic); free(last->pub_peid); free(last->res_subs); free(last->res_members); free(last->res_groups);
        free(last);
    }
    return last = build(nsubs, fsize, nnbhds, naive);
}

static void bm_lookup_default(wm_bench_state *st) { run_lookups(st, cached(1000, 2000, 1000, true), true); }
WM_BENCH(bm_lookup_default);

static void bm_naive_default(wm_bench_state *st)
{
    workload *w = cached(1000, 2000, 1000, true);
    uint64_t matched = 0;
    uint32_t k = 0, out[1100];
    while (wm_bench_keep_running_batch(st, 16))
        for (int i = 0; i < 16; i++) {
            matched += wm_naive_match(w->naive, w->topics[w->pub_topic[k]], &w->pub_peid[k], 1, "pub", out, 1100);
            k = (k + 1) & (NPUBS - 1);
        }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_do_not_optimize(&matched);
}
WM_BENCH(bm_naive_default);

static void bm_lookup_subs(wm_bench_state *st)
{
    uint32_t n = (uint32_t)wm_bench_arg(st);
    run_lookups(st, cached(n, 2000, n < 1000 ? n : 1000, false), true);
}
WM_BENCH_ARGS(bm_lookup_subs, 100, 1000, 10000, 100000);

static void bm_lookup_filter(wm_bench_state *st)
{
    run_lookups(st, cached(1000, (uint32_t)wm_bench_arg(st), 1000, false), true);
}
WM_BENCH_ARGS(bm_lookup_filter, 100, 1000, 2000, 10000);

/* Adds (define + subscribe) measured one by one; the added subscriptions
 * and neighborhoods are removed again, untimed, every 64 adds. */
static void run_adds(wm_bench_state *st, workload *w, uint32_t fsize, bool new_nbhd)
{
    enum { K = 64 };
    rng r = { 7 };
    uint32_t *sets = malloc((size_t)K * fsize * sizeof *sets);
    for (int i = 0; i < K; i++) random_set(&r, sets + (size_t)i * fsize, fsize, UNIVERSE);
    uint32_t existing = wm_matcher_nbhd_find(w->m, "n0", 2);
    uint64_t *lat = malloc(200000 * sizeof *lat);
    size_t nlat = 0;
    uint32_t subs[K], nbs[K], serial = 0;
    while (wm_bench_keep_running_batch(st, K)) {
        for (int i = 0; i < K; i++) {
            char name[32];
            int n = snprintf(name, sizeof name, "add%u", serial++);
            uint64_t t0 = cpu_ns();
            nbs[i] = existing;
            if (new_nbhd) wm_matcher_nbhd_define_ids(w->m, name, (size_t)n, sets + (size_t)i * fsize, fsize, &nbs[i]);
            wm_sub_spec sp = { .filter = "spaps/t3", .filter_len = 8, .client = "adder", .client_len = 5, .nbhd = nbs[i] };
            wm_matcher_sub_add(w->m, &sp, &subs[i], NULL);
            if (new_nbhd) wm_matcher_nbhd_release(w->m, nbs[i]);
            if (nlat < 200000) lat[nlat++] = cpu_ns() - t0;
        }
        wm_bench_pause(st);
        for (int i = 0; i < K; i++) wm_matcher_sub_remove(w->m, subs[i]);
        wm_matcher_quiescent(w->r);
        wm_matcher_reclaim(w->m, true);
        wm_bench_resume(st);
    }
    double p50, p99;
    percentiles(lat, nlat, &p50, &p99);
    wm_bench_counter(st, "p50_ns", p50);
    wm_bench_counter(st, "p99_ns", p99);
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    free(lat); free(sets);
}

static void bm_add_filter(wm_bench_state *st)
{
    uint32_t s = (uint32_t)wm_bench_arg(st);
    run_adds(st, cached(1000, 2000, 1000, false), s, true);
}
WM_BENCH_ARGS(bm_add_filter, 100, 1000, 2000, 10000);

static void bm_add_subs(wm_bench_state *st)
{
    uint32_t n = (uint32_t)wm_bench_arg(st);
    run_adds(st, cached(n, 2000, n < 1000 ? n : 1000, false), 2000, true);
}
WM_BENCH_ARGS(bm_add_subs, 100, 1000, 10000, 100000);

static void bm_add_shared_nbhd(wm_bench_state *st) { run_adds(st, cached(1000, 2000, 1000, false), 2000, false); }
WM_BENCH(bm_add_shared_nbhd);

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) { if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0; fclose(f); }
    return (double)resident * 4096.0 / (1024.0 * 1024.0);
}

/* 1 M subscriptions over 10,000 distinct 2,000-peid neighborhoods drawn
 * from 1,000,000 peids, 100 topic filters. Built once; the figure is the
 * RSS growth of building it. */
static void bm_memory_1m(wm_bench_state *st)
{
    static double grown, total, build_s;
    static bool done;
    if (!done) {
        enum { NSUBS = 1000000, NNB = 10000, FS = 2000, U = 1000000, NF = 100 };
        double before = rss_mib();
        uint64_t t0 = now_ns();
        wm_matcher_config cfg = { .max_subs = NSUBS, .max_nbhds = NNB, .max_peids = U, .max_filters = 1024, .max_groups = 16 };
        wm_matcher *m = wm_matcher_new(&cfg);
        intern_universe(m, U);
        rng r = { 99 };
        uint32_t *set = malloc(FS * sizeof *set), *nb = malloc(NNB * sizeof *nb);
        for (uint32_t j = 0; j < NNB; j++) {
            char name[32];
            int n = snprintf(name, sizeof name, "n%u", j);
            random_set(&r, set, FS, U);
            if (wm_matcher_nbhd_define_ids(m, name, (size_t)n, set, FS, &nb[j])) { wm_bench_skip_with_error(st, "define"); return; }
            if (j % 256 == 0) wm_matcher_reclaim(m, true); /* outgrown posting blocks */
        }
        char f[32], client[32];
        for (uint32_t s = 0; s < NSUBS; s++) {
            int fl = snprintf(f, sizeof f, "fleet/%u/state", rbelow(&r, NF));
            int cl = snprintf(client, sizeof client, "car%u", s / 10);
            wm_sub_spec sp = { .filter = f, .filter_len = (size_t)fl, .client = client, .client_len = (size_t)cl,
                               .nbhd = nb[rbelow(&r, NNB)] };
            uint32_t id;
            if (wm_matcher_sub_add(m, &sp, &id, NULL)) { wm_bench_skip_with_error(st, "add"); return; }
        }
        wm_matcher_reclaim(m, true);
        build_s = (double)(now_ns() - t0) / 1e9;
        total = rss_mib();
        grown = total - before;
        wm_matcher_stats ms;
        wm_matcher_stats_get(m, &ms);
        fprintf(stderr, "memory_1m: %u subs, %u nbhds, %llu nbhd peids, %u cells, %u peids; RSS +%.0f MiB (total %.0f MiB), built in %.1f s\n",
                ms.subs, ms.nbhds, (unsigned long long)ms.nbhd_peids, ms.cells, ms.peids, grown, total, build_s);
        free(set); free(nb);
        done = true; /* kept alive: the process RSS is the figure */
    }
    while (wm_bench_keep_running_batch(st, 1)) {}
    wm_bench_counter(st, "rss_growth_mib", grown);
    wm_bench_counter(st, "rss_total_mib", total);
    wm_bench_counter(st, "build_s", build_s);
}
WM_BENCH(bm_memory_1m);
