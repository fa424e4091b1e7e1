/* Schema registry loader and Content Type binding (control/schema_registry.h). */
#include "control/schema_registry.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_xsd.h"

/* A refusal at a column of a registry line (an option or a binding). */
static int fail_col(wm_load_error *err, const char *file, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail_col(wm_load_error *err, const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wm_load_error_vset(err, file, line, fmt, ap);
    va_end(ap);
    if (err) err->column = col;
    return -1;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > WM_EXI_CT_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return false;
    return true;
}

void wm_schema_reg_free(wm_schema_reg *r)
{
    if (!r) return;
    for (uint32_t i = 0; i < r->n; i++) {
        wm_schema_reg_entry *e = &r->e[i];
        free(e->name);
        free(e->path);
        wm_exi_grammar_free(e->g);
        for (size_t k = 0; k < e->n_ns; k++) free((char *)e->ns[k].prefix); /* prefix and uri share one block */
        free(e->ns);
    }
    free(r->e);
    free(r);
}

int wm_schema_reg_load(const char *file, wm_schema_reg **out, wm_load_error *err)
{
    *out = NULL;
    FILE *f = fopen(file, "r");
    if (!f) return wm_load_error_set(err, file, 0, "cannot open");
    wm_schema_reg *r = calloc(1, sizeof *r);
    if (!r) {
        fclose(f);
        return wm_load_error_set(err, file, 0, "out of memory");
    }
    const char *slash = strrchr(file, '/');
    size_t dirlen = slash ? (size_t)(slash - file) + 1 : 0;
    char line[4098];
    unsigned ln = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') { rc = wm_load_error_set(err, file, ln, "line longer than 4096 bytes"); break; }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok) continue;
        if (!name_ok(tok)) { rc = wm_load_error_set(err, file, ln, "bad schema name '%s' (1..64 of A-Z a-z 0-9 . _ -)", tok); break; }
        if (wm_schema_reg_find(r, tok, strlen(tok)) != UINT32_MAX) { rc = wm_load_error_set(err, file, ln, "schema '%s' defined twice", tok); break; }
        if (r->n >= WM_SCHEMA_REG_MAX) { rc = wm_load_error_set(err, file, ln, "more than %u schemas", WM_SCHEMA_REG_MAX); break; }
        char *path = strtok_r(NULL, " \t\r\n", &save);
        if (!path) { rc = wm_load_error_set(err, file, ln, "schema '%s' has no XSD path", tok); break; }
        wm_schema_reg_entry *ne = realloc(r->e, (r->n + 1) * sizeof *ne);
        if (!ne) { rc = wm_load_error_set(err, file, ln, "out of memory"); break; }
        r->e = ne;
        wm_schema_reg_entry *e = &r->e[r->n++];
        memset(e, 0, sizeof *e);
        e->name = strdup(tok);
        size_t pl = strlen(path);
        e->path = malloc((path[0] == '/' ? 0 : dirlen) + pl + 1);
        if (!e->name || !e->path) { rc = wm_load_error_set(err, file, ln, "out of memory"); break; }
        if (path[0] == '/') memcpy(e->path, path, pl + 1);
        else {
            memcpy(e->path, file, dirlen);
            memcpy(e->path + dirlen, path, pl + 1);
        }
        wm_exi_options_default(&e->oob);
        wm_exi_oob ov = { 0 };
        for (char *b; (b = strtok_r(NULL, " \t\r\n", &save));) {
            unsigned col = (unsigned)(b - line) + 1;
            char *eq = strchr(b, '='), why[160];
            size_t bl = strlen(b), kl = eq ? (size_t)(eq - b) : bl;
            wm_exi_oob_status os = wm_exi_oob_set(&ov, b, kl, eq ? eq + 1 : NULL, eq ? bl - kl - 1 : 0, why, sizeof why);
            if (os == WM_EXI_OOB_BAD) { rc = fail_col(err, file, ln, col, "%s", why); break; }
            if (os == WM_EXI_OOB_OK) continue;
            if (!eq) {
                rc = fail_col(err, file, ln, col, "unknown option '%s' (%s; or a PREFIX=URI binding)", b, WM_EXI_OOB_NAMES);
                break;
            }
            char *copy = strdup(b);
            wm_xp_ns *nn = realloc(e->ns, (e->n_ns + 1) * sizeof *nn);
            if (nn) e->ns = nn;
            if (!copy || !nn) { free(copy); rc = wm_load_error_set(err, file, ln, "out of memory"); break; }
            if (!wm_xp_ns_parse(copy, &e->ns[e->n_ns])) {
                free(copy);
                rc = fail_col(err, file, ln, col, "bad namespace binding '%s' (PREFIX=URI)", b);
                break;
            }
            if (wm_xp_ns_conflict(e->ns, e->n_ns, &e->ns[e->n_ns], why, sizeof why)) {
                free(copy);
                rc = fail_col(err, file, ln, col, "%s", why);
                break;
            }
            e->n_ns++;
        }
        wm_exi_oob_apply(&ov, &e->oob);
        if (rc) break;
        wm_exi_error xe = { 0 };
        if (wm_exi_xsd_compile(e->path, &e->g, &xe)) { rc = wm_load_error_set(err, file, ln, "schema %s: %s", e->path, xe.msg); break; }
    }
    if (!rc && ferror(f)) rc = wm_load_error_set(err, file, 0, "read error: %s", strerror(errno)); /* EISDIR: "Is a directory" */
    fclose(f);
    if (rc) {
        wm_schema_reg_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

uint32_t wm_schema_reg_find(const wm_schema_reg *r, const char *name, size_t len)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (strlen(r->e[i].name) == len && !memcmp(r->e[i].name, name, len)) return i;
    return UINT32_MAX;
}

void wm_schema_reg_schemas(const wm_schema_reg *r, wm_xpf_schema *out)
{
    for (uint32_t i = 0; i < r->n; i++) out[i] = (wm_xpf_schema){ r->e[i].g, r->e[i].ns, r->e[i].n_ns };
}

wm_exi_ct_status wm_schema_reg_bind(const wm_schema_reg *r, const char *ct, size_t len, uint32_t *id,
                                    wm_exi_options *oob, wm_exi_oob *ct_ov, char *why, size_t whylen)
{
    wm_exi_ct c;
    *id = UINT32_MAX;
    wm_exi_ct_status st = wm_exi_content_type_parse(ct, len, &c, why, whylen);
    if (st != WM_EXI_CT_OK) return st;
    if (ct_ov) *ct_ov = c.ov;
    *id = r ? wm_schema_reg_find(r, c.schema, c.schema_len) : UINT32_MAX;
    if (*id == UINT32_MAX) {
        snprintf(why, whylen, "schema '%s' is not in the registry", c.schema);
        return WM_EXI_CT_OK;
    }
    *oob = r->e[*id].oob;
    wm_exi_oob_apply(&c.ov, oob);
    return WM_EXI_CT_OK;
}
