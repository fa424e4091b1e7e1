#!/usr/bin/env bash
# Telemetry /wirematch/flows lists connections (dataplane/flow_report.h):
# the crafted fragment capture (dataplane_mqtt_pcap.py frag) leaves two
# connections open — "pub" (its PUBLISHes reassembled from IPv4 fragments)
# and "sub" — and wirematch keeps polling after the capture ends until the
# test stops it with SIGTERM (--idle-exit-ms only bounds a run the test lost
# track of; a stop by idle time made the queries a race against the clock,
# lost on a loaded machine), so the answer is exact: both flows with their
# endpoints, client ids, state and the stream bytes and packets the
# generator computed independently, biggest first; N bounds the list; a bad
# N is refused.
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
tmp=$(mktemp -d)
PFX=wmfl$$
wm_pid=
trap '[ -n "$wm_pid" ] && kill -KILL "$wm_pid" 2>/dev/null; rm -rf "$tmp" "/var/run/dpdk/$PFX" 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 "$R/tests/integration/dataplane_mqtt_pcap.py" frag "$tmp/frag.pcap" 1883 > "$tmp/expect.json"
tel() {
  timeout 10 python3 - "/var/run/dpdk/$PFX/dpdk_telemetry.v2" "$1" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(16384)
s.send(sys.argv[2].encode())
print(s.recv(1 << 20).decode())
EOF
}
# Not under timeout(1), whose own SIGTERM at its bound would look like ours.
"$B/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "$PFX" --log-level=lib.eal:error \
  --log-level=user1:error --vdev "net_pcap0,rx_pcap=$tmp/frag.pcap" -- --mqtt-port 1883 --idle-exit-ms 300000 \
  --summary "$tmp/summary.json" 2> "$tmp/wm.log" &
wm_pid=$!
# However slow the start: until both flows are listed, wirematch has gone, or 120 s.
SECONDS=0
until tel /wirematch/flows,32 > "$tmp/all.json" && grep -q '"flow2"' "$tmp/all.json"; do
  kill -0 "$wm_pid" 2>/dev/null || fail "wirematch exited before listing both flows: $(tail -3 "$tmp/wm.log")"
  [ $SECONDS -lt 120 ] || fail "both flows not listed after 120 s: $(cat "$tmp/all.json")"
  sleep 0.1
done
tel /wirematch/flows,1 > "$tmp/one.json"
tel /wirematch/flows,0 > "$tmp/zero.json"
# every command answers data or {"error": REASON}, never a bare null (this run has no match tables);
# one connection, so that all are asked well within the run's idle exit
timeout 10 python3 - "/var/run/dpdk/$PFX/dpdk_telemetry.v2" /wirematch/stats /wirematch/stats,x /wirematch/flows,abc \
  /wirematch/flows,33 /wirematch/subscriptions /wirematch/reload /wirematch/subscriptions,1 > "$tmp/cmds.json" <<'EOF' \
  || fail "telemetry commands not answered: $(cat "$tmp/cmds.json")"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(16384)
answers = []
for c in sys.argv[2:]:
    s.send(c.encode())
    answers.append(json.loads(s.recv(1 << 20).decode()))
print(json.dumps(answers))
EOF
kill -TERM "$wm_pid"
timeout 60 tail --pid="$wm_pid" -f /dev/null || fail "wirematch still running 60 s after SIGTERM"
wait "$wm_pid" || fail "wirematch exited $? on SIGTERM: $(tail -3 "$tmp/wm.log")"
wm_pid=
# heap figures only where it runs on jemalloc (ldd read whole: see dataplane_demo_match.sh)
JE=0; grep -q libjemalloc <<< "$(ldd "$B/wirematch")" && JE=1
python3 - "$tmp" "$JE" <<'EOF' || fail "flows answer: $(cat "$tmp/all.json")"
import json, sys
tmp = sys.argv[1]
e = json.load(open(tmp + "/expect.json"))["flows"]
a = json.load(open(tmp + "/all.json"))["/wirematch/flows"]
assert a["worker0"]["active"] == 2, a["worker0"]
flows = [a["flow%d" % k] for k in (1, 2)]
assert "flow3" not in a, a
for f in flows:
    x = e[f["client_id"]]
    got = {k: f[k] for k in ("client_port", "c2s_bytes", "s2c_bytes", "c2s_packets", "s2c_packets")}
    assert got == x, (f["client_id"], got, x)
    assert f["state"] == "established" and f["server_port"] == 1883 and f["server"] == "10.0.0.1", f
    assert f["client"] == "10.1.0.%d" % (f["client_port"] - 20000), f
assert [f["client_id"] for f in flows] == ["pub", "sub"], "not biggest first"
one = json.load(open(tmp + "/one.json"))["/wirematch/flows"]
assert "flow1" in one and "flow2" not in one and one["flow1"]["client_id"] == "pub", one
assert "from 1 to 32, got '0'" in json.load(open(tmp + "/zero.json"))["/wirematch/flows"]["error"], "N=0 accepted"
want = [("/wirematch/stats", None), ("/wirematch/stats", "takes no parameters, got 'x'"),
        ("/wirematch/flows", "from 1 to 32, got 'abc'"), ("/wirematch/flows", "from 1 to 32, got '33'"),
        ("/wirematch/subscriptions", "no match tables: start wirematch with --resolution, --subs or --schemas"),
        ("/wirematch/reload", "no match tables"), ("/wirematch/subscriptions", "takes no parameters, got '1'")]
answers = json.load(open(tmp + "/cmds.json"))
assert len(answers) == len(want), answers
for n, (cmd, err) in enumerate(want, 1):
    a = answers[n - 1][cmd]
    assert isinstance(a, dict) and a, (cmd, a)
    if err: assert err in a.get("error", ""), (n, cmd, a)
    else:
        assert "error" not in a and a["packets"]["rx"] > 0, (cmd, a)
        m = a.get("memory")
        if sys.argv[2] == "1": assert m and 0 < m["allocated"] <= m["active"] <= min(m["resident"], m["mapped"]), (cmd, m)
        else: assert m is None, (cmd, m)
print("flows: pub %d+%d B, sub %d+%d B exact, biggest first, N bounds the list, N=0 refused; 7 commands: data or an error with the reason"
      % (flows[0]["c2s_bytes"], flows[0]["s2c_bytes"], flows[1]["c2s_bytes"], flows[1]["s2c_bytes"]))
EOF
