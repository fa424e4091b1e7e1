#!/usr/bin/env bash
# Match-log lines the system refuses to store are counted apart, with the
# reason, and the exit status says so (dataplane/match_log.h). Before, stdio
# swallowed the failed write: every line counted as written, exit 0.
#  1. the demo capture logged to a normal file: the reference line count L;
#  2. logged to a 64 KiB tmpfs (mounted in a private mount namespace of this
#     test): exit 3, "No space left on device" on stderr and in the summary's
#     match.log_error, log_lines = the lines in the file (each a whole JSON
#     line: the one cut by the full disk is truncated away, seq 1..n with no
#     gap), log_lines + log_lines_failed = L;
#  3. logged into a FIFO whose reader reads 1,000 bytes and closes it: exit 3
#     (not killed by SIGPIPE), "Broken pipe", log_lines + log_lines_failed = L.
. "$(dirname "$0")/lib/dataplane_env.sh" wmml
PFX=$wm_eal_prefix
run() { # run NAME LOG: replays the demo capture with --match-log LOG; exit status in $tmp/NAME.rc
  local name=$1 log=$2 rc=0
  timeout 300 "$B/wirematch" -l 0 --no-huge --no-pci --no-shconf --file-prefix "$PFX$name" --log-level=lib.eal:error \
    --vdev net_pcap0,rx_pcap="$R/tests/data/demo.pcap" -- --mqtt-port 60161 --match-log "$log" \
    --summary "$tmp/$name.json" > "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
  echo $rc > "$tmp/$name.rc"
}
counts() { jq -r '.match | "\(.log_lines) \(.log_lines_failed) \(.log_error)"' "$tmp/$1.json"; }

run ok "$tmp/ok.jsonl"
[ "$(cat "$tmp/ok.rc")" = 0 ] || fail "normal log: exit $(cat "$tmp/ok.rc"): $(tail -3 "$tmp/ok.err")"
L=$(wc -l < "$tmp/ok.jsonl")
[ "$L" -gt 1000 ] || fail "normal log has only $L lines"
read -r w f e < <(counts ok)
[ "$w $f" = "$L 0" ] && [ "$e" = "" ] || fail "normal log: summary says $w written, $f failed, error '$e' (file: $L lines)"

# 2. A full disk: a tmpfs of its own, in a mount namespace of this test only.
mkdir "$tmp/small"
unshare -m bash -c 'mount -t tmpfs -o size=64k wm-test "$1" || exit 99; shift; "$@"' _ "$tmp/small" \
  bash -c "$(declare -f run); B='$B' R='$R' tmp='$tmp' PFX='$PFX' run full '$tmp/small/m.jsonl'; cp '$tmp/small/m.jsonl' '$tmp/full.jsonl'" \
  || fail "cannot mount a tmpfs in a private mount namespace (needs root)"
rc=$(cat "$tmp/full.rc")
[ "$rc" = 3 ] || fail "full disk: exit $rc, expected 3: $(tail -3 "$tmp/full.err")"
grep -q "wirematch: --match-log: [0-9]* of $L lines not written: .*m.jsonl: No space left on device" "$tmp/full.err" \
  || fail "full disk: no clear message: $(grep -v EAL "$tmp/full.err" | tail -3)"
read -r w f e < <(counts full)
n=$(wc -l < "$tmp/full.jsonl")
[ "$w" = "$n" ] || fail "full disk: summary says $w lines written, the file has $n"
[ $((w + f)) = "$L" ] && [ "$f" -gt 0 ] || fail "full disk: $w written + $f failed != $L produced"
[[ "$e" == *"m.jsonl: No space left on device" ]] || fail "full disk: log_error '$e'"
python3 - "$tmp/full.jsonl" <<'EOF' || fail "full disk: the file is not whole JSON lines seq 1..n"
import json, sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "a torn last line: %r" % data[-80:]
seqs = [json.loads(l)["seq"] for l in data.decode().splitlines()]
assert seqs == list(range(1, len(seqs) + 1)), seqs[-5:]
EOF
echo "ok: full disk: $w of $L lines stored (whole), $f counted as not written, exit 3"

# 3. A FIFO whose reader goes away.
mkfifo "$tmp/fifo"
python3 -c 'import sys; f = open(sys.argv[1], "rb"); d = f.read(1000); f.close(); open(sys.argv[2], "wb").write(d)' \
  "$tmp/fifo" "$tmp/fifo.got" & reader=$!
run fifo "$tmp/fifo"
wait $reader || fail "FIFO reader"
rc=$(cat "$tmp/fifo.rc")
[ "$rc" = 3 ] || fail "FIFO: exit $rc, expected 3 (141: killed by SIGPIPE): $(tail -3 "$tmp/fifo.err")"
read -r w f e < <(counts fifo)
[ $((w + f)) = "$L" ] && [ "$f" -gt 0 ] || fail "FIFO: $w written + $f failed != $L produced"
[[ "$e" == *"fifo: Broken pipe" ]] || fail "FIFO: log_error '$e'"
grep -q "lines not written: .*fifo: Broken pipe" "$tmp/fifo.err" || fail "FIFO: no message on stderr"
echo "ok: FIFO closed by its reader: $f of $L lines counted as not written, exit 3"
echo "dataplane_match_log_errors: full disk and closed FIFO: lost lines counted with the reason, exit 3"
