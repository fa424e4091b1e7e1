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
