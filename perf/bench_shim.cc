// The thin C++ shim between Google Benchmark and wirematch's C benchmarks
// (perf/bench.h). It owns main(), so every perf/bench_*.c links against it.
#include "perf/bench.h"

#include <benchmark/benchmark.h>

struct wm_bench_state {
    benchmark::State *s;
    bool has_arg;   // State has no portable "how many ranges" query in Debian's 1.7
};

extern "C" {

void wm_bench_register(const char *name, wm_bench_fn fn, const int64_t *args, int n)
{
    auto *b = benchmark::RegisterBenchmark(name, [fn, n](benchmark::State &s) {
        wm_bench_state st{&s, n > 0};
        fn(&st);
    });
    for (int i = 0; i < n; i++) b->Arg(args[i]);
}

bool wm_bench_keep_running_batch(wm_bench_state *st, int64_t batch)
{
    return st->s->KeepRunningBatch(batch);
}

int64_t wm_bench_arg(const wm_bench_state *st)
{
    return st->has_arg ? st->s->range(0) : 0;
}

int64_t wm_bench_iterations(const wm_bench_state *st) { return st->s->iterations(); }

void wm_bench_set_items_processed(wm_bench_state *st, int64_t items) { st->s->SetItemsProcessed(items); }

void wm_bench_set_bytes_processed(wm_bench_state *st, int64_t bytes) { st->s->SetBytesProcessed(bytes); }

void wm_bench_counter(wm_bench_state *st, const char *name, double value)
{
    st->s->counters[name] = benchmark::Counter(value);
}

void wm_bench_rate(wm_bench_state *st, const char *name, double value)
{
    st->s->counters[name] = benchmark::Counter(value, benchmark::Counter::kIsRate);
}

void wm_bench_pause(wm_bench_state *st) { st->s->PauseTiming(); }

void wm_bench_resume(wm_bench_state *st) { st->s->ResumeTiming(); }

void wm_bench_skip_with_error(wm_bench_state *st, const char *msg) { st->s->SkipWithError(msg); }

void wm_bench_do_not_optimize(const void *p) { benchmark::DoNotOptimize(p); }

}  // extern "C"

BENCHMARK_MAIN();
