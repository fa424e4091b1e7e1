#!/usr/bin/env bash
# The broker's PINGRESP passes deliveries the proxy holds for a resumed
# session's content-filter compile (neither held behind them until the
# compile ends, nor lost), and the held deliveries then all come in order
# (proxy_pingresp_held.py has the scenario). Real mosquitto; --threads 1:
# every connection on one worker, whose table drops the session's texts
# while it is away (so its resume waits for a compile).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_broker
px_deploy ph --threads 1
timeout 600 python3 "$(dirname "$0")/proxy_pingresp_held.py" "$PORT_ph" > "$TMP/ph.out" || { cat "$TMP/ph.out"; fail "scenario"; }
cat "$TMP/ph.out"
px_stop "$PID_ph" || fail "proxy exit status"
jq -e '.content.resumes_held == 1 and .connections.open_at_exit == 0' "$TMP/ph.json" > /dev/null \
  || fail "summary: $(jq -c '{resumes_held: .content.resumes_held, connections}' "$TMP/ph.json")"
echo "proxy_pingresp_held: the broker's PINGRESP passes deliveries held for a resumed session's compile, which follow in order"
