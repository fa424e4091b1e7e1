/* The --state saver's side of the session table (dataplane/proxy_state.h,
 * dataplane/proxy_registry.h "the saver's side"): what a take of the
 * registry hands over (changed entries in the order they changed, drops of
 * entries it had, bounded per hold), and the mirror built from the takes,
 * whose text must be what a full format of the table gives: sessions
 * changed, dropped, made again, expired, and a lost track started over. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

#define CID(s) (const uint8_t *)(s), (uint32_t)strlen(s)

static void none(void *ctx, const wm_proxy_saved_sub *r) { (void)ctx; (void)r; }

static uint64_t make(wm_proxy_registry *g, const char *cid)
{
    return wm_proxy_registry_session_attach(g, NULL, CID(cid), true, true, none, NULL).gen;
}

static bool put(wm_proxy_registry *g, const char *cid, uint64_t gen, const char *filter, uint32_t sid, const char *nbhd)
{
    wm_proxy_saved_sub r = { filter, (uint32_t)strlen(filter), sid, nbhd, WM_SUB_NONE, NULL };
    return wm_proxy_registry_session_put(g, NULL, CID(cid), gen, &r);
}

/* The copies' client identifiers, space-separated. */
static void cids(const wm_proxy_session_batch *b, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (const wm_proxy_session_copy *c = b->copies; c; c = c->next)
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? " " : "", (int)c->s.cid_len, (const char *)c->s.cid);
}

Test(proxy_state, a_take_hands_over_changed_entries_in_order_bounded_per_hold_and_drops_of_taken_ones)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 64, 8);
    uint64_t a = make(g, "a");
    wm_proxy_registry_track(g);          /* "a" was there: queued */
    uint64_t b = make(g, "b"), c = make(g, "c");
    cr_assert(put(g, "a", a, "x/#", 7, "N1"));   /* already queued: keeps its place */
    wm_proxy_session_batch t;
    char s[256];
    cr_assert_eq(wm_proxy_registry_sessions_take(g, 2, 1 << 20, &t), 0);
    cids(&t, s, sizeof s);
    cr_assert_str_eq(s, "a b");
    cr_assert_eq(t.queued, 3);
    cr_assert(t.more);
    cr_assert_eq(t.copies->n, 1);
    cr_assert_eq(t.copies->recs[0].filter_len, 3);
    cr_assert_eq(memcmp(t.copies->recs[0].filter, "x/#", 3), 0);
    cr_assert_str_eq(t.copies->recs[0].nbhd, "N1");
    cr_assert_eq(t.copies->recs[0].sid, 7);
    cr_assert_eq(t.copies->gen, a);
    wm_proxy_registry_batch_free(&t);
    /* max_bytes 1: one entry per hold, whatever its size */
    cr_assert_eq(wm_proxy_registry_sessions_take(g, 128, 1, &t), 0);
    cids(&t, s, sizeof s);
    cr_assert_str_eq(s, "c");
    cr_assert_not(t.more);
    wm_proxy_registry_batch_free(&t);
    cr_assert_eq(wm_proxy_registry_sessions_take(g, 128, 1 << 20, &t), 0);
    cr_assert_eq(t.n_copies + t.n_gone, 0, "nothing changed since");
    wm_proxy_registry_batch_free(&t);
    /* b dropped by a fresh start (made again: another generation, queued);
     * d made and dropped between two takes: never taken, no drop logged */
    uint64_t b2 = make(g, "b");
    uint64_t d = make(g, "d");
    wm_proxy_registry_session_detach(g, NULL, CID("d"), d, 0);
    cr_assert(put(g, "c", c, "y", 1, NULL));
    cr_assert_eq(wm_proxy_registry_sessions_take(g, 128, 1 << 20, &t), 0);
    cr_assert_eq(t.n_gone, 1);
    cr_assert_eq(t.gone[0], b);
    cids(&t, s, sizeof s);
    cr_assert_str_eq(s, "b c");
    cr_assert_eq(t.copies->gen, b2);
    wm_proxy_registry_batch_free(&t);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.copy_holds, 4);
    cr_assert_eq(st.copy_entries, 5);
    cr_assert_eq(st.copy_hold_max_entries, 2);
    wm_proxy_registry_free(g);
}

static char *text(const wm_proxy_state_mirror *m)
{
    char *t;
    size_t n;
    cr_assert_eq(wm_proxy_state_format(m, 3, false, 1790000000, 5000000000000ull, &t, &n), 0);
    return t;
}

static int by_text(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The file's text with its sessions (each with its "sub" lines) sorted: the
 * same table in another order gives the same. */
static char *sorted(const char *t)
{
    size_t n = strlen(t), k = 0;
    char *c = strdup(t), **block = calloc(n + 1, sizeof *block);
    /* each "session" line starts a block that runs to the next one (or "end") */
    for (char *p = c; *p; p = strchr(p, '\n') + 1) {
        if (strncmp(p, "session ", 8) == 0 || strncmp(p, "end ", 4) == 0) {
            if (k) p[-1] = 0;
            block[k++] = p;
        }
    }
    qsort(block, k, sizeof *block, by_text);
    char *out = calloc(n + k + 2, 1);
    for (size_t i = 0; i < k; i++) { strcat(out, block[i]); strcat(out, "|"); }
    free(block);
    free(c);
    return out;
}

Test(proxy_state, the_mirror_follows_changes_drops_and_expiry_and_keeps_the_file_order)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 64, 8);
    wm_proxy_state_mirror *m = wm_proxy_state_mirror_new(g);
    cr_assert(m);
    uint64_t a = make(g, "a"), b = make(g, "b"), c = make(g, "c");
    cr_assert(put(g, "a", a, "x/#", 0x0F000000, "N1"));
    cr_assert(put(g, "b", b, "p q", 9, NULL));
    wm_proxy_registry_session_detach(g, NULL, CID("c"), c, UINT64_MAX);
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    char *t = text(m);
    cr_assert_str_eq(t, "wirematch-proxy-state 2\nepoch 3\nclean 0\n"
                        "session a 251658241 0 live\nsub x/# 251658240 N1 -\n"
                        "session b 251658240 0 live\nsub p%20q 9 - -\n"
                        "session c 251658240 0 never\n"
                        "end 3 2\n");
    free(t);
    /* a changes (stays first), b is dropped and made again (goes last), c
     * expires */
    wm_proxy_registry_session_del(g, NULL, CID("a"), a, "x/#", 3);
    cr_assert(put(g, "a", a, "z", 0x0F000005, "N2"));
    wm_proxy_registry_session_detach(g, NULL, CID("a"), a, 5000000000000ull + 1500000000ull);
    uint64_t b2 = make(g, "b");
    cr_assert(put(g, "b", b2, "r", 1, NULL));
    cr_assert_eq(wm_proxy_registry_session_attach(g, NULL, CID("c"), false, true, none, NULL).gen, c);
    wm_proxy_registry_session_detach(g, NULL, CID("c"), c, 1);
    wm_proxy_registry_reclaim(g, 2);
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    t = text(m);
    cr_assert_str_eq(t, "wirematch-proxy-state 2\nepoch 3\nclean 0\n"
                        "session a 251658246 0 1790000002\nsub z 251658245 N2 -\n"
                        "session b 251658240 0 live\nsub r 1 - -\n"
                        "end 2 2\n");
    /* Track lost (as after memory ran out): the next sync starts over and
     * gives the same sessions (in the table's order). */
    wm_proxy_registry_sessions_resync(g);
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    char *t2 = text(m), *s1 = sorted(t), *s2 = sorted(t2);
    cr_assert_str_eq(s1, s2);
    cr_assert(strstr(s1, "session a 251658246 0 1790000002\nsub z 251658245 N2 -|"), "%s", s1);
    free(s1);
    free(s2);
    free(t2);
    free(t);
    wm_proxy_state_mirror_free(m);
    wm_proxy_registry_free(g);
}

Test(proxy_state, a_sync_of_a_large_table_takes_it_in_bounded_holds)
{
    enum { N = 3000 };
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, N, 8);
    wm_proxy_state_mirror *m = wm_proxy_state_mirror_new(g);
    char cid[32], f[48];
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "c%05d", i);
        uint64_t gen = make(g, cid);
        for (int j = 0; j < 8; j++) {
            snprintf(f, sizeof f, "sensors/%d/%d/#", i, j);
            cr_assert(put(g, cid, gen, f, 0x0F000000 + (uint32_t)j, "X1"));
        }
        wm_proxy_registry_session_detach(g, NULL, CID(cid), gen, UINT64_MAX);
    }
    cr_assert_eq(wm_proxy_state_sync(m), 0);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(g, &st);
    cr_assert_eq(st.copy_entries, N);
    cr_assert_leq(st.copy_hold_max_entries, WM_PROXY_STATE_HOLD_ENTRIES);
    cr_assert_leq(st.copy_hold_max_bytes, WM_PROXY_STATE_HOLD_BYTES);
    cr_assert_geq(st.copy_holds, (uint64_t)N / WM_PROXY_STATE_HOLD_ENTRIES);
    char *t = text(m);
    cr_assert(strstr(t, "session c00000 251658248 0 never\nsub sensors/0/0/# 251658240 X1 -\n"));
    cr_assert(strstr(t, "\nend 3000 24000\n"));
    free(t);
    wm_proxy_state_mirror_free(m);
    wm_proxy_registry_free(g);
}
