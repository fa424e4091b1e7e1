#!/usr/bin/env bash
# build/wirematch's usage (dataplane/app_options.c): `wirematch -- --help`
# prints every app option with its units, range and default and exits 0
# without starting EAL (which, without hugepages and --no-huge, cannot even
# start); `wirematch --help` prints EAL's options and then the same text; a
# bad app option is refused before EAL, exit 2. README's option block is the
# text verbatim. Before: `-- --help` started EAL and exited 2 ("usage:" with
# no option described), and `--help` showed EAL's options only.
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

rc=0; "$B/wirematch" -- --help > "$tmp/app.txt" 2> "$tmp/app.err" || rc=$?
[ $rc = 0 ] || fail "wirematch -- --help: exit $rc: $(tail -3 "$tmp/app.err")"
[ ! -s "$tmp/app.err" ] || fail "wirematch -- --help wrote to stderr (EAL started?): $(head -3 "$tmp/app.err")"
rc=0; "$B/wirematch" -- -h > "$tmp/h.txt" 2>&1 || rc=$?
[ $rc = 0 ] && cmp -s "$tmp/app.txt" "$tmp/h.txt" || fail "wirematch -- -h: exit $rc or another text"
# every option the parser takes is described, with the unit of each number and its default
for opt in mqtt-port resolution subs schemas match-log summary tx stats-interval max-flows ooo-blocks max-subs \
           idle-exit-ms mbufs share-policy xpath-apply frag-max frag-timeout-ms idle-timeout help; do
  grep -qE "^  --$opt( |\$)" "$tmp/app.txt" || fail "--$opt not in the usage"
done
for u in 'SEC .*seconds.*default 0' 'max-flows N .*per worker.*default 16384' 'ooo-blocks N .*2 KiB.*default 2048' \
         'idle-exit-ms MS .*milliseconds' 'frag-timeout-ms MS .*milliseconds.*default 2000' 'default 1883'; do
  tr '\n' ' ' < "$tmp/app.txt" | sed 's/  */ /g' | grep -qE -- "$u" || fail "usage lacks /$u/"
done
# the parser accepts what the usage names, and refuses what it does not, before EAL
rc=0; "$B/wirematch" -- --max-flows 0 > "$tmp/bad.out" 2> "$tmp/bad.err" || rc=$?
[ $rc = 2 ] && grep -q '^wirematch: --max-flows: "0" is not in 1..16777216$' "$tmp/bad.err" && ! grep -q '^EAL:' "$tmp/bad.err" \
  || fail "a bad option: exit $rc: $(head -3 "$tmp/bad.err")"

rc=0; "$B/wirematch" --help > "$tmp/eal.txt" 2> "$tmp/eal.err" || rc=$?
[ $rc = 0 ] || fail "wirematch --help: exit $rc"
grep -q -- '--vdev' "$tmp/eal.txt" || fail "wirematch --help does not list EAL's options"
python3 - "$tmp/eal.txt" "$tmp/app.txt" <<'PY' || fail "wirematch --help does not end with the app options"
import sys
eal, app = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert eal.endswith(app), eal[-300:]
PY

# README's block is the usage verbatim
python3 - "$R/README.md" "$tmp/app.txt" <<'PY' || fail "README's app option block differs from wirematch -- --help"
import sys
readme, app = open(sys.argv[1]).read(), open(sys.argv[2]).read()
tag = "<!-- wirematch -- --help -->\n```text\n"
i = readme.index(tag) + len(tag)
block = readme[i:readme.index("```", i)]
if block != app:
    import difflib
    sys.stdout.writelines(difflib.unified_diff(block.splitlines(True), app.splitlines(True), "README", "--help"))
    sys.exit(1)
PY
echo "dataplane_help: $(grep -c '^  --' "$tmp/app.txt") app options described; -- --help exit 0 without EAL; README block equal"
