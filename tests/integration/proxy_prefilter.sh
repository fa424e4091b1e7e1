#!/usr/bin/env bash
# wirematch-proxy --prefilter (issue 7) against a real mosquitto on 127.0.0.1:
# a client PUBLISH that no subscription made through the proxy (any
# connection, any of its two workers) can receive never reaches the broker,
# which a subscriber connected straight to the broker (invisible to the
# proxy) shows; QoS 1/2 ones are acknowledged with 0x10 No matching
# subscribers; retained messages always go through; a withheld PUBLISH that
# bound a topic alias does not break the alias-only PUBLISH after it (the
# proxy puts the topic back; mosquitto would otherwise close the
# connection); an offline persistent session keeps its subscription's
# traffic; UNSUBSCRIBE ends it. 2,000 random publications over the Monaco
# world (X3). Bounded in time; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
SHARED=${WM_SHARED:-$WM_ROOT/../shared}
WORLD=$SHARED/data/world/monaco.geojson
NBHD=$SHARED/data/world/monaco-examples.nbhd

"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --out "$TMP/m.wmr" || fail "wmctl resolve"
"$BUILD/wmctl" resolve --world "$WORLD" --nbhd "$NBHD" --json > "$TMP/m.json" || fail "wmctl resolve --json"
px_broker "max_queued_messages 100000" "max_topic_alias 10"

rc=0; "$PROXY" --listen 127.0.0.1:1 --upstream 127.0.0.1:1 --prefilter 2> "$TMP/usage.err" || rc=$?
[ $rc -eq 2 ] && grep -q "needs --resolution" "$TMP/usage.err" || fail "--prefilter without --resolution: rc $rc"

px_proxy pf --resolution "$TMP/m.wmr" --prefilter --threads 2 -v
timeout 55 python3 "$(dirname "$0")/proxy_spatial.py" "$PORT_pf" "$TMP/m.json" "$WORLD" prefilter "$BPORT" 2000 \
    || fail "prefilter scenario"
px_stop "$PID_pf" || fail "proxy exit status"
python3 - "$TMP/pf.json" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
p, f = s["prefilter"], s["filter"]
d = p["dropped"]
assert d["qos0"] + d["qos1"] + d["qos2"] > 1000, p
assert p["registry"]["refused"] == 0 and not p["registry"]["broken"], p
assert p["registry"]["added"] == 3 and p["registry"]["removed"] == 2, p  # S1, S2, S3; the direct one is invisible
assert p["registry"]["kept_for_sessions"] >= 1, p     # the persistent session's subscription
assert f["alias_rewritten"]["client_to_upstream"] == 1, f
assert f["pubcomp_on_behalf"] == d["qos2"], (f, d)    # every prefiltered QoS 2 completed by the proxy
assert s["connections"]["open_at_exit"] == 0
print("ok: summary: prefiltered %r, registry %r" % (d, p["registry"]))
PY
echo "proxy_prefilter: ingress drops exact, 0x10 acks, retained kept, alias rewrite, persistent session: pass"
