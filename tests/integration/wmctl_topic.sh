#!/usr/bin/env bash
# `wmctl topic` end to end: verdicts on filters and names (MQTT 5.0 §4.7,
# §4.8.2), and refusals that name the reason and byte, with the operand echoed
# so a terminal shows it: ill-formed UTF-8 and control bytes as \xHH escapes,
# never raw (the refused bytes are often the point).
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
WMCTL=$BUILD/wmctl
fail=0; n=0

expect() { # name want-rc want-stdout want-stderr -- args...
  local name=$1 rc=$2 out=$3 err=$4; shift 5
  n=$((n + 1))
  local o e r=0
  o=$("$WMCTL" topic "$@" 2>/tmp/wm-topic-err.$$) || r=$?
  e=$(cat /tmp/wm-topic-err.$$); rm -f /tmp/wm-topic-err.$$
  if [[ $r != "$rc" || $o != "$out" || $e != "$err" ]]; then
    echo "FAIL $name: rc $r (want $rc)"; printf '  stdout: %q\n  want:   %q\n  stderr: %q\n  want:   %q\n' "$o" "$out" "$e" "$err"
    fail=$((fail + 1))
  fi
}

expect match_plus 0 true "" -- match 'a/+/c' 'a/b/c'
expect match_hash_parent 0 true "" -- match 'a/#' 'a'
expect match_dollar 0 false "" -- match '#' '$SYS/x'
expect match_share 0 true "" -- match '$share/g/a/+' 'a/b'
expect filter_ok 0 valid "" -- check-filter 'a/+/#'
expect name_utf8 0 valid "" -- check-name 'caf'$'\xc3\xa9'
expect bad_hash 2 "" 'wmctl topic: invalid filter "a/b#": '"'"'#'"'"' must occupy a whole level (MQTT 5.0 4.7.1.2) [hash_not_alone] at byte 3' \
  -- check-filter 'a/b#'
# ill-formed UTF-8: 0xff escaped, the valid bytes around it kept
expect bad_utf8 2 "" 'wmctl topic: invalid topic name "a\xffb": topic is not well-formed UTF-8 (MQTT 5.0 1.5.4) [bad_utf8] at byte 1' \
  -- check-name $'a\xffb'
# a wildcard in a name, with a quote and a tab in it: both escaped
expect bad_wild 2 "" 'wmctl topic: invalid topic name "\"\x09+": wildcard '"'"'+'"'"' or '"'"'#'"'"' in a topic name (MQTT 5.0 4.7.1) [wildcard_in_name] at byte 2' \
  -- check-name $'"\t+'

echo "wmctl_topic: $n checks, $fail failed"
[[ $fail == 0 ]]
