/* Decoded EXI vs reference XML as an infoset, values by their EXI
 * representation (see exi_infoset.h for the rules). */
#include "tests/lib/exi_infoset.h"

#include <ctype.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ decoding */

typedef struct rec_state {
    wm_test_exi_doc *doc;
    uint32_t stack[512];      /* element numbers of the open elements */
    uint32_t depth;
} rec_state;

static char *dup_view(wm_exi_sview v)
{
    char *s = malloc(v.len + 1u);
    if (!s) abort();
    memcpy(s, v.p ? v.p : "", v.len);
    s[v.len] = 0;
    return s;
}

static int rec_event(void *user, const wm_exi_event *ev)
{
    rec_state *rs = user;
    wm_test_exi_doc *d = rs->doc;
    if (ev->type == WM_EXI_EV_SE) {
        if (rs->depth < sizeof rs->stack / sizeof rs->stack[0]) rs->stack[rs->depth] = d->n_elems;
        rs->depth++;
        d->n_elems++;
    } else if (ev->type == WM_EXI_EV_EE) {
        if (rs->depth) rs->depth--;
    } else if ((ev->type == WM_EXI_EV_AT || ev->type == WM_EXI_EV_CH) && rs->depth &&
               rs->depth <= sizeof rs->stack / sizeof rs->stack[0]) {
        if (d->n_kinds == d->cap_kinds) {
            d->cap_kinds = d->cap_kinds ? 2 * d->cap_kinds : 32;
            d->kinds = realloc(d->kinds, d->cap_kinds * sizeof *d->kinds);
            if (!d->kinds) abort();
        }
        wm_test_exi_vkind *k = &d->kinds[d->n_kinds++];
        k->elem = rs->stack[rs->depth - 1];
        k->attr = ev->type == WM_EXI_EV_AT;
        k->uri = k->attr ? dup_view(ev->uri) : NULL;
        k->local = k->attr ? dup_view(ev->local) : NULL;
        k->kind = ev->value.kind;
        if (ev->xsi) k->kind = (ev->local.len == 3 && !memcmp(ev->local.p, "nil", 3)) ? WM_EXI_DT_BOOLEAN : WM_EXI_DT_QNAME;
    }
    return wm_exi_xml_sink_event(&d->sink, ev);
}

wm_exi_status wm_test_exi_decode_doc(const wm_exi_grammar *g, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                                     wm_test_exi_doc *doc, wm_exi_error *err, wm_exi_options *used)
{
    memset(doc, 0, sizeof *doc);
    wm_exi_xml_sink_init(&doc->sink);
    rec_state *rs = calloc(1, sizeof *rs);
    if (!rs) abort();
    rs->doc = doc;
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    wm_exi_status st = wm_exi_decode(&d, buf, len, oob, rec_event, rs, NULL, err);
    if (used) *used = d.opts;
    wm_exi_decoder_free(&d);
    free(rs);
    return st;
}

void wm_test_exi_doc_free(wm_test_exi_doc *doc)
{
    for (size_t i = 0; i < doc->n_kinds; i++) {
        free(doc->kinds[i].uri);
        free(doc->kinds[i].local);
    }
    free(doc->kinds);
    wm_exi_xml_sink_free(&doc->sink);
    memset(doc, 0, sizeof *doc);
}

/* ------------------------------------------------------------ values */

static bool ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* XML Schema whitespace collapse into a new malloc'ed string. */
static char *collapse(const char *s)
{
    char *out = malloc(strlen(s) + 1);
    if (!out) abort();
    size_t n = 0;
    bool sp = false;
    for (; *s; s++) {
        if (ws(*s)) { sp = n > 0; continue; }
        if (sp) out[n++] = ' ';
        sp = false;
        out[n++] = *s;
    }
    out[n] = 0;
    return out;
}

/* Integer lexical (optional sign, digits) to a canonical "[-]digits" without
 * leading zeros; false if not one. */
static bool canon_integer(const char *s, char *out, size_t cap)
{
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (!isdigit((unsigned char)*s)) return false;
    while (*s == '0' && isdigit((unsigned char)s[1])) s++;
    size_t n = strspn(s, "0123456789");
    if (s[n] || n + 2 > cap) return false;
    if (!strcmp(s, "0")) neg = false;
    snprintf(out, cap, "%s%s", neg ? "-" : "", s);
    return true;
}

/* Decimal lexical to "[-]int.frac" without leading/trailing zeros
 * ("0012.50" -> "12.5", "-0.0" -> "0."); false if not a decimal. */
static bool canon_decimal(const char *s, char *out, size_t cap)
{
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    size_t ni = strspn(s, "0123456789");
    const char *f = s + ni;
    size_t nf = 0;
    if (*f == '.') nf = strspn(++f, "0123456789");
    else f = "";
    if (!ni && !nf) return false;
    if (f[nf]) return false;
    while (ni && *s == '0') { s++; ni--; }
    while (nf && f[nf - 1] == '0') nf--;
    if (!ni && !nf) neg = false;
    if (ni + nf + 3 > cap) return false;
    snprintf(out, cap, "%s%.*s.%.*s", neg ? "-" : "", (int)ni, s, (int)nf, f);
    return true;
}

/* xs:float/xs:double lexical: decimal with optional exponent, or the specials. */
static bool parse_float(const char *s, double *v, const char **special)
{
    *special = NULL;
    if (!strcmp(s, "INF") || !strcmp(s, "-INF") || !strcmp(s, "NaN")) { *special = s; return true; }
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    size_t ni = strspn(p, "0123456789");
    p += ni;
    size_t nf = 0;
    if (*p == '.') { nf = strspn(++p, "0123456789"); p += nf; }
    if (!ni && !nf) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        size_t ne = strspn(p, "0123456789");
        if (!ne) return false;
        p += ne;
    }
    if (*p) return false;
    *v = strtod(s, NULL);
    return true;
}

static bool same_float(const char *a, const char *b)
{
    double x, y;
    const char *sa, *sb;
    if (!parse_float(a, &x, &sa) || !parse_float(b, &y, &sb)) return false;
    if (sa || sb) return sa && sb && !strcmp(sa, sb);
    return x == y;
}

static bool boolean(const char *s, bool *v)
{
    if (!strcmp(s, "true") || !strcmp(s, "1")) { *v = true; return true; }
    if (!strcmp(s, "false") || !strcmp(s, "0")) { *v = false; return true; }
    return false;
}

/* Date-time text as §7.1.8 keeps it: no trailing zeros in the fractional
 * seconds, a zero offset written "Z". */
static void canon_datetime(char *s)
{
    size_t n = strlen(s);
    if (n >= 6 && (!strcmp(s + n - 6, "+00:00") || !strcmp(s + n - 6, "-00:00"))) { s[n - 6] = 'Z'; s[n - 5] = 0; }
    char *dot = strchr(s, '.');
    if (!dot || !isdigit((unsigned char)dot[1])) return;
    char *end = dot + 1;
    while (isdigit((unsigned char)*end)) end++;
    char *z = end;
    while (z > dot + 1 && z[-1] == '0') z--;
    if (z == dot + 1) z = dot; /* ".000" -> nothing */
    memmove(z, end, strlen(end) + 1);
}

static bool same_list(const char *a, const char *b)
{
    char *ca = collapse(a), *cb = collapse(b);
    bool same = true;
    char *sa, *sb;
    char *ta = strtok_r(ca, " ", &sa), *tb = strtok_r(cb, " ", &sb);
    for (; ta && tb; ta = strtok_r(NULL, " ", &sa), tb = strtok_r(NULL, " ", &sb)) {
        double x, y;
        const char *xa, *xb;
        if (!strcmp(ta, tb)) continue;
        if (parse_float(ta, &x, &xa) && parse_float(tb, &y, &xb) && !xa && !xb && x == y) continue;
        same = false;
        break;
    }
    if (ta || tb) same = false;
    free(ca);
    free(cb);
    return same;
}

bool wm_test_exi_same_value(uint8_t kind, const char *a, const char *b)
{
    if (kind == WM_EXI_DT_STRING || kind == WM_EXI_DT_RCS_STRING || kind == WM_EXI_DT_QNAME) return !strcmp(a, b);
    if (kind == WM_EXI_DT_LIST) return same_list(a, b);
    char *ca = collapse(a), *cb = collapse(b);
    bool same = false;
    char xa[96], xb[96];
    bool ba, bb;
    switch (kind) {
    case WM_EXI_DT_HEX:
        same = strlen(ca) == strlen(cb) && strspn(ca, "0123456789abcdefABCDEF") == strlen(ca) && !strcasecmp(ca, cb);
        break;
    case WM_EXI_DT_BASE64: { /* whitespace inside base64 text is not data */
        size_t i = 0, j = 0;
        for (const char *p = ca; *p; p++) if (*p != ' ') ca[i++] = *p;
        ca[i] = 0;
        for (const char *p = cb; *p; p++) if (*p != ' ') cb[j++] = *p;
        cb[j] = 0;
        same = !strcmp(ca, cb);
        break;
    }
    case WM_EXI_DT_BOOLEAN: same = boolean(ca, &ba) && boolean(cb, &bb) && ba == bb; break;
    case WM_EXI_DT_DECIMAL:
        same = canon_decimal(ca, xa, sizeof xa) && canon_decimal(cb, xb, sizeof xb) && !strcmp(xa, xb);
        break;
    case WM_EXI_DT_FLOAT: same = same_float(ca, cb); break;
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT:
        same = canon_integer(ca, xa, sizeof xa) && canon_integer(cb, xb, sizeof xb) && !strcmp(xa, xb);
        break;
    case WM_EXI_DT_DATETIME:
        canon_datetime(ca);
        canon_datetime(cb);
        same = !strcmp(ca, cb);
        break;
    default: same = !strcmp(ca, cb); break; /* enumerations */
    }
    free(ca);
    free(cb);
    return same;
}

/* ------------------------------------------------------------ infoset */

typedef struct cmp_state {
    const wm_test_exi_doc *doc;
    uint32_t next_elem;       /* pre-order number of the next element of the decoded tree */
    char *why;
    size_t why_len;
} cmp_state;

static bool differ(cmp_state *cs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cs->why, cs->why_len, fmt, ap);
    va_end(ap);
    return false;
}

static uint8_t kind_of(const cmp_state *cs, uint32_t elem, const char *uri, const char *local)
{
    for (size_t i = 0; i < cs->doc->n_kinds; i++) {
        const wm_test_exi_vkind *k = &cs->doc->kinds[i];
        if (k->elem != elem || k->attr != (local != NULL)) continue;
        if (!local || (!strcmp(k->local, local) && !strcmp(k->uri, uri ? uri : ""))) return k->kind;
    }
    return WM_EXI_DT_STRING;
}

static char *element_text(xmlNodePtr n, bool *has_elems)
{
    size_t cap = 64, len = 0;
    char *t = malloc(cap);
    if (!t) abort();
    *has_elems = false;
    t[0] = 0;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) { *has_elems = true; continue; }
        if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) continue;
        size_t k = strlen((const char *)c->content);
        if (len + k + 1 > cap) {
            cap = (len + k + 1) * 2;
            t = realloc(t, cap);
            if (!t) abort();
        }
        memcpy(t + len, c->content, k + 1);
        len += k;
    }
    return t;
}

static bool blank(const char *s)
{
    for (; *s; s++) if (!ws(*s)) return false;
    return true;
}

/* An xs:QName attribute value as "{uri}local", its prefix resolved in el's
 * scope (no prefix: the default namespace; "xml" is predeclared); NULL when
 * the prefix is not declared. malloc'ed. */
static char *expanded_qname(xmlNodePtr el, const char *qn)
{
    while (ws(*qn)) qn++;
    size_t n = strlen(qn);
    while (n && ws(qn[n - 1])) n--;
    const char *colon = memchr(qn, ':', n);
    char *pfx = colon ? strndup(qn, (size_t)(colon - qn)) : NULL;
    xmlNsPtr ns = xmlSearchNs(el->doc, el, (const xmlChar *)pfx);
    free(pfx);
    if (colon && !ns) return NULL;
    const char *uri = ns ? (const char *)ns->href : "", *local = colon ? colon + 1 : qn;
    size_t ll = n - (size_t)(local - qn), need = strlen(uri) + ll + 3;
    char *r = malloc(need);
    if (!r) abort();
    snprintf(r, need, "{%s}%.*s", uri, (int)ll, local);
    return r;
}

static bool same_element(cmp_state *cs, xmlNodePtr a, xmlNodePtr b)
{
    uint32_t me = cs->next_elem++;
    const char *ua = a->ns ? (const char *)a->ns->href : "", *ub = b->ns ? (const char *)b->ns->href : "";
    if (strcmp((const char *)a->name, (const char *)b->name) || strcmp(ua, ub))
        return differ(cs, "element {%s}%s, expected {%s}%s", ua, a->name, ub, b->name);
    int na = 0, nb = 0;
    for (xmlAttrPtr x = a->properties; x; x = x->next) na++;
    for (xmlAttrPtr x = b->properties; x; x = x->next) nb++;
    if (na != nb) return differ(cs, "<%s> has %d attributes, expected %d", a->name, na, nb);
    for (xmlAttrPtr x = a->properties; x; x = x->next) {
        const char *ns = x->ns ? (const char *)x->ns->href : NULL;
        xmlChar *va = xmlNodeListGetString(a->doc, x->children, 1);
        xmlChar *vb = ns ? xmlGetNsProp(b, x->name, (const xmlChar *)ns) : xmlGetNoNsProp(b, x->name);
        bool ok;
        if (!vb) ok = differ(cs, "<%s> lacks attribute %s", b->name, x->name);
        else if (ns && !strcmp(ns, "http://www.w3.org/2001/XMLSchema-instance") && !strcmp((const char *)x->name, "type")) {
            char *ea = expanded_qname(a, (const char *)va), *eb = expanded_qname(b, (const char *)vb);
            ok = (ea && eb && !strcmp(ea, eb)) || differ(cs, "<%s xsi:type=\"%s\"> (%s), expected \"%s\" (%s)", a->name, va,
                                                         ea ? ea : "undeclared prefix", vb, eb ? eb : "undeclared prefix");
            free(ea);
            free(eb);
        }
        else
            ok = wm_test_exi_same_value(kind_of(cs, me, ns, (const char *)x->name), (const char *)va, (const char *)vb) ||
                 differ(cs, "<%s %s=\"%s\">, expected \"%s\"", a->name, x->name, va, vb);
        xmlFree(va);
        xmlFree(vb);
        if (!ok) return false;
    }
    bool ea, eb;
    char *ta = element_text(a, &ea), *tb = element_text(b, &eb);
    bool ok = (blank(ta) && blank(tb)) || wm_test_exi_same_value(kind_of(cs, me, NULL, NULL), ta, tb) ||
              differ(cs, "text of <%s> \"%s\", expected \"%s\"", a->name, ta, tb);
    free(ta);
    free(tb);
    if (!ok) return false;
    xmlNodePtr ca = a->children, cb = b->children;
    for (;;) {
        while (ca && ca->type != XML_ELEMENT_NODE) ca = ca->next;
        while (cb && cb->type != XML_ELEMENT_NODE) cb = cb->next;
        if (!ca || !cb) break;
        if (!same_element(cs, ca, cb)) return false;
        ca = ca->next;
        cb = cb->next;
    }
    if (ca || cb) return differ(cs, "<%s> has a different number of children", a->name);
    return true;
}

/* *ns_ok: namespace-well-formed (libxml2 reports namespace errors, e.g. a
 * prefix bound to the XML namespace, without failing the parse) */
static xmlDocPtr parse_wrapped(const char *xml, bool *ns_ok)
{
    if (!strncmp(xml, "<?xml", 5)) {
        const char *e = strstr(xml, "?>");
        if (e) xml = e + 2;
    }
    size_t n = strlen(xml);
    char *w = malloc(n + 8);
    if (!w) abort();
    memcpy(w, "<w>", 3);
    memcpy(w + 3, xml, n);
    memcpy(w + 3 + n, "</w>", 5);
    xmlParserCtxtPtr px = xmlNewParserCtxt();
    if (!px) abort();
    xmlDocPtr d = xmlCtxtReadMemory(px, w, (int)(n + 7), NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    *ns_ok = d && px->wellFormed && px->nsWellFormed;
    xmlFreeParserCtxt(px);
    free(w);
    return d;
}

bool wm_test_exi_same_infoset(const wm_test_exi_doc *got, const char *want, char *why, size_t why_len)
{
    cmp_state cs = { .doc = got, .why = why, .why_len = why_len };
    why[0] = 0;
    /* fragments may have several top-level elements: both are wrapped in <w> */
    bool a_ok, b_ok;
    xmlDocPtr a = parse_wrapped(got->sink.buf ? got->sink.buf : "", &a_ok);
    xmlDocPtr b = parse_wrapped(want, &b_ok);
    bool same;
    if (!a || !a_ok) same = differ(&cs, "decoded XML is not namespace-well-formed: %s", got->sink.buf);
    else if (!b) same = differ(&cs, "reference XML is not well-formed");
    else {
        /* the wrapper is no element of the document: number the children from 0 */
        cs.next_elem = (uint32_t)-1;
        same = same_element(&cs, xmlDocGetRootElement(a), xmlDocGetRootElement(b));
    }
    xmlFreeDoc(a);
    xmlFreeDoc(b);
    return same;
}
