#!/usr/bin/env bash
# wirematch-proxy's command line as an operator meets it: every refusal comes
# at start, with the option and the reason, exit 2 for a bad value and 1 for a
# file it cannot use -- in particular an unwritable --summary is refused before
# relaying (not at the stop, when the counters would be lost). An option that
# does nothing without another is refused naming it, and so is an option given
# twice (REVIEW14 finding 7: --max-xpath-per-conn without --schemas and
# --max-subs-per-conn without --resolution were taken and ignored, a second
# --upstream replaced the first). The upstream is never contacted (bounded by
# timeout); one real mosquitto holds a port that --listen then finds in use:
# one line on stderr, exit 1, {"error": REASON} in --summary FILE and nothing
# on stdout (before: a full all-zero summary on stdout).
set -uo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
P=$BUILD/wirematch-proxy
. "$ROOT/scripts/lib/mqtt-peers.sh"
work=$(mktemp -d)
wm_at_exit 'rm -rf "$work"'
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
# needs another option
expect 2 "--prefilter needs --resolution" --prefilter
expect 2 "--max-subs-per-conn needs --resolution" --max-subs-per-conn 8
expect 2 "--max-sessions needs --resolution" --max-sessions 8
expect 2 "--mem-cap needs --schemas" --mem-cap 65536
expect 2 "--max-xpath-per-conn needs --schemas" --max-xpath-per-conn 8
expect 2 "--max-xpath-per-conn needs --schemas" --resolution "$work/empty.wmr" --max-xpath-per-conn 8
# given twice (whatever the values)
expect 2 "--upstream given twice" --upstream 127.0.0.1:2
expect 2 "--listen given twice" --listen 127.0.0.1:3
expect 2 "--threads given twice" --threads 1 --threads 1
expect 2 "--prefilter given twice" --prefilter --prefilter
expect 2 "--summary given twice" --summary "$work/a.json" --summary "$work/b.json"

# --listen on an address in use (a real mosquitto's): exit 1 at start, one line
wm_broker_start >/dev/null || fail "mosquitto did not start"
rc=0; timeout 5 "$P" --listen 127.0.0.1:"$WM_BROKER_PORT" --upstream 127.0.0.1:1 --summary "$work/inuse.json" \
    >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 1 ] || fail "listen in use -> exit $rc, want 1: $(head -c 300 "$work/err")"
[ "$(cat "$work/err")" = "wirematch-proxy: listen on 127.0.0.1:$WM_BROKER_PORT: Address already in use" ] \
    || fail "listen in use -> stderr: $(head -c 500 "$work/err")"
[ ! -s "$work/out" ] || fail "listen in use -> stdout: $(head -c 300 "$work/out")"
[ "$(jq -c . "$work/inuse.json")" = "{\"error\":\"listen on 127.0.0.1:$WM_BROKER_PORT: Address already in use\"}" ] \
    || fail "listen in use -> summary: $(head -c 300 "$work/inuse.json")"
# without --summary: nothing on stdout either (no summary of a run that never was)
rc=0; timeout 5 "$P" --listen 127.0.0.1:"$WM_BROKER_PORT" --upstream 127.0.0.1:1 --threads 2 >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 1 ] && [ ! -s "$work/out" ] && [ "$(wc -l < "$work/err")" = 1 ] \
    || fail "listen in use, 2 threads, stdout -> exit $rc, stdout $(head -c 200 "$work/out"), stderr $(head -c 300 "$work/err")"
checks=$((checks + 2))
echo "proxy_options: $checks refusals at start with reason and exit code (options needing another, given twice, --listen in use)"
