/* XSD reader for the EXI grammar compiler: libxml2 DOM walk -> schema model
 * (exi_schema.h) -> wm_exi_grammar_build(). Components are found by
 * {namespace}name in every loaded document first, then built on demand with
 * memoisation, so recursive types and forward references resolve. */
#include "codec/exi_xsd.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <inttypes.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_rcs.h"
#include "codec/exi_schema.h"

#define XSD_NS "http://www.w3.org/2001/XMLSchema"

enum { C_ELEM, C_ATTR, C_CTYPE, C_STYPE, C_GROUP, C_AGROUP };

typedef struct xdoc {
    xmlDocPtr doc;
    char *path;
    const char *tns;           /* target namespace (chameleon includes inherit) */
    bool eq, aq;               /* elementFormDefault / attributeFormDefault qualified */
} xdoc;

typedef struct comp {
    int kind;
    const char *ns, *name;
    xmlNodePtr node;
    uint32_t doc;
    uint32_t built;            /* model index, WM_EXI_NONE until built */
} comp;

typedef struct rd {
    wm_exi_schema *s;
    wm_exi_error *err;
    xdoc *docs;
    uint32_t n_docs, cap_docs;
    comp *comps;
    uint32_t n_comps, cap_comps;
    uint32_t depth;
    bool no_includes;
} rd;

static bool is_xs(xmlNodePtr n, const char *local)
{
    return n && n->type == XML_ELEMENT_NODE && n->ns && !strcmp((const char *)n->ns->href, XSD_NS) &&
           (!local || !strcmp((const char *)n->name, local));
}

static char *attr(rd *r, xmlNodePtr n, const char *name)
{
    xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
    if (!v) return NULL;
    char *c = wm_exi_schema_strdup(r->s, (const char *)v);
    xmlFree(v);
    return c;
}

/* A schema error at node n, prefixed "file:line: " (the position is also
 * kept in err->bit_pos, which holds the line for schema errors). */
__attribute__((format(printf, 3, 4)))
static wm_exi_status bad(rd *r, xmlNodePtr n, const char *fmt, ...)
{
    char m[sizeof r->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    const char *file = n && n->doc && n->doc->URL ? (const char *)n->doc->URL : "schema";
    long line = n ? xmlGetLineNo(n) : 0;
    return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, line > 0 ? (uint64_t)line : 0, WM_EXI_QUOTE_FMT ":%ld: %s", WM_EXI_QUOTE(file, 120), line, m);
}

/* Resolves a QName attribute value against the namespaces in scope. */
static bool qname(rd *r, xmlNodePtr n, const char *v, const char **ns, const char **local)
{
    const char *colon = strchr(v, ':');
    char prefix[128] = "";
    if (colon) {
        size_t pl = (size_t)(colon - v);
        if (pl >= sizeof prefix) return false;
        memcpy(prefix, v, pl);
        prefix[pl] = 0;
        *local = colon + 1;
    } else *local = v;
    xmlNsPtr x = xmlSearchNs(n->doc, n, colon ? (const xmlChar *)prefix : NULL);
    if (!x) {
        if (colon) return false;
        *ns = "";
        return true;
    }
    *ns = wm_exi_schema_strdup(r->s, (const char *)x->href);
    return *ns != NULL;
}

static comp *find(rd *r, int kind, const char *ns, const char *name)
{
    for (uint32_t i = 0; i < r->n_comps; i++)
        if (r->comps[i].kind == kind && !strcmp(r->comps[i].name, name) && !strcmp(r->comps[i].ns, ns ? ns : ""))
            return &r->comps[i];
    return NULL;
}

/* ----------------------------------------------------------- loading */

static wm_exi_status load(rd *r, const char *path, const char *chameleon, xmlDocPtr given);

static wm_exi_status add_comp(rd *r, int kind, const char *ns, const char *name, xmlNodePtr n, uint32_t d)
{
    if (find(r, kind, ns, name)) return WM_EXI_OK; /* first declaration wins (same file included twice) */
    if (r->n_comps == r->cap_comps) {
        uint32_t nc = r->cap_comps ? r->cap_comps * 2 : 64;
        comp *c = realloc(r->comps, nc * sizeof *c);
        if (!c) return wm_exi_fail(r->err, WM_EXI_E_MEMORY, 0, "out of memory");
        r->comps = c;
        r->cap_comps = nc;
    }
    r->comps[r->n_comps++] = (comp){ kind, ns ? ns : "", name, n, d, WM_EXI_NONE };
    return WM_EXI_OK;
}

static wm_exi_status load_doc(rd *r, xmlDocPtr doc, const char *path, const char *chameleon)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!is_xs(root, "schema")) {
        xmlFreeDoc(doc);
        return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, 0, WM_EXI_QUOTE_FMT ": root element is not xs:schema", WM_EXI_QUOTE(path, 120));
    }
    if (r->n_docs == r->cap_docs) {
        uint32_t nc = r->cap_docs ? r->cap_docs * 2 : 8;
        xdoc *d = realloc(r->docs, nc * sizeof *d);
        if (!d) { xmlFreeDoc(doc); return wm_exi_fail(r->err, WM_EXI_E_MEMORY, 0, "out of memory"); }
        r->docs = d;
        r->cap_docs = nc;
    }
    uint32_t di = r->n_docs++;
    xdoc *d = &r->docs[di];
    d->doc = doc;
    d->path = wm_exi_schema_strdup(r->s, path);
    char *tns = attr(r, root, "targetNamespace");
    d->tns = tns ? tns : (chameleon ? chameleon : "");
    char *ef = attr(r, root, "elementFormDefault"), *af = attr(r, root, "attributeFormDefault");
    d->eq = ef && !strcmp(ef, "qualified");
    d->aq = af && !strcmp(af, "qualified");
    const char *dtns = d->tns;
    for (xmlNodePtr c = root->children; c; c = c->next) {
        if (!is_xs(c, NULL)) continue;
        const char *nm = (const char *)c->name;
        if (!strcmp(nm, "include") || !strcmp(nm, "import") || !strcmp(nm, "redefine") || !strcmp(nm, "override")) {
            if (!strcmp(nm, "redefine") || !strcmp(nm, "override"))
                return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, (uint64_t)xmlGetLineNo(c), WM_EXI_QUOTE_FMT ": xs:" WM_EXI_QUOTE_FMT " is not supported", WM_EXI_QUOTE(path, 120), WM_EXI_QUOTE(nm, 64));
            char *loc = attr(r, c, "schemaLocation");
            if (!loc) continue; /* import of a namespace known otherwise (e.g. xml) */
            if (r->no_includes)
                return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, 0, "in-memory schema cannot include/import \"" WM_EXI_QUOTE_FMT "\"", WM_EXI_QUOTE(loc, 120));
            if (strstr(loc, "://"))
                return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, 0, WM_EXI_QUOTE_FMT ": remote schemaLocation \"" WM_EXI_QUOTE_FMT "\" refused (local files only)", WM_EXI_QUOTE(path, 120), WM_EXI_QUOTE(loc, 120));
            char full[4096];
            const char *slash = strrchr(path, '/');
            if (loc[0] == '/' || !slash) snprintf(full, sizeof full, "%s", loc);
            else snprintf(full, sizeof full, "%.*s/%s", (int)(slash - path), path, loc);
            bool seen = false;
            for (uint32_t k = 0; k < r->n_docs; k++) seen |= !strcmp(r->docs[k].path, full);
            if (seen) continue;
            wm_exi_status st = load(r, full, !strcmp(nm, "include") ? dtns : NULL, NULL);
            if (st) return st;
            continue;
        }
        char *name = attr(r, c, "name");
        if (!name) continue;
        int kind = !strcmp(nm, "element") ? C_ELEM : !strcmp(nm, "attribute") ? C_ATTR
                 : !strcmp(nm, "complexType") ? C_CTYPE : !strcmp(nm, "simpleType") ? C_STYPE
                 : !strcmp(nm, "group") ? C_GROUP : !strcmp(nm, "attributeGroup") ? C_AGROUP : -1;
        if (kind < 0) continue;
        wm_exi_status st = add_comp(r, kind, dtns, name, c, di);
        if (st) return st;
    }
    return WM_EXI_OK;
}

static void first_schema_error(void *data, xmlErrorPtr e);

/* Reads a schema document (from mem[0..len) when mem is set, else the file
 * at path) into *doc. Errors: WM_EXI_E_SCHEMA with the file's errno text
 * ("is a directory" for a directory: fopen takes one), or libxml2's
 * message and line (the I/O error, else where the parser stopped);
 * WM_EXI_E_MEMORY. libxml2 reports I/O errors
 * through its per-thread global handlers, which print to stderr ("I/O error
 * : Is a directory") whatever the parser's options say: a structured
 * handler takes them for this call, so the reason reaches err and nothing
 * reaches stderr. */
static wm_exi_status parse_doc(const char *path, const char *mem, size_t len, wm_exi_error *err, xmlDocPtr *doc)
{
    *doc = NULL;
    if (!mem) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return wm_exi_fail(err, WM_EXI_E_SCHEMA, 0, WM_EXI_QUOTE_FMT ": cannot read the schema document: is a directory", WM_EXI_QUOTE(path, 120));
        FILE *f = fopen(path, "rb");
        if (!f) return wm_exi_fail(err, WM_EXI_E_SCHEMA, 0, WM_EXI_QUOTE_FMT ": cannot read the schema document: %s", WM_EXI_QUOTE(path, 120), strerror(errno));
        fclose(f);
    }
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    if (!ctx) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    int opts = XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOWARNING | XML_PARSE_NOERROR;
    xmlError first = { 0 };
    first.level = XML_ERR_NONE;
    xmlStructuredErrorFunc prev = xmlStructuredError;
    void *prev_ctx = xmlStructuredErrorContext;
    xmlSetStructuredErrorFunc(&first, first_schema_error);
    *doc = mem ? xmlCtxtReadMemory(ctx, mem, (int)len, path, NULL, opts) : xmlCtxtReadFile(ctx, path, NULL, opts);
    xmlSetStructuredErrorFunc(prev_ctx, prev);
    wm_exi_status st = WM_EXI_OK;
    if (!*doc) {
        /* an I/O error is the cause ("Is a directory"), the context's last
         * error then its consequence ("Document is empty"); otherwise the
         * parser's last error says where it stopped */
        bool io = first.message && first.domain == XML_FROM_IO;
        const char *why = io ? first.message : ctx->lastError.message ? ctx->lastError.message : "no reason given";
        int line = io ? first.line : ctx->lastError.line;
        st = wm_exi_fail(err, WM_EXI_E_SCHEMA, 0, WM_EXI_QUOTE_FMT ": the schema document is not well-formed XML (line %d): %.*s", WM_EXI_QUOTE(path, 120),
                         line, (int)(strcspn(why, "\n") > 120 ? 120 : strcspn(why, "\n")), why);
    }
    xmlFree(first.file);
    xmlFree(first.message);
    xmlFreeParserCtxt(ctx);
    /* libxml2's schema parser (validate()) re-reads included documents with
     * entity substitution on: an external entity would be fetched there, so
     * none is accepted ("nothing is fetched", exi_xsd.h) */
    for (xmlNodePtr c = *doc && (*doc)->intSubset ? (*doc)->intSubset->children : NULL; c && !st; c = c->next) {
        if (c->type != XML_ENTITY_DECL) continue;
        xmlEntityType et = ((xmlEntityPtr)c)->etype;
        if (et == XML_EXTERNAL_GENERAL_PARSED_ENTITY || et == XML_EXTERNAL_GENERAL_UNPARSED_ENTITY || et == XML_EXTERNAL_PARAMETER_ENTITY)
            st = wm_exi_fail(err, WM_EXI_E_SCHEMA, (uint64_t)xmlGetLineNo(c), WM_EXI_QUOTE_FMT ": external entity \"" WM_EXI_QUOTE_FMT "\" refused (nothing is fetched)",
                             WM_EXI_QUOTE(path, 120), WM_EXI_QUOTE((const char *)c->name, 64));
    }
    if (st && *doc) { xmlFreeDoc(*doc); *doc = NULL; }
    return st;
}

static wm_exi_status load(rd *r, const char *path, const char *chameleon, xmlDocPtr given)
{
    if (r->n_docs > 256) return wm_exi_fail(r->err, WM_EXI_E_SCHEMA, 0, "more than 256 schema documents");
    xmlDocPtr doc = given;
    wm_exi_status st = doc ? WM_EXI_OK : parse_doc(path, NULL, 0, r->err, &doc);
    return st ? st : load_doc(r, doc, path, chameleon);
}

/* ----------------------------------------------------------- building */

static uint32_t type_ref(rd *r, xmlNodePtr n, const char *qn, wm_exi_status *st);
static uint32_t build_simple(rd *r, xmlNodePtr n, uint32_t doc, const char *name, wm_exi_status *st);
static uint32_t build_complex(rd *r, xmlNodePtr n, uint32_t doc, const char *name, wm_exi_status *st);
static uint32_t build_particle(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st);
static uint32_t build_local_elem(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st);

static uint32_t builtin(rd *r, const char *name)
{
    for (uint32_t i = 0; i < r->s->n_types; i++)
        if (r->s->types[i].uri && !strcmp(r->s->types[i].uri, XSD_NS) && r->s->types[i].name &&
            !strcmp(r->s->types[i].name, name))
            return i;
    return WM_EXI_NONE;
}

/* An xs:integer lexical value (whitespace collapsed: optional sign, digits,
 * nothing else) into *out. Returns 0, or -1 when v is not an integer, or 1
 * when it is one outside int64 (*out then holds the nearer int64 limit). */
static int xs_int64(const char *v, int64_t *out)
{
    while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') v++;
    bool neg = *v == '-';
    if (*v == '-' || *v == '+') v++;
    if (*v < '0' || *v > '9') return -1;
    uint64_t m = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool over = false;
    for (; *v >= '0' && *v <= '9'; v++) {
        if (!over && m > (lim - (uint64_t)(*v - '0')) / 10) over = true;
        if (!over) m = m * 10 + (uint64_t)(*v - '0');
    }
    while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') v++;
    if (*v) return -1;
    if (over) m = lim;
    *out = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    return over ? 1 : 0;
}

/* minOccurs/maxOccurs of n (dflt when absent): "unbounded" (maxOccurs only)
 * or a nonNegativeInteger below XS_UNBOUNDED, else *st says which value. */
static uint32_t occurs(rd *r, xmlNodePtr n, const char *a, uint32_t dflt, wm_exi_status *st)
{
    xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)a);
    if (!v) return dflt;
    int64_t x = 0;
    int k = !strcmp(a, "maxOccurs") && !strcmp((const char *)v, "unbounded") ? 2 : xs_int64((const char *)v, &x);
    uint32_t res = k == 2 ? XS_UNBOUNDED : (uint32_t)x;
    if (k < 0 || x < 0)
        *st = bad(r, n, "%s=\"" WM_EXI_QUOTE_FMT "\" is not a non-negative integer%s", a, WM_EXI_QUOTE((const char *)v, 40),
                  !strcmp(a, "maxOccurs") ? " or \"unbounded\"" : "");
    else if (k == 1 || (k == 0 && (uint64_t)x >= XS_UNBOUNDED))
        *st = bad(r, n, "%s=\"" WM_EXI_QUOTE_FMT "\" is above the supported %" PRIu32, a, WM_EXI_QUOTE((const char *)v, 40), (uint32_t)(XS_UNBOUNDED - 1));
    xmlFree(v);
    return *st ? WM_EXI_NONE : res;
}

/* Both occurrence bounds of particle p from n, refusing maxOccurs < minOccurs. */
static bool particle_occurs(rd *r, xmlNodePtr n, uint32_t p, wm_exi_status *st)
{
    uint32_t mn = occurs(r, n, "minOccurs", 1, st), mx = *st ? 0 : occurs(r, n, "maxOccurs", 1, st);
    if (*st) return false;
    if (mx < mn) {
        *st = bad(r, n, "maxOccurs %" PRIu32 " is below minOccurs %" PRIu32, mx, mn);
        return false;
    }
    r->s->parts[p].min = mn;
    r->s->parts[p].max = mx;
    return true;
}

static uint32_t comp_type(rd *r, comp *c, wm_exi_status *st)
{
    if (c->built != WM_EXI_NONE) return c->built;
    if (++r->depth > 200) { *st = bad(r, c->node, "type derivation nested too deeply at %s", c->name); return WM_EXI_NONE; }
    uint32_t t = c->kind == C_CTYPE ? build_complex(r, c->node, c->doc, c->name, st)
                                    : build_simple(r, c->node, c->doc, c->name, st);
    r->depth--;
    return t;
}

static uint32_t type_ref(rd *r, xmlNodePtr n, const char *qn, wm_exi_status *st)
{
    const char *ns, *local;
    if (!qname(r, n, qn, &ns, &local)) { *st = bad(r, n, "unresolved prefix in type \"%s\"", qn); return WM_EXI_NONE; }
    if (!strcmp(ns, XSD_NS)) {
        uint32_t b = builtin(r, local);
        if (b == WM_EXI_NONE) *st = bad(r, n, "unknown XML Schema built-in type \"%s\"", qn);
        return b;
    }
    comp *c = find(r, C_CTYPE, ns, local);
    if (!c) c = find(r, C_STYPE, ns, local);
    if (!c) { *st = bad(r, n, "type \"%s\" is not declared", qn); return WM_EXI_NONE; }
    return comp_type(r, c, st);
}

static xmlNodePtr first_xs(xmlNodePtr n, const char *name)
{
    for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
        if (is_xs(c, name)) return c;
    return NULL;
}

/* Effective simple-type datatype of a type (simple, or complex with simple content). */
static uint32_t dt_of(rd *r, uint32_t t) { return t == WM_EXI_NONE ? r->s->dt_string : r->s->types[t].dt; }

/* Applies restriction facets to a copy of the base representation (Table 7-1, §7.2). */
static uint32_t restrict_dt(rd *r, xmlNodePtr rest, uint32_t t, uint32_t base, wm_exi_status *st)
{
    xs_type *bt = &r->s->types[base];
    wm_exi_datatype d = r->s->dts[dt_of(r, base)];
    bool integer = bt->is_integer, has_min = bt->has_min, has_max = bt->has_max;
    int64_t mn = bt->min, mx = bt->max;
    const char **ev = NULL;
    uint32_t nev = 0;
    bool pattern = false;
    int beyond = 0; /* +1/-1: every value lies above/below int64 */
    /* §7.1.10.1: the most-derived string type with pattern facets of its own
     * decides the restricted character set, from the union of those patterns */
    bool from_string = false;
    for (uint32_t b = base; b != WM_EXI_NONE; b = r->s->types[b].base)
        if (r->s->types[b].name && r->s->types[b].uri && !strcmp(r->s->types[b].uri, XSD_NS) &&
            !strcmp(r->s->types[b].name, "string"))
            from_string = true;
    wm_exi_rcs_set *rset = NULL;
    bool rcs_ok = true;
    for (xmlNodePtr f = rest->children; f; f = f->next) {
        if (!is_xs(f, NULL)) continue;
        xmlChar *v = xmlGetNoNsProp(f, (const xmlChar *)"value");
        if (!v) continue;
        const char *fn = (const char *)f->name;
        bool lower = !strcmp(fn, "minInclusive") || !strcmp(fn, "minExclusive");
        bool bound = integer && (lower || !strcmp(fn, "maxInclusive") || !strcmp(fn, "maxExclusive"));
        int64_t x = 0;
        int k = bound ? xs_int64((const char *)v, &x) : 0;
        if (k < 0) {
            *st = bad(r, f, "xs:%s value=\"" WM_EXI_QUOTE_FMT "\" is not an integer (the type is integer-derived)", fn, WM_EXI_QUOTE((const char *)v, 40));
            xmlFree(v); free(ev); free(rset);
            return WM_EXI_NONE;
        }
        /* a bound beyond int64: on its open side every int64 is in range (no
         * restriction); on its closed side every value lies beyond int64 (the
         * interop suite's nbitInteger bigNBitA/B): the type keeps (Unsigned)
         * Integer, a documented limit (exi_xsd.h), not a clamped n-bit range */
        if (k == 1) {
            if (lower ? x == INT64_MAX : x == INT64_MIN) beyond = lower ? 1 : -1;
            xmlFree(v);
            continue;
        }
        if (bound && ((!strcmp(fn, "minExclusive") && x == INT64_MAX) || (!strcmp(fn, "maxExclusive") && x == INT64_MIN))) {
            *st = bad(r, f, "xs:%s value=\"" WM_EXI_QUOTE_FMT "\" leaves no 64-bit integer in range", fn, WM_EXI_QUOTE((const char *)v, 40));
            xmlFree(v); free(ev); free(rset);
            return WM_EXI_NONE;
        }
        if (!strcmp(fn, "enumeration")) {
            const char **ne = realloc(ev, (nev + 1) * sizeof *ne);
            if (!ne) { xmlFree(v); free(ev); *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
            ev = ne;
            ev[nev++] = wm_exi_schema_strdup(r->s, (const char *)v);
        } else if (!strcmp(fn, "pattern")) {
            pattern = true;
            if (from_string && rcs_ok && !rset && !(rset = calloc(1, sizeof *rset))) rcs_ok = false;
            if (from_string && rcs_ok) rcs_ok = wm_exi_rcs_add_pattern(rset, (const char *)v, strlen((const char *)v));
        }
        else if (integer && !strcmp(fn, "minInclusive")) { if (!has_min || x > mn) mn = x; has_min = true; }
        else if (integer && !strcmp(fn, "minExclusive")) { if (!has_min || x + 1 > mn) mn = x + 1; has_min = true; }
        else if (integer && !strcmp(fn, "maxInclusive")) { if (!has_max || x < mx) mx = x; has_max = true; }
        else if (integer && !strcmp(fn, "maxExclusive")) { if (!has_max || x - 1 < mx) mx = x - 1; has_max = true; }
        xmlFree(v);
    }
    if (integer && has_min && has_max && mx < mn) {
        free(ev); free(rset);
        *st = bad(r, rest, "the integer bounds leave no value: lower bound %" PRId64 " is above upper bound %" PRId64, mn, mx);
        return WM_EXI_NONE;
    }
    xs_type *ty = &r->s->types[t];
    ty->is_integer = integer;
    ty->has_min = has_min; ty->has_max = has_max; ty->min = mn; ty->max = mx;
    ty->is_union = r->s->types[base].is_union;
    if (integer && d.kind != WM_EXI_DT_ENUM && beyond) d.kind = beyond > 0 || (has_min && mn >= 0) ? WM_EXI_DT_UNSIGNED : WM_EXI_DT_INTEGER;
    else if (integer && d.kind != WM_EXI_DT_ENUM) {
        if (has_min && has_max && mx >= mn && (uint64_t)(mx - mn) < 4096) {
            d.kind = WM_EXI_DT_NBIT;
            d.nbit_min = mn;
            d.nbit_width = (uint8_t)wm_exi_code_width((uint32_t)(mx - mn + 1));
        } else if (has_min && mn >= 0) d.kind = WM_EXI_DT_UNSIGNED;
        else d.kind = WM_EXI_DT_INTEGER;
    }
    if (d.kind == WM_EXI_DT_BOOLEAN && pattern) d.pattern_bool = true;
    if (pattern && from_string && (d.kind == WM_EXI_DT_STRING || d.kind == WM_EXI_DT_RCS_STRING)) {
        uint32_t set[255];
        int n = rcs_ok ? wm_exi_rcs_list(rset, set) : -1;
        d.kind = WM_EXI_DT_STRING;
        d.n_rcs = 0;
        d.rcs = NULL;
        if (n >= 0) {
            uint32_t *keep = malloc(((size_t)n + 1) * sizeof *keep);
            if (!keep || !wm_exi_schema_keep(r->s, keep)) { free(rset); free(ev); *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
            memcpy(keep, set, (size_t)n * sizeof *keep);
            d.kind = WM_EXI_DT_RCS_STRING;
            d.n_rcs = (uint32_t)n;
            d.rcs = keep;
        }
    }
    free(rset);
    /* §7.2: enumerations use the enumeration representation, except for
     * QName/NOTATION-derived types and unions, whose values keep their own. */
    bool qn = false;
    for (uint32_t b = base; b != WM_EXI_NONE; b = r->s->types[b].base)
        if (r->s->types[b].name && r->s->types[b].uri && !strcmp(r->s->types[b].uri, XSD_NS) &&
            (!strcmp(r->s->types[b].name, "QName") || !strcmp(r->s->types[b].name, "NOTATION")))
            qn = true;
    if (nev && !qn && !ty->is_union && d.kind != WM_EXI_DT_LIST) {
        d.enum_base = d.kind == WM_EXI_DT_ENUM ? d.enum_base : d.kind;
        d.kind = WM_EXI_DT_ENUM;
        d.n_enum = nev;
        d.enum_values = wm_exi_schema_keep(r->s, ev);
        if (!d.enum_values) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
        ev = NULL;
    }
    free(ev);
    uint32_t di = wm_exi_schema_add_dt(r->s, &d);
    if (di == WM_EXI_NONE) *st = WM_EXI_E_MEMORY;
    return di;
}

static uint32_t build_simple(rd *r, xmlNodePtr n, uint32_t doc, const char *name, wm_exi_status *st)
{
    uint32_t t = wm_exi_schema_add_type(r->s);
    if (t == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return t; }
    if (name) {
        comp *c = find(r, C_STYPE, r->docs[doc].tns, name);
        if (c) c->built = t;
        r->s->types[t].name = (char *)name;
        r->s->types[t].uri = (char *)r->docs[doc].tns;
    }
    r->s->types[t].simple = true;
    r->s->types[t].content = XS_CT_SIMPLE;
    xmlNodePtr rest = first_xs(n, "restriction"), list = first_xs(n, "list"), uni = first_xs(n, "union");
    if (rest) {
        char *b = attr(r, rest, "base");
        uint32_t base = b ? type_ref(r, rest, b, st) : build_simple(r, first_xs(rest, "simpleType"), doc, NULL, st);
        if (base == WM_EXI_NONE) { if (!*st) *st = bad(r, rest, "restriction without a base%s", ""); return base; }
        r->s->types[t].base = base;
        uint32_t d = restrict_dt(r, rest, t, base, st);
        if (d == WM_EXI_NONE) return d;
        r->s->types[t].dt = d;
    } else if (list) {
        char *it = attr(r, list, "itemType");
        xmlNodePtr inl = first_xs(list, "simpleType");
        uint32_t item = it ? type_ref(r, list, it, st) : inl ? build_simple(r, inl, doc, NULL, st) : WM_EXI_NONE;
        if (item == WM_EXI_NONE) { if (!*st) *st = bad(r, list, "list without item type%s", ""); return item; }
        wm_exi_datatype d = { .kind = WM_EXI_DT_LIST, .list_item = dt_of(r, item) };
        if ((r->s->types[t].dt = wm_exi_schema_add_dt(r->s, &d)) == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
        r->s->types[t].base = builtin(r, "anySimpleType");
    } else if (uni) {
        r->s->types[t].is_union = true;
        r->s->types[t].dt = r->s->dt_string;
        r->s->types[t].base = builtin(r, "anySimpleType");
        /* member types are built so their names exist for xsi:type */
        char *mt = attr(r, uni, "memberTypes");
        if (mt) {
            for (char *save = NULL, *tok = strtok_r(mt, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
                if (type_ref(r, uni, tok, st) == WM_EXI_NONE) return WM_EXI_NONE;
        }
        for (xmlNodePtr c = uni->children; c; c = c->next)
            if (is_xs(c, "simpleType") && build_simple(r, c, doc, NULL, st) == WM_EXI_NONE) return WM_EXI_NONE;
    } else {
        *st = bad(r, n, "simpleType %s has no restriction, list or union", name ? name : "(anonymous)");
        return WM_EXI_NONE;
    }
    return t;
}

static uint32_t global_attr_dt(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st)
{
    char *ty = attr(r, n, "type");
    xmlNodePtr inl = first_xs(n, "simpleType");
    uint32_t t = ty ? type_ref(r, n, ty, st) : inl ? build_simple(r, inl, doc, NULL, st) : builtin(r, "anySimpleType");
    return t == WM_EXI_NONE ? t : dt_of(r, t);
}

/* Appends attribute uses and the attribute wildcard found under n. */
static wm_exi_status collect_attrs(rd *r, xmlNodePtr n, uint32_t doc, uint32_t t, int guard)
{
    if (guard > 32) return bad(r, n, "attribute groups nested too deeply%s", "");
    wm_exi_status st = WM_EXI_OK;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (is_xs(c, "attribute")) {
            char *use = attr(r, c, "use");
            char *ref = attr(r, c, "ref");
            xs_attr a = { 0 };
            a.required = use && !strcmp(use, "required");
            if (ref) {
                const char *ns, *local;
                if (!qname(r, c, ref, &ns, &local)) return bad(r, c, "unresolved prefix in attribute ref \"%s\"", ref);
                a.uri = (char *)ns;
                a.name = (char *)local;
                if (!strcmp(ns, "http://www.w3.org/XML/1998/namespace")) a.dt = r->s->dt_string;
                else {
                    comp *g = find(r, C_ATTR, ns, local);
                    if (!g) return bad(r, c, "attribute \"%s\" is not declared", ref);
                    if ((a.dt = global_attr_dt(r, g->node, g->doc, &st)) == WM_EXI_NONE) return st;
                }
            } else {
                char *nm = attr(r, c, "name");
                if (!nm) return bad(r, c, "attribute without name or ref%s", "");
                char *form = attr(r, c, "form");
                bool q = form ? !strcmp(form, "qualified") : r->docs[doc].aq;
                a.uri = (char *)(q ? r->docs[doc].tns : "");
                a.name = nm;
                if ((a.dt = global_attr_dt(r, c, doc, &st)) == WM_EXI_NONE) return st;
            }
            xs_type *ty = &r->s->types[t];
            bool prohibited = use && !strcmp(use, "prohibited");
            uint32_t k;
            for (k = 0; k < ty->n_attrs; k++)
                if (!strcmp(ty->attrs[k].name, a.name) && !strcmp(ty->attrs[k].uri ? ty->attrs[k].uri : "", a.uri)) break;
            if (prohibited) {
                if (k < ty->n_attrs) { memmove(&ty->attrs[k], &ty->attrs[k + 1], (ty->n_attrs - k - 1) * sizeof a); ty->n_attrs--; }
                continue;
            }
            if (k < ty->n_attrs) { ty->attrs[k] = a; continue; }
            xs_attr *na = realloc(ty->attrs, (ty->n_attrs + 1) * sizeof *na);
            if (!na) return WM_EXI_E_MEMORY;
            ty->attrs = na;
            ty->attrs[ty->n_attrs++] = a;
        } else if (is_xs(c, "attributeGroup")) {
            char *ref = attr(r, c, "ref");
            const char *ns, *local;
            if (!ref || !qname(r, c, ref, &ns, &local)) return bad(r, c, "attributeGroup without a resolvable ref%s", "");
            comp *g = find(r, C_AGROUP, ns, local);
            if (!g) return bad(r, c, "attributeGroup \"%s\" is not declared", ref);
            if ((st = collect_attrs(r, g->node, g->doc, t, guard + 1))) return st;
        } else if (is_xs(c, "anyAttribute")) {
            xs_type *ty = &r->s->types[t];
            char *ns = attr(r, c, "namespace");
            ty->has_awild = true;
            ty->awild.kind = XS_W_ANY;
            ty->awild.n = 0;
            ty->awild.uris = NULL;
            if (ns && strcmp(ns, "##any") && strcmp(ns, "##other")) {
                ty->awild.kind = XS_W_LIST;
                for (char *save = NULL, *tok = strtok_r(ns, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                    const char *u = !strcmp(tok, "##targetNamespace") ? r->docs[doc].tns : !strcmp(tok, "##local") ? "" : tok;
                    char **nu = realloc(ty->awild.uris, (ty->awild.n + 1) * sizeof *nu);
                    if (!nu) return WM_EXI_E_MEMORY;
                    ty->awild.uris = nu;
                    ty->awild.uris[ty->awild.n++] = (char *)u;
                }
                /* the array is freed with the model */
                if (ty->awild.uris && !wm_exi_schema_keep(r->s, ty->awild.uris)) return WM_EXI_E_MEMORY;
                for (uint32_t k = 0; k < ty->awild.n; k++)
                    if (wm_exi_schema_add_wuri(r->s, ty->awild.uris[k]) == WM_EXI_NONE) return WM_EXI_E_MEMORY;
            } else if (ns && !strcmp(ns, "##other")) ty->awild.kind = XS_W_NOT;
        }
    }
    return WM_EXI_OK;
}

static uint32_t group_particle(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st)
{
    char *ref = attr(r, n, "ref");
    const char *ns, *local;
    if (!ref || !qname(r, n, ref, &ns, &local)) { *st = bad(r, n, "group without a resolvable ref%s", ""); return WM_EXI_NONE; }
    comp *g = find(r, C_GROUP, ns, local);
    if (!g) { *st = bad(r, n, "group \"%s\" is not declared", ref); return WM_EXI_NONE; }
    if (++r->depth > 200) { *st = bad(r, n, "groups nested too deeply at %s", ref); return WM_EXI_NONE; }
    xmlNodePtr mg = NULL;
    for (xmlNodePtr c = g->node->children; c && !mg; c = c->next)
        if (is_xs(c, "sequence") || is_xs(c, "choice") || is_xs(c, "all")) mg = c;
    uint32_t p = mg ? build_particle(r, mg, g->doc, st) : WM_EXI_NONE;
    r->depth--;
    if (p == WM_EXI_NONE) { if (!*st) *st = bad(r, n, "group \"%s\" has no model group", ref); return p; }
    /* wrap to carry the reference's occurrence range */
    uint32_t w = wm_exi_schema_add_part(r->s);
    if (w == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return w; }
    xs_particle *wp = &r->s->parts[w];
    wp->kind = XS_P_SEQ;
    if (!particle_occurs(r, n, w, st)) return WM_EXI_NONE;
    wp = &r->s->parts[w];
    wp->kids = wm_exi_schema_keep(r->s, malloc(sizeof *wp->kids));
    if (!wp->kids) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
    wp->kids[0] = p;
    wp->n_kids = 1;
    return w;
}

static uint32_t build_particle(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st)
{
    if (++r->depth > 400) { *st = bad(r, n, "model groups nested too deeply%s", ""); return WM_EXI_NONE; }
    uint32_t res = WM_EXI_NONE;
    if (is_xs(n, "group")) { res = group_particle(r, n, doc, st); r->depth--; return res; }
    uint32_t p = wm_exi_schema_add_part(r->s);
    if (p == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; r->depth--; return p; }
    if (!particle_occurs(r, n, p, st)) { r->depth--; return WM_EXI_NONE; }
    if (is_xs(n, "element")) {
        r->s->parts[p].kind = XS_P_ELEM;
        uint32_t e = build_local_elem(r, n, doc, st);
        if (e == WM_EXI_NONE) { r->depth--; return e; }
        r->s->parts[p].elem = e;
    } else if (is_xs(n, "any")) {
        r->s->parts[p].kind = XS_P_ANY;
        char *ns = attr(r, n, "namespace");
        xs_wild w = { .kind = XS_W_ANY };
        if (ns && !strcmp(ns, "##other")) w.kind = XS_W_NOT;
        else if (ns && strcmp(ns, "##any")) {
            w.kind = XS_W_LIST;
            for (char *save = NULL, *tok = strtok_r(ns, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
                const char *u = !strcmp(tok, "##targetNamespace") ? r->docs[doc].tns : !strcmp(tok, "##local") ? "" : tok;
                char **nu = realloc(w.uris, (w.n + 1) * sizeof *nu);
                if (!nu) { *st = WM_EXI_E_MEMORY; r->depth--; return WM_EXI_NONE; }
                w.uris = nu;
                w.uris[w.n++] = (char *)u;
            }
            if (w.uris && !wm_exi_schema_keep(r->s, w.uris)) { *st = WM_EXI_E_MEMORY; r->depth--; return WM_EXI_NONE; }
            for (uint32_t k = 0; k < w.n; k++)
                if (wm_exi_schema_add_wuri(r->s, w.uris[k]) == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; r->depth--; return WM_EXI_NONE; }
        }
        r->s->parts[p].wild = w;
    } else {
        r->s->parts[p].kind = is_xs(n, "sequence") ? XS_P_SEQ : is_xs(n, "choice") ? XS_P_CHOICE : XS_P_ALL;
        uint32_t nk = 0;
        for (xmlNodePtr c = n->children; c; c = c->next)
            if (is_xs(c, "element") || is_xs(c, "any") || is_xs(c, "sequence") || is_xs(c, "choice") || is_xs(c, "group"))
                nk++;
        uint32_t *kids = nk ? wm_exi_schema_keep(r->s, malloc(nk * sizeof *kids)) : NULL;
        if (nk && !kids) { *st = WM_EXI_E_MEMORY; r->depth--; return WM_EXI_NONE; }
        uint32_t k = 0;
        for (xmlNodePtr c = n->children; c; c = c->next) {
            if (!(is_xs(c, "element") || is_xs(c, "any") || is_xs(c, "sequence") || is_xs(c, "choice") || is_xs(c, "group")))
                continue;
            uint32_t kp = build_particle(r, c, doc, st);
            if (kp == WM_EXI_NONE) { r->depth--; return kp; }
            kids[k++] = kp;
        }
        r->s->parts[p].kids = kids;
        r->s->parts[p].n_kids = k;
    }
    r->depth--;
    return p;
}

static uint32_t elem_type(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st)
{
    char *ty = attr(r, n, "type");
    if (ty) return type_ref(r, n, ty, st);
    xmlNodePtr ct = first_xs(n, "complexType"), sty = first_xs(n, "simpleType");
    if (ct) return build_complex(r, ct, doc, NULL, st);
    if (sty) return build_simple(r, sty, doc, NULL, st);
    return WM_EXI_NONE; /* resolved later: substitution group head's type or anyType */
}

static uint32_t global_elem(rd *r, comp *c, wm_exi_status *st)
{
    if (c->built != WM_EXI_NONE) return c->built;
    uint32_t e = wm_exi_schema_add_elem(r->s);
    if (e == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return e; }
    c->built = e;
    xs_elem *el = &r->s->elems[e];
    el->uri = (char *)c->ns;
    el->name = (char *)c->name;
    el->global = true;
    char *nil = attr(r, c->node, "nillable"), *abs = attr(r, c->node, "abstract"), *sg = attr(r, c->node, "substitutionGroup");
    el->nillable = nil && (!strcmp(nil, "true") || !strcmp(nil, "1"));
    el->abstract = abs && (!strcmp(abs, "true") || !strcmp(abs, "1"));
    uint32_t t = elem_type(r, c->node, c->doc, st);
    if (*st) return WM_EXI_NONE;
    if (sg) {
        const char *ns, *local;
        if (!qname(r, c->node, sg, &ns, &local)) { *st = bad(r, c->node, "unresolved substitutionGroup \"%s\"", sg); return WM_EXI_NONE; }
        comp *h = find(r, C_ELEM, ns, local);
        if (!h) { *st = bad(r, c->node, "substitutionGroup head \"%s\" is not declared", sg); return WM_EXI_NONE; }
        uint32_t he = global_elem(r, h, st);
        if (he == WM_EXI_NONE) return he;
        r->s->elems[e].subst_head = he;
        if (t == WM_EXI_NONE) t = r->s->elems[he].type;
    }
    r->s->elems[e].type = t == WM_EXI_NONE ? r->s->anytype : t;
    return e;
}

static uint32_t build_local_elem(rd *r, xmlNodePtr n, uint32_t doc, wm_exi_status *st)
{
    char *ref = attr(r, n, "ref");
    if (ref) {
        const char *ns, *local;
        if (!qname(r, n, ref, &ns, &local)) { *st = bad(r, n, "unresolved element ref \"%s\"", ref); return WM_EXI_NONE; }
        comp *c = find(r, C_ELEM, ns, local);
        if (!c) { *st = bad(r, n, "element \"%s\" is not declared", ref); return WM_EXI_NONE; }
        return global_elem(r, c, st);
    }
    char *nm = attr(r, n, "name");
    if (!nm) { *st = bad(r, n, "element without name or ref%s", ""); return WM_EXI_NONE; }
    uint32_t e = wm_exi_schema_add_elem(r->s);
    if (e == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return e; }
    char *form = attr(r, n, "form"), *nil = attr(r, n, "nillable");
    bool q = form ? !strcmp(form, "qualified") : r->docs[doc].eq;
    r->s->elems[e].uri = (char *)(q ? r->docs[doc].tns : "");
    r->s->elems[e].name = nm;
    r->s->elems[e].nillable = nil && (!strcmp(nil, "true") || !strcmp(nil, "1"));
    uint32_t t = elem_type(r, n, doc, st);
    if (*st) return WM_EXI_NONE;
    r->s->elems[e].type = t == WM_EXI_NONE ? r->s->anytype : t;
    return e;
}

static uint32_t seq_of(rd *r, uint32_t a, uint32_t c, wm_exi_status *st)
{
    if (a == WM_EXI_NONE) return c;
    if (c == WM_EXI_NONE) return a;
    uint32_t p = wm_exi_schema_add_part(r->s);
    uint32_t *kids = wm_exi_schema_keep(r->s, malloc(2 * sizeof *kids));
    if (p == WM_EXI_NONE || !kids) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
    kids[0] = a;
    kids[1] = c;
    r->s->parts[p].kind = XS_P_SEQ;
    r->s->parts[p].kids = kids;
    r->s->parts[p].n_kids = 2;
    return p;
}

static xmlNodePtr model_group(xmlNodePtr n)
{
    for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
        if (is_xs(c, "sequence") || is_xs(c, "choice") || is_xs(c, "all") || is_xs(c, "group")) return c;
    return NULL;
}

static bool truthy(const char *v) { return v && (!strcmp(v, "true") || !strcmp(v, "1")); }

static uint32_t build_complex(rd *r, xmlNodePtr n, uint32_t doc, const char *name, wm_exi_status *st)
{
    uint32_t t = wm_exi_schema_add_type(r->s);
    if (t == WM_EXI_NONE) { *st = WM_EXI_E_MEMORY; return t; }
    if (name) {
        comp *c = find(r, C_CTYPE, r->docs[doc].tns, name);
        if (c) c->built = t;
        r->s->types[t].name = (char *)name;
        r->s->types[t].uri = (char *)r->docs[doc].tns;
    }
    bool mixed = truthy(attr(r, n, "mixed"));
    xmlNodePtr sc = first_xs(n, "simpleContent"), cc = first_xs(n, "complexContent");
    r->s->types[t].base = r->s->anytype;
    if (sc) {
        xmlNodePtr der = first_xs(sc, "extension");
        bool ext = der != NULL;
        if (!der) der = first_xs(sc, "restriction");
        char *b = der ? attr(r, der, "base") : NULL;
        if (!b) { *st = bad(r, sc, "simpleContent without a base%s", ""); return WM_EXI_NONE; }
        uint32_t base = type_ref(r, der, b, st);
        if (base == WM_EXI_NONE) return base;
        xs_type *bt = &r->s->types[base];
        uint32_t dt = bt->dt;
        if (!ext) { uint32_t d = restrict_dt(r, der, t, base, st); if (d == WM_EXI_NONE) return d; dt = d; }
        xs_type *ty = &r->s->types[t];
        bt = &r->s->types[base];
        ty->base = base;
        ty->content = XS_CT_SIMPLE;
        ty->dt = dt == WM_EXI_NONE ? r->s->dt_string : dt;
        if (!bt->simple && bt->n_attrs) {
            ty->attrs = malloc(bt->n_attrs * sizeof *ty->attrs);
            if (!ty->attrs) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
            memcpy(ty->attrs, bt->attrs, bt->n_attrs * sizeof *ty->attrs);
            ty->n_attrs = bt->n_attrs;
        }
        if (!bt->simple && bt->has_awild) { ty->has_awild = true; ty->awild = bt->awild; }
        *st = collect_attrs(r, der, doc, t, 0);
    } else if (cc) {
        mixed = mixed || truthy(attr(r, cc, "mixed"));
        xmlNodePtr der = first_xs(cc, "extension");
        bool ext = der != NULL;
        if (!der) der = first_xs(cc, "restriction");
        char *b = der ? attr(r, der, "base") : NULL;
        if (!b) { *st = bad(r, cc, "complexContent without a base%s", ""); return WM_EXI_NONE; }
        uint32_t base = type_ref(r, der, b, st);
        if (base == WM_EXI_NONE) return base;
        xmlNodePtr mg = model_group(der);
        uint32_t own = mg ? build_particle(r, mg, doc, st) : WM_EXI_NONE;
        if (*st) return WM_EXI_NONE;
        xs_type *bt = &r->s->types[base];
        uint32_t part = own;
        bool base_ur = bt->ur;
        if (ext && !base_ur && !bt->simple) {
            part = seq_of(r, bt->particle, own, st);
            if (*st) return WM_EXI_NONE;
            bt = &r->s->types[base];
            mixed = mixed || bt->content == XS_CT_MIXED;
        }
        xs_type *ty = &r->s->types[t];
        ty->base = base;
        ty->particle = part;
        ty->content = part == WM_EXI_NONE && !mixed ? XS_CT_EMPTY : mixed ? XS_CT_MIXED : XS_CT_ELEMENT;
        if (!base_ur && !bt->simple && bt->n_attrs) {
            ty->attrs = malloc(bt->n_attrs * sizeof *ty->attrs);
            if (!ty->attrs) { *st = WM_EXI_E_MEMORY; return WM_EXI_NONE; }
            memcpy(ty->attrs, bt->attrs, bt->n_attrs * sizeof *ty->attrs);
            ty->n_attrs = bt->n_attrs;
        }
        if (!base_ur && ext && bt->has_awild) { ty->has_awild = true; ty->awild = bt->awild; }
        *st = collect_attrs(r, der, doc, t, 0);
    } else {
        xmlNodePtr mg = model_group(n);
        uint32_t part = mg ? build_particle(r, mg, doc, st) : WM_EXI_NONE;
        if (*st) return WM_EXI_NONE;
        xs_type *ty = &r->s->types[t];
        ty->particle = part;
        ty->content = part == WM_EXI_NONE && !mixed ? XS_CT_EMPTY : mixed ? XS_CT_MIXED : XS_CT_ELEMENT;
        *st = collect_attrs(r, n, doc, t, 0);
    }
    /* attribute arrays are malloc'ed per type: hand them to the model, also
     * when collecting stopped half-way at a bad declaration */
    if (r->s->types[t].attrs && !wm_exi_schema_keep(r->s, r->s->types[t].attrs) && !*st) *st = WM_EXI_E_MEMORY;
    return *st ? WM_EXI_NONE : t;
}

static wm_exi_status compile(rd *r, wm_exi_grammar **out)
{
    wm_exi_status st = WM_EXI_OK;
    for (uint32_t i = 0; i < r->n_comps && !st; i++) {
        comp *c = &r->comps[i];
        if (c->kind == C_ELEM) global_elem(r, c, &st);
        else if (c->kind == C_ATTR) {
            uint32_t dt = global_attr_dt(r, c->node, c->doc, &st);
            if (!st && wm_exi_schema_add_gattr(r->s, (char *)c->ns, (char *)c->name, dt) == WM_EXI_NONE) st = WM_EXI_E_MEMORY;
        }
        else if ((c->kind == C_CTYPE || c->kind == C_STYPE) && c->built == WM_EXI_NONE) comp_type(r, c, &st);
    }
    if (st) {
        if (r->err && r->err->status == WM_EXI_OK) wm_exi_fail(r->err, st, 0, "building schema components failed");
        return st;
    }
    return wm_exi_grammar_build(r->s, out, r->err);
}

static void quiet(void *ctx, const char *msg, ...) { (void)ctx; (void)msg; }

/* libxml2's first schema error (its reason, file and line), kept per call. */
static void first_schema_error(void *data, xmlErrorPtr e)
{
    xmlError *first = data;
    if (e && e->level >= XML_ERR_ERROR && first->level < XML_ERR_ERROR) {
        first->level = e->level;
        first->domain = e->domain;
        first->line = e->line;
        first->file = e->file ? (char *)xmlStrdup((const xmlChar *)e->file) : NULL;
        first->message = e->message ? (char *)xmlStrdup((const xmlChar *)e->message) : NULL;
    }
}

/* Checks the loaded schema (docs[0] and what it includes/imports) against
 * the constraints of XML Schema 1.0 with libxml2's schema parser: a schema
 * it refuses (invalid facet or occurrence values, duplicate or circular
 * definitions, bad patterns, ...) would otherwise compile into a grammar
 * another EXI implementation does not derive. Runs after load(), which has
 * refused remote locations and external entities, so libxml2 reads the same
 * local documents (includes resolved against the including document, like
 * load_doc). Errors: WM_EXI_E_SCHEMA with libxml2's file:line and reason. */
static wm_exi_status validate(rd *r)
{
    xmlDocPtr copy = xmlCopyDoc(r->docs[0].doc, 1); /* libxml2 may modify the document it parses */
    xmlSchemaParserCtxtPtr pc = copy ? xmlSchemaNewDocParserCtxt(copy) : NULL;
    if (!pc) { xmlFreeDoc(copy); return wm_exi_fail(r->err, WM_EXI_E_MEMORY, 0, "out of memory"); }
    xmlError first = { 0 };
    first.level = XML_ERR_NONE;
    xmlSchemaSetParserStructuredErrors(pc, first_schema_error, &first);
    /* libxml2's regexp compiler reports through the generic handler (a
     * per-thread setting), not the context's: silenced for this call, the
     * schema parser's own error above carries the reason */
    xmlGenericErrorFunc prev = xmlGenericError;
    void *prev_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, quiet);
    xmlSchemaPtr schema = xmlSchemaParse(pc);
    xmlSetGenericErrorFunc(prev_ctx, prev);
    wm_exi_status st = WM_EXI_OK;
    if (!schema || first.level >= XML_ERR_ERROR) {
        const char *why = first.message ? first.message : "libxml2 gave no reason";
        const char *file = first.file ? first.file : r->docs[0].path;
        size_t wl = strcspn(why, "\n");
        char line[24] = "";
        if (first.line > 0) snprintf(line, sizeof line, ":%d", first.line);
        st = wm_exi_fail(r->err, WM_EXI_E_SCHEMA, first.line > 0 ? (uint64_t)first.line : 0, WM_EXI_QUOTE_FMT "%s: not a valid XML Schema: %.*s",
                         WM_EXI_QUOTE(file, 120), line, (int)(wl > 300 ? 300 : wl), why);
    }
    xmlFree(first.file);
    xmlFree(first.message);
    xmlSchemaFree(schema);
    xmlSchemaFreeParserCtxt(pc);
    xmlFreeDoc(copy);
    return st;
}

static void rd_free(rd *r)
{
    for (uint32_t i = 0; i < r->n_docs; i++) xmlFreeDoc(r->docs[i].doc);
    free(r->docs);
    free(r->comps);
    /* attrs arrays referenced by types were kept in the model's list */
    wm_exi_schema_free(r->s);
}

static wm_exi_status run(const char *path, const char *mem, size_t len, wm_exi_grammar **out, wm_exi_error *err)
{
    wm_exi_schema s;
    wm_exi_schema_init(&s);
    rd r = { .s = &s, .err = err };
    *out = NULL;
    wm_exi_status st = wm_exi_schema_add_builtins(&s);
    if (st) { wm_exi_schema_free(&s); return wm_exi_fail(err, st, 0, "out of memory"); }
    if (mem) {
        if (len > 16u << 20) { wm_exi_schema_free(&s); return wm_exi_fail(err, WM_EXI_E_LENGTH, 0, "schema larger than 16 MiB"); }
        r.no_includes = true;
        xmlDocPtr d;
        if ((st = parse_doc("memory.xsd", mem, len, err, &d))) { wm_exi_schema_free(&s); return st; }
        st = load(&r, "memory.xsd", NULL, d);
    } else st = load(&r, path, NULL, NULL);
    if (!st) st = validate(&r);
    if (!st) st = compile(&r, out);
    rd_free(&r);
    return st;
}

wm_exi_status wm_exi_xsd_compile(const char *path, wm_exi_grammar **out, wm_exi_error *err)
{
    return run(path, NULL, 0, out, err);
}

wm_exi_status wm_exi_xsd_compile_mem(const char *xsd, size_t len, wm_exi_grammar **out, wm_exi_error *err)
{
    return run(NULL, xsd, len, out, err);
}
