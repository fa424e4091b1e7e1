/* Resolver and resolution-file benchmarks on the Monaco world (issue 4):
 *   bm_road_adjacency          every road edge's Touches set among road edges
 *                              (5,436 one-stage neighborhoods per iteration)   <= 150 ms
 *   bm_one_stage               ({r357167409.0}, {road/#}, T)                    <= 1 ms
 *   bm_zone_three_hops         ({z12_5}, {road/#}, C) . 3(Prev, {road/#}, T)    <= 5 ms
 *                              (spaPS Table II N5: a zone, then three hops)
 *   bm_load_resolution_10000   wm_resolution_open + close of a file holding
 *                              10,000 resolved neighborhoods                    <= 50 ms
 * The world is loaded once ($WM_SHARED or ../shared); prepared references are
 * cached in it, as in the on-line resolver. bm_road_adjacency also reports
 * cold_ms: the first pass, when every reference is prepared for the first
 * time. perf/resolver_vs_postgis.sh times the same queries in PostGIS:
 *   WM_RESOLVER_BENCH=build/bench/bench_resolver \
 *   WM_RESOLVER_BENCH_NAMES=adjacency=bm_road_adjacency,one_stage=bm_one_stage,four_stage=bm_zone_three_hops \
 *   perf/resolver_vs_postgis.sh 15
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/nbhd.h"
#include "control/resolution.h"
#include "control/resolver.h"
#include "control/world.h"
#include "perf/bench.h"

static wm_world *world;

static wm_world *get_world(wm_bench_state *st)
{
    if (world) return world;
    const char *root = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/world/monaco.geojson", root ? root : "../shared");
    wm_world_error err;
    world = wm_world_load_file(path, NULL, &err);
    if (!world) wm_bench_skip_with_error(st, err.message);
    return world;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One neighborhood per road edge: ({edge}, {road/#}, T). */
static wm_nbhd_file road_adjacency_nbhds(wm_world *w)
{
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    for (size_t c = 0; c < wm_world_category_count(w); c++) {
        if (strncmp(wm_world_category(w, c), "road/", 5)) continue;
        size_t n;
        const uint32_t *m = wm_world_category_members(w, c, &n);
        for (size_t k = 0; k < n; k++) {
            if (len + 256 > cap) text = realloc(text, cap *= 2);
            len += (size_t)snprintf(text + len, 256, "a%u: ({%s}, {road/#}, T)\n", m[k], wm_world_peid(w, m[k]));
        }
    }
    wm_nbhd_file f;
    wm_nbhd_error e;
    if (wm_nbhd_parse(text, len, &f, &e) != WM_NBHD_OK) { fprintf(stderr, "%s\n", e.message); abort(); }
    free(text);
    return f;
}

static void bm_road_adjacency(wm_bench_state *st)
{
    wm_world *w = get_world(st);
    if (!w) return;
    wm_nbhd_file f = road_adjacency_nbhds(w);
    size_t pairs = 0;
    double t0 = now_ms();
    for (size_t k = 0; k < f.n_nbhds; k++) {
        wm_nbhd_result r;
        wm_resolve(w, &f.nbhds[k], &r, NULL);
        pairs += r.result_len;
        wm_nbhd_result_free(&r);
    }
    double cold = now_ms() - t0;
    while (wm_bench_keep_running_batch(st, 1)) {
        for (size_t k = 0; k < f.n_nbhds; k++) {
            wm_nbhd_result r;
            wm_resolve(w, &f.nbhds[k], &r, NULL);
            wm_bench_do_not_optimize(r.result);
            wm_nbhd_result_free(&r);
        }
    }
    wm_bench_counter(st, "edges", (double)f.n_nbhds);
    wm_bench_counter(st, "touch_pairs", (double)pairs);
    wm_bench_counter(st, "cold_ms", cold);
    wm_bench_set_items_processed(st, wm_bench_iterations(st) * (int64_t)f.n_nbhds);
    wm_nbhd_file_free(&f);
}
WM_BENCH(bm_road_adjacency);

static void bench_line(wm_bench_state *st, const char *line)
{
    wm_world *w = get_world(st);
    if (!w) return;
    wm_nbhd n;
    wm_nbhd_error e;
    if (wm_nbhd_parse_one(line, strlen(line), &n, &e) != WM_NBHD_OK) { wm_bench_skip_with_error(st, e.message); return; }
    wm_nbhd_result r;
    size_t size = 0;
    if (wm_resolve(w, &n, &r, &e) != WM_NBHD_OK) { wm_bench_skip_with_error(st, e.message); wm_nbhd_free(&n); return; }
    size = r.result_len;
    wm_nbhd_result_free(&r);
    while (wm_bench_keep_running_batch(st, 1)) {
        wm_resolve(w, &n, &r, NULL);
        wm_bench_do_not_optimize(r.result);
        wm_nbhd_result_free(&r);
    }
    wm_bench_counter(st, "result_peids", (double)size);
    wm_nbhd_free(&n);
}

static void bm_one_stage(wm_bench_state *st) { bench_line(st, "one_stage: ({r357167409.0}, {road/#}, T)"); }
WM_BENCH(bm_one_stage);

static void bm_zone_three_hops(wm_bench_state *st)
{
    bench_line(st, "four_stage: ({z12_5}, {road/#}, C) . 3(Prev, {road/#}, T)");
}
WM_BENCH(bm_zone_three_hops);

/* 10,000 two-stage neighborhoods over the road edges: ({edge}, {road/#},
 * DW100) . (Anc, {road/#}, T), resolved once, written, then opened (mmap +
 * full validation: checksums, ranges, ordering) per iteration. */
static void bm_load_resolution_10000(wm_bench_state *st)
{
    wm_world *w = get_world(st);
    if (!w) return;
    wm_nbhd_file f = road_adjacency_nbhds(w);
    wm_resolution_builder *b = wm_resolution_builder_new(w);
    char line[512], name[32];
    for (size_t k = 0; k < 10000; k++) {
        const wm_nbhd *a = &f.nbhds[k % f.n_nbhds];
        snprintf(name, sizeof name, "n%zu", k);
        snprintf(line, sizeof line, "%s: ({%s}, {road/#}, DW100) . (Anc, {road/#}, T)", name, a->stages[0].peids[0].peid);
        wm_nbhd_result r;
        wm_nbhd_error e;
        if (wm_resolve_text(w, line, strlen(line), &r, &e) != WM_NBHD_OK) {
            wm_bench_skip_with_error(st, e.message);
            return;
        }
        wm_resolution_builder_add(b, name, &r, NULL);
        wm_nbhd_result_free(&r);
    }
    void *buf;
    size_t len;
    wm_resolution_error err;
    char path[] = "/tmp/wm_bench_resolution_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || wm_resolution_builder_finish(b, &buf, &len, &err) != WM_RESOLUTION_OK ||
        wm_resolution_write_file(path, buf, len, &err) != WM_RESOLUTION_OK) {
        wm_bench_skip_with_error(st, "cannot build the resolution file");
        return;
    }
    close(fd);
    uint64_t members = 0;
    while (wm_bench_keep_running_batch(st, 1)) {
        wm_resolution *r = wm_resolution_open(path, &err);
        if (!r) { wm_bench_skip_with_error(st, err.message); break; }
        members = 0;
        wm_resolution_nbhd nb;
        wm_resolution_get(r, wm_resolution_count(r) - 1, &nb);
        members += nb.result_len;
        wm_resolution_close(r);
    }
    wm_bench_counter(st, "file_bytes", (double)len);
    wm_bench_counter(st, "nbhds", 10000);
    wm_bench_do_not_optimize(&members);
    unlink(path);
    free(buf);
    wm_resolution_builder_free(b);
    wm_nbhd_file_free(&f);
}
WM_BENCH(bm_load_resolution_10000);
