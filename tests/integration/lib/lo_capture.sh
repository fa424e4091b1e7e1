# Sourced by the scripts that record real MQTT peers on 127.0.0.1 for a
# data-plane replay (dataplane_replay.sh, dataplane_resub_content.sh).
# Needs tmp, fail and a pids array (the caller's EXIT trap kills them).
#   lo_capture_start PCAP: a mosquitto broker on a free port ($lo_port) and
#     tcpdump writing PCAP; returns once both listen, without connecting (a
#     probe would be captured).
#   lo_capture_stop: stops tcpdump once PCAP stops growing (SIGINT discards
#     what it has not read), then the broker.
#   lo_capture_counts: lo_syns, lo_holes, lo_fins (not retransmitted), lo_rsts
#     of PCAP, from tshark: a capture with holes or a lost closing frame is
#     not the input a test is about, and is recorded again.
lo_capture_start() {
  lo_pcap=$1
  lo_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'listener %s 127.0.0.1\nallow_anonymous true\n' "$lo_port" > "$tmp/mosquitto.conf"
  timeout 120 mosquitto -c "$tmp/mosquitto.conf" > "$tmp/mosquitto.log" 2>&1 & lo_mq=$!; pids+=($lo_mq)
  rm -f "$lo_pcap" "$tmp/tcpdump.log"
  timeout 120 tcpdump -i lo -U -n --immediate-mode -B 16384 -w "$lo_pcap" "tcp port $lo_port" \
    > "$tmp/tcpdump.log" 2>&1 & lo_td=$!; pids+=($lo_td)
  for _ in $(seq 100); do grep -q "listening on" "$tmp/tcpdump.log" && break; sleep 0.1; done
  grep -q "listening on" "$tmp/tcpdump.log" || fail "tcpdump did not start: $(cat "$tmp/tcpdump.log")"
  for _ in $(seq 50); do ss -Hltn "sport = :$lo_port" | grep -q . && break; sleep 0.1; done
}

lo_capture_stop() {
  local prev=-1 cur
  for _ in $(seq 100); do
    sleep 0.3
    cur=$(stat -c %s "$lo_pcap")
    [ "$cur" = "$prev" ] && break
    prev=$cur
  done
  kill -INT "$lo_td"; wait "$lo_td" 2>/dev/null || true
  kill "$lo_mq"; wait "$lo_mq" 2>/dev/null || true
}

lo_capture_counts() {
  lo_syns=$(tshark -r "$lo_pcap" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e frame.number | wc -l)
  lo_holes=$(tshark -r "$lo_pcap" -Y 'tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment' -T fields -e frame.number | wc -l)
  lo_fins=$(tshark -r "$lo_pcap" -Y 'tcp.flags.fin == 1 && !tcp.analysis.retransmission' -T fields -e frame.number | wc -l)
  lo_rsts=$(tshark -r "$lo_pcap" -Y 'tcp.flags.reset == 1' -T fields -e frame.number | wc -l)
}
