/* Loading the proxy's --state file (dataplane/proxy_state.h) into a session
 * registry: what a file written while running (clean 0: the proxy was
 * killed) changes in the sessions it restores. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

static const int64_t NOW_RT = 1790000000;
static const uint64_t NOW_MONO = 5000000000000ull;

static void ignore(void *ctx, const wm_proxy_saved_sub *r) { (void)ctx; (void)r; }

/* Parses a file of sessions "a" (next identifier a_next) and "b" (b_next),
 * clean as given, and returns the next identifier each resume gets. */
static void load(int clean, uint32_t a_next, uint32_t b_next, uint32_t *a, uint32_t *b)
{
    char text[512];
    int n = snprintf(text, sizeof text,
                     "wirematch-proxy-state 1\nepoch 7\nclean %d\n"
                     "session a %u 0 never\nsub x/# %u X1 -\n"
                     "session b %u 0 %lld\n"
                     "end 2 1\n",
                     clean, a_next, WM_PROXY_SID_BASE, b_next, (long long)NOW_RT + 3600);
    cr_assert(n > 0 && (size_t)n < sizeof text);
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    wm_proxy_state_info info;
    char err[256];
    cr_assert_eq(wm_proxy_state_parse(text, (size_t)n, g, NOW_RT, NOW_MONO, &info, err, sizeof err), 0, "%s", err);
    cr_assert_eq(info.sessions, 2);
    wm_proxy_session_ref ra = wm_proxy_registry_session_attach(g, NULL, (const uint8_t *)"a", 1, false, true, ignore, NULL);
    wm_proxy_session_ref rb = wm_proxy_registry_session_attach(g, NULL, (const uint8_t *)"b", 1, false, true, ignore, NULL);
    cr_assert(ra.gen && rb.gen);
    cr_assert_eq(ra.complete, clean == 1);
    *a = ra.sid_next;
    *b = rb.sid_next;
    wm_proxy_registry_free(g);
}

Test(proxy_state_load, a_clean_stop_file_numbers_on_where_the_process_stopped)
{
    uint32_t a, b;
    load(1, WM_PROXY_SID_BASE + 1, WM_PROXY_SID_BASE + 500, &a, &b);
    cr_assert_eq(a, WM_PROXY_SID_BASE + 1);
    cr_assert_eq(b, WM_PROXY_SID_BASE + 500);
}

/* The killed process may have handed out identifiers after its last save
 * (REVIEW7 #12: one given twice, deliveries duplicated): each session
 * numbers on past them, never beyond the proxy's range. */
Test(proxy_state_load, a_file_written_while_running_moves_every_session_past_what_may_be_missing)
{
    uint32_t a, b;
    load(0, WM_PROXY_SID_BASE + 1, WM_PROXY_SID_BASE + 500, &a, &b);
    cr_assert_eq(a, WM_PROXY_SID_BASE + 1 + WM_PROXY_STATE_SID_MARGIN);
    cr_assert_eq(b, WM_PROXY_SID_BASE + 500 + WM_PROXY_STATE_SID_MARGIN);
    /* near the top: none left (a SUBSCRIBE that needs one is refused, 0x97), not wrapped */
    load(0, WM_PROXY_SID_PLAIN - 5, WM_PROXY_SID_PLAIN, &a, &b);
    cr_assert_eq(a, WM_PROXY_SID_PLAIN);
    cr_assert_eq(b, WM_PROXY_SID_PLAIN);
    load(0, WM_PROXY_SID_PLAIN - WM_PROXY_STATE_SID_MARGIN - 1, WM_PROXY_SID_PLAIN - WM_PROXY_STATE_SID_MARGIN, &a, &b);
    cr_assert_eq(a, WM_PROXY_SID_PLAIN - 1);
    cr_assert_eq(b, WM_PROXY_SID_PLAIN);
}

/* The text of g's sessions as the proxy writes it (clean 1). */
static char *text_of(wm_proxy_registry *g)
{
    char *t;
    size_t n;
    wm_proxy_state_mirror *m = wm_proxy_state_mirror_new(g);
    cr_assert(m);
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    cr_assert_eq(wm_proxy_state_format(m, 7, true, NOW_RT, NOW_MONO, &t, &n), 0);
    wm_proxy_state_mirror_free(m);
    return t;
}

/* A session connected when the file was written keeps its Session Expiry
 * Interval: written "live:N", loaded as detached at the load with N s to
 * go, not as never expiring (which after crashes piled up sessions whose
 * client never came back until --max-sessions was full). */
Test(proxy_state_load, a_session_connected_at_a_kill_keeps_its_expiry_interval)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    wm_proxy_session_ref r = wm_proxy_registry_session_attach(g, NULL, (const uint8_t *)"d", 1, true, true, ignore, NULL);
    cr_assert(r.gen);
    char *t = text_of(g);
    cr_assert(strstr(t, "\nsession d 251658240 0 live\n"), "%s", t);   /* interval not known yet */
    free(t);
    wm_proxy_registry_session_interval(g, NULL, (const uint8_t *)"d", 1, r.gen, 600);
    wm_proxy_registry_session_interval(g, NULL, (const uint8_t *)"d", 1, r.gen + 1, 9); /* stale: ignored */
    t = text_of(g);
    cr_assert(strstr(t, "\nsession d 251658240 0 live:600\n"), "%s", t);
    free(t);
    /* A DISCONNECT with interval 0 ends the session with its connection: a
     * kill now must not leave it persistent (before 2026-12-02 the 0 was
     * ignored and the file kept live:600). */
    wm_proxy_registry_session_interval(g, NULL, (const uint8_t *)"d", 1, r.gen, 0);
    t = text_of(g);
    char want0[64];
    snprintf(want0, sizeof want0, "\nsession d 251658240 0 %lld\n", (long long)NOW_RT);
    cr_assert(strstr(t, want0), "%s", t);
    free(t);
    wm_proxy_registry_free(g);

    /* A connection resuming the session brings its own interval: until its
     * CONNACK's comes, the previous connection's is not taken for it. */
    g = wm_proxy_registry_new(NULL, 8, 8);
    r = wm_proxy_registry_session_attach(g, NULL, (const uint8_t *)"d", 1, true, true, ignore, NULL);
    wm_proxy_registry_session_interval(g, NULL, (const uint8_t *)"d", 1, r.gen, 600);
    wm_proxy_registry_session_detach(g, NULL, (const uint8_t *)"d", 1, r.gen, UINT64_MAX);
    r = wm_proxy_registry_session_attach(g, NULL, (const uint8_t *)"d", 1, false, false, ignore, NULL);
    t = text_of(g);
    cr_assert(strstr(t, "\nsession d 251658240 0 live\n"), "%s", t);
    free(t);
    wm_proxy_registry_session_interval(g, NULL, (const uint8_t *)"d", 1, r.gen, 0);
    t = text_of(g);
    cr_assert(strstr(t, want0), "%s", t);
    free(t);
    wm_proxy_registry_free(g);

    char file[] = "wirematch-proxy-state 1\nepoch 7\nclean 0\n"
                  "session a 251658240 0 live:3600\n"
                  "session b 251658240 0 live\n"
                  "session c 251658240 0 live:4294967295\n"
                  "end 3 0\n";
    g = wm_proxy_registry_new(NULL, 8, 8);
    wm_proxy_state_info info;
    char err[256];
    cr_assert_eq(wm_proxy_state_parse(file, sizeof file - 1, g, NOW_RT, NOW_MONO, &info, err, sizeof err), 0, "%s", err);
    t = text_of(g);
    char want[128];
    snprintf(want, sizeof want, "\nsession a %u 1 %lld\n", WM_PROXY_SID_BASE + WM_PROXY_STATE_SID_MARGIN,
             (long long)NOW_RT + 3600);
    cr_assert(strstr(t, want), "%s", t);
    /* a file of an older proxy: "live" without interval stays as it was (never) */
    snprintf(want, sizeof want, "\nsession b %u 1 never\n", WM_PROXY_SID_BASE + WM_PROXY_STATE_SID_MARGIN);
    cr_assert(strstr(t, want), "%s", t);
    snprintf(want, sizeof want, "\nsession c %u 1 never\n", WM_PROXY_SID_BASE + WM_PROXY_STATE_SID_MARGIN);
    cr_assert(strstr(t, want), "%s", t);
    free(t);
    wm_proxy_registry_reclaim(g, NOW_MONO + 3600 * 1000000000ull - 1);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_live, 3);
    wm_proxy_registry_reclaim(g, NOW_MONO + 3600 * 1000000000ull);
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.sessions_live, 2, "a expired an interval after the load");
    wm_proxy_registry_free(g);
}

Test(proxy_state_load, a_bad_live_interval_is_refused_with_its_position)
{
    static const char *const bad[][2] = {
        { "live:0", "line 4, column 28: expiry: live:INTERVAL: 1..4294967295 seconds expected" },
        { "live:012", "line 4, column 28: expiry: live:INTERVAL: 1..4294967295 seconds expected" },
        { "live:4294967296", "line 4, column 28: expiry: live:INTERVAL: 4294967296 not in 1..4294967295" },
        { "live:12x", "line 4, column 30: expiry: live:INTERVAL: 1..4294967295 seconds expected" },
        { "live:", "line 4, column 28: expiry: live:INTERVAL: 1..4294967295 seconds expected" },
        { "livex", "line 4, column 23: expiry: \"never\", \"live:N\", \"live\" or Unix seconds expected" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char file[256];
        int n = snprintf(file, sizeof file, "wirematch-proxy-state 1\nepoch 7\nclean 1\nsession a 251658240 0 %s\nend 1 0\n",
                         bad[i][0]);
        wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
        wm_proxy_state_info info;
        char err[256];
        cr_assert_eq(wm_proxy_state_parse(file, (size_t)n, g, NOW_RT, NOW_MONO, &info, err, sizeof err), -1, "%s", bad[i][0]);
        cr_assert_str_eq(err, bad[i][1]);
        wm_proxy_registry_free(g);
    }
}
