/* Preserve.prefixes (EXI 1.0 §7.1.7, §4 NS events): what a stream says of
 * prefixes reaches the XML, and the encoder writes it.
 * - The W3C interop stream document-01.byteAligned (written by another
 *   implementation) decodes to its source document-01.xml with the same
 *   prefixes and declarations, and our encoder writes the same body bytes
 *   from that source (its header byte says "preview version").
 * - Random documents with prefixes declared, reused, shadowed and rebound,
 *   default namespaces set and undeclared, namespaced attributes and
 *   xsi:type QName values go XML -> EXI -> XML (schema-less and through a
 *   schema, bit-packed and byte-aligned) and come back prefix-equal: every
 *   element and attribute with the same prefix, namespace and name, every
 *   element with the same declarations in the same order, the same
 *   attribute values (xsi:type's QName text included), the same text;
 *   compared on libxml2's trees of both documents.
 * Before, the XML writer named every namespace ns<id> ("<ns4:None
 * xmlns:ns4=...") and the encoder refused Preserve.prefixes. */
#include <criterion/criterion.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "tests/lib/exi_fixture.h"

static char *read_file(const char *rel, size_t *n)
{
    const char *sh = getenv("WM_SHARED");
    char path[512];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    static char buf[1 << 16];
    *n = fread(buf, 1, sizeof buf - 1, f);
    buf[*n] = 0;
    fclose(f);
    char *r = malloc(*n + 1);
    memcpy(r, buf, *n + 1);
    return r;
}

static const xmlChar *pfx_of(const xmlNs *ns) { return ns ? ns->prefix : NULL; }
static bool str_eq(const xmlChar *a, const xmlChar *b) { return (!a && !b) || (a && b && !xmlStrcmp(a, b)); }
/* a NULL prefix and "" are both "no prefix" */
static bool pfx_eq(const xmlChar *a, const xmlChar *b) { return str_eq(a && *a ? a : NULL, b && *b ? b : NULL); }

static int cmp_attr(const void *pa, const void *pb)
{
    xmlAttrPtr a = *(xmlAttrPtr const *)pa, b = *(xmlAttrPtr const *)pb;
    int c = xmlStrcmp(a->ns ? a->ns->href : BAD_CAST "", b->ns ? b->ns->href : BAD_CAST "");
    return c ? c : xmlStrcmp(a->name, b->name);
}

/* a and b are prefix-equal (see the header); what differs in why */
static bool same_tree(xmlNodePtr a, xmlNodePtr b, char *why, size_t cap)
{
    for (; a || b; a = a->next, b = b->next) {
        if (!a || !b || a->type != b->type) return snprintf(why, cap, "node kinds differ"), false;
        if (a->type == XML_TEXT_NODE) {
            if (!str_eq(a->content, b->content)) return snprintf(why, cap, "text '%s' vs '%s'", a->content, b->content), false;
            continue;
        }
        if (a->type != XML_ELEMENT_NODE) continue;
        if (xmlStrcmp(a->name, b->name) || !pfx_eq(pfx_of(a->ns), pfx_of(b->ns)) ||
            !str_eq(a->ns ? a->ns->href : NULL, b->ns ? b->ns->href : NULL))
            return snprintf(why, cap, "element %s:%s vs %s:%s", pfx_of(a->ns), a->name, pfx_of(b->ns), b->name), false;
        xmlNsPtr x = a->nsDef, y = b->nsDef;
        for (; x || y; x = x->next, y = y->next)
            if (!x || !y || !pfx_eq(x->prefix, y->prefix) || !str_eq(x->href, y->href))
                return snprintf(why, cap, "declarations of %s: %s=%s vs %s=%s", a->name, x ? x->prefix : NULL,
                                x ? x->href : NULL, y ? y->prefix : NULL, y ? y->href : NULL),
                       false;
        xmlAttrPtr aa[16], ba[16];
        unsigned na = 0, nb = 0;
        for (xmlAttrPtr t = a->properties; t && na < 16; t = t->next) aa[na++] = t;
        for (xmlAttrPtr t = b->properties; t && nb < 16; t = t->next) ba[nb++] = t;
        if (na != nb) return snprintf(why, cap, "%u vs %u attributes on %s", na, nb, a->name), false;
        qsort(aa, na, sizeof *aa, cmp_attr); /* EXI orders attributes (§6) */
        qsort(ba, nb, sizeof *ba, cmp_attr);
        for (unsigned i = 0; i < na; i++) {
            xmlChar *va = xmlNodeGetContent((xmlNodePtr)aa[i]), *vb = xmlNodeGetContent((xmlNodePtr)ba[i]);
            bool eq = !xmlStrcmp(aa[i]->name, ba[i]->name) && pfx_eq(pfx_of(aa[i]->ns), pfx_of(ba[i]->ns)) && str_eq(va, vb);
            if (!eq) snprintf(why, cap, "attribute %s:%s='%s' vs %s:%s='%s'", pfx_of(aa[i]->ns), aa[i]->name, va,
                              pfx_of(ba[i]->ns), ba[i]->name, vb);
            xmlFree(va);
            xmlFree(vb);
            if (!eq) return false;
        }
        if (!same_tree(a->children, b->children, why, cap)) return false;
    }
    return true;
}

static xmlDocPtr parse(const char *xml)
{
    /* a namespace error is an error here: the writer's XML must be namespace-well-formed */
    xmlDocPtr d = xmlReadMemory(xml, (int)strlen(xml), "x.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    const xmlError *le = xmlGetLastError();
    cr_assert(d && !(le && le->domain == XML_FROM_NAMESPACE), "not namespace-well-formed: %s", xml);
    return d;
}

/* xml with prefixes through g (strict off; alignment as asked, options out
 * of band) and back: the decoded XML (malloc'ed) */
static char *round_trip(const wm_exi_grammar *g, const char *xml, bool byte_aligned)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.preserve_prefixes = true;
    o.alignment = byte_aligned ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
    static uint8_t out[1 << 16];
    size_t n = 0;
    wm_exi_error e = { 0 };
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &n, &e);
    wm_exi_encoder_free(&enc);
    cr_assert_eq(st, WM_EXI_OK, "%s: %s", xml, e.msg);
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    cr_assert_eq(wm_test_exi_decode_xml(g, out, n, &o, false, &sink, NULL, NULL, &e), WM_EXI_OK, "%s: %s", xml, e.msg);
    cr_assert(!sink.bad && !sink.oom, "%s: %s", xml, sink.why);
    char *r = strdup(sink.buf);
    wm_exi_xml_sink_free(&sink);
    return r;
}

static void check_prefix_equal(const char *src, const char *got)
{
    xmlDocPtr a = parse(src), b = parse(got);
    char why[512] = "";
    cr_assert(same_tree(xmlDocGetRootElement(a), xmlDocGetRootElement(b), why, sizeof why), "%s\n  source %s\n  decoded %s", why,
              src, got);
    xmlFreeDoc(a);
    xmlFreeDoc(b);
}

Test(exi_prefixes, interop_stream_decodes_to_its_source_and_encodes_to_its_bytes)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("interop/schemaInformedGrammar/declaredProductions/document.xsd", &e);
    cr_assert(g, "%s", e.msg);
    size_t n, xn;
    char *exi = read_file("interop/schemaInformedGrammar/declaredProductions/document-01.byteAligned", &n);
    char *src = read_file("interop/schemaInformedGrammar/declaredProductions/document-01.xml", &xn);
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.preserve_prefixes = true;
    o.alignment = WM_EXI_BYTE_ALIGNED;
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    cr_assert_eq(wm_test_exi_decode_xml(g, (const uint8_t *)exi, n, &o, false, &sink, NULL, NULL, &e), WM_EXI_OK, "%s", e.msg);
    check_prefix_equal(src, sink.buf);
    cr_assert(strstr(sink.buf, "<None xmlns:xsd=") && strstr(sink.buf, "xsi:type=\"xsd:anyType\""), "%s", sink.buf);
    wm_exi_xml_sink_free(&sink);
    /* and back: the same body (the first byte is the header: distinguishing
     * bits, no options, version; the interop stream's says "preview") */
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, false, NULL);
    uint8_t out[256];
    size_t on = 0;
    cr_assert_eq(wm_exi_encode_xml(&enc, src, xn, out, sizeof out, &on, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_encoder_free(&enc);
    cr_assert_eq(on, n);
    cr_assert(!memcmp(out + 1, exi + 1, n - 1), "body bytes differ from the interop stream's");
    free(exi);
    free(src);
    wm_exi_grammar_free(g);
}

/* ---------------------------------------------------------------- random documents */

static const char *const uris[] = { "", "urn:a", "urn:b", "urn:c" };
static const char *const pnames[] = { "", "p", "q", "r" };

typedef struct bind { char p[8]; const char *u; unsigned depth; } bind;
typedef struct gen {
    char *o;
    size_t n, cap;
    bind b[256];
    unsigned nb;
    unsigned seed;
} gen;

static unsigned rnd(gen *g, unsigned n) { g->seed = g->seed * 1103515245u + 12345u; return (g->seed >> 16) % n; }
static void out(gen *g, const char *s)
{
    size_t l = strlen(s);
    cr_assert(g->n + l < g->cap);
    memcpy(g->o + g->n, s, l + 1);
    g->n += l;
}
/* the namespace prefix p names in scope ("" unbound: no namespace; NULL: an unbound prefix) */
static const char *lookup(const gen *g, const char *p)
{
    for (unsigned i = g->nb; i-- > 0;)
        if (!strcmp(g->b[i].p, p)) return g->b[i].u;
    return *p ? NULL : "";
}
static bool declared_here(const gen *g, unsigned depth, const char *p)
{
    for (unsigned i = g->nb; i-- > 0 && g->b[i].depth == depth;)
        if (!strcmp(g->b[i].p, p)) return true;
    return false;
}
static void declare(gen *g, unsigned depth, const char *p, const char *u, char *decls)
{
    bind *b = &g->b[g->nb++];
    snprintf(b->p, sizeof b->p, "%s", p);
    b->u = u;
    b->depth = depth;
    char d[96];
    if (*p) snprintf(d, sizeof d, " xmlns:%s=\"%s\"", p, u);
    else snprintf(d, sizeof d, " xmlns=\"%s\"", u);
    strcat(decls, d);
}
/* a prefix for u in scope at depth (non-empty for attributes and QName
 * values where dflt is false), declaring one if needed or by chance */
static const char *prefix_for(gen *g, unsigned depth, const char *u, bool dflt, char *decls)
{
    if (!*u && dflt) {
        if (*lookup(g, "") && !declared_here(g, depth, "")) declare(g, depth, "", "", decls); /* undeclare the default */
        return *lookup(g, "") ? NULL : "";
    }
    if (!*u) return "";
    if (rnd(g, 10) < 7)
        for (unsigned i = g->nb; i-- > 0;) {
            const char *p = g->b[i].p;
            if (!strcmp(g->b[i].u, u) && (dflt || *p) && lookup(g, p) == g->b[i].u) return p;
        }
    for (unsigned t = 0; t < 8; t++) {
        const char *p = pnames[rnd(g, 4)];
        if ((!*p && !dflt) || declared_here(g, depth, p)) continue;
        declare(g, depth, p, u, decls);
        return g->b[g->nb - 1].p;
    }
    for (unsigned k = 0;; k++) { /* a fresh one */
        char p[8];
        snprintf(p, sizeof p, "n%u", k);
        if (declared_here(g, depth, p)) continue;
        declare(g, depth, p, u, decls);
        return g->b[g->nb - 1].p;
    }
}

static void element(gen *g, unsigned depth)
{
    char decls[1024] = "", attrs[1024] = "", name[32];
    unsigned mark = g->nb;
    const char *u = uris[rnd(g, 4)];
    const char *p = prefix_for(g, depth, u, true, decls);
    if (!p) { u = lookup(g, ""); p = ""; } /* no way to write no-namespace here: take the default's */
    snprintf(name, sizeof name, "%s%s%s", p, *p ? ":" : "", depth % 2 ? "a" : "b");
    char pn[8];
    snprintf(pn, sizeof pn, "%s", p);
    if (rnd(g, 3) == 0) { /* a declaration nothing here uses */
        const char *x = pnames[1 + rnd(g, 3)];
        if (!declared_here(g, depth, x) && strcmp(x, pn)) declare(g, depth, x, uris[1 + rnd(g, 3)], decls);
    }
    if (rnd(g, 5) == 0) { /* xsi:type with a QName value */
        const char *xp = prefix_for(g, depth, "http://www.w3.org/2001/XMLSchema-instance", false, decls);
        const char *tu = uris[1 + rnd(g, 3)], *tp = prefix_for(g, depth, tu, true, decls);
        if (tp && lookup(g, pn) && !strcmp(lookup(g, pn), u)) {
            char a[96];
            snprintf(a, sizeof a, " %s:type=\"%s%sT\"", xp, tp, *tp ? ":" : "");
            strcat(attrs, a);
        }
    }
    for (unsigned k = 0, na = rnd(g, 3); k < na; k++) {
        const char *au = uris[rnd(g, 3)], *ap = prefix_for(g, depth, au, false, decls);
        char a[96];
        snprintf(a, sizeof a, " %s%sx%u=\"v%u\"", ap, *ap ? ":" : "", k, rnd(g, 100));
        strcat(attrs, a);
    }
    /* the element's own prefix must still be its namespace after the attributes' declarations */
    if (!lookup(g, pn) || strcmp(lookup(g, pn), u)) {
        g->nb = mark;
        element(g, depth); /* try again (the rare case of a declaration shadowing it) */
        return;
    }
    out(g, "<");
    out(g, name);
    out(g, decls);
    out(g, attrs);
    out(g, ">");
    for (unsigned k = 0, nc = depth < 4 ? rnd(g, 4) : 0; k < nc; k++) {
        if (rnd(g, 2)) {
            char t[16];
            snprintf(t, sizeof t, "t%u", rnd(g, 50));
            out(g, t);
        }
        element(g, depth + 1);
    }
    out(g, "</");
    out(g, name);
    out(g, ">");
    g->nb = mark;
}

Test(exi_prefixes, random_documents_come_back_prefix_equal)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    unsigned docs = 0;
    for (unsigned seed = 1; seed <= 300; seed++) {
        static char buf[1 << 16];
        gen g = { .o = buf, .cap = sizeof buf, .seed = seed };
        buf[0] = 0;
        element(&g, 1);
        for (int ba = 0; ba < 2; ba++) {
            char *got = round_trip(sl, buf, ba);
            check_prefix_equal(buf, got);
            free(got);
        }
        docs++;
    }
    wm_exi_grammar_free(sl);
    cr_assert_eq(docs, 300);
}

/* Through a schema (non-strict): declared elements and attributes with
 * prefixes, SE(*) and AT(*) of others, the default namespace. */
Test(exi_prefixes, schema_informed_documents_come_back_prefix_equal)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    static const char *const docs[] = {
        "<s:sensml xmlns:s=\"urn:ietf:params:xml:ns:senml\"><s:senml n=\"a\" v=\"1.5\"/><s:senml n=\"b\" vb=\"true\"/></s:sensml>",
        "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"a\" v=\"2\"/></sensml>",
        "<s:sensml xmlns:s=\"urn:ietf:params:xml:ns:senml\" xmlns:x=\"urn:x\"><s:senml x:k=\"1\" n=\"a\"/>"
        "<x:e xmlns=\"urn:y\"><f>t</f></x:e></s:sensml>",
        "<t:sensml xmlns:t=\"urn:ietf:params:xml:ns:senml\"><t:senml xmlns:t=\"urn:ietf:params:xml:ns:senml\" n=\"a\"/>"
        "<u:senml xmlns:u=\"urn:ietf:params:xml:ns:senml\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
        " xmlns:d=\"http://www.w3.org/2001/XMLSchema\" xsi:type=\"d:anyType\" n=\"b\"/></t:sensml>",
    };
    for (size_t k = 0; k < sizeof docs / sizeof *docs; k++)
        for (int ba = 0; ba < 2; ba++) {
            char *got = round_trip(g, docs[k], ba);
            check_prefix_equal(docs[k], got);
            free(got);
        }
    wm_exi_grammar_free(g);
}
