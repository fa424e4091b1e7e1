#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS over its committed corpus, adding new
# inputs to it (tests/fuzz/corpus/NAME). Crashes land in build/fuzz/artifacts.
# usage: fuzz-run.sh SECONDS build/fuzz/fuzz_NAME...
set -euo pipefail
secs=$1; shift
mkdir -p build/fuzz/artifacts
for f in "$@"; do
  name=$(basename "$f"); corpus=tests/fuzz/corpus/${name#fuzz_}
  mkdir -p "$corpus"
  dict=tests/fuzz/${name}.dict; dopt=(); [ -f "$dict" ] && dopt=(-dict="$dict")
  echo "== $name for ${secs}s"
  "$f" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix=build/fuzz/artifacts/${name}- "${dopt[@]}" "$corpus" 2>&1 | tail -3
done
