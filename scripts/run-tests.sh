#!/usr/bin/env bash
# Runs every test of a build: Criterion unit binaries, fuzz-corpus replays and
# integration scripts. Each runs under a time bound; the last line is the
# plain summary CI reads ("tests: N passed, N failed").
# usage: run-tests.sh BUILD_DIR [FILTER]
set -uo pipefail
BUILD=${1:-build}; FILTER=${2:-${TEST_FILTER:-}}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
INTEG_TIMEOUT=${INTEG_TIMEOUT:-900}
pass=0; fail=0; failed=()
export WM_BUILD=$BUILD WM_ROOT=$PWD WM_SHARED=${WM_SHARED:-$PWD/../shared}

for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  [ -n "$FILTER" ] && [[ "$t" != *$FILTER* ]] && continue
  out=$(timeout "$UNIT_TIMEOUT" "$t" --jobs 2 2>&1); rc=$?
  syn=$(grep -a 'Synthesis:' <<<"$out" | tail -1)
  tested=$(sed -nE 's/.*Tested: ([0-9]+).*/\1/p' <<<"$syn"); passing=$(sed -nE 's/.*Passing: ([0-9]+).*/\1/p' <<<"$syn")
  tested=${tested:-0}; passing=${passing:-0}
  # A sanitized build's leaks: Criterion takes each test's result before its
  # worker exits, so LeakSanitizer's report at that exit fails nothing by
  # itself (its exit status is ignored, and report hooks run in the runner,
  # not in the worker). Its report in the output fails the binary.
  leaks=$(grep -ac '^==[0-9]*==ERROR: LeakSanitizer' <<<"$out")
  if [ "$leaks" -gt 0 ]; then
    echo "$out" | grep -av '^\[----\]' | grep -a -A30 'ERROR: LeakSanitizer' | head -80
    echo "FAIL $(basename "$t") (LeakSanitizer: $leaks processes leaked)"
    fail=$((fail + 1)); pass=$((pass + passing)); failed+=("$(basename "$t")")
  elif [ $rc -ne 0 ] || [ "$tested" != "$passing" ] || [ "$tested" = 0 ]; then
    echo "$out" | grep -av '^\[----\]' | tail -40
    echo "FAIL $(basename "$t") (rc=$rc, $passing/$tested)"
    fail=$((fail + (tested > passing ? tested - passing : 1))); pass=$((pass + passing)); failed+=("$(basename "$t")")
  else
    echo "ok   $(basename "$t") ($tested)"; pass=$((pass + tested))
  fi
done

for r in "$BUILD"/tests/replay_*; do
  [ -x "$r" ] || continue
  [ -n "$FILTER" ] && [[ "$r" != *$FILTER* ]] && continue
  name=$(basename "$r"); corpus=tests/fuzz/corpus/${name#replay_fuzz_}
  if out=$(timeout "$UNIT_TIMEOUT" "$r" "$corpus" 2>&1); then
    echo "ok   $name ($(tail -1 <<<"$out"))"; pass=$((pass + 1))
  else
    echo "$out" | tail -40; echo "FAIL $name"; fail=$((fail + 1)); failed+=("$name")
  fi
done

for s in tests/integration/*.sh; do
  [ -f "$s" ] || continue
  [ -n "$FILTER" ] && [[ "$s" != *$FILTER* ]] && continue
  name=$(basename "$s" .sh)
  if out=$(timeout -k 10 "$INTEG_TIMEOUT" bash "$s" 2>&1); then
    echo "ok   $name ($(tail -1 <<<"$out"))"; pass=$((pass + 1))
  else
    echo "$out" | tail -40; echo "FAIL $name"; fail=$((fail + 1)); failed+=("$name")
  fi
done

[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "tests: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
