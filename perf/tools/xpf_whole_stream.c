/* xpf_whole_stream: what whole-stream validation costs the content filter.
 *
 * Why: `wmctl exi filter`, the data plane and the proxy decode every payload
 * to its end (wm_xpf_ctx_set_whole_stream) so that a truncated or damaged
 * stream is an error, never a match; early stop (the API's default) reads
 * only up to the point where every query is decided. This harness measures,
 * in one run and on one thread (CPU time), the three over the same
 * SenML packs of 10 records (perf/exi_senml_gen.h, strict, bit-packed,
 * options in the header): plain typed decode (the reference), the filter
 * with early stop and the filter with whole-stream validation, for one
 * query decided by the first record (`starts-with(@bn, ...)`: the best case
 * for early stop) and one that needs the whole pack (`@v < -1e9`, never
 * true). Pin it (`taskset -c 1`) and compare ratios on a shared machine.
 *
 * usage: xpf_whole_stream [REPS]      (1,024 packs per repetition, default 100)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"
#include "perf/exi_senml_gen.h"

#define ND 1024

static uint8_t exi[ND][2048];
static size_t en[ND];

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int no_event(void *user, const wm_exi_event *ev)
{
    (void)ev;
    ++*(uint64_t *)user;
    return 0;
}

static void report(const char *what, double s, long reps, uint64_t bytes, double ref)
{
    double dps = (double)reps * ND / s;
    printf("%-34s %10.0f docs/s %8.1f MB/s  %5.2fx plain decode\n", what, dps, (double)bytes / s / 1e6,
           ref > 0 ? dps / ref : 1.0);
}

int main(int argc, char **argv)
{
    long reps = argc > 1 ? atol(argv[1]) : 100;
    const char *sh = getenv("WM_SHARED");
    char xsd[1024];
    snprintf(xsd, sizeof xsd, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    wm_exi_grammar *g;
    wm_exi_error e = { 0 };
    if (reps < 1 || wm_exi_xsd_compile(xsd, &g, &e)) {
        fprintf(stderr, "xpf_whole_stream: %s\n", reps < 1 ? "usage: xpf_whole_stream [REPS]" : e.msg);
        return 2;
    }
    uint64_t seed = 42, total = 0;
    for (int d = 0; d < ND; d++) {
        char xml[8192];
        size_t xn = wm_senml_gen_pack(&seed, 10, xml, sizeof xml);
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = true;
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
        wm_exi_status st = wm_exi_encode_xml(&enc, xml, xn, exi[d], sizeof exi[d], &en[d], &e);
        wm_exi_encoder_free(&enc);
        if (st) { fprintf(stderr, "xpf_whole_stream: encode: %s\n", e.msg); return 1; }
        total += en[d];
    }
    uint64_t bytes = total * (uint64_t)reps;
    /* the reference: plain typed decode, what a filter consumes */
    wm_exi_limits lim = { .typed_only = true };
    wm_exi_decoder dec;
    wm_exi_decoder_init(&dec, g, &lim);
    uint64_t events = 0;
    double t0 = cpu_now();
    for (long r = 0; r < reps; r++)
        for (int d = 0; d < ND; d++)
            if (wm_exi_decode(&dec, exi[d], en[d], NULL, no_event, &events, NULL, &e)) return 1;
    double ref_s = cpu_now() - t0, ref = (double)reps * ND / ref_s;
    wm_exi_decoder_free(&dec);
    report("plain typed decode (reference)", ref_s, reps, bytes, 0);
    wm_xp_ns ns = { "s", "urn:ietf:params:xml:ns:senml" };
    static const char *const queries[][2] = {
        { "//s:senml[starts-with(@bn, 'urn:dev:ow:')]", "decided at the first record" },
        { "//s:senml[@v < -1000000000]", "needs the whole pack" },
    };
    for (int k = 0; k < 2; k++) {
        wm_xpf *f;
        wm_xpf_error fe;
        if (wm_xpf_compile(g, &queries[k][0], 1, &ns, 1, &f, &fe)) { fprintf(stderr, "%s\n", fe.msg); return 1; }
        wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
        for (int whole = 0; whole < 2; whole++) {
            wm_xpf_ctx_set_whole_stream(c, whole);
            uint64_t m, early = 0, hits = 0;
            bool st;
            t0 = cpu_now();
            for (long r = 0; r < reps; r++)
                for (int d = 0; d < ND; d++) {
                    if (wm_xpf_match(c, exi[d], en[d], NULL, NULL, 0, &m, &st, &e)) return 1;
                    hits += m & 1;
                    early += st;
                }
            double s = cpu_now() - t0;
            char what[96];
            snprintf(what, sizeof what, "%s, %s", whole ? "whole stream" : "early stop", k ? "all pack" : "1st record");
            report(what, s, reps, bytes, ref);
            if (whole == 0) printf("    (%s: %llu of %llu matched, %llu decided early)\n", queries[k][1],
                                   (unsigned long long)hits, (unsigned long long)(reps * ND), (unsigned long long)early);
        }
        wm_xpf_ctx_free(c);
        wm_xpf_free(f);
    }
    wm_exi_grammar_free(g);
    return 0;
}
