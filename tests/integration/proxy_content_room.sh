#!/usr/bin/env bash
# Content filters valid alone that do not compile together (finding 3 of
# REVIEW6): a worker's texts share one path automaton, bounded by
# WM_XPF_MAX_STATES (65,536 states), so //s:senml/*^10 and //s:bn/*^10 are
# each valid but not both (as are the review's *^14 ones). In front of a real mosquitto on 127.0.0.1 with
# raw-socket clients (proxy_content_room.py has the scenarios), --threads 1:
# - new texts: the text that does not fit on top of those accepted before it
#   is refused alone (SUBACK 0x97 Quota exceeded, Reason String naming the
#   limit), an unrelated small text compiled in the same job is granted and
#   delivers, the accepted text stays; once its holder has gone the refused
#   text is granted. Before the fix every text of the job got 0x80
#   "invalid xpath: content filters do not compile together".
# - a resumed persistent session: its text that fits keeps delivering (before:
#   nothing, counted no_filter_for_schema), the one that does not is counted
#   (content.resume_refused) and logged with the session, filter and reason.
# - a burst (REVIEW7 finding 2): 16 texts that do not fit, pipelined, then a
#   small one from another client, then the same 16 again: each gets 0x97 with
#   its reason, the small one is granted. The set builds (content.set_builds)
#   stay within about one per refused text and none for the second round
#   (content.room_cached 16); before, each refusal cost log2(n) + 1 failing
#   builds of the whole set and every round as much again (the review's 64
#   texts kept the compile thread busy 23 s per round).
set -euo pipefail
. "$(dirname "$0")/lib/proxy_peers.sh"
px_senml
px_monaco
echo "senml $S/senml.gen.xsd s=$NS" > "$TMP/schemas.txt"
PAY=$S/ex1.gen.exi
px_broker

# scenario NAME MODE CHECK: a proxy, proxy_content_room.py MODE against it, then CHECK (Python, on c =
# the summary's content object)
scenario() {
  local name=$1 mode=$2 port pid
  px_proxy "$name" --resolution "$TMP/m.wmr" --schemas "$TMP/schemas.txt" --threads 1
  port=PORT_$name pid=PID_$name
  timeout 300 python3 "$(dirname "$0")/proxy_content_room.py" "$mode" "${!port}" "$PAY" || fail "$mode"
  px_stop "${!pid}" || fail "proxy exit status"
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["content"]
assert eval(sys.argv[2]), c
print("ok: summary: " + sys.argv[2])' "$TMP/$name.json" "$3" || fail "summary ($mode)"
}
# B's text twice refused for want of room; A, D, C and B's once A had gone granted
scenario nw new 'c["suback_quota"] == 2 and c["suback_bad_xpath"] == 0 and c["xpath_subscribes"] == 4'
scenario rs resume 'c["resume_refused"] == 1 and c["suback_quota"] == 1 and c["no_filter_for_schema"] == 0'
# A's text, B's 16 (whole set, the published texts alone, 15 + log2(16) to
# isolate them, however many compiles the burst is split into: 2 each), C's;
# the second round none. Before: 16 x (log2(16) + 1) = 80 for the first round.
scenario bu burst 'c["suback_quota"] == 32 and c["room_cached"] == 16 and c["set_builds"] <= 1 + 16 + 4 + 2 * 3 + 1'
grep -q 'session "room-s" resumed: subscription "rr/2" passes nothing, its content filter is refused: .*compiles alone.*WM_XPF_MAX_STATES' \
  "$TMP/rs.err" || { cat "$TMP/rs.err"; fail "no log line naming the resumed session's refused filter"; }
echo "proxy_content_room: a text that does not fit is refused alone (0x97), with its reason; the others of its job and the accepted ones keep working; a resumed session's too"
