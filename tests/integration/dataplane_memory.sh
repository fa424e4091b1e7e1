#!/usr/bin/env bash
# A data plane start that lacks memory says what was needed, what EAL had and
# how to run, and its --summary FILE says why instead of being left empty
# (dataplane/mem_plan.h). Before: "cannot allocate 17039360 bytes of flow
# memory for lcore 1 (raise EAL -m, ...)" with no figure of the whole run, an
# empty summary file, and without hugepages EAL's "Cannot get hugepage
# information" followed by "Permission denied".
#  1. two workers with the default options in --no-huge's default 64 MB:
#     exit 1, "not enough DPDK memory", the run's need in MiB, EAL's free
#     memory and "Run with -m N"; the summary file is {"error": that text};
#  2. the same run with the -m N the message gave: it runs (exit 0, the
#     demo capture's frames all counted);
#  3. no hugepages (the test's own mount namespace shows EAL a sysfs with
#     none, whatever the machine has) and no --no-huge: the message says
#     none were found and to add --no-huge (with -m).
. "$(dirname "$0")/lib/dataplane_env.sh" wmmem
PFX=$wm_eal_prefix
# main lcore + two workers on this 2-CPU machine: lcores 1 and 2 share CPU 1
two=(--lcores '0@0,1@1,2@1' --no-huge --no-pci --no-shconf --log-level=lib.eal:error)

rc=0
timeout 120 "$B/wirematch" "${two[@]}" --file-prefix "${PFX}a" --vdev net_pcap0,rx_pcap="$R/tests/data/demo.pcap" \
  -- --mqtt-port 60161 --summary "$tmp/a.json" > "$tmp/a.out" 2> "$tmp/a.err" || rc=$?
[ $rc = 1 ] || fail "two workers in 64 MB: exit $rc, expected 1: $(tail -5 "$tmp/a.err")"
msg=$(grep -v '^EAL\|^TELEMETRY\|^USER1' "$tmp/a.err")
grep -q 'not enough DPDK memory: ' <<<"$msg" || fail "no clear memory message: $msg"
grep -qE 'This run needs about [0-9.]+ MiB of DPDK memory: the mbuf pool [0-9.]+ MiB .*and 2 workers x [0-9.]+ MiB' <<<"$msg" \
  || fail "message does not say what the run needs: $msg"
grep -qE 'EAL had [0-9.]+ MiB free of 64.0 MiB at the start' <<<"$msg" || fail "message does not say what EAL had: $msg"
m=$(sed -nE 's/.*Run with -m ([0-9]+),.*/\1/p' <<<"$msg" | head -1)
[ -n "$m" ] && [ "$m" -gt 64 ] || fail "no -m larger than 64 suggested: $msg"
[ -s "$tmp/a.json" ] || fail "summary file left empty"
jq -e '.error | startswith("not enough DPDK memory: ") and test("Run with -m [0-9]+")' "$tmp/a.json" > /dev/null \
  || fail "summary does not give the reason: $(cat "$tmp/a.json")"
echo "ok: two workers in 64 MB: refused, the message suggests -m $m"

rc=0
timeout 120 "$B/wirematch" "${two[@]}" -m "$m" --file-prefix "${PFX}b" --vdev net_pcap0,rx_pcap="$R/tests/data/demo.pcap" \
  -- --mqtt-port 60161 --summary "$tmp/b.json" > "$tmp/b.out" 2> "$tmp/b.err" || rc=$?
[ $rc = 0 ] || fail "two workers with the suggested -m $m: exit $rc: $(tail -5 "$tmp/b.err")"
jq -e '.conservation.packets_hold and .conservation.rx == 8823' "$tmp/b.json" > /dev/null \
  || fail "two workers with -m $m: summary $(jq -c .conservation "$tmp/b.json")"
echo "ok: two workers with -m $m: ran, 8823 frames counted"

mkdir -p "$tmp/hp/hugepages-2048kB"
for f in nr_hugepages free_hugepages resv_hugepages surplus_hugepages nr_overcommit_hugepages; do
  echo 0 > "$tmp/hp/hugepages-2048kB/$f"
done
rc=0
unshare -m bash -c 'mount --bind "$1" /sys/kernel/mm/hugepages || exit 99; shift; exec "$@"' _ "$tmp/hp" \
  timeout 120 "$B/wirematch" -l 0 --no-pci --no-shconf --file-prefix "${PFX}c" --vdev net_null0 \
  > "$tmp/c.out" 2> "$tmp/c.err" || rc=$?
[ $rc != 99 ] || fail "cannot bind-mount a sysfs without hugepages in a private mount namespace (needs root)"
[ $rc = 2 ] || fail "no hugepages: exit $rc, expected 2: $(tail -5 "$tmp/c.err")"
grep -q 'wirematch: EAL initialisation failed: EAL found no usable hugepages (0 of 0 2048 kB pages free' "$tmp/c.err" \
  || fail "no hugepages: unclear message: $(grep wirematch "$tmp/c.err")"
grep -q 'add --no-huge to the EAL options' "$tmp/c.err" || fail "no hugepages: no advice: $(grep -A2 wirematch "$tmp/c.err")"
echo "ok: no hugepages: says so and how to run"
echo "dataplane_memory: a start without the memory it needs says how much and how to run; -m $m works"
