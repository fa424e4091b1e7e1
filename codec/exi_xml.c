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

static void pfx_free(struct wm_exi_xml_pfx *px);

void wm_exi_xml_sink_free(wm_exi_xml_sink *s)
{
    pfx_free(s->px);
    free(s->buf);
    free(s->bound);
    free(s->seen);
    free(s->ok_uri);
    memset(s, 0, sizeof *s);
}

#define SV_IS(v, lit) ((v).len == sizeof(lit) - 1 && !memcmp((v).p, lit, sizeof(lit) - 1))
static bool sv_eq(wm_exi_sview a, wm_exi_sview b)
{
    return a.len == b.len && (a.p == b.p || !a.len || (a.p[0] == b.p[0] && !memcmp(a.p, b.p, a.len)));
}

static int refuse(wm_exi_xml_sink *s, const char *what, wm_exi_sview name)
{
    s->bad = true;
    snprintf(s->why, sizeof s->why, "%s \"%.*s\" cannot be written as XML", what, (int)(name.len > 40 ? 40 : name.len), name.p);
    return 1;
}

/* from the lengths and the local name's first and last bytes: attributes
 * of one tag rarely share all four, and hashing every byte (namespace names
 * are long) was a tenth of decoding to XML; equal names still compare in full */
static uint32_t seen_hash(wm_exi_sview u, wm_exi_sview l)
{
    uint32_t h = u.len << 24 ^ l.len << 16;
    if (l.len) h ^= (uint32_t)(uint8_t)l.p[0] << 8 | (uint8_t)l.p[l.len - 1];
    h *= 0x9e3779b1u;
    return h ^ (h >> 16); /* the table takes the low bits */
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

/* The buffer grows here only, out of the way of the writers below: they
 * run for every event of `wmctl exi decode` and of the decode-to-XML
 * benchmark, where a call to memcpy and a capacity check per piece were
 * most of the time. False when out of memory (s->oom, nothing written from
 * then on). */
static __attribute__((noinline)) bool grow(wm_exi_xml_sink *s, size_t n)
{
    if (s->oom) return false;
    size_t nc = s->cap ? s->cap * 2 : 4096;
    while (nc < s->len + n + 1) nc *= 2;
    char *b = realloc(s->buf, nc);
    if (!b) { s->oom = true; return false; }
    s->buf = b;
    s->cap = nc;
    return true;
}

/* n bytes from p to o, without a call: two overlapping loads and stores
 * (names and values are short); only p[0..n) is read */
static inline void copy_short(char *o, const char *p, size_t n)
{
    /* the first and the last sizeof(T) bytes, overlapping in the middle */
#define OVERLAPPING(T)                                                                                      \
    do {                                                                                                    \
        T a_, b_;                                                                                           \
        memcpy(&a_, p, sizeof a_);                                                                          \
        memcpy(&b_, p + n - sizeof b_, sizeof b_);                                                          \
        memcpy(o, &a_, sizeof a_);                                                                          \
        memcpy(o + n - sizeof b_, &b_, sizeof b_);                                                          \
    } while (0)
    if (n >= 8) {
        if (n > 16) memcpy(o, p, n);
        else OVERLAPPING(uint64_t);
    }
    else if (n >= 4) OVERLAPPING(uint32_t);
    else if (n >= 2) OVERLAPPING(uint16_t);
    else if (n) *o = *p;
#undef OVERLAPPING
}

static inline __attribute__((always_inline)) void put(wm_exi_xml_sink *s, const char *p, size_t n)
{
    if (__builtin_expect(s->oom || s->len + n + 1 > s->cap, 0) && !grow(s, n)) return;
    char *o = s->buf + s->len;
    if (__builtin_constant_p(n)) memcpy(o, p, n);
    else copy_short(o, p, n);
    s->len += n;
    s->buf[s->len] = 0;
}

#define puts_(s, lit) put((s), "" lit, sizeof(lit) - 1) /* literals only */

/* Room for n more bytes and the NUL at the end of the output, or NULL
 * (out of memory): an event reserves what it writes at most, then writes
 * without checks and ends with done(). */
static inline char *reserve(wm_exi_xml_sink *s, size_t n)
{
    if (__builtin_expect(s->oom || s->len + n + 1 > s->cap, 0) && !grow(s, n)) return NULL;
    return s->buf + s->len;
}

static inline void done(wm_exi_xml_sink *s, char *o)
{
    s->len = (size_t)(o - s->buf);
    *o = 0;
}

#define PREFIX_MAX 13 /* "ns" + 10 digits + ':' */
#define LIT(o, lit) (memcpy((o), "" lit, sizeof(lit) - 1), (o) + sizeof(lit) - 1)

static inline char *w_copy(char *o, wm_exi_sview v)
{
    copy_short(o, v.p, v.len);
    return o + v.len;
}

/* a short constant string only known at run time */
static __attribute__((noinline)) void put_cstr(wm_exi_xml_sink *s, const char *p) { put(s, p, strlen(p)); }

/* Bytes that need a reference in attribute values (attr = 1) and in text
 * (attr = 0): what escaped() replaces. */
static const uint8_t esc_class[256] = {
    ['&'] = 3, ['<'] = 3, ['>'] = 3, ['\r'] = 3, ['"'] = 1, ['\n'] = 1, ['\t'] = 1,
};

static void escaped(wm_exi_xml_sink *s, const char *p, size_t n, bool attr)
{
    /* most values have nothing to replace: one scan, one copy */
    const uint8_t need = attr ? 1 : 2;
    size_t i = 0;
    while (i < n && !(esc_class[(uint8_t)p[i]] & need)) i++;
    if (i == n) { put(s, p, n); return; }
    size_t from = 0;
    for (; i < n; i++) {
        const char *rep;
        size_t rl;
        switch (p[i]) {
        case '&': rep = "&amp;"; rl = 5; break;
        case '<': rep = "&lt;"; rl = 4; break;
        case '>': rep = "&gt;"; rl = 4; break;
        case '"': if (!attr) continue; rep = "&quot;"; rl = 6; break;
        case '\n': if (!attr) continue; rep = "&#10;"; rl = 5; break;
        case '\t': if (!attr) continue; rep = "&#9;"; rl = 4; break;
        case '\r': rep = "&#13;"; rl = 5; break;
        default: continue;
        }
        put(s, p + from, i - from);
        put(s, rep, rl);
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

/* An AT event's namespace kind in *k; nonzero (refused, s->why says why)
 * for what XML cannot hold: a namespace declaration as an attribute, or an
 * attribute the element has already (by expanded name). */
static int attr_admit(wm_exi_xml_sink *s, const wm_exi_event *ev, int *k)
{
    *k = ns_kind(ev->uri_id, ev->uri);
    if (*k == NS_XMLNS || (*k == NS_NONE && SV_IS(ev->local, "xmlns")))
        return refuse(s, "attribute (a namespace declaration)", ev->local);
    if (!seen_add(s, *k == NS_NONE ? (wm_exi_sview){ "", 0 } : ev->uri, ev->local))
        return refuse(s, "second attribute", ev->local);
    return 0;
}

/* the prefix of URI id `uri` (not NS_NONE, not NS_XMLNS) at o, at most
 * PREFIX_MAX - 1 bytes */
static char *w_prefix(char *o, int kind, uint32_t uri)
{
    if (kind == NS_XML) return LIT(o, "xml");
    if (uri == 2) return LIT(o, "xsi");
    char d[10];
    unsigned k = 0;
    do { d[k++] = (char)('0' + uri % 10); uri /= 10; } while (uri);
    o = LIT(o, "ns");
    while (k) *o++ = d[--k];
    return o;
}

/* "prefix:" for a qname in URI `uri` at o (nothing for no namespace), at
 * most PREFIX_MAX bytes */
static inline char *w_qname_prefix(char *o, int kind, uint32_t uri)
{
    if (kind == NS_NONE) return o;
    o = w_prefix(o, kind, uri);
    *o++ = ':';
    return o;
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

/* kind: ns_kind(uri, u) */
static void declare_slow(wm_exi_xml_sink *s, int kind, uint32_t uri, wm_exi_sview u)
{
    if (!need_decl(s, uri) || !uri_ref(s, u)) return;
    s->bound[uri] = s->depth;
    if (s->depth > s->bound_max) s->bound_max = s->depth;
    char *o = reserve(s, 7 + PREFIX_MAX + 2);
    if (!o) return;
    o = LIT(o, " xmlns:");
    o = w_prefix(o, kind, uri);
    done(s, LIT(o, "=\""));
    escaped(s, u.p, u.len, true);
    puts_(s, "\"");
}

static inline void declare(wm_exi_xml_sink *s, int kind, uint32_t uri, wm_exi_sview u)
{
    if (kind == NS_DECLARED && (uri >= s->n_bound || !s->bound[uri])) declare_slow(s, kind, uri, u);
}

static void close_open(wm_exi_xml_sink *s)
{
    if (s->open) { puts_(s, ">"); s->open = false; }
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
            put_cstr(s, pre);
            puts_(s, "=\"");
            escaped(s, tu.p, tu.len, true);
            puts_(s, "\"");
        }
    }
    puts_(s, " xsi:type=\"");
    if (pre) { put_cstr(s, pre); puts_(s, ":"); }
    escaped(s, tl.p, tl.len, true);
    puts_(s, "\"");
    return 0;
}

/* Lexical forms without a character escaped() replaces (§7.1: digits,
 * signs, '.', 'E', INF/NaN, date-time separators, base64/hex digits). */
static bool plain_lexical(uint8_t kind)
{
    switch (kind) {
    case WM_EXI_DT_BASE64: case WM_EXI_DT_HEX: case WM_EXI_DT_BOOLEAN: case WM_EXI_DT_DECIMAL: case WM_EXI_DT_FLOAT:
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: case WM_EXI_DT_DATETIME: return true;
    default: return false;
    }
}

/* true when p[0..n) needs no reference in an attribute value (no early
 * exit: values are short and almost always clean) */
static inline bool attr_clean(const char *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= esc_class[(uint8_t)p[i]];
    return !(acc & 1);
}



/* `<!--text-->` or `<?target data?>` (XML 1.0 §2.5, §2.6): a comment with
 * "--" or ending in '-', or PI data with "?>", has no XML form. */
static int write_cmpi(wm_exi_xml_sink *s, const wm_exi_event *ev)
{
    const char *t = ev->value.text ? ev->value.text : "";
    size_t n = ev->value.len;
    wm_exi_sview v = { t, (uint32_t)n };
    close_open(s);
    if (ev->type == WM_EXI_EV_CM) {
        if ((n && t[n - 1] == '-') || memmem(t, n, "--", 2)) return refuse(s, "comment", v);
        puts_(s, "<!--");
        put(s, t, n);
        puts_(s, "-->");
        return 0;
    }
    if (memmem(t, n, "?>", 2)) return refuse(s, "processing-instruction data", v);
    puts_(s, "<?");
    put(s, ev->local.p, ev->local.len);
    if (n) {
        puts_(s, " ");
        put(s, t, n);
    }
    puts_(s, "?>");
    return 0;
}

/* ------------------------------------------------ the stream's own prefixes */

/* Preserve.prefixes (§7.1.7, §4 NS): the prefixes a stream carries are
 * written instead of generated ones. A start tag is held until the events
 * that follow its SE are in (its NS events declare the prefixes, and one
 * with local-element-ns names the element's own), then written with them;
 * the declarations stay in scope until the element's end. A name whose
 * prefix is not bound to its namespace in scope (a stream that omits the
 * NS event, an attribute without a prefix partition entry) gets a
 * generated prefix declared on its tag, one no declaration in scope uses. */
typedef struct pbind {
    uint32_t depth;
    char *prefix, *uri;   /* owned, NUL-terminated ("" prefix: the default namespace) */
    uint32_t plen, ulen;
} pbind;

struct wm_exi_xml_pfx {
    pbind *b;             /* in-scope declarations, innermost last */
    uint32_t n, cap;
    bool active;          /* the document carries prefixes */
    bool pending;         /* a start tag waits for its NS events */
    wm_exi_sview uri, local, prefix;
    uint32_t uri_id, depth;
    bool has_prefix;
    struct pdecl { wm_exi_sview p, u; bool drop; } *decl; /* the pending tag's NS events */
    uint32_t n_decl, cap_decl;
    char **names;         /* per depth - 1: the written qname of the open element */
    uint32_t cap_names;
};

static void pfx_free(struct wm_exi_xml_pfx *px)
{
    if (!px) return;
    for (uint32_t i = 0; i < px->n; i++) free(px->b[i].prefix), free(px->b[i].uri);
    for (uint32_t i = 0; i < px->cap_names; i++) free(px->names[i]);
    free(px->b);
    free(px->decl);
    free(px->names);
    free(px);
}

static char *sv_dup(wm_exi_sview v)
{
    char *d = malloc((size_t)v.len + 1);
    if (d) {
        if (v.len) memcpy(d, v.p, v.len);
        d[v.len] = 0;
    }
    return d;
}

/* the innermost declaration of prefix p, NULL: none ("" unbound is no namespace) */
static const pbind *pfx_lookup(const struct wm_exi_xml_pfx *px, const char *p, uint32_t pl)
{
    for (uint32_t i = px->n; i-- > 0;)
        if (px->b[i].plen == pl && !memcmp(px->b[i].prefix, p, pl)) return &px->b[i];
    return NULL;
}

/* does prefix p (NULL-safe view) name namespace u in scope? */
static bool pfx_names(const struct wm_exi_xml_pfx *px, wm_exi_sview p, wm_exi_sview u)
{
    if (SV_IS(p, "xml")) return SV_IS(u, XML_URI);
    const pbind *b = pfx_lookup(px, p.p ? p.p : "", p.len);
    if (!b) return !p.len && !u.len; /* no default namespace declared: "" is no namespace */
    return b->ulen == u.len && !memcmp(b->uri, u.p, u.len);
}

static bool pfx_bind(wm_exi_xml_sink *s, wm_exi_sview p, wm_exi_sview u, uint32_t depth)
{
    struct wm_exi_xml_pfx *px = s->px;
    if (px->n == px->cap) {
        uint32_t nc = px->cap ? px->cap * 2 : 16;
        pbind *nb = realloc(px->b, nc * sizeof *nb);
        if (!nb) { s->oom = true; return false; }
        px->b = nb;
        px->cap = nc;
    }
    pbind *b = &px->b[px->n];
    b->prefix = sv_dup(p);
    b->uri = sv_dup(u);
    if (!b->prefix || !b->uri) {
        free(b->prefix), free(b->uri);
        s->oom = true;
        return false;
    }
    b->plen = p.len;
    b->ulen = u.len;
    b->depth = depth;
    px->n++;
    return true;
}

/* ` xmlns:p="u"` (` xmlns="u"` for the default namespace) */
static void pfx_write_decl(wm_exi_xml_sink *s, wm_exi_sview p, wm_exi_sview u)
{
    if (p.len) {
        puts_(s, " xmlns:");
        put(s, p.p, p.len);
    } else
        puts_(s, " xmlns");
    puts_(s, "=\"");
    escaped(s, u.p, u.len, true);
    puts_(s, "\"");
}

/* A prefix for namespace u (URI id `id`) in scope, declaring one on the open
 * tag if none is bound to it: *out is a view valid until the scope
 * changes. dflt: the default namespace may serve (elements, QName values;
 * not attributes). 0, or 1 with s->bad set. */
static int pfx_any(wm_exi_xml_sink *s, uint32_t id, wm_exi_sview u, bool dflt, uint32_t depth, wm_exi_sview *out)
{
    struct wm_exi_xml_pfx *px = s->px;
    if (!u.len) {
        *out = (wm_exi_sview){ "", 0 };
        if (!dflt || pfx_names(px, *out, u)) return 0;
        /* a default namespace is in scope: undeclare it here */
        if (!pfx_bind(s, *out, u, depth)) return 0;
        pfx_write_decl(s, *out, u);
        return 0;
    }
    if (SV_IS(u, XML_URI)) { *out = (wm_exi_sview){ "xml", 3 }; return 0; }
    if (SV_IS(u, XMLNS_URI)) return refuse(s, "name in the xmlns namespace", u);
    for (uint32_t i = px->n; i-- > 0;) {
        const pbind *b = &px->b[i];
        if (b->ulen != u.len || memcmp(b->uri, u.p, u.len) || (!b->plen && !dflt)) continue;
        if (pfx_lookup(px, b->prefix, b->plen) == b) { *out = (wm_exi_sview){ b->prefix, b->plen }; return 0; }
    }
    if (!uri_ref(s, u)) return 1;
    char gen[PREFIX_MAX + 16];
    char *e = w_prefix(gen, NS_DECLARED, id);
    size_t gl = (size_t)(e - gen);
    while (pfx_lookup(px, gen, (uint32_t)gl) && gl < sizeof gen - 1) gen[gl++] = '_';
    wm_exi_sview g = { gen, (uint32_t)gl };
    if (!pfx_bind(s, g, u, depth)) return 0;
    pfx_write_decl(s, g, u);
    const pbind *b = &px->b[px->n - 1];
    *out = (wm_exi_sview){ b->prefix, b->plen };
    return 0;
}

/* Writes the held start tag: its name with the stream's prefix and its NS
 * events as declarations (Namespaces in XML 1.0 §3 checked: xml only for its
 * namespace and never declared, xmlns never, no prefix bound to ""). */
static int pfx_flush(wm_exi_xml_sink *s)
{
    struct wm_exi_xml_pfx *px = s->px;
    px->pending = false;
    uint32_t first = px->n, d = px->depth;
    for (uint32_t i = 0; i < px->n_decl; i++) {
        wm_exi_sview p = px->decl[i].p, u = px->decl[i].u;
        if (SV_IS(p, "xml")) {
            if (SV_IS(u, XML_URI)) continue; /* bound by definition: never declared */
            return refuse(s, "prefix xml bound to", u);
        }
        if (SV_IS(p, "xmlns")) return refuse(s, "prefix xmlns declared for", u);
        if (SV_IS(u, XML_URI) || SV_IS(u, XMLNS_URI)) return refuse(s, "namespace bound to another prefix", u);
        if (p.len && !u.len) return refuse(s, "prefix bound to no namespace", p);
        for (uint32_t j = first; j < px->n; j++)
            if (px->b[j].plen == p.len && !memcmp(px->b[j].prefix, p.p, p.len)) return refuse(s, "prefix declared twice", p);
        if (u.len && !uri_ref(s, u)) return 1;
        /* an element in no namespace cannot be under a default namespace
         * declared on its own tag (a stream may say so; XML cannot): that
         * declaration is left out, and a name below that needs it gets one
         * of its own */
        if (!p.len && u.len && !px->uri.len) {
            px->decl[i].drop = true;
            continue;
        }
        if (!pfx_bind(s, p, u, d)) return 0;
    }
    /* the element's prefix: local-element-ns, else the SE's own (§7.1.7) */
    wm_exi_sview ep = px->prefix;
    bool ok = px->has_prefix && pfx_names(px, ep, px->uri);
    char *o = reserve(s, 2);
    if (!o) return 0;
    if (s->open) *o++ = '>';
    *o++ = '<';
    done(s, o);
    s->open = true;
    size_t name_at = s->len;
    if (!ok) {
        /* the generated declaration is written here, before the name: moved after it below */
        size_t before = s->len;
        if (pfx_any(s, px->uri_id, px->uri, true, d, &ep)) return 1;
        if (s->oom) return 0;
        size_t decl_len = s->len - before;
        char *decl = decl_len ? malloc(decl_len) : NULL;
        if (decl_len && !decl) { s->oom = true; return 0; }
        if (decl_len) memcpy(decl, s->buf + before, decl_len);
        s->len = before;
        s->buf[s->len] = 0;
        if (ep.len) { put(s, ep.p, ep.len); puts_(s, ":"); }
        put(s, px->local.p, px->local.len);
        if (decl_len) put(s, decl, decl_len);
        free(decl);
    } else {
        if (ep.len) { put(s, ep.p, ep.len); puts_(s, ":"); }
        put(s, px->local.p, px->local.len);
    }
    for (uint32_t i = 0; i < px->n_decl; i++)
        if (!SV_IS(px->decl[i].p, "xml") && !px->decl[i].drop) pfx_write_decl(s, px->decl[i].p, px->decl[i].u);
    if (s->oom) return 0;
    /* the end tag's name */
    if (d > px->cap_names) {
        uint32_t nc = d + 16;
        char **nn = realloc(px->names, nc * sizeof *nn);
        if (!nn) { s->oom = true; return 0; }
        memset(nn + px->cap_names, 0, (nc - px->cap_names) * sizeof *nn);
        px->names = nn;
        px->cap_names = nc;
    }
    size_t nl = s->len - name_at;
    const char *nm = s->buf + name_at;
    const char *sp = memchr(nm, ' ', nl); /* the name ends where the declarations start */
    if (sp) nl = (size_t)(sp - nm);
    free(px->names[d - 1]);
    px->names[d - 1] = sv_dup((wm_exi_sview){ nm, (uint32_t)nl });
    if (!px->names[d - 1]) s->oom = true;
    return 0;
}

/* One event of a stream with prefixes; returns the callback's answer. */
static int pfx_event(wm_exi_xml_sink *s, const wm_exi_event *ev)
{
    struct wm_exi_xml_pfx *px = s->px;
    if (ev->type == WM_EXI_EV_NS) {
        if (!px->pending) return refuse(s, "namespace declaration outside a start tag", ev->prefix);
        if (px->n_decl == px->cap_decl) {
            uint32_t nc = px->cap_decl ? px->cap_decl * 2 : 8;
            struct pdecl *nd = realloc(px->decl, nc * sizeof *nd);
            if (!nd) { s->oom = true; return 0; }
            px->decl = nd;
            px->cap_decl = nc;
        }
        px->decl[px->n_decl++] = (struct pdecl){ ev->prefix, ev->uri, false };
        if (ev->local_ns) {
            px->prefix = ev->prefix;
            px->has_prefix = true;
        }
        return 0;
    }
    if (px->pending && (pfx_flush(s) || s->bad)) return 1;
    char *o;
    switch (ev->type) {
    case WM_EXI_EV_SE:
        if (ns_kind(ev->uri_id, ev->uri) == NS_XMLNS) return refuse(s, "element in the xmlns namespace", ev->local);
        px->pending = true;
        px->uri = ev->uri;
        px->uri_id = ev->uri_id;
        px->local = ev->local;
        px->prefix = ev->prefix;
        px->has_prefix = ev->has_prefix;
        px->depth = ev->depth;
        px->n_decl = 0;
        s->depth = ev->depth;
        s->gen++;
        s->n_seen = 0;
        return 0;
    case WM_EXI_EV_AT: {
        int k;
        if (attr_admit(s, ev, &k)) return 1;
        wm_exi_sview ap = ev->prefix;
        /* an attribute in a namespace needs a non-empty prefix bound to it */
        if (k == NS_NONE) ap = (wm_exi_sview){ "", 0 };
        else if (!ev->has_prefix || !ap.len || !pfx_names(px, ap, ev->uri))
            if (pfx_any(s, ev->uri_id, ev->uri, false, s->depth, &ap)) return 1;
        if (ev->xsi && ev->value.kind == WM_EXI_DT_QNAME) {
            const char *v = ev->value.text, *close = memrchr(v, '}', ev->value.len);
            wm_exi_sview tu = { v + 1, (uint32_t)(close - v - 1) }, tl = { close + 1, (uint32_t)(v + ev->value.len - close - 1) };
            if (SV_IS(tu, XMLNS_URI)) return refuse(s, "xsi:type value in the xmlns namespace", tl);
            wm_exi_sview vp = ev->vprefix;
            if (!ev->has_vprefix || !pfx_names(px, vp, tu)) {
                /* "" for no namespace needs the default namespace undeclared,
                 * which the element's own unprefixed name may forbid */
                if (!tu.len && !pfx_names(px, (wm_exi_sview){ "", 0 }, tu)) {
                    const char *nm = px->names[s->depth - 1];
                    const pbind *db = pfx_lookup(px, "", 0);
                    if ((nm && !strchr(nm, ':')) || (db && db->depth == s->depth))
                        return refuse(s, "xsi:type value in no namespace under a default namespace", tl);
                }
                if (pfx_any(s, 0, tu, true, s->depth, &vp)) return 1;
            }
            puts_(s, " ");
            if (ap.len) { put(s, ap.p, ap.len); puts_(s, ":"); }
            put(s, ev->local.p, ev->local.len);
            puts_(s, "=\"");
            if (vp.len) { put(s, vp.p, vp.len); puts_(s, ":"); }
            escaped(s, tl.p, tl.len, true);
            puts_(s, "\"");
            return s->bad;
        }
        puts_(s, " ");
        if (ap.len) { put(s, ap.p, ap.len); puts_(s, ":"); }
        put(s, ev->local.p, ev->local.len);
        puts_(s, "=\"");
        escaped(s, ev->value.text, ev->value.len, true);
        puts_(s, "\"");
        return s->bad;
    }
    case WM_EXI_EV_EE: {
        const char *nm = ev->depth && ev->depth <= px->cap_names ? px->names[ev->depth - 1] : NULL;
        if (s->open) puts_(s, "/>");
        else if (nm) {
            puts_(s, "</");
            put(s, nm, strlen(nm));
            puts_(s, ">");
        }
        s->open = false;
        while (px->n && px->b[px->n - 1].depth >= ev->depth) {
            px->n--;
            free(px->b[px->n].prefix), free(px->b[px->n].uri);
        }
        s->depth = ev->depth ? ev->depth - 1 : 0;
        return 0;
    }
    case WM_EXI_EV_CH:
        close_open(s);
        escaped(s, ev->value.text, ev->value.len, false);
        return 0;
    case WM_EXI_EV_ED:
        px->active = false;
        if ((o = reserve(s, 1))) done(s, LIT(o, "\n"));
        return 0;
    case WM_EXI_EV_CM: case WM_EXI_EV_PI:
        return write_cmpi(s, ev);
    default:
        return 0;
    }
}

int wm_exi_xml_sink_event(void *user, const wm_exi_event *ev)
{
    wm_exi_xml_sink *s = user;
    char *o;
    if (__builtin_expect(ev->type == WM_EXI_EV_SE && ev->pfx && (!s->px || !s->px->active), 0)) {
        if (!s->px && !(s->px = calloc(1, sizeof *s->px))) { s->oom = true; return 0; }
        s->px->active = true;
    }
    if (__builtin_expect(s->px && s->px->active, 0)) return pfx_event(s, ev);
    switch (ev->type) {
    case WM_EXI_EV_SE: {
        int k = ns_kind(ev->uri_id, ev->uri);
        if (k == NS_XMLNS) return refuse(s, "element in the xmlns namespace", ev->local);
        if ((o = reserve(s, 2 + PREFIX_MAX + (size_t)ev->local.len))) {
            if (s->open) *o++ = '>';
            *o++ = '<';
            o = w_qname_prefix(o, k, ev->uri_id);
            done(s, w_copy(o, ev->local));
        }
        s->depth = ev->depth;
        s->gen++;
        s->n_seen = 0;
        declare(s, k, ev->uri_id, ev->uri);
        s->open = true;
        return s->bad;
    }
    case WM_EXI_EV_AT: {
        int k;
        if (attr_admit(s, ev, &k)) return 1;
        declare(s, k, ev->uri_id, ev->uri);
        if (s->bad) return 1;
        if (ev->xsi && ev->value.kind == WM_EXI_DT_QNAME) {
            if (xsi_type_value(s, ev->value.text, ev->value.len)) return 1;
            break;
        }
        bool clean = plain_lexical(ev->value.kind) || attr_clean(ev->value.text, ev->value.len);
        if (!(o = reserve(s, 1 + PREFIX_MAX + (size_t)ev->local.len + 2 + (clean ? ev->value.len + 1 : 0)))) return 0;
        *o++ = ' ';
        o = w_qname_prefix(o, k, ev->uri_id);
        o = LIT(w_copy(o, ev->local), "=\"");
        if (clean) {
            o = w_copy(o, (wm_exi_sview){ ev->value.text, ev->value.len });
            *o++ = '"';
            done(s, o);
        } else {
            done(s, o);
            escaped(s, ev->value.text, ev->value.len, true);
            puts_(s, "\"");
        }
        break;
    }
    case WM_EXI_EV_CH:
        close_open(s);
        escaped(s, ev->value.text, ev->value.len, false);
        break;
    case WM_EXI_EV_EE:
        if ((o = reserve(s, 3 + PREFIX_MAX + (size_t)ev->local.len))) {
            if (s->open) o = LIT(o, "/>");
            else {
                o = LIT(o, "</");
                o = w_qname_prefix(o, ns_kind(ev->uri_id, ev->uri), ev->uri_id);
                o = w_copy(o, ev->local);
                *o++ = '>';
            }
            done(s, o);
        }
        s->open = false;
        if (s->bound_max >= ev->depth) {
            for (uint32_t i = 0; i < s->n_bound; i++)
                if (s->bound[i] >= ev->depth) s->bound[i] = 0;
            s->bound_max = ev->depth ? ev->depth - 1 : 0;
        }
        s->depth = ev->depth ? ev->depth - 1 : 0;
        break;
    case WM_EXI_EV_ED:
        puts_(s, "\n");
        break;
    case WM_EXI_EV_CM: case WM_EXI_EV_PI:
        return write_cmpi(s, ev);
    default:
        break;
    }
    return 0;
}

/* ------------------------------------------------------------ XML reader */

typedef struct xattr {
    const char *uri, *local, *val;
    const char *prefix;   /* Preserve.prefixes: the attribute's ("" none) */
    char *owned, *vprefix; /* xsi:type: "{uri}local", and its value's prefix */
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
static wm_exi_status xsi_type_expanded(xmlTextReaderPtr rd, const char *v, char **out, char **vprefix, wm_exi_error *err)
{
    *out = NULL;
    *vprefix = NULL;
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
    *vprefix = pfx; /* the caller frees it */
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
    const char *epfx = (const char *)xmlTextReaderConstPrefix(rd);
    bool pfx = e->opts.preserve_prefixes;
    if (!uri) uri = "";
    if (!epfx) epfx = "";
    if (pfx) wm_exi_encode_prefixes(e, epfx, strlen(epfx), NULL, 0);
    wm_exi_status st = wm_exi_encode_se(e, uri, strlen(uri), local, strlen(local));
    if (st) return st;
    int n = xmlTextReaderAttributeCount(rd);
    if (n <= 0) return WM_EXI_OK;
    xattr *a = calloc((size_t)n, sizeof *a);
    if (!a) return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "out of memory");
    int k = 0;
    for (int ok = xmlTextReaderMoveToFirstAttribute(rd); ok == 1 && !st; ok = xmlTextReaderMoveToNextAttribute(rd)) {
        if (xmlTextReaderIsNamespaceDecl(rd)) {
            /* Preserve.prefixes: NS events right after SE, in document order
             * (§6); xmlns:xml is bound by definition, never an NS event */
            if (!pfx) continue;
            const char *dp = (const char *)xmlTextReaderConstPrefix(rd), *dv = (const char *)xmlTextReaderConstValue(rd);
            const char *np = dp ? (const char *)xmlTextReaderConstLocalName(rd) : ""; /* xmlns:p -> p; xmlns -> "" */
            if (!dv) dv = "";
            if (!strcmp(np, "xml")) continue;
            st = wm_exi_encode_ns(e, dv, strlen(dv), np, strlen(np), !strcmp(np, epfx) && !strcmp(dv, uri));
            continue;
        }
        const char *au = (const char *)xmlTextReaderConstNamespaceUri(rd), *ap = (const char *)xmlTextReaderConstPrefix(rd);
        xattr *x = &a[k++];
        x->uri = au ? au : "";
        x->local = (const char *)xmlTextReaderConstLocalName(rd);
        x->val = (const char *)xmlTextReaderConstValue(rd);
        x->prefix = ap ? ap : "";
        x->rank = 2;
        if (!strcmp(x->uri, XSI_URI) && !strcmp(x->local, "type")) {
            x->rank = 0;
            wm_exi_status qs = xsi_type_expanded(rd, x->val, &x->owned, &x->vprefix, err);
            if (qs) {
                for (int i = 0; i < k; i++) free(a[i].owned), free(a[i].vprefix);
                free(a);
                return qs;
            }
            x->val = x->owned;
        } else if (!strcmp(x->uri, XSI_URI) && !strcmp(x->local, "nil")) x->rank = 1;
    }
    xmlTextReaderMoveToElement(rd);
    if (k > 1) qsort(a, (size_t)k, sizeof *a, cmp_xattr);
    for (int i = 0; i < k && !st; i++) {
        if (pfx)
            wm_exi_encode_prefixes(e, a[i].prefix, strlen(a[i].prefix), a[i].vprefix, a[i].vprefix ? strlen(a[i].vprefix) : 0);
        st = wm_exi_encode_at(e, a[i].uri, strlen(a[i].uri), a[i].local, strlen(a[i].local), a[i].val, strlen(a[i].val));
    }
    for (int i = 0; i < k; i++) free(a[i].owned), free(a[i].vprefix);
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

/* The line of the node the reader is on (its start tag, or its first
 * character), the parser's line if the node has none. */
static int node_line(xmlTextReaderPtr rd)
{
    xmlNodePtr n = xmlTextReaderCurrentNode(rd);
    long l = n ? xmlGetLineNo(n) : -1;
    return l > 0 && l <= INT32_MAX ? (int)l : xmlTextReaderGetParserLineNumber(rd);
}

/* xmlHashScan callback: the first entity name seen (the DOCTYPE check). */
static void first_entity(void *payload, void *data, const xmlChar *name)
{
    (void)payload;
    const char **first = data;
    if (!*first) *first = (const char *)name;
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
    /* XML_PARSE_BIG_LINES: node lines past 65535 are kept, not capped */
    xmlTextReaderPtr rd = xmlReaderForMemory(xml, (int)len, NULL, NULL,
                                             XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    if (!rd) { free(wrapped); return wm_exi_fail(err, WM_EXI_E_MEMORY, 0, "cannot create the XML reader"); }
    ns_error nse = { 0 };
    xmlTextReaderSetStructuredErrorHandler(rd, on_xml_error, &nse);
    /* Positions come from the node being encoded (xmlGetLineNo: the line of
     * its start tag, or of a text's first character), never from
     * xmlTextReaderGetParserLineNumber: the reader parses ahead of the node
     * it hands out (by a whole input chunk), so the parser's line was often
     * a dozen lines past the element at fault. */
    int ret, enc_line = 0, text_line = 0;
    bool enc_at_end = false;
    /* text is gathered so that text split around comments and PIs is one CH
     * (unless they are preserved) */
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
            if (!tlen) text_line = node_line(rd);
            memcpy(text + tlen, v, n);
            tlen += n;
            continue;
        }
        if (type == XML_READER_TYPE_DOCUMENT_TYPE) {
            /* libxml2 substitutes an internal entity in an attribute value
             * whatever the options (XML 1.0 §3.3.2): refusing its references
             * is not enough, so a declaration is refused (REVIEW8 #2). */
            xmlNodePtr dn = xmlTextReaderCurrentNode(rd);
            xmlDtdPtr dtd = dn && dn->type == XML_DTD_NODE ? (xmlDtdPtr)dn : NULL;
            const char *first = NULL;
            if (dtd && dtd->entities) xmlHashScan(dtd->entities, first_entity, &first);
            if (!first && dtd && dtd->pentities) xmlHashScan(dtd->pentities, first_entity, &first);
            if (dtd && (dtd->SystemID || dtd->ExternalID)) {
                /* never read, so a reference to one of its entities cannot
                 * be told from a typo: libxml2 drops it from an attribute of
                 * the document element without a word (REVIEW9 #2) */
                st = wm_exi_fail(err, WM_EXI_E_INPUT, 0,
                                 "external DTD subset \"" WM_EXI_QUOTE_FMT "\" in the DOCTYPE (read up to line %d): it is never read, and "
                                 "the entities it may declare could not be told from undeclared ones",
                                 WM_EXI_QUOTE((const char *)(dtd->SystemID ? dtd->SystemID : dtd->ExternalID), 120),
                                 xmlTextReaderGetParserLineNumber(rd));
                break;
            }
            if (first) {
                st = wm_exi_fail(err, WM_EXI_E_INPUT, 0,
                                 "entity declaration <!ENTITY " WM_EXI_QUOTE_FMT "> in the DOCTYPE (read up to line %d): only the predefined entities and "
                                 "character references are read (declared entities are not expanded, external ones never loaded)",
                                 WM_EXI_QUOTE(first, 64), xmlTextReaderGetParserLineNumber(rd));
                break;
            }
            continue;
        }
        if (type == XML_READER_TYPE_ENTITY_REFERENCE) {
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0,
                             "entity reference &" WM_EXI_QUOTE_FMT "; (line %d): only the predefined entities and character references are "
                             "read (declared entities are not expanded, external ones never loaded)",
                             WM_EXI_QUOTE((const char *)xmlTextReaderConstName(rd), 64), node_line(rd));
            break;
        }
        bool cm = type == XML_READER_TYPE_COMMENT && e->opts.preserve_comments;
        bool pi = type == XML_READER_TYPE_PROCESSING_INSTRUCTION && e->opts.preserve_pis;
        if (type != XML_READER_TYPE_ELEMENT && type != XML_READER_TYPE_END_ELEMENT && !cm && !pi) continue;
        if (tlen) { st = wm_exi_encode_ch(e, text, tlen); tlen = 0; if (st) { enc_line = text_line; break; } }
        if (cm || pi) { /* Preserve.comments / .pis: the text on either side stays two CH */
            const char *v = (const char *)xmlTextReaderConstValue(rd);
            if (!v) v = "";
            if (cm) st = wm_exi_encode_cm(e, v, strlen(v));
            else {
                const char *t = (const char *)xmlTextReaderConstName(rd);
                st = wm_exi_encode_pi(e, t, strlen(t), v, strlen(v));
            }
            if (st) enc_line = node_line(rd);
            continue;
        }
        if (skip && xmlTextReaderDepth(rd) == 0) continue; /* the fragment wrapper */
        if (type == XML_READER_TYPE_ELEMENT) {
            bool empty = xmlTextReaderIsEmptyElement(rd);
            st = element_start(e, rd, err);
            if (!st && empty) st = wm_exi_encode_ee(e);
        } else {
            st = wm_exi_encode_ee(e);
            enc_at_end = true;
        }
        if (st) enc_line = node_line(rd);
        else enc_at_end = false;
    }
    /* the encoder's refusals (grammar, values, its memory cap) know the output
     * bit only: the XML line the reader was at is what a user can find */
    if (st && enc_line > 0 && err) {
        size_t n = strlen(err->msg);
        if (n + 64 < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n,
                     enc_at_end ? " (at the end tag of the element whose start tag is on XML line %d)" : " (XML line %d)",
                     enc_line);
    }
    if (!st && ret != 0) {
        /* libxml2's own reason; its depth limit (256 levels without
         * XML_PARSE_HUGE) is a bound of the reader, not a fault of the XML */
        const xmlError *le = xmlGetLastError();
        const char *why = le && le->message ? le->message : "";
        int wl = (int)strcspn(why, "\n");
        if (wl > 160) wl = 160;
        unsigned lim = 0;
        /* the error's own position (libxml2 records line and column where
         * it found the fault), the parser's line only when it has none */
        int line = le && le->line > 0 ? le->line : xmlTextReaderGetParserLineNumber(rd);
        int col = le && le->line > 0 ? le->int2 : 0;
        char pos[48];
        if (col > 0) snprintf(pos, sizeof pos, "line %d, column %d", line, col);
        else snprintf(pos, sizeof pos, "near line %d", line);
        if (sscanf(why, "Excessive depth in document: %u", &lim) == 1)
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0, "XML nested deeper than libxml2's limit of %u levels (%s)", lim, pos);
        else
            st = wm_exi_fail(err, WM_EXI_E_INPUT, 0, "XML is not well-formed (%s)%s%.*s", pos, wl ? ": " : "", wl, why);
    }
    xmlFreeTextReader(rd);
    free(text);
    free(wrapped);
    if (st) return st;
    return wm_exi_encode_end(e, out_len);
}
