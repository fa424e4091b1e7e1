#!/usr/bin/env bash
# build/wirematch stopped by SIGTERM or SIGINT while it is still starting:
# EAL is initialising (it has started its first thread) or the match tables
# (--resolution, --schemas) are loading. The run must stop once it is set up,
# exit 0 and write its summary, as a stop later does. Before the handlers
# were installed first thing in main, such a signal took the default action
# (killed, exit 143, no summary): under load a test's SIGTERM can arrive
# during a start that takes seconds (seen as "wirematch died from SIGTERM"
# in the telemetry tests).
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
SHARED=${WM_SHARED:-$R/../shared}
tmp=$(mktemp -d)
PFX=wmsg$$
wm=
trap '[ -n "$wm" ] && kill -KILL "$wm" 2>/dev/null; rm -rf "$tmp" /var/run/dpdk/"$PFX"* 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$B/wmctl" resolve --world "$SHARED/data/world/monaco.geojson" --nbhd "$SHARED/data/world/monaco-examples.nbhd" \
  --out "$tmp/m.wmr" || fail "wmctl resolve"
S=$(cd "$SHARED/data/exi/senml" && pwd)
echo "senml $S/senml.gen.xsd s=urn:ietf:params:xml:ns:senml" > "$tmp/schemas.txt"
for sig in TERM INT; do
  sock=/var/run/dpdk/$PFX$sig/dpdk_telemetry.v2
  # Not under timeout(1), which would take the signal itself; bounded below.
  "$B/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "$PFX$sig" --log-level=lib.eal:error \
    --vdev net_null0 -- --resolution "$tmp/m.wmr" --schemas "$tmp/schemas.txt" --summary "$tmp/$sig.json" \
    > "$tmp/$sig.log" 2>&1 & wm=$!
  # main() runs once a second thread exists (EAL's first): a tight loop, no fork per turn
  started=0
  for _ in $(seq 200000); do
    t=(/proc/"$wm"/task/*)
    [ ${#t[@]} -ge 2 ] && { started=1; break; }
    [ -d /proc/"$wm" ] || break
  done
  [ $started = 1 ] || fail "SIG$sig: wirematch never started a thread: $(cat "$tmp/$sig.log")"
  kill -"$sig" "$wm"
  [ -S "$sock" ] && echo "(SIG$sig came after EAL had made its telemetry socket)"
  timeout 60 tail --pid="$wm" -f /dev/null || fail "SIG$sig: wirematch still running 60 s after it"
  rc=0; wait "$wm" || rc=$?
  wm=
  [ $rc -eq 0 ] || fail "SIG$sig while starting: exit status $rc (143/130: killed by the signal): $(tail -3 "$tmp/$sig.log")"
  python3 - "$tmp/$sig.json" <<'PY' || fail "SIG$sig: summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["conservation"]["packets_hold"], s["conservation"]
PY
  echo "ok: SIG$sig while the tables loaded: exit 0, summary written"
done
echo "dataplane_signals: SIGTERM and SIGINT during start stop the run cleanly, with the summary"
