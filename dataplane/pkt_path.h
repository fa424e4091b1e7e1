/* The per-packet path of one worker, without DPDK types: a received frame is
 * parsed (pkt_parse.h), kept if it is TCP to or from an MQTT port, tracked and
 * reassembled in the worker's flow table (flow_table.h), and its in-order
 * bytes reach the stream consumer (the MQTT session layer).
 *
 * The DPDK burst loop (worker.c), the unit tests and the fuzz target
 * tests/fuzz/fuzz_dataplane_packet.c all call wm_pkt_path_frame, so what is
 * fuzzed is what runs.
 *
 * Packet conservation: every frame given to wm_pkt_path_frame (or, found
 * bad by the NIC, to wm_pkt_path_hw_bad) is counted in
 * exactly one of verdict[v] for v != WM_PKT_TCP, not_mqtt_port, or
 * flows.c.disposition[d]; wm_pkt_path_check_conservation verifies it.
 *
 * Thread safety: one path per worker; counters may be read (not written) by
 * other threads. */
#ifndef WM_DATAPLANE_PKT_PATH_H
#define WM_DATAPLANE_PKT_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/flow_table.h"
#include "dataplane/pkt_parse.h"

#define WM_PKT_PATH_MAX_PORTS 16

struct wm_pkt_path_config {
    uint16_t mqtt_ports[WM_PKT_PATH_MAX_PORTS]; /* TCP ports of the broker (host order) */
    unsigned n_ports;                           /* 1..WM_PKT_PATH_MAX_PORTS */
    struct wm_flow_table_config flows;
};

struct wm_pkt_path_counters {
    uint64_t rx_packets;
    uint64_t rx_bytes;
    uint64_t verdict[WM_PKT_VERDICT_COUNT]; /* by parse verdict; [WM_PKT_TCP] counts all TCP */
    uint64_t not_mqtt_port;                 /* TCP, neither port is an MQTT port */
    uint64_t reassembled;                   /* IPv4 datagrams rebuilt from fragments (ip_reasm.h) */
};

struct wm_pkt_path {
    struct wm_pkt_path_config cfg;
    struct wm_pkt_path_counters c;
    struct wm_flow_table flows;
};

/* Bytes of caller memory wm_pkt_path_init needs (64-byte aligned). */
size_t wm_pkt_path_memsize(const struct wm_pkt_path_config *cfg);

/* Initialises p over mem. Returns 0, or -1 if cfg is invalid (no port, too
 * many ports, or an invalid flow-table configuration). */
int wm_pkt_path_init(struct wm_pkt_path *p, void *mem, const struct wm_pkt_path_config *cfg,
                     const struct wm_stream_ops *ops, void *ops_ctx);

/* Takes one received frame (frame[0..len), not retained) at now_ns. Returns
 * the parse verdict; for WM_PKT_TCP *disp (if not NULL) receives the flow
 * disposition, or WM_SD_COUNT if the segment was not for an MQTT port. */
enum wm_pkt_verdict wm_pkt_path_frame(struct wm_pkt_path *p, const uint8_t *frame, size_t len,
                                      uint64_t now_ns, enum wm_seg_disposition *disp);

/* A datagram reassembled from IP fragments (ip_reasm.h): its fragments were
 * counted as received frames (verdict ip_fragment); the datagram is counted
 * in `reassembled` instead of rx, then parsed and processed like a frame.
 * Conservation: rx + reassembled = every verdict and disposition. */
enum wm_pkt_verdict wm_pkt_path_datagram(struct wm_pkt_path *p, const uint8_t *frame, size_t len,
                                         uint64_t now_ns, enum wm_seg_disposition *disp);

/* A received frame the port's hardware found a bad checksum in (the mbuf's
 * RX checksum flags, on ports that verify them): counted as received (rx
 * packets and len bytes) and in verdict v, WM_PKT_IP4_BAD_CHECKSUM or
 * WM_PKT_L4_BAD_CHECKSUM_HW, and not parsed: every real receiver drops it,
 * so its bytes must not reach a stream. */
void wm_pkt_path_hw_bad(struct wm_pkt_path *p, size_t len, enum wm_pkt_verdict v);

/* Packet conservation: 1 if every frame is counted exactly once (rx +
 * reassembled = every parse verdict, non-MQTT-port TCP and segment
 * disposition; TCP verdicts = dispositions + non-MQTT-port TCP), else 0.
 * Reads p's counters: call from p's own lcore or after it stopped. */
int wm_pkt_path_check_conservation(const struct wm_pkt_path *p);

#endif
