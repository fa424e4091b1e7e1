#!/usr/bin/env bash
# Our EXI decoder vs exificient.js (npm 0.0.5, node) decoding the SAME
# documents in the same run: 1,024 RFC 8428 SenML packs of 10 records,
# schema senml.gen.xsd, strict, bit-packed, no options header (exificient.js
# reads none; options out of band for us). Target (issue 6): ours >= 20x its
# documents/s.
#
#   bash perf/exi_vs_exificient.sh [BUILD]      (make bench-exi)
#
# The documents are written by build/bench/bench_exi_decode itself
# (WM_EXI_DUMP_DIR), so both sides decode identical bytes; exificient.js's XML
# for them is first checked against `wmctl exi decode` (same infoset) so the
# speed of a wrong decode is never reported. Both sides run pinned to one
# core (CPU $WM_BENCH_CPU, default 1); ours is measured before and after
# exificient.js and the slower of the two is used for the ratios. Two
# comparisons: events (ours: typed events to a counting callback; theirs: a
# counting event handler) and XML text (ours: wm_exi_xml_sink, theirs:
# XMLEventHandler). exificient.js logs every event through console.log; the
# runner silences it (tests/exificient/exificient_run.js).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${WM_SHARED:-$ROOT/../shared}
CPU=${WM_BENCH_CPU:-1}
SECS=${WM_BENCH_SECONDS:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

NODE_DIR=$BUILD/exificient
if [ ! -f "$NODE_DIR/node_modules/exificient.js/package.json" ]; then
  mkdir -p "$NODE_DIR"
  cp "$ROOT/tests/exificient/package.json" "$ROOT/tests/exificient/package-lock.json" "$NODE_DIR/"
  timeout 300 npm ci --prefix "$NODE_DIR" --no-audit --no-fund --ignore-scripts > "$TMP/npm.err" 2>&1 \
    || { echo "npm ci of exificient.js failed: $(tail -3 "$TMP/npm.err")" >&2; exit 1; }
fi
JS=(env NODE_PATH="$NODE_DIR/node_modules" taskset -c "$CPU" node "$ROOT/tests/exificient/exificient_run.js")
XSD=$SHARED/data/exi/senml/senml.gen.xsd
export WM_SHARED=$SHARED

"$BUILD/wmctl" exi grammar --schema "$XSD" --format exificient > "$TMP/senml.json"
"$BUILD/wmctl" exi compile --schema "$XSD" "$TMP/senml.wmg"

ours() {
  taskset -c "$CPU" "$BUILD/bench/bench_exi_decode" --benchmark_filter='^bm_exi_plain_' \
    --benchmark_min_time="$SECS" --benchmark_format=json 2>/dev/null
}
mkdir -p "$TMP/docs"
WM_EXI_DUMP_DIR=$TMP/docs ours > "$TMP/ours1.json"
n=$(ls "$TMP/docs" | wc -l)
[ "$n" -eq 1024 ] || { echo "expected 1024 dumped documents, got $n" >&2; exit 1; }

# correctness gate: exificient.js's XML = ours, on the first 64 documents
mkdir -p "$TMP/gate" "$TMP/ourxml"
cp "$TMP"/docs/doc00[0-5]?.exi "$TMP"/docs/doc006[0-3].exi "$TMP/gate/"
"${JS[@]}" decode "$TMP/senml.json" "$TMP/gate" "$TMP/theirxml" > /dev/null
for f in "$TMP"/gate/*.exi; do
  "$BUILD/wmctl" exi decode --grammar "$TMP/senml.wmg" --strict "$f" > "$TMP/ourxml/$(basename "$f" .exi).xml"
done
gate=$("${JS[@]}" compare "$TMP/ourxml" "$TMP/theirxml") || { echo "exificient.js decodes differently: $gate" >&2; exit 1; }

"${JS[@]}" bench "$TMP/senml.json" "$TMP/docs" "$SECS" > "$TMP/theirs.json"
ours > "$TMP/ours2.json"

rate() { jq -r --arg n "$2" '[.benchmarks[] | select(.name == $n) | .items_per_second][0]' "$1"; }
bytes_per_doc=$(cat "$TMP"/docs/*.exi | wc -c | awk -v n="$n" '{printf "%.1f", $1 / n}')
ev1=$(rate "$TMP/ours1.json" bm_exi_plain_events); ev2=$(rate "$TMP/ours2.json" bm_exi_plain_events)
xm1=$(rate "$TMP/ours1.json" bm_exi_plain_to_xml); xm2=$(rate "$TMP/ours2.json" bm_exi_plain_to_xml)
tev=$(jq -r .events.docs_per_s "$TMP/theirs.json"); txm=$(jq -r .xml.docs_per_s "$TMP/theirs.json")
awk -v ev1="$ev1" -v ev2="$ev2" -v xm1="$xm1" -v xm2="$xm2" -v tev="$tev" -v txm="$txm" -v b="$bytes_per_doc" -v cpu="$CPU" '
function min(a, c) { return a < c ? a : c }
BEGIN {
  ev = min(ev1, ev2); xm = min(xm1, xm2)
  printf "EXI decode, SenML packs of 10 records (%.1f EXI bytes/doc), strict, bit-packed, no header, CPU %s\n", b, cpu
  printf "  %-34s %12s %10s\n", "", "docs/s", "MB/s"
  printf "  %-34s %12.0f %10.1f   (runs: %.0f, %.0f)\n", "wirematch, typed events", ev, ev * b / 1e6, ev1, ev2
  printf "  %-34s %12.0f %10.1f\n", "exificient.js, events", tev, tev * b / 1e6
  printf "  %-34s %12.0f %10.1f   (runs: %.0f, %.0f)\n", "wirematch, to XML text", xm, xm * b / 1e6, xm1, xm2
  printf "  %-34s %12.0f %10.1f\n", "exificient.js, XMLEventHandler", txm, txm * b / 1e6
  printf "ratio events: %.1fx   ratio XML: %.1fx   (target >= 20x)\n", ev / tev, xm / txm
}'
