/* How long a data-plane worker stops matching when SUBSCRIBEs bring new
 * content filters (dataplane/match_sink.h, "When a new content filter
 * applies"). One worker thread runs the data plane's loop shape: per
 * iteration it takes (during the burst) one SUBSCRIBE with a new XPath
 * text of the content-filter benchmark's query mix (perf/exi_senml_gen.h,
 * the same mix as bench_exi_filter), matches one PUBLISH (a SenML pack,
 * against a filter compiled before the burst, which must match) and passes
 * its quiescent state. The run ends when every filter of the burst is
 * compiled. In one run, for a burst of N SUBSCRIBEs:
 *
 *   bm_stall_on_worker/N       the compile on the worker, per SUBSCRIBE, as
 *                              the data plane did before (the same work:
 *                              wm_match_table_compile called by the worker
 *                              after each SUBSCRIBE)
 *   bm_stall_compile_thread/N  the compile on a control thread (the data
 *                              plane's reload_ctl loop: compile, then wait
 *                              for work); the worker only subscribes
 *
 * Counters: sub_cpu_max_us / sub_cpu_mean_us = worker thread CPU time of
 * one SUBSCRIBE (with its compile where the worker does it; thread CPU time,
 * so other processes on the machine do not count), iter_cpu_max_us = the
 * worker's longest loop iteration in thread CPU time (the stall as work the
 * worker does instead of polling; the per-iteration clock read is in it;
 * spinning on the writer lock while its holder is preempted counts too),
 * iter_cpu_p999_us its 99.9th percentile, iters_over_1ms = iterations of
 * more than 1 ms worker CPU per burst,
 * gap_max_us /
 * gap_p999_us = wall time between two loop iterations of the worker (other
 * processes DO count here: compare the two modes of the same run), compiles
 * = compiles the burst took, burst_ms = wall time from the first SUBSCRIBE
 * until every filter is compiled, iters = worker iterations in that time.
 * One benchmark iteration = one burst on a fresh table.
 * Reproduce: make build/bench/bench_content_stall && build/bench/bench_content_stall
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "dataplane/match_sink.h"
#include "perf/bench.h"
#include "perf/exi_senml_gen.h"
#include "perf/senml_schema.h"

static struct {
    bool ready;
    char dir[64], reg[128];
    uint8_t pack[512];
    size_t pack_len;
} W;

static bool setup(wm_bench_state *st)
{
    if (W.ready) return true;
    wm_exi_grammar *g;
    if (!wm_bench_senml_grammar(st, &g)) return false;
    const char *sh = getenv("WM_SHARED");
    char rel[512], xsd[1024];
    snprintf(rel, sizeof rel, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    strcpy(W.dir, "/tmp/wm_stall_XXXXXX");
    if (!realpath(rel, xsd) || !mkdtemp(W.dir)) {
        wm_bench_skip_with_error(st, "no schema or temporary directory");
        return false;
    }
    snprintf(W.reg, sizeof W.reg, "%s/reg.txt", W.dir);
    FILE *f = fopen(W.reg, "w");
    if (!f) return false;
    fprintf(f, "senml %s s=urn:ietf:params:xml:ns:senml\n", xsd);
    fclose(f);
    const char *xml = "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='temperature' u='Cel' v='21.5'/></sensml>";
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    wm_exi_error e = { 0 };
    wm_exi_status es = wm_exi_encode_xml(&enc, xml, strlen(xml), W.pack, sizeof W.pack, &W.pack_len, &e);
    wm_exi_encoder_free(&enc);
    wm_exi_grammar_free(g);
    if (es) {
        wm_bench_skip_with_error(st, "the SenML pack does not encode");
        return false;
    }
    W.ready = true;
    return true;
}

static uint64_t ns_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static wm_mqtt5_bytes bytes(const char *s) { return (wm_mqtt5_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) }; }

struct ctl {
    struct wm_match_table *t;
    atomic_bool stop;
};

static void *ctl_main(void *arg)
{
    struct ctl *c = arg;
    while (!atomic_load(&c->stop))
        if (wm_match_table_compile(c->t) != 1) wm_match_table_wait_work(c->t, 1);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct figures {
    double sub_cpu_max, sub_cpu_sum, iter_cpu_max, iter_cpu_p999, over_1ms, gap_max, gap_p999, compiles, burst_ms, iters;
    unsigned subs;
};

static uint64_t pending(struct wm_match_table *t)
{
    struct wm_match_counters c;
    wm_match_table_counters(t, &c);
    return c.xpath_pending;
}

/* One burst of n SUBSCRIBEs on a fresh table; false on an error (st marked). */
static bool burst(wm_bench_state *st, unsigned n, bool on_worker, struct figures *fg)
{
    wm_load_error err;
    struct wm_match_table *t = wm_match_table_new(NULL, NULL, W.reg, 65536, &err);
    if (!t) {
        wm_bench_skip_with_error(st, err.reason);
        return false;
    }
    struct ctl c = { t, false };
    pthread_t th;
    bool ok = on_worker || pthread_create(&th, NULL, ctl_main, &c) == 0;
    char werr[512];
    struct wm_match_worker *w = ok ? wm_match_worker_new(t, NULL, werr, sizeof werr) : NULL;
    struct wm_mqtt_sink sk = w ? wm_match_worker_sink(w) : (struct wm_mqtt_sink){ 0 };
    wm_mqtt5_packet pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.type = WM_MQTT5_PUBLISH;
    pkt.props.present = 1ull << WM_MQTT5_PROP_CONTENT_TYPE;
    pkt.props.v[WM_MQTT5_PROP_CONTENT_TYPE].s = bytes("application/exi; schema=senml");
    pkt.payload = (wm_mqtt5_bytes){ W.pack, (uint32_t)W.pack_len };
    struct wm_mqtt_publish p;
    memset(&p, 0, sizeof p);
    p.client = "pub";
    p.client_len = 3;
    p.topic = "ready";
    p.topic_len = 5;
    p.pkt = &pkt;
    /* the filter every iteration matches against, compiled before the burst */
    struct wm_mqtt_subscribe ready = { "r", 1, bytes("ready"), 0, { 0 }, bytes("//s:senml[@u = 'Cel']"), 0, false, 0 };
    if (w && sk.subscribe(sk.ctx, &ready) != WM_MQTT_SUB_INSTALLED) ok = false;
    while (w && ok && pending(t)) {
        if (on_worker) wm_match_table_compile(t);
        wm_match_worker_quiescent(w, 0);
    }
    struct wm_match_counters c0;
    wm_match_table_counters(t, &c0);
    size_t cap = 1 << 16, ng = 0;
    uint64_t *gap = malloc(cap * sizeof *gap), *cpu_it = malloc(cap * sizeof *cpu_it);
    uint64_t seed = 0x5eed + n;
    uint64_t t_start = ns_of(CLOCK_MONOTONIC), t_prev = t_start, iters = 0;
    uint64_t cpu_prev = ns_of(CLOCK_THREAD_CPUTIME_ID);
    for (unsigned i = 0; w && ok && gap && cpu_it; i++) {
        if (i < n) {
            char q[512], topic[32];
            wm_senml_gen_query(&seed, q, sizeof q);
            snprintf(topic, sizeof topic, "b/%u", i);
            struct wm_mqtt_subscribe s = { "b", 1, bytes(topic), 0, { 0 }, bytes(q), 0, false, 0 };
            uint64_t c_0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
            if (sk.subscribe(sk.ctx, &s) != WM_MQTT_SUB_INSTALLED) ok = false;
            if (on_worker) wm_match_table_compile(t);
            double us = (double)(ns_of(CLOCK_THREAD_CPUTIME_ID) - c_0) / 1e3;
            fg->sub_cpu_sum += us;
            if (us > fg->sub_cpu_max) fg->sub_cpu_max = us;
            fg->subs++;
        }
        p.seq = ++iters;
        if (sk.publish(sk.ctx, &p) != WM_MQTT_PUB_MATCHED) ok = false;
        wm_match_worker_quiescent(w, 0);
        uint64_t now = ns_of(CLOCK_MONOTONIC), cpu = ns_of(CLOCK_THREAD_CPUTIME_ID);
        if (ng == cap) {
            uint64_t *ngap = realloc(gap, 2 * cap * sizeof *gap), *ncpu = ngap ? realloc(cpu_it, 2 * cap * sizeof *gap) : NULL;
            if (ngap) gap = ngap;
            if (ncpu) cpu_it = ncpu;
            if (!ngap || !ncpu) break;
            cap *= 2;
        }
        cpu_it[ng] = cpu - cpu_prev;
        cpu_prev = cpu;
        gap[ng++] = now - t_prev;
        t_prev = now;
        if (i >= n && (i & 63) == 0 && !pending(t)) break;
    }
    uint64_t t_end = ns_of(CLOCK_MONOTONIC);
    struct wm_match_counters c1;
    wm_match_table_counters(t, &c1);
    if (!on_worker && ok) {
        atomic_store(&c.stop, true);
        pthread_join(th, NULL);
    }
    wm_match_worker_free(w);
    wm_match_table_free(t);
    if (!ok || !w || !gap || !cpu_it || !ng) {
        free(gap);
        free(cpu_it);
        wm_bench_skip_with_error(st, "a SUBSCRIBE or PUBLISH was not taken as expected");
        return false;
    }
    qsort(gap, ng, sizeof *gap, cmp_u64);
    qsort(cpu_it, ng, sizeof *cpu_it, cmp_u64);
    double cmax = (double)cpu_it[ng - 1] / 1e3, c999 = (double)cpu_it[(size_t)((double)(ng - 1) * 0.999)] / 1e3;
    if (cmax > fg->iter_cpu_max) fg->iter_cpu_max = cmax;
    if (c999 > fg->iter_cpu_p999) fg->iter_cpu_p999 = c999;
    for (size_t k = 0; k < ng; k++) fg->over_1ms += cpu_it[k] > 1000000;
    double gmax = (double)gap[ng - 1] / 1e3, g999 = (double)gap[(size_t)((double)(ng - 1) * 0.999)] / 1e3;
    if (gmax > fg->gap_max) fg->gap_max = gmax;
    if (g999 > fg->gap_p999) fg->gap_p999 = g999;
    fg->compiles += (double)(c1.xpath_compiles - c0.xpath_compiles);
    fg->burst_ms += (double)(t_end - t_start) / 1e6;
    fg->iters += (double)iters;
    free(gap);
    free(cpu_it);
    return true;
}

static void run(wm_bench_state *st, bool on_worker)
{
    if (!setup(st)) return;
    unsigned n = (unsigned)wm_bench_arg(st);
    struct figures fg = { 0 };
    int64_t bursts = 0;
    while (wm_bench_keep_running_batch(st, 1)) {
        if (!burst(st, n, on_worker, &fg)) return;
        bursts++;
    }
    wm_bench_counter(st, "sub_cpu_max_us", fg.sub_cpu_max);
    wm_bench_counter(st, "sub_cpu_mean_us", fg.subs ? fg.sub_cpu_sum / fg.subs : 0);
    wm_bench_counter(st, "iter_cpu_max_us", fg.iter_cpu_max);
    wm_bench_counter(st, "iter_cpu_p999_us", fg.iter_cpu_p999);
    wm_bench_counter(st, "iters_over_1ms", fg.over_1ms / (double)bursts);
    wm_bench_counter(st, "gap_max_us", fg.gap_max);
    wm_bench_counter(st, "gap_p999_us", fg.gap_p999);
    wm_bench_counter(st, "compiles", fg.compiles / (double)bursts);
    wm_bench_counter(st, "burst_ms", fg.burst_ms / (double)bursts);
    wm_bench_counter(st, "iters", fg.iters / (double)bursts);
}

static void bm_stall_on_worker(wm_bench_state *st) { run(st, true); }
static void bm_stall_compile_thread(wm_bench_state *st) { run(st, false); }
WM_BENCH_ARGS(bm_stall_on_worker, 100, 1000);
WM_BENCH_ARGS(bm_stall_compile_thread, 100, 1000);
