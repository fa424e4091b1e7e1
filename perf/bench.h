/* wirematch benchmark API: C benchmarks on top of Google Benchmark.
 *
 * Google Benchmark is C++; our code is C. perf/bench_shim.cc adapts one to the
 * other so a benchmark is a plain C function:
 *
 *     static void bm_decode(wm_bench_state *st) {
 *         setup...;
 *         while (wm_bench_keep_running_batch(st, 1000))
 *             for (int i = 0; i < 1000; i++) work();
 *         wm_bench_set_items_processed(st, wm_bench_iterations(st));
 *     }
 *     WM_BENCH(bm_decode);
 *     WM_BENCH_ARGS(bm_sweep, 100, 1000, 10000);   // one run per argument
 *
 * Iterations are counted per unit of work, so keep_running_batch(st, n) runs
 * the body for n units at a time: the C->C++ call is paid once per batch, not
 * once per packet. Not thread safe: benchmarks register at load time from
 * constructors, before main. Debian's Google Benchmark is a debug build:
 * compare ratios within one run, not absolute times across machines.
 */
#ifndef WM_PERF_BENCH_H
#define WM_PERF_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wm_bench_state wm_bench_state;
typedef void (*wm_bench_fn)(wm_bench_state *st);

/* Registers fn under name; args (n of them, n <= 16) each give one run whose
 * argument wm_bench_arg() returns. n == 0 registers a single run. */
void wm_bench_register(const char *name, wm_bench_fn fn, const int64_t *args, int n);

/* True while the framework wants another batch of `batch` iterations. */
bool wm_bench_keep_running_batch(wm_bench_state *st, int64_t batch);
/* The run's argument (0 when registered without arguments). */
int64_t wm_bench_arg(const wm_bench_state *st);
/* Iterations run so far (units of work, not batches). */
int64_t wm_bench_iterations(const wm_bench_state *st);
void wm_bench_set_items_processed(wm_bench_state *st, int64_t items);
void wm_bench_set_bytes_processed(wm_bench_state *st, int64_t bytes);
/* A named figure shown as a column, as is (e.g. p99_ns, rss_mib). */
void wm_bench_counter(wm_bench_state *st, const char *name, double value);
/* A named figure divided by elapsed seconds (e.g. "lookups" -> lookups/s). */
void wm_bench_rate(wm_bench_state *st, const char *name, double value);
/* Excludes the enclosed code from timing (setup between batches). */
void wm_bench_pause(wm_bench_state *st);
void wm_bench_resume(wm_bench_state *st);
/* Marks the run as failed with a message (it is reported, not timed). */
void wm_bench_skip_with_error(wm_bench_state *st, const char *msg);
/* Keeps the compiler from eliding a computed value. */
void wm_bench_do_not_optimize(const void *p);

#define WM_BENCH(fn)                                                        \
    __attribute__((constructor)) static void fn##_register(void)            \
    { wm_bench_register(#fn, fn, 0, 0); }
#define WM_BENCH_ARGS(fn, ...)                                              \
    __attribute__((constructor)) static void fn##_register(void)            \
    {                                                                       \
        static const int64_t a[] = { __VA_ARGS__ };                         \
        wm_bench_register(#fn, fn, a, (int)(sizeof a / sizeof a[0]));       \
    }

#ifdef __cplusplus
}
#endif
#endif
