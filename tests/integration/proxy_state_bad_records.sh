#!/usr/bin/env bash
# wirematch-proxy --state FILE --prefilter with records whose topic filter is
# no valid filter (a corrupt or hand-edited file: the proxy never writes
# one; README "--state"): the good records load, each bad one is reported on
# stderr with its line, column and reason and counted (state.loaded.skipped),
# its session marked incomplete, and --prefilter stays on (before 2026-12-02
# such a filter loaded without a word and its registration turned
# prefiltering off for the whole process, REVIEW12 #13): a QoS 1 PUBLISH
# nobody can receive still gets PUBACK 0x10 from the proxy. A record whose
# xpath does not parse is skipped and reported alike (with the byte of the
# query; before 2026-12-02 it loaded without a word, REVIEW12 #13's second
# half); one that parses loads without --schemas (its prefix is bound by the
# registry in force when the session resumes).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")
px_monaco
px_broker
ST=$TMP/proxy.state
printf '%s\n' 'wirematch-proxy-state 2' 'epoch 5' 'clean 1' 'session c1 251658245 0 never' \
  'sub a/#/b 251658240 X1 -' 'sub good/# 251658241 X1 -' 'sub $share//x 251658242 - -' \
  'sub badx/# 251658243 X1 //s:senml[@v%3E' 'sub goodx/# 251658244 - //s:senml[@v%3E1]' 'end 1 5' > "$ST"
px_proxy a --resolution "$TMP/m.wmr" --state "$ST" --prefilter
got=$(timeout 20 python3 "$HERE/proxy_pipeline.py" "$PORT_a" pub-qos1) || fail "pipeline client"
[ "$got" = "CONNACK:00 PUBACK:10 PINGRESP" ] || fail "--prefilter after loading bad records: got '$got'"
px_stop "$PID_a" || fail "proxy exited with rc $?"
grep -q "^wirematch-proxy: --state: line 5, column 5: topic filter: .*; record skipped$" "$TMP/a.err" \
  || fail "no report of line 5: $(cat "$TMP/a.err")"
grep -q "^wirematch-proxy: --state: line 7, column 5: topic filter: .*; record skipped$" "$TMP/a.err" \
  || fail "no report of line 7: $(cat "$TMP/a.err")"
grep -q "^wirematch-proxy: --state: line 8, column 25: xpath: expected a literal .*(byte 14 of the query); record skipped$" \
  "$TMP/a.err" || fail "no report of line 8: $(cat "$TMP/a.err")"
got=$(jq -c '{l: .state.loaded | {sessions, records, skipped}, b: .prefilter.registry.broken}' "$TMP/a.json")
[ "$got" = '{"l":{"sessions":1,"records":2,"skipped":3},"b":false}' ] || fail "summary: $got"
grep -q '^sub good/# 251658241 X1 -$' "$ST" || fail "the good record was not written back: $(cat "$ST")"
grep -q '^sub goodx/# 251658244 - //s:senml\[@v>1\]$' "$ST" || fail "the good xpath record was not written back: $(cat "$ST")"
grep -q 'a/#/b' "$ST" && fail "the bad record was written back: $(cat "$ST")"
grep -q 'badx' "$ST" && fail "the record with an unparsable xpath was written back: $(cat "$ST")"
echo "proxy_state_bad_records: 2 records with invalid filters and 1 with an unparsable xpath skipped and reported (line, column), 2 loaded, --prefilter on"
