/* EXI <-> XML text adaptors (see exi_xml.h). */
#include "codec/exi_xml.h"

#include <libxml/uri.h>
#include <libxml/xmlreader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ XML writer */

/* One slot of the open start tag's attribute-name set: open addressing,
 * stamped with the tag's generation so a new tag empties the set in O(1). */
struct wm_exi_xml_seen {
    wm_exi_sview uri, local;
    uint32_t gen;
};

#define XMLNS_URI "http://www.w3.org/2000/xmlns/"
#define XML_URI "http://www.w3.org/XML/1998/namespace"
#define XSI_URI "http://www.w3.org/2001/XMLSchema-instance"
#define XSD_URI "http://www.w3.org/2001/XMLSchema"

void wm_exi_xml_sink_init(wm_exi_xml_sink *s) { memset(s, 0, sizeof *s); }

void wm_exi_xml_sink_free(wm_exi_xml_sink *s)
{
    free(s->buf);
    free(s->bound);
    free(s->seen);
    free(s->ok_uri);
    memset(s, 0, sizeof *s);
}

#define SV_IS(v, lit) ((v).len == sizeof(lit) - 1 && !memcmp((v).p, lit, sizeof(lit) - 1))
static bool sv_eq(wm_exi_sview a, wm_exi_sview b) { return a.len == b.len && !memcmp(a.p, b.p, a.len); }

static int refuse(wm_exi_xml_sink *s, const char *what, wm_exi_sview name)
{
    s->bad = true;
    snprintf(s->why, sizeof s->why, "%s \"%.*s\" cannot be written as XML", what, (int)(name.len > 40 ? 40 : name.len), name.p);
    return 1;
}

/* the local name and the URI's length: attributes of one tag rarely share
 * a local name, and namespace names are long (hashing them cost ~10 % of
 * decoding to XML); equal names still compare in full */
static uint32_t seen_hash(wm_exi_sview u, wm_exi_sview l)
{
    uint32_t h = 2166136261u ^ u.len;
    for (uint32_t i = 0; i < l.len; i++) h = (h ^ (uint8_t)l.p[i]) * 16777619u;
    return h ^ (h >> 15);
}

/* Adds {u}l to the open tag's names; false if it is there already. Names
 * are compared as text: a stream may add the same string twice to a
 * partition, and two ids of one name are still one XML attribute name. */
static bool seen_add(wm_exi_xml_sink *s, wm_exi_sview u, wm_exi_sview l)
{
    if ((s->n_seen + 1) * 2 > s->cap_seen) {
        uint32_t nc = s->cap_seen ? s->cap_seen * 2 : 16;
        struct wm_exi_xml_seen *n = calloc(nc, sizeof *n), *old = s->seen;
        if (!n) { s->oom = true; return true; }
        for (uint32_t i = 0; i < s->cap_seen; i++)
            if (old[i].gen == s->gen)
                for (uint32_t j = seen_hash(old[i].uri, old[i].local) & (nc - 1);; j = (j + 1) & (nc - 1))
                    if (n[j].gen != s->gen) { n[j] = old[i]; break; }
        free(old);
        s->seen = n;
        s->cap_seen = nc;
    }
    for (uint32_t j = seen_hash(u, l) & (s->cap_seen - 1);; j = (j + 1) & (s->cap_seen - 1)) {
        struct wm_exi_xml_seen *e = &s->seen[j];
        if (e->gen != s->gen) { *e = (struct wm_exi_xml_seen){ u, l, s->gen }; s->n_seen++; return true; }
        if (sv_eq(e->uri, u) && sv_eq(e->local, l)) return false;
    }
}

static void put(wm_exi_xml_sink *s, const char *p, size_t n)
{
    if (s->oom) return;
    if (s->len + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 4096;
        while (nc < s->len + n + 1) nc *= 2;
        char *b = realloc(s->buf, nc);
        if (!b) { s->oom = true; return; }
        s->buf = b;
        s->cap = nc;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = 0;
}

static void puts_(wm_exi_xml_sink *s, const char *p) { put(s, p, strlen(p)); }

static void escaped(wm_exi_xml_sink *s, const char *p, size_t n, bool attr)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (p[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = attr ? "&quot;" : NULL; break;
        case '\n': rep = attr ? "&#10;" : NULL; break;
        case '\t': rep = attr ? "&#9;" : NULL; break;
        case '\r': rep = "&#13;"; break;
        }
        if (!rep) continue;
        put(s, p + from, i - from);
        puts_(s, rep);
        from = i + 1;
    }
    put(s, p + from, n - from);
}

/* How a namespace is written (Namespaces in XML 1.0 §3 "Reserved Prefixes
 * and Namespace Names"): no prefix (no namespace: URI id 0, or another entry
 * with the empty string; the sink never declares a default namespace, so an
 * unprefixed name or QName value is in no namespace), "xml" (the XML
 * namespace: bound by definition, never declared, and no other prefix may be
 * bound to it), not writable (the xmlns namespace: its prefix only declares
 * namespaces and no other prefix may be bound to it), or a declared prefix
 * (never "xml"/"xmlns" nor another starting with "xml"). */
enum { NS_NONE, NS_XML, NS_XMLNS, NS_DECLARED };
static int ns_kind_text(wm_exi_sview u)
{
    if (!u.len) return NS_NONE;
    if (SV_IS(u, XML_URI)) return NS_XML;
    if (SV_IS(u, XMLNS_URI)) return NS_XMLNS;
    return NS_DECLARED;
}

/* ids 0 and 1 are "" and the XML namespace in every string table (§7.3.1) */
static int ns_kind(uint32_t uri, wm_exi_sview u) { return uri == 0 ? NS_NONE : uri == 1 ? NS_XML : ns_kind_text(u); }

/* the prefix of URI id `uri` (not NS_NONE, not NS_XMLNS) */
static void prefix(wm_exi_xml_sink *s, uint32_t uri, wm_exi_sview u)
{
    char tmp[32];
    if (ns_kind(uri, u) == NS_XML) { puts_(s, "xml"); return; }
    const char *pre = uri == 2 ? "xsi" : (snprintf(tmp, sizeof tmp, "ns%u", uri), tmp);
    puts_(s, pre);
}

static bool need_decl(wm_exi_xml_sink *s, uint32_t uri)
{
    if (uri >= s->n_bound) {
        uint32_t n = uri + 16;
        uint32_t *b = realloc(s->bound, n * sizeof *b);
        if (!b) { s->oom = true; return false; }
        memset(b + s->n_bound, 0, (n - s->n_bound) * sizeof *b);
        s->bound = b;
        s->n_bound = n;
    }
    return s->bound[uri] == 0;
}

/* Namespaces in XML 1.0 §3: a declaration's value MUST be a URI reference
 * (libxml2 reports anything else as a namespace error). */
static bool uri_ref(wm_exi_xml_sink *s, wm_exi_sview u)
{
    /* a feed declares the same namespace in every document: the last one
     * that passed is kept */
    if (s->ok_uri && s->ok_len == u.len && !memcmp(s->ok_uri, u.p, u.len)) return true;
    char *z = malloc((size_t)u.len + 1);
    if (!z) { s->oom = true; return true; }
    memcpy(z, u.p, u.len);
    z[u.len] = 0;
    xmlURIPtr p = xmlParseURI(z);
    if (p) {
        xmlFreeURI(p);
        free(s->ok_uri);
        s->ok_uri = z;
        s->ok_len = u.len;
        return true;
    }
    free(z);
    refuse(s, "namespace name (not a URI reference)", u);
    return false;
}

static void declare(wm_exi_xml_sink *s, uint32_t uri, wm_exi_sview u)
{
    if (ns_kind(uri, u) != NS_DECLARED || !need_decl(s, uri) || !uri_ref(s, u)) return;
    s->bound[uri] = s->depth;
    puts_(s, " xmlns:");
    prefix(s, uri, u);
    puts_(s, "=\"");
    escaped(s, u.p, u.len, true);
    puts_(s, "\"");
}

static void close_open(wm_exi_xml_sink *s)
{
    if (s->open) { puts_(s, ">"); s->open = false; }
}

/* "prefix:" for a qname in URI `uri` (nothing for no namespace) */
static void qname_prefix(wm_exi_xml_sink *s, uint32_t uri, wm_exi_sview u)
{
    if (ns_kind(uri, u) == NS_NONE) return;
    prefix(s, uri, u);
    puts_(s, ":");
}

/* Writes ` xsi:type="QNAME"` (declaring the prefix QNAME needs first) for
 * the decoder's "{uri}local" value (the local name is an NCName, so the last
 * '}' ends the URI). The XML namespace is written xml: and the XSI
 * namespace xsi: (both in scope already); the xmlns namespace cannot be
 * named by a QName (§3: its prefix only declares namespaces, no other may be
 * bound to it); any other namespace gets a prefix declared on this tag,
 * where it is used ("xsd" for XML Schema's, "t" otherwise: the tag has one
 * xsi:type and the sink's own prefixes are "ns<id>", "xsi" and "xml"). */
static int xsi_type_value(wm_exi_xml_sink *s, const char *v, uint32_t vl)
{
    const char *close = memrchr(v, '}', vl);
    wm_exi_sview tu = { v + 1, (uint32_t)(close - v - 1) }, tl = { close + 1, (uint32_t)(v + vl - close - 1) };
    const char *pre = NULL;
    switch (ns_kind_text(tu)) {
    case NS_NONE: break;
    case NS_XML: pre = "xml"; break;
    case NS_XMLNS: return refuse(s, "xsi:type value in the xmlns namespace", tl);
    default:
        if (SV_IS(tu, XSI_URI)) pre = "xsi";
        else {
            if (!uri_ref(s, tu)) return 1;
            pre = SV_IS(tu, XSD_URI) ? "xsd" : "t";
            puts_(s, " xmlns:");
            puts_(s, pre);
            puts_(s, "=\"");
            escaped(s, tu.p, tu.len, true);
            puts_(s, "\"");
        }
    }
    puts_(s, " xsi:type=\"");
    if (pre) { puts_(s, pre); puts_(s, ":"); }
    escaped(s, tl.p, tl.len, true);
    puts_(s, "\"");
    return 0;
}

int wm_exi_xml_sink_event(void *user, const wm_exi_event *ev)
{
    wm_exi_xml_sink *s = user;
    switch (ev->type) {
    case WM_EXI_EV_SE:
        if (ns_kind(ev->uri_id, ev->uri) == NS_XMLNS) return refuse(s, "element in the xmlns namespace", ev->local);
        close_open(s);
        s->depth = ev->depth;
        s->gen++;
        s->n_seen = 0;
        puts_(s, "<");
        qname_prefix(s, ev->uri_id, ev->uri);
        put(s, ev->local.p, ev->local.len);
        declare(s, ev->uri_id, ev->uri);
        s->open = true;
        return s->bad;
    case WM_EXI_EV_AT:
        if (ns_kind(ev->uri_id, ev->uri) == NS_XMLNS || (ns_kind(ev->uri_id, ev->uri) == NS_NONE && SV_IS(ev->local, "xmlns")))
            return refuse(s, "attribute (a namespace declaration)", ev->local);
        if (!seen_add(s, ns_kind(ev->uri_id, ev->uri) == NS_NONE ? (wm_exi_sview){ "", 0 } : ev->uri, ev->local))
            return refuse(s, "second attribute", ev->local);
        declare(s, ev->uri_id, ev->uri);
        if (s->bad) return 1;
        if (ev->xsi && ev->value.kind == WM_EXI_DT_QNAME) {
            if (xsi_type_value(s, ev->value.text, ev->value.len)) return 1;
            break;
        }
        puts_(s, " ");
        qname_prefix(s, ev->uri_id, ev->uri);
        put(s, ev->local.p, ev->local.len);
        puts_(s, "=\"");
        escaped(s, ev->value.text, ev->value.len, true);
        puts_(s, "\"");
        break;
    case WM_EXI_EV_CH:
        close_open(s);
        escaped(s, ev->value.text, ev->value.len, false);
        break;
    case WM_EXI_EV_EE:
        if (s->open) { puts_(s, "/>"); s->open = false; }
        else {
            puts_(s, "</");
            qname_prefix(s, ev->uri_id, ev->uri);
            put(s, ev->local.p, ev->local.len);
            puts_(s, ">");
        }
        for (uint32_t i = 0; i < s->n_bound; i++)
            if (s->bound[i] >= ev->depth) s->bound[i] = 0;
        s->depth = ev->depth ? ev->depth - 1 : 0;
        break;
    case WM_EXI_EV_ED:
        puts_(s, "\n");
        break;
    default:
        break;
    }
    return 0;
}

/* ------------------------------------------------------------ XML reader */

typedef struct xattr {
    const char *uri, *local, *val;
    char *owned;
    int rank;
} xattr;

static int cmp_xattr(const void *pa, const void *pb)
{
    const xattr *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank - b->rank;
    int c = strcmp(a->local, b->local);
    return c ? c : strcmp(a->uri, b->uri);
}

/* The xsi:type value (an xs:QName: whitespace collapsed, prefix resolved
 * in the element's scope, XML Schema 1.0 part 2 §3.2.18) as the encoder's
 * "{uri}local" in *out (malloc'ed). An undeclared prefix is an error, not
 * "no namespace" (Namespaces in XML 1.0 §3 "Prefix Declared"; "xml" is
 * declared by definition, "xmlns" names no namespace a type can be in). */
static wm_exi_status xsi_type_expanded(xmlTextReaderPtr rd, const char *v, char **out, wm_exi_error *err)
{
    *out = NULL;
    size_t n = strlen(v);
    while (n && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')) { v++; n--; }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' || v[n - 1] == '\r')) n--;
    const char *colon = memchr(v, ':', n);
    size_t pl = colon ? (size_t)(colon - v) : 0;
    const char *lp = colon ? colon + 1 : v;
    size_t ll = n - (size_t)(lp - v);
    char *pfx = malloc(pl + 1);
    if (!pfx) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    memcpy(pfx, v, pl);
    pfx[pl] = 0;
    xmlChar *ns = NULL;
    if (!colon) ns = xmlTextReaderLookupNamespace(rd, NULL); /* the default namespace, if any */
    else if (strcmp(pfx, "xmlns")) ns = xmlTextReaderLookupNamespace(rd, (const xmlChar *)pfx);
    free(pfx);
    if (colon && !ns) {
        xmlNodePtr el = xmlTextReaderCurrentNode(rd); /* the attribute: its element has the line */
        if (el && el->type == XML_ATTRIBUTE_NODE) el = el->parent;
        return wm_exi_fail(err, WM_EXI_E_INPUT, 0, "xsi:type=\"%.*s\": prefix '%.*s' is not declared (line %ld)",
                           (int)(n > 80 ? 80 : n), v, (int)(pl > 40 ? 40 : pl), v, el ? xmlGetLineNo(el) : -1L);
    }
    size_t ul = ns ? strlen((const char *)ns) : 0;
    *out = malloc(ul + ll + 3);
    if (*out) {
        (*out)[0] = '{';
        memcpy(*out + 1, ns ? (const char *)ns : "", ul);
        (*out)[ul + 1] = '}';
        memcpy(*out + ul + 2, lp, ll);
        (*out)[ul + ll + 2] = 0;
    }
    xmlFree(ns);
    return *out ? WM_EXI_OK : wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
}

static wm_exi_status element_start(wm_exi_encoder *e, xmlTextReaderPtr rd, wm_exi_error *err)
{
    const char *uri = (const char *)xmlTextReaderConstNamespaceUri(rd);
    const char *local = (const char *)xmlTextReaderConstLocalName(rd);
    if (!uri) uri = "";
    wm_exi_status st = wm_exi_encode_se(e, uri, strlen(uri), local, strlen(local));
    if (st) return st;
    int n = xmlTextReaderAttributeCount(rd);
    if (n <= 0) return WM_EXI_OK;
    xattr *a = calloc((size_t)n, sizeof *a);
    if (!a) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    int k = 0;
    for (int ok = xmlTextReaderMoveToFirstAttribute(rd); ok == 1; ok = xmlTextReaderMoveToNextAttribute(rd)) {
        if (xmlTextReaderIsNamespaceDecl(rd)) continue;
        const char *au = (const char *)xmlTextReaderConstNamespaceUri(rd);
        xattr *x = &a[k++];
        x->uri = au ? au : "";
        x->local = (const char *)xmlTextReaderConstLocalName(rd);
        x->val = (const char *)xmlTextReaderConstValue(rd);
        x->rank = 2;
        if (!strcmp(x->uri, XSI_URI) && !strcmp(x->local, "type")) {
            x->rank = 0;
            wm_exi_status qs = xsi_type_expanded(rd, x->val, &x->owned, err);
            if (qs) {
                for (int i = 0; i < k; i++) free(a[i].owned);
                free(a);
                return qs;
            }
            x->val = x->owned;
        } else if (!strcmp(x->uri, XSI_URI) && !strcmp(x->local, "nil")) x->rank = 1;
    }
    xmlTextReaderMoveToElement(rd);
    if (k > 1) qsort(a, (size_t)k, sizeof *a, cmp_xattr);
    for (int i = 0; i < k && !st; i++)
        st = wm_exi_encode_at(e, a[i].uri, strlen(a[i].uri), a[i].local, strlen(a[i].local), a[i].val, strlen(a[i].val));
    for (int i = 0; i < k; i++) free(a[i].owned);
    free(a);
    return st;
}

/* The first namespace error libxml2 reports (an undeclared prefix, the XML
 * or xmlns namespace bound to another prefix, "xmlns:p" bound to "", ...):
 * libxml2 goes on, but such a document is not namespace-well-formed and has
 * no infoset EXI could carry (a prefixed name would become a local name
 * with a colon, which the decoder refuses). */
typedef struct ns_error {
    int line; /* 0: none yet */
    char msg[120];
} ns_error;

#if LIBXML_VERSION >= 21200
static void on_xml_error(void *arg, const xmlError *e)
#else
static void on_xml_error(void *arg, xmlErrorPtr e)
#endif
{
    ns_error *ne = arg;
    if (ne->line || !e || e->domain != XML_FROM_NAMESPACE || e->level < XML_ERR_ERROR) return;
    ne->line = e->line > 0 ? e->line : -1;
    const char *m = e->message ? e->message : "";
    snprintf(ne->msg, sizeof ne->msg, "%.*s", (int)strcspn(m, "\n"), m);
}

wm_exi_status wm_exi_encode_xml(wm_exi_encoder *e, const char *xml, size_t len, uint8_t *out, size_t cap,
                                size_t *out_len, wm_exi_error *err)
{
    if (len > INT32_MAX) return wm_exi_fail(err, WM_EXI_E_LENGTH, 0, "XML input too large");
    wm_exi_status st = wm_exi_encode_start(e, out, cap, err);
    if (st) return st;
    /* an EXI fragment (§4) may have several top-level elements: read it
     * inside a wrapper element that is not encoded */
    char *wrapped = NULL;
    int skip = 0;
    if (e->opts.fragment) {
        const char *body = xml;
        size_t blen = len;
        if (blen >= 5 && !memcmp(body, "<?xml", 5)) {
            const char *q = memchr(body, '>', blen);
            if (q) { blen -= (size_t)(q + 1 - body); body = q + 1; }
        }
        static const char open_[] = "<wm-exi-fragment>", close_[] = "</wm-exi-fragment>";
        wrapped = malloc(blen + sizeof open_ + sizeof close_);
        if (!wrapped) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
        memcpy(wrapped, open_, sizeof open_ - 1);
        memcpy(wrapped + sizeof open_ - 1, body, blen);
        memcpy(wrapped + sizeof open_ - 1 + blen, close_, sizeof close_ - 1);
        xml = wrapped;
        len = blen + sizeof open_ - 1 + sizeof close_ - 1;
        skip = 1;
    }
    xmlResetLastError(); /* the reason below must be this parse's */
    /* No XML_PARSE_NOENT: substituting entities would read external ones
     * (a local file's content into the stream); a reference to a declared
     * entity arrives as a node of its own and is refused below. */
    xmlTextReaderPtr rd = xmlReaderForMemory(xml, (int)len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!rd) { free(wrapped); return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "cannot create the XML reader"); }
    ns_error nse = { 0 };
    xmlTextReaderSetStructuredErrorHandler(rd, on_xml_error, &nse);
    int ret;
    /* text is gathered so that text split around comments is one CH */
    char *text = NULL;
    size_t tlen = 0, tcap = 0;
    while (!st && (ret = xmlTextReaderRead(rd)) == 1) {
        if (nse.line) {
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0, "XML is not namespace-well-formed (line %d): %s", nse.line, nse.msg);
            break;
        }
        int type = xmlTextReaderNodeType(rd);
        if (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_CDATA || type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE ||
            type == XML_READER_TYPE_WHITESPACE) {
            const char *v = (const char *)xmlTextReaderConstValue(rd);
            size_t n = v ? strlen(v) : 0;
            if (tlen + n + 1 > tcap) {
                size_t nc = (tlen + n + 1) * 2;
                char *t2 = realloc(text, nc);
                if (!t2) { st = wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory"); break; }
                text = t2;
                tcap = nc;
            }
            memcpy(text + tlen, v, n);
            tlen += n;
            continue;
        }
        if (type == XML_READER_TYPE_ENTITY_REFERENCE) {
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0,
                             "entity reference &%s; (line %d): only the predefined entities and character references are "
                             "read (declared entities are not expanded, external ones never loaded)",
                             (const char *)xmlTextReaderConstName(rd), xmlTextReaderGetParserLineNumber(rd));
            break;
        }
        if (type != XML_READER_TYPE_ELEMENT && type != XML_READER_TYPE_END_ELEMENT) continue;
        if (tlen) { st = wm_exi_encode_ch(e, text, tlen); tlen = 0; if (st) break; }
        if (skip && xmlTextReaderDepth(rd) == 0) continue; /* the fragment wrapper */
        if (type == XML_READER_TYPE_ELEMENT) {
            bool empty = xmlTextReaderIsEmptyElement(rd);
            st = element_start(e, rd, err);
            if (!st && empty) st = wm_exi_encode_ee(e);
        } else st = wm_exi_encode_ee(e);
    }
    if (!st && ret != 0) {
        /* libxml2's own reason; its depth limit (256 levels without
         * XML_PARSE_HUGE) is a bound of the reader, not a fault of the XML */
        const xmlError *le = xmlGetLastError();
        const char *why = le && le->message ? le->message : "";
        int wl = (int)strcspn(why, "\n");
        unsigned lim = 0;
        if (sscanf(why, "Excessive depth in document: %u", &lim) == 1)
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0, "XML nested deeper than libxml2's limit of %u levels (near line %d)", lim,
                             xmlTextReaderGetParserLineNumber(rd));
        else
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0, "XML is not well-formed (near line %d)%s%.*s",
                             xmlTextReaderGetParserLineNumber(rd), wl ? ": " : "", wl, why);
    }
    xmlFreeTextReader(rd);
    free(text);
    free(wrapped);
    if (st) return st;
    return wm_exi_encode_end(e, out_len);
}
