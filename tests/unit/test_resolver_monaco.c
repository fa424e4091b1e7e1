/* The resolver reproduces ../shared/data/world/monaco-examples.expected.json
 * exactly (sets computed independently with PostGIS) from monaco.geojson and
 * monaco-examples.nbhd, read from $WM_SHARED at test time, through the same
 * path as `wmctl resolve --json`: parse -> resolve -> resolution file -> JSON. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/nbhd.h"
#include "control/resolution.h"
#include "control/resolver.h"
#include "control/world.h"

static char path_buf[3][1024];

static const char *shared(int slot, const char *name)
{
    const char *root = getenv("WM_SHARED");
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/data/world/%s", root ? root : "../shared", name);
    return path_buf[slot];
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static wm_world *world;

static void load_world(void)
{
    wm_world_error err;
    world = wm_world_load_file(shared(0, "monaco.geojson"), NULL, &err);
    cr_assert(world, "world: %s", err.message);
}

static void free_world(void) { wm_world_free(world); }

TestSuite(resolver_monaco, .init = load_world, .fini = free_world);

Test(resolver_monaco, world_counts_match_the_readme)
{
    cr_expect_eq(wm_world_count(world), 5955);
    cr_expect_eq(wm_world_epsg(world), 32632, "the crs member names EPSG:32632, used as is");
    size_t n = 0;
    for (size_t c = 0; c < wm_world_category_count(world); c++)
        if (!strcmp(wm_world_category(world, c), "road/minor/residential")) wm_world_category_members(world, c, &n);
    cr_expect_eq(n, 1279);
    cr_expect_geq(wm_world_find(world, "r4097656.0", 10), 0);
    cr_expect_eq(wm_world_find(world, "r4097656.9", 10), -1);
}

Test(resolver_monaco, examples_match_postgis_exactly)
{
    size_t len;
    char *text = slurp(shared(1, "monaco-examples.nbhd"), &len);
    wm_nbhd_file nf;
    wm_nbhd_error ne;
    cr_assert_eq(wm_nbhd_parse(text, len, &nf, &ne), WM_NBHD_OK, "%u:%u %s", ne.pos.line, ne.pos.col, ne.message);
    cr_assert_eq(nf.n_nbhds, 5);
    wm_resolution_builder *b = wm_resolution_builder_new(world);
    for (size_t k = 0; k < nf.n_nbhds; k++) {
        wm_nbhd_result r;
        cr_assert_eq(wm_resolve(world, &nf.nbhds[k], &r, &ne), WM_NBHD_OK, "%s", ne.message);
        cr_assert_eq(wm_resolution_builder_add(b, nf.nbhds[k].name, &r, NULL), WM_RESOLUTION_OK);
        wm_nbhd_result_free(&r);
    }
    void *buf;
    size_t blen;
    cr_assert_eq(wm_resolution_builder_finish(b, &buf, &blen, NULL), WM_RESOLUTION_OK);
    wm_resolution *res = wm_resolution_view(buf, blen, NULL);
    cr_assert(res);
    char *out = NULL;
    size_t olen = 0;
    FILE *mem = open_memstream(&out, &olen);
    cr_assert_eq(wm_resolution_print_json(res, mem), 0);
    fclose(mem);

    json_error_t je;
    json_t *got = json_loads(out, 0, &je);
    cr_assert(got, "our JSON does not parse: %s", je.text);
    json_t *want = json_load_file(shared(2, "monaco-examples.expected.json"), 0, &je);
    cr_assert(want, "expected JSON: %s", je.text);
    cr_expect_eq(json_object_size(got), json_object_size(want));
    const char *name;
    json_t *wv;
    json_object_foreach(want, name, wv) {
        json_t *gv = json_object_get(got, name);
        cr_assert(gv, "%s missing", name);
        const char *stage;
        json_t *ws;
        json_object_foreach(json_object_get(wv, "stages"), stage, ws) {
            json_t *gs = json_object_get(json_object_get(gv, "stages"), stage);
            cr_expect(json_equal(gs, ws), "%s stage %s: %zu peids, PostGIS has %zu", name, stage,
                      json_array_size(gs), json_array_size(ws));
        }
        cr_expect(json_equal(json_object_get(gv, "result"), json_object_get(wv, "result")), "%s result differs", name);
        cr_expect_eq(json_object_size(json_object_get(gv, "stages")), json_object_size(json_object_get(wv, "stages")));
    }
    cr_expect(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(out);
    wm_resolution_close(res);
    free(buf);
    wm_resolution_builder_free(b);
    wm_nbhd_file_free(&nf);
    free(text);
}

/* The on-line path gives the same sets as the file path. */
Test(resolver_monaco, resolve_text_online)
{
    wm_nbhd_result r;
    wm_nbhd_error ne;
    const char *line = "X4: ({r176334442.2}, {road/#}, E) . (Anc, {road/#}, T)";
    cr_assert_eq(wm_resolve_text(world, line, strlen(line), &r, &ne), WM_NBHD_OK, "%s", ne.message);
    cr_assert_eq(r.n_stages, 2);
    cr_expect_eq(r.stage_len[0], 1, "one other edge is geometrically equal to r176334442.2");
    cr_expect_eq(r.result_len, r.stage_len[0] + r.stage_len[1] - 0);
    wm_nbhd_result_free(&r);
    const char *bad = "Y: ({r0.nope}, {road/#}, T)";
    cr_expect_eq(wm_resolve_text(world, bad, strlen(bad), &r, &ne), WM_NBHD_ERR_UNKNOWN_PEID);
    cr_expect_eq(ne.pos.line, 1);
    cr_expect_eq(ne.pos.col, 6);
}
