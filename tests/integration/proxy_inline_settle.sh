#!/usr/bin/env bash
# The inline-send settle hang fixed in 651582b, reproduced deterministically
# (before, only proxy_content_slots caught it, in about 1 run of 5): a
# client's queue towards the broker holds a small PUBACK as an unsettled
# inline send (IOSQE_CQE_SKIP_SUCCESS, dataplane/proxy_loop.c kick_send), and
# behind it a SUBSCRIBE released when its content compile ended; the enter
# that submitted the PUBACK must not wait (inline_prompt). The natural race
# needs the compile's wake-up and the broker's delivery in one batch of
# completions; the test hook WM_PROXY_TEST_COMPILE_DONE_FILE (README) makes
# it certain by not waking the worker at a compile's end, so the delivery is
# the completion that reveals it. Lock step in
# tests/integration/proxy_inline_settle.py; real mosquitto. Fails (no SUBACK
# within 5 s) on the binary with 651582b reverted, every run.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
HERE=$(dirname "$0")

px_broker
px_monaco
px_senml
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"
# One worker; no CONNECT sweep during the test (its timer would be a completion too).
export WM_PROXY_TEST_COMPILE_DONE_FILE=$TMP/compiled
px_proxy p --threads 1 --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --connect-packet-timeout 3600000
unset WM_PROXY_TEST_COMPILE_DONE_FILE
out=$(timeout 150 python3 "$HERE/proxy_inline_settle.py" "$PORT_p" "$BPORT" "$TMP/compiled") || fail "$out"
px_stop "$PID_p" || fail "proxy exited with rc $?"
S=$TMP/p.json
[ "$(jq '.filter.acked_on_behalf' "$S")" -eq 1 ] && [ "$(jq '[.filter.withheld[]] | add' "$S")" -eq 1 ] ||
  fail "the delivery was not withheld and acknowledged on the client's behalf: $(jq -c .filter "$S")"
echo "proxy_inline_settle: a SUBSCRIBE released at its compile's end behind an unsettled inline PUBACK: $out"
