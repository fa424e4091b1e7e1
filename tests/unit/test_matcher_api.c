/* The matcher's contract, case by case (matcher/matcher.h): topic rules of
 * MQTT 5.0 §4.7, No Local and shared subscriptions (§3.8.3.1, §4.8.2), the
 * spatial rule of spaPS §V-C, neighborhood reference counting, bounds and
 * errors, batches, and shared-member picking (matcher/share_pick.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "matcher/matcher.h"
#include "matcher/share_pick.h"

#define CAP 64

typedef struct fx {
    wm_matcher *m;
    wm_matcher_reader *r;
    uint32_t subs[CAP], members[CAP];
    wm_match_group groups[CAP];
    wm_match_result res;
} fx;

static fx F;

static void setup_cfg(const wm_matcher_config *cfg)
{
    memset(&F, 0, sizeof F);
    F.m = wm_matcher_new(cfg);
    cr_assert_not_null(F.m);
    F.r = wm_matcher_reader_new(F.m);
    cr_assert_not_null(F.r);
}
static void setup(void) { setup_cfg(NULL); }
static void teardown(void)
{
    wm_matcher_reader_free(F.r);
    wm_matcher_free(F.m);
}

static uint32_t nbhd(const char *name, const char *const *peids, size_t n)
{
    wm_match_str s[16];
    for (size_t i = 0; i < n; i++) s[i] = (wm_match_str){ peids[i], strlen(peids[i]) };
    uint32_t id;
    cr_assert_eq(wm_matcher_nbhd_define(F.m, name, strlen(name), s, n, &id), WM_MATCHER_OK);
    return id;
}

static wm_matcher_status add_full(const char *filter, const char *client, uint32_t nb, bool no_local, uint64_t cookie,
                                  uint32_t *sub, wm_matcher_error *err)
{
    wm_sub_spec sp = { .filter = filter, .filter_len = strlen(filter), .client = client, .client_len = strlen(client),
                       .nbhd = nb, .no_local = no_local, .cookie = cookie, .qos = 1, .content = 7 };
    return wm_matcher_sub_add(F.m, &sp, sub, err);
}

static uint32_t add(const char *filter, const char *client, uint32_t nb, bool no_local, uint64_t cookie)
{
    uint32_t s;
    wm_matcher_error e;
    cr_assert_eq(add_full(filter, client, nb, no_local, cookie, &s, &e), WM_MATCHER_OK, "add %s: %s", filter,
                 wm_matcher_status_name(e.status));
    return s;
}

/* Matches (subs and members flattened) as a bitmask of cookies < 64. */
static uint64_t look(const char *topic, const char *peid1, const char *peid2, const char *client)
{
    wm_match_str p[2];
    uint32_t np = 0;
    if (peid1) p[np++] = (wm_match_str){ peid1, strlen(peid1) };
    if (peid2) p[np++] = (wm_match_str){ peid2, strlen(peid2) };
    F.res = (wm_match_result){ F.subs, CAP, F.members, CAP, F.groups, CAP, 0, 0, 0 };
    wm_matcher_status st = wm_matcher_lookup_str(F.r, topic, strlen(topic), p, np, client, client ? strlen(client) : 0, &F.res);
    cr_assert_eq(st, WM_MATCHER_OK, "%s", wm_matcher_status_name(st));
    uint64_t mask = 0;
    for (uint32_t i = 0; i < F.res.n_subs; i++) mask |= 1ull << wm_matcher_sub_cookie(F.m, F.subs[i]);
    for (uint32_t i = 0; i < F.res.n_members; i++) mask |= 1ull << wm_matcher_sub_cookie(F.m, F.members[i]);
    return mask;
}

#define B(i) (1ull << (i))

TestSuite(matcher_api, .init = setup, .fini = teardown);

Test(matcher_api, topic_wildcards_and_dollar_4_7)
{
    add("sport/tennis/+", "c", WM_NBHD_NONE, false, 1);
    add("sport/#", "c", WM_NBHD_NONE, false, 2);
    add("#", "c", WM_NBHD_NONE, false, 3);
    add("$SYS/#", "c", WM_NBHD_NONE, false, 4);
    add("+/monitor/Clients", "c", WM_NBHD_NONE, false, 5);
    add("sport/tennis/player1", "c", WM_NBHD_NONE, false, 6);
    add("sport/+", "c", WM_NBHD_NONE, false, 7);
    cr_expect_eq(look("sport/tennis/player1", NULL, NULL, NULL), B(1) | B(2) | B(3) | B(6));
    cr_expect_eq(look("sport", NULL, NULL, NULL), B(2) | B(3), "'#' matches its parent level (4.7.1.2)");
    cr_expect_eq(look("sport/", NULL, NULL, NULL), B(2) | B(3) | B(7), "'+' matches an empty level (4.7.1.3)");
    cr_expect_eq(look("$SYS/monitor/Clients", NULL, NULL, NULL), B(4), "wildcards at level 1 skip '$' topics (4.7.2)");
    cr_expect_eq(look("x/monitor/Clients", NULL, NULL, NULL), B(3) | B(5));
}

Test(matcher_api, no_local_3_8_3_1)
{
    add("a/+", "alice", WM_NBHD_NONE, true, 1);
    add("a/+", "bob", WM_NBHD_NONE, false, 2);
    cr_expect_eq(look("a/b", NULL, NULL, "alice"), B(2), "alice's own publication skips her No Local subscription");
    cr_expect_eq(look("a/b", NULL, NULL, "bob"), B(1) | B(2));
    cr_expect_eq(look("a/b", NULL, NULL, "carol"), B(1) | B(2), "an unknown publisher removes nothing");
    cr_expect_eq(look("a/b", NULL, NULL, NULL), B(1) | B(2));
    uint32_t s;
    wm_matcher_error e;
    cr_expect_eq(add_full("$share/g/a", "alice", WM_NBHD_NONE, true, 3, &s, &e), WM_MATCHER_E_NO_LOCAL_SHARED);
    cr_expect_eq(e.status, WM_MATCHER_E_NO_LOCAL_SHARED);
}

Test(matcher_api, spatial_rule_spaps_v_c)
{
    const char *const ps[] = { "way/1", "node/2" };
    uint32_t n = nbhd("station", ps, 2);
    cr_assert_eq(wm_matcher_nbhd_size(F.m, n), 2);
    add("t", "c", n, false, 1);
    add("t", "c", WM_NBHD_NONE, false, 2);
    cr_expect_eq(look("t", NULL, NULL, NULL), B(2), "a spatial subscription never receives a publication without peid");
    cr_expect_eq(look("t", "node/2", NULL, NULL), B(1) | B(2));
    cr_expect_eq(look("t", "way/9", NULL, NULL), B(2), "unknown peids match no spatial subscription");
    cr_expect_eq(wm_matcher_peid_find(F.m, "way/9", 5), WM_PEID_NONE);
    cr_expect_eq(look("t", "way/9", "way/1", NULL), B(1) | B(2), "one peid in the set is enough");
    cr_expect_eq(look("u", "way/1", NULL, NULL), 0, "the topic must match too");
}

Test(matcher_api, shared_group_returned_once_4_8_2)
{
    add("$share/g/a/+", "c1", WM_NBHD_NONE, false, 1);
    add("$share/g/a/+", "c2", WM_NBHD_NONE, false, 2);
    add("$share/g/a/#", "c3", WM_NBHD_NONE, false, 3);   /* same ShareName, other filter: other group */
    add("$share/h/a/+", "c4", WM_NBHD_NONE, false, 4);
    add("a/+", "c5", WM_NBHD_NONE, false, 5);
    cr_expect_eq(look("a/b", NULL, NULL, NULL), B(1) | B(2) | B(3) | B(4) | B(5));
    cr_expect_eq(F.res.n_subs, 1);
    cr_expect_eq(F.res.n_groups, 3);
    cr_expect_eq(F.res.n_members, 4);
    for (uint32_t g = 0; g < F.res.n_groups; g++) {
        wm_match_group *gr = &F.groups[g];
        uint64_t mask = 0;
        for (uint32_t i = gr->first; i < gr->first + gr->count; i++) mask |= B(wm_matcher_sub_cookie(F.m, F.members[i]));
        cr_expect(mask == (B(1) | B(2)) || mask == B(3) || mask == B(4), "group members %llx", (unsigned long long)mask);
        if (g) cr_expect_lt(F.groups[g - 1].group, gr->group);
    }
}

Test(matcher_api, neighborhood_stored_once_and_refcounted)
{
    const char *const ps[] = { "p1", "p2", "p2" };
    uint32_t n = nbhd("zone", ps, 3);
    cr_expect_eq(wm_matcher_nbhd_size(F.m, n), 2, "duplicates are ignored");
    uint32_t s1 = add("t", "c", n, false, 1), s2 = add("t/+", "c", n, false, 2);
    wm_matcher_stats st;
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.nbhds, 1);
    cr_expect_eq(st.nbhd_peids, 2, "one copy of the set for both subscriptions");
    cr_expect_eq(wm_matcher_nbhd_release(F.m, n), WM_MATCHER_OK);
    cr_expect_eq(wm_matcher_nbhd_find(F.m, "zone", 4), WM_NBHD_NONE, "the name is free at once");
    cr_expect_eq(wm_matcher_nbhd_release(F.m, n), WM_MATCHER_E_UNKNOWN_NBHD);
    cr_expect_eq(look("t", "p1", NULL, NULL), B(1), "subscriptions keep the set alive");
    const char *const ps2[] = { "p3" };
    uint32_t n2 = nbhd("zone", ps2, 1);
    cr_expect_neq(n2, n);
    uint32_t s3 = add("t", "c", n2, false, 3);
    cr_expect_eq(look("t", "p1", NULL, NULL), B(1));
    cr_expect_eq(look("t", "p3", NULL, NULL), B(3));
    cr_expect_eq(wm_matcher_sub_remove(F.m, s1), WM_MATCHER_OK);
    cr_expect_eq(wm_matcher_sub_remove(F.m, s2), WM_MATCHER_OK);
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.nbhds, 1, "the old set went with its last subscription");
    cr_expect_eq(st.nbhd_peids, 1);
    cr_expect_eq(look("t", "p1", NULL, NULL), 0);
    wm_matcher_quiescent(F.r);
    cr_expect_gt(wm_matcher_reclaim(F.m, true), 0);
    cr_expect_eq(wm_matcher_sub_remove(F.m, s3), WM_MATCHER_OK);
    cr_expect_eq(wm_matcher_nbhd_release(F.m, n2), WM_MATCHER_OK);
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.nbhds + st.subs + st.cells + st.filters + st.clients, 0);
}

Test(matcher_api, errors_are_precise)
{
    uint32_t s;
    wm_matcher_error e;
    cr_expect_eq(add_full("sport/tennis#", "c", WM_NBHD_NONE, false, 1, &s, &e), WM_MATCHER_E_INVALID_FILTER);
    cr_expect_eq(e.topic_status, WM_TOPIC_HASH_NOT_ALONE);
    cr_expect_eq(e.offset, 12);
    cr_expect_eq(add_full("a", "c", 12345, false, 1, &s, &e), WM_MATCHER_E_UNKNOWN_NBHD);
    wm_sub_spec sp = { .filter = "a", .filter_len = 1, .client = "c", .client_len = 1, .nbhd = WM_NBHD_NONE, .qos = 3 };
    cr_expect_eq(wm_matcher_sub_add(F.m, &sp, &s, NULL), WM_MATCHER_E_BAD_QOS);
    cr_expect_eq(wm_matcher_sub_remove(F.m, 999), WM_MATCHER_E_UNKNOWN_SUB);
    const char *const ps[] = { "x" };
    nbhd("n", ps, 1);
    uint32_t id;
    wm_match_str one = { "x", 1 }, empty = { "", 0 };
    cr_expect_eq(wm_matcher_nbhd_define(F.m, "n", 1, &one, 1, &id), WM_MATCHER_E_NBHD_EXISTS);
    cr_expect_eq(wm_matcher_nbhd_define(F.m, "", 0, &one, 1, &id), WM_MATCHER_E_BAD_NAME);
    cr_expect_eq(wm_matcher_nbhd_define(F.m, "m", 1, &empty, 1, &id), WM_MATCHER_E_BAD_PEID);
    uint32_t bad = 77;
    cr_expect_eq(wm_matcher_nbhd_define_ids(F.m, "m", 1, &bad, 1, &id), WM_MATCHER_E_BAD_PEID);
    wm_match_str many[WM_MATCH_MAX_PUB_PEIDS + 1];
    for (size_t i = 0; i <= WM_MATCH_MAX_PUB_PEIDS; i++) many[i] = one;
    F.res = (wm_match_result){ F.subs, CAP, F.members, CAP, F.groups, CAP, 0, 0, 0 };
    cr_expect_eq(wm_matcher_lookup_str(F.r, "a", 1, many, WM_MATCH_MAX_PUB_PEIDS + 1, NULL, 0, &F.res),
                 WM_MATCHER_E_TOO_MANY_PEIDS);
    cr_expect_eq(wm_matcher_lookup_str(F.r, "", 0, NULL, 0, NULL, 0, &F.res), WM_MATCHER_E_INVALID_TOPIC);
    cr_expect_str_eq(wm_matcher_status_name(WM_MATCHER_E_FULL_SUBS), "full_subs");
}

Test(matcher_api, peids_interned_dense_and_permanent)
{
    uint32_t a, b, a2;
    cr_assert_eq(wm_matcher_peid_intern(F.m, "way/1", 5, &a), WM_MATCHER_OK);
    cr_assert_eq(wm_matcher_peid_intern(F.m, "way/2", 5, &b), WM_MATCHER_OK);
    cr_assert_eq(wm_matcher_peid_intern(F.m, "way/1", 5, &a2), WM_MATCHER_OK);
    cr_expect_eq(a, 0);
    cr_expect_eq(b, 1);
    cr_expect_eq(a2, a);
    cr_expect_eq(wm_matcher_peid_find(F.m, "way/2", 5), b);
    uint32_t n;
    cr_assert_eq(wm_matcher_nbhd_define_ids(F.m, "z", 1, &b, 1, &n), WM_MATCHER_OK);
    add("t", "c", n, false, 1);
    uint32_t pid[1] = { b };
    wm_match_pub pub = { .topic = "t", .topic_len = 1, .peids = pid, .n_peids = 1, .client = NULL };
    F.res = (wm_match_result){ F.subs, CAP, F.members, CAP, F.groups, CAP, 0, 0, 0 };
    cr_expect_eq(wm_matcher_lookup(F.r, &pub, &F.res), WM_MATCHER_OK);
    cr_expect_eq(F.res.n_subs, 1, "the interned entry point");
    cr_expect_eq(wm_matcher_sub_content(F.m, F.subs[0]), 7, "content-filter slot kept for the EXI stage");
    cr_expect_eq(wm_matcher_sub_qos(F.m, F.subs[0]), 1);
}

Test(matcher_api, truncated_results_say_so)
{
    for (int i = 0; i < 5; i++) add("t", "c", WM_NBHD_NONE, false, (uint64_t)i);
    uint32_t small[2];
    wm_match_result res = { small, 2, F.members, CAP, F.groups, CAP, 0, 0, 0 };
    cr_expect_eq(wm_matcher_lookup_str(F.r, "t", 1, NULL, 0, NULL, 0, &res), WM_MATCHER_E_TRUNCATED);
    cr_expect_eq(res.n_subs, 2);
}

Test(matcher_api, batches_apply_in_order)
{
    wm_matcher_op ops[3] = {
        { .kind = WM_OP_ADD, .add = { .filter = "a", .filter_len = 1, .client = "c", .client_len = 1, .nbhd = WM_NBHD_NONE, .cookie = 1 } },
        { .kind = WM_OP_ADD, .add = { .filter = "a/#/b", .filter_len = 5, .client = "c", .client_len = 1, .nbhd = WM_NBHD_NONE } },
        { .kind = WM_OP_ADD, .add = { .filter = "b", .filter_len = 1, .client = "c", .client_len = 1, .nbhd = WM_NBHD_NONE, .cookie = 2 } },
    };
    cr_expect_eq(wm_matcher_apply(F.m, ops, 3, true), 1);
    cr_expect_eq(ops[1].result.status, WM_MATCHER_E_INVALID_FILTER);
    cr_expect_eq(look("a", NULL, NULL, NULL), B(1));
    wm_matcher_op rm[2] = { { .kind = WM_OP_REMOVE, .sub = ops[0].sub }, { .kind = WM_OP_REMOVE, .sub = ops[0].sub } };
    cr_expect_eq(wm_matcher_apply(F.m, rm, 2, true), 1);
    cr_expect_eq(rm[1].result.status, WM_MATCHER_E_UNKNOWN_SUB);
    cr_expect_eq(look("a", NULL, NULL, NULL), 0);
    cr_expect_eq(look("b", NULL, NULL, NULL), B(2));
}

Test(matcher_bounds, full_tables_and_ids_reused_after_grace)
{
    wm_matcher_config cfg = { .max_subs = 2, .max_levels = 3 };
    setup_cfg(&cfg);
    uint32_t s1 = add("a", "c", WM_NBHD_NONE, false, 1);
    add("b", "c", WM_NBHD_NONE, false, 2);
    uint32_t s;
    wm_matcher_error e;
    cr_expect_eq(add_full("c", "c", WM_NBHD_NONE, false, 3, &s, &e), WM_MATCHER_E_FULL_SUBS);
    cr_expect_eq(wm_matcher_sub_remove(F.m, s1), WM_MATCHER_OK);
    /* one live below the bound, the free id still in its grace period: the
     * add waits for it (this thread's own reader is taken offline for the
     * wait by liburcu) and reuses it */
    wm_matcher_stats st;
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.grace_waits, 0);
    cr_expect_eq(add_full("c", "c", WM_NBHD_NONE, false, 3, &s, &e), WM_MATCHER_OK);
    cr_expect_eq(s, s1, "a removed id is reused only after a grace period");
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.grace_waits, 1);
    cr_expect_eq(look("c", NULL, NULL, NULL), B(3));
    cr_expect_eq(look("a", NULL, NULL, NULL), 0);
    wm_matcher_sub_remove(F.m, s);
    cr_expect_eq(add_full("a/b/c/d", "c", WM_NBHD_NONE, false, 4, &s, &e), WM_MATCHER_E_TOO_DEEP);
    cr_expect_eq(add_full("a/+/c/d", "c", WM_NBHD_NONE, false, 4, &s, &e), WM_MATCHER_E_TOO_DEEP);
    teardown();
}

Test(matcher_bounds, a_full_wildcard_trie_is_full_nodes_and_changes_nothing)
{
    wm_matcher_config cfg = { .max_trie_nodes = 4 };
    setup_cfg(&cfg);
    uint32_t s;
    wm_matcher_error e;
    cr_expect_eq(add_full("a/b/+", "c", WM_NBHD_NONE, false, 1, &s, &e), WM_MATCHER_OK);
    /* a/b/+ holds 3 nodes; x/y/+ needs 3 more: x fits, y does not, x goes
     * back, and the status says full, not out of memory (until 2026-12-02
     * it was E_NOMEM: the count was read after the give-back) */
    cr_expect_eq(add_full("x/y/+", "c", WM_NBHD_NONE, false, 2, &s, &e), WM_MATCHER_E_FULL_NODES);
    cr_expect_eq(add_full("a/b/+/#", "c", WM_NBHD_NONE, false, 3, &s, &e), WM_MATCHER_OK, "a/b/+ shared: fits");
    cr_expect_eq(look("a/b/q", NULL, NULL, NULL), B(1) | B(3));
    cr_expect_eq(look("x/y/q", NULL, NULL, NULL), 0);
    teardown();
}

Test(share_pick, round_robin_cycles)
{
    uint32_t cur = 0;
    cr_expect_eq(wm_share_pick_rr(&cur, 3), 0);
    cr_expect_eq(wm_share_pick_rr(&cur, 3), 1);
    cr_expect_eq(wm_share_pick_rr(&cur, 3), 2);
    cr_expect_eq(wm_share_pick_rr(&cur, 3), 0);
    cr_expect_eq(wm_share_pick_rr(&cur, 2), 1);
    cr_expect_eq(wm_share_pick_rr(&cur, 0), UINT32_MAX);
    cur = 7;
    cr_expect_lt(wm_share_pick_rr(&cur, 2), 2, "a cursor from a bigger group still lands inside");
}

Test(share_pick, hash_is_stable_balanced_and_minimal_on_change)
{
    const uint32_t members[4] = { 10, 11, 12, 13 };
    const uint32_t fewer[3] = { 10, 11, 13 }; /* member 12 left */
    unsigned count[4] = { 0 };
    unsigned moved_wrongly = 0;
    for (int p = 0; p < 4000; p++) {
        char pub[16];
        int n = snprintf(pub, sizeof pub, "client-%d", p);
        uint32_t i = wm_share_pick_hash(pub, (size_t)n, members, 4);
        cr_assert_lt(i, 4);
        cr_assert_eq(wm_share_pick_hash(pub, (size_t)n, members, 4), i, "same publisher, same member (ordering)");
        count[i]++;
        uint32_t j = wm_share_pick_hash(pub, (size_t)n, fewer, 3);
        if (members[i] != 12 && fewer[j] != members[i]) moved_wrongly++;
    }
    for (int i = 0; i < 4; i++) cr_expect(count[i] > 800 && count[i] < 1200, "member %d got %u of 4000", i, count[i]);
    cr_expect_eq(moved_wrongly, 0, "only the publishers of the departed member move (rendezvous hashing)");
    cr_expect_eq(wm_share_pick_hash("x", 1, members, 0), UINT32_MAX);
}

Test(matcher_api, burst_equals_single_lookups)
{
    const char *const ps[] = { "p0", "p1", "p2", "p3" };
    uint32_t n = nbhd("z", ps, 4);
    const char *const ps2[] = { "p2", "p5" };
    uint32_t n2 = nbhd("y", ps2, 2);
    add("t/+", "c", n, false, 1);
    add("t/a", "c", n2, false, 2);
    add("#", "c", WM_NBHD_NONE, true, 3);
    add("$share/g/t/#", "d", n2, false, 4);
    uint32_t pe[6];
    for (int i = 0; i < 6; i++) {
        char b[16];
        snprintf(b, sizeof b, "p%d", i);
        pe[i] = wm_matcher_peid_find(F.m, b, strlen(b)); /* p4 is unknown: WM_PEID_NONE */
    }
    enum { N = 40 };
    wm_match_pub pubs[N];
    wm_match_result res[N];
    uint32_t bufs[N][3][CAP];
    wm_match_group gbufs[N][CAP];
    const char *topics[] = { "t/a", "t/b", "u" };
    for (int i = 0; i < N; i++) {
        pubs[i] = (wm_match_pub){ .topic = topics[i % 3], .topic_len = strlen(topics[i % 3]), .peids = &pe[i % 6],
                                  .n_peids = (uint32_t)(i % 2), .client = i % 4 ? "c" : NULL, .client_len = 1 };
        res[i] = (wm_match_result){ bufs[i][0], CAP, bufs[i][1], CAP, gbufs[i], CAP, 0, 0, 0 };
    }
    wm_matcher_status sts[N];
    cr_assert_eq(wm_matcher_lookup_burst(F.r, pubs, N, res, sts), 0);
    long total = 0;
    for (int i = 0; i < N; i++) {
        wm_match_result one = { bufs[i][2], CAP, F.members, CAP, F.groups, CAP, 0, 0, 0 };
        cr_assert_eq(wm_matcher_lookup(F.r, &pubs[i], &one), WM_MATCHER_OK);
        cr_assert_eq(sts[i], WM_MATCHER_OK);
        cr_assert_eq(res[i].n_subs, one.n_subs, "publication %d", i);
        cr_assert_eq(res[i].n_members, one.n_members, "publication %d", i);
        cr_assert_arr_eq(res[i].subs, one.subs, one.n_subs * sizeof(uint32_t));
        cr_assert_arr_eq(res[i].members, F.members, one.n_members * sizeof(uint32_t));
        total += one.n_subs + one.n_members;
    }
    cr_assert_gt(total, N / 2, "the burst must actually match things");
}

/* A filter of 63 levels, 62 distinct to i, then last ("+" or "#" or a name). */
static const char *deep_filter(char *buf, size_t cap, int i, const char *last)
{
    size_t k = 0;
    for (int l = 0; l < 62; l++) k += (size_t)snprintf(buf + k, cap - k, "l%d_%d/", i, l);
    snprintf(buf + k, cap - k, "%s", last);
    return buf;
}

/* REVIEW14 finding 4: the trie's default bound scales with the levels a
 * filter can take (until 2026-12-02 it was max_filters: at max_subs 2,000
 * the 32nd distinct 63-level filter was refused, and as E_NOMEM), and a
 * full trie says E_FULL_NODES and leaves the trie as it was. */
Test(matcher_bounds, deep_filters_fit_the_default_trie_and_a_full_one_says_so)
{
    wm_matcher_config cfg = { .max_subs = 2000 };
    setup_cfg(&cfg);
    cr_expect_eq(wm_matcher_get_config(F.m)->max_trie_nodes, 2000 * WM_MATCHER_TRIE_NODES_PER_FILTER);
    char f[1024];
    uint32_t s;
    wm_matcher_error e;
    for (int i = 0; i < 100; i++)
        cr_assert_eq(add_full(deep_filter(f, sizeof f, i, "+"), "c", WM_NBHD_NONE, false, (uint64_t)i, &s, &e), WM_MATCHER_OK,
                     "filter %d: %s", i, wm_matcher_status_name(e.status));
    wm_matcher_stats st;
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.trie_nodes, 100 * 63);
    teardown();

    cfg = (wm_matcher_config){ .max_subs = 2000, .max_trie_nodes = 2000 };
    setup_cfg(&cfg);
    int i = 0;
    wm_matcher_status rc;
    while ((rc = add_full(deep_filter(f, sizeof f, i, "+"), "c", WM_NBHD_NONE, false, (uint64_t)i, &s, &e)) == WM_MATCHER_OK) i++;
    cr_expect_eq(i, 31, "31 x 63 = 1,953 nodes fit 2,000");
    cr_expect_eq(rc, WM_MATCHER_E_FULL_NODES, "%s", wm_matcher_status_name(rc));
    wm_matcher_stats_get(F.m, &st);
    cr_expect_eq(st.trie_nodes, 31 * 63, "the refused filter's nodes went back");
    teardown();
}

/* wm_matcher_trie_cost is exactly what an add then takes from the trie. */
Test(matcher_bounds, trie_cost_is_what_the_add_takes)
{
    setup();
    static const char *filters[] = {
        "a/b/c",            /* wildcard-free: the exact table's */
        "a/b/+",            /* 3 new */
        "a/b/+",            /* held already: 0 */
        "a/b/+/d",          /* 1 below a/b/+ */
        "a/#",              /* '#' takes none, "a" is there */
        "$share/g/a/x/+",   /* the inner filter: x, + new */
        "$share/h/a/x/+",   /* same inner filter, another group: held */
        "#",                /* none */
        "+/+/+",            /* 3 */
        "bad/#/x",          /* invalid: 0, refused by the add */
    };
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        wm_matcher_stats st;
        wm_matcher_stats_get(F.m, &st);
        uint32_t cost = wm_matcher_trie_cost(F.m, filters[i], strlen(filters[i]));
        uint32_t s;
        wm_matcher_error e;
        add_full(filters[i], "c", WM_NBHD_NONE, false, i, &s, &e);
        uint32_t before = st.trie_nodes;
        wm_matcher_stats_get(F.m, &st);
        cr_expect_eq(cost, st.trie_nodes - before, "%s: cost %u, took %u", filters[i], cost, st.trie_nodes - before);
    }
    cr_expect_eq(wm_matcher_trie_cost(F.m, "a/b/+", 5), 0);
    cr_expect_eq(wm_matcher_trie_cost(F.m, "q/r/s/+", 7), 4);
    teardown();
}
