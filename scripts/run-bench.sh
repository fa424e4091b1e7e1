#!/usr/bin/env bash
# Runs the Google Benchmark binaries and keeps their JSON in BUILD/bench/.
# Debian's Google Benchmark is a debug build: read ratios, not absolute times.
# usage: run-bench.sh BUILD bench...   (BENCH_FILTER=regex to select)
set -euo pipefail
build=$1; shift
for b in "$@"; do
  echo "== $(basename "$b")"
  "$b" --benchmark_filter="${BENCH_FILTER:-.}" --benchmark_out="$b.json" --benchmark_out_format=json \
       --benchmark_counters_tabular=true
done
