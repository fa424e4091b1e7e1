#!/usr/bin/env bash
# make bench-proxy: mosquitto alone vs mosquitto behind wirematch-proxy in
# pass-through, measured in one run with the same load generator
# (build/perf/mqtt_loadgen: raw sockets, pre-encoded QoS 0 frames).
#
# Per target, two loads: closed loop (the most the system sustains, for
# delivered messages/s and CPU per component) and open loop at RATE msg/s
# (below saturation, for latency). CPU per component is utime+stime from
# /proc/PID/stat over the run. Figures:
#   delivered/s                       subscribers' receptions per second
#   mosquitto msgs per CPU-s          deliveries / mosquitto CPU seconds
#   proxy msgs per CPU-s              PUBLISH frames the proxy relayed (both
#                                     directions) / proxy CPU seconds
#   efficiency ratio                  proxy msgs per CPU-s / mosquitto msgs per CPU-s
#                                     in the same run (issue 7 target: >= 5)
#   added latency p50/p99             proxied minus direct, open loop (target p99 <= 100 us)
# The machine is shared: read ratios, run it twice. Output: a table on stdout
# and BUILD/bench/proxy.json. Everything on 127.0.0.1, stopped by the trap.
#
# usage: perf/proxy_bench.sh BUILD   (env: SUBS=4 PUBS=2 SECS=5 RATE=2000 PAYLOAD=64 THREADS=1
#                                     BATCH_WAIT_US=50, the proxy's --batch-wait-us)
set -euo pipefail
BUILD=${1:-build}
SUBS=${SUBS:-4}; PUBS=${PUBS:-2}; SECS=${SECS:-5}; RATE=${RATE:-2000}; PAYLOAD=${PAYLOAD:-64}; THREADS=${THREADS:-1}; BATCH_WAIT_US=${BATCH_WAIT_US:-50}
LG=$BUILD/perf/mqtt_loadgen; PROXY=$BUILD/wirematch-proxy
PATH=$PATH:/usr/sbin
TMP=$(mktemp -d "${TMPDIR:-/tmp}/wm-proxy-bench.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

BPORT=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\nlog_dest none\n' "$BPORT" > "$TMP/m.conf"
mosquitto -c "$TMP/m.conf" & MOSQ=$!; pids+=($MOSQ)
wait_port "$BPORT" || { echo "proxy_bench: mosquitto did not start"; exit 1; }

# run NAME MODE PORT [PROXY_PID]: one load-generator run; writes $TMP/NAME.json
run() {
  local name=$1 mode=$2 port=$3 ppid=${4:-} m0 m1 p0=0 p1=0 rate
  [ "$mode" = closed ] && rate=0 || rate=$RATE
  m0=$(cpu_ticks "$MOSQ"); [ -n "$ppid" ] && p0=$(cpu_ticks "$ppid")
  "$LG" --port "$port" --subs "$SUBS" --pubs "$PUBS" --payload "$PAYLOAD" --duration "$SECS" \
        --count 100000000 --rate "$rate" --window 4000 > "$TMP/$name.lg" || { echo "proxy_bench: $name: loadgen failed"; exit 1; }
  m1=$(cpu_ticks "$MOSQ"); [ -n "$ppid" ] && p1=$(cpu_ticks "$ppid")
  local hz; hz=$(getconf CLK_TCK)
  python3 - "$TMP/$name.lg" "$(( m1 - m0 ))" "$(( p1 - p0 ))" "$hz" > "$TMP/$name.json" <<'PY'
import json, sys
lg = json.load(open(sys.argv[1])); hz = float(sys.argv[4])
lg["mosquitto_cpu_s"] = int(sys.argv[2]) / hz; lg["proxy_cpu_s"] = int(sys.argv[3]) / hz
print(json.dumps(lg))
PY
}

# A proxy per proxied run, so its summary covers that run only.
proxied() {
  local name=$1 mode=$2 port; port=$(free_port)
  "$PROXY" --listen 127.0.0.1:"$port" --upstream 127.0.0.1:"$BPORT" --threads "$THREADS" --batch-wait-us "$BATCH_WAIT_US" \
           --summary "$TMP/$name.summary" 2> "$TMP/$name.err" & local pid=$!; pids+=($pid)
  wait_port "$port" || { echo "proxy_bench: proxy did not start"; cat "$TMP/$name.err"; exit 1; }
  run "$name" "$mode" "$port" "$pid"
  kill -TERM "$pid"; wait "$pid" || { echo "proxy_bench: proxy failed"; exit 1; }
}

echo "proxy_bench: $SUBS subscribers, $PUBS publishers, ${PAYLOAD}-byte payloads, ${SECS}s per run, open loop at $RATE msg/s;" \
     "proxy: $THREADS thread(s), --batch-wait-us $BATCH_WAIT_US; load average $(cut -d' ' -f1 /proc/loadavg)"
run direct_closed closed "$BPORT"
proxied proxy_closed closed
run direct_open open "$BPORT"
proxied proxy_open open

mkdir -p "$BUILD/bench"
python3 - "$TMP" "$BUILD/bench/proxy.json" <<'PY'
import json, sys
d = sys.argv[1]
r = {n: json.load(open(f"{d}/{n}.json")) for n in ("direct_closed", "proxy_closed", "direct_open", "proxy_open")}
s = {n: json.load(open(f"{d}/{n}.summary")) for n in ("proxy_closed", "proxy_open")}
dc, pc = r["direct_closed"], r["proxy_closed"]
relayed = s["proxy_closed"]["publishes"]["client_to_upstream"] + s["proxy_closed"]["publishes"]["upstream_to_client"]
relayed_down = s["proxy_closed"]["publishes"]["upstream_to_client"]
mosq_eff_direct = dc["delivered"] / dc["mosquitto_cpu_s"] if dc["mosquitto_cpu_s"] else 0
mosq_eff_proxied = pc["delivered"] / pc["mosquitto_cpu_s"] if pc["mosquitto_cpu_s"] else 0
proxy_eff = relayed / pc["proxy_cpu_s"] if pc["proxy_cpu_s"] else float("inf")
proxy_eff_down = relayed_down / pc["proxy_cpu_s"] if pc["proxy_cpu_s"] else float("inf")
out = {
  "runs": r, "proxy_summaries": s,
  "delivered_per_s": {"mosquitto": dc["delivered_per_s"], "behind_proxy": pc["delivered_per_s"]},
  "cpu_s": {"mosquitto_alone": dc["mosquitto_cpu_s"], "mosquitto_behind_proxy": pc["mosquitto_cpu_s"],
            "proxy": pc["proxy_cpu_s"], "loadgen_alone": dc["cpu_s"], "loadgen_behind_proxy": pc["cpu_s"]},
  "msgs_per_cpu_s": {"mosquitto_alone": mosq_eff_direct, "mosquitto_behind_proxy": mosq_eff_proxied,
                     "proxy_both_directions": proxy_eff, "proxy_deliveries_only": proxy_eff_down},
  "efficiency_ratio": proxy_eff / mosq_eff_proxied if mosq_eff_proxied else None,
  "efficiency_ratio_deliveries_only": proxy_eff_down / mosq_eff_proxied if mosq_eff_proxied else None,
  "latency_us": {"direct": r["direct_open"]["latency_us"], "proxied": r["proxy_open"]["latency_us"],
                 "added_p50": r["proxy_open"]["latency_us"]["p50"] - r["direct_open"]["latency_us"]["p50"],
                 "added_p99": r["proxy_open"]["latency_us"]["p99"] - r["direct_open"]["latency_us"]["p99"]},
  "spatial_filtering": "not measured: the proxy does not filter yet",
}
json.dump(out, open(sys.argv[2], "w"), indent=1)
f = lambda x: f"{x:,.0f}"
print(f"{'':34}{'mosquitto':>14}{'behind proxy':>14}")
print(f"{'delivered msg/s (closed loop)':34}{f(dc['delivered_per_s']):>14}{f(pc['delivered_per_s']):>14}")
print(f"{'mosquitto CPU s':34}{dc['mosquitto_cpu_s']:>14.2f}{pc['mosquitto_cpu_s']:>14.2f}")
print(f"{'proxy CPU s':34}{'-':>14}{pc['proxy_cpu_s']:>14.2f}")
print(f"{'loadgen CPU s':34}{dc['cpu_s']:>14.2f}{pc['cpu_s']:>14.2f}")
print(f"{'mosquitto deliveries per CPU s':34}{f(mosq_eff_direct):>14}{f(mosq_eff_proxied):>14}")
print(f"{'proxy PUBLISH relayed per CPU s':34}{'-':>14}{f(proxy_eff):>14}")
print(f"{'  of which broker->client':34}{'-':>14}{f(proxy_eff_down):>14}")
print(f"efficiency ratio (proxy relayed / mosquitto delivered, per CPU s, same run): {out['efficiency_ratio']:.2f}"
      f" (counting only broker->client frames: {out['efficiency_ratio_deliveries_only']:.2f}; target >= 5)")
lo = out["latency_us"]
print(f"latency at fixed rate, us: direct p50 {lo['direct']['p50']} p99 {lo['direct']['p99']}; "
      f"proxied p50 {lo['proxied']['p50']} p99 {lo['proxied']['p99']}; added p50 {lo['added_p50']} p99 {lo['added_p99']}  (target p99 <= 100)")
print(f"written: {sys.argv[2]}")
PY
