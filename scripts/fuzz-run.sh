#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS over its committed corpus, adding new
# inputs to it (tests/fuzz/corpus/NAME). Crashes land in build/fuzz/artifacts.
# tests/fuzz/fuzz_NAME.options, if present, holds more libFuzzer flags for that
# target (one line; later flags win, e.g. a -max_len for larger inputs).
# usage: fuzz-run.sh SECONDS build/fuzz/fuzz_NAME...
set -euo pipefail
secs=$1; shift
mkdir -p build/fuzz/artifacts
for f in "$@"; do
  name=$(basename "$f"); corpus=tests/fuzz/corpus/${name#fuzz_}
  mkdir -p "$corpus"
  dict=tests/fuzz/${name}.dict; dopt=(); [ -f "$dict" ] && dopt=(-dict="$dict")
  oopt=(); [ -f "tests/fuzz/${name}.options" ] && read -ra oopt < "tests/fuzz/${name}.options"
  echo "== $name for ${secs}s"
  "$f" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix=build/fuzz/artifacts/${name}- "${dopt[@]}" "${oopt[@]}" "$corpus" 2>&1 | tail -3
done
