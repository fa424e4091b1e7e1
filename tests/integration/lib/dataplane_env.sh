# Sourced by the data plane's capture-replay scripts: `. lib/dataplane_env.sh
# NAME` sets B (the build), R (the tree), tmp (a directory removed at exit
# with this run's DPDK runtime files, /var/run/dpdk/NAME<pid>*), fail, and
# EAL: one lcore, no hugepages, no PCI, no shared config (ARCHITECTURE.md §6),
# a file prefix of this run's own so that scripts running at once never share
# one. A script adds its own options to EAL.
set -euo pipefail
B=${WM_BUILD:-build}
R=${WM_ROOT:-$PWD}
tmp=$(mktemp -d)
wm_eal_prefix="$1$$"
trap 'rm -rf "$tmp" /var/run/dpdk/"$wm_eal_prefix"* 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }
EAL=(-l 0 --no-huge --no-pci --no-shconf --file-prefix "$wm_eal_prefix" --log-level=lib.eal:error)
