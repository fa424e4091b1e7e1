/* The session table of the proxy's registry (dataplane/proxy_registry.h),
 * without --prefilter (no matcher): what a connection resuming a session is
 * handed back, fresh starts, expiry, staleness of a dropped entry, bounds.
 * With --prefilter: registrations carried into a reloaded file's matcher by
 * neighborhood name (wm_proxy_registry_rebind). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_spatial.h"
#include "tests/lib/proxy_wire.h"
#include "tests/lib/reload_fixture.h"

typedef struct got {
    int n;
    char filter[8][32];
    uint32_t sid[8];
    char nbhd[8][16];
} got;

static void collect(void *ctx, const wm_proxy_saved_sub *r)
{
    got *g = ctx;
    cr_assert_lt(g->n, 8);
    memcpy(g->filter[g->n], r->filter, r->filter_len);
    g->filter[g->n][r->filter_len] = 0;
    g->sid[g->n] = r->sid;
    strcpy(g->nbhd[g->n], r->nbhd ? r->nbhd : "-");
    g->n++;
}

#define CID(s) (const uint8_t *)(s), (uint32_t)strlen(s)

static wm_proxy_session_ref attach(wm_proxy_registry *g, const char *cid, bool fresh, bool keep, got *out)
{
    memset(out, 0, sizeof *out);
    return wm_proxy_registry_session_attach(g, NULL, CID(cid), fresh, keep, collect, out);
}

static bool put(wm_proxy_registry *g, const char *cid, uint64_t gen, const char *filter, uint32_t sid, const char *nbhd)
{
    wm_proxy_saved_sub r = { filter, (uint32_t)strlen(filter), sid, nbhd, WM_SUB_NONE, NULL };
    return wm_proxy_registry_session_put(g, NULL, CID(cid), gen, &r);
}

Test(proxy_registry, a_resumed_session_gets_its_records_back_replaced_and_unsubscribed_ones_as_they_are)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    got o;
    wm_proxy_session_ref r = attach(g, "c1", true, true, &o);
    cr_assert_neq(r.gen, 0);
    cr_assert(r.complete);
    cr_assert_eq(r.sid_next, WM_PROXY_SID_BASE);
    cr_assert(put(g, "c1", r.gen, "a/#", WM_PROXY_SID_BASE, "N1"));
    cr_assert(put(g, "c1", r.gen, "b/#", WM_PROXY_SID_BASE + 1, "N2"));
    cr_assert(put(g, "c1", r.gen, "c", 9, NULL));
    cr_assert(put(g, "c1", r.gen, "a/#", WM_PROXY_SID_BASE + 2, "N2"));   /* same filter: replaces (§3.8.4) */
    cr_assert(put(g, "c1", r.gen, "p", WM_PROXY_SID_PLAIN, NULL));
    wm_proxy_registry_session_del(g, NULL, CID("c1"), r.gen, "c", 1);
    wm_proxy_registry_session_del(g, NULL, CID("c1"), r.gen, "p", 1);
    wm_proxy_registry_session_detach(g, NULL, CID("c1"), r.gen, UINT64_MAX);
    wm_proxy_session_ref r2 = attach(g, "c1", false, true, &o);
    cr_assert_eq(r2.gen, r.gen);
    /* the replaced and removed records had proxy identifiers or no filter:
     * nothing they leave behind can be taken for another's */
    cr_assert(r2.complete);
    cr_assert_eq(r2.sid_next, WM_PROXY_SID_BASE + 3, "never hand out an identifier the session used");
    cr_assert_eq(o.n, 2);
    int a = strcmp(o.filter[0], "a/#") == 0 ? 0 : 1;
    cr_assert_str_eq(o.filter[a], "a/#");
    cr_assert_eq(o.sid[a], WM_PROXY_SID_BASE + 2);
    cr_assert_str_eq(o.nbhd[a], "N2");
    cr_assert_str_eq(o.filter[1 - a], "b/#");
    cr_assert_eq(o.sid[1 - a], WM_PROXY_SID_BASE + 1);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_restored, 1);
    cr_assert_eq(st.sessions_live, 1);
    wm_proxy_registry_free(g);
}

/* A filtered record with the client's own identifier replaced (as by an
 * UNSUBSCRIBE): the broker's deliveries queued under that identifier could
 * be taken for a plain subscription's, so the session is not vouched for. */
Test(proxy_registry, replacing_a_filtered_record_with_a_client_identifier_makes_the_session_incomplete)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    got o;
    wm_proxy_session_ref r = attach(g, "c1", true, true, &o);
    cr_assert(put(g, "c1", r.gen, "a/#", 5, "N1"));
    cr_assert(put(g, "c1", r.gen, "a/#", 6, "N2"));
    wm_proxy_registry_session_detach(g, NULL, CID("c1"), r.gen, UINT64_MAX);
    wm_proxy_session_ref r2 = attach(g, "c1", false, true, &o);
    cr_assert_not(r2.complete);
    wm_proxy_registry_free(g);
}

Test(proxy_registry, a_fresh_start_drops_the_records_and_a_stale_connection_changes_nothing)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    got o;
    wm_proxy_session_ref old = attach(g, "c1", true, true, &o);
    cr_assert(put(g, "c1", old.gen, "a/#", 5, NULL));
    /* A take-over with Clean Start 1 while the old connection is still there. */
    wm_proxy_session_ref nw = attach(g, "c1", true, true, &o);
    cr_assert_eq(o.n, 0);
    cr_assert_neq(nw.gen, old.gen);
    cr_assert_not(put(g, "c1", old.gen, "z/#", 1, NULL), "the old connection's entry is gone");
    wm_proxy_registry_session_detach(g, NULL, CID("c1"), old.gen, 0);
    cr_assert(put(g, "c1", nw.gen, "b/#", 7, "N1"));
    wm_proxy_registry_session_detach(g, NULL, CID("c1"), nw.gen, UINT64_MAX);
    attach(g, "c1", false, true, &o);
    cr_assert_eq(o.n, 1);
    cr_assert_str_eq(o.filter[0], "b/#");
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_dropped, 1);
    wm_proxy_registry_free(g);
}

Test(proxy_registry, unknown_or_lossy_sessions_are_incomplete_until_a_fresh_start)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 2);
    got o;
    /* Resumed, but never seen (the proxy restarted): incomplete, and stays so. */
    wm_proxy_session_ref r = attach(g, "c1", false, true, &o);
    cr_assert_neq(r.gen, 0);
    cr_assert_not(r.complete);
    wm_proxy_registry_session_detach(g, NULL, CID("c1"), r.gen, UINT64_MAX);
    cr_assert_not(attach(g, "c1", false, true, &o).complete);
    /* A record over max_subs: the entry cannot vouch for the session any more. */
    r = attach(g, "c2", true, true, &o);
    cr_assert(put(g, "c2", r.gen, "a", 1, "N1"));
    cr_assert(put(g, "c2", r.gen, "b", 2, "N1"));
    cr_assert(put(g, "c2", r.gen, "a", 3, "N1"), "a replacement needs no room");
    cr_assert_not(put(g, "c2", r.gen, "c", 4, "N1"));
    wm_proxy_registry_session_detach(g, NULL, CID("c2"), r.gen, UINT64_MAX);
    wm_proxy_session_ref r2 = attach(g, "c2", false, true, &o);
    cr_assert_not(r2.complete);
    /* Handed out all the same: each is a subscription the broker granted (only
     * the lost one is unknown, and the connection withholds what it cannot
     * attribute). */
    cr_assert_eq(o.n, 2, "the records an incomplete entry has are handed out");
    wm_proxy_registry_session_detach(g, NULL, CID("c2"), r2.gen, UINT64_MAX);
    cr_assert(attach(g, "c2", true, true, &o).complete);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.records_lost, 1);
    cr_assert_eq(st.sessions_incomplete, 3);
    wm_proxy_registry_free(g);
}

/* Entries left after an expiry scan at now_ns. */
static uint64_t live_after(wm_proxy_registry *g, uint64_t now_ns)
{
    wm_proxy_registry_stats st;
    wm_proxy_registry_reclaim(g, now_ns);
    wm_proxy_registry_stats_get(g, &st);
    return st.sessions_live;
}

static uint64_t expired(wm_proxy_registry *g)
{
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    return st.sessions_expired;
}

Test(proxy_registry, sessions_expire_after_their_last_connection_and_the_table_is_bounded)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 2, 8);
    got o;
    wm_proxy_session_ref a = attach(g, "a", true, true, &o), b = attach(g, "b", true, true, &o);
    cr_assert(a.gen && b.gen);
    wm_proxy_session_ref c = attach(g, "c", true, true, &o);
    cr_assert_eq(c.gen, 0, "table full");
    cr_assert(c.complete);
    /* No entry needed (no keep, fresh): nothing made, nothing counted. */
    cr_assert_eq(attach(g, "d", true, false, &o).gen, 0);
    /* Two connections on "a" (take-over): the session lives while one does. */
    wm_proxy_session_ref a2 = attach(g, "a", false, true, &o);
    cr_assert_eq(a2.gen, a.gen);
    wm_proxy_registry_session_detach(g, NULL, CID("a"), a.gen, 0);
    cr_assert_eq(live_after(g, 1000), 2);
    wm_proxy_registry_session_detach(g, NULL, CID("a"), a.gen, 0);   /* expiry 0: ends now */
    wm_proxy_registry_session_detach(g, NULL, CID("b"), b.gen, 5000);
    cr_assert_eq(live_after(g, 4999), 1);
    cr_assert_eq(live_after(g, 5000), 0);
    cr_assert_eq(expired(g), 2);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_full, 1);
    cr_assert_neq(attach(g, "c", true, true, &o).gen, 0, "room again");
    wm_proxy_registry_free(g);
}

Test(proxy_registry, expiry_is_found_in_every_part_of_a_large_table_once_due)
{
    /* 4096 buckets: the expiry scan walks them in several holds */
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 4096, 8);
    got o;
    char cid[32];
    for (int i = 0; i < 4000; i++) {
        snprintf(cid, sizeof cid, "e%d", i);
        wm_proxy_session_ref r = attach(g, cid, true, true, &o);
        wm_proxy_registry_session_detach(g, NULL, CID(cid), r.gen, i % 2 ? 1000 : 2000);
    }
    cr_assert_eq(live_after(g, 999), 4000);
    cr_assert_eq(live_after(g, 1000), 2000);
    cr_assert_eq(live_after(g, 1999), 2000);
    /* resumed and left again with a later expiry: the scan's bound follows */
    wm_proxy_session_ref r = attach(g, "e0", false, true, &o);
    wm_proxy_registry_session_detach(g, NULL, CID("e0"), r.gen, 3000);
    cr_assert_eq(live_after(g, 2000), 1);
    cr_assert_eq(live_after(g, 3000), 0);
    cr_assert_eq(expired(g), 4000);
    wm_proxy_registry_free(g);
}

static bool can_ct(wm_proxy_registry *g, wm_matcher_reader *rd, uint64_t gen, const char *topic, const char *peid,
                   bool content)
{
    wm_match_str p = { peid, peid ? strlen(peid) : 0 };
    return wm_proxy_registry_receivable(g, rd, gen, (wm_mqtt5_bytes){ (const uint8_t *)topic, (uint32_t)strlen(topic) },
                                        &p, peid ? 1 : 0, content);
}

static bool can(wm_proxy_registry *g, wm_matcher_reader *rd, uint64_t gen, const char *topic, const char *peid)
{
    return can_ct(g, rd, gen, topic, peid, true);
}

#define BYTES(s) (wm_mqtt5_bytes){ (const uint8_t *)(s), (uint32_t)strlen(s) }

Test(proxy_registry, prefilter_registrations_follow_a_rebind_by_neighborhood_name)
{
    static const char *const a1[] = { "sq1", "p_in", NULL }, *const b1[] = { "far", NULL };
    static const char *const a2[] = { "far", NULL }, *const c2[] = { "sq1", NULL };
    const wm_test_nbhd f1[] = { { "N1", a1 }, { "N2", b1 } }, f2[] = { { "N1", a2 }, { "N3", c2 } };
    wm_proxy_spatial *sp1 = wm_test_proxy_spatial("1.wmr", f1, 2), *sp2 = wm_test_proxy_spatial("2.wmr", f2, 2);
    wm_proxy_registry *g = wm_proxy_registry_new(wm_proxy_spatial_matcher(sp1), 8, 8);
    uint64_t gen, gen2;
    wm_matcher_reader *rd = wm_proxy_registry_reader(g, &gen);
    cr_assert(rd);
    uint32_t h1 = wm_proxy_registry_add(g, rd, BYTES("a/#"), "N1", false, NULL);
    uint32_t h2 = wm_proxy_registry_add(g, rd, BYTES("b/#"), "N2", false, NULL);
    uint32_t h3 = wm_proxy_registry_add(g, rd, BYTES("c"), NULL, false, NULL);
    cr_assert(h1 != WM_SUB_NONE && h2 != WM_SUB_NONE && h3 != WM_SUB_NONE);
    cr_assert(can(g, rd, gen, "a/x", "sq1") && !can(g, rd, gen, "a/x", "far"));
    cr_assert(can(g, rd, gen, "b/x", "far") && can(g, rd, gen, "c", NULL) && !can(g, rd, gen, "d", NULL));
    /* Without content filters, a publication no content filter could select counts the same. */
    cr_assert(can_ct(g, rd, gen, "a/x", "sq1", false) && can_ct(g, rd, gen, "c", NULL, false));
    /* A content-filtered registration counts only for a publication some content filter could select;
     * a shared one always (it cannot be skipped by No Local). */
    uint32_t h5 = wm_proxy_registry_add(g, rd, BYTES("e/#"), NULL, true, NULL);
    uint32_t h6 = wm_proxy_registry_add(g, rd, BYTES("$share/g/f/#"), NULL, true, NULL);
    cr_assert(can_ct(g, rd, gen, "e/x", NULL, true) && !can_ct(g, rd, gen, "e/x", NULL, false));
    cr_assert(can_ct(g, rd, gen, "f/x", NULL, true) && can_ct(g, rd, gen, "f/x", NULL, false));

    uint32_t gone = 99;
    char err[256];
    cr_assert_eq(wm_proxy_registry_rebind(g, wm_proxy_spatial_matcher(sp2), &gone, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gone, 1);   /* b/# by N2, which the second file lacks */
    /* A reader of the replaced matcher cannot tell any more: everything is receivable. */
    cr_assert(can(g, rd, gen, "a/x", "far") && can(g, rd, gen, "d", NULL));
    wm_matcher_reader_free(rd);
    rd = wm_proxy_registry_reader(g, &gen2);
    cr_assert(rd && gen2 != gen);
    cr_assert(can(g, rd, gen2, "a/x", "far") && !can(g, rd, gen2, "a/x", "sq1"), "N1 is the second file's");
    cr_assert(!can(g, rd, gen2, "b/x", "far"), "N2 is gone");
    cr_assert(can(g, rd, gen2, "c", NULL) && !can(g, rd, gen2, "d", NULL));
    cr_assert(can_ct(g, rd, gen2, "e/x", NULL, true) && !can_ct(g, rd, gen2, "e/x", NULL, false), "carried over");
    uint32_t h4 = wm_proxy_registry_add(g, rd, BYTES("d/#"), "N3", false, NULL);
    cr_assert(can(g, rd, gen2, "d/x", "sq1"));
    /* Handles taken before the rebind still name their registrations. */
    wm_proxy_registry_remove(g, rd, h2, 0);
    wm_proxy_registry_remove(g, rd, h1, 0);
    cr_assert(!can(g, rd, gen2, "a/x", "far"));
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert(st.added == 6 && st.removed == 2 && st.live == 4 && !st.broken);
    /* The first file's matcher is no longer used: closing it changes nothing. */
    wm_proxy_spatial_close(sp1);
    wm_proxy_registry_remove(g, rd, h3, 0);
    wm_proxy_registry_remove(g, rd, h4, 0);
    wm_proxy_registry_remove(g, rd, h5, 0);
    wm_proxy_registry_remove(g, rd, h6, 0);
    wm_matcher_reader_free(rd);
    wm_proxy_registry_reclaim(g, UINT64_MAX);
    wm_proxy_registry_free(g);
    wm_proxy_spatial_close(sp2);
}

Test(proxy_registry, a_restored_session_with_two_records_of_one_filter_is_refused_naming_them)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 4, 4096);
    wm_proxy_saved_session s = { CID("h"), WM_PROXY_SID_BASE, false, false, UINT64_MAX, 0, 0, false };
    /* same length, same first bytes: only the last byte tells a/b/c apart */
    wm_proxy_saved_sub r[4] = { { "x/a", 3, 1, NULL, WM_SUB_NONE, NULL }, { "x/b", 3, 2, NULL, WM_SUB_NONE, NULL },
                                { "x/c", 3, 3, "X1", WM_SUB_NONE, NULL }, { "x/b", 3, 4, NULL, WM_SUB_NONE, NULL } };
    char err[256];
    cr_assert_eq(wm_proxy_registry_session_restore(g, &s, r, 4, err, sizeof err), -1);
    cr_assert_str_eq(err, "two subscriptions of one filter (its records 2 and 4)");
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_live, 0, "nothing of a refused session is kept");
    cr_assert_eq(wm_proxy_registry_session_restore(g, &s, r, 3, err, sizeof err), 0, "%s", err);
    /* 4,096 records with distinct filters (the --max-subs-per-conn default), one duplicate among them */
    static wm_proxy_saved_sub many[4096];
    static char text[4096][16];
    for (int i = 0; i < 4096; i++) {
        int n = snprintf(text[i], sizeof text[i], "s/%d/#", (i * 2749) % 4096);
        many[i] = (wm_proxy_saved_sub){ text[i], (uint32_t)n, (uint32_t)i + 1, NULL, WM_SUB_NONE, NULL };
    }
    wm_proxy_saved_session s2 = { CID("many"), WM_PROXY_SID_BASE, false, false, UINT64_MAX, 0, 0, false };
    cr_assert_eq(wm_proxy_registry_session_restore(g, &s2, many, 4096, err, sizeof err), 0, "%s", err);
    wm_proxy_saved_session s3 = { CID("many2"), WM_PROXY_SID_BASE, false, false, UINT64_MAX, 0, 0, false };
    many[4095] = many[17];
    cr_assert_eq(wm_proxy_registry_session_restore(g, &s3, many, 4096, err, sizeof err), -1);
    cr_assert_str_eq(err, "two subscriptions of one filter (its records 18 and 4096)");
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_live, 2);
    wm_proxy_registry_free(g);
}

/* 200 sessions in a table of 256 buckets share buckets (birthday bound):
 * a fresh start of each must concern that client's entry alone, whatever
 * follows it in its bucket (REVIEW8 #1: it took over the next entry). */
Test(proxy_registry, a_fresh_start_concerns_the_client_alone_whatever_shares_its_bucket)
{
    enum { N = 200 };
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, N, 8);
    got o;
    char cid[16], filter[16];
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "c%d", i);
        snprintf(filter, sizeof filter, "old/%d", i);
        wm_proxy_session_ref r = attach(g, cid, true, true, &o);
        cr_assert(put(g, cid, r.gen, filter, WM_PROXY_SID_BASE, "N1"));
        wm_proxy_registry_session_detach(g, NULL, CID(cid), r.gen, UINT64_MAX);
    }
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "c%d", i);
        snprintf(filter, sizeof filter, "new/%d", i);
        wm_proxy_session_ref r = attach(g, cid, true, true, &o);
        cr_assert_eq(o.n, 0, "%s: a fresh start was handed %d records (%s)", cid, o.n, o.n ? o.filter[0] : "");
        cr_assert(r.complete);
        cr_assert(put(g, cid, r.gen, filter, WM_PROXY_SID_BASE, "N2"), "%s: its own entry", cid);
        wm_proxy_registry_session_detach(g, NULL, CID(cid), r.gen, UINT64_MAX);
    }
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "c%d", i);
        snprintf(filter, sizeof filter, "new/%d", i);
        wm_proxy_session_ref r = attach(g, cid, false, true, &o);
        cr_assert(r.complete, "%s", cid);
        cr_assert_eq(o.n, 1, "%s: %d records", cid, o.n);
        cr_assert_str_eq(o.filter[0], filter);
        wm_proxy_registry_session_detach(g, NULL, CID(cid), r.gen, 0);
    }
    cr_assert_eq(live_after(g, 1), 0, "an entry kept alive by an attach that was not its client's");
    wm_proxy_registry_free(g);
}

/* "P" + n x "/L" + "S": a filter or topic of n + 1 (+ S's) levels. */
static const char *levels(char *buf, const char *p, unsigned n, const char *l, const char *s)
{
    size_t k = (size_t)sprintf(buf, "%s", p);
    for (unsigned i = 0; i < n; i++) k += (size_t)sprintf(buf + k, "/%s", l);
    sprintf(buf + k, "%s", s);
    return buf;
}

Test(proxy_registry, a_filter_deeper_than_the_matcher_is_registered_as_a_superset_and_nothing_breaks)
{
    static const char *const a1[] = { "sq1", NULL };
    const wm_test_nbhd f1[] = { { "N1", a1 } };
    wm_proxy_spatial *sp = wm_test_proxy_spatial("deep.wmr", f1, 1);
    wm_proxy_registry *g = wm_proxy_registry_new(wm_proxy_spatial_matcher(sp), 8, 8);
    uint64_t gen;
    wm_matcher_reader *rd = wm_proxy_registry_reader(g, &gen);
    cr_assert(rd);
    char f[512], t[512];
    wm_matcher_status st;
    /* the matcher indexes 64 levels; these are valid MQTT filters of 65 and 66 (§4.7 sets no limit) */
    uint32_t h1 = wm_proxy_registry_add(g, rd, BYTES(levels(f, "+", 63, "l", "/+")), NULL, false, &st);
    uint32_t h2 = wm_proxy_registry_add(g, rd, BYTES(levels(f, "$share/g/c", 64, "c", "/#")), NULL, false, &st);
    uint32_t h3 = wm_proxy_registry_add(g, rd, BYTES("b/#"), "N1", false, &st);
    cr_assert(h1 != WM_SUB_NONE && h2 != WM_SUB_NONE && h3 != WM_SUB_NONE && st == WM_MATCHER_OK);
    /* what the filters match passes */
    cr_assert(can(g, rd, gen, levels(t, "x", 63, "l", "/y"), NULL));
    cr_assert(can(g, rd, gen, levels(t, "c", 64, "c", ""), NULL), "'#' matches its parent level too");
    cr_assert(can(g, rd, gen, levels(t, "c", 70, "c", ""), NULL));
    /* the superset: levels past the 63rd are not looked at */
    cr_assert(can(g, rd, gen, levels(t, "x", 62, "l", "/m/m/m"), NULL));
    /* the kept levels still decide: a different 2nd level, a '$' topic under a first-level '+' (§4.7.2) */
    cr_assert(!can(g, rd, gen, levels(t, "x/m", 62, "l", "/y"), NULL));
    cr_assert(!can(g, rd, gen, levels(t, "$x", 63, "l", "/y"), NULL));
    cr_assert(!can(g, rd, gen, levels(t, "d", 64, "c", ""), NULL));
    /* and the registry stays exact for everyone else: not broken */
    cr_assert(can(g, rd, gen, "b/x", "sq1") && !can(g, rd, gen, "b/x", "far"));
    wm_proxy_registry_stats s;
    wm_proxy_registry_stats_get(g, &s);
    cr_assert(s.widened_too_deep == 2 && s.refused == 0 && !s.broken, "widened %lu refused %lu",
              (unsigned long)s.widened_too_deep, (unsigned long)s.refused);
    wm_proxy_registry_remove(g, rd, h1, 0);
    wm_proxy_registry_remove(g, rd, h2, 0);
    cr_assert(!can(g, rd, gen, levels(t, "x", 63, "l", "/y"), NULL), "the widened registration leaves with its handle");
    wm_proxy_registry_remove(g, rd, h3, 0);
    wm_matcher_reader_free(rd);
    wm_proxy_registry_reclaim(g, UINT64_MAX);
    wm_proxy_registry_free(g);
    wm_proxy_spatial_close(sp);
}
