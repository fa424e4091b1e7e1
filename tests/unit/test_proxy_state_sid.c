/* Proxy Subscription Identifiers across kills of the proxy with --state
 * (dataplane/proxy_registry.h wm_proxy_registry_session_sid,
 * dataplane/proxy_state.h): an identifier is handed out only below the
 * ceiling the file on disk holds for its session, so a process that loads
 * whatever file a kill left never hands out one handed out before (REVIEW7
 * #12: the broker then held two subscriptions under one identifier), and a
 * session that handed out nothing spends nothing (REVIEW8 #4: every kill
 * moved every session 2^20 on, so 16 kills used up a session's 16,777,215).
 * The "kill" here is loading the file as it is on disk at a random point of
 * a random sequence of hand-outs, syncs of the saver's mirror and writes. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

#define CID(s) (const uint8_t *)(s), (uint32_t)strlen(s)

static void none(void *ctx, const wm_proxy_saved_sub *r) { (void)ctx; (void)r; }

static char *tmp_path(void)
{
    char dir[] = "/tmp/wm_state_sid_XXXXXX";
    cr_assert(mkdtemp(dir));
    char *p = malloc(strlen(dir) + 16);
    sprintf(p, "%s/s.state", dir);
    return p;
}

static void tmp_free(char *path)
{
    unlink(path);
    *strrchr(path, '/') = 0;
    rmdir(path);
    free(path);
}

/* What a process started on the file at path hands out first for cid: the
 * file loaded (clean or not, as written) into a registry without saver. */
static uint32_t first_after_load(const char *path, const char *cid, bool *clean)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
    wm_proxy_state_info info;
    char err[512];
    cr_assert_eq(wm_proxy_state_load(path, g, &info, err, sizeof err), 0, "%s", err);
    cr_assert(info.found);
    *clean = info.clean;
    wm_proxy_session_ref r = wm_proxy_registry_session_attach(g, NULL, CID(cid), false, true, none, NULL);
    uint32_t sid = 0;
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID(cid), r.gen, 0, &sid), WM_PROXY_SID_OK);
    wm_proxy_registry_free(g);
    return sid;
}

/* The saver's write while running, as wm_proxy_state_tick makes it. */
static void save(wm_proxy_state_saver *sv)
{
    char err[512];
    wm_proxy_registry_sid_urgent_clear(sv->g);
    cr_assert_eq(wm_proxy_state_sync(sv->mirror), 0);
    cr_assert_eq(wm_proxy_state_write(sv->path, sv->mirror, sv->epoch, false, err, sizeof err), 0, "%s", err);
    wm_proxy_registry_ceilings_saved(sv->g);
}

Test(proxy_state_sid, no_identifier_is_handed_out_at_or_past_the_saved_ceiling_and_a_kill_never_gives_one_again)
{
    char *path = tmp_path(), err[512];
    unsigned seed = 12345;
    for (int round = 0; round < 10; round++) {
        unlink(path);
        wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
        wm_proxy_state_saver sv;
        cr_assert_eq(wm_proxy_state_start(&sv, path, 7, g, err, sizeof err), 0, "%s", err);
        uint64_t gen = wm_proxy_registry_session_attach(g, NULL, CID("d"), true, true, none, NULL).gen;
        uint32_t top = 0;      /* the highest identifier handed out, 0 none */
        bool any = false, waited = false;
        for (int op = 0; op < 2000; op++) {
            unsigned k = (unsigned)rand_r(&seed) % 100;
            if (k < 90) {
                uint32_t sid = 0;
                wm_proxy_sid_status st = wm_proxy_registry_session_sid(g, NULL, CID("d"), gen, 0, &sid);
                bool clean;
                /* the file on disk now: where a process started on it would begin */
                uint32_t disk = any || st == WM_PROXY_SID_OK ? first_after_load(path, "d", &clean) : 0;
                if (st == WM_PROXY_SID_OK) {
                    cr_assert(sid < disk, "round %d: identifier %u handed out, the file holds %u", round, sid, disk);
                    cr_assert(!any || sid == top + 1, "in order: %u after %u", sid, top);
                    top = sid;
                    any = true;
                } else {
                    cr_assert_eq(st, WM_PROXY_SID_WAIT);
                    cr_assert(wm_proxy_registry_sid_urgent(g), "a wait asks for a save");
                    waited = true;
                }
            } else if (k < 95) {
                /* taken by the mirror, not written: not on disk yet */
                cr_assert_eq(wm_proxy_state_sync(sv.mirror), 0);
            } else {
                save(&sv);
            }
            if (any && k % 7 == 0) {
                /* a kill now: the next process starts past every one handed out */
                bool clean;
                uint32_t next = first_after_load(path, "d", &clean);
                cr_assert_not(clean);
                cr_assert(next > top, "round %d: after a kill %u is handed out again (top %u)", round, next, top);
            }
        }
        cr_assert(waited, "round %d: the reservation ran out at least once", round);
        wm_proxy_state_stop(&sv);
        wm_proxy_registry_free(g);
    }
    tmp_free(path);
}

/* A file written while running holds the ceiling, not a margin: loading it
 * again and again (kills with nothing handed out between) leaves the
 * session's next identifier where it was; each kill after one that handed
 * out identifiers costs at most WM_PROXY_SID_RESERVE; a clean stop writes
 * the exact next one. */
Test(proxy_state_sid, kills_cost_an_unchanged_session_nothing_and_a_subscribing_one_at_most_the_reservation)
{
    char *path = tmp_path(), err[512];
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "wirematch-proxy-state 2\nepoch 7\nclean 0\nsession d %u 1 never\nsub a/# %u X1 -\nend 1 1\n",
            WM_PROXY_SID_BASE + 10, WM_PROXY_SID_BASE + 9);
    fclose(f);
    uint32_t next = WM_PROXY_SID_BASE + 10;
    for (int kill = 0; kill < 20; kill++) {
        wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
        wm_proxy_state_saver sv;
        cr_assert_eq(wm_proxy_state_start(&sv, path, 7, g, err, sizeof err), 0, "%s", err);
        wm_proxy_session_ref r = wm_proxy_registry_session_attach(g, NULL, CID("d"), false, true, none, NULL);
        cr_assert_eq(r.sid_next, next, "kill %d: %u, want %u", kill, r.sid_next, next);
        if (kill % 2) {
            /* one filtered SUBSCRIBE: waits for the reservation, then gets the next one */
            uint32_t sid = 0;
            cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), r.gen, 0, &sid), WM_PROXY_SID_WAIT);
            save(&sv);
            cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), r.gen, 0, &sid), WM_PROXY_SID_OK);
            cr_assert_eq(sid, next);
            next += WM_PROXY_SID_RESERVE;
        }
        wm_proxy_registry_session_detach(g, NULL, CID("d"), r.gen, UINT64_MAX);
        save(&sv);
        wm_proxy_state_stop(&sv);   /* killed: no clean save */
        wm_proxy_registry_free(g);
    }
    /* a clean stop after one more hand-out: exact, nothing reserved is spent */
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
    wm_proxy_state_saver sv;
    cr_assert_eq(wm_proxy_state_start(&sv, path, 7, g, err, sizeof err), 0, "%s", err);
    wm_proxy_session_ref r = wm_proxy_registry_session_attach(g, NULL, CID("d"), false, true, none, NULL);
    uint32_t sid = 0;
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), r.gen, 0, &sid), WM_PROXY_SID_WAIT);
    save(&sv);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), r.gen, 0, &sid), WM_PROXY_SID_OK);
    wm_proxy_registry_session_detach(g, NULL, CID("d"), r.gen, UINT64_MAX);
    cr_assert_eq(wm_proxy_state_tick(&sv, true), 0);
    wm_proxy_state_stop(&sv);
    wm_proxy_registry_free(g);
    bool clean;
    cr_assert_eq(first_after_load(path, "d", &clean), sid + 1);
    cr_assert(clean);
    tmp_free(path);
}

/* Without a saver (no --state) nothing waits: the entry numbers on. */
Test(proxy_state_sid, without_a_saver_identifiers_are_handed_out_in_order_up_to_the_range_end)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
    uint64_t gen = wm_proxy_registry_session_attach(g, NULL, CID("d"), true, true, none, NULL).gen;
    uint32_t sid = 0;
    for (uint32_t i = 0; i < 3 * WM_PROXY_SID_RESERVE; i++) {
        cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), gen, 0, &sid), WM_PROXY_SID_OK);
        cr_assert_eq(sid, WM_PROXY_SID_BASE + i);
    }
    /* the connection's own floor raises the entry's */
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), gen, WM_PROXY_SID_PLAIN - 1, &sid), WM_PROXY_SID_OK);
    cr_assert_eq(sid, WM_PROXY_SID_PLAIN - 1);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), gen, 0, &sid), WM_PROXY_SID_NONE_LEFT);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), gen + 1, 0, &sid), WM_PROXY_SID_STALE);
    wm_proxy_registry_free(g);
}

static void count_urgent(void *ctx) { (*(int *)ctx)++; }

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* While saves fail (REVIEW9 #1: FILE.tmp unwritable, as on a full or
 * read-only disk), a hand-out that needs a reservation waits only until
 * saves have failed for WM_PROXY_STATE_UNWRITABLE_NS: then the waiter is
 * woken and it, and every later one, is answered UNSAVED (nothing handed
 * out past the file's ceiling); the first save that lands again carries the
 * reservation asked for meanwhile, so the next hand-out needs no wait. The
 * saver's thread is told once per hand-out that makes the registry urgent. */
Test(proxy_state_sid, failing_saves_answer_unsaved_after_the_bound_and_a_landed_save_ends_it)
{
    char *path = tmp_path(), err[512];
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 16, 8);
    wm_proxy_state_saver sv;
    cr_assert_eq(wm_proxy_state_start(&sv, path, 7, g, err, sizeof err), 0, "%s", err);
    int told = 0;
    wm_proxy_registry_on_urgent(g, count_urgent, &told);
    (void)wm_proxy_registry_sid_wake(g);   /* (the start's save: seen, nobody waited) */
    cr_assert_eq(mkdir(tmp, 0700), 0);
    uint64_t d = wm_proxy_registry_session_attach(g, NULL, CID("d"), true, true, none, NULL).gen;
    uint64_t e = wm_proxy_registry_session_attach(g, NULL, CID("e"), true, true, none, NULL).gen;
    uint32_t sid = 0;
    uint64_t t0 = mono_ms();
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), d, 0, &sid), WM_PROXY_SID_WAIT);
    cr_assert_eq(told, 1);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), d, 0, &sid), WM_PROXY_SID_WAIT);
    cr_assert_eq(told, 1, "told once until the saver takes it");
    /* the saver's ticks, as its thread makes them: failing */
    while (!sv.unwritable && mono_ms() - t0 < 10000) {
        (void)wm_proxy_state_tick(&sv, false);
        if (!sv.unwritable) cr_assert_not(wm_proxy_registry_sid_wake(g), "no news while saves fail");
        usleep(20000);
    }
    uint64_t waited = mono_ms() - t0;
    cr_assert(sv.unwritable, "saves failed for 10 s and the registry was not told");
    cr_assert(waited >= WM_PROXY_STATE_UNWRITABLE_NS / 1000000, "told after %llu ms", (unsigned long long)waited);
    cr_assert(sv.save_errors >= 2);
    cr_assert(wm_proxy_registry_sid_wake(g), "the waiter is woken to get its answer");
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), d, 0, &sid), WM_PROXY_SID_UNSAVED);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("e"), e, 0, &sid), WM_PROXY_SID_UNSAVED);
    cr_assert_not(wm_proxy_registry_sid_wake(g), "nobody waits");
    /* repaired: the next attempt lands */
    cr_assert_eq(rmdir(tmp), 0);
    for (int i = 0; i < 400 && sv.failing; i++) {   /* (the backoff: the next try is at most 5 s away) */
        (void)wm_proxy_state_tick(&sv, false);
        usleep(20000);
    }
    cr_assert_not(sv.failing);
    cr_assert_not(sv.unwritable);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("d"), d, 0, &sid), WM_PROXY_SID_OK);
    cr_assert_eq(sid, WM_PROXY_SID_BASE);
    cr_assert_eq(wm_proxy_registry_session_sid(g, NULL, CID("e"), e, 0, &sid), WM_PROXY_SID_OK);
    wm_proxy_registry_on_urgent(g, NULL, NULL);
    wm_proxy_state_stop(&sv);
    wm_proxy_registry_free(g);
    tmp_free(path);
}
