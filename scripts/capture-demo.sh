#!/usr/bin/env bash
# Records the demo capture of issue 5: a real mosquitto 2.x broker (MQTT v5),
# real mosquitto_sub subscribers asking for the neighborhoods of
# ../shared/data/world/monaco-examples.nbhd (nbhd user property + subscription
# identifier) and real mosquitto_pub publishers sending per-road-segment traffic
# flows and car-park occupancies with a peid user property (QoS 0 and 1, some
# with topic aliases), inside and outside those neighborhoods.
#
# usage: scripts/capture-demo.sh OUT.pcap [PLAN.json]
#   OUT.pcap   the capture (tcpdump on lo, broker port only, pcap format)
#   PLAN.json  where to copy the traffic plan (default: OUT.pcap with .json):
#              subscribers (client id, filters, subscription identifier, nbhd,
#              QoS, deliveries expected from the broker) and publishers (client
#              id, topic, peid, QoS, topic alias, messages, neighborhoods the
#              peid lies in); scripts/demo_traffic.py writes it.
# Environment: WM_SHARED (default ../shared next to the repo).
#
# The capture ends only after every subscriber received every message the
# broker owes it (counted from mosquitto_sub's output), so the recording is
# complete even on a loaded machine; every step is bounded in time.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 OUT.pcap [PLAN.json]" >&2; exit 2; }
OUT=$1; PLAN_OUT=${2:-${OUT%.pcap}.json}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${WM_SHARED:-$HERE/../../shared}
WORLD=$SHARED/data/world
[ -f "$WORLD/monaco-examples.expected.json" ] || { echo "capture-demo: no world in $WORLD (set WM_SHARED)" >&2; exit 2; }
# shellcheck source=lib/mqtt-peers.sh
source "$HERE/lib/mqtt-peers.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wm-demo.XXXXXX"); wm_at_exit "rm -rf '$tmp'"
python3 "$HERE/demo_traffic.py" "$WORLD" "$tmp/plan"
PLAN=$tmp/plan/plan.json

wm_broker_start "log_type subscribe" "max_queued_messages 100000"
wm_pcap_start "$tmp/out.pcap" "tcp port $WM_BROKER_PORT"
C=(-h 127.0.0.1 -p "$WM_BROKER_PORT" -V mqttv5)
sub_pids=()
wm_at_exit 'for p in "${sub_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; for p in "${sub_pids[@]}"; do _wm_wait_pid_gone "$p" 5; done'

# Subscribers: one connection each, one SUBSCRIBE with all its filters.
python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["subscribers"]:
    print("\t".join(str(x) for x in (s["client_id"], s["qos"], s["subscription_identifier"] or "-",
                                      s["nbhd"] or "-", " ".join(s["filters"]))))' "$PLAN" >"$tmp/subs.tsv"
while IFS=$'\t' read -r id qos sid nbhd filters; do
  args=(-i "$id" -q "$qos" -v)
  for f in $filters; do args+=(-t "$f"); done
  [ "$sid" != - ] && args+=(-D subscribe subscription-identifier "$sid")
  [ "$nbhd" != - ] && args+=(-D subscribe user-property nbhd "$nbhd")
  timeout 300 mosquitto_sub "${C[@]}" "${args[@]}" >"$tmp/sub-$id.out" &
  sub_pids+=($!)
done <"$tmp/subs.tsv"
deadline=$((SECONDS + 30))
while [ "$(grep -c ': wm-demo-[a-z0-9]* [0-2] ' "$WM_BROKER_DIR/mosquitto.log" || true)" -lt \
        "$(python3 -c 'import json,sys; print(sum(len(s["filters"]) for s in json.load(open(sys.argv[1]))["subscribers"]))' "$PLAN")" ]; do
  [ $SECONDS -lt $deadline ] || { echo "capture-demo: subscribers not subscribed after 30 s" >&2; exit 1; }
  sleep 0.1
done

# Publishers: one connection per road segment / car park, four at a time so
# connections interleave on the wire; every message carries the peid.
pub_one() { # ID QOS ALIAS TOPIC PEID KIND LINES
  local a=(-i "$1" -q "$2" -t "$4" -l -D publish user-property peid "$5" -D publish user-property kind "$6")
  [ "$3" != - ] && a+=(-D publish topic-alias "$3")
  timeout 120 mosquitto_pub "${C[@]}" "${a[@]}" <"$7"
}
pids=()
python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["publishers"]:
    kind = "flow" if p["topic"].startswith("traffic/") else "parking"
    print("\t".join(str(x) for x in (p["client_id"], p["qos"], p["topic_alias"] or "-", p["topic"],
                                      p["peid"], kind, p["payload"])))' "$PLAN" >"$tmp/pubs.tsv"
while IFS=$'\t' read -r id qos alias topic peid kind lines; do
  pub_one "$id" "$qos" "$alias" "$topic" "$peid" "$kind" "$tmp/plan/$lines" & pids+=($!)
  if [ ${#pids[@]} -ge 4 ]; then
    for p in "${pids[@]}"; do wait "$p" || { echo "capture-demo: publisher failed" >&2; exit 1; }; done
    pids=()
  fi
done <"$tmp/pubs.tsv"
for p in "${pids[@]}"; do wait "$p" || { echo "capture-demo: publisher failed" >&2; exit 1; }; done

# Every subscriber must have received what the broker owes it.
deadline=$((SECONDS + 60))
while :; do
  short=$(python3 -c '
import json, sys
for s in json.load(open(sys.argv[1]))["subscribers"]:
    n = sum(1 for _ in open(sys.argv[2] + "/sub-" + s["client_id"] + ".out"))
    if n != s["deliveries"]:
        print("%s %d/%d" % (s["client_id"], n, s["deliveries"]))' "$PLAN" "$tmp")
  [ -z "$short" ] && break
  [ $SECONDS -lt $deadline ] || { echo "capture-demo: deliveries incomplete: $short" >&2; exit 1; }
  sleep 0.2
done
# SIGTERM through timeout: mosquitto_sub sends DISCONNECT and exits.
for p in "${sub_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${sub_pids[@]}"; do _wm_wait_pid_gone "$p" 10; done
sub_pids=()
wm_pcap_stop
cat "$tmp/out.pcap" >"$OUT"
cp "$PLAN" "$PLAN_OUT"
echo "capture-demo: $(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["messages"], "messages from", len(p["publishers"]), "publishers,", len(p["subscribers"]), "subscribers")' "$PLAN"), $(stat -c %s "$OUT") bytes -> $OUT, plan -> $PLAN_OUT"
