#!/usr/bin/env bash
# A Content Type's EXI options that contradict the payload's options header:
# the header wins (EXI 1.0 §5.4), and the proxy counts and reports the
# mis-configured publisher (content.header_conflicts; a stderr line with the
# topic, the receiving client and the reason), through the data plane's
# helper (wm_content_reader_conflict, control/content_filters.h). Real
# mosquitto, raw clients (proxy_content_header.py has the scenario). Before
# 2026-12-02 the contradiction went unseen (no counter, no line).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_broker
px_senml
"$BUILD/wmctl" exi encode --schema "$S/senml.gen.xsd" --header-options "$S/ex1.gen.xml" "$TMP/hdr.exi" \
  || fail "exi encode"
px_deploy ch --threads 1
timeout 600 python3 "$(dirname "$0")/proxy_content_header.py" "$PORT_ch" "$TMP/hdr.exi" > "$TMP/ch.out" \
  || { cat "$TMP/ch.out"; fail "scenario"; }
cat "$TMP/ch.out"
px_stop "$PID_ch" || fail "proxy exit status"
jq -e '.content.header_conflicts == 1 and .content.decoded == 3' "$TMP/ch.json" > /dev/null \
  || fail "summary: $(jq -c .content "$TMP/ch.json")"
want='topic "ch/0" (delivered to client "ch-sub"): Content Type "application/exi; schema=senml; strict=true": strict=true contradicts the payload'"'"'s options header (strict=false); decoded with the header'"'"'s options (EXI 1.0 §5.4)'
grep -qF "$want" "$TMP/ch.err" || fail "no report on stderr like: $want; got: $(grep -i contradict "$TMP/ch.err" || true)"
[ "$(grep -c contradicts "$TMP/ch.err")" -eq 1 ] || fail "reports: $(grep contradicts "$TMP/ch.err")"
echo "proxy_content_header: a Content Type contradicting the options header is decoded by the header, counted and reported"
