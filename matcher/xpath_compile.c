/* Compiles a set of XPath queries into one filter automaton
 * (matcher/xpath_filter.h): parse, type every value test against the schema
 * grammar, build the deduplicated literals and predicate trees, the path
 * automaton (xpath_paths.c), the trigger index of every predicate state and
 * the one Hyperscan database of all string patterns. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/intern.h"
#include "matcher/xpath_filter_int.h"

typedef struct cctx {
    wm_xpf *f;
    const wm_xp_query *pq;
    uint32_t q;                 /* query being compiled */
    wm_xpf_error *err;
    uint32_t cap_lits, cap_pnodes, cap_slots;
    uint32_t *lit_hash;         /* lit + 1, 0 empty */
    uint32_t lit_mask;
    xpf_typing *ty;             /* the schema types of value tests (xpath_types.c) */
    char **pat_expr;            /* per literal: Hyperscan expression (PAT only) */
    unsigned *pat_flags;
    size_t pool_len, pool_cap;
} cctx;

static wm_xpf_status qfail(cctx *c, wm_xpf_status st, uint32_t pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static wm_xpf_status qfail(cctx *c, wm_xpf_status st, uint32_t pos, const char *fmt, ...)
{
    if (c->err) {
        c->err->query = c->q;
        c->err->pos = pos;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

char *wm_xpf_keep(wm_xpf *f, const char *s, size_t n)
{
    if (f->n_owned == f->cap_owned) {
        uint32_t nc = f->cap_owned ? f->cap_owned * 2 : 64;
        char **no = realloc(f->owned, nc * sizeof *no);
        if (!no) return NULL;
        f->owned = no;
        f->cap_owned = nc;
    }
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    f->owned[f->n_owned++] = p;
    return p;
}

/* ---------------------------------------------------------------- slots */

static uint32_t get_slot(cctx *c, bool is_text, const wm_xp_name *attr)
{
    wm_xpf *f = c->f;
    if (is_text && f->text_slot != XPF_NONE) return f->text_slot;
    for (uint32_t i = 0; !is_text && i < f->n_slots; i++)
        if (!f->slots[i].is_text && !strcmp(f->slots[i].uri, attr->uri) && !strcmp(f->slots[i].local, attr->local)) return i;
    if (f->n_slots >= 65000) return XPF_NONE;
    if (f->n_slots == c->cap_slots) {
        uint32_t nc = c->cap_slots ? c->cap_slots * 2 : 16;
        xpf_slot *ns = realloc(f->slots, nc * sizeof *ns);
        if (!ns) return XPF_NONE;
        f->slots = ns;
        c->cap_slots = nc;
    }
    xpf_slot *s = &f->slots[f->n_slots];
    memset(s, 0, sizeof *s);
    s->is_text = is_text;
    s->guri = s->glid = XPF_NONE;
    if (!is_text) {
        if (!(s->uri = wm_xpf_keep(f, attr->uri, strlen(attr->uri))) || !(s->local = wm_xpf_keep(f, attr->local, strlen(attr->local))))
            return XPF_NONE;
        uint32_t u = wm_exi_grammar_find_uri(f->g, attr->uri, strlen(attr->uri));
        if (u != WM_EXI_NONE) {
            s->guri = u;
            s->glid = wm_exi_grammar_find_lid(f->g, u, attr->local, strlen(attr->local));
            if (s->glid == WM_EXI_NONE) s->glid = XPF_NONE;
        }
    } else f->text_slot = f->n_slots;
    return f->n_slots++;
}

/* ------------------------------------------------------------- literals */

static uint32_t new_pnode(cctx *c, uint8_t kind, uint32_t a, uint32_t b)
{
    wm_xpf *f = c->f;
    if (f->n_pnodes == c->cap_pnodes) {
        uint32_t nc = c->cap_pnodes ? c->cap_pnodes * 2 : 256;
        xpf_pnode *np = realloc(f->pnodes, nc * sizeof *np);
        if (!np) return XPF_NONE;
        f->pnodes = np;
        c->cap_pnodes = nc;
    }
    f->pnodes[f->n_pnodes] = (xpf_pnode){ .kind = kind, .a = a, .b = b };
    return f->n_pnodes++;
}

static uint32_t pool_add(cctx *c, const char *s, uint32_t n)
{
    if (c->pool_len + n + 1 > c->pool_cap) {
        size_t nc = (c->pool_cap + n + 1) * 2;
        char *np = realloc(c->f->strpool, nc);
        if (!np) return XPF_NONE;
        c->f->strpool = np;
        c->pool_cap = nc;
    }
    uint32_t off = (uint32_t)c->pool_len;
    memcpy(c->f->strpool + off, s, n);
    c->f->strpool[off + n] = 0;
    c->pool_len += n + 1;
    return off;
}

static bool lit_same(const cctx *c, const xpf_lit *a, const char *as, const char *aexpr, unsigned afl, uint32_t b)
{
    const xpf_lit *l = &c->f->lits[b];
    if (l->kind != a->kind || l->op != a->op || l->opd != a->opd || l->slot != a->slot) return false;
    if (memcmp(&l->x, &a->x, sizeof l->x)) return false;
    if (l->s_len != a->s_len || (a->s_len && memcmp(c->f->strpool + l->s_off, as, a->s_len))) return false;
    if (a->kind == XPF_L_PAT) return c->pat_flags[b] == afl && !strcmp(c->pat_expr[b], aexpr);
    return true;
}

static uint64_t lit_key_hash(const xpf_lit *a, const char *s, const char *expr)
{
    uint64_t h = wm_hash_bytes(a->kind | a->op << 8 | a->opd << 16, &a->x, sizeof a->x);
    h ^= wm_hash_bytes(a->slot, s ? s : "", a->s_len);
    if (expr) h ^= wm_hash_bytes(7, expr, strlen(expr));
    return h;
}

/* Adds (or finds) literal a; s: its string (STREQ/STRNE), expr/fl: its
 * Hyperscan expression (PAT). Returns the literal id or XPF_NONE on OOM. */
static uint32_t add_lit(cctx *c, xpf_lit *a, const char *s, const char *expr, unsigned fl)
{
    wm_xpf *f = c->f;
    if ((f->n_lits + 1) * 2 > c->lit_mask) {
        uint32_t nm = c->lit_mask ? c->lit_mask * 2 + 1 : 1023;
        uint32_t *nh = calloc((size_t)nm + 1, sizeof *nh);
        if (!nh) return XPF_NONE;
        for (uint32_t i = 0; i < f->n_lits; i++) {
            const xpf_lit *l = &f->lits[i];
            uint64_t h = lit_key_hash(l, f->strpool + l->s_off, l->kind == XPF_L_PAT ? c->pat_expr[i] : NULL);
            uint32_t k = (uint32_t)h & nm;
            while (nh[k]) k = (k + 1) & nm;
            nh[k] = i + 1;
        }
        free(c->lit_hash);
        c->lit_hash = nh;
        c->lit_mask = nm;
    }
    uint64_t h = lit_key_hash(a, s, expr);
    uint32_t k = (uint32_t)h & c->lit_mask;
    while (c->lit_hash[k]) {
        if (lit_same(c, a, s, expr, fl, c->lit_hash[k] - 1)) return c->lit_hash[k] - 1;
        k = (k + 1) & c->lit_mask;
    }
    if (f->n_lits == c->cap_lits) {
        uint32_t nc = c->cap_lits ? c->cap_lits * 2 : 256;
        xpf_lit *nl = realloc(f->lits, nc * sizeof *nl);
        char **ne = realloc(c->pat_expr, nc * sizeof *ne);
        if (ne) c->pat_expr = ne;
        unsigned *nf = realloc(c->pat_flags, nc * sizeof *nf);
        if (nf) c->pat_flags = nf;
        if (nl) f->lits = nl;
        if (!nl || !ne || !nf) return XPF_NONE;
        c->cap_lits = nc;
    }
    uint32_t id = f->n_lits;
    if (a->s_len || a->kind == XPF_L_STREQ || a->kind == XPF_L_STRNE) {
        a->s_off = pool_add(c, s ? s : "", a->s_len);
        if (a->s_off == XPF_NONE) return XPF_NONE;
    }
    c->pat_expr[id] = NULL;
    c->pat_flags[id] = fl;
    if (expr && !(c->pat_expr[id] = wm_xpf_keep(f, expr, strlen(expr)))) return XPF_NONE;
    f->lits[id] = *a;
    f->n_lits++;
    c->lit_hash[k] = id + 1;
    return id;
}

/* Hyperscan expression matching a literal substring: every byte as \xHH. */
static char *hs_literal(const char *s, uint32_t n, bool anchored)
{
    char *e = malloc((size_t)n * 4 + 2);
    if (!e) return NULL;
    size_t k = 0;
    if (anchored) e[k++] = '^';
    for (uint32_t i = 0; i < n; i++) k += (size_t)sprintf(e + k, "\\x%02x", (unsigned char)s[i]);
    e[k] = 0;
    return e;
}

static int empty_cb(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
    *(bool *)ctx = true;
    return 1;
}

/* Checks a matches() pattern alone (for a precise error) and tells whether
 * it matches the empty string (its value for a missing node). */
static wm_xpf_status check_pattern(cctx *c, const wm_xp_node *n, const char *expr, unsigned fl, bool *empty)
{
    hs_database_t *db = NULL;
    hs_compile_error_t *ce = NULL;
    if (hs_compile(expr, fl, HS_MODE_BLOCK, NULL, &db, &ce) != HS_SUCCESS) {
        wm_xpf_status st = qfail(c, WM_XPF_E_PATTERN, n->pos, "matches() pattern '%s' refused by Hyperscan: %s", expr,
                                 ce ? ce->message : "unknown error");
        hs_free_compile_error(ce);
        return st;
    }
    hs_scratch_t *s = NULL;
    *empty = false;
    if (hs_alloc_scratch(db, &s) != HS_SUCCESS) {
        hs_free_database(db);
        return WM_XPF_E_MEMORY;
    }
    hs_scan(db, "", 0, 0, s, empty_cb, empty);
    hs_free_scratch(s);
    hs_free_database(db);
    return WM_XPF_OK;
}

/* AST node -> predicate tree. *out: pnode id. */
static wm_xpf_status conv(cctx *c, const wm_xp_name *elem_test, uint32_t ni, uint32_t *out)
{
    const wm_xp_node *n = &c->pq[c->q].nodes[ni];
    wm_xpf_status st;
    uint32_t a, b;
    switch (n->kind) {
    case WM_XP_N_OR: case WM_XP_N_AND:
        if ((st = conv(c, elem_test, n->a, &a)) || (st = conv(c, elem_test, n->b, &b))) return st;
        *out = new_pnode(c, n->kind == WM_XP_N_OR ? XPF_P_OR : XPF_P_AND, a, b);
        return *out == XPF_NONE ? WM_XPF_E_MEMORY : WM_XPF_OK;
    case WM_XP_N_NOT:
        if ((st = conv(c, elem_test, n->a, &a))) return st;
        *out = new_pnode(c, XPF_P_NOT, a, 0);
        return *out == XPF_NONE ? WM_XPF_E_MEMORY : WM_XPF_OK;
    default: break;
    }
    /* a value test, typed by the schema (refused, or a boolean's rewritten) */
    bool is_text = n->opd != WM_XP_OPD_ATTR;
    /* EXI carries xsi:type and xsi:nil as events of their own (§8.5.4.4.2: AT(xsi:type), AT(xsi:nil)
     * switch the element's grammar), not as attributes of the element's grammar: the evaluator never
     * sees them as values, and a test on them would silently never hold (review 13 finding 4) */
    if (!is_text && !n->attr.any_uri && n->attr.uri && !strcmp(n->attr.uri, WM_XPF_XSI_URI) && n->attr.local &&
        (!strcmp(n->attr.local, "type") || !strcmp(n->attr.local, "nil")))
        return qfail(c, WM_XPF_E_QUERY, n->pos,
                     "a test on xsi:%s is not supported: EXI carries xsi:type and xsi:nil as grammar events of their own "
                     "(EXI 1.0 §8.5.4.4.2), not as attribute values a filter reads",
                     n->attr.local);
    wm_xp_node bn = { 0 };
    const wm_xp_node *typed;
    if ((st = wm_xpf_type_test(c->ty, c->q, elem_test, n, &bn, &typed, c->err))) return st;
    if (n->kind == WM_XP_N_EXISTS && n->opd == WM_XP_OPD_DOT) {
        *out = new_pnode(c, XPF_P_TRUE, 0, 0);
        return *out == XPF_NONE ? WM_XPF_E_MEMORY : WM_XPF_OK;
    }
    if ((n->kind == WM_XP_N_CONTAINS || n->kind == WM_XP_N_STARTS) && n->slen == 0) {
        *out = new_pnode(c, XPF_P_TRUE, 0, 0); /* every string contains and starts with '' */
        return *out == XPF_NONE ? WM_XPF_E_MEMORY : WM_XPF_OK;
    }
    n = typed;
    xpf_lit l = { .opd = n->opd };
    l.slot = get_slot(c, is_text, &n->attr);
    if (l.slot == XPF_NONE) return WM_XPF_E_MEMORY;
    bool absent_is_empty = n->opd == WM_XP_OPD_DOT; /* '.' always has a string value: '' */
    char *expr = NULL;
    unsigned fl = 0;
    const char *s = NULL;
    switch (n->kind) {
    case WM_XP_N_EXISTS:
        l.kind = XPF_L_EXISTS;
        l.absent = false;
        break;
    case WM_XP_N_CMP:
        if (n->num || (n->op != WM_XP_EQ && n->op != WM_XP_NE)) {
            l.kind = XPF_L_NUM;
            l.op = n->op;
            l.x = n->num ? n->x : wm_xpf_str_number(n->s, n->slen);
            l.absent = absent_is_empty && wm_xpf_cmp(n->op, NAN, l.x);
        } else {
            l.kind = n->op == WM_XP_EQ ? XPF_L_STREQ : XPF_L_STRNE;
            l.s_len = n->slen;
            s = n->s;
            l.absent = absent_is_empty && ((n->slen == 0) == (n->op == WM_XP_EQ));
        }
        break;
    case WM_XP_N_CONTAINS: case WM_XP_N_STARTS:
        l.kind = XPF_L_PAT;
        if (n->kind == WM_XP_N_STARTS && n->slen) {
            l.starts = true;
            l.s_len = n->slen;
            s = n->s;
        }
        if (!(expr = hs_literal(n->s, n->slen, n->kind == WM_XP_N_STARTS))) return WM_XPF_E_MEMORY;
        fl = HS_FLAG_SINGLEMATCH;
        l.absent = false; /* '' contains no non-empty string */
        break;
    case WM_XP_N_MATCHES: {
        l.kind = XPF_L_PAT;
        if (!(expr = strdup(n->s))) return WM_XPF_E_MEMORY;
        fl = HS_FLAG_SINGLEMATCH | HS_FLAG_ALLOWEMPTY | HS_FLAG_UTF8;
        for (const char *p = n->flags; *p; p++)
            fl |= *p == 'i' ? HS_FLAG_CASELESS : *p == 's' ? HS_FLAG_DOTALL : HS_FLAG_MULTILINE;
        bool empty;
        if ((st = check_pattern(c, n, expr, fl, &empty))) {
            free(expr);
            return st;
        }
        l.absent = empty; /* matches('', re) */
        break;
    }
    default:
        return qfail(c, WM_XPF_E_QUERY, n->pos, "unknown predicate node");
    }
    uint32_t id = add_lit(c, &l, s, expr, fl);
    free(expr);
    if (id == XPF_NONE) return WM_XPF_E_MEMORY;
    *out = new_pnode(c, XPF_P_LIT, id, 0);
    return *out == XPF_NONE ? WM_XPF_E_MEMORY : WM_XPF_OK;
}

/* ------------------------------------------------------------- triggers */

typedef struct lvec { uint32_t *v; uint32_t n, cap; bool always; } lvec;

static bool lvec_push(lvec *l, uint32_t x)
{
    if (l->n == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : 8;
        uint32_t *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return false;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = x;
    return true;
}

static unsigned lit_score(const xpf_lit *l)
{
    switch (l->kind) {
    case XPF_L_STREQ: return 1;
    case XPF_L_NUM: return l->op == WM_XP_EQ ? 2 : l->op == WM_XP_NE ? 8 : 5;
    case XPF_L_PAT: return 3;
    default: return 8;
    }
}

/* Trigger literals of a predicate: if none of them is true at an element,
 * the predicate is false there. always: no such set (e.g. not(...)). */
static bool triggers(const wm_xpf *f, uint32_t p, lvec *out)
{
    const xpf_pnode *n = &f->pnodes[p];
    switch (n->kind) {
    case XPF_P_LIT: {
        const xpf_lit *l = &f->lits[n->a];
        /* S op NaN (but !=) is false at every element: no trigger. It must
         * stay out of the sorted threshold arrays too, where NaN has no
         * place and would cut the scan of the others short. */
        if (l->kind == XPF_L_NUM && l->op != WM_XP_NE && l->x != l->x) return true;
        if (l->absent) out->always = true;
        else return lvec_push(out, n->a);
        return true;
    }
    case XPF_P_FALSE: return true;
    case XPF_P_TRUE: case XPF_P_NOT: out->always = true; return true;
    case XPF_P_OR: return triggers(f, n->a, out) && triggers(f, n->b, out);
    default: {
        lvec a = { 0 }, b = { 0 };
        bool ok = triggers(f, n->a, &a) && triggers(f, n->b, &b);
        if (ok) {
            unsigned sa = 0, sb = 0;
            for (uint32_t i = 0; i < a.n; i++) sa += lit_score(&f->lits[a.v[i]]);
            for (uint32_t i = 0; i < b.n; i++) sb += lit_score(&f->lits[b.v[i]]);
            lvec *pick = a.always ? &b : b.always ? &a : sa <= sb ? &a : &b;
            if (pick->always) out->always = true;
            for (uint32_t i = 0; ok && i < pick->n; i++) ok = lvec_push(out, pick->v[i]);
        }
        free(a.v);
        free(b.v);
        return ok;
    }
    }
}

static void lits_used(const wm_xpf *f, uint32_t p, lvec *out, bool *ok)
{
    const xpf_pnode *n = &f->pnodes[p];
    switch (n->kind) {
    case XPF_P_LIT: if (!lvec_push(out, n->a)) *ok = false; break;
    case XPF_P_AND: case XPF_P_OR: lits_used(f, n->a, out, ok); lits_used(f, n->b, out, ok); break;
    case XPF_P_NOT: lits_used(f, n->a, out, ok); break;
    default: break;
    }
}

/* How a query hangs off one of its trigger literals. */
enum { PK_GENERIC = 0, PK_EXACT, PK_CLUSTER };
typedef struct pair {
    uint32_t lit, q;        /* lit >= f->n_lits: guard lit - n_lits */
    uint8_t kind;           /* PK_* */
    uint8_t op;             /* CLUSTER: the other test's op */
    bool str;               /* CLUSTER: a string equality (slit, h) */
    uint32_t slot;          /* CLUSTER: the other test's slot */
    double x;               /* CLUSTER: the other test's number */
    uint64_t h;             /* CLUSTER, str: hash of the string */
    uint32_t slit;          /* CLUSTER, str: the STREQ literal */
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->lit != y->lit) return x->lit < y->lit ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->kind == PK_CLUSTER) {
        if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
        if (x->op != y->op) return x->op < y->op ? -1 : 1;
        if (x->str != y->str) return x->str < y->str ? -1 : 1;
        if (x->str && x->h != y->h) return x->h < y->h ? -1 : 1;
        if (x->str && x->slit != y->slit) return x->slit < y->slit ? -1 : 1;
        if (!x->str && x->x != y->x) return x->x < y->x ? -1 : 1;
    }
    return x->q < y->q ? -1 : x->q > y->q;
}

/* Is p an OR-tree of literals all in t[0..n)? (then any trigger being true
 * makes the query true: exact) */
static bool or_of_triggers(const wm_xpf *f, uint32_t p, const uint32_t *t, uint32_t n)
{
    const xpf_pnode *x = &f->pnodes[p];
    if (x->kind == XPF_P_OR) return or_of_triggers(f, x->a, t, n) && or_of_triggers(f, x->b, t, n);
    if (x->kind != XPF_P_LIT) return false;
    for (uint32_t i = 0; i < n; i++)
        if (t[i] == x->a) return true;
    return false;
}

/* Collects the disjuncts of an OR-tree of numeric tests and string
 * equalities that are false when their slot is missing (out[0..8)): what a
 * cluster decides; false if p is anything else. */
static bool cluster_disjuncts(const wm_xpf *f, uint32_t p, uint32_t *out, uint32_t *n)
{
    const xpf_pnode *x = &f->pnodes[p];
    if (x->kind == XPF_P_OR) return cluster_disjuncts(f, x->a, out, n) && cluster_disjuncts(f, x->b, out, n);
    if (x->kind != XPF_P_LIT || *n >= 8) return false;
    const xpf_lit *r = &f->lits[x->a];
    if (r->absent) return false;
    if (r->kind == XPF_L_NUM ? r->op == WM_XP_NE || r->x != r->x : r->kind != XPF_L_STREQ) return false;
    out[(*n)++] = x->a;
    return true;
}

/* Structural equality of predicate trees (literals are interned). */
static bool pred_eq(const wm_xpf *f, uint32_t a, uint32_t b)
{
    const xpf_pnode *x = &f->pnodes[a], *y = &f->pnodes[b];
    if (a == b) return true;
    if (x->kind != y->kind) return false;
    switch (x->kind) {
    case XPF_P_LIT: return x->a == y->a;
    case XPF_P_AND: case XPF_P_OR: return pred_eq(f, x->a, y->a) && pred_eq(f, x->b, y->b);
    case XPF_P_NOT: return pred_eq(f, x->a, y->a);
    default: return true;
    }
}

/* Is p "G and D" (either order) with D cluster disjuncts (dis[0..*nd)) and G
 * without trigger literals? *guard = G. */
static bool guarded_cluster(const wm_xpf *f, uint32_t p, uint32_t *guard, uint32_t *dis, uint32_t *nd, bool *ok)
{
    const xpf_pnode *pn = &f->pnodes[p];
    if (pn->kind != XPF_P_AND) return false;
    for (int side = 0; side < 2; side++) {
        uint32_t g = side ? pn->b : pn->a, d = side ? pn->a : pn->b;
        *nd = 0;
        if (!cluster_disjuncts(f, d, dis, nd)) continue;
        lvec t = { 0 };
        if (!triggers(f, g, &t)) *ok = false;
        free(t.v);
        if (*ok && t.always) {
            *guard = g;
            return true;
        }
    }
    return false;
}
static int cmp_num(const void *a, const void *b)
{
    const xpf_numtrig *x = a, *y = b;
    return x->x < y->x ? -1 : x->x > y->x;
}

static int cmp_negguard(const void *a, const void *b)
{
    const xpf_negguard *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return x->guard < y->guard ? -1 : x->guard > y->guard;
}

static xpf_pslot *pslot_of(xpf_pstate *ps, uint32_t slot)
{
    return ps->slot_ix[slot] ? &ps->pslots[ps->slot_ix[slot] - 1] : NULL;
}

/* Puts prefix literal lit into pslot s's prefix table (once). Nonzero on
 * allocation failure. */
static int add_prefix(const wm_xpf *f, xpf_pslot *s, uint32_t lit)
{
    const xpf_lit *l = &f->lits[lit];
    if (!s->pre) {
        /* at most every prefix literal of the slot: size for all of them at load <= 1/4 */
        uint32_t cnt = 0, sz = 4;
        for (uint32_t i = 0; i < f->n_lits; i++) cnt += f->lits[i].prefix && f->lits[i].slot == l->slot;
        while (sz < cnt * 4) sz *= 2;
        if (!(s->pre = malloc(sz * sizeof *s->pre))) return -1;
        for (uint32_t k = 0; k < sz; k++) s->pre[k].lit = XPF_NONE;
        s->pre_mask = sz - 1;
    }
    uint64_t h = wm_xpf_str_hash(f->strpool + l->s_off, l->s_len);
    uint32_t k = (uint32_t)h & s->pre_mask;
    for (; s->pre[k].lit != XPF_NONE; k = (k + 1) & s->pre_mask)
        if (s->pre[k].lit == lit) return 0;
    s->pre[k] = (xpf_pretrig){ h, lit };
    uint32_t j = 0;
    while (j < s->n_plens && s->plens[j] < l->s_len) j++;
    if (j == s->n_plens || s->plens[j] != l->s_len) {
        memmove(s->plens + j + 1, s->plens + j, (s->n_plens - j) * sizeof *s->plens);
        s->plens[j] = l->s_len;
        s->n_plens++;
    }
    return 0;
}

/* Decides which starts-with() literals the prefix tables serve: those of
 * slots with at most XPF_MAX_PLENS distinct lengths. */
static void choose_prefixes(wm_xpf *f)
{
    for (uint32_t s = 0; s < f->n_slots; s++) {
        uint32_t lens[XPF_MAX_PLENS], n = 0;
        bool ok = true;
        for (uint32_t i = 0; ok && i < f->n_lits; i++) {
            const xpf_lit *l = &f->lits[i];
            if (!l->starts || l->slot != s) continue;
            uint32_t j = 0;
            while (j < n && lens[j] != l->s_len) j++;
            if (j == n) {
                if (n == XPF_MAX_PLENS) ok = false;
                else lens[n++] = l->s_len;
            }
        }
        for (uint32_t i = 0; ok && i < f->n_lits; i++)
            if (f->lits[i].starts && f->lits[i].slot == s) f->lits[i].prefix = true;
    }
}

/* Puts string literal lit with its post into pslot s's equality table
 * (allocated); a literal already there is left as it is. Returns the
 * literal a value equal to lit's string meets first when it probes the
 * table (the first one of that string put in: they share a home entry). */
static uint32_t eq_insert(const wm_xpf *f, xpf_pslot *s, uint32_t lit, xpf_post post)
{
    const xpf_lit *l = &f->lits[lit];
    uint64_t h = wm_xpf_str_hash(f->strpool + l->s_off, l->s_len);
    uint32_t k = (uint32_t)h & s->eq_mask, first = XPF_NONE;
    for (; s->eq[k].lit != XPF_NONE; k = (k + 1) & s->eq_mask) {
        const xpf_lit *o = &f->lits[s->eq[k].lit];
        bool same = s->eq[k].h == h && o->s_len == l->s_len && !memcmp(f->strpool + o->s_off, f->strpool + l->s_off, l->s_len);
        if (same && first == XPF_NONE) first = s->eq[k].lit;
        if (s->eq[k].lit == lit) return first;
        if (same) s->eq_dup = true;
    }
    s->eq[k] = (xpf_eqtrig){ .h = h, .lit = lit, .s_len = l->s_len, .s_off = l->s_off, .post = post, .pq_off = XPF_NONE };
    return first != XPF_NONE ? first : lit;
}

static int cmp_centry_x(const void *a, const void *b)
{
    const xpf_centry *x = a, *y = b;
    if (x->x != y->x) return x->x < y->x ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/* Can guard g's clusters be merged (all numeric)? Not where S = 'L' holds
 * without a value of S (not(. = ''): '.' of an element without character
 * content is ''): a merged group skips the entries of the literal S's value
 * names, and entries name their literal by its string, which `text() = ''`
 * (false there) shares; the guard's own test knows the difference. */
static bool neg_mergeable(const wm_xpf *f, const xpf_pstate *ps, const xpf_negguard *g)
{
    if (f->lits[g->lit].absent) return false;
    const xpf_post *p = &ps->guards[g->guard].post;
    if (p->n || p->ne) return false;
    for (uint32_t k = 0; k < p->nc; k++)
        if (ps->clusters[p->coff + k].str) return false;
    return true;
}

/* Moves the not(S = 'L') guards (ps->neg, sorted by slot) whose clusters
 * are all numeric into neggroups, merging their clusters per (slot, op)
 * (xpf_neggroup). Returns nonzero on allocation failure. */
static int merge_neg_guards(wm_xpf *f, xpf_pstate *ps)
{
    uint32_t extra = 0, nm = 0;
    for (uint32_t i = 0; i < ps->n_neg; i++)
        if (neg_mergeable(f, ps, &ps->neg[i])) {
            const xpf_post *p = &ps->guards[ps->neg[i].guard].post;
            for (uint32_t k = 0; k < p->nc; k++) extra += ps->clusters[p->coff + k].n;
            nm++;
        }
    if (!nm) return 0;
    xpf_centry *ce = realloc(ps->centries, (ps->n_centries + extra) * sizeof *ce);
    if (!ce) return -1;
    ps->centries = ce;
    /* at most one group per guard, one merged cluster per guard cluster */
    uint32_t ncl = 0;
    for (uint32_t i = 0; i < ps->n_neg; i++)
        if (neg_mergeable(f, ps, &ps->neg[i])) ncl += ps->guards[ps->neg[i].guard].post.nc;
    if (!(ps->neggroups = malloc(nm * sizeof *ps->neggroups)) || !(ps->negm = malloc(nm * sizeof *ps->negm)) ||
        !(ps->negcl = malloc((ncl ? ncl : 1) * sizeof *ps->negcl)))
        return -1;
    uint32_t keep = 0, n_negcl = 0, n_negm = 0;
    for (uint32_t i = 0; i < ps->n_neg;) {
        uint32_t slot = ps->neg[i].slot, j = i;
        while (j < ps->n_neg && ps->neg[j].slot == slot) j++;
        xpf_neggroup *grp = NULL;
        for (uint32_t k = i; k < j; k++) {
            const xpf_negguard *g = &ps->neg[k];
            if (!neg_mergeable(f, ps, g)) {
                ps->neg[keep++] = *g;
                continue;
            }
            if (!grp) {
                grp = &ps->neggroups[ps->n_neggroups++];
                *grp = (xpf_neggroup){ .slot = slot, .goff = n_negm, .coff = n_negcl };
            }
            ps->negm[n_negm++] = *g;
            const xpf_post *p = &ps->guards[g->guard].post;
            for (uint32_t m = 0; m < p->nc; m++) {
                const xpf_cluster *src = &ps->clusters[p->coff + m];
                xpf_cluster *dst = NULL;
                for (uint32_t t = grp->coff; t < n_negcl; t++)
                    if (ps->negcl[t].slot == src->slot && ps->negcl[t].op == src->op) dst = &ps->negcl[t];
                if (!dst) {
                    /* entries are appended per merged cluster below, in one pass per cluster */
                    dst = &ps->negcl[n_negcl++];
                    *dst = (xpf_cluster){ .slot = src->slot, .op = src->op, .id = f->n_clusters_total++ };
                }
            }
        }
        if (grp) {
            grp->gn = n_negm - grp->goff;
            grp->cn = n_negcl - grp->coff;
            /* the entries of each merged cluster: every guard's cluster of that (slot, op), lit = the guard's L */
            for (uint32_t t = grp->coff; t < n_negcl; t++) {
                xpf_cluster *dst = &ps->negcl[t];
                dst->off = ps->n_centries;
                for (uint32_t k = grp->goff; k < n_negm; k++) {
                    const xpf_post *p = &ps->guards[ps->negm[k].guard].post;
                    for (uint32_t m = 0; m < p->nc; m++) {
                        const xpf_cluster *src = &ps->clusters[p->coff + m];
                        if (src->slot != dst->slot || src->op != dst->op) continue;
                        for (uint32_t e = 0; e < src->n; e++) {
                            xpf_centry x = ps->centries[src->off + e];
                            x.lit = ps->negm[k].lit;
                            ps->centries[ps->n_centries++] = x;
                        }
                    }
                }
                dst->n = ps->n_centries - dst->off;
                qsort(ps->centries + dst->off, dst->n, sizeof *ps->centries, cmp_centry_x);
            }
        }
        i = j;
    }
    ps->n_neg = keep;
    return 0;
}

/* Sets xpf_cluster.sole: numeric range clusters (not =, not merged) every
 * one of whose queries occurs once in all postings, clusters, always lists
 * and accepting lists of the filter and is not impossible. Nonzero on
 * allocation failure. */
static int mark_sole_clusters(wm_xpf *f)
{
    uint8_t *occ = calloc(f->n_q ? f->n_q : 1, 1);
    if (!occ) return -1;
#define OCC(q) (occ[q] < 2 ? occ[q]++ : 0)
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        const xpf_pstate *ps = &f->pstates[p];
        for (uint32_t i = 0; i < ps->n_qlist; i++) OCC(ps->qlist[i]);
        for (uint32_t i = 0; i < ps->n_centries; i++) OCC(ps->centries[i].q);
        for (uint32_t i = 0; i < ps->n_always; i++) OCC(ps->always[i]);
    }
    for (uint32_t d = 0; d < f->n_dstates; d++)
        for (uint32_t i = 0; i < f->dstates[d].n_acc; i++) OCC(f->acc[f->dstates[d].acc_off + i]);
    for (uint32_t i = 0; i < f->n_impossible; i++) occ[f->impossible[i]] = 2;
#undef OCC
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        xpf_pstate *ps = &f->pstates[p];
        for (uint32_t k = 0; k < ps->n_clusters; k++) {
            xpf_cluster *cl = &ps->clusters[k];
            cl->sole = !cl->str && cl->op != WM_XP_EQ;
            for (uint32_t i = 0; cl->sole && i < cl->n; i++) cl->sole = occ[ps->centries[cl->off + i].q] == 1;
        }
    }
    free(occ);
    return 0;
}

/* Predicate states (indexes into the array ctx) by queries, most first, then by index. */
static int cmp_pstate_queries(const void *a, const void *b, void *ctx)
{
    const xpf_pstate *ps = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (ps[x].n_q != ps[y].n_q) return ps[x].n_q > ps[y].n_q ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The query bits (wm_xpf bit_of): the queries of each range cluster the
 * evaluator can run inline (not =, no x = -inf entry: xpf_cluster fast)
 * take consecutive bits in its search order, so that the entries a value
 * makes true, a prefix, are a bit range made on the fly where a row of
 * pmask would be read (a row of 1,000 queries is two cache lines, and the
 * rows of a filter do not stay in L1). A cluster with a query that has
 * bits already (e.g. "@v < x or @v > y", two clusters; a query listed
 * twice) keeps rows. The other queries follow in their order. Every list
 * of queries is rewritten to bits. Nonzero on allocation failure. */
static int renumber_queries(wm_xpf *f)
{
    uint32_t n = f->n_q, next = 0, n_acc = 0;
    uint32_t *bit = malloc((n ? n : 1) * sizeof *bit), *ord = malloc((f->n_pstates ? f->n_pstates : 1) * sizeof *ord);
    xpf_query *qs = malloc((n ? n : 1) * sizeof *qs);
    if (!bit || !qs || !ord) {
        free(bit);
        free(qs);
        free(ord);
        return -1;
    }
    for (uint32_t q = 0; q < n; q++) bit[q] = XPF_NONE;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        ord[p] = p;
        for (uint32_t k = 0; k < f->pstates[p].n_clusters; k++) f->pstates[p].clusters[k].qb = XPF_NONE;
    }
    /* the states where more queries accept first: with "//a[...]" and "/r/a[...]", the state
     * of r/a, where every document's a is and whose clusters hold the queries of both */
    qsort_r(ord, f->n_pstates, sizeof *ord, cmp_pstate_queries, f->pstates);
    for (uint32_t o = 0; o < f->n_pstates; o++) {
        xpf_pstate *ps = &f->pstates[ord[o]];
        for (uint32_t k = 0; k < ps->n_clusters; k++) {
            xpf_cluster *cl = &ps->clusters[k];
            if (cl->str || cl->op == WM_XP_EQ || cl->ninf) continue;
            const xpf_centry *e = ps->centries + cl->off;
            uint32_t i = 0;
            while (i < cl->n && bit[e[i].q] == XPF_NONE) bit[e[i].q] = next + i, i++;
            if (i < cl->n) { /* e[i].q has bits: give back the ones just taken */
                for (uint32_t j = 0; j < i; j++) bit[e[j].q] = XPF_NONE;
                continue;
            }
            cl->qb = next;
            next += cl->n;
        }
        for (uint32_t g = 0, k = 0; g < ps->n_neggroups; g++)
            for (uint32_t end = k + ps->neggroups[g].cn; k < end; k++) ps->negcl[k].qb = XPF_NONE;
    }
    free(ord);
    for (uint32_t q = 0; q < n; q++)
        if (bit[q] == XPF_NONE) bit[q] = next++;
    for (uint32_t q = 0; q < n; q++) qs[bit[q]] = f->qs[q];
    free(f->qs);
    f->qs = qs;
    f->bit_of = bit;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        xpf_pstate *ps = &f->pstates[p];
        for (uint32_t i = 0; i < ps->n_q; i++) ps->qs[i] = bit[ps->qs[i]];
        for (uint32_t i = 0; i < ps->n_always; i++) ps->always[i] = bit[ps->always[i]];
        for (uint32_t i = 0; i < ps->n_qlist; i++) ps->qlist[i] = bit[ps->qlist[i]];
        for (uint32_t i = 0; i < ps->n_centries; i++) ps->centries[i].q = bit[ps->centries[i].q];
    }
    for (uint32_t d = 0; d < f->n_dstates; d++)
        if (f->dstates[d].acc_off + f->dstates[d].n_acc > n_acc) n_acc = f->dstates[d].acc_off + f->dstates[d].n_acc;
    for (uint32_t i = 0; i < n_acc; i++) f->acc[i] = bit[f->acc[i]];
    for (uint32_t i = 0; i < f->n_impossible; i++) f->impossible[i] = bit[f->impossible[i]];
    return 0;
}

/* Rows [0, n] of a range cluster's entries e[0..n) (in search order) at
 * row block `row`: row r is the entries [0, r), only those whose literal is
 * not `skip` when `excl`. */
static void fill_rows(const wm_xpf *f, const xpf_centry *e, uint32_t n, uint64_t *row, bool excl, uint32_t skip)
{
    for (uint32_t r = 0; r < n; r++) {
        uint32_t q = e[r].q;
        memcpy(row + (size_t)(r + 1) * f->n_qw, row + (size_t)r * f->n_qw, f->n_qw * sizeof(uint64_t));
        if (!excl || e[r].lit != skip) row[(size_t)(r + 1) * f->n_qw + q / 64] |= 1ull << (q % 64);
    }
}

/* Can string cluster cl have rows (one per literal, at its run's first
 * entry)? Not when two of its literals share a hash: the evaluator finds
 * the run by hash alone. */
static bool str_rows_ok(const xpf_pstate *ps, const xpf_cluster *cl)
{
    const xpf_centry *e = ps->centries + cl->off;
    for (uint32_t i = 1; i < cl->n; i++)
        if (e[i].h == e[i - 1].h && e[i].lit != e[i - 1].lit) return false;
    return true;
}

/* Builds the rows of the numeric range clusters, merged not() clusters
 * included (wm_xpf.pmask, xpf_cluster pm), up to XPF_PMASK_CAP bytes.
 * Nonzero on allocation failure. */
static int build_cluster_rows(wm_xpf *f)
{
    size_t rows = 0, cap_rows = XPF_PMASK_CAP / (f->n_qw * sizeof(uint64_t));
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        xpf_pstate *ps = &f->pstates[p];
        for (uint32_t k = 0; k < ps->n_clusters; k++) {
            xpf_cluster *cl = &ps->clusters[k];
            cl->pm = XPF_NONE;
            if (cl->qb != XPF_NONE) { /* its rows are bit ranges */
                cl->fast = true;
                continue;
            }
            if (cl->op == WM_XP_EQ && !cl->str) continue;
            if (8 * cl->n < f->n_qw || rows + cl->n + 1 > cap_rows) continue;
            if (cl->str && !str_rows_ok(ps, cl)) continue;
            cl->pm = (uint32_t)rows;
            rows += cl->n + 1;
            cl->fast = !cl->str && !cl->ninf;
        }
        uint32_t ncl = 0, nul = 0;
        for (uint32_t g = 0; g < ps->n_neggroups; g++) ncl += ps->neggroups[g].cn;
        for (uint32_t k = 0; k < ncl; k++) nul += ps->negcl[k].n;
        if (ncl && !(ps->neglits = malloc(nul * sizeof *ps->neglits))) return -1;
        nul = 0;
        for (uint32_t k = 0; k < ncl; k++) {
            xpf_cluster *cl = &ps->negcl[k];
            cl->pm = XPF_NONE;
            cl->ul_off = nul;
            cl->n_ul = 0;
            if (cl->op == WM_XP_EQ || 8 * cl->n < f->n_qw) continue;
            for (uint32_t i = 0; i < cl->n; i++) {
                uint32_t lit = ps->centries[cl->off + i].lit, j = 0;
                while (j < cl->n_ul && ps->neglits[nul + j] != lit) j++;
                if (j == cl->n_ul) ps->neglits[nul + cl->n_ul++] = lit;
            }
            if (rows + (size_t)(cl->n_ul + 1) * (cl->n + 1) > cap_rows) continue;
            nul += cl->n_ul;
            cl->pm = (uint32_t)rows;
            rows += (size_t)(cl->n_ul + 1) * (cl->n + 1);
        }
    }
    if (!rows) return 0;
    if (!(f->pmask = calloc(rows, f->n_qw * sizeof(uint64_t)))) return -1;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        const xpf_pstate *ps = &f->pstates[p];
        for (uint32_t k = 0; k < ps->n_clusters; k++) {
            const xpf_cluster *cl = &ps->clusters[k];
            if (cl->pm == XPF_NONE) continue;
            const xpf_centry *e = ps->centries + cl->off;
            uint64_t *row = f->pmask + (size_t)cl->pm * f->n_qw;
            if (!cl->str) {
                fill_rows(f, e, cl->n, row, false, 0);
                continue;
            }
            /* a string cluster: at the first entry of each literal's run, that run's queries */
            for (uint32_t i = 0, r = 0; i < cl->n; i++) {
                if (i == 0 || e[i].lit != e[i - 1].lit) r = i;
                row[(size_t)r * f->n_qw + e[i].q / 64] |= 1ull << (e[i].q % 64);
            }
        }
        uint32_t ncl = 0;
        for (uint32_t g = 0; g < ps->n_neggroups; g++) ncl += ps->neggroups[g].cn;
        for (uint32_t k = 0; k < ncl; k++) {
            const xpf_cluster *cl = &ps->negcl[k];
            if (cl->pm == XPF_NONE) continue;
            for (uint32_t j = 0; j <= cl->n_ul; j++)
                fill_rows(f, ps->centries + cl->off, cl->n, f->pmask + ((size_t)cl->pm + (size_t)j * (cl->n + 1)) * f->n_qw, j > 0,
                          j ? ps->neglits[cl->ul_off + j - 1] : 0);
        }
    }
    return 0;
}

/* The literal of pslot s's equality table that a value equal to literal
 * lit's string meets first when it probes the table, XPF_NONE: none. */
static uint32_t eq_find(const wm_xpf *f, const xpf_pslot *s, uint32_t lit)
{
    const xpf_lit *l = &f->lits[lit];
    uint64_t h = wm_xpf_str_hash(f->strpool + l->s_off, l->s_len);
    for (uint32_t k = (uint32_t)h & s->eq_mask; s->eq[k].lit != XPF_NONE; k = (k + 1) & s->eq_mask) {
        const xpf_eqtrig *e = &s->eq[k];
        if (e->h == h && e->s_len == l->s_len && !memcmp(f->strpool + e->s_off, f->strpool + l->s_off, l->s_len)) return e->lit;
    }
    return XPF_NONE;
}

/* The entry of pslot s's equality table that a value text[0..n) meets
 * first when it probes the table (the evaluator's eq_find), NULL: none. */
static const xpf_eqtrig *eq_entry(const wm_xpf *f, const xpf_pslot *s, const char *text, uint32_t n)
{
    uint64_t h = wm_xpf_str_hash(text, n);
    for (uint32_t k = (uint32_t)h & s->eq_mask; s->eq[k].lit != XPF_NONE; k = (k + 1) & s->eq_mask) {
        const xpf_eqtrig *e = &s->eq[k];
        if (e->h == h && e->s_len == n && !memcmp(f->strpool + e->s_off, text, n)) return e;
    }
    return NULL;
}

/* The table by literal of string cluster cl with rows (xpf_strkey), where
 * its slot's values are probed in an equality table anyway: its literals
 * not there yet go in (with nothing to fire), while the table stays at
 * most half full; otherwise the cluster keeps finding its literal by the
 * value's hash. Nonzero on allocation failure. */
static int str_cluster_table(wm_xpf *f, xpf_pstate *ps, xpf_cluster *cl)
{
    xpf_pslot *s = pslot_of(ps, cl->slot);
    if (!s || !s->eq) return 0;
    const xpf_centry *e = ps->centries + cl->off;
    uint32_t runs = 0, used = 0;
    for (uint32_t i = 0; i < cl->n; i++) runs += i == 0 || e[i].lit != e[i - 1].lit;
    for (uint32_t k = 0; k <= s->eq_mask; k++) used += s->eq[k].lit != XPF_NONE;
    uint32_t sz = 2;
    while (sz < 2 * runs) sz *= 2;
    xpf_strkey *t = realloc(ps->strk, (ps->n_strk + sz) * sizeof *t);
    if (!t) return -1;
    ps->strk = t;
    t += ps->n_strk;
    for (uint32_t k = 0; k < sz; k++) t[k].lit = XPF_NONE;
    for (uint32_t i = 0, j; i < cl->n; i = j) {
        for (j = i + 1; j < cl->n && e[j].lit == e[i].lit;) j++;
        uint32_t u = eq_find(f, s, e[i].lit);
        if (u == XPF_NONE) {
            if (2 * (used + 1) > s->eq_mask + 1) return 0; /* no room: the table is not used (tmask 0) */
            u = eq_insert(f, s, e[i].lit, (xpf_post){ .n = 0 });
            used++;
        }
        uint32_t k = wm_xpf_lit_slot(u, sz - 1);
        while (t[k].lit != XPF_NONE) k = (k + 1) & (sz - 1); /* distinct: rows mean distinct hashes, so strings */
        t[k] = (xpf_strkey){ .lit = u, .r = i, .n = j - i };
    }
    cl->toff = ps->n_strk;
    cl->tmask = sz - 1;
    ps->n_strk += sz;
    return 0;
}

/* The first of the two consecutive words of a query bit set that hold
 * the bits of every query of fast cluster cl with rows (xpf_run PAIR),
 * XPF_NONE: they lie farther apart. */
static uint32_t pair_word(const xpf_pstate *ps, const xpf_cluster *cl)
{
    const xpf_centry *e = ps->centries + cl->off;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < cl->n; i++) {
        if (e[i].q < lo) lo = e[i].q;
        if (e[i].q > hi) hi = e[i].q;
    }
    return cl->n && hi / 64 - lo / 64 <= 1 ? lo / 64 : XPF_NONE;
}

/* How the element decision runs cluster cl (xpf_run kind). */
static uint8_t run_kind(const xpf_pstate *ps, const xpf_cluster *cl)
{
    if (!cl->fast || cl->lg > 6) return XPF_RUN_OTHER;
    if (cl->qb != XPF_NONE) return XPF_RUN_BITS;
    return pair_word(ps, cl) != XPF_NONE ? XPF_RUN_PAIR : XPF_RUN_ROWS;
}

/* The runs of every predicate state (xpf_pstate runs), the rows of two
 * words (wm_xpf prow) and the string clusters' tables by literal, once
 * keys and rows are final. Nonzero on allocation failure. */
static int build_runs(wm_xpf *f)
{
    size_t n_prow = 0;
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t k = 0; k < f->pstates[p].n_clusters; k++)
            if (run_kind(&f->pstates[p], &f->pstates[p].clusters[k]) == XPF_RUN_PAIR) n_prow += 2 * (f->pstates[p].clusters[k].n + 1);
    if (n_prow && !(f->prow = malloc(n_prow * sizeof *f->prow))) return -1;
    n_prow = 0;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        xpf_pstate *ps = &f->pstates[p];
        for (uint32_t k = 0; k < ps->n_clusters; k++)
            if (ps->clusters[k].str && ps->clusters[k].pm != XPF_NONE && str_cluster_table(f, ps, &ps->clusters[k])) return -1;
        ps->n_runs = ps->n_clusters;
        for (uint32_t k = 0; k < ps->n_clusters; k++) ps->n_runs += ps->clusters[k].post_end;
        if (!(ps->runs = calloc(ps->n_runs ? ps->n_runs : 1, sizeof *ps->runs))) return -1;
        for (uint32_t k = 0, j = 0; k < ps->n_clusters; k++) {
            const xpf_cluster *cl = &ps->clusters[k];
            xpf_run *r = &ps->runs[j++];
            if (cl->post_end) ps->runs[j++] = (xpf_run){ .kind = XPF_RUN_END };
            uint8_t kind = run_kind(ps, cl);
            if (kind == XPF_RUN_OTHER) {
                *r = (xpf_run){ .kind = XPF_RUN_OTHER, .cl = k };
                continue;
            }
            *r = (xpf_run){ .K = ps->ckeys + cl->koff, .sgn = cl->sgn, .slot = cl->slot, .kind = kind };
            if (kind == XPF_RUN_BITS) {
                r->qw = (uint16_t)(cl->qb / 64);
                r->qs = (uint8_t)(cl->qb % 64);
            } else if (kind == XPF_RUN_ROWS)
                r->rows = f->pmask + (size_t)cl->pm * f->n_qw;
            else { /* PAIR: words pw and pw + 1 of each of its rows */
                uint32_t pw = pair_word(ps, cl);
                uint64_t *row = f->prow + n_prow;
                const uint64_t *full = f->pmask + (size_t)cl->pm * f->n_qw;
                for (uint32_t i = 0; i <= cl->n; i++) {
                    row[2 * i] = full[(size_t)i * f->n_qw + pw];
                    row[2 * i + 1] = pw + 1 < f->n_qw ? full[(size_t)i * f->n_qw + pw + 1] : 0;
                }
                r->rows = row;
                r->qw = (uint16_t)pw;
                n_prow += 2 * (cl->n + 1);
            }
        }
        for (uint32_t g = 0; g < ps->n_neggroups; g++) {
            const xpf_neggroup *grp = &ps->neggroups[g];
            for (uint32_t k = grp->coff; k < grp->coff + grp->cn; k++) {
                const xpf_cluster *cl = &ps->negcl[k];
                if (cl->pm == XPF_NONE) {
                    ps->neg_slow = true;
                    continue;
                }
                xpf_negrun *nr = realloc(ps->negruns, (ps->n_negruns + 1) * sizeof *nr);
                if (!nr) return -1;
                ps->negruns = nr;
                nr[ps->n_negruns++] = (xpf_negrun){ .sgn = cl->sgn, .gslot = grp->slot, .slot = cl->slot, .id = cl->id, .cl = k };
            }
        }
    }
    return 0;
}

/* Search order (xpf_cluster): x ascending for op > >=, descending for < <=. */
static int cmp_centry_search(const void *a, const void *b, void *neg)
{
    const xpf_centry *x = a, *y = b;
    double u = *(double *)neg * x->x, v = *(double *)neg * y->x;
    if (u != v) return u < v ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/* Puts the entries of the range clusters of cl[0..n) in search order and
 * appends their keys (xpf_key) to ps->ckeys; the slots of the numeric
 * clusters go into ps->nslots. Nonzero on allocation failure. */
static int order_range_clusters(xpf_pstate *ps, xpf_cluster *cl, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++, cl++) {
        if (cl->str) continue;
        uint32_t j = 0;
        while (j < ps->n_nslots && ps->nslots[j] != cl->slot) j++;
        if (j == ps->n_nslots) {
            uint32_t *ns = realloc(ps->nslots, (ps->n_nslots + 1) * sizeof *ns);
            if (!ns) return -1;
            ps->nslots = ns;
            ns[ps->n_nslots++] = cl->slot;
        }
        if (cl->op == WM_XP_EQ) continue;
        xpf_centry *e = ps->centries + cl->off;
        cl->sgn = cl->op == WM_XP_LT || cl->op == WM_XP_LE ? -1 : 1;
        qsort_r(e, cl->n, sizeof *e, cmp_centry_search, &cl->sgn);
        /* thresholds are numbers (cluster_disjuncts leaves NaN out) */
        cl->ninf = 0;
        if (cl->op == WM_XP_GE || cl->op == WM_XP_LE)
            while (cl->ninf < cl->n && cl->sgn * e[cl->ninf].x == -__builtin_inf()) cl->ninf++;
        cl->lg = 6;
        while ((1ull << cl->lg) < (uint64_t)cl->n + 1) cl->lg++;
        /* 64 keys: the maxima of their blocks of 8 first (key_rank) */
        uint32_t nb = cl->lg == 6 ? 8 : 0;
        double *nk = realloc(ps->ckeys, ((size_t)ps->n_ckeys + nb + (1ull << cl->lg)) * sizeof *nk);
        if (!nk) return -1;
        ps->ckeys = nk;
        cl->koff = ps->n_ckeys + nb;
        for (uint32_t i = 0; i < 1u << cl->lg; i++) nk[cl->koff + i] = i < cl->n ? xpf_key(cl->op, e[i].x) : NAN;
        for (uint32_t b = 0; b < nb; b++) nk[ps->n_ckeys + b] = nk[cl->koff + 8 * b + 7];
        ps->n_ckeys += nb + (1u << cl->lg);
    }
    return 0;
}

static wm_xpf_status build_pstate(wm_xpf *f, xpf_pstate *ps)
{
    wm_xpf_status rc = WM_XPF_E_MEMORY;
    pair *pairs = NULL;
    uint32_t n_pairs = 0, cap_pairs = 0;
    lvec used = { 0 };
    if (!(ps->slot_ix = calloc(f->n_slots ? f->n_slots : 1, sizeof *ps->slot_ix))) return rc;
    if (!(ps->always = malloc(ps->n_q * sizeof *ps->always))) return rc;
    if (!(ps->guards = malloc((ps->n_q ? ps->n_q : 1) * sizeof *ps->guards))) return rc;
    bool ok = true;
    for (uint32_t i = 0; i < ps->n_q; i++) {
        uint32_t q = ps->qs[i];
        lvec t = { 0 };
        uint32_t guard, dis[8], nd = 0;
        if (guarded_cluster(f, f->qs[q].pred, &guard, dis, &nd, &ok)) {
            /* one guard per distinct G; its pairs use the pseudo literal n_lits + guard index */
            uint32_t gi = 0;
            while (gi < ps->n_guards && !pred_eq(f, ps->guards[gi].pred, guard)) gi++;
            if (gi == ps->n_guards) ps->guards[ps->n_guards++] = (xpf_guard){ .pred = guard, .neg = false };
            t.n = 1;
            t.v = malloc(sizeof *t.v);
            if (!t.v) goto out;
            t.v[0] = f->n_lits + gi;
        } else if (!ok || !triggers(f, f->qs[q].pred, &t)) {
            free(t.v);
            goto out;
        }
        if (t.always) ps->always[ps->n_always++] = q;
        else
            for (uint32_t k = 0; k < t.n; k++) {
                if (n_pairs == cap_pairs) {
                    cap_pairs = cap_pairs ? cap_pairs * 2 : 64;
                    pair *np = realloc(pairs, cap_pairs * sizeof *np);
                    if (!np) { free(t.v); goto out; }
                    pairs = np;
                }
                pair pr = { .lit = t.v[k], .q = q, .kind = PK_GENERIC };
                const xpf_pnode *pn = &f->pnodes[f->qs[q].pred];
                if (t.v[k] >= f->n_lits) pr.kind = PK_CLUSTER; /* a guard: dis[0..nd) from above */
                else if (or_of_triggers(f, f->qs[q].pred, t.v, t.n)) pr.kind = PK_EXACT;
                else if (t.n == 1 && pn->kind == XPF_P_AND) {
                    /* "trigger and (S op x or S' = 's' ...)": one cluster entry per disjunct */
                    const xpf_pnode *a = &f->pnodes[pn->a], *b = &f->pnodes[pn->b];
                    uint32_t other = a->kind == XPF_P_LIT && a->a == t.v[0] ? pn->b
                                   : b->kind == XPF_P_LIT && b->a == t.v[0] ? pn->a : XPF_NONE;
                    nd = 0;
                    if (other != XPF_NONE && cluster_disjuncts(f, other, dis, &nd)) pr.kind = PK_CLUSTER;
                }
                for (uint32_t d = 0; d < (pr.kind == PK_CLUSTER ? nd : 1); d++) {
                    if (n_pairs == cap_pairs) {
                        cap_pairs = cap_pairs * 2;
                        pair *np = realloc(pairs, cap_pairs * sizeof *np);
                        if (!np) { free(t.v); goto out; }
                        pairs = np;
                    }
                    if (pr.kind == PK_CLUSTER) {
                        const xpf_lit *r = &f->lits[dis[d]];
                        pr.slot = r->slot;
                        pr.str = r->kind == XPF_L_STREQ;
                        pr.op = pr.str ? WM_XP_EQ : r->op;
                        pr.x = pr.str ? 0 : r->x;
                        pr.h = pr.str ? wm_xpf_str_hash(f->strpool + r->s_off, r->s_len) : 0;
                        pr.slit = pr.str ? dis[d] : XPF_NONE;
                    }
                    pairs[n_pairs++] = pr;
                }
            }
        free(t.v);
        lits_used(f, f->qs[q].pred, &used, &ok);
        if (!ok) goto out;
    }
    f->n_always_total += ps->n_always;
    /* slots this state reads */
    for (uint32_t i = 0; i < used.n; i++) {
        const xpf_lit *l = &f->lits[used.v[i]];
        if (!ps->slot_ix[l->slot]) {
            xpf_pslot *np = realloc(ps->pslots, (ps->n_pslots + 1) * sizeof *np);
            if (!np) goto out;
            ps->pslots = np;
            memset(&np[ps->n_pslots], 0, sizeof *np);
            np[ps->n_pslots].slot = l->slot;
            np[ps->n_pslots].exists.off = XPF_NONE;
            ps->slot_ix[l->slot] = (uint16_t)++ps->n_pslots;
        }
        xpf_pslot *s = pslot_of(ps, l->slot);
        if (l->kind == XPF_L_STREQ || l->kind == XPF_L_STRNE) s->need_str = true;
        if (l->kind == XPF_L_NUM) s->need_num = true;
        if (l->kind == XPF_L_PAT && !l->prefix) s->scan = true;
        if (l->prefix && add_prefix(f, s, used.v[i])) goto out;
        if (f->slots[l->slot].is_text) ps->any_text = true;
    }
    /* postings */
    if (n_pairs) qsort(pairs, n_pairs, sizeof *pairs, cmp_pair);
    if (!(ps->qlist = malloc((n_pairs ? n_pairs : 1) * sizeof *ps->qlist))) goto out;
    if (!(ps->centries = malloc((n_pairs ? n_pairs : 1) * sizeof *ps->centries))) goto out;
    if (!(ps->clusters = malloc((n_pairs ? n_pairs : 1) * sizeof *ps->clusters))) goto out;
    uint32_t n_cposts = 0;
    for (uint32_t i = 0; i < n_pairs;) {
        uint32_t j = i, lit = pairs[i].lit;
        xpf_post post = { .off = ps->n_qlist };
        for (; j < n_pairs && pairs[j].lit == lit && pairs[j].kind == PK_GENERIC; j++)
            if (j == i || pairs[j].q != pairs[j - 1].q) ps->qlist[ps->n_qlist++] = pairs[j].q;
        post.n = ps->n_qlist - post.off;
        post.eoff = ps->n_qlist;
        for (uint32_t e0 = j; j < n_pairs && pairs[j].lit == lit && pairs[j].kind == PK_EXACT; j++)
            if (j == e0 || pairs[j].q != pairs[j - 1].q) ps->qlist[ps->n_qlist++] = pairs[j].q;
        post.ne = ps->n_qlist - post.eoff;
        post.coff = ps->n_clusters;
        while (j < n_pairs && pairs[j].lit == lit) {
            xpf_cluster *cl = &ps->clusters[ps->n_clusters++];
            *cl = (xpf_cluster){ .slot = pairs[j].slot, .op = pairs[j].op, .str = pairs[j].str, .off = ps->n_centries,
                                 .id = f->n_clusters_total++ };
            for (uint32_t k0 = j; j < n_pairs && pairs[j].lit == lit && pairs[j].slot == cl->slot && pairs[j].op == cl->op &&
                                  pairs[j].str == cl->str; j++) {
                if (j != k0 && pairs[j].q == pairs[j - 1].q && pairs[j].x == pairs[j - 1].x && pairs[j].slit == pairs[j - 1].slit)
                    continue;
                xpf_centry *ce = &ps->centries[ps->n_centries++];
                *ce = (xpf_centry){ .q = pairs[j].q, .lit = pairs[j].slit };
                if (cl->str) ce->h = pairs[j].h;
                else ce->x = pairs[j].x;
            }
            cl->n = ps->n_centries - cl->off;
        }
        post.nc = ps->n_clusters - post.coff;
        if (post.nc) { /* its runs, then an END: one more run per post before it (build_runs) */
            post.roff = post.coff + n_cposts++;
            ps->clusters[ps->n_clusters - 1].post_end = true;
        }
        i = j;
        if (lit >= f->n_lits) {
            ps->guards[lit - f->n_lits].post = post;
            continue;
        }
        const xpf_lit *l = &f->lits[lit];
        xpf_pslot *s = pslot_of(ps, l->slot);
        switch (l->kind) {
        case XPF_L_NUM: {
            xpf_numtrig *nn = realloc(s->num[l->op], (s->n_num[l->op] + 1) * sizeof *nn);
            if (!nn) goto out;
            s->num[l->op] = nn;
            nn[s->n_num[l->op]++] = (xpf_numtrig){ l->x, lit, post };
            break;
        }
        case XPF_L_STREQ: case XPF_L_STRNE: {
            /* STRNE triggers live in the NE list of the numeric arrays' sibling: rare, scanned linearly */
            if (l->kind == XPF_L_STRNE) {
                xpf_numtrig *nn = realloc(s->num[WM_XP_NE], (s->n_num[WM_XP_NE] + 1) * sizeof *nn);
                if (!nn) goto out;
                s->num[WM_XP_NE] = nn;
                nn[s->n_num[WM_XP_NE]++] = (xpf_numtrig){ NAN, lit, post };
                break;
            }
            if (!s->eq) {
                /* every string literal of the slot, triggers, not() guards and the string clusters'
                 * literals (str_cluster_table): load <= 1/4, so a value's probe ends after ~1.3 entries */
                uint32_t cnt = 0;
                for (uint32_t k = 0; k < n_pairs; k++) {
                    if ((k == 0 || pairs[k].lit != pairs[k - 1].lit) && pairs[k].lit < f->n_lits && f->lits[pairs[k].lit].slot == l->slot) cnt++;
                    if (pairs[k].kind == PK_CLUSTER && pairs[k].str && pairs[k].slot == l->slot) cnt++;
                }
                cnt += ps->n_guards;
                uint32_t sz = 4;
                while (sz < cnt * 4) sz *= 2;
                if (!(s->eq = malloc(sz * sizeof *s->eq))) goto out;
                for (uint32_t k = 0; k < sz; k++) s->eq[k].lit = XPF_NONE;
                s->eq_mask = sz - 1;
            }
            eq_insert(f, s, lit, post);
            break;
        }
        case XPF_L_PAT: {
            xpf_pattrig *np = realloc(ps->pat, (ps->n_pat + 1) * sizeof *np);
            if (!np) goto out;
            ps->pat = np;
            np[ps->n_pat++] = (xpf_pattrig){ lit, post }; /* pairs sorted by lit: stays sorted */
            break;
        }
        default:
            s->exists = post;
            break;
        }
    }
    /* not(S = 'lit') guards: one hash per element and slot instead of a test per guard */
    if (!(ps->neg = malloc((ps->n_guards ? ps->n_guards : 1) * sizeof *ps->neg))) goto out;
    for (uint32_t i = 0; i < ps->n_guards; i++) {
        const xpf_pnode *g = &f->pnodes[ps->guards[i].pred];
        if (g->kind != XPF_P_NOT || f->pnodes[g->a].kind != XPF_P_LIT) continue;
        uint32_t lit = f->pnodes[g->a].a;
        const xpf_lit *l = &f->lits[lit];
        if (l->kind != XPF_L_STREQ) continue;
        ps->guards[i].neg = true;
        ps->neg[ps->n_neg++] = (xpf_negguard){ l->slot, lit, wm_xpf_str_hash(f->strpool + l->s_off, l->s_len), i };
    }
    if (ps->n_neg) qsort(ps->neg, ps->n_neg, sizeof *ps->neg, cmp_negguard);
    if (merge_neg_guards(f, ps)) goto out;
    /* the merged guards' literals in their slot's equality table: the value's probe names the
     * guard it falsifies (slotv.eqlit), no test per guard */
    for (uint32_t i = 0; i < ps->n_neggroups; i++) {
        const xpf_neggroup *grp = &ps->neggroups[i];
        xpf_pslot *s = pslot_of(ps, grp->slot);
        if (!s->eq) {
            uint32_t sz = 4;
            while (sz < grp->gn * 4) sz *= 2;
            if (!(s->eq = malloc(sz * sizeof *s->eq))) goto out;
            for (uint32_t k = 0; k < sz; k++) s->eq[k].lit = XPF_NONE;
            s->eq_mask = sz - 1;
        }
        for (uint32_t k = 0; k < grp->gn; k++) {
            /* entries name their guard by the literal the probe meets (text() = 'x' and . = 'x' are
             * two literals of one string) */
            uint32_t lit = ps->negm[grp->goff + k].lit, canon = eq_insert(f, s, lit, (xpf_post){ .n = 0 });
            for (uint32_t m = 0; m < grp->cn; m++) {
                const xpf_cluster *cl = &ps->negcl[grp->coff + m];
                for (uint32_t e = 0; e < cl->n; e++)
                    if (ps->centries[cl->off + e].lit == lit) ps->centries[cl->off + e].lit = canon;
            }
        }
    }
    if (ps->n_pat) {
        uint32_t sz = 4;
        while (sz < ps->n_pat * 4) sz *= 2;
        if (!(ps->pat_ix = calloc(sz, sizeof *ps->pat_ix))) goto out;
        ps->pat_mask = sz - 1;
        for (uint32_t i = 0; i < ps->n_pat; i++) {
            uint32_t k = wm_xpf_lit_slot(ps->pat[i].lit, ps->pat_mask);
            while (ps->pat_ix[k]) k = (k + 1) & ps->pat_mask;
            ps->pat_ix[k] = i + 1;
        }
    }
    uint32_t ncl = 0;
    for (uint32_t i = 0; i < ps->n_neggroups; i++) ncl += ps->neggroups[i].cn;
    if (order_range_clusters(ps, ps->clusters, ps->n_clusters) || order_range_clusters(ps, ps->negcl, ncl)) goto out;
    if (!(ps->pslot_of_lid = calloc(f->g->n_lids ? f->g->n_lids : 1, sizeof *ps->pslot_of_lid))) goto out;
    for (uint32_t lid = 0; lid < f->g->n_lids; lid++) /* pslots is final here */
        if (f->slot_of_lid[lid] != XPF_NONE) ps->pslot_of_lid[lid] = pslot_of(ps, f->slot_of_lid[lid]);
    if (!(ps->plain = malloc((ps->n_guards ? ps->n_guards : 1) * sizeof *ps->plain))) goto out;
    for (uint32_t i = 0; i < ps->n_guards; i++)
        if (!ps->guards[i].neg) ps->plain[ps->n_plain++] = i;
    for (uint32_t i = 0; i < ps->n_pslots; i++) {
        xpf_pslot *s = &ps->pslots[i];
        for (int op = 0; op < 6; op++)
            if (op != WM_XP_NE && s->n_num[op]) {
                qsort(s->num[op], s->n_num[op], sizeof(xpf_numtrig), cmp_num);
                s->num_trig = true;
            }
        bool others = s->num_trig || s->n_num[WM_XP_NE] || s->n_plens || s->scan || s->exists.off != XPF_NONE;
        s->any_trig = others || s->eq_mask;
        s->eq_only = !others;
        s->scan_only = s->scan && !s->num_trig && !s->n_num[WM_XP_NE] && !s->n_plens && s->exists.off == XPF_NONE;
        s->pre_only = s->n_plens && !s->scan && !s->num_trig && !s->n_num[WM_XP_NE] && s->exists.off == XPF_NONE;
        /* a slot whose string some test reads takes no XPF_PUT_NUM: a number there (typed by an
         * xsi:type the schema could not foresee) is read as its canonical text (put_value) */
        s->put = !s->any_trig && !s->need_str                   ? XPF_PUT_NUM
               : s->eq_mask && !s->eq_dup && !s->need_num ? XPF_PUT_STR_EQ
                                                          : XPF_PUT_GENERIC;
    }
    rc = WM_XPF_OK;
out:
    free(pairs);
    free(used.v);
    return rc;
}

/* What the Hyperscan database says of each equality literal of a scanned
 * slot: a value equal to the literal gets the same answer, so the
 * evaluator replays it instead of scanning (pstate eqpat). */
typedef struct eqpat_acc { uint32_t *ids; uint32_t n, cap, start; const wm_xpf *f; uint32_t slot; bool oom; } eqpat_acc;

static int eqpat_cb(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
    eqpat_acc *a = ctx;
    (void)from, (void)to, (void)flags;
    if (a->f->lits[id].slot != a->slot) return 0;
    for (uint32_t i = a->start; i < a->n; i++)
        if (a->ids[i] == id) return 0;
    if (a->n == a->cap) {
        uint32_t nc = a->cap ? a->cap * 2 : 16;
        uint32_t *ni = realloc(a->ids, nc * sizeof *ni);
        if (!ni) { a->oom = true; return 1; }
        a->ids = ni;
        a->cap = nc;
    }
    a->ids[a->n++] = id;
    return 0;
}

/* The trigger of pattern literal lit in ps, NULL: none. */
static const xpf_pattrig *pattern_trigger(const xpf_pstate *ps, uint32_t lit)
{
    if (!ps->pat_ix) return NULL;
    for (uint32_t k = wm_xpf_lit_slot(lit, ps->pat_mask); ps->pat_ix[k]; k = (k + 1) & ps->pat_mask)
        if (ps->pat[ps->pat_ix[k] - 1].lit == lit) return &ps->pat[ps->pat_ix[k] - 1];
    return NULL;
}

/* Equality literal e, whose string matches the patterns ids[e->pat_off..]:
 * when their triggers here match exact queries only (no candidates, no
 * clusters), those queries go into one list (e->pq_off), matched at once by
 * a value equal to the literal. Nonzero on allocation failure. */
static int fold_patterns(wm_xpf *f, xpf_pstate *ps, xpf_eqtrig *e, const uint32_t *ids)
{
    e->pq_off = XPF_NONE;
    uint32_t tot = 0;
    for (uint32_t i = 0; i < e->pat_n; i++) {
        const xpf_pattrig *t = pattern_trigger(ps, ids[e->pat_off + i]);
        if (!t) continue;
        if (t->post.n || t->post.nc) return 0;
        tot += t->post.ne;
    }
    uint32_t *nq = realloc(ps->qlist, (ps->n_qlist + tot + 1) * sizeof *nq);
    if (!nq) return -1;
    ps->qlist = nq;
    e->pq_off = ps->n_qlist;
    for (uint32_t i = 0; i < e->pat_n; i++) {
        const xpf_pattrig *t = pattern_trigger(ps, ids[e->pat_off + i]);
        if (!t) continue;
        memcpy(ps->qlist + ps->n_qlist, ps->qlist + t->post.eoff, t->post.ne * sizeof *ps->qlist);
        ps->n_qlist += t->post.ne;
    }
    e->pq_n = ps->n_qlist - e->pq_off;
    e->pq_id = f->n_pq++;
    return 0;
}

static int eq_patterns(wm_xpf *f, xpf_pstate *ps)
{
    eqpat_acc a = { .f = f };
    for (uint32_t i = 0; i < ps->n_pslots; i++) {
        xpf_pslot *s = &ps->pslots[i];
        if (!s->scan || !s->eq) continue;
        a.slot = s->slot;
        for (uint32_t k = 0; k <= s->eq_mask; k++) {
            xpf_eqtrig *e = &s->eq[k];
            if (e->lit == XPF_NONE) continue;
            const xpf_lit *l = &f->lits[e->lit];
            e->pat_off = a.start = a.n;
            if (hs_scan(f->hs_db, f->strpool + l->s_off, l->s_len, 0, f->hs_proto, eqpat_cb, &a) != HS_SUCCESS) {
                if (a.oom) {
                    free(a.ids);
                    return -1;
                }
                a.n = e->pat_off;
                e->pat_n = XPF_NONE; /* unknown: the evaluator scans */
                continue;
            }
            e->pat_n = a.n - e->pat_off;
            if (fold_patterns(f, ps, e, a.ids)) {
                free(a.ids);
                return -1;
            }
        }
    }
    ps->eqpat = a.ids;
    return 0;
}

/* Marks in read[] the literals of predicate p: a predicate the evaluator
 * evaluates (eval_pred) reads each one's memo. */
static void mark_pred_lits(const wm_xpf *f, uint32_t p, uint8_t *read)
{
    const xpf_pnode *n = &f->pnodes[p];
    switch (n->kind) {
    case XPF_P_LIT: read[n->a] = 1; break;
    case XPF_P_AND: case XPF_P_OR: mark_pred_lits(f, n->a, read); mark_pred_lits(f, n->b, read); break;
    case XPF_P_NOT: mark_pred_lits(f, n->a, read); break;
    default: break;
    }
}

static void mark_post_lits(const wm_xpf *f, const xpf_pstate *ps, const xpf_post *p, uint8_t *read)
{
    for (uint32_t i = 0; i < p->n; i++) mark_pred_lits(f, f->qs[ps->qlist[p->off + i]].pred, read);
}

/* The literals whose memo (set_lit) some predicate of state ps reads at run
 * time: those of its candidates (the generic postings), of the queries it
 * evaluates at every element, of its guards, and, where it reads the text
 * (exact_eval, go_complex), of every query. */
static void read_lits(const wm_xpf *f, const xpf_pstate *ps, uint8_t *read)
{
    memset(read, 0, f->n_lits ? f->n_lits : 1);
    if (ps->any_text) {
        for (uint32_t i = 0; i < ps->n_q; i++)
            if (f->qs[ps->qs[i]].pred != XPF_NONE) mark_pred_lits(f, f->qs[ps->qs[i]].pred, read);
        return;
    }
    for (uint32_t i = 0; i < ps->n_always; i++) mark_pred_lits(f, f->qs[ps->always[i]].pred, read);
    for (uint32_t i = 0; i < ps->n_guards; i++) {
        mark_pred_lits(f, ps->guards[i].pred, read);
        mark_post_lits(f, ps, &ps->guards[i].post, read);
    }
    for (uint32_t i = 0; i < ps->n_pat; i++) mark_post_lits(f, ps, &ps->pat[i].post, read);
    for (uint32_t i = 0; i < ps->n_pslots; i++) {
        const xpf_pslot *s = &ps->pslots[i];
        for (uint32_t k = 0; s->eq && k <= s->eq_mask; k++)
            if (s->eq[k].lit != XPF_NONE) mark_post_lits(f, ps, &s->eq[k].post, read);
        for (int op = 0; op < 6; op++)
            for (uint32_t k = 0; k < s->n_num[op]; k++) mark_post_lits(f, ps, &s->num[op][k].post, read);
        if (s->exists.off != XPF_NONE) mark_post_lits(f, ps, &s->exists, read);
    }
}

/* The equality literals of scanned slots whose pattern replay is a row:
 * their patterns' triggers match exact queries only (xpf_eqtrig pq_off) and
 * no predicate reads those patterns' memos, so a value equal to the literal
 * ORs the queries into the matches as one row (pq_row, wm_xpf pqrows)
 * instead of marking each pattern and each query; with no such query, it
 * does nothing more (pq_n 0). Nonzero on allocation failure. */
static int eq_rows(wm_xpf *f)
{
    uint8_t *read = malloc(f->n_lits ? f->n_lits : 1);
    if (!read) return -1;
    size_t rows = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t p = 0; p < f->n_pstates; p++) {
            xpf_pstate *ps = &f->pstates[p];
            read_lits(f, ps, read);
            for (uint32_t i = 0; i < ps->n_pslots; i++) {
                xpf_pslot *s = &ps->pslots[i];
                for (uint32_t k = 0; s->scan && s->eq && k <= s->eq_mask; k++) {
                    xpf_eqtrig *e = &s->eq[k];
                    if (e->lit == XPF_NONE || e->pat_n == XPF_NONE || e->pq_off == XPF_NONE) continue;
                    bool unread = true;
                    for (uint32_t j = 0; unread && j < e->pat_n; j++) unread = !read[ps->eqpat[e->pat_off + j]];
                    e->pat_unread = unread;
                    if (!unread || !e->pq_n) continue;
                    if (!pass) {
                        rows++;
                        continue;
                    }
                    uint64_t *row = f->pqrows + rows++ * f->n_qw;
                    for (uint32_t j = 0; j < e->pq_n; j++) {
                        uint32_t q = ps->qlist[e->pq_off + j];
                        row[q / 64] |= 1ull << (q % 64);
                    }
                    e->pq_row = row;
                }
            }
        }
        if (!pass) {
            if (!rows) break;
            if (!(f->pqrows = calloc(rows, f->n_qw * sizeof(uint64_t)))) {
                free(read);
                return -1;
            }
            rows = 0;
        }
    }
    free(read);
    return 0;
}

/* What a hit in an equality table needs at run time, in the entry itself
 * (xpf_eqtrig sp, after), so that the evaluator's short string handler
 * reads one record instead of the slot's flags, the pool and the pattern
 * list: run last, once the pool and the pattern lists are final. */
static void eq_hits(wm_xpf *f)
{
    for (uint32_t p = 0; p < f->n_pstates; p++)
        for (uint32_t i = 0; i < f->pstates[p].n_pslots; i++) {
            xpf_pslot *s = &f->pstates[p].pslots[i];
            for (uint32_t k = 0; s->eq && k <= s->eq_mask; k++) {
                xpf_eqtrig *e = &s->eq[k];
                if (e->lit == XPF_NONE) continue;
                e->sp = f->strpool + e->s_off;
                e->after = s->eq_only                                                  ? XPF_EQ_DONE
                         : s->scan_only && f->hs_db && e->pat_n != XPF_NONE ? XPF_EQ_REPLAY
                                                                                       : XPF_EQ_OTHER;
                /* a replay that fires nothing and that no predicate reads: eq_rows */
                if (e->after == XPF_EQ_REPLAY && e->pq_row) e->after = XPF_EQ_ROW;
                else if (e->after == XPF_EQ_REPLAY && e->pq_off != XPF_NONE && !e->pq_n && e->pat_unread) e->after = XPF_EQ_DONE;
            }
            if (s->eq) s->bool_eq[0] = eq_entry(f, s, "false", 5), s->bool_eq[1] = eq_entry(f, s, "true", 4);
        }
}

/* ----------------------------------------------------------------- main */

wm_xpf_status wm_xpf_compile(const wm_exi_grammar *g, const char *const *queries, uint32_t n, const wm_xp_ns *ns,
                             size_t n_ns, wm_xpf **out, wm_xpf_error *err)
{
    *out = NULL;
    if (err) {
        memset(err, 0, sizeof *err);
        err->query = UINT32_MAX;
    }
    if (n > WM_XPF_MAX_QUERIES) {
        if (err) snprintf(err->msg, sizeof err->msg, "more than %u queries", WM_XPF_MAX_QUERIES);
        return WM_XPF_E_LIMIT;
    }
    wm_xpf *f = calloc(1, sizeof *f);
    wm_xp_query *pq = calloc(n ? n : 1, sizeof *pq);
    cctx c = { .f = f, .pq = pq, .err = err };
    wm_xpf_status rc = WM_XPF_E_MEMORY;
    if (!f || !pq) goto fail;
    f->g = g;
    f->n_q = n;
    f->text_slot = XPF_NONE;
    if (!(f->qs = calloc(n ? n : 1, sizeof *f->qs))) goto fail;
    for (uint32_t q = 0; q < n; q++) {
        wm_xp_error pe;
        c.q = q;
        if (!wm_xp_parse(queries[q], strlen(queries[q]), ns, n_ns, &pq[q], &pe)) {
            rc = pe.pos == 0 && !strcmp(pe.msg, "out of memory") ? WM_XPF_E_MEMORY : WM_XPF_E_QUERY;
            qfail(&c, rc, pe.pos, "%s", pe.msg);
            goto fail;
        }
        const wm_xp_step *last = &pq[q].steps[pq[q].n_steps - 1];
        /* the predicate tree comes once the paths are built (the typing needs
         * them); until then any value but XPF_NONE says there is one */
        f->qs[q].pred = last->pred != WM_XP_NONE ? 0 : XPF_NONE;
        for (uint32_t i = 0; i + 1 < pq[q].n_steps; i++)
            if (pq[q].steps[i].pred != WM_XP_NONE) {
                rc = qfail(&c, WM_XPF_E_QUERY, pq[q].steps[i].pos,
                           "predicates are supported on the last element step only (this step is followed by others)");
                goto fail;
            }
    }
    if ((rc = wm_xpf_build_paths(f, pq, err))) goto fail;
    rc = WM_XPF_E_MEMORY;
    if (!(c.ty = wm_xpf_typing_new(f))) goto fail;
    for (uint32_t q = 0; q < n; q++) {
        const wm_xp_step *last = &pq[q].steps[pq[q].n_steps - 1];
        c.q = q;
        if (last->pred != WM_XP_NONE && (rc = conv(&c, &last->name, last->pred, &f->qs[q].pred))) goto fail;
    }
    wm_xpf_typing_free(c.ty);
    c.ty = NULL;
    rc = WM_XPF_E_MEMORY;
    if (!(f->slot_of_lid = malloc((g->n_lids ? g->n_lids : 1) * sizeof *f->slot_of_lid))) goto fail;
    for (uint32_t lid = 0; lid < g->n_lids; lid++) f->slot_of_lid[lid] = XPF_NONE;
    for (uint32_t s = 0; s < f->n_slots; s++)
        if (!f->slots[s].is_text && f->slots[s].glid != XPF_NONE) f->slot_of_lid[f->slots[s].glid] = s;
    if ((rc = wm_xpf_build_product(f))) goto fail;
    rc = WM_XPF_E_MEMORY;
    choose_prefixes(f);
    for (uint32_t p = 0; p < f->n_pstates; p++)
        if ((rc = build_pstate(f, &f->pstates[p]))) goto fail;
    rc = WM_XPF_E_MEMORY;
    if (renumber_queries(f) || mark_sole_clusters(f)) goto fail;
    f->n_qw = (n + 64 * XPF_QW - 1) / (64 * XPF_QW) * XPF_QW;
    if (!f->n_qw) f->n_qw = XPF_QW;
    if (build_cluster_rows(f) || build_runs(f)) goto fail;
    /* the Hyperscan database of every pattern literal */
    uint32_t np = 0;
    for (uint32_t i = 0; i < f->n_lits; i++) np += f->lits[i].kind == XPF_L_PAT && !f->lits[i].prefix;
    if (np) {
        const char **ex = malloc(np * sizeof *ex);
        unsigned *fl = malloc(np * sizeof *fl), *ids = malloc(np * sizeof *ids);
        hs_compile_error_t *ce = NULL;
        bool okdb = ex && fl && ids;
        for (uint32_t i = 0, k = 0; okdb && i < f->n_lits; i++)
            if (f->lits[i].kind == XPF_L_PAT && !f->lits[i].prefix) {
                ex[k] = c.pat_expr[i];
                fl[k] = c.pat_flags[i];
                ids[k++] = i;
            }
        if (okdb && hs_compile_multi(ex, fl, ids, np, HS_MODE_BLOCK, NULL, &f->hs_db, &ce) != HS_SUCCESS) {
            if (err) snprintf(err->msg, sizeof err->msg, "Hyperscan database: %s", ce ? ce->message : "error");
            hs_free_compile_error(ce);
            okdb = false;
            rc = WM_XPF_E_PATTERN;
        }
        free(ex);
        free(fl);
        free(ids);
        if (!okdb) goto fail;
        if (hs_alloc_scratch(f->hs_db, &f->hs_proto) != HS_SUCCESS) { rc = WM_XPF_E_MEMORY; goto fail; }
        f->n_patterns = np;
        for (uint32_t p = 0; p < f->n_pstates; p++)
            if (eq_patterns(f, &f->pstates[p])) { rc = WM_XPF_E_MEMORY; goto fail; }
        if (eq_rows(f)) { rc = WM_XPF_E_MEMORY; goto fail; }
    }
    eq_hits(f);
    for (uint32_t q = 0; q < n; q++) wm_xp_query_free(&pq[q]);
    free(pq);
    free(c.lit_hash);
    free(c.pat_expr);
    free(c.pat_flags);
    *out = f;
    return WM_XPF_OK;
fail:
    wm_xpf_typing_free(c.ty);
    if (pq)
        eq_hits(f);
    for (uint32_t q = 0; q < n; q++) wm_xp_query_free(&pq[q]);
    free(pq);
    free(c.lit_hash);
    free(c.pat_expr);
    free(c.pat_flags);
    if (rc == WM_XPF_E_MEMORY && err && !err->msg[0]) snprintf(err->msg, sizeof err->msg, "out of memory");
    wm_xpf_free(f);
    return rc;
}

void wm_xpf_free(wm_xpf *f)
{
    if (!f) return;
    for (uint32_t p = 0; p < f->n_pstates; p++) {
        xpf_pstate *ps = &f->pstates[p];
        for (uint32_t i = 0; i < ps->n_pslots; i++) {
            free(ps->pslots[i].eq);
            free(ps->pslots[i].pre);
            for (int op = 0; op < 6; op++) free(ps->pslots[i].num[op]);
        }
        free(ps->pslots);
        free(ps->qs);
        free(ps->always);
        free(ps->slot_ix);
        free(ps->pslot_of_lid);
        free(ps->pat);
        free(ps->qlist);
        free(ps->clusters);
        free(ps->runs);
        free(ps->negruns);
        free(ps->strk);
        free(ps->centries);
        free(ps->ckeys);
        free(ps->nslots);
        free(ps->guards);
        free(ps->neg);
        free(ps->neggroups);
        free(ps->plain);
        free(ps->pat_ix);
        free(ps->eqpat);
        free(ps->negm);
        free(ps->negcl);
        free(ps->neglits);
    }
    free(f->pstates);
    free(f->pmask);
    free(f->prow);
    free(f->pqrows);
    if (f->hs_proto) hs_free_scratch(f->hs_proto);
    if (f->hs_db) hs_free_database(f->hs_db);
    for (uint32_t i = 0; i < f->n_owned; i++) free(f->owned[i]);
    free(f->owned);
    free(f->qs);
    free(f->bit_of);
    free(f->pnodes);
    free(f->lits);
    free(f->strpool);
    free(f->slots);
    free(f->slot_of_lid);
    free(f->syms);
    free(f->sym_of_lid);
    free(f->trans);
    free(f->dstates);
    free(f->acc);
    free(f->impossible);
    free(f);
}

void wm_xpf_stats_get(const wm_xpf *f, wm_xpf_stats *st)
{
    memset(st, 0, sizeof *st);
    st->queries = f->n_q;
    st->path_states = f->n_dstates;
    st->symbols = f->n_syms;
    st->predicate_states = f->n_pstates;
    for (uint32_t i = 0; i < f->n_dstates; i++) st->accepting_states += f->dstates[i].n_acc > 0;
    st->literals = f->n_lits;
    st->patterns = f->n_patterns;
    st->always = f->n_always_total;
    st->impossible_strict = f->n_impossible;
    st->filter_grammar_pairs = f->product_pairs;
}

uint32_t wm_xpf_n_queries(const wm_xpf *f) { return f->n_q; }

uint32_t wm_xpf_bit_of(const wm_xpf *f, uint32_t query) { return query < f->n_q ? f->bit_of[query] : UINT32_MAX; }
