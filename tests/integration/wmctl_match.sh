#!/usr/bin/env bash
# `wmctl match`: the README example end to end (expected output worked out by
# hand from MQTT 5.0 §4.7/§4.8.2/§3.8.3.1 and the spatial rule), then every
# kind of bad line must stop with exit 2 and "FILE:LINE: reason".
set -euo pipefail
WMCTL=$(cd "${WM_BUILD:-build}" && pwd)/wmctl
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

cat > filters.json <<'J'
{"near-station": ["way/1", "node/7", "way/3"], "harbour": ["way/9"]}
J
cat > subs.jsonl <<'J'
{"id": "s1", "client": "car1", "filter": "traffic/+/speed", "nbhd": "near-station"}
{"id": "s2", "client": "car2", "filter": "traffic/#"}
{"id": 7, "client": "car3", "filter": "$share/fleet/traffic/#", "nbhd": "harbour", "qos": 1}
{"id": 3, "client": "car4", "filter": "$share/fleet/traffic/#"}

{"id": "s5", "client": "car1", "filter": "traffic/#", "no_local": true}
J
cat > pubs.jsonl <<'J'
{"topic": "traffic/a1/speed", "peids": ["node/7"], "client": "car1"}
{"topic": "traffic/a1/speed", "peids": []}
{"topic": "traffic/x", "peids": ["way/9", "unknown"], "client": "car9"}
{"topic": "$SYS/x", "peids": ["way/9"]}
J
cat > expected <<'J'
{"matched": [3, "s1", "s2"]}
{"matched": [3, "s2", "s5"]}
{"matched": [3, 7, "s2", "s5"]}
{"matched": []}
J
"$WMCTL" match --subs subs.jsonl --filters filters.json --pubs pubs.jsonl > got
diff -u expected got

fails=0
expect_error() { # FILE-CONTENT-SETUP already done; $1 = args..., last = expected stderr fragment
  local want=$1; shift
  local rc=0
  "$WMCTL" match "$@" > /dev/null 2> err || rc=$?
  if [ "$rc" != 2 ] || ! grep -qF -- "$want" err; then
    echo "expected exit 2 and '$want', got rc=$rc: $(cat err)"; fails=$((fails + 1))
  fi
}
printf '{"id": "a", "client": "c", "filter": "a/#/b"}\n' > bad1.jsonl
expect_error "bad1.jsonl:1: \"filter\": invalid topic filter" --subs bad1.jsonl --pubs pubs.jsonl
printf '{"id": "a", "client": "c", "filter": "a"}\n{"id": "a", "client": "c", "filter": "b"}\n' > bad2.jsonl
expect_error 'bad2.jsonl:2: duplicate "id" "a" (first on line 1)' --subs bad2.jsonl --pubs pubs.jsonl
printf '{"id": "a", "client": "c", "filter": "a", "nbhd": "nowhere"}\n' > bad3.jsonl
expect_error 'bad3.jsonl:1: "nbhd": unknown neighborhood "nowhere"' --subs bad3.jsonl --filters filters.json --pubs pubs.jsonl
printf '{"id": "a", "client": "c", "filter": "$share/g/a", "no_local": true}\n' > bad4.jsonl
expect_error 'bad4.jsonl:1: No Local on a shared subscription' --subs bad4.jsonl --pubs pubs.jsonl
printf '{"id": "a", "client": "c", "filter": "a", "qso": 1}\n' > bad5.jsonl
expect_error 'bad5.jsonl:1: unknown key "qso"' --subs bad5.jsonl --pubs pubs.jsonl
printf '{"topic": "a", "peids": []}\n{"topic": "a/+", "peids": []}\n' > badp.jsonl
expect_error 'badp.jsonl:2: "topic": invalid topic name' --subs subs.jsonl --filters filters.json --pubs badp.jsonl
printf '{"topic": "a", "peids": ["x", 3]}\n' > badp2.jsonl
expect_error 'badp2.jsonl:1: "peids"[1] must be a string' --subs subs.jsonl --filters filters.json --pubs badp2.jsonl
printf '{"topic": "a", "peids": []\n' > badp3.jsonl
expect_error 'badp3.jsonl:1: column' --subs subs.jsonl --filters filters.json --pubs badp3.jsonl
# an object cut at the end of its line: the error is at that line's last column (it said column 0)
printf '{"id": "a", "client": "c",\n"filter": "a"}\n' > bads6.jsonl
expect_error 'bads6.jsonl:1: column 26: invalid JSON: string or' --subs bads6.jsonl --pubs pubs.jsonl
# FILTERS errors: FILE:LINE:COLUMN of the value at fault (columns in characters, as jansson counts them),
# peids counted from 1
printf '{"n": ["a", ""]}' > badf.json
expect_error 'badf.json:1:13: neighborhood "n": peid 2 is not a non-empty string' --subs subs.jsonl --filters badf.json --pubs pubs.jsonl
printf '{"n": ["a",]}' > badf2.json
expect_error 'badf2.json:1:' --subs subs.jsonl --filters badf2.json --pubs pubs.jsonl
printf '{"a": ["x"],\n "b": ["y", "z"],\n "c\\"d": ["[", "]", "{"], "\xc3\xa9": "not an array"}' > badf3.json
expect_error 'badf3.json:3:32: neighborhood "é": expected an array of peid strings' --subs subs.jsonl --filters badf3.json --pubs pubs.jsonl
printf '{"a": ["x",\n  5]}' > badf4.json
expect_error 'badf4.json:2:3: neighborhood "a": peid 2 is not a non-empty string' --subs subs.jsonl --filters badf4.json --pubs pubs.jsonl
# The data plane's and the proxy's bound on a publication's peids (control/peid_props.h, WM_PEIDS_MAX 64):
# 64 are matched (the 64th reaches s1's neighborhood), 65 are refused at the 65th (it answered for up to 256,
# which the data plane delivers to no one)
python3 - <<'PY'
import json
p64 = ["p%d" % i for i in range(63)] + ["node/7"]
with open("pubs64.jsonl", "w") as f:
    f.write(json.dumps({"topic": "traffic/a1/speed", "peids": p64}) + "\n")
    f.write(json.dumps({"topic": "traffic/a1/speed", "peids": p64 + ["way/1"]}) + "\n")
PY
head -1 pubs64.jsonl > ok64.jsonl
[ "$("$WMCTL" match --subs subs.jsonl --filters filters.json --pubs ok64.jsonl)" = '{"matched": [3, "s1", "s2", "s5"]}' ] \
  || { echo "64 peids: wrong answer"; fails=$((fails + 1)); }
expect_error 'pubs64.jsonl:2: "peids"[64]: 65 peids, more than a spatial publish may carry (64: the data plane' \
  --subs subs.jsonl --filters filters.json --pubs pubs64.jsonl
# an empty peid is no peid, as on the wire (README "Empty peid"): [""] answers as [], ["", "node/7"] as ["node/7"],
# and empties do not count towards the 64
python3 - <<'PY'
import json
p64 = ["p%d" % i for i in range(63)] + ["node/7"]
with open("pubs_empty.jsonl", "w") as f:
    for peids in ([""], ["", "node/7", ""], [""] * 10 + p64):
        f.write(json.dumps({"topic": "traffic/a1/speed", "peids": peids}) + "\n")
PY
printf '{"matched": [3, "s2", "s5"]}\n{"matched": [3, "s1", "s2", "s5"]}\n{"matched": [3, "s1", "s2", "s5"]}\n' > want_empty
"$WMCTL" match --subs subs.jsonl --filters filters.json --pubs pubs_empty.jsonl > got_empty 2>&1 || true
diff -u want_empty got_empty || { echo "empty peids: wrong answer"; fails=$((fails + 1)); }
expect_error 'usage: wmctl match' --subs subs.jsonl
expect_error 'wmctl match: no --pubs' --subs subs.jsonl
expect_error 'wmctl match: no --subs' --pubs pubs.jsonl
expect_error 'missing.jsonl' --subs missing.jsonl --pubs pubs.jsonl
# an option given twice is refused (the last one won, silently, before 2026-12-02)
expect_error 'wmctl match: --pubs given twice: give it once' --subs subs.jsonl --pubs missing.jsonl --pubs pubs.jsonl

[ $fails -eq 0 ] || { echo "$fails error cases failed"; exit 1; }
echo "wmctl match: example output exact, 64 peids matched, 18 bad inputs rejected with file:line or the rule broken"
