# Sourced by data plane tests that ask build/wirematch's telemetry socket:
# `wm_tel SOCKET CMD` prints the answer (JSON) of one command, spoken on the
# socket directly (the protocol of the stock dpdk-telemetry.py, without its
# one-second pauses); nothing, and a non-zero status, if it cannot ask.
wm_tel() {
  timeout 10 python3 - "$1" "$2" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(16384)  # the greeting
s.send(sys.argv[2].encode())
print(s.recv(1 << 20).decode())
PY
}
