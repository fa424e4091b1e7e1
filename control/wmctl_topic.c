/* `wmctl topic`: the codec's topic rules (MQTT 5.0 §4.7, §4.8.2) on the
 * command line, so a user can ask what wirematch thinks of a filter. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "control/wmctl.h"

/* s as a terminal may show it: well-formed UTF-8 as is, control bytes, '"',
 * '\\' and the bytes of ill-formed UTF-8 as escapes (the operand being
 * refused is often exactly such bytes) */
static void put_quoted(FILE *out, const char *s)
{
    size_t n = strlen(s), bad = n;
    bool utf8_ok = wm_utf8_validate((const uint8_t *)s, n, &bad) == WM_UTF8_OK;
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b == '"' || b == '\\') fprintf(out, "\\%c", b);
        else if (b < 0x20 || b == 0x7f || (b >= 0x80 && !utf8_ok)) fprintf(out, "\\x%02x", b);
        else fputc(b, out);
    }
    fputc('"', out);
}

static int report(const char *what, const char *s, wm_topic_status st, size_t off)
{
    fprintf(stderr, "wmctl topic: invalid %s ", what);
    put_quoted(stderr, s);
    fprintf(stderr, ": %s [%s] at byte %zu\n", wm_topic_status_message(st), wm_topic_status_name(st), off);
    return 2;
}

int wmctl_topic(int argc, char **argv)
{
    if (argc < 2) return wmctl_usage_error("topic", "expected: match FILTER TOPIC | check-filter FILTER | check-name NAME");
    const char *sub = argv[1];
    size_t off = 0;
    wm_topic_status st;
    if (!strcmp(sub, "match")) {
        if (argc != 4)
            return wmctl_usage_error("topic", "match takes 2 operands, %d given\nusage: wmctl topic match FILTER TOPIC", argc - 2);
        const char *f = argv[2], *t = argv[3];
        if ((st = wm_topic_filter_validate(f, strlen(f), &off)) != WM_TOPIC_OK) return report("filter", f, st, off);
        if ((st = wm_topic_name_validate(t, strlen(t), &off)) != WM_TOPIC_OK) return report("topic name", t, st, off);
        wm_topic_share sh;
        size_t flen = strlen(f);
        if (wm_topic_share_split(f, flen, &sh)) { f = sh.filter; flen = sh.filter_len; }
        puts(wm_topic_match(f, flen, t, strlen(t)) ? "true" : "false");
        return 0;
    }
    if (!strcmp(sub, "check-filter") || !strcmp(sub, "check-name")) {
        if (argc != 3)
            return wmctl_usage_error("topic", "%s takes 1 operand, %d given\nusage: wmctl topic %s STRING", sub, argc - 2, sub);
        int filter = !strcmp(sub, "check-filter");
        const char *s = argv[2];
        st = filter ? wm_topic_filter_validate(s, strlen(s), &off) : wm_topic_name_validate(s, strlen(s), &off);
        if (st != WM_TOPIC_OK) return report(filter ? "filter" : "topic name", s, st, off);
        puts("valid");
        return 0;
    }
    return wmctl_usage_error("topic", "unknown sub-command '%s'", sub);
}
