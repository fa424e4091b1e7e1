#!/usr/bin/env bash
# Installs every Debian package wirematch needs to build, test, fuzz and benchmark.
# Idempotent: packages already present are skipped, so the Makefile's stamp target
# can call it on every fresh machine and it costs nothing on a prepared one.
set -euo pipefail

PKGS=(
  # toolchain
  build-essential pkg-config clang libclang-rt-14-dev libfuzzer-14-dev
  # design-card packages
  libdpdk-dev dpdk dpdk-dev libhyperscan-dev libjemalloc-dev liburing-dev libbenchmark-dev
  # libraries outside what the project exists for
  libgeos-dev libproj-dev proj-bin proj-data libjansson-dev libxml2-dev liburcu-dev
  libpcap-dev
  # CRC-32 of .wmr resolution and .wmg grammar files (codec/crc32.c wraps zlib)
  zlib1g-dev
  # test framework
  libcriterion-dev
  # real peers for tests
  mosquitto mosquitto-clients tshark tcpdump libpaho-mqtt-dev nodejs npm
  postgresql postgresql-15-postgis-3 postgis gdal-bin osmium-tool
  # tools used by scripts and CI
  jq iproute2 ethtool python3
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# node and npm may come from outside Debian on some machines; keep theirs.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  tmp=(); for p in "${missing[@]}"; do case "$p" in nodejs|npm) ;; *) tmp+=("$p");; esac; done
  missing=("${tmp[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer once, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
