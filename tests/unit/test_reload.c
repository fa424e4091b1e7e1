/* Hot reload of the match tables (control/reload.h, control/tables.h):
 * a bad resolution file (truncated, one flipped byte, missing), a bad
 * subscription line and a subscription naming a neighborhood the new
 * resolution lacks are each refused with the file and position, and the
 * running tables keep answering exactly as before; a good reload switches
 * every answer at once; replaced table sets are freed once readers moved. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/reload.h"
#include "tests/lib/reload_fixture.h"

static const char *const A_NEAR[] = { "sq1", "p_in", NULL };
static const char *const A_FAR[] = { "far", NULL };
static const char *const B_NEAR[] = { "far", "l2", NULL };
static const char *const B_ROAD[] = { "l1", NULL };
static const wm_test_nbhd NB_A[] = { { "near", A_NEAR }, { "far", A_FAR } };
static const wm_test_nbhd NB_B[] = { { "near", B_NEAR }, { "road", B_ROAD } };

static const char SUBS_A[] =
    "{\"id\": \"a1\", \"client\": \"c1\", \"filter\": \"t/#\"}\n"
    "{\"id\": \"a2\", \"client\": \"c2\", \"filter\": \"t/+\", \"nbhd\": \"near\"}\n"
    "\n"
    "{\"id\": 3, \"client\": \"c3\", \"filter\": \"$share/g/t/x\", \"nbhd\": \"far\"}\n";
static const char SUBS_B[] =
    "{\"id\": \"b1\", \"client\": \"c1\", \"filter\": \"t/x\", \"nbhd\": \"near\"}\n"
    "{\"id\": \"b2\", \"client\": \"c2\", \"filter\": \"#\", \"nbhd\": \"road\"}\n";

static const char *dir;
static char *wmr_a, *wmr_b, *subs_a, *subs_b;
static wm_reload *rl;
static wm_reload_reader *rd;

static void setup(void)
{
    dir = wm_test_tmpdir();
    cr_assert(dir);
    wmr_a = wm_test_write_wmr(dir, "a.wmr", NB_A, 2);
    wmr_b = wm_test_write_wmr(dir, "b.wmr", NB_B, 2);
    subs_a = wm_test_write_text(dir, "a.jsonl", SUBS_A);
    subs_b = wm_test_write_text(dir, "b.jsonl", SUBS_B);
    cr_assert(wmr_a && wmr_b && subs_a && subs_b);
    wm_matcher_config cfg = { .max_subs = 64, .max_nbhds = 16, .max_peids = 64, .max_groups = 8 };
    rl = wm_reload_new(&cfg);
    rd = wm_reload_reader_new(rl);
    cr_assert(rl && rd);
}

static void teardown(void)
{
    wm_reload_reader_free(rd);
    wm_reload_free(rl);
    const char *files[] = { wmr_a, wmr_b, subs_a, subs_b };
    for (size_t i = 0; i < 4; i++) { if (files[i]) unlink(files[i]); free((void *)files[i]); }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(reload, .init = setup, .fini = teardown);

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The ids the current tables return for (topic, peids), sorted, joined by
 * spaces; "-" when nothing is loaded. */
static const char *answer(const char *topic, const char *p1, const char *p2)
{
    static char out[256];
    const wm_tables *t;
    wm_matcher_reader *mr = wm_reload_reader_acquire(rd, &t);
    if (!mr) return "-";
    wm_match_str peids[2];
    uint32_t np = 0;
    if (p1) peids[np++] = (wm_match_str){ p1, strlen(p1) };
    if (p2) peids[np++] = (wm_match_str){ p2, strlen(p2) };
    uint32_t subs[64], members[64];
    wm_match_group groups[8];
    wm_match_result res = { subs, 64, members, 64, groups, 8, 0, 0, 0 };
    cr_assert_eq(wm_matcher_lookup_str(mr, topic, strlen(topic), peids, np, NULL, 0, &res), WM_MATCHER_OK);
    const char *ids[128];
    uint32_t n = 0;
    for (uint32_t i = 0; i < res.n_subs; i++) ids[n++] = wm_tables_sub_id(t, wm_matcher_sub_cookie(wm_tables_matcher(t), subs[i]));
    for (uint32_t i = 0; i < res.n_members; i++) ids[n++] = wm_tables_sub_id(t, wm_matcher_sub_cookie(wm_tables_matcher(t), members[i]));
    qsort(ids, n, sizeof *ids, cmp_str);
    size_t k = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert(ids[i]);
        k += (size_t)snprintf(out + k, sizeof out - k, "%s%s", i ? " " : "", ids[i]);
    }
    wm_reload_reader_quiescent(rd);
    return out;
}

/* Each query's answer from tables A and from tables B, derived by hand from
 * SUBS_A/NB_A and SUBS_B/NB_B. */
static const struct { const char *topic, *p1, *p2, *a, *b; } QUERIES[] = {
    { "t/x", NULL, NULL, "\"a1\"", "" },
    { "t/x", "p_in", NULL, "\"a1\" \"a2\"", "" },
    { "t/x", "far", NULL, "\"a1\" 3", "\"b1\"" },
    { "t/x/y", "sq1", "far", "\"a1\"", "" },
    { "u", "l1", NULL, "", "\"b2\"" },
};

static void expect_set(bool b)
{
    for (size_t i = 0; i < sizeof QUERIES / sizeof QUERIES[0]; i++)
        cr_expect_str_eq(answer(QUERIES[i].topic, QUERIES[i].p1, QUERIES[i].p2), b ? QUERIES[i].b : QUERIES[i].a,
                         "query %zu", i);
}

static void expect_a(void) { expect_set(false); }
static void expect_b(void) { expect_set(true); }

static void load_ok(const char *r, const char *s)
{
    wm_load_error le;
    cr_assert_eq(wm_reload_load(rl, r, s, &le), 0, "%s", le.reason);
}

static void load_refused(const char *r, const char *s, const char *want1, const char *want2)
{
    wm_load_error le;
    char err[WM_LOAD_ERROR_TEXT_MAX];
    uint64_t gen = wm_reload_generation(rl);
    const wm_tables *cur = wm_reload_current(rl);
    cr_assert_eq(wm_reload_load(rl, r, s, &le), -1, "accepted %s + %s", r, s);
    wm_load_error_format(&le, err, sizeof err);
    cr_log_info("refused: %s", err);
    cr_expect(strstr(err, want1), "\"%s\" lacks \"%s\"", err, want1);
    if (want2) cr_expect(strstr(err, want2), "\"%s\" lacks \"%s\"", err, want2);
    cr_expect_eq(wm_reload_generation(rl), gen);
    cr_expect_eq(wm_reload_current(rl), cur, "the running tables were replaced");
}

static char *file_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    char *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static char *write_bytes(const char *file, const char *buf, size_t len)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, file);
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    return p;
}

Test(reload, nothing_before_the_first_load)
{
    cr_expect_null(wm_reload_current(rl));
    cr_expect_str_eq(answer("t/x", NULL, NULL), "-");
    load_refused(NULL, subs_a, "a.jsonl:2:", "unknown neighborhood \"near\"");
    cr_expect_str_eq(answer("t/x", NULL, NULL), "-");
}

Test(reload, good_reload_switches_every_answer)
{
    load_ok(wmr_a, subs_a);
    cr_expect_eq(wm_tables_sub_count(wm_reload_current(rl)), 3);
    cr_expect_eq(wm_tables_nbhd_count(wm_reload_current(rl)), 2);
    expect_a();
    load_ok(wmr_b, subs_b);
    expect_b();
    load_ok(wmr_a, subs_a);
    expect_a();
    cr_expect_eq(wm_reload_generation(rl), 3);
    /* The reader moved on at its last acquire: both replaced sets go. */
    cr_expect_eq(wm_reload_reclaim(rl, true), 0);
}

Test(reload, replaced_tables_stay_while_a_reader_is_attached)
{
    load_ok(wmr_a, subs_a);
    expect_a();
    load_ok(wmr_b, subs_b);
    /* rd is still attached to A (it has not acquired since). */
    cr_expect_eq(wm_reload_reclaim(rl, true), 1);
    expect_b();
    cr_expect_eq(wm_reload_reclaim(rl, true), 0);
}

Test(reload, truncated_resolution_refused)
{
    load_ok(wmr_a, subs_a);
    size_t len;
    char *buf = file_bytes(wmr_b, &len);
    for (size_t cut = 0; cut < len; cut += 1 + len / 23) {
        char *p = write_bytes("cut.wmr", buf, cut);
        load_refused(p, subs_b, "cut.wmr: ", "at byte");
        unlink(p);
        free(p);
    }
    free(buf);
    expect_a();
}

Test(reload, corrupt_resolution_refused)
{
    load_ok(wmr_a, subs_a);
    size_t len;
    char *buf = file_bytes(wmr_b, &len);
    for (size_t i = 0; i < len; i += 1 + len / 31) {
        buf[i] ^= 0x10;
        char *p = write_bytes("bad.wmr", buf, len);
        load_refused(p, subs_b, "bad.wmr: ", "at byte");
        buf[i] ^= 0x10;
        unlink(p);
        free(p);
    }
    free(buf);
    expect_a();
    load_refused("/nonexistent/x.wmr", subs_b, "/nonexistent/x.wmr: ", NULL);
    expect_a();
}

Test(reload, bad_subscription_line_refused)
{
    load_ok(wmr_a, subs_a);
    static const struct { const char *text, *want; } bad[] = {
        { "{\"id\": \"b1\", \"client\": \"c\", \"filter\": \"t/x\"}\n{\"id\": 2, \"client\": \"c\", \"filter\": \"a/#/b\"}\n",
          "s.jsonl:2: \"filter\": invalid topic filter" },
        { "{\"id\": \"b1\", \"client\": \"c\", \"filter\": \"t/x\"}\n\n{\"id\": 2, \"client\": \"c\", \"filter\": \n",
          "s.jsonl:3: column" },
        { "{\"id\": 1, \"client\": \"c\", \"filter\": \"t\"}\n{\"id\": 1, \"client\": \"d\", \"filter\": \"u\"}\n",
          "s.jsonl:2: duplicate \"id\" 1 (first on line 1)" },
        { "{\"id\": 1, \"client\": \"c\", \"filter\": \"t\", \"qos\": 3}\n", "s.jsonl:1: \"qos\"" },
        { "{\"id\": 1, \"client\": \"c\", \"filter\": \"t\", \"colour\": 3}\n", "s.jsonl:1: unknown key \"colour\"" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *p = wm_test_write_text(dir, "s.jsonl", bad[i].text);
        load_refused(wmr_b, p, bad[i].want, NULL);
        unlink(p);
        free(p);
        expect_a();
    }
    load_refused(wmr_b, "/nonexistent/s.jsonl", "/nonexistent/s.jsonl: No such file", NULL);
    expect_a();
}

Test(reload, subscription_naming_an_unknown_neighborhood_refused)
{
    load_ok(wmr_a, subs_a);
    /* SUBS_A names "far", which resolution B does not define. */
    load_refused(wmr_b, subs_a, "a.jsonl:4: \"nbhd\": unknown neighborhood \"far\"", NULL);
    expect_a();
    /* And the reverse: B's subscriptions name "road", absent from A. */
    load_refused(wmr_a, subs_b, "b.jsonl:2: \"nbhd\": unknown neighborhood \"road\"", NULL);
    expect_a();
    load_ok(wmr_b, subs_b);
    expect_b();
}

Test(reload, an_offline_reader_lets_the_replaced_tables_go)
{
    load_ok(wmr_a, subs_a);
    expect_a();
    wm_reload_reader_offline(rd);
    load_ok(wmr_b, subs_b);
    /* Offline and detached: neither the grace period nor the attach count
     * waits for this reader. */
    cr_expect_eq(wm_reload_reclaim(rl, true), 0);
    wm_reload_reader_online(rd);
    expect_b();
}
