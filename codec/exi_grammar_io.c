/* Compiled EXI grammars as bytes (see wm_exi_grammar_serialize in
 * exi_grammar.h). Layout, all integers in host byte order (the file is a
 * cache for the machine that compiled it, guarded by magic and sizes):
 *   "WMEXIG01", u32 sizeof of each record kind (5), flags,
 *   counts: uris lids types states prods tgrams elems doc frag gattrs,
 *   anytype dt_string dt_boolean elem_fragment,
 *   the record arrays, then every string NUL-terminated: URIs, local names,
 *   for each datatype its enumeration values; then restricted sets (u32). */
#include <stdlib.h>
#include <string.h>

#include "codec/exi_grammar.h"

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->oom || !n) return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->len + n) nc *= 2;
        uint8_t *p = realloc(b->p, nc);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void put32(buf *b, uint32_t v) { put(b, &v, 4); }
static void puts0(buf *b, const char *s) { put(b, s, strlen(s) + 1); }

static const uint32_t rec_sizes[5] = { sizeof(wm_exi_prod), sizeof(wm_exi_state), sizeof(wm_exi_tgram),
                                       sizeof(wm_exi_elem), sizeof(wm_exi_datatype) };

wm_exi_status wm_exi_grammar_serialize(const wm_exi_grammar *g, uint8_t **out, size_t *len)
{
    buf b = { 0 };
    put(&b, "WMEXIG01", 8);
    for (int i = 0; i < 5; i++) put32(&b, rec_sizes[i]);
    put32(&b, g->schemaless);
    uint32_t counts[10] = { g->n_uris, g->n_lids, g->n_types, g->n_states, g->n_prods,
                            g->n_tgrams, g->n_elems, g->n_doc, g->n_frag, g->n_gattrs };
    put(&b, counts, sizeof counts);
    put32(&b, g->anytype); put32(&b, g->dt_string); put32(&b, g->dt_boolean); put32(&b, g->elem_fragment);
    put(&b, g->uri_lid_first, g->n_uris * 4);
    put(&b, g->uri_lid_count, g->n_uris * 4);
    put(&b, g->lname_uri, g->n_lids * 4);
    put(&b, g->types, g->n_types * sizeof *g->types);
    put(&b, g->states, g->n_states * sizeof *g->states);
    put(&b, g->prods, g->n_prods * sizeof *g->prods);
    put(&b, g->tgrams, g->n_tgrams * sizeof *g->tgrams);
    put(&b, g->elems, g->n_elems * sizeof *g->elems);
    put(&b, g->doc_elems, g->n_doc * 4);
    put(&b, g->frag, g->n_frag * sizeof *g->frag);
    put(&b, g->gattrs, g->n_gattrs * sizeof *g->gattrs);
    for (uint32_t i = 0; i < g->n_uris; i++) puts0(&b, g->uris[i]);
    for (uint32_t i = 0; i < g->n_lids; i++) puts0(&b, g->lnames[i]);
    for (uint32_t i = 0; i < g->n_types; i++)
        for (uint32_t k = 0; k < g->types[i].n_enum; k++) puts0(&b, g->types[i].enum_values[k]);
    for (uint32_t i = 0; i < g->n_types; i++) put(&b, g->types[i].rcs, g->types[i].n_rcs * 4);
    if (b.oom) { free(b.p); return WM_EXI_E_MEMORY; }
    *out = b.p;
    *len = b.len;
    return WM_EXI_OK;
}

typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
} rd;

static bool take(rd *r, void *d, size_t n)
{
    if (r->len - r->pos < n) return false;
    if (n) memcpy(d, r->p + r->pos, n);
    r->pos += n;
    return true;
}

static bool take_arr(rd *r, void **d, uint64_t n, size_t elem)
{
    if (n > (r->len - r->pos) / (elem ? elem : 1)) return false;
    *d = calloc(n ? n : 1, elem);
    return *d && take(r, *d, n * elem);
}

static const char *take_str(rd *r)
{
    const uint8_t *z = memchr(r->p + r->pos, 0, r->len - r->pos);
    if (!z) return NULL;
    size_t n = (size_t)(z - (r->p + r->pos));
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, r->p + r->pos, n + 1);
    r->pos += n + 1;
    return s;
}

#define BAD(msg) do { wm_exi_grammar_free(g); return wm_exi_fail(err, WM_EXI_E_GRAMMAR, r.pos * 8, "grammar file: %s", msg); } while (0)

wm_exi_status wm_exi_grammar_deserialize(const uint8_t *data, size_t len, wm_exi_grammar **out, wm_exi_error *err)
{
    rd r = { data, len, 0 };
    *out = NULL;
    char magic[8];
    uint32_t sizes[5], schemaless, c[10], misc[4];
    wm_exi_grammar *g = calloc(1, sizeof *g);
    if (!g) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    if (!take(&r, magic, 8) || memcmp(magic, "WMEXIG01", 8)) BAD("not a wirematch EXI grammar (magic)");
    if (!take(&r, sizes, sizeof sizes) || memcmp(sizes, rec_sizes, sizeof sizes)) BAD("written by another build (record sizes)");
    if (!take(&r, &schemaless, 4) || !take(&r, c, sizeof c) || !take(&r, misc, sizeof misc)) BAD("truncated header");
    g->schemaless = schemaless != 0;
    g->n_uris = c[0]; g->n_lids = c[1]; g->n_types = c[2]; g->n_states = c[3]; g->n_prods = c[4];
    g->n_tgrams = c[5]; g->n_elems = c[6]; g->n_doc = c[7]; g->n_frag = c[8]; g->n_gattrs = c[9];
    g->anytype = misc[0]; g->dt_string = misc[1]; g->dt_boolean = misc[2]; g->elem_fragment = misc[3];
    bool ok = take_arr(&r, (void **)&g->uri_lid_first, g->n_uris, 4) && take_arr(&r, (void **)&g->uri_lid_count, g->n_uris, 4) &&
              take_arr(&r, (void **)&g->lname_uri, g->n_lids, 4) && take_arr(&r, (void **)&g->types, g->n_types, sizeof *g->types);
    /* the datatypes' pointers in the file are not data: clear them before
     * anything can fail (wm_exi_grammar_free follows them); counts stay */
    uint32_t *ne = calloc(g->n_types ? g->n_types : 1, 4), *nr = calloc(g->n_types ? g->n_types : 1, 4);
    if (!ne || !nr) { free(ne); free(nr); g->n_types = 0; BAD("out of memory"); }
    for (uint32_t i = 0; g->types && i < g->n_types; i++) {
        ne[i] = g->types[i].n_enum;
        nr[i] = g->types[i].n_rcs;
        g->types[i].enum_values = NULL;
        g->types[i].rcs = NULL;
        g->types[i].n_enum = g->types[i].n_rcs = 0;
    }
    if (!g->types) g->n_types = 0;
    ok = ok && take_arr(&r, (void **)&g->states, g->n_states, sizeof *g->states) &&
         take_arr(&r, (void **)&g->prods, g->n_prods, sizeof *g->prods) &&
         take_arr(&r, (void **)&g->tgrams, g->n_tgrams, sizeof *g->tgrams) &&
         take_arr(&r, (void **)&g->elems, g->n_elems, sizeof *g->elems) && take_arr(&r, (void **)&g->doc_elems, g->n_doc, 4) &&
         take_arr(&r, (void **)&g->frag, g->n_frag, sizeof *g->frag) && take_arr(&r, (void **)&g->gattrs, g->n_gattrs, sizeof *g->gattrs);
    if (!ok) { free(ne); free(nr); BAD("truncated arrays"); }
    g->uris = calloc(g->n_uris ? g->n_uris : 1, sizeof *g->uris);
    g->lnames = calloc(g->n_lids ? g->n_lids : 1, sizeof *g->lnames);
    if (!g->uris || !g->lnames) BAD("out of memory");
    for (uint32_t i = 0; i < g->n_uris; i++) if (!(g->uris[i] = take_str(&r))) BAD("truncated URI strings");
    for (uint32_t i = 0; i < g->n_lids; i++) if (!(g->lnames[i] = take_str(&r))) BAD("truncated local names");
    for (uint32_t i = 0; i < g->n_types; i++) {
        if (!ne[i]) continue;
        if (ne[i] > r.len - r.pos) { free(ne); free(nr); BAD("enumeration count"); }
        const char **ev = calloc(ne[i], sizeof *ev);
        if (!ev) { free(ne); free(nr); BAD("out of memory"); }
        g->types[i].enum_values = ev;
        for (uint32_t k = 0; k < ne[i]; k++) {
            if (!(ev[k] = take_str(&r))) { free(ne); free(nr); BAD("truncated enumeration values"); }
            g->types[i].n_enum = k + 1;
        }
    }
    for (uint32_t i = 0; i < g->n_types; i++) {
        if (!nr[i]) continue;
        if (nr[i] > 255 || !take_arr(&r, (void **)&g->types[i].rcs, nr[i], 4)) { free(ne); free(nr); BAD("restricted character sets"); }
        g->types[i].n_rcs = nr[i];
    }
    free(ne);
    free(nr);
    if (r.pos != r.len) BAD("trailing bytes");
    /* every index must point inside its array: a loaded grammar drives the
     * decoder's table lookups */
    uint32_t lid_end = 0;
    for (uint32_t u = 0; u < g->n_uris; u++) {
        if (g->uri_lid_first[u] != lid_end || g->uri_lid_count[u] > g->n_lids - lid_end) BAD("URI partitions");
        lid_end += g->uri_lid_count[u];
    }
    if (lid_end != g->n_lids || (!g->schemaless && g->n_uris < 4) || g->n_uris < 3) BAD("URI partitions");
    for (uint32_t i = 0; i < g->n_lids; i++) if (g->lname_uri[i] >= g->n_uris) BAD("local-name URI");
    for (uint32_t i = 0; i < g->n_types; i++) {
        const wm_exi_datatype *t = &g->types[i];
        if (t->kind > WM_EXI_DT_QNAME || t->variant > WM_EXI_TIME || t->nbit_width > 12 ||
            (t->kind == WM_EXI_DT_LIST && (t->list_item >= g->n_types || g->types[t->list_item].kind == WM_EXI_DT_LIST)) ||
            (t->kind == WM_EXI_DT_ENUM && t->n_enum == 0) || (t->kind == WM_EXI_DT_RCS_STRING && t->n_rcs == 0))
            BAD("datatype");
    }
    for (uint32_t i = 0; i < g->n_states; i++) {
        const wm_exi_state *s = &g->states[i];
        if (s->first > g->n_prods || s->n > g->n_prods - s->first || s->type >= g->n_tgrams) BAD("state");
    }
    for (uint32_t i = 0; i < g->n_prods; i++) {
        const wm_exi_prod *p = &g->prods[i];
        if (p->term > WM_EXI_T_CH) BAD("production terminal");
        if (p->term != WM_EXI_T_EE && p->next >= g->n_states) BAD("production target");
        if ((p->term == WM_EXI_T_AT || p->term == WM_EXI_T_SE) && (p->lid >= g->n_lids || p->uri >= g->n_uris || g->lname_uri[p->lid] != p->uri))
            BAD("production qname");
        if ((p->term == WM_EXI_T_AT_URI || p->term == WM_EXI_T_SE_URI) && p->uri >= g->n_uris) BAD("production URI");
        if (p->term == WM_EXI_T_SE && p->arg >= g->n_elems && !(p->arg == WM_EXI_ELEM_FRAGMENT && g->elem_fragment < g->n_tgrams))
            BAD("production element");
        if ((p->term == WM_EXI_T_AT || p->term == WM_EXI_T_CH) && p->arg != WM_EXI_NONE && p->arg >= g->n_types) BAD("production datatype");
    }
    for (uint32_t i = 0; i < g->n_tgrams; i++) {
        const wm_exi_tgram *t = &g->tgrams[i];
        if (t->start >= g->n_states || t->empty_start >= g->n_states || t->content >= g->n_states ||
            (t->lid != WM_EXI_NONE && (t->lid >= g->n_lids || t->uri >= g->n_uris)) ||
            (t->simple_dt != WM_EXI_NONE && t->simple_dt >= g->n_types))
            BAD("type grammar");
    }
    for (uint32_t i = 0; i < g->n_elems; i++)
        if (g->elems[i].type >= g->n_tgrams || g->elems[i].lid >= g->n_lids || g->elems[i].uri >= g->n_uris) BAD("element");
    for (uint32_t i = 0; i < g->n_doc; i++) if (g->doc_elems[i] >= g->n_elems) BAD("document grammar");
    for (uint32_t i = 0; i < g->n_frag; i++)
        if ((g->frag[i].elem != WM_EXI_NONE && g->frag[i].elem >= g->n_elems) || g->frag[i].lid >= g->n_lids ||
            g->frag[i].uri >= g->n_uris || (g->frag[i].elem == WM_EXI_NONE && g->elem_fragment >= g->n_tgrams))
            BAD("fragment grammar");
    for (uint32_t i = 0; i < g->n_gattrs; i++)
        if (g->gattrs[i].lid >= g->n_lids || g->gattrs[i].uri >= g->n_uris || g->gattrs[i].dt >= g->n_types) BAD("global attribute");
    if ((g->anytype != WM_EXI_NONE && g->anytype >= g->n_tgrams) || g->dt_string >= g->n_types || g->dt_boolean >= g->n_types ||
        (g->elem_fragment != WM_EXI_NONE && g->elem_fragment >= g->n_tgrams))
        BAD("grammar roots");
    *out = g;
    return WM_EXI_OK;
}
