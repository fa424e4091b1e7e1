/* The schema registry (control/schema_registry.h), the Content Type binding
 * and the content-filter entry point over several schemas
 * (matcher/xpath_set.h): a publication's schema id + payload + candidate
 * query ids in, the matching candidates out. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/schema_registry.h"
#include "tests/lib/exi_fixture.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

static const char *senml_xsd(void)
{
    static char p[1024];
    const char *sh = getenv("WM_SHARED");
    char rel[1024];
    snprintf(rel, sizeof rel, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    cr_assert(realpath(rel, p), "%s", rel);
    return p;
}

static const char tiny_xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'><xs:element name='m'><xs:complexType>"
    "<xs:attribute name='k' type='xs:int'/></xs:complexType></xs:element></xs:schema>";

static wm_schema_reg *load(const char *text, char *err)
{
    write_file("reg.txt", text);
    char p[256];
    snprintf(p, sizeof p, "%s/reg.txt", dir);
    wm_schema_reg *r = NULL;
    if (wm_schema_reg_load(p, &r, err, 512)) return NULL;
    return r;
}

static void setup(void)
{
    strcpy(dir, "/tmp/wm_schema_reg_XXXXXX");
    cr_assert(mkdtemp(dir));
    write_file("tiny.xsd", tiny_xsd);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(schema_registry, .init = setup, .fini = teardown);

Test(schema_registry, load_find_and_errors)
{
    char text[2048], err[512];
    snprintf(text, sizeof text, "# registry\n\nsenml %s s=urn:ietf:params:xml:ns:senml  # the RFC 8428 schema\ntiny tiny.xsd\n", senml_xsd());
    wm_schema_reg *r = load(text, err);
    cr_assert(r, "%s", err);
    cr_assert_eq(r->n, 2);
    cr_assert_eq(wm_schema_reg_find(r, "senml", 5), 0);
    cr_assert_eq(wm_schema_reg_find(r, "tiny", 4), 1);
    cr_assert_eq(wm_schema_reg_find(r, "Tiny", 4), UINT32_MAX);
    cr_assert_eq(r->e[0].n_ns, 1);
    cr_assert_str_eq(r->e[0].ns[0].prefix, "s");
    cr_assert(strstr(r->e[1].path, dir), "relative path resolved from the registry's directory: %s", r->e[1].path);
    wm_schema_reg_free(r);

    static const struct { const char *text, *needle; } bad[] = {
        { "tiny tiny.xsd\ntiny tiny.xsd\n", "reg.txt:2: schema 'tiny' defined twice" },
        { "bad/name tiny.xsd\n", "reg.txt:1: bad schema name" },
        { "tiny\n", "reg.txt:1: schema 'tiny' has no XSD path" },
        { "tiny tiny.xsd s\n", "reg.txt:1: bad namespace binding 's'" },
        { "\n\nnone missing.xsd\n", "reg.txt:3: schema" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(load(bad[i].text, err), "accepted: %s", bad[i].text);
        cr_assert(strstr(err, bad[i].needle), "'%s' lacks '%s'", err, bad[i].needle);
    }
    wm_schema_reg *none = NULL;
    cr_assert_eq(wm_schema_reg_load("/nonexistent/reg.txt", &none, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot open"));
}

Test(schema_registry, content_type)
{
    static const struct { const char *ct, *name; } ok[] = {
        { "application/exi; schema=senml", "senml" },
        { "Application/EXI;schema=\"senml\"", "senml" },
        { "application/exi ; charset=x ; SCHEMA=a.b-c", "a.b-c" },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *n;
        size_t nl;
        cr_assert(wm_exi_content_type_schema(ok[i].ct, strlen(ok[i].ct), &n, &nl), "%s", ok[i].ct);
        cr_assert_eq(nl, strlen(ok[i].name));
        cr_assert_eq(memcmp(n, ok[i].name, nl), 0, "%s", ok[i].ct);
    }
    static const char *const no[] = { "application/exi", "application/exist; schema=a", "text/xml; schema=a",
                                      "application/exi; schema=", "application/exi; schema=\"a", "application/exi; schema=a; schema=b",
                                      "application/exi schema=a" };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        const char *n;
        size_t nl;
        cr_assert_not(wm_exi_content_type_schema(no[i], strlen(no[i]), &n, &nl), "accepted %s", no[i]);
    }
}

static size_t encode(const wm_exi_grammar *g, const char *xml, uint8_t *out, size_t cap)
{
    wm_exi_error e;
    size_t n = wm_test_exi_encode(g, xml, false, out, cap, &e);
    cr_assert(n, "%s", e.msg);
    return n;
}

Test(schema_registry, entry_point_over_schemas)
{
    char text[2048], err[512];
    snprintf(text, sizeof text, "senml %s s=urn:ietf:params:xml:ns:senml\ntiny tiny.xsd\n", senml_xsd());
    wm_schema_reg *r = load(text, err);
    cr_assert(r, "%s", err);
    wm_xpf_schema sch[2];
    wm_schema_reg_schemas(r, sch);
    /* query ids 0..4: subscriptions' xpath properties with their schema */
    const wm_xpf_query_def qd[] = {
        { 0, "//s:senml[@n = 'temperature' and @v > 20]" },
        { 1, "/m[@k = 3]" },
        { 0, "//s:senml[@u = 'V']" },
        { 1, "/m[@k > 100]" },
        { 0, "/s:sensml" },
    };
    wm_xpf_set *set = NULL;
    wm_xpf_error fe;
    cr_assert_eq(wm_xpf_set_build(sch, 2, qd, 5, &set, &fe), WM_XPF_OK, "%u: %s", fe.query, fe.msg);
    wm_xpf_set_ctx *c = wm_xpf_set_ctx_new(set, NULL);
    cr_assert(c);
    uint8_t p1[1024], p2[256];
    const char *ct = "application/exi; schema=senml";
    const char *nm;
    size_t nl;
    cr_assert(wm_exi_content_type_schema(ct, strlen(ct), &nm, &nl));
    uint32_t sid = wm_schema_reg_find(r, nm, nl);
    cr_assert_eq(sid, 0);
    size_t l1 = encode(r->e[0].g, "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='temperature' u='Cel' v='21.5'/></sensml>", p1, sizeof p1);
    size_t l2 = encode(r->e[1].g, "<m k='3'/>", p2, sizeof p2);
    uint32_t all[] = { 0, 1, 2, 3, 4 }, out[5], n;
    wm_exi_error e;
    cr_assert_eq(wm_xpf_set_match(c, sid, p1, l1, NULL, all, 5, out, &n, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 4);
    cr_assert_eq(wm_xpf_set_match(c, 1, p2, l2, NULL, all, 5, out, &n, &e), WM_XPF_OK, "%s", e.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 1);
    /* only candidates of another schema: the payload is not decoded (garbage is fine) */
    uint32_t other[] = { 1, 3 };
    cr_assert_eq(wm_xpf_set_match(c, 0, (const uint8_t *)"junk", 4, NULL, other, 2, out, &n, &e), WM_XPF_OK);
    cr_assert_eq(n, 0);
    /* a candidate of this schema and a bad payload: a decode error */
    uint32_t mine[] = { 2 };
    cr_assert_eq(wm_xpf_set_match(c, 0, (const uint8_t *)"junk", 4, NULL, mine, 1, out, &n, &e), WM_XPF_E_DECODE);
    cr_assert_eq(wm_xpf_set_match(c, 7, p1, l1, NULL, mine, 1, out, &n, &e), WM_XPF_E_QUERY);
    /* a query of an unknown schema id is refused at build */
    const wm_xpf_query_def badq[] = { { 2, "/m" } };
    wm_xpf_set *s2 = NULL;
    cr_assert_eq(wm_xpf_set_build(sch, 2, badq, 1, &s2, &fe), WM_XPF_E_QUERY);
    cr_assert_eq(fe.query, 0);
    wm_xpf_set_ctx_free(c);
    wm_xpf_set_free(set);
    wm_schema_reg_free(r);
}
