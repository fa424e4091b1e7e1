#!/usr/bin/env bash
# Bad MQTT v5 packets against a real mosquitto 2.x broker and `wmctl mqtt decode`
# (tests/tools/mqtt5_peer_errors.py): our decoder must give the reason code the
# MQTT 5.0 specification names, the broker must corroborate it where it follows
# the spec, and the broker's other divergences are listed.
set -euo pipefail
ROOT=${WM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${WM_BUILD:-$ROOT/build}
# shellcheck source=../../scripts/lib/mqtt-peers.sh
source "$ROOT/scripts/lib/mqtt-peers.sh"
wm_broker_start
timeout -k 5 120 python3 "$ROOT/tests/tools/mqtt5_peer_errors.py" --wmctl "$BUILD/wmctl" --port "$WM_BROKER_PORT"
