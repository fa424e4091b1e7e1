/* One filter automaton per schema, addressed by global query ids
 * (matcher/xpath_set.h). */
#include "matcher/xpath_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct set_schema {
    wm_xpf *f;                  /* NULL when no query uses the schema */
    uint32_t n;
    uint32_t *global;           /* local query index -> global id */
} set_schema;

struct wm_xpf_set {
    uint32_t n_schemas, n_q;
    set_schema *sch;
    uint32_t *schema_of;        /* [n_q] */
    uint32_t *local_of;         /* [n_q] */
};

struct wm_xpf_set_ctx {
    const wm_xpf_set *s;
    uint32_t n_schemas;         /* copied: freeing the context never reads the set */
    wm_xpf_ctx **ctx;           /* per schema */
    uint32_t *cand;             /* local ids scratch [n_q] */
    uint64_t *bits;             /* [(max n + 63) / 64] */
};

wm_xpf_status wm_xpf_set_build(const wm_xpf_schema *schemas, uint32_t n_schemas, const wm_xpf_query_def *queries,
                               uint32_t n_q, wm_xpf_set **out, wm_xpf_error *err)
{
    *out = NULL;
    if (err) {
        memset(err, 0, sizeof *err);
        err->query = UINT32_MAX;
    }
    wm_xpf_set *s = calloc(1, sizeof *s);
    const char **texts = malloc((n_q ? n_q : 1) * sizeof *texts);
    wm_xpf_status rc = WM_XPF_E_MEMORY;
    if (!s || !texts) goto fail;
    s->n_schemas = n_schemas;
    s->n_q = n_q;
    s->sch = calloc(n_schemas ? n_schemas : 1, sizeof *s->sch);
    s->schema_of = malloc((n_q ? n_q : 1) * sizeof *s->schema_of);
    s->local_of = malloc((n_q ? n_q : 1) * sizeof *s->local_of);
    if (!s->sch || !s->schema_of || !s->local_of) goto fail;
    for (uint32_t q = 0; q < n_q; q++) {
        uint32_t k = queries[q].schema;
        if (k >= n_schemas || !schemas[k].g) {
            if (err) {
                err->query = q;
                snprintf(err->msg, sizeof err->msg, "schema id %u is not defined", k);
            }
            rc = WM_XPF_E_QUERY;
            goto fail;
        }
        s->schema_of[q] = k;
        s->local_of[q] = s->sch[k].n++;
    }
    for (uint32_t k = 0; k < n_schemas; k++) {
        set_schema *ss = &s->sch[k];
        if (!ss->n) continue;
        if (!(ss->global = malloc(ss->n * sizeof *ss->global))) goto fail;
        uint32_t m = 0;
        for (uint32_t q = 0; q < n_q; q++)
            if (s->schema_of[q] == k) {
                ss->global[m] = q;
                texts[m++] = queries[q].xpath;
            }
        wm_xpf_status st = wm_xpf_compile(schemas[k].g, texts, m, schemas[k].ns, schemas[k].n_ns, &ss->f, err);
        if (st) {
            if (err && err->query != UINT32_MAX && err->query < m) err->query = ss->global[err->query];
            rc = st;
            goto fail;
        }
    }
    free(texts);
    *out = s;
    return WM_XPF_OK;
fail:
    free(texts);
    wm_xpf_set_free(s);
    if (rc == WM_XPF_E_MEMORY && err && !err->msg[0]) snprintf(err->msg, sizeof err->msg, "out of memory");
    return rc;
}

void wm_xpf_set_free(wm_xpf_set *s)
{
    if (!s) return;
    for (uint32_t k = 0; s->sch && k < s->n_schemas; k++) {
        wm_xpf_free(s->sch[k].f);
        free(s->sch[k].global);
    }
    free(s->sch);
    free(s->schema_of);
    free(s->local_of);
    free(s);
}

wm_xpf_set_ctx *wm_xpf_set_ctx_new(const wm_xpf_set *s, const wm_exi_limits *lim)
{
    wm_xpf_set_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->s = s;
    c->n_schemas = s->n_schemas;
    uint32_t maxn = 1;
    c->ctx = calloc(s->n_schemas ? s->n_schemas : 1, sizeof *c->ctx);
    c->cand = malloc((s->n_q ? s->n_q : 1) * sizeof *c->cand);
    if (!c->ctx || !c->cand) goto fail;
    for (uint32_t k = 0; k < s->n_schemas; k++) {
        if (!s->sch[k].f) continue;
        if (s->sch[k].n > maxn) maxn = s->sch[k].n;
        if (!(c->ctx[k] = wm_xpf_ctx_new(s->sch[k].f, lim))) goto fail;
    }
    if (!(c->bits = calloc((maxn + 63) / 64, sizeof *c->bits))) goto fail;
    return c;
fail:
    wm_xpf_set_ctx_free(c);
    return NULL;
}

void wm_xpf_set_ctx_free(wm_xpf_set_ctx *c)
{
    if (!c) return;
    for (uint32_t k = 0; c->ctx && k < c->n_schemas; k++) wm_xpf_ctx_free(c->ctx[k]);
    free(c->ctx);
    free(c->cand);
    free(c->bits);
    free(c);
}

void wm_xpf_set_ctx_set_whole_stream(wm_xpf_set_ctx *c, bool on)
{
    for (uint32_t k = 0; k < c->s->n_schemas; k++)
        if (c->ctx[k]) wm_xpf_ctx_set_whole_stream(c->ctx[k], on);
}

wm_xpf_status wm_xpf_set_match(wm_xpf_set_ctx *c, uint32_t schema, const uint8_t *payload, size_t len,
                               const wm_exi_options *oob, const uint32_t *cand, uint32_t n_cand, uint32_t *out,
                               uint32_t *n_out, wm_exi_error *exi_err)
{
    const wm_xpf_set *s = c->s;
    *n_out = 0;
    if (schema >= s->n_schemas) return WM_XPF_E_QUERY;
    if (!s->sch[schema].f) return WM_XPF_OK;
    uint32_t nl = 0;
    for (uint32_t i = 0; i < n_cand; i++)
        if (cand[i] < s->n_q && s->schema_of[cand[i]] == schema) c->cand[nl++] = s->local_of[cand[i]];
    if (!nl) return WM_XPF_OK; /* nobody here filters on content: no decoding */
    wm_xpf_status st = wm_xpf_match(c->ctx[schema], payload, len, oob, c->cand, nl, c->bits, NULL, exi_err);
    if (st) return st;
    for (uint32_t i = 0; i < n_cand; i++) {
        uint32_t q = cand[i];
        if (q >= s->n_q || s->schema_of[q] != schema) continue;
        uint32_t b = wm_xpf_bit_of(s->sch[schema].f, s->local_of[q]);
        if (c->bits[b >> 6] >> (b & 63) & 1) out[(*n_out)++] = q;
    }
    return WM_XPF_OK;
}
