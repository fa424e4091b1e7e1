#!/usr/bin/env bash
# wirematch-proxy with every thread it has busy at once (two workers, their
# compile threads, the main thread's reloads and --state saves, the
# prefilter's registry readers), in front of a real mosquitto on 127.0.0.1:
# proxy_concurrent.py's load (sessions subscribing content filters, leaving
# and resuming; QoS 1 EXI publishers) for 8 s with a SIGHUP every 2 s, then
# SIGTERM. Every SUBACK granted, every publication acknowledged, exit 0.
# Its name puts it in `make test TSAN=1 TEST_FILTER=concurrent` (CI): under
# ThreadSanitizer (exit status 66 and a "WARNING: ThreadSanitizer" report on
# a data race) it found the compile thread's write to a worker's eventfd
# racing with the worker's close at the stop (REVIEW7 finding 8).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
px_broker
px_deploy cc --threads 2 --prefilter --state "$TMP/cc.state"
timeout 300 python3 "$(dirname "$0")/proxy_concurrent.py" "$PORT_cc" 8 "$S/ex1.gen.exi" > "$TMP/load.out" 2>&1 & LOAD=$!
for _ in 1 2 3 4; do sleep 2; kill -HUP "$PID_cc"; done
wait $LOAD || { cat "$TMP/load.out"; fail "load"; }
cat "$TMP/load.out"
rc=0; px_stop "$PID_cc" || rc=$?
if grep -q "WARNING: ThreadSanitizer" "$TMP/cc.err"; then
  grep -A20 "WARNING: ThreadSanitizer" "$TMP/cc.err" | head -60 >&2
  fail "ThreadSanitizer: $(grep -c 'WARNING: ThreadSanitizer' "$TMP/cc.err") report(s)"
fi
[ $rc -eq 0 ] || fail "proxy exit status $rc"
jq -e '.reload.ok >= 1' "$TMP/cc.json" > /dev/null || fail "no reload counted: $(jq -c .reload "$TMP/cc.json")"
echo "proxy_concurrent: 2 workers, compiles, reloads, --state saves and the prefilter under load: no failure, exit 0"
