/* The schema types of a content filter's value tests (matcher/xpath_filter.h).
 *
 * EXI carries a typed value, not its lexical form, so a test that reads the
 * lexical form (a string test on a number, any test but = / != on a
 * boolean, a string test on a binary, date-time or list value) would answer
 * wrongly: such tests are refused with the reason. Which types a value can
 * have follows from the declarations the query's last step can name — the
 * filter grammar knows them: the typing product of the path automaton with
 * the element grammars (xpath_paths.c wm_xpf_build_reach), so /r/b/x is
 * typed by the x declared under b only — and, for each, from every type
 * xsi:type may give the element in a valid document (XML Schema cvc-elt.4.3):
 * its declared type and each named type derived from it (an extension that
 * adds a typed attribute; for xs:anyType or xs:anySimpleType every type of
 * that kind, the built-in ones included), for a union any simple type (the
 * compiled grammar does not record a union's member types). Below a
 * wildcard, where the product loses the declarations, and when it is not
 * built, a step is typed by every declaration its name test matches. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/xpath_filter_int.h"

/* Type classes of values. */
enum { TC_STR = 1, TC_NUM = 2, TC_BOOL = 4, TC_CHILDREN = 8, TC_BIN = 16, TC_DATE = 32, TC_LIST = 64 };
#define TC_BITS 7
/* values whose lexical form EXI does not keep, beyond numbers and booleans */
#define TC_VALUE_ONLY (TC_BIN | TC_DATE | TC_LIST)

static wm_xpf_status tfail(wm_xpf_error *err, uint32_t q, uint32_t pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static wm_xpf_status tfail(wm_xpf_error *err, uint32_t q, uint32_t pos, const char *fmt, ...)
{
    if (err) {
        err->query = q;
        err->pos = pos;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return WM_XPF_E_TYPE;
}

static unsigned dt_class(const wm_exi_grammar *g, uint32_t dt)
{
    if (dt == WM_EXI_NONE || dt >= g->n_types) return TC_STR;
    switch (g->types[dt].kind) {
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: case WM_EXI_DT_FLOAT: case WM_EXI_DT_DECIMAL:
        return TC_NUM;
    case WM_EXI_DT_BOOLEAN: return TC_BOOL;
    case WM_EXI_DT_HEX: case WM_EXI_DT_BASE64: return TC_BIN;
    case WM_EXI_DT_DATETIME: return TC_DATE;
    case WM_EXI_DT_LIST: return TC_LIST;
    default: return TC_STR;
    }
}

static bool name_ok(const wm_exi_grammar *g, const wm_xp_name *t, uint32_t uri, uint32_t lid)
{
    if (t->any_uri) return true;
    if (uri >= g->n_uris || strcmp(g->uris[uri], t->uri)) return false;
    return !t->local || (lid < g->n_lids && !strcmp(g->lnames[lid], t->local));
}

static bool is_named(const wm_exi_grammar *g, uint32_t t) { return g->tgrams[t].lid < g->n_lids && g->tgrams[t].uri < g->n_uris; }

static uint32_t builtin_tgram(const wm_exi_grammar *g, const char *name)
{
    uint32_t lid = wm_exi_grammar_find_lid(g, WM_EXI_URI_XSD, name, strlen(name));
    return lid == WM_EXI_NONE ? WM_EXI_NONE : wm_exi_grammar_type_by_name(g, WM_EXI_URI_XSD, lid);
}

/* Is simple type t a union (or a restriction of one)? The grammar keeps no
 * flag for it: the type below xs:anySimpleType on t's base chain is then a
 * schema's own one represented as a string (a list is LIST, a built-in is
 * in the XSD namespace). */
static bool union_like(const wm_exi_grammar *g, uint32_t t, uint32_t any_simple)
{
    if (g->tgrams[t].simple_dt == WM_EXI_NONE || t == any_simple) return false;
    uint32_t v = t;
    for (uint32_t hops = 0; hops < 256; hops++) {
        uint32_t b = g->tgrams[v].base;
        if (b == any_simple) break;
        if (b >= g->n_tgrams) return false;
        v = b;
    }
    if (g->tgrams[v].base != any_simple || (is_named(g, v) && g->tgrams[v].uri == WM_EXI_URI_XSD)) return false;
    uint32_t dt = g->tgrams[v].simple_dt;
    return dt < g->n_types && g->types[dt].kind == WM_EXI_DT_STRING;
}

/* doff/dlist: t, then every named type whose base chain passes through t;
 * for a union, every named simple type too (as for xs:anySimpleType). */
static bool build_derived(xpf_typing *tp)
{
    const wm_exi_grammar *g = tp->g;
    uint32_t n = g->n_tgrams, any_simple = builtin_tgram(g, "anySimpleType");
    uint32_t *cnt = calloc((size_t)n + 1, sizeof *cnt);
    tp->doff = calloc((size_t)n + 1, sizeof *tp->doff);
    tp->ulike = calloc(n ? n : 1, 1);
    if (!cnt || !tp->doff || !tp->ulike) {
        free(cnt);
        return false;
    }
    for (uint32_t t = 0; t < n; t++) tp->ulike[t] = any_simple != WM_EXI_NONE && union_like(g, t, any_simple);
    /* two passes: count, then fill; the chain of a named type u adds u to each type on it */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t t = 0; t < n; t++) {
            if (pass) tp->dlist[tp->doff[t] + cnt[t]++] = t;
            else cnt[t]++;
        }
        for (uint32_t u = 0; u < n; u++) {
            if (!is_named(g, u)) continue;
            for (uint32_t b = g->tgrams[u].base, hops = 0; b < n && hops < 256; b = g->tgrams[b].base, hops++) {
                if (pass) tp->dlist[tp->doff[b] + cnt[b]++] = u;
                else cnt[b]++;
            }
            if (g->tgrams[u].simple_dt == WM_EXI_NONE) continue;
            for (uint32_t t = 0; t < n; t++)
                if (tp->ulike[t] && t != u) {
                    if (pass) tp->dlist[tp->doff[t] + cnt[t]++] = u;
                    else cnt[t]++;
                }
        }
        if (!pass) {
            for (uint32_t t = 0; t < n; t++) tp->doff[t + 1] = tp->doff[t] + cnt[t];
            if (!(tp->dlist = malloc((tp->doff[n] ? tp->doff[n] : 1) * sizeof *tp->dlist))) {
                free(cnt);
                return false;
            }
            memset(cnt, 0, ((size_t)n + 1) * sizeof *cnt);
        }
    }
    free(cnt);
    return true;
}

xpf_typing *wm_xpf_typing_new(wm_xpf *f)
{
    const wm_exi_grammar *g = f->g;
    xpf_typing *tp = calloc(1, sizeof *tp);
    if (!tp) return NULL;
    tp->g = g;
    tp->cur = XPF_NONE;
    if (g->schemaless) return tp;
    uint32_t n = g->n_tgrams;
    tp->first = calloc((size_t)n + 1, sizeof *tp->first);
    tp->order = malloc((g->n_states ? g->n_states : 1) * sizeof *tp->order);
    tp->decl = calloc(n ? n : 1, 1);
    tp->all = calloc(n ? n : 1, 1);
    tp->emark = calloc(g->n_elems ? g->n_elems : 1, sizeof *tp->emark);
    tp->wild = calloc(f->n_dstates / 8 + 1, 1);
    tp->qoff = calloc((size_t)f->n_q + 1, sizeof *tp->qoff);
    if (!tp->first || !tp->order || !tp->decl || !tp->all || !tp->emark || !tp->wild || !tp->qoff || !build_derived(tp)) goto fail;
    for (uint32_t s = 0; s < g->n_states; s++)
        if (g->states[s].type < n) tp->first[g->states[s].type + 1]++;
    for (uint32_t t = 0; t < n; t++) tp->first[t + 1] += tp->first[t];
    uint32_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!fill) goto fail;
    for (uint32_t s = 0; s < g->n_states; s++)
        if (g->states[s].type < n) tp->order[tp->first[g->states[s].type] + fill[g->states[s].type]++] = s;
    free(fill);
    /* the path states where each query (with a predicate) completes */
    for (uint32_t d = 0; d < f->n_dstates; d++)
        if (f->dstates[d].pstate != XPF_NONE)
            for (uint32_t i = 0; i < f->pstates[f->dstates[d].pstate].n_q; i++) tp->qoff[f->pstates[f->dstates[d].pstate].qs[i] + 1]++;
    for (uint32_t q = 0; q < f->n_q; q++) tp->qoff[q + 1] += tp->qoff[q];
    if (!(tp->qd = malloc((tp->qoff[f->n_q] ? tp->qoff[f->n_q] : 1) * sizeof *tp->qd))) goto fail;
    uint32_t *qf = calloc(f->n_q ? f->n_q : 1, sizeof *qf);
    if (!qf) goto fail;
    for (uint32_t d = 0; d < f->n_dstates; d++)
        if (f->dstates[d].pstate != XPF_NONE)
            for (uint32_t i = 0; i < f->pstates[f->dstates[d].pstate].n_q; i++) {
                uint32_t q = f->pstates[f->dstates[d].pstate].qs[i];
                tp->qd[tp->qoff[q] + qf[q]++] = d;
            }
    free(qf);
    if (wm_xpf_build_reach(f, tp)) goto fail;
    return tp;
fail:
    wm_xpf_typing_free(tp);
    return NULL;
}

void wm_xpf_typing_free(xpf_typing *tp)
{
    if (!tp) return;
    free(tp->doff);
    free(tp->dlist);
    free(tp->ulike);
    free(tp->seen);
    free(tp->wild);
    free(tp->qoff);
    free(tp->qd);
    free(tp->first);
    free(tp->order);
    free(tp->decl);
    free(tp->all);
    free(tp->emark);
    free(tp);
}

static void add_decl(xpf_typing *tp, uint32_t e)
{
    const wm_exi_grammar *g = tp->g;
    uint32_t t = g->elems[e].type;
    if (tp->emark[e] != tp->cur + 1) { /* counted once, whichever way it was reached */
        tp->emark[e] = tp->cur + 1;
        tp->n_decl++;
    }
    if (t >= g->n_tgrams) return;
    tp->decl[t] = 1;
    for (uint32_t i = tp->doff[t]; i < tp->doff[t + 1]; i++) tp->all[tp->dlist[i]] = 1;
}

/* decl/all/n_decl/fallback for query q, whose last step is t. */
static void query_types(xpf_typing *tp, uint32_t q, const wm_xp_name *t)
{
    const wm_exi_grammar *g = tp->g;
    if (tp->cur == q) return;
    tp->cur = q;
    memset(tp->decl, 0, g->n_tgrams);
    memset(tp->all, 0, g->n_tgrams);
    tp->n_decl = 0;
    tp->fallback = !tp->seen;
    for (uint32_t i = tp->qoff[q]; tp->seen && i < tp->qoff[q + 1]; i++) {
        uint32_t d = tp->qd[i];
        if (tp->wild[d >> 3] >> (d & 7) & 1) tp->fallback = true;
        for (uint32_t e = 0; e < g->n_elems; e++) {
            size_t k = (size_t)d * g->n_elems + e;
            if (tp->seen[k >> 3] >> (k & 7) & 1) add_decl(tp, e);
        }
    }
    for (uint32_t e = 0; tp->fallback && e < g->n_elems; e++)
        if (name_ok(g, t, g->elems[e].uri, g->elems[e].lid)) add_decl(tp, e);
}

/* The classes of the operand (attribute attr: grammar ids auri/alid; the
 * text when attr is NULL) under type grammar t. */
static unsigned tgram_class(const xpf_typing *tp, uint32_t t, bool attr, uint32_t auri, uint32_t alid)
{
    const wm_exi_grammar *g = tp->g;
    unsigned m = 0;
    for (uint32_t k = tp->first[t]; k < tp->first[t + 1]; k++) {
        const wm_exi_state *st = &g->states[tp->order[k]];
        for (uint32_t j = 0; j < st->n; j++) {
            const wm_exi_prod *p = &g->prods[st->first + j];
            if (attr && p->term == WM_EXI_T_AT && p->uri == auri && p->lid == alid) m |= dt_class(g, p->arg);
            if (!attr && p->term == WM_EXI_T_CH) m |= dt_class(g, p->arg);
            if (!attr && (p->term == WM_EXI_T_SE || p->term == WM_EXI_T_SE_URI || p->term == WM_EXI_T_SE_ANY)) m |= TC_CHILDREN;
        }
    }
    return m;
}

/* What the schema says about one operand of a query's elements. */
typedef struct tclass {
    unsigned decl;              /* classes under the declared types */
    unsigned all;               /* and under the types xsi:type may give */
    uint32_t vdecl[TC_BITS];    /* per class bit in decl: a declared type that brings it (XPF_NONE: a global attribute) */
    uint32_t vxsi[TC_BITS];     /* per class bit not in decl: a type xsi:type may name that brings it */
} tclass;

static void operand_class(const xpf_typing *tp, const wm_xp_name *attr, tclass *c)
{
    const wm_exi_grammar *g = tp->g;
    memset(c, 0, sizeof *c);
    for (int b = 0; b < TC_BITS; b++) c->vdecl[b] = c->vxsi[b] = XPF_NONE;
    c->decl = c->all = TC_STR;
    if (g->schemaless) return;
    uint32_t auri = WM_EXI_NONE, alid = WM_EXI_NONE;
    if (attr) {
        auri = wm_exi_grammar_find_uri(g, attr->uri, strlen(attr->uri));
        if (auri != WM_EXI_NONE) alid = wm_exi_grammar_find_lid(g, auri, attr->local, strlen(attr->local));
        if (alid == WM_EXI_NONE) return; /* not declared anywhere: only undeclared (string) values */
    }
    unsigned d = 0, a = 0;
    for (uint32_t t = 0; t < g->n_tgrams; t++) {
        if (!tp->all[t]) continue;
        unsigned m = tgram_class(tp, t, attr != NULL, auri, alid);
        a |= m;
        if (tp->decl[t]) d |= m;
        uint32_t *v = tp->decl[t] ? c->vdecl : c->vxsi;
        for (int b = 0; b < TC_BITS; b++)
            if (m >> b & 1 && v[b] == XPF_NONE) v[b] = t;
    }
    if (attr) {
        uint32_t gdt = wm_exi_grammar_global_attr_dt(g, auri, alid);
        if (gdt != WM_EXI_NONE) d |= dt_class(g, gdt), a |= dt_class(g, gdt);
    }
    c->decl = d ? d : TC_STR;
    c->all = a ? a : TC_STR;
}

static const char *class_name(unsigned bit)
{
    switch (bit) {
    case TC_NUM: return "a number";
    case TC_BOOL: return "a boolean";
    case TC_BIN: return "hexBinary or base64Binary";
    case TC_DATE: return "a date or time";
    case TC_LIST: return "a list";
    case TC_CHILDREN: return "child elements";
    default: return "a string";
    }
}

static int bit_index(unsigned bit)
{
    int i = 0;
    while (i < TC_BITS && !(bit >> i & 1)) i++;
    return i;
}

/* Type grammar t's name as a schema writes it: xs:int, Derived, {urn:x}T. */
static void type_name(const wm_exi_grammar *g, uint32_t t, char *out, size_t cap)
{
    if (t >= g->n_tgrams || !is_named(g, t)) {
        snprintf(out, cap, "(anonymous)");
        return;
    }
    const char *u = g->uris[g->tgrams[t].uri], *l = g->lnames[g->tgrams[t].lid];
    if (g->tgrams[t].uri == WM_EXI_URI_XSD) snprintf(out, cap, "xs:%s", l);
    else if (!*u) snprintf(out, cap, "%s", l);
    else snprintf(out, cap, "{%s}%s", u, l);
}

/* Why the operand can be of class bit, which no declared type gives it: "a
 * number where xsi:type names Derived (derived from Base)". */
static void describe(const xpf_typing *tp, const tclass *c, unsigned bit, char *out, size_t cap)
{
    const wm_exi_grammar *g = tp->g;
    uint32_t v = c->vxsi[bit_index(bit)], from = XPF_NONE;
    for (uint32_t b = v, hops = 0; b < g->n_tgrams && hops < 256 && from == XPF_NONE; b = g->tgrams[b].base, hops++)
        if (tp->decl[b] && b != v) from = b;
    char vn[80], fn[80];
    type_name(g, v, vn, sizeof vn);
    if (from != XPF_NONE) {
        type_name(g, from, fn, sizeof fn);
        snprintf(out, cap, "%s where xsi:type names %s (derived from %s)", class_name(bit), vn, fn);
        return;
    }
    uint32_t u = XPF_NONE;
    for (uint32_t t = 0; t < g->n_tgrams && u == XPF_NONE; t++)
        if (tp->decl[t] && tp->ulike[t]) u = t;
    type_name(g, u, fn, sizeof fn);
    snprintf(out, cap, "%s where xsi:type names %s (if union %s has it as a member)", class_name(bit), vn, fn);
}

/* The type that makes the operand of class bit, and how: "xs:int as
 * declared", "the type declared for c", "Derived by xsi:type", "xs:int by
 * xsi:type if a member of union U". */
static void origin(const xpf_typing *tp, const tclass *c, unsigned bit, char *out, size_t cap)
{
    const wm_exi_grammar *g = tp->g;
    int i = bit_index(bit);
    char tn[80], un[80];
    if (c->decl & bit) {
        uint32_t t = c->vdecl[i];
        if (t == XPF_NONE) snprintf(out, cap, "a global attribute declaration");
        else if (is_named(g, t)) {
            type_name(g, t, tn, sizeof tn);
            snprintf(out, cap, "%s as declared", tn);
        } else {
            uint32_t e = 0;
            while (e < g->n_elems && !(tp->emark[e] == tp->cur + 1 && g->elems[e].type == t)) e++;
            snprintf(out, cap, "the type declared for %s", e < g->n_elems && g->elems[e].lid < g->n_lids ? g->lnames[g->elems[e].lid] : "it");
        }
        return;
    }
    uint32_t v = c->vxsi[i], from = XPF_NONE, u = XPF_NONE;
    for (uint32_t b = v, hops = 0; b < g->n_tgrams && hops < 256 && from == XPF_NONE; b = g->tgrams[b].base, hops++)
        if (tp->decl[b] && b != v) from = b;
    for (uint32_t t = 0; t < g->n_tgrams && u == XPF_NONE && from == XPF_NONE; t++)
        if (tp->decl[t] && tp->ulike[t]) u = t;
    type_name(g, v, tn, sizeof tn);
    type_name(g, u, un, sizeof un);
    if (u != XPF_NONE) snprintf(out, cap, "%s by xsi:type if a member of union %s", tn, un);
    else snprintf(out, cap, "%s by xsi:type", tn);
}

/* A test on a value the schema types as a boolean (c->all is TC_BOOL). EXI
 * carries the value, not its lexical form ("1" and "true" arrive alike), so
 * booleans compare as booleans (as numbers compare as numbers): = and !=
 * with a literal that denotes one (1, '1', 'true' mean true; 0, '0', 'false'
 * false) become the equality with the canonical form the evaluator sees;
 * any other literal, < <= > >= and the string functions are refused. */
static wm_xpf_status bool_test(const xpf_typing *tp, const tclass *c, uint32_t q, const wm_xp_node *n, wm_xp_node *bn,
                               wm_xpf_error *err)
{
    bool is_text = n->opd != WM_XP_OPD_ATTR;
    const char *what = is_text ? "the text" : "@";
    const char *name = is_text ? "" : n->attr.local;
    if (n->kind != WM_XP_N_CMP) {
        if (c->decl & TC_BOOL)
            return tfail(err, q, n->pos,
                         "string test on %s%s, which the schema types as a boolean: EXI carries its value, not its lexical form; compare it with = or != and true/false/1/0",
                         what, name);
        char why[512];
        describe(tp, c, TC_BOOL, why, sizeof why);
        return tfail(err, q, n->pos,
                     "string test on %s%s, %s: EXI carries its value, not its lexical form; compare it with = or != and true/false/1/0",
                     what, name, why);
    }
    if (n->op != WM_XP_EQ && n->op != WM_XP_NE)
        return tfail(err, q, n->pos, "%s%s is a boolean, which has no order: compare it with = or != and true/false/1/0", what, name);
    int t = -1;
    if (n->num) t = n->x == 1 ? 1 : n->x == 0 ? 0 : -1;
    else if (n->slen == 1 && (n->s[0] == '1' || n->s[0] == '0')) t = n->s[0] == '1';
    else if (n->slen == 4 && !memcmp(n->s, "true", 4)) t = 1;
    else if (n->slen == 5 && !memcmp(n->s, "false", 5)) t = 0;
    if (t < 0) return tfail(err, q, n->pos, "%s%s is a boolean: compare it with true/false/1/0, not this literal", what, name);
    *bn = *n;
    bn->num = false;
    bn->s = t ? "true" : "false";
    bn->slen = t ? 4 : 5;
    return WM_XPF_OK;
}

wm_xpf_status wm_xpf_type_test(xpf_typing *tp, uint32_t q, const wm_xp_name *elem_test, const wm_xp_node *n, wm_xp_node *bn,
                               const wm_xp_node **use, wm_xpf_error *err)
{
    *use = n;
    bool is_text = n->opd != WM_XP_OPD_ATTR;
    /* nothing to type without a schema: every value is an untyped string */
    if (tp->g->schemaless) return WM_XPF_OK;
    tclass c;
    query_types(tp, q, elem_test);
    operand_class(tp, is_text ? NULL : &n->attr, &c);
    const char *what = is_text ? "the text" : "@", *name = is_text ? "" : n->attr.local;
    char why[512];
    if (is_text && (c.all & TC_CHILDREN)) {
        if (c.decl & TC_CHILDREN)
            return tfail(err, q, n->pos, "%s is supported on elements of simple content only, and the schema gives these elements child elements",
                         n->opd == WM_XP_OPD_DOT ? "'.'" : "text()");
        char vn[96];
        type_name(tp->g, c.vxsi[bit_index(TC_CHILDREN)], vn, sizeof vn);
        return tfail(err, q, n->pos, "%s is supported on elements of simple content only, and xsi:type may give these elements %s, which has child elements",
                     n->opd == WM_XP_OPD_DOT ? "'.'" : "text()", vn);
    }
    /* true whatever the value: '.' exists, every string contains and starts with '' */
    if ((n->kind == WM_XP_N_EXISTS && n->opd == WM_XP_OPD_DOT) ||
        ((n->kind == WM_XP_N_CONTAINS || n->kind == WM_XP_N_STARTS) && n->slen == 0) || n->kind == WM_XP_N_EXISTS)
        return WM_XPF_OK;
    if (c.all & TC_BOOL) {
        unsigned other = c.all & (TC_STR | TC_NUM | TC_VALUE_ONLY);
        if (other) {
            /* the value is a boolean on some elements and not on others: no one rule reads both */
            unsigned ob = other & TC_NUM ? TC_NUM : other & TC_VALUE_ONLY ? (other & TC_BIN ? TC_BIN : other & TC_DATE ? TC_DATE : TC_LIST) : TC_STR;
            char o1[200], o2[200];
            origin(tp, &c, TC_BOOL, o1, sizeof o1);
            origin(tp, &c, ob, o2, sizeof o2);
            if ((c.decl & TC_BOOL) && (c.decl & other) && tp->n_decl > 1)
                return tfail(err, q, n->pos, "%s%s is a boolean on some of the %u declarations this step names and %s on others (%s, %s): give a path to one type only",
                             what, name, tp->n_decl, class_name(ob), o1, o2);
            return tfail(err, q, n->pos, "%s%s is a boolean on some elements this step names and %s on others (%s, %s): test its presence only",
                         what, name, class_name(ob), o1, o2);
        }
        wm_xpf_status st = bool_test(tp, &c, q, n, bn, err);
        if (st == WM_XPF_OK) *use = bn;
        return st;
    }
    bool string_test = n->kind == WM_XP_N_CONTAINS || n->kind == WM_XP_N_STARTS || n->kind == WM_XP_N_MATCHES ||
                       (n->kind == WM_XP_N_CMP && !n->num && (n->op == WM_XP_EQ || n->op == WM_XP_NE));
    if (string_test && (c.all & TC_NUM)) {
        if (c.decl & TC_NUM)
            return tfail(err, q, n->pos, "string test on %s%s, which the schema types as a number: EXI carries its value, not its lexical form; compare it with a number",
                         what, name);
        describe(tp, &c, TC_NUM, why, sizeof why);
        return tfail(err, q, n->pos, "string test on %s%s, %s: EXI carries its value, not its lexical form; compare it with a number",
                     what, name, why);
    }
    /* Binary, date-time and list values: the decoder hands out a canonical
     * form ('0aff' as '0AFF', '12:00:00.50' as '12:00:00.5', ' 1 2  255' as
     * '1 2 255'), not what the publisher wrote, so a string test would miss
     * silently; refused like those on numbers (review finding 11). */
    if (string_test && (c.all & TC_VALUE_ONLY)) {
        unsigned vb = c.all & TC_BIN ? TC_BIN : c.all & TC_DATE ? TC_DATE : TC_LIST;
        const char *ex = vb == TC_BIN ? "'0aff' arrives as '0AFF'" : vb == TC_DATE ? "'12:00:00.50' arrives as '12:00:00.5'"
                                                                    : "' 1 2  255' arrives as '1 2 255'";
        if (c.decl & vb)
            return tfail(err, q, n->pos, "string test on %s%s, which the schema types as %s: EXI carries its value, not its lexical form (%s); test its presence only",
                         what, name, class_name(vb), ex);
        describe(tp, &c, vb, why, sizeof why);
        return tfail(err, q, n->pos, "string test on %s%s, %s: EXI carries its value, not its lexical form (%s); test its presence only",
                     what, name, why, ex);
    }
    return WM_XPF_OK;
}
