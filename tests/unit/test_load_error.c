/* A loader's refusal as a position and a reason (control/load_error.h):
 * every loader kind hands back the file it names, its line (and column) or
 * byte offset, and the reason, and the one-line text stays what the README
 * documents. The file names hold ':' and digits on purpose: the text
 * "FILE:LINE: reason" cannot say where such a name ends, which is why the
 * position travels as fields (the data plane's telemetry and summary read
 * them, dataplane/telemetry.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/load_error.h"
#include "control/reload.h"
#include "control/resolution.h"
#include "control/schema_registry.h"
#include "control/tables.h"
#include "dataplane/match_sink.h"
#include "tests/lib/reload_fixture.h"

static char text[WM_LOAD_ERROR_TEXT_MAX];

static const char *line_of(const wm_load_error *e) { return wm_load_error_format(e, text, sizeof text); }

Test(load_error, text_shapes)
{
    wm_load_error e;
    wm_load_error_set(&e, "/tmp/x/S.jsonl", 2, "\"filter\": invalid topic filter [%s] at byte %d", "hash_not_last", 2);
    cr_assert_str_eq(line_of(&e), "/tmp/x/S.jsonl:2: \"filter\": invalid topic filter [hash_not_last] at byte 2");
    cr_assert_str_eq(wm_load_error_format_reason(&e, text, sizeof text),
                     "\"filter\": invalid topic filter [hash_not_last] at byte 2");

    wm_load_error_set(&e, "/tmp/x/R.wmr", 0, "body checksum mismatch [checksum]");
    e.has_offset = true;
    e.offset = 52;
    cr_assert_str_eq(line_of(&e), "/tmp/x/R.wmr: body checksum mismatch [checksum] at byte 52");
    cr_assert_str_eq(wm_load_error_format_reason(&e, text, sizeof text), "body checksum mismatch [checksum] at byte 52");

    wm_load_error_set(&e, "/tmp/x/reg:1.txt", 3, "prefix 's' bound twice");
    e.column = 17;
    cr_assert_str_eq(line_of(&e), "/tmp/x/reg:1.txt:3: column 17: prefix 's' bound twice");
    cr_assert_str_eq(wm_load_error_format_reason(&e, text, sizeof text), "column 17: prefix 's' bound twice");

    /* about no file: the reason alone, whatever it looks like */
    wm_load_error_set(&e, NULL, 7, "a:1: r");
    cr_assert_str_eq(line_of(&e), "a:1: r");
    cr_assert(wm_load_error_failed(&e));

    wm_load_error_clear(&e);
    cr_assert(!wm_load_error_failed(&e));
    cr_assert_str_eq(line_of(&e), "");
    cr_assert_eq(wm_load_error_set(NULL, "f", 1, "nothing recorded"), -1);
}

Test(load_error, text_is_cut_to_fit)
{
    wm_load_error e;
    wm_load_error_set(&e, "/some/long/name.jsonl", 12, "reason");
    char small[8];
    memset(small, 'x', sizeof small);
    cr_assert_str_eq(wm_load_error_format(&e, small, sizeof small), "/some/l");
    memset(small, 'x', sizeof small);
    wm_load_error_set(&e, "", 0, "a reason longer than eight");
    cr_assert_str_eq(wm_load_error_format(&e, small, sizeof small), "a reaso");
    /* a file and a reason past their bounds are cut, still terminated */
    char big[2 * WM_LOAD_ERROR_FILE_MAX];
    memset(big, 'f', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wm_load_error_set(&e, big, 1, "%s", big);
    cr_assert_eq(strlen(e.file), WM_LOAD_ERROR_FILE_MAX - 1);
    cr_assert_eq(strlen(e.reason), WM_LOAD_ERROR_REASON_MAX - 1);
}

/* ------------------------------------------------- the loaders, from files */

static const char *const NEAR[] = { "sq1", "p_in", NULL };
static const wm_test_nbhd NB[] = { { "near", NEAR } };
static const char GOOD_SUBS[] = "{\"id\": \"a1\", \"client\": \"c1\", \"filter\": \"t/#\"}\n";
/* line 2: a '#' not last, in a filter with ':' and digits of its own */
static const char BAD_SUBS[] = "{\"id\": \"a1\", \"client\": \"c1\", \"filter\": \"t/#\"}\n"
                               "{\"id\": \"a2\", \"client\": \"c:2\", \"filter\": \"12:3/#/4:5\"}\n";
static const char *dir;
static char sub[256];

static void setup(void)
{
    dir = wm_test_tmpdir();
    cr_assert(dir);
    /* a directory whose name alone looks like "FILE:LINE" */
    snprintf(sub, sizeof sub, "%s/v2:10", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(load_error_loaders, .init = setup, .fini = teardown);

/* A good resolution at dir/NAME with one body byte flipped. */
static char *corrupt_wmr(const char *name)
{
    char *p = wm_test_write_wmr(sub, name, NB, 1);
    cr_assert(p);
    FILE *f = fopen(p, "r+b");
    cr_assert(f);
    cr_assert_eq(fseek(f, 70, SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_eq(fseek(f, 70, SEEK_SET), 0);
    fputc(c ^ 0x10, f);
    cr_assert_eq(fclose(f), 0);
    return p;
}

static void expect_checksum(const wm_load_error *e, const char *path)
{
    cr_expect_str_eq(e->file, path);
    cr_expect_eq(e->line, 0);
    cr_expect_eq(e->column, 0);
    cr_expect(e->has_offset);
    cr_expect_eq(e->offset, 52, "the header's body checksum field");
    cr_expect_str_eq(e->reason, "body checksum mismatch [checksum]");
    char want[WM_LOAD_ERROR_TEXT_MAX];
    snprintf(want, sizeof want, "%s: body checksum mismatch [checksum] at byte 52", path);
    cr_expect_str_eq(line_of(e), want);
}

Test(load_error_loaders, resolution_file)
{
    char *p = corrupt_wmr("R:1.wmr");
    wm_resolution_error re;
    cr_assert_null(wm_resolution_open(p, &re));
    wm_load_error e;
    cr_assert_eq(wm_resolution_error_load(&re, p, &e), -1);
    expect_checksum(&e, p);
    /* the same through the table set */
    cr_assert_null(wm_tables_compile(NULL, p, NULL, &e));
    expect_checksum(&e, p);
    /* an I/O error is about no byte */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none:3.wmr", sub);
    cr_assert_null(wm_tables_compile(NULL, missing, NULL, &e));
    cr_expect_str_eq(e.file, missing);
    cr_expect(!e.has_offset);
    cr_expect_str_eq(e.reason, "No such file or directory [io]");
    free(p);
}

/* The resolution's reader used to write "%.60s: MESSAGE": a path of more
 * than 60 bytes lost its end in the text, and with it any way to find the
 * file again. */
Test(load_error_loaders, resolution_long_path_whole)
{
    char longdir[400];
    snprintf(longdir, sizeof longdir, "%s/a-directory-name-of-some-length-to-pass-sixty-bytes:42", sub);
    cr_assert_eq(mkdir(longdir, 0755), 0);
    char *p = wm_test_write_wmr(longdir, "R.wmr", NB, 1);
    cr_assert(p);
    cr_assert_gt(strlen(p), 60);
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    fputs("not a resolution file, but long enough to be read as one ................", f);
    cr_assert_eq(fclose(f), 0);
    wm_load_error e;
    cr_assert_null(wm_tables_compile(NULL, p, NULL, &e));
    cr_expect_str_eq(e.file, p);
    cr_expect_str_eq(e.reason, "not a resolution file (bad magic) [magic]");
    cr_expect(e.has_offset && e.offset == 0);
    free(p);
}

/* Writes a good resolution sub/RNAME and the subscriptions sub/SNAME. */
static void write_set(const char *rname, const char *sname, const char *subs, char **r, char **s)
{
    *r = wm_test_write_wmr(sub, rname, NB, 1);
    *s = wm_test_write_text(sub, sname, subs);
    cr_assert(*r && *s);
}

Test(load_error_loaders, subscriptions_file)
{
    char *r, *s;
    write_set("R.wmr", "S:7.jsonl", BAD_SUBS, &r, &s);
    wm_load_error e;
    cr_assert_null(wm_tables_compile(NULL, r, s, &e));
    cr_expect_str_eq(e.file, s);
    cr_expect_eq(e.line, 2);
    cr_expect(!e.has_offset);
    cr_expect(strstr(e.reason, "\"filter\": invalid topic filter: '#' must be the last level") == e.reason, "%s",
              e.reason);
    char want[WM_LOAD_ERROR_TEXT_MAX];
    snprintf(want, sizeof want, "%s:2: %s", s, e.reason);
    cr_expect_str_eq(line_of(&e), want);

    /* a neighborhood the resolution lacks: the subscriptions' line, not the resolution */
    char *s2 = wm_test_write_text(sub, "T:1.jsonl", "{\"id\": 1, \"client\": \"c\", \"filter\": \"t\", \"nbhd\": \"far\"}\n");
    cr_assert(s2);
    cr_assert_null(wm_tables_compile(NULL, r, s2, &e));
    cr_expect_str_eq(e.file, s2);
    cr_expect_eq(e.line, 1);
    free(r);
    free(s);
    free(s2);
}

/* A resolution named like the subscriptions file followed by ":2": read
 * back from "S:2: reason", the longer name looked like the file and the
 * line was lost; the loader's own position cannot be misread. */
Test(load_error_loaders, names_that_prefix_each_other)
{
    char sname[300], rname[300];
    snprintf(sname, sizeof sname, "%s/S", sub);
    snprintf(rname, sizeof rname, "%s/S:2", sub);
    char *r, *s;
    write_set("S:2", "S", BAD_SUBS, &r, &s);
    cr_assert_str_eq(r, rname);
    wm_load_error e;
    cr_assert_null(wm_tables_compile(NULL, r, s, &e));
    cr_expect_str_eq(e.file, sname);
    cr_expect_eq(e.line, 2);
    free(r);
    free(s);
}

Test(load_error_loaders, schema_registry)
{
    char *reg = wm_test_write_text(sub, "reg:3.txt", "# schemas\n\nsenml tiny.xsd 7:bad\n");
    cr_assert(reg);
    wm_schema_reg *out = NULL;
    wm_load_error e;
    cr_assert_eq(wm_schema_reg_load(reg, &out, &e), -1);
    cr_assert_null(out);
    cr_expect_str_eq(e.file, reg);
    cr_expect_eq(e.line, 3);
    cr_expect_eq(e.column, 16);
    cr_expect(strstr(e.reason, "unknown option '7:bad'") == e.reason, "%s", e.reason);
    char want[WM_LOAD_ERROR_TEXT_MAX];
    snprintf(want, sizeof want, "%s:3: column 16: %s", reg, e.reason);
    cr_expect_str_eq(line_of(&e), want);
    /* the same through the table set, and a line without a column */
    wm_tables_paths p = { NULL, NULL, reg };
    cr_assert_null(wm_tables_compile_paths(NULL, &p, &e));
    cr_expect_str_eq(e.file, reg);
    cr_expect_eq(e.line, 3);
    cr_expect_eq(e.column, 16);
    char *reg2 = wm_test_write_text(sub, "reg2", "a:1 tiny.xsd\n");
    cr_assert(reg2);
    cr_assert_eq(wm_schema_reg_load(reg2, &out, &e), -1);
    cr_expect_str_eq(e.file, reg2);
    cr_expect_eq(e.line, 1);
    cr_expect_eq(e.column, 0);
    cr_expect(strstr(e.reason, "bad schema name 'a:1'") == e.reason, "%s", e.reason);
    free(reg);
    free(reg2);
}

/* The data plane's tables keep the refusal's fields for telemetry and the
 * summary (dataplane/match_sink.h), after a later good reload too. */
Test(load_error_loaders, data_plane_reload)
{
    char *r, *s;
    write_set("R:5.wmr", "S:6.jsonl", GOOD_SUBS, &r, &s);
    wm_load_error e;
    struct wm_match_table *t = wm_match_table_new(r, s, NULL, 64, &e);
    cr_assert(t, "%s", line_of(&e));
    wm_match_table_last_error(t, &e);
    cr_expect(!wm_load_error_failed(&e), "no failure yet");

    char *w = wm_test_write_text(sub, "S:6.jsonl", BAD_SUBS);   /* the path again: s */
    cr_assert_not_null(w);
    free(w);
    cr_assert_eq(wm_match_table_reload(t, &e), -1);
    wm_load_error kept;
    wm_match_table_last_error(t, &kept);
    cr_expect_str_eq(kept.file, s);
    cr_expect_eq(kept.line, 2);
    cr_expect_str_eq(kept.reason, e.reason);

    cr_assert_not_null(w = wm_test_write_text(sub, "S:6.jsonl", GOOD_SUBS));
    free(w);
    cr_assert_eq(wm_match_table_reload(t, NULL), 0);
    free(corrupt_wmr("R:5.wmr"));
    cr_assert_eq(wm_match_table_reload(t, NULL), -1, "err may be NULL");
    wm_match_table_last_error(t, &kept);
    expect_checksum(&kept, r);
    wm_match_table_free(t);
    free(r);
    free(s);
}
