/* Resolution + subscriptions -> one immutable set of match tables (see
 * control/tables.h). Reuses the resolution compile (control/resolution_compile.h)
 * and the SUBS line parser (control/match_input.h) on a fresh matcher, which
 * is what makes the compile all-or-nothing. */
#include "control/tables.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/content_filters.h"
#include "control/match_input.h"
#include "control/resolution_compile.h"

struct wm_tables {
    wm_match_input *in;
    wm_content *content;
    uint32_t n_nbhds;
    void *user;
    void (*user_free)(void *user);
};

static wm_tables *fail(wm_tables *t, char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static wm_tables *fail(wm_tables *t, char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    wm_tables_free(t);
    return NULL;
}

static int add_resolution(wm_tables *t, const char *path, char *err, size_t cap)
{
    wm_resolution_error re;
    wm_resolution *r = wm_resolution_open(path, &re);
    if (!r) {
        wm_resolution_error_format(&re, err, cap);
        return -1;
    }
    char why[400];
    int rc = wm_resolution_compile(wm_match_input_matcher(t->in), r, why, sizeof why);
    if (rc) snprintf(err, cap, "%s: %s", path, why);
    else t->n_nbhds = wm_resolution_count(r);
    wm_resolution_close(r);
    return rc;
}

static int add_subs(wm_tables *t, const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, cap, "%s: %s", path, strerror(errno)); return -1; }
    char *line = NULL, why[400];
    size_t lcap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        if (wm_match_input_sub(t->in, line, (size_t)n, lineno, why, sizeof why)) {
            snprintf(err, cap, "%s:%ld: %s", path, lineno, why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) { snprintf(err, cap, "%s: read error", path); rc = -1; }
    free(line);
    fclose(f);
    return rc;
}

wm_tables *wm_tables_compile(const wm_matcher_config *cfg, const char *resolution_path, const char *subs_path,
                             char *err, size_t cap)
{
    wm_tables_paths p = { resolution_path, subs_path, NULL };
    return wm_tables_compile_paths(cfg, &p, err, cap);
}

wm_tables *wm_tables_compile_paths(const wm_matcher_config *cfg, const wm_tables_paths *p, char *err, size_t cap)
{
    wm_tables *t = calloc(1, sizeof *t);
    if (!t || !(t->in = wm_match_input_new(cfg))) return fail(t, err, cap, "out of memory");
    wm_schema_reg *reg = NULL;
    if (p->schemas && wm_schema_reg_load(p->schemas, &reg, err, cap)) return fail(t, NULL, 0, "%s", "");
    if (!(t->content = wm_content_new(reg))) return fail(t, err, cap, "out of memory");
    wm_match_input_set_content(t->in, t->content);
    if (p->resolution && add_resolution(t, p->resolution, err, cap)) return fail(t, NULL, 0, "%s", "");
    if (p->subs && add_subs(t, p->subs, err, cap)) return fail(t, NULL, 0, "%s", "");
    wm_content_snap *old;
    char why[300];
    if (wm_content_commit(t->content, &old, why, sizeof why)) return fail(t, err, cap, "%s: %s", p->subs ? p->subs : "", why);
    return t;
}

void wm_tables_free(wm_tables *t)
{
    if (!t) return;
    if (t->user_free) t->user_free(t->user);
    wm_match_input_free(t->in);
    wm_content_free(t->content);
    free(t);
}

wm_matcher *wm_tables_matcher(const wm_tables *t) { return wm_match_input_matcher(t->in); }
wm_content *wm_tables_content(const wm_tables *t) { return t->content; }
const char *wm_tables_sub_id(const wm_tables *t, uint64_t cookie) { return wm_match_input_sub_id(t->in, cookie); }
size_t wm_tables_sub_count(const wm_tables *t) { return wm_match_input_sub_count(t->in); }
uint32_t wm_tables_nbhd_count(const wm_tables *t) { return t->n_nbhds; }

void wm_tables_set_user(wm_tables *t, void *user, void (*free_fn)(void *user))
{
    if (t->user_free) t->user_free(t->user);
    t->user = user;
    t->user_free = free_fn;
}

void *wm_tables_user(const wm_tables *t) { return t->user; }
