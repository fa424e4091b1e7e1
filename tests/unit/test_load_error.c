/* A loader's "FILE:LINE: reason" taken apart (control/load_error.h), as the
 * data plane's telemetry gives a refused reload. */
#include <criterion/criterion.h>
#include <string.h>

#include "control/load_error.h"

static const char *const files[] = { "/tmp/x/R.wmr", NULL, "/tmp/x/S.jsonl", "/tmp/x/reg:1.txt" };

static void check(const char *msg, const char *file, unsigned long line, const char *reason)
{
    wm_load_error_at at;
    bool found = wm_load_error_split(msg, files, 4, &at);
    cr_assert_eq(found, file != NULL, "%s", msg);
    if (file) {
        cr_assert_eq(at.file, msg, "the file is where the text starts");
        cr_assert_eq(at.file_len, strlen(file), "%s: file length %zu", msg, at.file_len);
        cr_assert_eq(strncmp(at.file, file, at.file_len), 0, "%s", msg);
    } else {
        cr_assert_null(at.file);
    }
    cr_assert_eq(at.line, line, "%s: line %lu", msg, at.line);
    cr_assert_str_eq(at.reason, reason);
}

Test(load_error, split)
{
    check("/tmp/x/S.jsonl:2: \"filter\": invalid topic filter [hash_not_last] at byte 2", "/tmp/x/S.jsonl", 2,
          "\"filter\": invalid topic filter [hash_not_last] at byte 2");
    check("/tmp/x/R.wmr: body checksum mismatch [checksum] at byte 52", "/tmp/x/R.wmr", 0,
          "body checksum mismatch [checksum] at byte 52");
    /* a ':' and digits in the name: only the caller's file list says where the name ends */
    check("/tmp/x/reg:1.txt:3: column 17: prefix 's' bound twice", "/tmp/x/reg:1.txt", 3, "column 17: prefix 's' bound twice");
    /* digits not followed by ": " belong to the reason */
    check("/tmp/x/S.jsonl: 12 lines", "/tmp/x/S.jsonl", 0, "12 lines");
    /* no file named: the whole text is the reason */
    check("out of memory", NULL, 0, "out of memory");
    check("learned subscription c#1 (filter a/b) does not fit the new tables: full", NULL, 0,
          "learned subscription c#1 (filter a/b) does not fit the new tables: full");
    check("/tmp/x/S.jsonlx:2: y", NULL, 0, "/tmp/x/S.jsonlx:2: y");
    check("/tmp/x/S.jsonl:2:y", NULL, 0, "/tmp/x/S.jsonl:2:y");
    check("", NULL, 0, "");
}

Test(load_error, longest_file_wins)
{
    static const char *const nested[] = { "a", "a:1" };
    wm_load_error_at at;
    cr_assert(wm_load_error_split("a:1:2: r", nested, 2, &at));
    cr_assert_eq(at.file_len, 3);
    cr_assert_eq(at.line, 2);
    cr_assert_str_eq(at.reason, "r");
    /* both readings are well formed ("a" line 1, "a:1" without a line): the longer name is taken */
    cr_assert(wm_load_error_split("a:1: r", nested, 2, &at));
    cr_assert_eq(at.file_len, 3);
    cr_assert_eq(at.line, 0);
    cr_assert_str_eq(at.reason, "r");
    cr_assert(wm_load_error_split("a:7: r", nested, 2, &at));
    cr_assert_eq(at.file_len, 1);
    cr_assert_eq(at.line, 7);
}
