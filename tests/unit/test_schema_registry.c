/* The schema registry (control/schema_registry.h), the Content Type binding
 * and the content-filter entry point over several schemas
 * (matcher/xpath_set.h): a publication's schema id + payload + candidate
 * query ids in, the matching candidates out. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/content_filters.h"
#include "control/schema_registry.h"
#include "control/tables.h"
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

/* ------------------------------------------- the data plane's content table */

static wm_content *content_of(const char *text, char *err)
{
    wm_schema_reg *r = load(text, err);
    cr_assert(r, "%s", err);
    wm_content *c = wm_content_new(r);
    cr_assert(c);
    return c;
}

static enum wm_content_outcome cmatch(wm_content_reader *rd, const char *ct, const uint8_t *p, size_t len,
                                      const uint32_t *slots, uint32_t n, bool *pass)
{
    wm_exi_error e = { 0 };
    return wm_content_match(rd, ct, ct ? strlen(ct) : 0, p, len, slots, n, pass, &e);
}

/* Slots: one per distinct text, reference counted, never reused; a filter is
 * refused only when it compiles for no schema (with the first schema's
 * reason); per publication, only the schema its Content Type names counts. */
Test(schema_registry, content_table)
{
    char text[2048], err[512];
    snprintf(text, sizeof text, "senml %s s=urn:ietf:params:xml:ns:senml\ntiny tiny.xsd\n", senml_xsd());
    wm_content *c = content_of(text, err);
    const char *qv = "//s:senml[@u = 'V']", *qk = "/m[@k = 3]";
    uint32_t a, k, dup;
    cr_assert_eq(wm_content_ref(c, qv, strlen(qv), &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(wm_content_ref(c, qv, strlen(qv), &dup, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dup, a, "one slot per distinct text");
    cr_assert_eq(wm_content_ref(c, qk, strlen(qk), &k, err, sizeof err), 0, "%s", err);
    static const struct { const char *q, *needle; } bad[] = {
        { "//s:senml[@v = '1']", "schema senml: position 11: string test on @v" },   /* tiny: 's' unbound */
        { "//s:senml[@v >", "schema senml: position 15" },
        { "", "empty XPath query" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t s = 99;
        cr_assert_eq(wm_content_ref(c, bad[i].q, strlen(bad[i].q), &s, err, sizeof err), -1, "accepted %s", bad[i].q);
        cr_assert_eq(s, 0);
        cr_assert(strstr(err, bad[i].needle), "'%s' lacks '%s'", err, bad[i].needle);
    }
    cr_assert_eq(wm_content_count(c), 2);
    wm_content_snap *old = (wm_content_snap *)1;
    cr_assert_eq(wm_content_commit(c, &old, err, sizeof err), 0, "%s", err);
    cr_assert_null(old);
    const wm_content_snap *s1 = wm_content_current(c);
    cr_assert(s1);
    wm_content_reader *rd = wm_content_reader_new(s1, NULL);
    cr_assert(rd);

    const wm_schema_reg *r = wm_content_registry(c);
    uint8_t pv[1024], pk[256];
    size_t lv = encode(r->e[0].g, "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='x' u='V' v='1'/></sensml>", pv, sizeof pv);
    size_t lk = encode(r->e[1].g, "<m k='3'/>", pk, sizeof pk);
    const char *senml = "application/exi; schema=senml", *tiny = "application/exi; schema=tiny";
    uint32_t slots[] = { a, k, a };
    bool pass[3];
    cr_assert_eq(cmatch(rd, senml, pv, lv, slots, 3, pass), WM_CONTENT_OK);
    cr_assert(pass[0] && !pass[1] && pass[2], "qv holds on the senml pack; qk does not apply to senml");
    cr_assert_eq(cmatch(rd, tiny, pk, lk, slots, 3, pass), WM_CONTENT_OK);
    cr_assert(!pass[0] && pass[1] && !pass[2]);
    /* a filter that applies only to another schema: nothing to decode */
    cr_assert_eq(cmatch(rd, tiny, pk, lk, slots, 1, pass), WM_CONTENT_NOT_APPLICABLE);
    cr_assert_eq(cmatch(rd, NULL, pv, lv, slots, 3, pass), WM_CONTENT_NO_CONTENT_TYPE);
    cr_assert_eq(cmatch(rd, "application/json", pv, lv, slots, 3, pass), WM_CONTENT_NOT_EXI);
    cr_assert_eq(cmatch(rd, "application/exi; schema=nope", pv, lv, slots, 3, pass), WM_CONTENT_UNKNOWN_SCHEMA);
    /* whole-stream validation: every cut of the payload is an error, never a pass */
    for (size_t cut = 0; cut < lv; cut++) {
        cr_assert_eq(cmatch(rd, senml, pv, cut, slots, 3, pass), WM_CONTENT_DECODE_ERROR, "cut at %zu", cut);
        cr_assert(!pass[0] && !pass[1] && !pass[2]);
    }

    /* a slot the reader's snapshot does not know yet (no commit) never passes */
    const char *qn = "//s:senml[@n = 'x']";
    uint32_t n;
    cr_assert_eq(wm_content_ref(c, qn, strlen(qn), &n, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cmatch(rd, senml, pv, lv, &n, 1, pass), WM_CONTENT_NOT_APPLICABLE);
    /* dropping references: the text stays while referenced, its slot is not reused */
    wm_content_unref(c, a);
    cr_assert_str_eq(wm_content_text(c, a), qv);
    wm_content_unref(c, a);
    cr_assert_null(wm_content_text(c, a));
    uint32_t again;
    cr_assert_eq(wm_content_ref(c, qv, strlen(qv), &again, err, sizeof err), 0, "%s", err);
    cr_assert_neq(again, a);
    cr_assert_eq(wm_content_commit(c, &old, err, sizeof err), 0, "%s", err);
    cr_assert_eq(old, s1, "commit hands back the replaced snapshot");
    /* a reader context is freed without reading its (already freed) snapshot */
    wm_content_snap_free(old);
    wm_content_reader_free(rd);
    rd = wm_content_reader_new(wm_content_current(c), NULL);
    uint32_t s2[] = { a, again, n };
    cr_assert_eq(cmatch(rd, senml, pv, lv, s2, 3, pass), WM_CONTENT_OK);
    cr_assert(!pass[0] && pass[1] && pass[2], "the dropped slot is dead; the new ones decide");
    wm_content_reader_free(rd);
    wm_content_free(c);

    /* without a registry every filter is refused */
    wm_content *none = wm_content_new(NULL);
    cr_assert_eq(wm_content_ref(none, qv, strlen(qv), &a, err, sizeof err), -1);
    cr_assert(strstr(err, "no schema registry"), "%s", err);
    wm_content_free(none);
}

/* The table set: --subs lines with "xpath" go into the set's content table;
 * a bad one fails the whole compile with file, line and reason. */
Test(schema_registry, tables_with_schemas)
{
    char text[2048], err[512], reg[256], subs[256];
    snprintf(text, sizeof text, "senml %s s=urn:ietf:params:xml:ns:senml\n", senml_xsd());
    write_file("reg.txt", text);
    write_file("good.jsonl", "{\"id\": 1, \"client\": \"a\", \"filter\": \"t/#\", \"xpath\": \"//s:senml[@v > 1]\"}\n"
                             "{\"id\": 2, \"client\": \"b\", \"filter\": \"t/#\", \"xpath\": \"//s:senml[@v > 1]\"}\n"
                             "{\"id\": 3, \"client\": \"c\", \"filter\": \"t/#\"}\n");
    write_file("bad.jsonl", "{\"id\": 1, \"client\": \"a\", \"filter\": \"t/#\"}\n"
                            "{\"id\": 2, \"client\": \"b\", \"filter\": \"t/#\", \"xpath\": \"//s:senml[@v = 'x']\"}\n");
    snprintf(reg, sizeof reg, "%s/reg.txt", dir);
    snprintf(subs, sizeof subs, "%s/good.jsonl", dir);
    wm_tables_paths p = { NULL, subs, reg };
    wm_tables *t = wm_tables_compile_paths(NULL, &p, err, sizeof err);
    cr_assert(t, "%s", err);
    cr_assert_eq(wm_content_count(wm_tables_content(t)), 1);
    cr_assert(wm_content_current(wm_tables_content(t)), "committed at compile");
    wm_tables_free(t);
    snprintf(subs, sizeof subs, "%s/bad.jsonl", dir);
    cr_assert_null(wm_tables_compile_paths(NULL, &p, err, sizeof err));
    cr_assert(strstr(err, "bad.jsonl:2: \"xpath\": schema senml: position 11: string test on @v"), "%s", err);
    p.schemas = NULL;
    snprintf(subs, sizeof subs, "%s/good.jsonl", dir);
    cr_assert_null(wm_tables_compile_paths(NULL, &p, err, sizeof err));
    cr_assert(strstr(err, "good.jsonl:1: \"xpath\": no schema registry"), "%s", err);
}
