/* The SenML schema the EXI benchmarks run on, compiled once per benchmark
 * binary: ${WM_SHARED:-../shared}/data/exi/senml/senml.gen.xsd. */
#ifndef WM_PERF_SENML_SCHEMA_H
#define WM_PERF_SENML_SCHEMA_H

#include <stdbool.h>

#include "codec/exi_grammar.h"
#include "perf/bench.h"

/* Compiles the schema into *g (caller owns it). On failure marks the
 * benchmark st as skipped with the reason and returns false. */
bool wm_bench_senml_grammar(wm_bench_state *st, wm_exi_grammar **g);

#endif
