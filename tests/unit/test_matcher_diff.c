/* Differential test: the matcher against the naive reference (linear scan
 * with the codec's wm_topic_match and plain set membership, matcher/naive.h)
 * on random workloads — filters with '+', '#', '$' and empty levels, $share
 * groups, No Local, random neighborhoods defined and released, unknown
 * peids and clients — with subscription churn interleaved with lookups.
 * The normal build checks at least 1,000,000 publications; zero
 * differences allowed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "matcher/matcher.h"
#include "matcher/naive.h"
#include "tests/lib/matcher_workload.h"

#define NUNKNOWN 30      /* p<npeids>.. p<npeids+29> are never interned */
#define MAXNBHD 64
#define NCLIENTS 8
#define MAXSUBS 512
#define RESCAP 4096

typedef struct tsub {
    bool live;
    uint32_t msub;       /* matcher's id */
    uint32_t tid;        /* test id (cookie) */
    char filter[96];
    char client[8];
    bool no_local;
    int nbhd;            /* index into nbhds, -1 = plain */
} tsub;

typedef struct tnbhd {
    bool defined;        /* definition reference still held */
    int users;           /* live subscriptions using it */
    uint32_t id;
    uint32_t gen;
    uint32_t *peids;
    size_t n;
} tnbhd;

typedef struct world {
    wl_rng rng;
    wm_matcher *m;
    wm_matcher_reader *r;
    wm_naive *naive;
    tsub subs[MAXSUBS];
    tsub *by_tid[1 << 20];
    uint32_t next_tid;
    tnbhd nbhds[MAXNBHD];
    uint32_t npeids;     /* peids p0..p<npeids-1> may be in neighborhoods */
    int nnbhd;           /* neighborhood slots in use */
    uint32_t res_subs[RESCAP], res_members[RESCAP], expect[RESCAP], got[RESCAP];
    wm_match_group res_groups[RESCAP];
    long lookups, matched;
} world;

static void nbhd_define(world *w, int k)
{
    tnbhd *nb = &w->nbhds[k];
    /* Empty, small and large sets: large ones give long posting lists, so
     * the lookup also takes its topic-side path (cells tested against the
     * publication's posting slots). */
    unsigned kind = wl_below(&w->rng, 5);
    size_t n = kind == 0 ? 0 : kind == 1 ? 150 + wl_below(&w->rng, 100) : 1 + wl_below(&w->rng, 60);
    free(nb->peids);
    nb->peids = calloc(n + 1, sizeof *nb->peids);
    wm_match_str strs[256];
    char buf[256][16];
    for (size_t i = 0; i < n; i++) {
        nb->peids[i] = wl_below(&w->rng, w->npeids);
        snprintf(buf[i], sizeof buf[i], "p%u", nb->peids[i]);
        strs[i] = (wm_match_str){ buf[i], strlen(buf[i]) };
    }
    nb->n = n;
    char name[32];
    int nl = snprintf(name, sizeof name, "n%d.%u", k, nb->gen++);
    cr_assert_eq(wm_matcher_nbhd_define(w->m, name, (size_t)nl, strs, n, &nb->id), WM_MATCHER_OK);
    cr_assert_eq(wm_matcher_nbhd_find(w->m, name, (size_t)nl), nb->id);
    nb->defined = true;
}

static void add_sub(world *w)
{
    tsub *s = NULL;
    for (int tries = 0; tries < 8 && !s; tries++) {
        tsub *c = &w->subs[wl_below(&w->rng, MAXSUBS)];
        if (!c->live) s = c;
    }
    if (!s) return;
    wl_filter(&w->rng, s->filter, sizeof s->filter, 15);
    snprintf(s->client, sizeof s->client, "c%u", wl_below(&w->rng, NCLIENTS));
    bool shared = wm_topic_share_split(s->filter, strlen(s->filter), NULL);
    s->no_local = !shared && wl_below(&w->rng, 100) < 30;
    s->nbhd = -1;
    if (wl_below(&w->rng, 100) < 60) {
        int k = (int)wl_below(&w->rng, (uint32_t)w->nnbhd);
        if (w->nbhds[k].defined) s->nbhd = k;
    }
    s->tid = w->next_tid++;
    wm_sub_spec spec = {
        .filter = s->filter, .filter_len = strlen(s->filter),
        .client = s->client, .client_len = strlen(s->client),
        .nbhd = s->nbhd < 0 ? WM_NBHD_NONE : w->nbhds[s->nbhd].id,
        .qos = (uint8_t)wl_below(&w->rng, 3), .no_local = s->no_local, .cookie = s->tid,
    };
    wm_matcher_error err;
    cr_assert_eq(wm_matcher_sub_add(w->m, &spec, &s->msub, &err), WM_MATCHER_OK, "add %s: %s", s->filter,
                 wm_matcher_status_name(err.status));
    const tnbhd *nb = s->nbhd < 0 ? NULL : &w->nbhds[s->nbhd];
    cr_assert(wm_naive_add(w->naive, s->tid, s->filter, s->client, s->no_local, nb != NULL,
                           nb ? nb->peids : NULL, nb ? nb->n : 0));
    if (nb) w->nbhds[s->nbhd].users++;
    s->live = true;
    w->by_tid[s->tid % (1 << 20)] = s;
}

static void remove_sub(world *w)
{
    tsub *s = &w->subs[wl_below(&w->rng, MAXSUBS)];
    if (!s->live) return;
    cr_assert_eq(wm_matcher_sub_remove(w->m, s->msub), WM_MATCHER_OK);
    cr_assert_eq(wm_matcher_sub_remove(w->m, s->msub), WM_MATCHER_E_UNKNOWN_SUB, "double remove");
    cr_assert(wm_naive_remove(w->naive, s->tid));
    if (s->nbhd >= 0) w->nbhds[s->nbhd].users--;
    s->live = false;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The group key of a shared subscription: "$share/{name}/{filter}" is the
 * whole filter string. */
static void check_one(world *w)
{
    char topic[96];
    wl_topic(&w->rng, topic, sizeof topic);
    uint32_t np = wl_below(&w->rng, 4);
    uint32_t peids[4];
    char pbuf[4][16];
    wm_match_str pstr[4];
    for (uint32_t j = 0; j < np; j++) {
        peids[j] = wl_below(&w->rng, w->npeids + NUNKNOWN);
        snprintf(pbuf[j], sizeof pbuf[j], "p%u", peids[j]);
        pstr[j] = (wm_match_str){ pbuf[j], strlen(pbuf[j]) };
    }
    char client[8];
    uint32_t cx = wl_below(&w->rng, NCLIENTS + 2);
    const char *cl = NULL;
    if (cx < NCLIENTS + 1) { snprintf(client, sizeof client, "c%u", cx); cl = client; } /* c8 is unknown */

    wm_match_result res = { w->res_subs, RESCAP, w->res_members, RESCAP, w->res_groups, RESCAP, 0, 0, 0 };
    wm_matcher_status st = wm_matcher_lookup_str(w->r, topic, strlen(topic), pstr, np, cl, cl ? strlen(cl) : 0, &res);
    cr_assert_eq(st, WM_MATCHER_OK, "lookup: %s", wm_matcher_status_name(st));
    size_t ne = wm_naive_match(w->naive, topic, peids, np, cl, w->expect, RESCAP);

    size_t ng = 0;
    for (uint32_t i = 0; i < res.n_subs; i++) {
        uint32_t tid = (uint32_t)wm_matcher_sub_cookie(w->m, res.subs[i]);
        tsub *s = w->by_tid[tid % (1 << 20)];
        cr_assert(!wm_topic_share_split(s->filter, strlen(s->filter), NULL), "shared sub %s outside a group", s->filter);
        w->got[ng++] = tid;
    }
    uint32_t counted = 0;
    for (uint32_t g = 0; g < res.n_groups; g++) {
        const wm_match_group *grp = &res.groups[g];
        cr_assert_eq(grp->first, counted);
        cr_assert_gt(grp->count, 0);
        const char *key = NULL;
        for (uint32_t i = grp->first; i < grp->first + grp->count; i++) {
            uint32_t tid = (uint32_t)wm_matcher_sub_cookie(w->m, res.members[i]);
            tsub *s = w->by_tid[tid % (1 << 20)];
            cr_assert(wm_topic_share_split(s->filter, strlen(s->filter), NULL));
            if (!key) key = s->filter;
            cr_assert_str_eq(s->filter, key, "group mixes %s and %s", s->filter, key);
            if (i > grp->first) cr_assert_lt(res.members[i - 1], res.members[i], "members sorted");
            w->got[ng++] = tid;
        }
        for (uint32_t h = 0; h < g; h++) {
            cr_assert_lt(res.groups[h].group, grp->group, "groups sorted, each once");
            uint32_t tid = (uint32_t)wm_matcher_sub_cookie(w->m, res.members[res.groups[h].first]);
            cr_assert_str_neq(w->by_tid[tid % (1 << 20)]->filter, key, "group %s returned twice", key);
        }
        counted += grp->count;
    }
    cr_assert_eq(counted, res.n_members);
    qsort(w->got, ng, sizeof *w->got, cmp_u32);
    if (ng != ne || memcmp(w->got, w->expect, ne * sizeof *w->got) != 0) {
        fprintf(stderr, "DIFF topic=%s np=%u client=%s: matcher %zu, naive %zu\n", topic, np, cl ? cl : "-", ng, ne);
        for (size_t i = 0; i < ne; i++) fprintf(stderr, "  naive: %s\n", w->by_tid[w->expect[i] % (1 << 20)]->filter);
        for (size_t i = 0; i < ng; i++) fprintf(stderr, "  matcher: %s\n", w->by_tid[w->got[i] % (1 << 20)]->filter);
        cr_assert_fail("difference after %ld lookups", w->lookups);
    }
    w->lookups++;
    w->matched += (long)ne;
}

static void run(uint64_t seed, long target_lookups, int live_target, uint32_t npeids, int nnbhd, bool expect_spill)
{
    uint64_t max_spilled = 0;
    world *w = calloc(1, sizeof *w);
    w->rng.s = seed;
    w->npeids = npeids;
    w->nnbhd = nnbhd;
    wm_matcher_config cfg = { .max_subs = 4096, .max_nbhds = 256, .max_peids = 4096, .max_groups = 512 };
    w->m = wm_matcher_new(&cfg);
    cr_assert_not_null(w->m);
    w->r = wm_matcher_reader_new(w->m);
    cr_assert_not_null(w->r);
    w->naive = wm_naive_new();
    for (int k = 0; k < w->nnbhd; k++) nbhd_define(w, k);
    long steps = 0;
    while (w->lookups < target_lookups) {
        unsigned op = wl_below(&w->rng, 100);
        size_t live = wm_naive_count(w->naive);
        if (op < 50 && live < (size_t)live_target) add_sub(w);
        else if (op < 90) remove_sub(w);
        else if (op < 95) {
            int k = (int)wl_below(&w->rng, (uint32_t)w->nnbhd);
            if (w->nbhds[k].defined) {
                cr_assert_eq(wm_matcher_nbhd_release(w->m, w->nbhds[k].id), WM_MATCHER_OK);
                w->nbhds[k].defined = false;
            }
        } else {
            int k = (int)wl_below(&w->rng, (uint32_t)w->nnbhd);
            /* Redefine only once no subscription uses the old set: the test's
             * reference keeps one peid array per slot. */
            if (!w->nbhds[k].defined && w->nbhds[k].users == 0) nbhd_define(w, k);
        }
        int n = 1 + (int)wl_below(&w->rng, 40);
        for (int i = 0; i < n; i++) check_one(w);
        wm_matcher_stats st;
        wm_matcher_stats_get(w->m, &st);
        if (st.spilled_postings > max_spilled) max_spilled = st.spilled_postings;
        if (++steps % 64 == 0) {
            wm_matcher_quiescent(w->r);
            wm_matcher_reclaim(w->m, true);
        }
    }
    cr_log_info("seed %llu: %ld lookups, %ld matches, %ld churn steps, at most %llu spilled postings, 0 differences",
                (unsigned long long)seed, w->lookups, w->matched, steps, (unsigned long long)max_spilled);
    cr_assert_gt(w->matched, w->lookups / 4, "workload too sparse to test anything");
    if (expect_spill) cr_assert_gt(max_spilled, 0, "no posting list ever spilled out of its slot");
    wm_naive_free(w->naive);
    wm_matcher_reader_free(w->r);
    wm_matcher_free(w->m);
    for (int k = 0; k < w->nnbhd; k++) free(w->nbhds[k].peids);
    free(w);
}

/* Three workloads, 1,000,000 publications in all in the normal build: a
 * small live set (dense churn: filters and cells created and destroyed all
 * the time), a larger set (long posting lists, both lookup sides), and few
 * peids shared by many neighborhoods, so that posting slots fill both their
 * lines and spill into overflow vectors while neighborhoods come and go. */
Test(matcher_diff, churn_small_live_set, .timeout = 600) { run(1, wl_scaled(400000, 20), 40, 300, 24, false); }
Test(matcher_diff, churn_large_live_set, .timeout = 600) { run(2, wl_scaled(400000, 20), 400, 300, 24, false); }
Test(matcher_diff, crowded_peids, .timeout = 600) { run(3, wl_scaled(200000, 20), 400, 40, MAXNBHD, true); }
