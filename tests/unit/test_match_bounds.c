/* The data plane match table's bounds on deep topic filters (REVIEW14
 * finding 4; match_sink.h "Bounds"): the wildcard trie is sized per level,
 * not per subscription, a load it cannot hold names the option to raise,
 * and each client's learned subscriptions get a share of the trie so one
 * client subscribing deep distinct filters cannot fill it for every later
 * subscriber. Real match table and matcher, subscriptions through the sink
 * the MQTT session layer calls. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/match_sink.h"
#include "matcher/matcher.h"

/* A wildcard filter of 63 levels, 62 of them distinct to (tag, i), and '+'. */
static const char *deep(char *buf, size_t cap, const char *tag, int i)
{
    size_t k = 0;
    for (int l = 0; l < 62; l++) k += (size_t)snprintf(buf + k, cap - k, "%s%d_%d/", tag, i, l);
    snprintf(buf + k, cap - k, "+");
    return buf;
}

static enum wm_mqtt_sub_status sub(struct wm_mqtt_sink *sk, const char *client, const char *filter, bool unsub)
{
    struct wm_mqtt_subscribe s = { client, (uint32_t)strlen(client),
                                   { (const uint8_t *)filter, (uint32_t)strlen(filter) }, 0, { 0 }, { 0 }, 1, false, 0 };
    if (unsub) {
        sk->unsubscribe(sk->ctx, &s);
        return WM_MQTT_SUB_INSTALLED;
    }
    return sk->subscribe(sk->ctx, &s);
}

static struct wm_match_counters counters(struct wm_match_table *t)
{
    struct wm_match_counters c;
    wm_match_table_counters(t, &c);
    return c;
}

/* A table of bounds b and one worker's sink into it. */
static struct wm_match_table *open_table(struct wm_match_bounds b, struct wm_match_worker **w, struct wm_mqtt_sink *sk)
{
    wm_load_error le;
    char err[256];
    struct wm_match_table *t = wm_match_table_new_bounded(NULL, NULL, NULL, &b, &le);
    cr_assert(t, "%s", le.reason);
    *w = wm_match_worker_new(t, NULL, err, sizeof err);
    cr_assert(*w, "%s", err);
    *sk = wm_match_worker_sink(*w);
    return t;
}

Test(match_bounds, one_client_cannot_fill_the_trie_for_the_others)
{
    char f[1024];
    struct wm_match_worker *w;
    struct wm_mqtt_sink sk;
    struct wm_match_table *t =
        open_table((struct wm_match_bounds){ .max_subs = 1000, .max_trie_nodes = 1000, .client_trie_nodes = 200 }, &w, &sk);
    /* the hog: 63 nodes a filter, 3 fit its 200, the other 17 are refused */
    int installed = 0, quota = 0;
    for (int i = 0; i < 20; i++) {
        enum wm_mqtt_sub_status st = sub(&sk, "hog", deep(f, sizeof f, "h", i), false);
        installed += st == WM_MQTT_SUB_INSTALLED;
        quota += st == WM_MQTT_SUB_QUOTA;
    }
    cr_expect_eq(installed, 3);
    cr_expect_eq(quota, 17);
    struct wm_match_counters c = counters(t);
    cr_expect_eq(c.subs_quota, 17);
    cr_expect_eq(c.trie_nodes, 3 * 63);
    cr_expect_eq(c.trie_nodes_max, 1000);
    cr_expect_eq(c.client_trie_nodes, 200);
    /* every later subscriber still has room: 12 more filters of 63 nodes */
    for (int k = 0; k < 4; k++) {
        char client[16];
        snprintf(client, sizeof client, "c%d", k);
        for (int i = 0; i < 3; i++)
            cr_expect_eq(sub(&sk, client, deep(f, sizeof f, client, i), false), WM_MQTT_SUB_INSTALLED, "%s %d", client, i);
    }
    cr_expect_eq(counters(t).trie_nodes, 15 * 63);
    /* a re-SUBSCRIBE of a filter the hog holds (§3.8.4) takes no new node */
    cr_expect_eq(sub(&sk, "hog", deep(f, sizeof f, "h", 0), false), WM_MQTT_SUB_INSTALLED);
    cr_expect_eq(counters(t).subs_replaced, 1);
    /* a filter below one it holds is charged only its new level */
    char g[1100];
    snprintf(g, sizeof g, "%s", deep(f, sizeof f, "h", 1));
    g[strlen(g) - 1] = 0;
    strcat(g, "x/#"); /* 62 levels shared, "x" new, '#' takes none */
    cr_expect_eq(sub(&sk, "hog", g, false), WM_MQTT_SUB_INSTALLED);
    cr_expect_eq(counters(t).trie_nodes, 15 * 63 + 1);
    /* an UNSUBSCRIBE gives its share back */
    cr_expect_eq(sub(&sk, "hog", deep(f, sizeof f, "h", 5), false), WM_MQTT_SUB_QUOTA);
    sub(&sk, "hog", deep(f, sizeof f, "h", 2), true);
    cr_expect_eq(sub(&sk, "hog", deep(f, sizeof f, "h", 5), false), WM_MQTT_SUB_INSTALLED);
    /* wildcard-free filters take no trie node: never refused for the share */
    for (int i = 0; i < 10; i++) {
        snprintf(g, sizeof g, "%s", deep(f, sizeof f, "e", i));
        g[strlen(g) - 1] = 'z';
        cr_expect_eq(sub(&sk, "hog", g, false), WM_MQTT_SUB_INSTALLED);
    }
    /* the share is per client: c0 holds 189 of its own 200 */
    cr_expect_eq(sub(&sk, "c0", deep(f, sizeof f, "c0", 3), false), WM_MQTT_SUB_QUOTA);
    c = counters(t);
    cr_expect_eq(c.subs_trie_full, 0);
    cr_expect_eq(c.subs_full, 0);
    wm_match_worker_free(w);
    wm_match_table_free(t);
}

Test(match_bounds, a_full_trie_is_counted_as_such)
{
    /* a share as large as the trie: the trie's own bound refuses */
    char f[1024];
    struct wm_match_worker *w;
    struct wm_mqtt_sink sk;
    struct wm_match_table *t =
        open_table((struct wm_match_bounds){ .max_subs = 1000, .max_trie_nodes = 200, .client_trie_nodes = 200 }, &w, &sk);
    for (int i = 0; i < 3; i++) cr_expect_eq(sub(&sk, "a", deep(f, sizeof f, "a", i), false), WM_MQTT_SUB_INSTALLED);
    cr_expect_eq(sub(&sk, "b", deep(f, sizeof f, "b", 0), false), WM_MQTT_SUB_FULL);
    struct wm_match_counters c = counters(t);
    cr_expect_eq(c.subs_trie_full, 1);
    cr_expect_eq(c.subs_full, 0, "not --max-subs");
    cr_expect_eq(c.trie_nodes, 3 * 63, "the refused filter's nodes went back");
    wm_match_worker_free(w);
    wm_match_table_free(t);
}

Test(match_bounds, defaults_scale_with_levels)
{
    struct wm_match_bounds b = { .max_subs = 2000 };
    wm_match_bounds_resolve(&b);
    cr_expect_eq(b.max_trie_nodes, 2000 * WM_MATCHER_TRIE_NODES_PER_FILTER);
    cr_expect_eq(b.client_trie_nodes, b.max_trie_nodes / WM_MATCH_CLIENT_TRIE_SHARE);
    b = (struct wm_match_bounds){ .max_subs = 10 };
    wm_match_bounds_resolve(&b);
    cr_expect_eq(b.client_trie_nodes, WM_MATCH_CLIENT_TRIE_MIN);
    b = (struct wm_match_bounds){ .max_subs = 1u << 24, .max_trie_nodes = 7, .client_trie_nodes = 3 };
    wm_match_bounds_resolve(&b);
    cr_expect(b.max_trie_nodes == 7 && b.client_trie_nodes == 3, "given bounds stay");
}

/* The reviewer's deep100.jsonl: 100 preloaded filters of 63 distinct
 * levels at --max-subs 2000 (refused at line 32 as "out of memory [nomem]"
 * before 2026-12-02); at a trie bound too small, the refusal says full and
 * names the option. */
Test(match_bounds, deep_preloaded_filters_fit_or_name_the_option)
{
    char dir[] = "/tmp/wm_match_bounds_XXXXXX", path[128], f[1024];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/deep.jsonl", dir);
    FILE *o = fopen(path, "w");
    cr_assert(o);
    for (int i = 0; i < 100; i++) fprintf(o, "{\"id\": %d, \"client\": \"c\", \"filter\": \"%s\"}\n", i, deep(f, sizeof f, "l", i));
    fclose(o);
    wm_load_error le;
    struct wm_match_table *t = wm_match_table_new(NULL, path, NULL, 2000, &le);
    cr_expect(t, "%s:%lu: %s", le.file, le.line, le.reason);
    if (t) cr_expect_eq(counters(t).trie_nodes, 100 * 63);
    wm_match_table_free(t);
    struct wm_match_bounds b = { .max_subs = 2000, .max_trie_nodes = 3000 };
    t = wm_match_table_new_bounded(NULL, path, NULL, &b, &le);
    cr_expect_null(t);
    cr_expect_eq(le.line, 48, "47 filters hold 2,961 nodes");
    cr_expect_str_eq(le.reason, "wildcard trie full (max_trie_nodes) [full_nodes]: raise --max-trie-nodes (now 3000)");
    wm_match_table_free(t);
    unlink(path);
    rmdir(dir);
}
