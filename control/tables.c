/* Resolution + subscriptions -> one immutable set of match tables (see
 * control/tables.h). Reuses the resolution compile (control/resolution_compile.h)
 * and the SUBS line parser (control/match_input.h) on a fresh matcher, which
 * is what makes the compile all-or-nothing. */
#include "control/tables.h"

#include <errno.h>
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

/* Frees what was built and passes the loader's failure on. */
static wm_tables *fail(wm_tables *t)
{
    wm_tables_free(t);
    return NULL;
}

static int add_resolution(wm_tables *t, const char *path, wm_load_error *err)
{
    wm_resolution_error re;
    wm_resolution *r = wm_resolution_open(path, &re);
    if (!r) return wm_resolution_error_load(&re, path, err);
    char why[400];
    int rc = wm_resolution_compile(wm_match_input_matcher(t->in), r, why, sizeof why);
    if (rc) wm_load_error_set(err, path, 0, "%s", why);
    else t->n_nbhds = wm_resolution_count(r);
    wm_resolution_close(r);
    return rc;
}

static int add_subs(wm_tables *t, const char *path, wm_load_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return wm_load_error_set(err, path, 0, "%s", strerror(errno));
    char *line = NULL, why[400];
    size_t lcap = 0;
    ssize_t n;
    unsigned long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        if (wm_match_input_sub(t->in, line, (size_t)n, (long)lineno, why, sizeof why))
            rc = wm_load_error_set(err, path, lineno, "%s", why);
    }
    if (rc == 0 && ferror(f)) rc = wm_load_error_set(err, path, 0, "read error: %s", strerror(errno)); /* EISDIR: "Is a directory" */
    free(line);
    fclose(f);
    return rc;
}

wm_tables *wm_tables_compile(const wm_matcher_config *cfg, const char *resolution_path, const char *subs_path,
                             wm_load_error *err)
{
    wm_tables_paths p = { resolution_path, subs_path, NULL };
    return wm_tables_compile_paths(cfg, &p, err);
}

wm_tables *wm_tables_compile_paths(const wm_matcher_config *cfg, const wm_tables_paths *p, wm_load_error *err)
{
    wm_tables *t = calloc(1, sizeof *t);
    if (!t || !(t->in = wm_match_input_new(cfg))) {
        wm_load_error_set(err, NULL, 0, "out of memory");
        return fail(t);
    }
    wm_schema_reg *reg = NULL;
    if (p->schemas && wm_schema_reg_load(p->schemas, &reg, err)) return fail(t);
    if (!(t->content = wm_content_new(reg))) {
        wm_load_error_set(err, NULL, 0, "out of memory");
        return fail(t);
    }
    wm_match_input_set_content(t->in, t->content);
    if (p->resolution && add_resolution(t, p->resolution, err)) return fail(t);
    if (p->subs && add_subs(t, p->subs, err)) return fail(t);
    wm_content_snap *old;
    char why[300];
    /* the filters it compiles together are the subscriptions file's */
    if (wm_content_commit(t->content, &old, why, sizeof why)) {
        wm_load_error_set(err, p->subs, 0, "%s", why);
        return fail(t);
    }
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
