/* Data-plane counters summed over workers and walked by name, so the exit
 * summary (JSON), the telemetry commands and the progress line all report
 * the same counters under the same names.
 *
 * Groups and what they count:
 *   packets   frames received, and each frame's parse verdict (pkt_parse.h)
 *             plus not_mqtt_port
 *   segments  TCP segments to or from an MQTT port, by disposition (flow_table.h)
 *   flows     connection events, closes by reason, active entries
 *   stream    reassembly bytes (tcp_stream.h)
 *   tx        frames transmitted and dropped at transmit
 *   mqtt      session-layer events (mqtt_session.h WM_MQTT_COUNTERS)
 *   mqtt_packets  control packets by direction and type ("c2s_publish", ...)
 *   mqtt_malformed  rejected packets by codec reason (codec/mqtt5_error.h)
 *   publish   client PUBLISH outcomes, and "seen"
 *
 * Conservation (wm_dp_totals_conserved): packets.rx + packets.reassembled
 * (datagrams rebuilt from IPv4 fragments, ip_reasm.h) == sum of non-tcp
 * verdicts + not_mqtt_port + sum of segments; publish.seen == sum of the
 * publish outcomes (wm_dp_totals_publish_conserved, once streams ended).
 *
 * Thread safety: wm_dp_totals_add may read a running worker's counters
 * (aligned 64-bit loads, never torn on x86-64; values may be a burst old). */
#ifndef WM_DATAPLANE_DP_STATS_H
#define WM_DATAPLANE_DP_STATS_H

#include <stdint.h>

#include "dataplane/mqtt_session.h"
#include "dataplane/pkt_path.h"

struct wm_dp_totals {
    struct wm_pkt_path_counters path;
    struct wm_flow_counters flows;
    struct wm_mqtt_counters mqtt;
    uint64_t active_flows;
    uint64_t tx_packets, tx_dropped;
    uint64_t workers;
};

/* Adds one worker's path counters, active flows and transmit counters. */
void wm_dp_totals_add(struct wm_dp_totals *t, const struct wm_pkt_path *p, const struct wm_mqtt_layer *mqtt,
                      uint64_t tx_packets, uint64_t tx_dropped);

typedef void (*wm_stat_fn)(void *ctx, const char *group, const char *name, uint64_t v);
/* Calls fn for every counter, grouped as above, in a fixed order. */
void wm_dp_totals_visit(const struct wm_dp_totals *t, wm_stat_fn fn, void *ctx);

/* 1 if every received frame is counted exactly once, else 0. */
int wm_dp_totals_conserved(const struct wm_dp_totals *t);
/* 1 if every client PUBLISH seen has exactly one outcome, else 0. */
int wm_dp_totals_publish_conserved(const struct wm_dp_totals *t);

#endif
