#!/usr/bin/env bash
# Hot reload of wirematch-proxy's schema registry (--schemas) on SIGHUP, under
# live subscribers (raw-socket clients and a mosquitto_sub) while a publisher
# keeps publishing, in front of a real mosquitto on 127.0.0.1
# (proxy_reload_schemas.py has the scenario): a registry that moves the live
# queries' prefix to another schema name applies to the same connections (and
# to a subscription made after it), a bad registry is refused with its reason
# and the one in force stays, a registry no live query compiles for withholds
# every content-filtered delivery (counted), the first registry brings them
# back. Expected deliveries come from libxml2's XPath on the source XML
# (senml_docs.py). JSON summary: reloads applied / refused, queries gone,
# content outcomes. Bounded; everything stopped by the EXIT trap.
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
N=30

px_monaco
python3 "$(dirname "$0")/senml_docs.py" "$TMP" $N 17 "$BUILD/wmctl" "$S/senml.gen.xsd" \
  '//s:senml[@u = "Cel" and @v > 0]' '/s:sensml/s:senml[starts-with(@n, "temp-") or @v < -100]' \
  '//s:senml[@n = "humidity"]' || fail "documents"
read -r IN OUT < <(python3 - "$TMP/m.json" "$WORLD" <<'PY'
import json, sys
x4 = set(json.load(open(sys.argv[1]))["X4"]["result"])
peids = sorted(str(f["id"]) for f in json.load(open(sys.argv[2]))["features"])
print(sorted(x4)[0], next(p for p in peids if p not in x4))
PY
)
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/live.txt"

px_broker
px_proxy sr --resolution "$TMP/m.wmr" --schemas "$TMP/live.txt" --threads 2
timeout 150 python3 "$(dirname "$0")/proxy_reload_schemas.py" "$PORT_sr" "$PID_sr" "$TMP/sr.err" "$TMP" \
  "$TMP/live.txt" "$S/senml.gen.xsd" "$NS" "$IN" "$OUT" $N > "$TMP/scenario.out" || { cat "$TMP/scenario.out"; fail "scenario"; }
cat "$TMP/scenario.out"
FLOW=$(sed -n 's/^flow //p' "$TMP/scenario.out")
px_stop "$PID_sr" || fail "proxy exit status"
python3 - "$TMP/sr.json" <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
r, c = s["reload"], s["content"]
assert r == {"ok": 3, "refused": 1, "nbhd_gone": 0, "xpath_gone": 6}, r
assert c["pubs"] == sum(c[k] for k in ("decoded", "no_content_type", "not_exi", "unknown_schema",
                                        "no_filter_for_schema", "decode_error", "value_too_large")), c
assert c["no_filter_for_schema"] > 0 and c["decoded"] > 0 and c["decode_error"] == 0, c
assert s["connections"]["open_at_exit"] == 0 and s["filter"]["failed"] == 0, s
print("ok: summary reload %r, content %r" % (r, c))
PY
echo "proxy_reload_schemas: registry reloads applied to live subscriptions ($FLOW publications flowing across one), bad registry refused, gone queries withheld and counted"
