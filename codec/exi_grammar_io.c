/* Compiled EXI grammars as bytes (see wm_exi_grammar_serialize in
 * exi_grammar.h). Layout, all integers in host byte order (the file is a
 * cache for the machine that compiled it, guarded by magic and sizes):
 *   header (20 bytes): "WMEXIG" and the format version as two digits ("03"),
 *     u64 body length (bytes after the header), u32 CRC-32 of the body
 *     (codec/crc32.h): the checksum catches a changed byte that would load as
 *     a consistent but different grammar, e.g. one letter of a namespace URI;
 *   body: u32 sizeof of each record kind (5), flags,
 *   counts: uris lids types states prods tgrams elems doc frag gattrs,
 *   anytype dt_string dt_boolean elem_fragment,
 *   the record arrays, then every string NUL-terminated: URIs, local names,
 *   for each datatype its enumeration values; then restricted sets (u32).
 * Version history: 01 had no header beyond the magic (no length, no CRC);
 * 02 had no enum_base in the datatype record (enumerations matched by spelling). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "codec/crc32.h"
#include "codec/exi_grammar.h"

#define MAGIC "WMEXIG"
#define VERSION 3
#define HEADER 20

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
    put(&b, MAGIC, 6);
    char ver[3];
    ver[0] = (char)('0' + VERSION / 10);
    ver[1] = (char)('0' + VERSION % 10);
    put(&b, ver, 2);
    put(&b, (uint8_t[HEADER - 8]){ 0 }, HEADER - 8); /* length and CRC, filled in below */
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
    uint64_t body = b.len - HEADER;
    uint32_t crc = wm_crc32(b.p + HEADER, body);
    memcpy(b.p + 8, &body, 8);
    memcpy(b.p + 16, &crc, 4);
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

/* *at = the array's byte offset in the file, for the structural checks'
 * positions (they run once everything is read) */
static bool take_arr(rd *r, void **d, uint64_t n, size_t elem, size_t *at)
{
    *at = r->pos;
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

/* A bool field of a record array read from the file must hold 0 or 1 (any
 * other byte is not a bool value, and reading it as one is undefined). */
static bool bad_bool(const uint8_t *data, size_t arr, uint32_t n, size_t rec, size_t field, size_t *at)
{
    for (uint32_t i = 0; i < n; i++)
        if (data[arr + (size_t)i * rec + field] > 1) { *at = arr + (size_t)i * rec + field; return true; }
    return false;
}

/* Refusals: the reason and the byte offset of the offending field (in
 * err->bit_pos as 8 x the byte offset, as for streams). */
#define BAD_AT(at, ...) do { \
        wm_exi_fail(err, WM_EXI_E_GRAMMAR, (uint64_t)(at) * 8, "grammar file: " __VA_ARGS__); \
        free(ne); free(nr); wm_exi_grammar_free(g); \
        return WM_EXI_E_GRAMMAR; } while (0)
#define BAD(...) BAD_AT(r.pos, __VA_ARGS__)
/* the byte offset of field f of record i of array a */
#define AT(a, i, type, f) (off.a + (size_t)(i) * sizeof(type) + offsetof(type, f))
#define AT4(a, i) (off.a + (size_t)(i) * 4)

wm_exi_status wm_exi_grammar_deserialize(const uint8_t *data, size_t len, wm_exi_grammar **out, wm_exi_error *err)
{
    rd r = { data, len, 0 };
    *out = NULL;
    uint32_t sizes[5], schemaless, c[10], misc[4];
    uint32_t *ne = NULL, *nr = NULL;
    struct { size_t lid_first, lid_count, lname_uri, types, states, prods, tgrams, elems, doc, frag, gattrs, misc; } off;
    wm_exi_grammar *g = calloc(1, sizeof *g);
    if (!g) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    if (len < 8 || memcmp(data, MAGIC, 6) || data[6] < '0' || data[6] > '9' || data[7] < '0' || data[7] > '9')
        BAD_AT(0, "not a wirematch EXI grammar file (no \"" MAGIC "\" magic)");
    unsigned ver = (unsigned)(data[6] - '0') * 10 + (unsigned)(data[7] - '0');
    if (ver != VERSION)
        BAD_AT(6, "format version %02u, this build reads version %02u only (written by %s wirematch): compile the schema again "
               "with wmctl exi compile", ver, VERSION, ver < VERSION ? "an older" : "a newer");
    if (len < HEADER) BAD_AT(len, "truncated header (%zu of %u bytes)", len, HEADER);
    uint64_t body;
    uint32_t crc;
    memcpy(&body, data + 8, 8);
    memcpy(&crc, data + 16, 4);
    if (body > len - HEADER) BAD_AT(len, "truncated: the header says %llu bytes after it, the file has %zu",
                                    (unsigned long long)body, len - HEADER);
    if (body < len - HEADER) BAD_AT(HEADER + body, "%llu trailing bytes after the %llu the header announces",
                                    (unsigned long long)(len - HEADER - body), (unsigned long long)body);
    uint32_t have = wm_crc32(data + HEADER, body);
    if (have != crc)
        BAD_AT(16, "checksum mismatch (the file is corrupt): the CRC-32 of bytes [%u, %zu) is %08x, the header's is %08x", HEADER,
               len, have, crc);
    r.pos = HEADER;
    if (!take(&r, sizes, sizeof sizes) || memcmp(sizes, rec_sizes, sizeof sizes)) BAD_AT(HEADER, "written by another build (record sizes)");
    off.misc = r.pos;
    if (!take(&r, &schemaless, 4) || !take(&r, c, sizeof c) || !take(&r, misc, sizeof misc)) BAD("truncated header");
    g->schemaless = schemaless != 0;
    g->n_uris = c[0]; g->n_lids = c[1]; g->n_types = c[2]; g->n_states = c[3]; g->n_prods = c[4];
    g->n_tgrams = c[5]; g->n_elems = c[6]; g->n_doc = c[7]; g->n_frag = c[8]; g->n_gattrs = c[9];
    g->anytype = misc[0]; g->dt_string = misc[1]; g->dt_boolean = misc[2]; g->elem_fragment = misc[3];
    bool ok = take_arr(&r, (void **)&g->uri_lid_first, g->n_uris, 4, &off.lid_first) &&
              take_arr(&r, (void **)&g->uri_lid_count, g->n_uris, 4, &off.lid_count) &&
              take_arr(&r, (void **)&g->lname_uri, g->n_lids, 4, &off.lname_uri) &&
              take_arr(&r, (void **)&g->types, g->n_types, sizeof *g->types, &off.types);
    if (!g->types) g->n_types = 0;
    /* before anything is sized by n_types: the count is only bounded once its array was read */
    if (!ok) BAD("truncated arrays (the counts at byte %zu ask for more bytes than the file has)", off.misc + 4);
    /* the datatypes' pointers in the file are not data: clear them before
     * anything can fail (wm_exi_grammar_free follows them); counts stay */
    ne = calloc(g->n_types ? g->n_types : 1, 4);
    nr = calloc(g->n_types ? g->n_types : 1, 4);
    if (!ne || !nr) { g->n_types = 0; BAD("out of memory"); }
    for (uint32_t i = 0; g->types && i < g->n_types; i++) {
        ne[i] = g->types[i].n_enum;
        nr[i] = g->types[i].n_rcs;
        g->types[i].enum_values = NULL;
        g->types[i].rcs = NULL;
        g->types[i].n_enum = g->types[i].n_rcs = 0;
    }
    ok = take_arr(&r, (void **)&g->states, g->n_states, sizeof *g->states, &off.states) &&
         take_arr(&r, (void **)&g->prods, g->n_prods, sizeof *g->prods, &off.prods) &&
         take_arr(&r, (void **)&g->tgrams, g->n_tgrams, sizeof *g->tgrams, &off.tgrams) &&
         take_arr(&r, (void **)&g->elems, g->n_elems, sizeof *g->elems, &off.elems) &&
         take_arr(&r, (void **)&g->doc_elems, g->n_doc, 4, &off.doc) &&
         take_arr(&r, (void **)&g->frag, g->n_frag, sizeof *g->frag, &off.frag) &&
         take_arr(&r, (void **)&g->gattrs, g->n_gattrs, sizeof *g->gattrs, &off.gattrs);
    if (!ok) BAD("truncated arrays (the counts at byte %zu ask for more bytes than the file has)", off.misc + 4);
    g->uris = calloc(g->n_uris ? g->n_uris : 1, sizeof *g->uris);
    g->lnames = calloc(g->n_lids ? g->n_lids : 1, sizeof *g->lnames);
    if (!g->uris || !g->lnames) BAD("out of memory");
    for (uint32_t i = 0; i < g->n_uris; i++) if (!(g->uris[i] = take_str(&r))) BAD("truncated URI strings (URI %u of %u)", i, g->n_uris);
    for (uint32_t i = 0; i < g->n_lids; i++)
        if (!(g->lnames[i] = take_str(&r))) BAD("truncated local names (name %u of %u)", i, g->n_lids);
    for (uint32_t i = 0; i < g->n_types; i++) {
        if (!ne[i]) continue;
        if (ne[i] > r.len - r.pos) BAD_AT(AT(types, i, wm_exi_datatype, n_enum), "datatype %u: %u enumeration values", i, ne[i]);
        const char **ev = calloc(ne[i], sizeof *ev);
        if (!ev) BAD("out of memory");
        g->types[i].enum_values = ev;
        for (uint32_t k = 0; k < ne[i]; k++) {
            if (!(ev[k] = take_str(&r))) BAD("truncated enumeration values (datatype %u, value %u of %u)", i, k, ne[i]);
            g->types[i].n_enum = k + 1;
        }
    }
    for (uint32_t i = 0; i < g->n_types; i++) {
        if (!nr[i]) continue;
        size_t at;
        if (nr[i] > 255) BAD_AT(AT(types, i, wm_exi_datatype, n_rcs), "datatype %u: restricted character set of %u (at most 255)", i, nr[i]);
        if (!take_arr(&r, (void **)&g->types[i].rcs, nr[i], 4, &at)) BAD("truncated restricted character set (datatype %u)", i);
        g->types[i].n_rcs = nr[i];
    }
    if (r.pos != r.len) BAD("%zu bytes after the last string table entry", r.len - r.pos);
    /* every index must point inside its array, every bool be 0 or 1: a
     * loaded grammar drives the decoder's table lookups */
    size_t at;
    if (bad_bool(data, off.types, g->n_types, sizeof(wm_exi_datatype), offsetof(wm_exi_datatype, pattern_bool), &at) ||
        bad_bool(data, off.tgrams, g->n_tgrams, sizeof(wm_exi_tgram), offsetof(wm_exi_tgram, xsi_type_strict), &at) ||
        bad_bool(data, off.elems, g->n_elems, sizeof(wm_exi_elem), offsetof(wm_exi_elem, nillable), &at) ||
        bad_bool(data, off.elems, g->n_elems, sizeof(wm_exi_elem), offsetof(wm_exi_elem, global), &at))
        BAD_AT(at, "a flag is neither 0 nor 1");
    uint32_t lid_end = 0;
    for (uint32_t u = 0; u < g->n_uris; u++) {
        if (g->uri_lid_first[u] != lid_end)
            BAD_AT(AT4(lid_first, u), "URI %u: its local names start at %u, not right after the previous URI's (%u)", u,
                   g->uri_lid_first[u], lid_end);
        if (g->uri_lid_count[u] > g->n_lids - lid_end)
            BAD_AT(AT4(lid_count, u), "URI %u: %u local names from %u, beyond the %u there are", u, g->uri_lid_count[u], lid_end,
                   g->n_lids);
        lid_end += g->uri_lid_count[u];
    }
    if (lid_end != g->n_lids) BAD_AT(off.misc + 8, "the URIs' partitions hold %u local names, the count says %u", lid_end, g->n_lids);
    if ((!g->schemaless && g->n_uris < 4) || g->n_uris < 3)
        BAD_AT(off.misc + 4, "%u URIs: the initial string table has %u (§7.3.1)", g->n_uris, g->schemaless ? 3 : 4);
    for (uint32_t i = 0; i < g->n_lids; i++)
        if (g->lname_uri[i] >= g->n_uris) BAD_AT(AT4(lname_uri, i), "local name %u: URI %u of %u", i, g->lname_uri[i], g->n_uris);
    for (uint32_t i = 0; i < g->n_types; i++) {
        const wm_exi_datatype *t = &g->types[i];
        if (t->kind > WM_EXI_DT_QNAME || t->variant > WM_EXI_TIME || t->nbit_width > 12 ||
            (t->kind == WM_EXI_DT_LIST && (t->list_item >= g->n_types || g->types[t->list_item].kind == WM_EXI_DT_LIST)) ||
            (t->kind == WM_EXI_DT_ENUM && t->n_enum == 0) || t->enum_base > WM_EXI_DT_QNAME ||
            t->enum_base == WM_EXI_DT_ENUM || t->enum_base == WM_EXI_DT_LIST || (t->kind == WM_EXI_DT_RCS_STRING && t->n_rcs == 0))
            BAD_AT(off.types + (size_t)i * sizeof *t, "datatype %u: kind %u (variant %u, width %u, list item %u, %u values, "
                   "%u characters) is inconsistent", i, t->kind, t->variant, t->nbit_width, t->list_item, t->n_enum, t->n_rcs);
    }
    for (uint32_t i = 0; i < g->n_states; i++) {
        const wm_exi_state *s = &g->states[i];
        if (s->first > g->n_prods || s->n > g->n_prods - s->first)
            BAD_AT(AT(states, i, wm_exi_state, first), "state %u: productions [%u, %u) beyond the %u there are", i, s->first,
                   s->first + s->n, g->n_prods);
        if (s->type >= g->n_tgrams) BAD_AT(AT(states, i, wm_exi_state, type), "state %u: type grammar %u of %u", i, s->type, g->n_tgrams);
    }
    for (uint32_t i = 0; i < g->n_prods; i++) {
        const wm_exi_prod *p = &g->prods[i];
        if (p->term > WM_EXI_T_CH) BAD_AT(AT(prods, i, wm_exi_prod, term), "production %u: terminal %u", i, p->term);
        if (p->term != WM_EXI_T_EE && p->next >= g->n_states)
            BAD_AT(AT(prods, i, wm_exi_prod, next), "production %u: next state %u of %u", i, p->next, g->n_states);
        if ((p->term == WM_EXI_T_AT || p->term == WM_EXI_T_SE) && (p->lid >= g->n_lids || p->uri >= g->n_uris || g->lname_uri[p->lid] != p->uri))
            BAD_AT(AT(prods, i, wm_exi_prod, lid), "production %u: qname (URI %u, local name %u) is not in the string table", i, p->uri,
                   p->lid);
        if ((p->term == WM_EXI_T_AT_URI || p->term == WM_EXI_T_SE_URI) && p->uri >= g->n_uris)
            BAD_AT(AT(prods, i, wm_exi_prod, uri), "production %u: URI %u of %u", i, p->uri, g->n_uris);
        if (p->term == WM_EXI_T_SE && p->arg >= g->n_elems && !(p->arg == WM_EXI_ELEM_FRAGMENT && g->elem_fragment < g->n_tgrams))
            BAD_AT(AT(prods, i, wm_exi_prod, arg), "production %u: element %u of %u", i, p->arg, g->n_elems);
        if ((p->term == WM_EXI_T_AT || p->term == WM_EXI_T_CH) && p->arg != WM_EXI_NONE && p->arg >= g->n_types)
            BAD_AT(AT(prods, i, wm_exi_prod, arg), "production %u: datatype %u of %u", i, p->arg, g->n_types);
    }
    for (uint32_t i = 0; i < g->n_tgrams; i++) {
        const wm_exi_tgram *t = &g->tgrams[i];
        if (t->start >= g->n_states || t->empty_start >= g->n_states || t->content >= g->n_states)
            BAD_AT(AT(tgrams, i, wm_exi_tgram, start), "type grammar %u: states %u/%u/%u, of %u", i, t->start, t->empty_start,
                   t->content, g->n_states);
        if (t->lid != WM_EXI_NONE && (t->lid >= g->n_lids || t->uri >= g->n_uris))
            BAD_AT(AT(tgrams, i, wm_exi_tgram, uri), "type grammar %u: name (URI %u, local name %u) is not in the string table", i,
                   t->uri, t->lid);
        if (t->simple_dt != WM_EXI_NONE && t->simple_dt >= g->n_types)
            BAD_AT(AT(tgrams, i, wm_exi_tgram, simple_dt), "type grammar %u: datatype %u of %u", i, t->simple_dt, g->n_types);
    }
    for (uint32_t i = 0; i < g->n_elems; i++)
        if (g->elems[i].type >= g->n_tgrams || g->elems[i].lid >= g->n_lids || g->elems[i].uri >= g->n_uris)
            BAD_AT(AT(elems, i, wm_exi_elem, uri), "element %u: (URI %u, local name %u, type grammar %u) out of range", i,
                   g->elems[i].uri, g->elems[i].lid, g->elems[i].type);
    for (uint32_t i = 0; i < g->n_doc; i++)
        if (g->doc_elems[i] >= g->n_elems) BAD_AT(AT4(doc, i), "document grammar entry %u: element %u of %u", i, g->doc_elems[i], g->n_elems);
    for (uint32_t i = 0; i < g->n_frag; i++)
        if ((g->frag[i].elem != WM_EXI_NONE && g->frag[i].elem >= g->n_elems) || g->frag[i].lid >= g->n_lids ||
            g->frag[i].uri >= g->n_uris || (g->frag[i].elem == WM_EXI_NONE && g->elem_fragment >= g->n_tgrams))
            BAD_AT(AT(frag, i, wm_exi_frag_elem, uri), "fragment grammar entry %u: (URI %u, local name %u, element %u) out of range", i,
                   g->frag[i].uri, g->frag[i].lid, g->frag[i].elem);
    for (uint32_t i = 0; i < g->n_gattrs; i++)
        if (g->gattrs[i].lid >= g->n_lids || g->gattrs[i].uri >= g->n_uris || g->gattrs[i].dt >= g->n_types)
            BAD_AT(AT(gattrs, i, wm_exi_gattr, uri), "global attribute %u: (URI %u, local name %u, datatype %u) out of range", i,
                   g->gattrs[i].uri, g->gattrs[i].lid, g->gattrs[i].dt);
    if ((g->anytype != WM_EXI_NONE && g->anytype >= g->n_tgrams) || g->dt_string >= g->n_types || g->dt_boolean >= g->n_types ||
        (g->elem_fragment != WM_EXI_NONE && g->elem_fragment >= g->n_tgrams))
        BAD_AT(off.misc + 4 + sizeof c, "grammar roots (anyType %u, string %u, boolean %u, ElementFragment %u) out of range",
               g->anytype, g->dt_string, g->dt_boolean, g->elem_fragment);
    free(ne);
    free(nr);
    *out = g;
    return WM_EXI_OK;
}
