/* `wmctl match --subs SUBS.jsonl [--filters FILTERS.json] --pubs PUBS.jsonl`:
 * loads neighborhoods and subscriptions into a matcher and prints, for each
 * publication, the subscriptions it reaches (formats: control/match_input.h).
 * Any bad line stops with exit 2 and "FILE:LINE: reason" on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/load_error.h"
#include "control/match_input.h"
#include "control/resolution_compile.h"
#include "control/wmctl.h"

static const char usage_text[] =
    "usage: wmctl match --subs SUBS.jsonl [--filters FILTERS.json] [--resolution R.wmr] --pubs PUBS.jsonl";

/* Calls fn on each line of path; returns 0, or 2 after printing the error. */
static int each_line(wm_match_input *in, const char *path, bool subs)
{
    char *line = NULL, err[512];
    FILE *f = wmctl_open(path, err, sizeof err);
    if (!f) return wmctl_usage_error("match", "%s", err);
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        const char *out = NULL;
        int r = subs ? wm_match_input_sub(in, line, (size_t)n, lineno, err, sizeof err)
                     : wm_match_input_pub(in, line, (size_t)n, &out, err, sizeof err);
        if (r) {
            wm_load_error le;
            wm_load_error_set(&le, path, (unsigned long)lineno, "%s", err);
            rc = wmctl_load_error("match", &le, 2);
            break;
        }
        if (out) puts(out);
    }
    if (rc == 0 && ferror(f)) rc = wmctl_usage_error("match", "%s: read error: %s", path, strerror(errno));
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

int wmctl_match(int argc, char **argv)
{
    const char *subs = NULL, *filters = NULL, *pubs = NULL, *resolution = NULL;
    for (int i = 1; i < argc; i++) {
        const char **slot = !strcmp(argv[i], "--subs") ? &subs : !strcmp(argv[i], "--filters") ? &filters
                          : !strcmp(argv[i], "--pubs") ? &pubs : !strcmp(argv[i], "--resolution") ? &resolution : NULL;
        if (!slot) return wmctl_usage_error("match", "unknown argument '%s'\n%s", argv[i], usage_text);
        if (i + 1 >= argc) return wmctl_usage_error("match", "%s needs a file\n%s", argv[i], usage_text);
        if (*slot) return wmctl_usage_error("match", "%s given twice: give it once", argv[i]);   /* the last one won */
        *slot = argv[++i];
    }
    if (!subs || !pubs) return wmctl_usage_error("match", "no %s\n%s", !subs ? "--subs" : "--pubs", usage_text);
    wm_match_input *in = wm_match_input_new(NULL);
    if (!in) return wmctl_usage_error("match", "cannot create the matcher (out of memory)");
    int rc = 0;
    if (filters) {
        size_t len;
        char err[512];
        char *text = (char *)wmctl_read_file(filters, WMCTL_MAX_FILTERS, &len, err, sizeof err);
        if (!text) rc = wmctl_usage_error("match", "%s", err);
        else if (wm_match_input_filters(in, text, len, err, sizeof err)) rc = wmctl_usage_error("match", "%s:%s", filters, err);
        free(text);
    }
    if (rc == 0 && resolution) {
        /* Neighborhoods resolved offline (wmctl resolve --out), by name. */
        wm_resolution_error re;
        wm_resolution *r = wm_resolution_open(resolution, &re);
        wm_load_error le;
        char err[400];
        if (!r) rc = wm_resolution_error_load(&re, resolution, &le);
        else if (wm_resolution_compile(wm_match_input_matcher(in), r, err, sizeof err))
            rc = wm_load_error_set(&le, resolution, 0, "%s", err);
        if (rc) rc = wmctl_load_error("match", &le, 2);
        wm_resolution_close(r);
    }
    if (rc == 0) rc = each_line(in, subs, true);
    if (rc == 0) rc = each_line(in, pubs, false);
    wm_match_input_free(in);
    return rc;
}
