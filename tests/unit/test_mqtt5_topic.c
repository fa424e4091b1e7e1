/* Topic names, filters and matching, as MQTT 5.0 §4.7 and §4.8.2 state them.
 * Each case cites the sentence of the spec it checks. */
#include <criterion/criterion.h>
#include <string.h>

#include "codec/mqtt5_topic.h"

static bool match(const char *f, const char *t) { return wm_topic_match(f, strlen(f), t, strlen(t)); }
static wm_topic_status filt(const char *f) { return wm_topic_filter_validate(f, strlen(f), NULL); }
static wm_topic_status name(const char *t) { return wm_topic_name_validate(t, strlen(t), NULL); }

/* §4.7.1.2 non-normative examples of the multi-level wildcard. */
Test(topic_match, hash_examples_4_7_1_2)
{
    cr_expect(match("sport/tennis/player1/#", "sport/tennis/player1"));
    cr_expect(match("sport/tennis/player1/#", "sport/tennis/player1/ranking"));
    cr_expect(match("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon"));
    cr_expect(match("sport/#", "sport"), "'#' also matches the parent level");
    cr_expect(match("#", "sport/tennis"));
    cr_expect(match("#", "/"));
    cr_expect_not(match("sport/tennis/#", "sport"));
    cr_expect_not(match("sport/#", "sports"));
}

/* §4.7.1.3 non-normative examples of the single-level wildcard. */
Test(topic_match, plus_examples_4_7_1_3)
{
    cr_expect(match("sport/tennis/+", "sport/tennis/player1"));
    cr_expect(match("sport/tennis/+", "sport/tennis/player2"));
    cr_expect_not(match("sport/tennis/+", "sport/tennis/player1/ranking"));
    cr_expect_not(match("sport/+", "sport"));
    cr_expect(match("sport/+", "sport/"), "'+' matches an empty level");
    cr_expect(match("+", "sport"));
    cr_expect(match("+/+", "/finance"));
    cr_expect(match("/+", "/finance"));
    cr_expect_not(match("+", "/finance"));
    cr_expect(match("+/tennis/#", "sport/tennis/player1/ranking"));
    cr_expect(match("sport/+/player1", "sport/tennis/player1"));
}

/* §4.7.2: topics beginning with '$' are not matched by a leading wildcard. */
Test(topic_match, dollar_topics_4_7_2)
{
    cr_expect_not(match("#", "$SYS/broker/uptime"));
    cr_expect_not(match("+/monitor/Clients", "$SYS/monitor/Clients"));
    cr_expect(match("$SYS/#", "$SYS/monitor/Clients"));
    cr_expect(match("$SYS/monitor/+", "$SYS/monitor/Clients"));
    cr_expect_not(match("+", "$SYS"));
    cr_expect(match("a/#", "a/$b"), "'$' only matters at the first level");
}

/* §4.7.3: levels are case sensitive, spaces and empty levels are significant. */
Test(topic_match, literal_semantics_4_7_3)
{
    cr_expect_not(match("ACCOUNTS", "Accounts"));
    cr_expect(match("Accounts payable", "Accounts payable"));
    cr_expect(match("/finance", "/finance"));
    cr_expect_not(match("/finance", "finance"), "a leading '/' makes an empty first level");
    cr_expect(match("a//b", "a//b"));
    cr_expect_not(match("a//b", "a/b"));
    cr_expect(match("a/+/b", "a//b"));
    cr_expect_not(match("a/b", "a/b/c"));
    cr_expect_not(match("a/b/c", "a/b"));
    cr_expect(match("a/b/", "a/b/"));
    cr_expect(match("a/b/#", "a/b/"));
}

Test(topic_validate, names_4_7)
{
    cr_expect_eq(name("a/b"), WM_TOPIC_OK);
    cr_expect_eq(name("/"), WM_TOPIC_OK);
    cr_expect_eq(name(""), WM_TOPIC_EMPTY, "§4.7.3: at least one character");
    cr_expect_eq(name("a/+"), WM_TOPIC_WILDCARD_IN_NAME, "§4.7.1: wildcards not in names");
    cr_expect_eq(name("a#"), WM_TOPIC_WILDCARD_IN_NAME);
    size_t off = 99;
    cr_expect_eq(wm_topic_name_validate("ab/+c", 5, &off), WM_TOPIC_WILDCARD_IN_NAME);
    cr_expect_eq(off, 3);
    cr_expect_eq(wm_topic_name_validate("a\0b", 3, &off), WM_TOPIC_NUL, "§4.7.3: no U+0000");
    cr_expect_eq(off, 1);
    cr_expect_eq(name("a\xed\xa0\x80"), WM_TOPIC_BAD_UTF8, "§1.5.4: no surrogates");
    cr_expect_eq(name("\xc0\xaf"), WM_TOPIC_BAD_UTF8, "§1.5.4: no overlong forms");
    cr_expect_eq(name("\xef\xbb\xbf" "a"), WM_TOPIC_OK, "§1.5.4: U+FEFF is kept");
    char big[WM_TOPIC_MAX_LEN + 1];
    memset(big, 'a', sizeof big);
    cr_expect_eq(wm_topic_name_validate(big, WM_TOPIC_MAX_LEN, NULL), WM_TOPIC_OK);
    cr_expect_eq(wm_topic_name_validate(big, WM_TOPIC_MAX_LEN + 1, NULL), WM_TOPIC_TOO_LONG);
}

Test(topic_validate, filters_4_7_1)
{
    cr_expect_eq(filt("#"), WM_TOPIC_OK);
    cr_expect_eq(filt("+"), WM_TOPIC_OK);
    cr_expect_eq(filt("+/+/#"), WM_TOPIC_OK);
    cr_expect_eq(filt("sport/tennis#"), WM_TOPIC_HASH_NOT_ALONE, "§4.7.1.2 example: not valid");
    cr_expect_eq(filt("sport/tennis/#/ranking"), WM_TOPIC_HASH_NOT_LAST, "§4.7.1.2 example: not valid");
    cr_expect_eq(filt("sport/#x"), WM_TOPIC_HASH_NOT_ALONE);
    cr_expect_eq(filt("sport+"), WM_TOPIC_PLUS_NOT_ALONE, "§4.7.1.3 example: not valid");
    cr_expect_eq(filt("+x/a"), WM_TOPIC_PLUS_NOT_ALONE);
    cr_expect_eq(filt("a/x+/b"), WM_TOPIC_PLUS_NOT_ALONE);
    cr_expect_eq(filt(""), WM_TOPIC_EMPTY);
    size_t off = 0;
    cr_expect_eq(wm_topic_filter_validate("ab/c#", 5, &off), WM_TOPIC_HASH_NOT_ALONE);
    cr_expect_eq(off, 4);
}

Test(topic_validate, shared_4_8_2)
{
    cr_expect_eq(filt("$share/g/a/+"), WM_TOPIC_OK);
    cr_expect_eq(filt("$share/g/#"), WM_TOPIC_OK);
    cr_expect_eq(filt("$share//a"), WM_TOPIC_SHARE_EMPTY_NAME, "ShareName at least one character");
    cr_expect_eq(filt("$share/"), WM_TOPIC_SHARE_EMPTY_NAME);
    cr_expect_eq(filt("$share/g"), WM_TOPIC_SHARE_NO_FILTER, "ShareName must be followed by '/'");
    cr_expect_eq(filt("$share/g/"), WM_TOPIC_SHARE_NO_FILTER, "'/' must be followed by a filter");
    cr_expect_eq(filt("$share/g+/a"), WM_TOPIC_SHARE_BAD_NAME);
    cr_expect_eq(filt("$share/#/a"), WM_TOPIC_SHARE_BAD_NAME);
    cr_expect_eq(filt("$share/g/a#"), WM_TOPIC_HASH_NOT_ALONE, "the inner filter follows 4.7");
    size_t off = 0;
    cr_expect_eq(wm_topic_filter_validate("$share/g/a/b+", 13, &off), WM_TOPIC_PLUS_NOT_ALONE);
    cr_expect_eq(off, 12, "offset is in the whole filter");
    cr_expect_eq(filt("$sharex/a"), WM_TOPIC_OK, "only \"$share/\" starts a shared subscription");
    cr_expect_eq(filt("$share"), WM_TOPIC_OK);

    wm_topic_share sh;
    cr_assert(wm_topic_share_split("$share/grp/a/b", 14, &sh));
    cr_expect_eq(sh.name_len, 3);
    cr_expect(!memcmp(sh.name, "grp", 3));
    cr_expect_eq(sh.filter_len, 3);
    cr_expect(!memcmp(sh.filter, "a/b", 3));
    cr_expect_not(wm_topic_share_split("a/b", 3, &sh));
}

/* Every status has a distinct name and a message naming its section. */
Test(topic_validate, status_names)
{
    for (int s = WM_TOPIC_EMPTY; s <= WM_TOPIC_SHARE_NO_FILTER; s++) {
        cr_expect_str_neq(wm_topic_status_name((wm_topic_status)s), "unknown");
        cr_expect(strstr(wm_topic_status_message((wm_topic_status)s), "MQTT 5.0") != NULL);
        for (int o = WM_TOPIC_EMPTY; o < s; o++)
            cr_expect_str_neq(wm_topic_status_name((wm_topic_status)s), wm_topic_status_name((wm_topic_status)o));
    }
}
