/* EXI codec end to end: RFC 8428 SenML vectors and the W3C interop subset
 * from $WM_SHARED/data/exi decode to XML equal to their .xml (infoset:
 * expanded names, attribute values, text; numbers by value), SenML re-encodes
 * to the same bytes, random SenML packs round-trip in every mode, and bad
 * input ends in a precise error. */
#include <criterion/criterion.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "perf/exi_senml_gen.h"

static const char *shared(void)
{
    const char *s = getenv("WM_SHARED");
    return s ? s : "../shared";
}

static size_t slurp(const char *rel, uint8_t **out)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", shared(), rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    cr_assert(fread(*out, 1, (size_t)n, f) == (size_t)n);
    (*out)[n] = 0;
    fclose(f);
    return (size_t)n;
}

static wm_exi_grammar *schema(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", shared(), rel);
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile(path, &g, &e), WM_EXI_OK, "%s: %s", path, e.msg);
    return g;
}

/* ------------------------------------------------------------ infoset */

static bool numeric(const char *s, double *v)
{
    char *end;
    while (*s == ' ' || *s == '\n' || *s == '\t') s++;
    if (!*s) return false;
    *v = strtod(s, &end);
    while (*end == ' ' || *end == '\n' || *end == '\t') end++;
    return *end == 0;
}

/* XML Schema whitespace collapse: typed values (lists, numbers, dates) are
 * compared after it, as EXI keeps their value, not their spacing. */
static void collapse(const char *s, char *out)
{
    size_t n = 0;
    bool sp = false;
    for (; *s; s++) {
        if (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') { sp = n > 0; continue; }
        if (sp) out[n++] = ' ';
        sp = false;
        out[n++] = *s;
    }
    out[n] = 0;
}

static bool same_value(const char *a, const char *b)
{
    double x, y;
    if (numeric(a, &x) && numeric(b, &y)) return x == y || fabs(x - y) <= 1e-12 * fmax(fabs(x), fabs(y));
    if (!strcmp(a, b)) return true;
    char *ca = malloc(strlen(a) + 1), *cb = malloc(strlen(b) + 1);
    collapse(a, ca);
    collapse(b, cb);
    bool same = !strcmp(ca, cb);
    /* hexBinary is case-insensitive */
    if (!same && strlen(ca) == strlen(cb)) {
        same = true;
        for (size_t i = 0; ca[i]; i++)
            if ((ca[i] | 0x20) != (cb[i] | 0x20)) same = false;
    }
    free(ca);
    free(cb);
    return same;
}

static char *trimmed_text(xmlNodePtr n, bool *has_elems)
{
    size_t cap = 64, len = 0;
    char *t = malloc(cap);
    *has_elems = false;
    t[0] = 0;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) { *has_elems = true; continue; }
        if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) continue;
        size_t k = strlen((const char *)c->content);
        if (len + k + 1 > cap) { cap = (len + k + 1) * 2; t = realloc(t, cap); }
        memcpy(t + len, c->content, k + 1);
        len += k;
    }
    return t;
}

static bool blank(const char *s)
{
    for (; *s; s++) if (*s != ' ' && *s != '\n' && *s != '\t' && *s != '\r') return false;
    return true;
}

static void same_element(xmlNodePtr a, xmlNodePtr b, const char *ctx)
{
    const char *ua = a->ns ? (const char *)a->ns->href : "", *ub = b->ns ? (const char *)b->ns->href : "";
    cr_assert_str_eq((const char *)a->name, (const char *)b->name, "%s: element name", ctx);
    cr_assert_str_eq(ua, ub, "%s: namespace of <%s>", ctx, a->name);
    int na = 0, nb = 0;
    for (xmlAttrPtr x = a->properties; x; x = x->next) na++;
    for (xmlAttrPtr x = b->properties; x; x = x->next) nb++;
    cr_assert_eq(na, nb, "%s: <%s> has %d attributes, expected %d", ctx, a->name, na, nb);
    for (xmlAttrPtr x = a->properties; x; x = x->next) {
        const char *ns = x->ns ? (const char *)x->ns->href : NULL;
        xmlChar *va = xmlNodeListGetString(a->doc, x->children, 1);
        xmlChar *vb = ns ? xmlGetNsProp(b, x->name, (const xmlChar *)ns) : xmlGetNoNsProp(b, x->name);
        cr_assert(vb, "%s: <%s> lacks attribute %s", ctx, a->name, x->name);
        if (ns && !strcmp(ns, "http://www.w3.org/2001/XMLSchema-instance") && !strcmp((const char *)x->name, "type")) {
            /* QName values: compare expanded names */
            const char *ca = strchr((const char *)va, ':'), *cb = strchr((const char *)vb, ':');
            cr_assert_str_eq(ca ? ca + 1 : (const char *)va, cb ? cb + 1 : (const char *)vb, "%s: xsi:type", ctx);
        } else
            cr_assert(same_value((const char *)va, (const char *)vb), "%s: <%s %s=\"%s\">, expected \"%s\"", ctx, a->name,
                      x->name, va, vb);
        xmlFree(va);
        xmlFree(vb);
    }
    bool ea, eb;
    char *ta = trimmed_text(a, &ea), *tb = trimmed_text(b, &eb);
    if (!(ea && blank(ta) && blank(tb)))
        cr_assert(same_value(ta, tb) || (blank(ta) && blank(tb)), "%s: text of <%s> \"%s\", expected \"%s\"", ctx, a->name, ta, tb);
    free(ta);
    free(tb);
    xmlNodePtr ca = a->children, cb = b->children;
    for (;;) {
        while (ca && ca->type != XML_ELEMENT_NODE) ca = ca->next;
        while (cb && cb->type != XML_ELEMENT_NODE) cb = cb->next;
        if (!ca || !cb) break;
        same_element(ca, cb, ctx);
        ca = ca->next;
        cb = cb->next;
    }
    cr_assert(!ca && !cb, "%s: <%s> has a different number of children", ctx, a->name);
}

/* Compares a decoded document or fragment (several roots allowed) with the reference XML. */
static void same_infoset(const char *got, const char *want, const char *ctx)
{
    /* fragments may have several top-level elements: wrap both */
    size_t lg = strlen(got), lw = strlen(want);
    char *wg = malloc(lg + 16), *ww = malloc(lw + 16);
    const char *w2 = want;
    if (!strncmp(w2, "<?xml", 5)) { const char *e = strstr(w2, "?>"); if (e) w2 = e + 2; }
    sprintf(wg, "<w>%s</w>", got);
    sprintf(ww, "<w>%s</w>", w2);
    xmlDocPtr a = xmlReadMemory(wg, (int)strlen(wg), NULL, NULL, XML_PARSE_NONET);
    xmlDocPtr b = xmlReadMemory(ww, (int)strlen(ww), NULL, NULL, XML_PARSE_NONET);
    cr_assert(a, "%s: decoded XML is not well-formed:\n%s", ctx, got);
    cr_assert(b, "%s: reference XML is not well-formed", ctx);
    same_element(xmlDocGetRootElement(a), xmlDocGetRootElement(b), ctx);
    xmlFreeDoc(a);
    xmlFreeDoc(b);
    free(wg);
    free(ww);
}

static wm_exi_status decode_to_xml(const wm_exi_grammar *g, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                                   wm_exi_xml_sink *sink, wm_exi_error *e, wm_exi_options *used)
{
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    wm_exi_xml_sink_init(sink);
    wm_exi_status st = wm_exi_decode(&d, buf, len, oob, wm_exi_xml_sink_event, sink, NULL, e);
    if (used) *used = d.opts;
    wm_exi_decoder_free(&d);
    return st;
}

/* ------------------------------------------------------------ SenML */

static const char *senml[] = { "ex1", "ex2", "ex5" };

Test(exi_senml, vectors_decode_to_their_xml)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi, *xml;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        snprintf(rel, sizeof rel, "senml/%s.gen.xml", senml[i]);
        slurp(rel, &xml);
        wm_exi_xml_sink sink;
        wm_exi_error e;
        wm_exi_options used;
        cr_assert_eq(decode_to_xml(g, exi, n, NULL, &sink, &e, &used), WM_EXI_OK, "%s: %s", senml[i], e.msg);
        cr_assert(used.strict, "%s: options come from the header", senml[i]);
        same_infoset(sink.buf, (const char *)xml, senml[i]);
        wm_exi_xml_sink_free(&sink);
        free(exi);
        free(xml);
    }
    wm_exi_grammar_free(g);
}

Test(exi_senml, vectors_reencode_to_the_same_bytes)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi, *xml;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        snprintf(rel, sizeof rel, "senml/%s.gen.xml", senml[i]);
        size_t xn = slurp(rel, &xml);
        /* the options are the ones the vector's header states */
        wm_exi_options o;
        wm_exi_header h;
        wm_exi_reader r;
        wm_exi_options_default(&o);
        wm_exi_reader_init(&r, exi, n, NULL);
        cr_assert_eq(wm_exi_header_read(&r, &h, &o), WM_EXI_OK);
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, h.cookie, h.options_present, NULL);
        uint8_t out[1024];
        size_t olen = 0;
        wm_exi_error e;
        cr_assert_eq(wm_exi_encode_xml(&enc, (const char *)xml, xn, out, sizeof out, &olen, &e), WM_EXI_OK, "%s: %s",
                     senml[i], e.msg);
        cr_assert_eq(olen, n, "%s: %zu bytes, expected %zu", senml[i], olen, n);
        cr_assert_eq(memcmp(out, exi, n), 0, "%s: bytes differ", senml[i]);
        wm_exi_encoder_free(&enc);
        free(exi);
        free(xml);
    }
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ W3C interop */

/* The subset's options: alignment from the suffix, fragment from the test
 * name. Not given by the files, found from the streams (and listed in the
 * README): the sequence/all and datatype streams are strict (non-strict codes
 * would be one bit wider), the fragment ones non-strict, and document-01
 * needs Preserve.prefixes (its body carries NS events). The schema of each
 * case is the one its test names; fragment-03/-04 use fragment-b/-c.xsd as
 * their comments describe (3 same-typed / 5 differently typed declarations). */
static const struct interop_case {
    const char *exi, *xsd, *xml;
    bool strict, fragment, prefixes;
    bool either_mode;        /* byte-aligned, first-level codes only: decodes the same strict or not */
} interop_ok[] = {
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.bitPacked", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/sequence-01.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.byteAligned", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/sequence-01.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/all-03.bitPacked", "interop/schemaInformedGrammar/acceptance.xsd",
      "interop/schemaInformedGrammar/declaredProductions/all-03.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/fragment-03.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/fragment-b.xsd",
      "interop/schemaInformedGrammar/declaredProductions/fragment-03.xml", false, true, false, false },
    { "interop/datatypes/enumeration/enumeration-valid-04.byteAligned", "interop/datatypes/enumeration/enumeration.xsd",
      "interop/datatypes/enumeration/enumeration-valid-04.xml", true, false, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/fragment-04.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/fragment-c.xsd",
      "interop/schemaInformedGrammar/declaredProductions/fragment-04.xml", false, true, false, true },
    { "interop/schemaInformedGrammar/declaredProductions/elementFragment-02b.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment.xsd",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment-02b.xml", false, true, false, true },
    { "interop/schemaInformedGrammar/declaredProductions/elementFragment-03.bitPacked",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment.xsd",
      "interop/schemaInformedGrammar/declaredProductions/elementFragment-03.xml", false, true, false, false },
    { "interop/schemaInformedGrammar/declaredProductions/document-01.byteAligned",
      "interop/schemaInformedGrammar/declaredProductions/document.xsd",
      "interop/schemaInformedGrammar/declaredProductions/document-01.xml", false, false, true, false },
};

static void interop_options(const char *file, bool strict, bool fragment, wm_exi_options *o)
{
    wm_exi_options_default(o);
    const char *dot = strrchr(file, '.');
    cr_assert(dot && wm_exi_options_from_suffix(dot + 1, o), "suffix of %s", file);
    o->strict = strict;
    o->fragment = fragment;
}

Test(exi_interop, declared_productions_and_datatypes_decode)
{
    for (size_t i = 0; i < sizeof interop_ok / sizeof interop_ok[0]; i++) {
        const struct interop_case *c = &interop_ok[i];
        wm_exi_grammar *g = schema(c->xsd);
        uint8_t *exi, *xml;
        size_t n = slurp(c->exi, &exi);
        slurp(c->xml, &xml);
        wm_exi_options o;
        interop_options(c->exi, c->strict, c->fragment, &o);
        o.preserve_prefixes = c->prefixes;
        wm_exi_xml_sink sink;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &sink, &e, NULL), WM_EXI_OK, "%s: %s", c->exi, e.msg);
        same_infoset(sink.buf, (const char *)xml, c->exi);
        wm_exi_xml_sink_free(&sink);
        free(exi);
        free(xml);
        wm_exi_grammar_free(g);
    }
}

Test(exi_interop, compression_is_refused_with_a_reason)
{
    wm_exi_grammar *g = schema("interop/schemaInformedGrammar/acceptance.xsd");
    const char *files[] = { "interop/schemaInformedGrammar/declaredProductions/sequence-01.compress",
                            "interop/schemaInformedGrammar/declaredProductions/sequence-01.preCompress" };
    for (int i = 0; i < 2; i++) {
        uint8_t *exi;
        size_t n = slurp(files[i], &exi);
        wm_exi_options o;
        interop_options(files[i], true, false, &o);
        wm_exi_xml_sink sink;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &sink, &e, NULL), WM_EXI_E_UNSUPPORTED, "%s", files[i]);
        cr_assert(strstr(e.msg, "compression"), "%s: %s", files[i], e.msg);
        wm_exi_xml_sink_free(&sink);
        free(exi);
    }
    wm_exi_grammar_free(g);
}

/* The options matter: with the strict option flipped, every stream either
 * fails or decodes to a different document (so the test above can fail),
 * except fragment-04 and elementFragment-02b, whose byte-aligned first-level
 * codes fit both modes: their strict option cannot be inferred. */
Test(exi_interop, flipped_strict_option_changes_the_result)
{
    for (size_t i = 0; i < sizeof interop_ok / sizeof interop_ok[0]; i++) {
        const struct interop_case *c = &interop_ok[i];
        wm_exi_grammar *g = schema(c->xsd);
        uint8_t *exi;
        size_t n = slurp(c->exi, &exi);
        wm_exi_options o;
        interop_options(c->exi, c->strict, c->fragment, &o);
        o.preserve_prefixes = c->prefixes;
        wm_exi_xml_sink good, flipped;
        wm_exi_error e;
        cr_assert_eq(decode_to_xml(g, exi, n, &o, &good, &e, NULL), WM_EXI_OK, "%s: %s", c->exi, e.msg);
        o.strict = !c->strict;
        if (o.strict) o.preserve_prefixes = false;
        wm_exi_status st = decode_to_xml(g, exi, n, &o, &flipped, &e, NULL);
        if (c->either_mode)
            cr_assert(st == WM_EXI_OK && !strcmp(good.buf, flipped.buf), "%s: expected the same result in both modes", c->exi);
        else
            cr_assert(st != WM_EXI_OK || strcmp(good.buf, flipped.buf), "%s decodes the same with strict=%d", c->exi, o.strict);
        wm_exi_xml_sink_free(&good);
        wm_exi_xml_sink_free(&flipped);
        free(exi);
        wm_exi_grammar_free(g);
    }
}

/* ------------------------------------------------------------ round trips */

static void round_trip(const wm_exi_grammar *g, const wm_exi_options *o, bool hdr, const char *xml, const char *ctx)
{
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, o, false, hdr, NULL);
    uint8_t out[8192];
    size_t olen;
    wm_exi_error e;
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s: encode: %s\n%s", ctx,
                 e.msg, xml);
    wm_exi_encoder_free(&enc);
    wm_exi_xml_sink sink;
    cr_assert_eq(decode_to_xml(g, out, olen, hdr ? NULL : o, &sink, &e, NULL), WM_EXI_OK, "%s: decode: %s\n%s", ctx, e.msg, xml);
    same_infoset(sink.buf, xml, ctx);
    wm_exi_xml_sink_free(&sink);
}

#if defined(__SANITIZE_ADDRESS__)
#define PACKS 60
#else
#define PACKS 400
#endif

Test(exi_roundtrip, random_senml_packs_all_modes)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    uint64_t seed = 0x5eed5eed1234ull;
    char xml[4096];
    for (int i = 0; i < PACKS; i++) {
        size_t n = wm_senml_gen_pack(&seed, 1 + (unsigned)(i % 12), xml, sizeof xml);
        cr_assert(n);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        round_trip(g, &o, true, xml, "strict bit-packed");
        o.alignment = WM_EXI_BYTE_ALIGNED;
        round_trip(g, &o, false, xml, "strict byte-aligned");
        wm_exi_options_default(&o);
        round_trip(g, &o, i % 2, xml, "non-strict");
        o.value_max_length = 4;
        o.value_partition_capacity = 3;
        round_trip(g, &o, true, xml, "non-strict small string table");
        wm_exi_options_default(&o);
        round_trip(sl, &o, false, xml, "schema-less");
    }
    wm_exi_grammar_free(sl);
    wm_exi_grammar_free(g);
}

Test(exi_roundtrip, undeclared_content_needs_non_strict)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    const char *xml = "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"x\" l=\"[link]\" v=\"abc\"/>"
                      "<extra a=\"1\">text<b/></extra><senml v=\"1.5\"/></sensml>";
    wm_exi_options o;
    wm_exi_options_default(&o);
    round_trip(g, &o, true, xml, "non-strict undeclared");
    o.strict = true;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    uint8_t out[1024];
    size_t olen;
    wm_exi_error e;
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e);
    cr_assert(st == WM_EXI_E_GRAMMAR || st == WM_EXI_E_INPUT, "strict must refuse: %d %s", st, e.msg);
    cr_assert(strstr(e.msg, "strict"), "%s", e.msg);
    wm_exi_encoder_free(&enc);
    wm_exi_grammar_free(g);
}

Test(exi_roundtrip, schemaless_learns_productions)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    const char *xml = "<a xmlns=\"urn:x\" xmlns:p=\"urn:p\" p:k=\"v\"><b>1</b><b>2</b><c/><b>1</b><p:d k=\"v\">mixed<e/>tail</p:d></a>";
    wm_exi_options o;
    wm_exi_options_default(&o);
    round_trip(sl, &o, true, xml, "schema-less");
    o.alignment = WM_EXI_BYTE_ALIGNED;
    o.fragment = true;
    round_trip(sl, &o, true, "<a>1</a><b/><a>2</a>", "schema-less fragment");
    wm_exi_grammar_free(sl);
}

Test(exi_roundtrip, element_fragment_grammar)
{
    /* {}A has several declared types in acceptance.xsd: the relaxed
     * ElementFragment grammar (§8.5.3) carries it, attributes typed by name */
    wm_exi_grammar *g = schema("interop/schemaInformedGrammar/acceptance.xsd");
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.fragment = true;
    const char *xml = "<f:G4 xmlns:f=\"urn:foo\" aK=\"7\"/><A xmlns:f=\"urn:foo\" f:aBoolean=\"true\" f:aL=\"-5\" other=\"x\">"
                      "<B>text</B><f:AB>1</f:AB></A><A xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:nil=\"true\"/>";
    round_trip(g, &o, true, xml, "element fragment");
    o.alignment = WM_EXI_BYTE_ALIGNED;
    round_trip(g, &o, false, xml, "element fragment byte-aligned");
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ bad input */

static int count_events(void *user, const wm_exi_event *ev)
{
    (void)ev;
    ++*(long *)user;
    return 0;
}

Test(exi_errors, truncations_and_bit_flips_end_in_errors)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    uint8_t *exi;
    size_t n = slurp("senml/ex5.gen.exi", &exi);
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, exi, k);
        long events = 0;
        wm_exi_error e;
        wm_exi_status st = wm_exi_decode(&d, cut, k, NULL, count_events, &events, NULL, &e);
        cr_assert_neq(st, WM_EXI_OK, "a stream cut at %zu of %zu bytes decoded", k, n);
        cr_assert(e.bit_pos <= 8 * k, "error position %llu beyond the input", (unsigned long long)e.bit_pos);
        free(cut);
    }
    uint64_t seed = 42;
    for (int i = 0; i < 3000; i++) {
        uint8_t *m = malloc(n);
        memcpy(m, exi, n);
        for (int f = 0; f < 1 + i % 4; f++) {
            uint64_t r = wm_senml_rand(&seed);
            m[r % n] ^= (uint8_t)(1u << ((r >> 20) % 8));
        }
        long events = 0;
        wm_exi_error e;
        wm_exi_status st = wm_exi_decode(&d, m, n, NULL, count_events, &events, NULL, &e);
        if (st) cr_assert(e.msg[0], "an error always has a reason");
        free(m);
    }
    wm_exi_decoder_free(&d);
    free(exi);
    wm_exi_grammar_free(g);
}

Test(exi_errors, memory_cap_and_depth_limit)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    /* a document with many distinct names and values */
    char xml[65536];
    size_t n = 0;
    n += (size_t)sprintf(xml + n, "<r>");
    for (int i = 0; i < 1500; i++) n += (size_t)sprintf(xml + n, "<e%d>value-%d</e%d>", i, i, i);
    sprintf(xml + n, "</r>");
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, sl, &o, false, false, NULL);
    static uint8_t out[65536];
    size_t olen;
    wm_exi_error e;
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_encoder_free(&enc);
    wm_exi_limits lim = { .mem_cap = 128 * 1024 };
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, sl, &lim);
    long events = 0;
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_E_MEMORY, "%s", e.msg);
    wm_exi_decoder_free(&d);
    lim.mem_cap = 0;
    wm_exi_decoder_init(&d, sl, NULL);
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_decoder_free(&d);
    /* nesting */
    n = 0;
    for (int i = 0; i < 40; i++) n += (size_t)sprintf(xml + n, "<d>");
    for (int i = 0; i < 40; i++) n += (size_t)sprintf(xml + n, "</d>");
    wm_exi_encoder_init(&enc, sl, &o, false, false, NULL);
    cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), out, sizeof out, &olen, &e), WM_EXI_OK, "%s", e.msg);
    wm_exi_encoder_free(&enc);
    lim = (wm_exi_limits){ .max_depth = 16 };
    wm_exi_decoder_init(&d, sl, &lim);
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, count_events, &events, NULL, &e), WM_EXI_E_DEPTH);
    wm_exi_decoder_free(&d);
    wm_exi_grammar_free(sl);
}

Test(exi_errors, impossible_event_code_and_string_index)
{
    wm_exi_grammar *sl = wm_exi_grammar_schemaless();
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.alignment = WM_EXI_BYTE_ALIGNED;
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, sl, NULL);
    long events = 0;
    wm_exi_error e;
    o.fragment = true;
    /* header, FragmentContent: SE(*), ED -> code 5 of 2 */
    const uint8_t bad_code[] = { 0x80, 0x05 };
    cr_assert_eq(wm_exi_decode(&d, bad_code, sizeof bad_code, &o, count_events, &events, NULL, &e), WM_EXI_E_EVENT_CODE);
    /* SE(*) with URI compact id 9 of 3 */
    const uint8_t bad_uri[] = { 0x80, 0x00, 0x0a };
    cr_assert_eq(wm_exi_decode(&d, bad_uri, sizeof bad_uri, &o, count_events, &events, NULL, &e), WM_EXI_E_STRING_INDEX);
    /* a name of 2^40 characters */
    const uint8_t huge[] = { 0x80, 0x00, 0x01, 0x81, 0x80, 0x80, 0x80, 0x80, 0x20 };
    memset(&e, 0, sizeof e);
    cr_assert_eq(wm_exi_decode(&d, huge, sizeof huge, &o, count_events, &events, NULL, &e), WM_EXI_E_LENGTH, "%s", e.msg);
    wm_exi_decoder_free(&d);
    wm_exi_grammar_free(sl);
}

/* ------------------------------------------------------------ grammar files */

Test(exi_grammar_io, saved_grammar_decodes_like_the_compiled_one_and_bad_files_are_refused)
{
    wm_exi_grammar *g = schema("senml/senml.gen.xsd");
    uint8_t *bytes;
    size_t blen;
    cr_assert_eq(wm_exi_grammar_serialize(g, &bytes, &blen), WM_EXI_OK);
    wm_exi_grammar *h = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_grammar_deserialize(bytes, blen, &h, &e), WM_EXI_OK, "%s", e.msg);
    for (int i = 0; i < 3; i++) {
        char rel[64];
        uint8_t *exi;
        snprintf(rel, sizeof rel, "senml/%s.gen.exi", senml[i]);
        size_t n = slurp(rel, &exi);
        wm_exi_xml_sink a, b;
        cr_assert_eq(decode_to_xml(g, exi, n, NULL, &a, &e, NULL), WM_EXI_OK);
        cr_assert_eq(decode_to_xml(h, exi, n, NULL, &b, &e, NULL), WM_EXI_OK, "%s", e.msg);
        cr_assert_str_eq(a.buf, b.buf);
        wm_exi_xml_sink_free(&a);
        wm_exi_xml_sink_free(&b);
        free(exi);
    }
    wm_exi_grammar_free(h);
    /* every truncation is refused; corrupted bytes load only as a consistent grammar */
    for (size_t k = 0; k < blen; k += 1 + k / 64) {
        memset(&e, 0, sizeof e);
        cr_assert_eq(wm_exi_grammar_deserialize(bytes, k, &h, &e), WM_EXI_E_GRAMMAR, "truncated at %zu of %zu", k, blen);
        cr_assert_null(h);
    }
    uint64_t seed = 7;
    for (int i = 0; i < 500; i++) {
        uint8_t *m = malloc(blen);
        memcpy(m, bytes, blen);
        uint64_t r = wm_senml_rand(&seed);
        m[8 + r % (blen - 8)] ^= (uint8_t)(1u << ((r >> 32) % 8));
        memset(&e, 0, sizeof e);
        if (wm_exi_grammar_deserialize(m, blen, &h, &e) == WM_EXI_OK) {
            uint8_t *exi;
            size_t n = slurp("senml/ex5.gen.exi", &exi);
            wm_exi_xml_sink a;
            decode_to_xml(h, exi, n, NULL, &a, &e, NULL); /* any status, never a crash */
            wm_exi_xml_sink_free(&a);
            free(exi);
            wm_exi_grammar_free(h);
        }
        free(m);
    }
    free(bytes);
    wm_exi_grammar_free(g);
}

/* ------------------------------------------------------------ XSD compiler */

static wm_exi_status compile_str(const char *xsd, wm_exi_error *e)
{
    wm_exi_grammar *g = NULL;
    wm_exi_status st = wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, e);
    wm_exi_grammar_free(g);
    return st;
}

Test(exi_xsd, bad_schemas_are_refused_with_reasons)
{
    wm_exi_error e = { 0 };
    cr_assert_eq(compile_str("<notaschema/>", &e), WM_EXI_E_SCHEMA);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:element name=\"a\" type=\"xs:nosuch\"/></xs:schema>", &e),
                 WM_EXI_E_SCHEMA);
    cr_assert(strstr(e.msg, "nosuch"), "%s", e.msg);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:include schemaLocation=\"http://example.com/x.xsd\"/></xs:schema>", &e),
                 WM_EXI_E_SCHEMA);
    memset(&e, 0, sizeof e);
    cr_assert_eq(compile_str("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:element name=\"a\"><xs:complexType><xs:sequence>"
                             "<xs:element name=\"b\" maxOccurs=\"50000\"/></xs:sequence></xs:complexType></xs:element></xs:schema>", &e),
                 WM_EXI_E_GRAMMAR);
}

Test(exi_xsd, grammar_features_round_trip)
{
    /* substitution groups, choice, bounded integers, enumerations, lists,
     * nillable, xsi:type to a derived type, attribute wildcard */
    const char *xsd =
        "<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\" xmlns:t=\"urn:t\" targetNamespace=\"urn:t\" elementFormDefault=\"qualified\">"
        "<xs:element name=\"head\" type=\"xs:string\" abstract=\"true\"/>"
        "<xs:element name=\"m1\" type=\"xs:string\" substitutionGroup=\"t:head\"/>"
        "<xs:element name=\"m2\" type=\"xs:string\" substitutionGroup=\"t:head\"/>"
        "<xs:simpleType name=\"small\"><xs:restriction base=\"xs:int\"><xs:minInclusive value=\"-3\"/><xs:maxInclusive value=\"9\"/></xs:restriction></xs:simpleType>"
        "<xs:simpleType name=\"color\"><xs:restriction base=\"xs:token\"><xs:enumeration value=\"red\"/><xs:enumeration value=\"blue\"/></xs:restriction></xs:simpleType>"
        "<xs:complexType name=\"base\"><xs:sequence><xs:element name=\"x\" type=\"t:small\"/></xs:sequence></xs:complexType>"
        "<xs:complexType name=\"derived\"><xs:complexContent><xs:extension base=\"t:base\"><xs:sequence>"
        "<xs:element name=\"y\" type=\"xs:dateTime\"/></xs:sequence><xs:attribute name=\"c\" type=\"t:color\"/></xs:extension></xs:complexContent></xs:complexType>"
        "<xs:element name=\"root\"><xs:complexType><xs:sequence>"
        "<xs:choice maxOccurs=\"unbounded\"><xs:element ref=\"t:head\"/><xs:element name=\"n\" type=\"xs:decimal\" nillable=\"true\"/></xs:choice>"
        "<xs:element name=\"l\"><xs:simpleType><xs:list itemType=\"xs:unsignedByte\"/></xs:simpleType></xs:element>"
        "<xs:element name=\"b\" type=\"t:base\" maxOccurs=\"3\"/>"
        "<xs:element name=\"bin\" type=\"xs:hexBinary\" minOccurs=\"0\"/>"
        "</xs:sequence><xs:anyAttribute namespace=\"##other\"/></xs:complexType></xs:element></xs:schema>";
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, &e), WM_EXI_OK, "%s", e.msg);
    const char *xml =
        "<root xmlns=\"urn:t\" xmlns:o=\"urn:o\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" o:z=\"1\">"
        "<m2>two</m2><n>-12.50</n><m1>one</m1><n xsi:nil=\"true\"/>"
        "<l> 1 2  255</l><b><x>-3</x></b><b xsi:type=\"derived\" c=\"blue\"><x>9</x><y>2010-04-28T12:00:00Z</y></b>"
        "<bin>0aff</bin></root>";
    wm_exi_options o;
    for (int strict = 0; strict < 2; strict++) {
        wm_exi_options_default(&o);
        o.strict = strict;
        if (strict) { /* strict: no undeclared attribute */
            const char *xml2 =
                "<root xmlns=\"urn:t\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">"
                "<m2>two</m2><n>-12.50</n><m1>one</m1><n xsi:nil=\"true\"/>"
                "<l> 1 2  255</l><b><x>-3</x></b><b xsi:type=\"derived\" c=\"blue\"><x>9</x><y>2010-04-28T12:00:00Z</y></b>"
                "<bin>0AFF</bin></root>";
            round_trip(g, &o, true, xml2, "xsd features strict");
        } else round_trip(g, &o, true, xml, "xsd features non-strict");
    }
    wm_exi_grammar_free(g);
}
