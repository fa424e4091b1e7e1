#!/usr/bin/env bash
# wirematch-proxy's command line as an operator meets it: every refusal comes
# at start, with the option and the reason, exit 2 for a bad value and 1 for a
# file it cannot use -- in particular an unwritable --summary is refused before
# relaying (not at the stop, when the counters would be lost). Needs no peer:
# the upstream is never contacted (bounded by timeout).
set -uo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
P=$BUILD/wirematch-proxy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
checks=0

# expect RC NEEDLE ARGS...: the proxy exits RC within 5 s, stderr has NEEDLE
expect() {
  local want=$1 needle=$2 rc=0; shift 2
  timeout 5 "$P" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" = 124 ] && fail "$* still running after 5 s (want exit $want at start)"
  [ "$rc" = "$want" ] || fail "$* -> exit $rc, want $want: $(head -c 300 "$work/err")"
  grep -qF -- "$needle" "$work/err" || fail "$* -> stderr lacks '$needle': $(head -c 300 "$work/err")"
  checks=$((checks + 1))
}

expect 1 "--summary $work/no/such/dir/s.json: No such file or directory" --summary "$work/no/such/dir/s.json"
expect 1 "--summary $work: Is a directory" --summary "$work"
expect 2 '--threads: "0" is not an integer in 1..256' --threads 0
expect 2 '--max-packet: "1" is not an integer' --max-packet 1
expect 2 "--schemas needs --resolution" --schemas x
expect 2 "--state needs --resolution" --state x
expect 2 '--connect-timeout: "0" is not an integer in 1..600000' --connect-timeout 0
expect 2 '--connect-packet-timeout: "0" is not an integer in 1..3600000' --connect-packet-timeout 0
expect 2 '--batch-wait-us: "10001" is not an integer' --batch-wait-us 10001
expect 2 '--linger-ms: "60001" is not an integer in 0..60000' --linger-ms 60001
expect 2 '--linger-bytes: "0" is not an integer in 1..1073741824' --linger-bytes 0
expect 2 '--batch-rate: "-1" is not an integer' --batch-rate -1
expect 2 '--max-xpath-per-conn: "0" is not an integer in 1..4194304' --max-xpath-per-conn 0
: > "$work/empty.wmr"
expect 1 "--resolution $work/empty.wmr: empty file" --resolution "$work/empty.wmr"
expect 1 "--resolution $work: not a regular file" --resolution "$work"
expect 2 "unrecognized option '--bogus'" --bogus
echo "proxy_options: $checks refusals at start with reason and exit code"
