/* EXI grammar builder (§8.5.4): schema model -> normalized grammars with
 * event codes, and the initial string table (§7.3.1, Appendix D).
 *
 * Particles (§8.5.4.1.5-8) are first turned into a small NFA (one edge per
 * element/wildcard term, epsilon edges for sequence/choice/repetition), then
 * normalized by subset construction: this is exactly the spec's elimination
 * of epsilon productions and of duplicate terminals (§8.5.4.2.1), done once.
 * Attribute uses become the chain Type_0..Type_content (§8.5.4.1.3.1). */
#include "codec/exi_schema.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ model */

void wm_exi_schema_init(wm_exi_schema *s) { memset(s, 0, sizeof *s); s->anytype = WM_EXI_NONE; }

void *wm_exi_schema_keep(wm_exi_schema *s, void *p)
{
    if (!p) return NULL;
    if (s->n_strs == s->cap_strs) {
        uint32_t nc = s->cap_strs ? s->cap_strs * 2 : 256;
        void **n = realloc(s->strs, nc * sizeof *n);
        if (!n) { free(p); return NULL; }
        s->strs = n;
        s->cap_strs = nc;
    }
    s->strs[s->n_strs++] = p;
    return p;
}

char *wm_exi_schema_strdup(wm_exi_schema *s, const char *str) { return wm_exi_schema_keep(s, strdup(str ? str : "")); }

void wm_exi_schema_free(wm_exi_schema *s)
{
    for (uint32_t i = 0; i < s->n_strs; i++) free(s->strs[i]);
    free(s->strs);
    free(s->types);
    free(s->elems);
    free(s->parts);
    free(s->dts);
    free(s->gattrs);
    free(s->wuris);
    memset(s, 0, sizeof *s);
}

#define GROW(arr, n, cap)                                                     \
    do {                                                                      \
        if ((n) == (cap)) {                                                   \
            uint32_t nc_ = (cap) ? (cap) * 2 : 64;                            \
            void *np_ = realloc((arr), (size_t)nc_ * sizeof *(arr));          \
            if (!np_) return WM_EXI_NONE;                                     \
            (arr) = np_;                                                      \
            (cap) = nc_;                                                      \
        }                                                                     \
    } while (0)

uint32_t wm_exi_schema_add_type(wm_exi_schema *s)
{
    GROW(s->types, s->n_types, s->cap_types);
    xs_type *t = &s->types[s->n_types];
    memset(t, 0, sizeof *t);
    t->dt = t->particle = t->base = WM_EXI_NONE;
    return s->n_types++;
}

uint32_t wm_exi_schema_add_elem(wm_exi_schema *s)
{
    GROW(s->elems, s->n_elems, s->cap_elems);
    xs_elem *e = &s->elems[s->n_elems];
    memset(e, 0, sizeof *e);
    e->type = e->subst_head = WM_EXI_NONE;
    return s->n_elems++;
}

uint32_t wm_exi_schema_add_part(wm_exi_schema *s)
{
    GROW(s->parts, s->n_parts, s->cap_parts);
    xs_particle *p = &s->parts[s->n_parts];
    memset(p, 0, sizeof *p);
    p->min = p->max = 1;
    p->elem = WM_EXI_NONE;
    return s->n_parts++;
}

uint32_t wm_exi_schema_add_dt(wm_exi_schema *s, const wm_exi_datatype *dt)
{
    GROW(s->dts, s->n_dts, s->cap_dts);
    s->dts[s->n_dts] = *dt;
    return s->n_dts++;
}

/* Appendix D: the XML Schema datatypes, in the sorted order of the initial
 * string table, with their base type and representation (Table 7-1). */
static const struct builtin {
    const char *name;
    const char *base;
    uint8_t kind, variant;
    bool integer;
    int64_t min, max;
    bool has_min, has_max;
} builtins[] = {
    { "ENTITIES", "anySimpleType", WM_EXI_DT_LIST, 0, 0, 0, 0, 0, 0 },
    { "ENTITY", "NCName", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "ID", "NCName", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "IDREF", "NCName", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "IDREFS", "anySimpleType", WM_EXI_DT_LIST, 0, 0, 0, 0, 0, 0 },
    { "NCName", "Name", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "NMTOKEN", "token", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "NMTOKENS", "anySimpleType", WM_EXI_DT_LIST, 0, 0, 0, 0, 0, 0 },
    { "NOTATION", "anySimpleType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "Name", "token", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "QName", "anySimpleType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "anySimpleType", "anyType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "anyType", NULL, WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "anyURI", "anySimpleType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "base64Binary", "anySimpleType", WM_EXI_DT_BASE64, 0, 0, 0, 0, 0, 0 },
    { "boolean", "anySimpleType", WM_EXI_DT_BOOLEAN, 0, 0, 0, 0, 0, 0 },
    { "byte", "short", WM_EXI_DT_NBIT, 0, 1, -128, 127, 1, 1 },
    { "date", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_DATE, 0, 0, 0, 0, 0 },
    { "dateTime", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_DATETIME_V, 0, 0, 0, 0, 0 },
    { "decimal", "anySimpleType", WM_EXI_DT_DECIMAL, 0, 0, 0, 0, 0, 0 },
    { "double", "anySimpleType", WM_EXI_DT_FLOAT, 0, 0, 0, 0, 0, 0 },
    { "duration", "anySimpleType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "float", "anySimpleType", WM_EXI_DT_FLOAT, 0, 0, 0, 0, 0, 0 },
    { "gDay", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_GDAY, 0, 0, 0, 0, 0 },
    { "gMonth", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_GMONTH, 0, 0, 0, 0, 0 },
    { "gMonthDay", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_GMONTHDAY, 0, 0, 0, 0, 0 },
    { "gYear", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_GYEAR, 0, 0, 0, 0, 0 },
    { "gYearMonth", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_GYEARMONTH, 0, 0, 0, 0, 0 },
    { "hexBinary", "anySimpleType", WM_EXI_DT_HEX, 0, 0, 0, 0, 0, 0 },
    { "int", "long", WM_EXI_DT_INTEGER, 0, 1, INT32_MIN, INT32_MAX, 1, 1 },
    { "integer", "decimal", WM_EXI_DT_INTEGER, 0, 1, 0, 0, 0, 0 },
    { "language", "token", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "long", "integer", WM_EXI_DT_INTEGER, 0, 1, INT64_MIN, INT64_MAX, 1, 1 },
    { "negativeInteger", "nonPositiveInteger", WM_EXI_DT_INTEGER, 0, 1, 0, -1, 0, 1 },
    { "nonNegativeInteger", "integer", WM_EXI_DT_UNSIGNED, 0, 1, 0, 0, 1, 0 },
    { "nonPositiveInteger", "integer", WM_EXI_DT_INTEGER, 0, 1, 0, 0, 0, 1 },
    { "normalizedString", "string", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "positiveInteger", "nonNegativeInteger", WM_EXI_DT_UNSIGNED, 0, 1, 1, 0, 1, 0 },
    { "short", "int", WM_EXI_DT_INTEGER, 0, 1, -32768, 32767, 1, 1 },
    { "string", "anySimpleType", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "time", "anySimpleType", WM_EXI_DT_DATETIME, WM_EXI_TIME, 0, 0, 0, 0, 0 },
    { "token", "normalizedString", WM_EXI_DT_STRING, 0, 0, 0, 0, 0, 0 },
    { "unsignedByte", "unsignedShort", WM_EXI_DT_NBIT, 0, 1, 0, 255, 1, 1 },
    { "unsignedInt", "unsignedLong", WM_EXI_DT_UNSIGNED, 0, 1, 0, UINT32_MAX, 1, 1 },
    { "unsignedLong", "nonNegativeInteger", WM_EXI_DT_UNSIGNED, 0, 1, 0, INT64_MAX, 1, 0 },
    { "unsignedShort", "unsignedInt", WM_EXI_DT_UNSIGNED, 0, 1, 0, 65535, 1, 1 },
};
#define N_BUILTINS (sizeof builtins / sizeof builtins[0])

uint32_t wm_exi_schema_add_gattr(wm_exi_schema *s, char *uri, char *name, uint32_t dt)
{
    GROW(s->gattrs, s->n_gattrs, s->cap_gattrs);
    s->gattrs[s->n_gattrs] = (xs_gattr){ uri, name, dt };
    return s->n_gattrs++;
}

uint32_t wm_exi_schema_add_wuri(wm_exi_schema *s, char *uri)
{
    GROW(s->wuris, s->n_wuris, s->cap_wuris);
    s->wuris[s->n_wuris] = uri;
    return s->n_wuris++;
}

wm_exi_status wm_exi_schema_add_builtins(wm_exi_schema *s)
{
    uint32_t first = s->n_types;
    wm_exi_datatype str = { .kind = WM_EXI_DT_STRING };
    uint32_t dt_str = wm_exi_schema_add_dt(s, &str);
    for (size_t i = 0; i < N_BUILTINS; i++) {
        uint32_t t = wm_exi_schema_add_type(s);
        if (t == WM_EXI_NONE || dt_str == WM_EXI_NONE) return WM_EXI_E_MEMORY;
        xs_type *ty = &s->types[t];
        ty->uri = (char *)"http://www.w3.org/2001/XMLSchema";
        ty->name = (char *)builtins[i].name;
        ty->is_integer = builtins[i].integer;
        ty->has_min = builtins[i].has_min;
        ty->has_max = builtins[i].has_max;
        ty->min = builtins[i].min;
        ty->max = builtins[i].max;
        if (!strcmp(builtins[i].name, "anyType")) {
            ty->ur = true;
            ty->content = XS_CT_MIXED;
            s->anytype = t;
            continue;
        }
        ty->simple = true;
        ty->content = XS_CT_SIMPLE;
        wm_exi_datatype d = { .kind = builtins[i].kind, .variant = builtins[i].variant };
        if (d.kind == WM_EXI_DT_NBIT) {
            d.nbit_min = builtins[i].min;
            d.nbit_width = (uint8_t)wm_exi_code_width((uint32_t)(builtins[i].max - builtins[i].min + 1));
        }
        if (d.kind == WM_EXI_DT_LIST) d.list_item = dt_str;
        if (d.kind == WM_EXI_DT_STRING) ty->dt = dt_str;
        else if ((ty->dt = wm_exi_schema_add_dt(s, &d)) == WM_EXI_NONE) return WM_EXI_E_MEMORY;
        if (!strcmp(builtins[i].name, "boolean")) s->dt_boolean = ty->dt;
    }
    s->dt_string = dt_str;
    for (size_t i = 0; i < N_BUILTINS; i++) {
        if (!builtins[i].base) continue;
        for (size_t j = 0; j < N_BUILTINS; j++)
            if (!strcmp(builtins[j].name, builtins[i].base)) s->types[first + i].base = first + (uint32_t)j;
    }
    return WM_EXI_OK;
}

/* --------------------------------------------------------- string table seed */

static const char *const xml_locals[] = { "base", "id", "lang", "space" };
static const char *const xsi_locals[] = { "nil", "type" };

typedef struct strvec {
    const char **v;
    uint32_t n, cap;
} strvec;

static bool sv_push(strvec *sv, const char *s)
{
    if (sv->n == sv->cap) {
        uint32_t nc = sv->cap ? sv->cap * 2 : 16;
        const char **n = realloc(sv->v, nc * sizeof *n);
        if (!n) return false;
        sv->v = n;
        sv->cap = nc;
    }
    sv->v[sv->n++] = s;
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static uint32_t sv_find(const strvec *sv, const char *s)
{
    for (uint32_t i = 0; i < sv->n; i++)
        if (!strcmp(sv->v[i], s)) return i;
    return WM_EXI_NONE;
}

/* ------------------------------------------------------------ builder state */

typedef struct nfa_edge {
    uint32_t from, to;
    uint8_t term;            /* WM_EXI_T_SE / SE_URI / SE_ANY, or 0xff = epsilon */
    uint32_t elem;           /* SE: element declaration */
    uint32_t uri;            /* SE_URI */
    uint32_t ord;            /* schema order */
} nfa_edge;

typedef struct builder {
    const wm_exi_schema *s;
    wm_exi_grammar *g;
    wm_exi_error *err;
    strvec uris;
    strvec *locals;          /* per URI */
    /* output */
    uint32_t n_states, cap_states, n_prods, cap_prods;
    wm_exi_state *states;
    wm_exi_prod *prods;
    /* NFA scratch */
    uint32_t n_nfa, n_edges, cap_edges;
    nfa_edge *edges;
    uint32_t ord;
    uint32_t *accept;        /* n_nfa flags */
    uint32_t cap_accept;
    uint32_t *tg_of_type;    /* schema type -> tgram */
} builder;

static uint32_t uri_id(builder *b, const char *u)
{
    return sv_find(&b->uris, u ? u : "");
}

static uint32_t lid_of(builder *b, const char *u, const char *name)
{
    uint32_t ui = uri_id(b, u);
    if (ui == WM_EXI_NONE) return WM_EXI_NONE;
    uint32_t k = sv_find(&b->locals[ui], name);
    return k == WM_EXI_NONE ? k : b->g->uri_lid_first[ui] + k;
}

static wm_exi_status oom(builder *b) { return wm_exi_fail(b->err, WM_EXI_E_MEMORY, 0, "out of memory building grammars"); }

static uint32_t new_state(builder *b, uint32_t type)
{
    if (b->n_states == b->cap_states) {
        uint32_t nc = b->cap_states ? b->cap_states * 2 : 256;
        if (nc > 4000000) return WM_EXI_NONE;
        wm_exi_state *n = realloc(b->states, nc * sizeof *n);
        if (!n) return WM_EXI_NONE;
        b->states = n;
        b->cap_states = nc;
    }
    wm_exi_state *st = &b->states[b->n_states];
    memset(st, 0, sizeof *st);
    st->type = type;
    return b->n_states++;
}

/* Productions of a state under construction are gathered in a temporary list
 * and sorted into event-code order when the state is closed. */
typedef struct pend {
    wm_exi_prod p;
    uint32_t ord;
    const char *lname, *uname; /* AT sort keys */
} pend;

typedef struct pendvec {
    pend *v;
    uint32_t n, cap;
} pendvec;

static bool pv_push(pendvec *pv, const pend *p)
{
    for (uint32_t i = 0; i < pv->n; i++) { /* one production per terminal (§8.5.4.2.1) */
        const wm_exi_prod *q = &pv->v[i].p;
        if (q->term == p->p.term && q->lid == p->p.lid && q->uri == p->p.uri &&
            (p->p.term == WM_EXI_T_AT || p->p.term == WM_EXI_T_SE || p->p.term == WM_EXI_T_SE_URI ||
             p->p.term == WM_EXI_T_AT_URI || p->p.term == WM_EXI_T_SE_ANY || p->p.term == WM_EXI_T_AT_ANY ||
             p->p.term == WM_EXI_T_EE || p->p.term == WM_EXI_T_CH)) {
            if (p->ord < pv->v[i].ord) pv->v[i].ord = p->ord;
            return true;
        }
    }
    if (pv->n == pv->cap) {
        uint32_t nc = pv->cap ? pv->cap * 2 : 16;
        pend *n = realloc(pv->v, nc * sizeof *n);
        if (!n) return false;
        pv->v = n;
        pv->cap = nc;
    }
    pv->v[pv->n++] = *p;
    return true;
}

static int cmp_pend(const void *pa, const void *pb)
{
    const pend *a = pa, *b = pb;
    if (a->p.term != b->p.term) return (int)a->p.term - (int)b->p.term; /* enum order = §8.5.4.2.2 order */
    switch (a->p.term) {
    case WM_EXI_T_AT: {
        int c = strcmp(a->lname, b->lname);
        return c ? c : strcmp(a->uname, b->uname);
    }
    case WM_EXI_T_AT_URI: return strcmp(a->uname, b->uname);
    default: return a->ord < b->ord ? -1 : a->ord > b->ord;
    }
}

static wm_exi_status close_state(builder *b, uint32_t st, pendvec *pv)
{
    if (pv->n > 1) qsort(pv->v, pv->n, sizeof *pv->v, cmp_pend);
    if (pv->n > 65535) return wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "a grammar state with more than 65535 productions");
    while (b->n_prods + pv->n > b->cap_prods) {
        uint32_t nc = b->cap_prods ? b->cap_prods * 2 : 1024;
        wm_exi_prod *n = realloc(b->prods, nc * sizeof *n);
        if (!n) return oom(b);
        b->prods = n;
        b->cap_prods = nc;
    }
    wm_exi_state *s = &b->states[st];
    s->first = b->n_prods;
    s->n = (uint16_t)pv->n;
    for (uint32_t i = 0; i < pv->n; i++) {
        b->prods[b->n_prods++] = pv->v[i].p;
        if (pv->v[i].p.term == WM_EXI_T_EE) s->flags |= WM_EXI_S_HAS_EE;
        if (pv->v[i].p.term == WM_EXI_T_CH) s->flags |= WM_EXI_S_CH;
    }
    pv->n = 0;
    return WM_EXI_OK;
}

/* ------------------------------------------------------------------- NFA */

static uint32_t nfa_state(builder *b)
{
    if (b->n_nfa == b->cap_accept) {
        uint32_t nc = b->cap_accept ? b->cap_accept * 2 : 256;
        uint32_t *n = realloc(b->accept, nc * sizeof *n);
        if (!n) return WM_EXI_NONE;
        b->accept = n;
        b->cap_accept = nc;
    }
    if (b->n_nfa > 2000000) return WM_EXI_NONE;
    b->accept[b->n_nfa] = 0;
    return b->n_nfa++;
}

static bool nfa_edge_add(builder *b, uint32_t from, uint32_t to, uint8_t term, uint32_t elem, uint32_t uri)
{
    if (b->n_edges == b->cap_edges) {
        uint32_t nc = b->cap_edges ? b->cap_edges * 2 : 1024;
        nfa_edge *n = realloc(b->edges, nc * sizeof *n);
        if (!n) return false;
        b->edges = n;
        b->cap_edges = nc;
    }
    b->edges[b->n_edges++] = (nfa_edge){ from, to, term, elem, uri, b->ord++ };
    return true;
}

#define EPS 0xff

static int cmp_elem_name(const wm_exi_schema *s, uint32_t a, uint32_t c)
{
    int r = strcmp(s->elems[a].name, s->elems[c].name);
    return r ? r : strcmp(s->elems[a].uri ? s->elems[a].uri : "", s->elems[c].uri ? s->elems[c].uri : "");
}

/* One occurrence of a particle's term from `in`; returns the exit state. */
static uint32_t nfa_term(builder *b, uint32_t pi, uint32_t in)
{
    const wm_exi_schema *s = b->s;
    const xs_particle *p = &s->parts[pi];
    uint32_t out = nfa_state(b);
    if (out == WM_EXI_NONE) return out;
    switch (p->kind) {
    case XS_P_ELEM: {
        /* §8.5.4.1.6: the head (unless abstract) and its substitution group
         * members, sorted by local name then URI. */
        uint32_t members[256], n = 0;
        for (uint32_t e = 0; e < s->n_elems && n < 256; e++) {
            bool in_group = e == p->elem;
            for (uint32_t h = s->elems[e].subst_head, hops = 0; !in_group && h != WM_EXI_NONE && hops < 64;
                 h = s->elems[h].subst_head, hops++)
                in_group = h == p->elem;
            if (in_group && !s->elems[e].abstract) members[n++] = e;
        }
        for (uint32_t i = 1; i < n; i++)
            for (uint32_t j = i; j > 0 && cmp_elem_name(s, members[j - 1], members[j]) > 0; j--) {
                uint32_t t = members[j]; members[j] = members[j - 1]; members[j - 1] = t;
            }
        for (uint32_t i = 0; i < n; i++)
            if (!nfa_edge_add(b, in, out, WM_EXI_T_SE, members[i], 0)) return WM_EXI_NONE;
        break;
    }
    case XS_P_ANY:
        if (p->wild.kind == XS_W_LIST) {
            const char *sorted[64];
            uint32_t n = p->wild.n < 64 ? p->wild.n : 64;
            for (uint32_t i = 0; i < n; i++) sorted[i] = p->wild.uris[i];
            qsort(sorted, n, sizeof *sorted, cmp_str);
            for (uint32_t i = 0; i < n; i++)
                if (!nfa_edge_add(b, in, out, WM_EXI_T_SE_URI, 0, uri_id(b, sorted[i]))) return WM_EXI_NONE;
        } else if (!nfa_edge_add(b, in, out, WM_EXI_T_SE_ANY, 0, 0)) return WM_EXI_NONE;
        break;
    case XS_P_SEQ: {
        uint32_t cur = in;
        for (uint32_t i = 0; i < p->n_kids; i++) {
            extern uint32_t wm_exi__nfa_particle(builder *, uint32_t, uint32_t);
            cur = wm_exi__nfa_particle(b, p->kids[i], cur);
            if (cur == WM_EXI_NONE) return cur;
        }
        if (!nfa_edge_add(b, cur, out, EPS, 0, 0)) return WM_EXI_NONE;
        break;
    }
    case XS_P_CHOICE:
        if (p->n_kids == 0 && !nfa_edge_add(b, in, out, EPS, 0, 0)) return WM_EXI_NONE;
        for (uint32_t i = 0; i < p->n_kids; i++) {
            extern uint32_t wm_exi__nfa_particle(builder *, uint32_t, uint32_t);
            uint32_t e = wm_exi__nfa_particle(b, p->kids[i], in);
            if (e == WM_EXI_NONE || !nfa_edge_add(b, e, out, EPS, 0, 0)) return WM_EXI_NONE;
        }
        break;
    case XS_P_ALL: {
        /* §8.5.4.1.8.3: any order, each member repeatable in the grammar. */
        if (!nfa_edge_add(b, in, out, EPS, 0, 0)) return WM_EXI_NONE;
        for (uint32_t i = 0; i < p->n_kids; i++) {
            const xs_particle *k = &s->parts[p->kids[i]];
            extern uint32_t wm_exi__nfa_particle(builder *, uint32_t, uint32_t);
            uint32_t e = k->kind == XS_P_ELEM || k->kind == XS_P_ANY ? nfa_term(b, p->kids[i], out)
                                                                      : wm_exi__nfa_particle(b, p->kids[i], out);
            if (e == WM_EXI_NONE || !nfa_edge_add(b, e, out, EPS, 0, 0)) return WM_EXI_NONE;
        }
        break;
    }
    }
    return out;
}

/* A particle with its occurrence range (§8.5.4.1.5). */
uint32_t wm_exi__nfa_particle(builder *b, uint32_t pi, uint32_t in);
uint32_t wm_exi__nfa_particle(builder *b, uint32_t pi, uint32_t in)
{
    const xs_particle *p = &b->s->parts[pi];
    if (p->kind == XS_P_ALL) return nfa_term(b, pi, in);
    uint32_t cur = in;
    uint32_t min = p->min, max = p->max;
    if (max != XS_UNBOUNDED && max < min) max = min;
    if (min > 10000 || (max != XS_UNBOUNDED && max > 10000)) return WM_EXI_NONE;
    for (uint32_t i = 0; i < min; i++)
        if ((cur = nfa_term(b, pi, cur)) == WM_EXI_NONE) return cur;
    if (max == XS_UNBOUNDED) {
        /* a fresh loop state: what follows must not see the particles before */
        uint32_t loop = nfa_state(b);
        if (loop == WM_EXI_NONE || !nfa_edge_add(b, cur, loop, EPS, 0, 0)) return WM_EXI_NONE;
        uint32_t e = nfa_term(b, pi, loop);
        if (e == WM_EXI_NONE || !nfa_edge_add(b, e, loop, EPS, 0, 0)) return WM_EXI_NONE;
        return loop;
    }
    uint32_t end = nfa_state(b);
    if (end == WM_EXI_NONE) return end;
    for (uint32_t i = min; i < max; i++) {
        if (!nfa_edge_add(b, cur, end, EPS, 0, 0)) return WM_EXI_NONE;
        if ((cur = nfa_term(b, pi, cur)) == WM_EXI_NONE) return cur;
    }
    if (!nfa_edge_add(b, cur, end, EPS, 0, 0)) return WM_EXI_NONE;
    return end;
}

/* --------------------------------------------------- subset construction */

typedef struct dset {
    uint32_t *v;
    uint32_t n;
    uint32_t state;          /* grammar state id */
} dset;

static int cmp_u32(const void *a, const void *c)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)c;
    return x < y ? -1 : x > y;
}

/* Epsilon closure of set (in place, sorted, unique). Edges indexed by from via `first`. */
static uint32_t *closure(builder *b, const uint32_t *efirst, const uint32_t *seed, uint32_t n, uint32_t *out_n)
{
    uint32_t cap = n + 16, cnt = 0;
    uint32_t *v = malloc(cap * sizeof *v);
    uint8_t *seen = calloc(b->n_nfa, 1);
    if (!v || !seen) { free(v); free(seen); return NULL; }
    for (uint32_t i = 0; i < n; i++)
        if (!seen[seed[i]]) { seen[seed[i]] = 1; v[cnt++] = seed[i]; }
    for (uint32_t i = 0; i < cnt; i++) {
        uint32_t q = v[i];
        for (uint32_t e = efirst[q]; e < efirst[q + 1]; e++) {
            const nfa_edge *ed = &b->edges[e];
            if (ed->term != EPS || seen[ed->to]) continue;
            seen[ed->to] = 1;
            if (cnt == cap) {
                cap *= 2;
                uint32_t *nv = realloc(v, cap * sizeof *nv);
                if (!nv) { free(v); free(seen); return NULL; }
                v = nv;
            }
            v[cnt++] = ed->to;
        }
    }
    free(seen);
    qsort(v, cnt, sizeof *v, cmp_u32);
    *out_n = cnt;
    return v;
}

static int cmp_edge_from(const void *a, const void *c)
{
    const nfa_edge *x = a, *y = c;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Turns the NFA (start, accepting states) into grammar states for type tg,
 * returning the start state. Mixed content adds CH[untyped] loops. */
static uint32_t determinize(builder *b, uint32_t tg, uint32_t start, bool mixed, wm_exi_status *st)
{
    if (b->n_edges > 1) qsort(b->edges, b->n_edges, sizeof *b->edges, cmp_edge_from);
    uint32_t *efirst = calloc(b->n_nfa + 1, sizeof *efirst);
    if (!efirst) { *st = oom(b); return WM_EXI_NONE; }
    for (uint32_t e = 0; e < b->n_edges; e++) efirst[b->edges[e].from + 1]++;
    for (uint32_t i = 0; i < b->n_nfa; i++) efirst[i + 1] += efirst[i];
    dset *sets = NULL;
    uint32_t n_sets = 0, cap_sets = 0;
    pendvec pv = { 0 };
    uint32_t result = WM_EXI_NONE;
    uint32_t n0;
    uint32_t *c0 = closure(b, efirst, &start, 1, &n0);
    if (!c0) goto fail_oom;
    sets = malloc(16 * sizeof *sets);
    if (!sets) { free(c0); goto fail_oom; }
    cap_sets = 16;
    sets[0] = (dset){ c0, n0, new_state(b, tg) };
    if (sets[0].state == WM_EXI_NONE) goto fail_big;
    n_sets = 1;
    for (uint32_t si = 0; si < n_sets; si++) {
        /* gather distinct terminals of the set, in edge order */
        dset cur = sets[si];
        bool acc = false;
        for (uint32_t i = 0; i < cur.n; i++) acc |= b->accept[cur.v[i]] != 0;
        for (uint32_t i = 0; i < cur.n; i++) {
            uint32_t q = cur.v[i];
            for (uint32_t e = efirst[q]; e < efirst[q + 1]; e++) {
                const nfa_edge *ed = &b->edges[e];
                if (ed->term == EPS) continue;
                /* key */
                uint32_t key_uri = ed->term == WM_EXI_T_SE ? uri_id(b, b->s->elems[ed->elem].uri) : ed->uri;
                uint32_t key_lid = ed->term == WM_EXI_T_SE
                                       ? lid_of(b, b->s->elems[ed->elem].uri, b->s->elems[ed->elem].name)
                                       : 0;
                bool done = false;
                for (uint32_t k = 0; k < pv.n; k++)
                    if (pv.v[k].p.term == ed->term && pv.v[k].p.uri == key_uri && pv.v[k].p.lid == key_lid) done = true;
                if (done) continue;
                /* all targets of this terminal from the whole set */
                uint32_t tcap = 8, tn = 0, ord = ed->ord;
                uint32_t *targets = malloc(tcap * sizeof *targets);
                if (!targets) goto fail_oom;
                for (uint32_t i2 = 0; i2 < cur.n; i2++) {
                    uint32_t q2 = cur.v[i2];
                    for (uint32_t e2 = efirst[q2]; e2 < efirst[q2 + 1]; e2++) {
                        const nfa_edge *x = &b->edges[e2];
                        if (x->term != ed->term) continue;
                        uint32_t xu = x->term == WM_EXI_T_SE ? uri_id(b, b->s->elems[x->elem].uri) : x->uri;
                        uint32_t xl = x->term == WM_EXI_T_SE
                                          ? lid_of(b, b->s->elems[x->elem].uri, b->s->elems[x->elem].name)
                                          : 0;
                        if (xu != key_uri || xl != key_lid) continue;
                        if (tn == tcap) {
                            tcap *= 2;
                            uint32_t *nt = realloc(targets, tcap * sizeof *nt);
                            if (!nt) { free(targets); goto fail_oom; }
                            targets = nt;
                        }
                        targets[tn++] = x->to;
                        if (x->ord < ord) ord = x->ord;
                    }
                }
                uint32_t cn;
                uint32_t *cl = closure(b, efirst, targets, tn, &cn);
                free(targets);
                if (!cl) goto fail_oom;
                uint32_t found = WM_EXI_NONE;
                for (uint32_t k = 0; k < n_sets && found == WM_EXI_NONE; k++)
                    if (sets[k].n == cn && !memcmp(sets[k].v, cl, cn * sizeof *cl)) found = k;
                if (found == WM_EXI_NONE) {
                    if (n_sets == cap_sets) {
                        cap_sets *= 2;
                        dset *ns = realloc(sets, cap_sets * sizeof *ns);
                        if (!ns) { free(cl); goto fail_oom; }
                        sets = ns;
                    }
                    uint32_t nst = new_state(b, tg);
                    if (nst == WM_EXI_NONE) { free(cl); goto fail_big; }
                    sets[n_sets] = (dset){ cl, cn, nst };
                    found = n_sets++;
                } else free(cl);
                pend p = { .p = { .term = ed->term, .uri = key_uri, .lid = key_lid, .next = sets[found].state,
                                  .arg = ed->term == WM_EXI_T_SE ? ed->elem : WM_EXI_NONE },
                           .ord = ord };
                if (!pv_push(&pv, &p)) goto fail_oom;
            }
        }
        cur = sets[si];
        if (acc) {
            pend p = { .p = { .term = WM_EXI_T_EE, .next = WM_EXI_NONE, .arg = WM_EXI_NONE } };
            if (!pv_push(&pv, &p)) goto fail_oom;
        }
        if (mixed) {
            pend p = { .p = { .term = WM_EXI_T_CH, .next = cur.state, .arg = WM_EXI_NONE } };
            if (!pv_push(&pv, &p)) goto fail_oom;
        }
        if ((*st = close_state(b, cur.state, &pv))) goto out;
    }
    result = sets[0].state;
    *st = WM_EXI_OK;
    goto out;
fail_big:
    *st = wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "schema too large: grammar state limit reached");
    goto out;
fail_oom:
    *st = oom(b);
out:
    for (uint32_t i = 0; i < n_sets; i++) free(sets[i].v);
    free(sets);
    free(pv.v);
    free(efirst);
    return result;
}

/* ------------------------------------------------------------ type grammars */

static int cmp_attr(const void *pa, const void *pb)
{
    const xs_attr *a = pa, *c = pb;
    int r = strcmp(a->name, c->name);
    return r ? r : strcmp(a->uri ? a->uri : "", c->uri ? c->uri : "");
}

/* Copies the productions of state `from` into pv (for attribute states that
 * may skip straight to the content, §8.5.4.2.1 epsilon elimination). */
static bool copy_prods(builder *b, uint32_t from, pendvec *pv, uint32_t ord_base)
{
    const wm_exi_state *s = &b->states[from];
    for (uint32_t i = 0; i < s->n; i++) {
        pend p = { .p = b->prods[s->first + i], .ord = ord_base + i };
        if (!pv_push(pv, &p)) return false;
    }
    return true;
}

static bool add_attr_wild(builder *b, const xs_type *t, uint32_t self, pendvec *pv)
{
    if (!t->has_awild) return true;
    if (t->awild.kind == XS_W_LIST) {
        for (uint32_t i = 0; i < t->awild.n; i++) {
            pend p = { .p = { .term = WM_EXI_T_AT_URI, .uri = uri_id(b, t->awild.uris[i]), .next = self,
                              .arg = WM_EXI_NONE },
                       .uname = t->awild.uris[i] };
            if (!pv_push(pv, &p)) return false;
        }
        return true;
    }
    pend p = { .p = { .term = WM_EXI_T_AT_ANY, .next = self, .arg = WM_EXI_NONE } };
    return pv_push(pv, &p);
}

/* Builds Type_i,0 .. Type_i,content for the attribute uses, ending in the
 * state `content` (already built); returns Type_i,0. */
static uint32_t attr_chain(builder *b, uint32_t tg, const xs_type *t, const xs_attr *attrs, uint32_t na,
                           uint32_t content, wm_exi_status *st)
{
    uint32_t *ids = malloc((na + 1) * sizeof *ids);
    pendvec pv = { 0 };
    if (!ids) { *st = oom(b); return WM_EXI_NONE; }
    for (uint32_t j = 0; j < na; j++)
        if ((ids[j] = new_state(b, tg)) == WM_EXI_NONE) { free(ids); *st = wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "grammar too large"); return WM_EXI_NONE; }
    ids[na] = content;
    for (uint32_t j = 0; j < na; j++) {
        bool reach_content = true;
        for (uint32_t k = j; k < na; k++) {
            pend p = { .p = { .term = WM_EXI_T_AT, .uri = uri_id(b, attrs[k].uri), .lid = lid_of(b, attrs[k].uri, attrs[k].name),
                              .next = ids[k + 1], .arg = attrs[k].dt },
                       .lname = attrs[k].name, .uname = attrs[k].uri ? attrs[k].uri : "" };
            if (!pv_push(&pv, &p)) goto fail;
            if (attrs[k].required) { reach_content = false; break; }
        }
        if (!add_attr_wild(b, t, ids[j], &pv)) goto fail;
        if (reach_content && !copy_prods(b, content, &pv, 0)) goto fail;
        /* the content state's own wildcard loop points at itself; re-aim the copies */
        for (uint32_t i = 0; i < pv.n; i++)
            if ((pv.v[i].p.term == WM_EXI_T_AT_ANY || pv.v[i].p.term == WM_EXI_T_AT_URI) && pv.v[i].p.next == content)
                pv.v[i].p.next = ids[j];
        if ((*st = close_state(b, ids[j], &pv))) goto out;
        b->states[ids[j]].flags |= WM_EXI_S_ATTRS;
    }
    *st = WM_EXI_OK;
    uint32_t r = ids[0];
    free(ids);
    free(pv.v);
    return r;
fail:
    *st = oom(b);
out:
    free(ids);
    free(pv.v);
    return WM_EXI_NONE;
}

/* The content state Type_i,content: the content start's productions plus the
 * attribute wildcard loop, as a distinct state (§8.5.4.1.3.1). */
static uint32_t content_state(builder *b, uint32_t tg, const xs_type *t, uint32_t cstart, wm_exi_status *st)
{
    uint32_t c = new_state(b, tg);
    pendvec pv = { 0 };
    if (c == WM_EXI_NONE) { *st = wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "grammar too large"); return c; }
    if (!copy_prods(b, cstart, &pv, 0) || !add_attr_wild(b, t, c, &pv)) { free(pv.v); *st = oom(b); return WM_EXI_NONE; }
    /* a self-loop of the start (mixed CH) stays a loop on the copy */
    for (uint32_t i = 0; i < pv.n; i++)
        if (pv.v[i].p.next == cstart && pv.v[i].p.term == WM_EXI_T_CH) pv.v[i].p.next = c;
    *st = close_state(b, c, &pv);
    free(pv.v);
    b->states[c].flags |= WM_EXI_S_ATTRS;
    return c;
}

static uint32_t simple_states(builder *b, uint32_t tg, uint32_t dt, wm_exi_status *st)
{
    uint32_t s0 = new_state(b, tg), s1 = new_state(b, tg);
    pendvec pv = { 0 };
    if (s0 == WM_EXI_NONE || s1 == WM_EXI_NONE) { *st = wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "grammar too large"); return WM_EXI_NONE; }
    pend ch = { .p = { .term = WM_EXI_T_CH, .next = s1, .arg = dt } };
    pend ee = { .p = { .term = WM_EXI_T_EE, .next = WM_EXI_NONE, .arg = WM_EXI_NONE } };
    if (!pv_push(&pv, &ch)) { *st = oom(b); return WM_EXI_NONE; }
    if ((*st = close_state(b, s0, &pv))) { free(pv.v); return WM_EXI_NONE; }
    if (!pv_push(&pv, &ee)) { free(pv.v); *st = oom(b); return WM_EXI_NONE; }
    *st = close_state(b, s1, &pv);
    free(pv.v);
    return s0;
}

static uint32_t ee_state(builder *b, uint32_t tg, wm_exi_status *st)
{
    uint32_t s0 = new_state(b, tg);
    pendvec pv = { 0 };
    pend ee = { .p = { .term = WM_EXI_T_EE, .next = WM_EXI_NONE, .arg = WM_EXI_NONE } };
    if (s0 == WM_EXI_NONE || !pv_push(&pv, &ee)) { *st = oom(b); return WM_EXI_NONE; }
    *st = close_state(b, s0, &pv);
    free(pv.v);
    return s0;
}

/* Ur-type grammar (§8.5.4.1.3.3). */
static wm_exi_status ur_type(builder *b, uint32_t tg)
{
    wm_exi_tgram *t = &b->g->tgrams[tg];
    uint32_t s0 = new_state(b, tg), s1 = new_state(b, tg), e0 = new_state(b, tg);
    if (s0 == WM_EXI_NONE || s1 == WM_EXI_NONE || e0 == WM_EXI_NONE) return oom(b);
    pendvec pv = { 0 };
    pend at = { .p = { .term = WM_EXI_T_AT_ANY, .next = s0, .arg = WM_EXI_NONE } };
    pend se = { .p = { .term = WM_EXI_T_SE_ANY, .next = s1, .arg = WM_EXI_NONE } };
    pend ee = { .p = { .term = WM_EXI_T_EE, .next = WM_EXI_NONE, .arg = WM_EXI_NONE } };
    pend ch = { .p = { .term = WM_EXI_T_CH, .next = s1, .arg = WM_EXI_NONE } };
    wm_exi_status st = WM_EXI_OK;
    if (!pv_push(&pv, &at) || !pv_push(&pv, &se) || !pv_push(&pv, &ee) || !pv_push(&pv, &ch)) st = oom(b);
    if (!st) st = close_state(b, s0, &pv);
    if (!st && (!pv_push(&pv, &se) || !pv_push(&pv, &ee) || !pv_push(&pv, &ch))) st = oom(b);
    if (!st) st = close_state(b, s1, &pv);
    at.p.next = e0;
    if (!st && (!pv_push(&pv, &at) || !pv_push(&pv, &ee))) st = oom(b);
    if (!st) st = close_state(b, e0, &pv);
    free(pv.v);
    b->states[s0].flags |= WM_EXI_S_ATTRS | WM_EXI_S_START;
    b->states[e0].flags |= WM_EXI_S_ATTRS | WM_EXI_S_START;
    t->start = t->content = s0;
    t->empty_start = e0;
    return st;
}

static wm_exi_status build_type(builder *b, uint32_t ti)
{
    const xs_type *t = &b->s->types[ti];
    uint32_t tg = b->tg_of_type[ti];
    wm_exi_tgram *g = &b->g->tgrams[tg];
    wm_exi_status st = WM_EXI_OK;
    g->simple_dt = t->simple ? t->dt : WM_EXI_NONE;
    if (t->ur) return ur_type(b, tg);
    /* sorted attribute uses */
    xs_attr *attrs = NULL;
    if (t->n_attrs) {
        attrs = malloc(t->n_attrs * sizeof *attrs);
        if (!attrs) return oom(b);
        memcpy(attrs, t->attrs, t->n_attrs * sizeof *attrs);
        qsort(attrs, t->n_attrs, sizeof *attrs, cmp_attr);
    }
    uint32_t cstart = WM_EXI_NONE;
    switch (t->content) {
    case XS_CT_EMPTY: cstart = ee_state(b, tg, &st); break;
    case XS_CT_SIMPLE: cstart = simple_states(b, tg, t->dt, &st); break;
    default:
        if (t->particle == WM_EXI_NONE) {
            if (t->content == XS_CT_MIXED) {
                /* mixed with no particle: EE and CH loops */
                b->n_nfa = 0; b->n_edges = 0;
                uint32_t q = nfa_state(b);
                b->accept[q] = 1;
                cstart = determinize(b, tg, q, true, &st);
            } else cstart = ee_state(b, tg, &st);
            break;
        }
        b->n_nfa = 0;
        b->n_edges = 0;
        uint32_t in = nfa_state(b);
        uint32_t out = in == WM_EXI_NONE ? in : wm_exi__nfa_particle(b, t->particle, in);
        if (out == WM_EXI_NONE) { free(attrs); return wm_exi_fail(b->err, WM_EXI_E_GRAMMAR, 0, "content model too large (occurrence bounds above 10000 or state limit)"); }
        b->accept[out] = 1;
        cstart = determinize(b, tg, in, t->content == XS_CT_MIXED, &st);
        break;
    }
    if (st) { free(attrs); return st; }
    uint32_t content = (t->n_attrs || t->has_awild) ? content_state(b, tg, t, cstart, &st) : cstart;
    if (st) { free(attrs); return st; }
    b->states[content].flags |= WM_EXI_S_ATTRS;
    g->content = content;
    g->start = t->n_attrs ? attr_chain(b, tg, t, attrs, t->n_attrs, content, &st) : content;
    if (st) { free(attrs); return st; }
    b->states[g->start].flags |= WM_EXI_S_START;
    /* TypeEmpty: the same attributes, then EE only */
    uint32_t e = ee_state(b, tg, &st);
    if (!st && t->has_awild) e = content_state(b, tg, t, e, &st);
    if (!st) {
        b->states[e].flags |= WM_EXI_S_ATTRS;
        g->empty_start = t->n_attrs ? attr_chain(b, tg, t, attrs, t->n_attrs, e, &st) : e;
        if (!st) b->states[g->empty_start].flags |= WM_EXI_S_START;
    }
    free(attrs);
    return st;
}

/* ------------------------------------------------------------------ build */

static int cmp_doc(const void *pa, const void *pb, void *ctx)
{
    const wm_exi_grammar *g = ctx;
    const wm_exi_elem *a = &g->elems[*(const uint32_t *)pa], *c = &g->elems[*(const uint32_t *)pb];
    int r = strcmp(g->lnames[a->lid], g->lnames[c->lid]);
    return r ? r : strcmp(g->uris[a->uri], g->uris[c->uri]);
}

/* The relaxed ElementFragment grammar (§8.5.3), used in fragments for
 * element names declared with several types: every attribute name of the
 * schema (typed when all its declarations share one type, else untyped) and
 * every element name, in any order. */
static wm_exi_status build_element_fragment(builder *b)
{
    const wm_exi_schema *s = b->s;
    wm_exi_grammar *g = b->g;
    bool needed = false;
    for (uint32_t i = 0; i < g->n_frag; i++) needed |= g->frag[i].elem == WM_EXI_NONE;
    if (!needed) return WM_EXI_OK;
    uint32_t tg = g->n_tgrams;
    /* attribute names with their types */
    typedef struct { const char *uri, *name; uint32_t dt; } an;
    an *attrs = NULL;
    uint32_t na = 0, cap = 0;
    for (uint32_t t = 0; t <= s->n_types; t++) {
        uint32_t cnt = t < s->n_types ? s->types[t].n_attrs : s->n_gattrs;
        for (uint32_t k = 0; k < cnt; k++) {
            const char *u = t < s->n_types ? s->types[t].attrs[k].uri : s->gattrs[k].uri;
            const char *nm = t < s->n_types ? s->types[t].attrs[k].name : s->gattrs[k].name;
            uint32_t dt = t < s->n_types ? s->types[t].attrs[k].dt : s->gattrs[k].dt;
            if (!u) u = "";
            uint32_t j;
            for (j = 0; j < na; j++)
                if (!strcmp(attrs[j].name, nm) && !strcmp(attrs[j].uri, u)) break;
            if (j < na) { if (attrs[j].dt != dt) attrs[j].dt = WM_EXI_NONE; continue; }
            if (na == cap) {
                cap = cap ? cap * 2 : 32;
                an *n2 = realloc(attrs, cap * sizeof *n2);
                if (!n2) { free(attrs); return oom(b); }
                attrs = n2;
            }
            attrs[na++] = (an){ u, nm, dt };
        }
    }
    uint32_t ef0 = new_state(b, tg), ef2 = new_state(b, tg), te0 = new_state(b, tg);
    pendvec pv = { 0 };
    wm_exi_status st = WM_EXI_OK;
    if (ef0 == WM_EXI_NONE || ef2 == WM_EXI_NONE || te0 == WM_EXI_NONE) { free(attrs); return oom(b); }
    for (int which = 0; which < 3 && !st; which++) {
        uint32_t self = which == 0 ? ef0 : which == 1 ? ef2 : te0;
        if (which != 1) {
            for (uint32_t j = 0; j < na; j++) {
                pend p = { .p = { .term = WM_EXI_T_AT, .uri = uri_id(b, attrs[j].uri), .lid = lid_of(b, attrs[j].uri, attrs[j].name),
                                  .next = self, .arg = attrs[j].dt },
                           .lname = attrs[j].name, .uname = attrs[j].uri };
                if (!pv_push(&pv, &p)) st = oom(b);
            }
            pend p = { .p = { .term = WM_EXI_T_AT_ANY, .next = self, .arg = WM_EXI_NONE } };
            if (!pv_push(&pv, &p)) st = oom(b);
        }
        if (which != 2) {
            for (uint32_t i = 0; i < g->n_frag; i++) {
                pend p = { .p = { .term = WM_EXI_T_SE, .uri = g->frag[i].uri, .lid = g->frag[i].lid, .next = ef2,
                                  .arg = g->frag[i].elem == WM_EXI_NONE ? WM_EXI_ELEM_FRAGMENT : g->frag[i].elem },
                           .ord = i };
                if (!pv_push(&pv, &p)) st = oom(b);
            }
            pend se = { .p = { .term = WM_EXI_T_SE_ANY, .next = ef2, .arg = WM_EXI_NONE } };
            pend ch = { .p = { .term = WM_EXI_T_CH, .next = ef2, .arg = WM_EXI_NONE } };
            if (!pv_push(&pv, &se) || !pv_push(&pv, &ch)) st = oom(b);
        }
        pend ee = { .p = { .term = WM_EXI_T_EE, .next = WM_EXI_NONE, .arg = WM_EXI_NONE } };
        if (!st && !pv_push(&pv, &ee)) st = oom(b);
        if (!st) st = close_state(b, self, &pv);
    }
    free(pv.v);
    free(attrs);
    if (st) return st;
    b->states[ef0].flags |= WM_EXI_S_START | WM_EXI_S_ATTRS | WM_EXI_S_EFRAG0;
    b->states[ef2].flags |= WM_EXI_S_EFRAG;
    b->states[te0].flags |= WM_EXI_S_START | WM_EXI_S_ATTRS | WM_EXI_S_EFRAG;
    wm_exi_tgram *t = &g->tgrams[tg];
    memset(t, 0, sizeof *t);
    t->start = ef0;
    t->content = ef2;
    t->empty_start = te0;
    t->uri = t->lid = t->simple_dt = t->base = WM_EXI_NONE;
    g->elem_fragment = tg;
    g->n_tgrams = tg + 1;
    return WM_EXI_OK;
}

static bool note_uri(builder *b, const char *u)
{
    if (!u) u = "";
    return sv_find(&b->uris, u) != WM_EXI_NONE || sv_push(&b->uris, u);
}

wm_exi_status wm_exi_grammar_build(const wm_exi_schema *s, wm_exi_grammar **out, wm_exi_error *err)
{
    builder bb, *b = &bb;
    memset(b, 0, sizeof *b);
    b->s = s;
    b->err = err;
    wm_exi_status st = WM_EXI_OK;
    wm_exi_grammar *g = calloc(1, sizeof *g);
    if (!g) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    b->g = g;
    /* URIs: the four of Appendix D, then the schema's sorted (§7.3.1) */
    static const char *const seed[] = { "", "http://www.w3.org/XML/1998/namespace",
                                        "http://www.w3.org/2001/XMLSchema-instance", "http://www.w3.org/2001/XMLSchema" };
    for (int i = 0; i < 4; i++) if (!sv_push(&b->uris, seed[i])) goto nomem;
    {
        strvec extra = { 0 };
        for (uint32_t i = 0; i < s->n_elems; i++)
            if (sv_find(&b->uris, s->elems[i].uri ? s->elems[i].uri : "") == WM_EXI_NONE &&
                sv_find(&extra, s->elems[i].uri ? s->elems[i].uri : "") == WM_EXI_NONE &&
                !sv_push(&extra, s->elems[i].uri ? s->elems[i].uri : "")) goto nomem;
        for (uint32_t i = 0; i < s->n_types; i++) {
            const xs_type *t = &s->types[i];
            if (t->name && sv_find(&b->uris, t->uri ? t->uri : "") == WM_EXI_NONE &&
                sv_find(&extra, t->uri ? t->uri : "") == WM_EXI_NONE && !sv_push(&extra, t->uri ? t->uri : ""))
                goto nomem;
            for (uint32_t k = 0; k < t->n_attrs; k++)
                if (sv_find(&b->uris, t->attrs[k].uri ? t->attrs[k].uri : "") == WM_EXI_NONE &&
                    sv_find(&extra, t->attrs[k].uri ? t->attrs[k].uri : "") == WM_EXI_NONE &&
                    !sv_push(&extra, t->attrs[k].uri ? t->attrs[k].uri : "")) goto nomem;
        }
        const char *more[2];
        for (uint32_t i = 0; i < s->n_gattrs + s->n_wuris; i++) {
            more[0] = i < s->n_gattrs ? s->gattrs[i].uri : s->wuris[i - s->n_gattrs];
            if (!more[0]) more[0] = "";
            if (sv_find(&b->uris, more[0]) == WM_EXI_NONE && sv_find(&extra, more[0]) == WM_EXI_NONE &&
                !sv_push(&extra, more[0])) goto nomem;
        }
        /* wildcard namespaces of particles and attribute wildcards (§7.3.1: all
         * namespaces the schema names), so SE(uri:*) has an id */
        for (uint32_t i = 0; i < s->n_parts; i++)
            if (s->parts[i].kind == XS_P_ANY && s->parts[i].wild.kind == XS_W_LIST)
                for (uint32_t k = 0; k < s->parts[i].wild.n; k++) {
                    const char *w = s->parts[i].wild.uris[k];
                    if (sv_find(&b->uris, w) == WM_EXI_NONE && sv_find(&extra, w) == WM_EXI_NONE && !sv_push(&extra, w)) goto nomem;
                }
        for (uint32_t i = 0; i < s->n_types; i++)
            if (s->types[i].has_awild && s->types[i].awild.kind == XS_W_LIST)
                for (uint32_t k = 0; k < s->types[i].awild.n; k++) {
                    const char *w = s->types[i].awild.uris[k];
                    if (sv_find(&b->uris, w) == WM_EXI_NONE && sv_find(&extra, w) == WM_EXI_NONE && !sv_push(&extra, w)) goto nomem;
                }
        (void)more;
        if (extra.n > 1) qsort(extra.v, extra.n, sizeof *extra.v, cmp_str);
        for (uint32_t i = 0; i < extra.n; i++) if (!note_uri(b, extra.v[i])) goto nomem;
        free(extra.v);
    }
    b->locals = calloc(b->uris.n, sizeof *b->locals);
    if (!b->locals) goto nomem;
    for (int i = 0; i < 4; i++) if (!sv_push(&b->locals[1], xml_locals[i])) goto nomem;
    for (int i = 0; i < 2; i++) if (!sv_push(&b->locals[2], xsi_locals[i])) goto nomem;
    for (size_t i = 0; i < N_BUILTINS; i++) if (!sv_push(&b->locals[3], builtins[i].name)) goto nomem;
    {
        /* schema local names per URI, sorted, after the Appendix D ones */
        strvec *extra = calloc(b->uris.n, sizeof *extra);
        if (!extra) goto nomem;
#define ADDNAME(u, nm)                                                                     \
        do {                                                                               \
            uint32_t ui_ = uri_id(b, (u));                                                 \
            if (sv_find(&b->locals[ui_], (nm)) == WM_EXI_NONE && sv_find(&extra[ui_], (nm)) == WM_EXI_NONE && \
                !sv_push(&extra[ui_], (nm))) { free(extra); goto nomem; }                  \
        } while (0)
        for (uint32_t i = 0; i < s->n_elems; i++) ADDNAME(s->elems[i].uri, s->elems[i].name);
        for (uint32_t i = 0; i < s->n_types; i++) {
            if (s->types[i].name) ADDNAME(s->types[i].uri, s->types[i].name);
            for (uint32_t k = 0; k < s->types[i].n_attrs; k++) ADDNAME(s->types[i].attrs[k].uri, s->types[i].attrs[k].name);
        }
        for (uint32_t i = 0; i < s->n_gattrs; i++) ADDNAME(s->gattrs[i].uri, s->gattrs[i].name);
#undef ADDNAME
        for (uint32_t u = 0; u < b->uris.n; u++) {
            if (extra[u].n > 1) qsort(extra[u].v, extra[u].n, sizeof *extra[u].v, cmp_str);
            for (uint32_t k = 0; k < extra[u].n; k++) if (!sv_push(&b->locals[u], extra[u].v[k])) { free(extra); goto nomem; }
            free(extra[u].v);
        }
        free(extra);
    }
    g->n_uris = b->uris.n;
    g->uris = calloc(g->n_uris, sizeof *g->uris);
    g->uri_lid_first = calloc(g->n_uris, sizeof *g->uri_lid_first);
    g->uri_lid_count = calloc(g->n_uris, sizeof *g->uri_lid_count);
    if (!g->uris || !g->uri_lid_first || !g->uri_lid_count) goto nomem;
    uint32_t nl = 0;
    for (uint32_t u = 0; u < g->n_uris; u++) {
        g->uris[u] = strdup(b->uris.v[u]);
        if (!g->uris[u]) goto nomem;
        g->uri_lid_first[u] = nl;
        g->uri_lid_count[u] = b->locals[u].n;
        nl += b->locals[u].n;
    }
    g->n_lids = nl;
    g->lnames = calloc(nl ? nl : 1, sizeof *g->lnames);
    g->lname_uri = calloc(nl ? nl : 1, sizeof *g->lname_uri);
    if (!g->lnames || !g->lname_uri) goto nomem;
    for (uint32_t u = 0; u < g->n_uris; u++)
        for (uint32_t k = 0; k < b->locals[u].n; k++) {
            uint32_t id = g->uri_lid_first[u] + k;
            g->lnames[id] = strdup(b->locals[u].v[k]);
            if (!g->lnames[id]) goto nomem;
            g->lname_uri[id] = u;
        }
    /* datatypes: deep copy (enum values and restricted sets) */
    g->n_types = s->n_dts;
    g->types = calloc(s->n_dts ? s->n_dts : 1, sizeof *g->types);
    if (!g->types) goto nomem;
    for (uint32_t i = 0; i < s->n_dts; i++) {
        g->types[i] = s->dts[i];
        if (s->dts[i].n_enum) {
            const char **ev = calloc(s->dts[i].n_enum, sizeof *ev);
            if (!ev) goto nomem;
            for (uint32_t k = 0; k < s->dts[i].n_enum; k++)
                if (!(ev[k] = strdup(s->dts[i].enum_values[k]))) { free(ev); goto nomem; }
            g->types[i].enum_values = ev;
        }
        if (s->dts[i].n_rcs) {
            uint32_t *r = malloc(s->dts[i].n_rcs * sizeof *r);
            if (!r) goto nomem;
            memcpy(r, s->dts[i].rcs, s->dts[i].n_rcs * sizeof *r);
            g->types[i].rcs = r;
        }
    }
    g->dt_string = s->dt_string;
    g->dt_boolean = s->dt_boolean;
    /* elements */
    g->n_elems = s->n_elems;
    g->elems = calloc(s->n_elems ? s->n_elems : 1, sizeof *g->elems);
    g->n_tgrams = s->n_types;
    g->tgrams = calloc(s->n_types + 1, sizeof *g->tgrams);
    b->tg_of_type = calloc(s->n_types ? s->n_types : 1, sizeof *b->tg_of_type);
    if (!g->elems || !g->tgrams || !b->tg_of_type) goto nomem;
    for (uint32_t i = 0; i < s->n_types; i++) {
        b->tg_of_type[i] = i;
        wm_exi_tgram *t = &g->tgrams[i];
        t->uri = s->types[i].name ? uri_id(b, s->types[i].uri) : WM_EXI_NONE;
        t->lid = s->types[i].name ? lid_of(b, s->types[i].uri, s->types[i].name) : WM_EXI_NONE;
        t->base = s->types[i].base;
        t->xsi_type_strict = s->types[i].is_union;
    }
    for (uint32_t i = 0; i < s->n_types; i++) {
        if (!s->types[i].name) continue;
        for (uint32_t bt = s->types[i].base, hops = 0; bt != WM_EXI_NONE && hops < 256; bt = s->types[bt].base, hops++)
            g->tgrams[bt].xsi_type_strict = true;
    }
    for (uint32_t i = 0; i < s->n_elems; i++) {
        g->elems[i].uri = uri_id(b, s->elems[i].uri);
        g->elems[i].lid = lid_of(b, s->elems[i].uri, s->elems[i].name);
        g->elems[i].type = s->elems[i].type == WM_EXI_NONE ? s->anytype : s->elems[i].type;
        g->elems[i].nillable = s->elems[i].nillable;
        g->elems[i].global = s->elems[i].global;
    }
    for (uint32_t i = 0; i < s->n_types; i++)
        if ((st = build_type(b, i))) goto fail;
    g->anytype = s->anytype;
    g->elem_fragment = WM_EXI_NONE;
    g->gattrs = calloc(s->n_gattrs ? s->n_gattrs : 1, sizeof *g->gattrs);
    if (!g->gattrs) goto nomem;
    for (uint32_t i = 0; i < s->n_gattrs; i++)
        if (s->gattrs[i].dt != WM_EXI_NONE)
            g->gattrs[g->n_gattrs++] = (wm_exi_gattr){ uri_id(b, s->gattrs[i].uri), lid_of(b, s->gattrs[i].uri, s->gattrs[i].name), s->gattrs[i].dt };
    /* document grammar: global elements sorted */
    g->doc_elems = calloc(s->n_elems ? s->n_elems : 1, sizeof *g->doc_elems);
    if (!g->doc_elems) goto nomem;
    for (uint32_t i = 0; i < s->n_elems; i++)
        if (s->elems[i].global && !s->elems[i].abstract) g->doc_elems[g->n_doc++] = i;
    if (g->n_doc > 1) qsort_r(g->doc_elems, g->n_doc, sizeof *g->doc_elems, cmp_doc, g);
    /* fragment grammar: all declarations, one entry per qname (§8.5.2) */
    {
        uint32_t *all = calloc(s->n_elems ? s->n_elems : 1, sizeof *all), n = 0;
        g->frag = calloc(s->n_elems ? s->n_elems : 1, sizeof *g->frag);
        if (!all || !g->frag) { free(all); goto nomem; }
        for (uint32_t i = 0; i < s->n_elems; i++) if (!s->elems[i].abstract) all[n++] = i;
        if (n > 1) qsort_r(all, n, sizeof *all, cmp_doc, g);
        for (uint32_t i = 0; i < n;) {
            uint32_t j = i + 1;
            bool same = true;
            while (j < n && g->elems[all[j]].uri == g->elems[all[i]].uri && g->elems[all[j]].lid == g->elems[all[i]].lid) {
                if (g->elems[all[j]].type != g->elems[all[i]].type || g->elems[all[j]].nillable != g->elems[all[i]].nillable)
                    same = false;
                j++;
            }
            g->frag[g->n_frag++] = (wm_exi_frag_elem){ g->elems[all[i]].uri, g->elems[all[i]].lid, same ? all[i] : WM_EXI_NONE };
            i = j;
        }
        free(all);
    }
    if ((st = build_element_fragment(b))) goto fail;
    g->n_states = b->n_states;
    g->states = b->states;
    g->n_prods = b->n_prods;
    g->prods = b->prods;
    b->states = NULL;
    b->prods = NULL;
    for (uint32_t u = 0; u < b->uris.n; u++) free(b->locals[u].v);
    free(b->locals);
    free(b->uris.v);
    free(b->edges);
    free(b->accept);
    free(b->tg_of_type);
    *out = g;
    return WM_EXI_OK;
nomem:
    st = wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory building grammars");
fail:
    if (b->locals) for (uint32_t u = 0; u < b->uris.n; u++) free(b->locals[u].v);
    free(b->locals);
    free(b->uris.v);
    free(b->edges);
    free(b->accept);
    free(b->tg_of_type);
    free(b->states);
    free(b->prods);
    wm_exi_grammar_free(g);
    return st;
}

wm_exi_grammar *wm_exi_grammar_schemaless(void)
{
    wm_exi_grammar *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->schemaless = true;
    static const char *const seed[] = { "", "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2001/XMLSchema-instance" };
    g->n_uris = 3;
    g->uris = calloc(3, sizeof *g->uris);
    g->uri_lid_first = calloc(3, sizeof *g->uri_lid_first);
    g->uri_lid_count = calloc(3, sizeof *g->uri_lid_count);
    g->n_lids = 6;
    g->lnames = calloc(6, sizeof *g->lnames);
    g->lname_uri = calloc(6, sizeof *g->lname_uri);
    g->types = calloc(2, sizeof *g->types);
    if (!g->uris || !g->uri_lid_first || !g->uri_lid_count || !g->lnames || !g->lname_uri || !g->types) {
        wm_exi_grammar_free(g);
        return NULL;
    }
    for (int i = 0; i < 3; i++) g->uris[i] = strdup(seed[i]);
    g->uri_lid_first[1] = 0; g->uri_lid_count[1] = 4;
    g->uri_lid_first[2] = 4; g->uri_lid_count[2] = 2;
    for (int i = 0; i < 4; i++) { g->lnames[i] = strdup(xml_locals[i]); g->lname_uri[i] = 1; }
    for (int i = 0; i < 2; i++) { g->lnames[4 + i] = strdup(xsi_locals[i]); g->lname_uri[4 + i] = 2; }
    for (int i = 0; i < 3; i++) if (!g->uris[i]) { wm_exi_grammar_free(g); return NULL; }
    for (int i = 0; i < 6; i++) if (!g->lnames[i]) { wm_exi_grammar_free(g); return NULL; }
    g->n_types = 2;
    g->types[0].kind = WM_EXI_DT_STRING;
    g->types[1].kind = WM_EXI_DT_BOOLEAN;
    g->dt_string = 0;
    g->dt_boolean = 1;
    g->anytype = g->elem_fragment = WM_EXI_NONE;
    return g;
}

void wm_exi_grammar_free(wm_exi_grammar *g)
{
    if (!g) return;
    if (g->uris) for (uint32_t i = 0; i < g->n_uris; i++) free((void *)g->uris[i]);
    if (g->lnames) for (uint32_t i = 0; i < g->n_lids; i++) free((void *)g->lnames[i]);
    if (g->types)
        for (uint32_t i = 0; i < g->n_types; i++) {
            if (g->types[i].enum_values) {
                for (uint32_t k = 0; k < g->types[i].n_enum; k++) free((void *)g->types[i].enum_values[k]);
                free((void *)g->types[i].enum_values);
            }
            free((void *)g->types[i].rcs);
        }
    free(g->uris); free(g->uri_lid_first); free(g->uri_lid_count);
    free(g->lnames); free(g->lname_uri); free(g->types);
    free(g->states); free(g->prods); free(g->tgrams); free(g->elems);
    free(g->doc_elems); free(g->frag); free(g->gattrs);
    free(g);
}

uint32_t wm_exi_grammar_find_uri(const wm_exi_grammar *g, const char *uri, size_t len)
{
    for (uint32_t i = 0; i < g->n_uris; i++)
        if (strlen(g->uris[i]) == len && !memcmp(g->uris[i], uri, len)) return i;
    return WM_EXI_NONE;
}

uint32_t wm_exi_grammar_find_lid(const wm_exi_grammar *g, uint32_t uri, const char *local, size_t len)
{
    if (uri >= g->n_uris) return WM_EXI_NONE;
    for (uint32_t k = 0; k < g->uri_lid_count[uri]; k++) {
        const char *s = g->lnames[g->uri_lid_first[uri] + k];
        if (strlen(s) == len && !memcmp(s, local, len)) return g->uri_lid_first[uri] + k;
    }
    return WM_EXI_NONE;
}

uint32_t wm_exi_grammar_global_elem(const wm_exi_grammar *g, uint32_t uri, uint32_t lid)
{
    for (uint32_t i = 0; i < g->n_doc; i++)
        if (g->elems[g->doc_elems[i]].uri == uri && g->elems[g->doc_elems[i]].lid == lid) return g->doc_elems[i];
    return WM_EXI_NONE;
}

uint32_t wm_exi_grammar_type_by_name(const wm_exi_grammar *g, uint32_t uri, uint32_t lid)
{
    for (uint32_t i = 0; i < g->n_tgrams; i++)
        if (g->tgrams[i].uri == uri && g->tgrams[i].lid == lid) return i;
    return WM_EXI_NONE;
}

uint32_t wm_exi_grammar_global_attr_dt(const wm_exi_grammar *g, uint32_t uri, uint32_t lid)
{
    for (uint32_t i = 0; i < g->n_gattrs; i++)
        if (g->gattrs[i].uri == uri && g->gattrs[i].lid == lid) return g->gattrs[i].dt;
    return WM_EXI_NONE;
}
