/* Data-plane counters by name; see dp_stats.h. */
#include "dataplane/dp_stats.h"

#include <stdio.h>

#include "codec/mqtt5_reason.h"

static void add_mqtt(struct wm_mqtt_counters *t, const volatile struct wm_mqtt_counters *c)
{
#define ADD_MQTT(n) t->n += c->n;
    WM_MQTT_COUNTERS(ADD_MQTT)
#undef ADD_MQTT
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 16; k++) t->packets[d][k] += c->packets[d][k];
    for (int e = 0; e < WM_MQTT5_E_COUNT_; e++) t->malformed[e] += c->malformed[e];
    for (int o = 0; o < WM_MQTT_PUB_OUTCOME_COUNT; o++) t->publish[o] += c->publish[o];
}

void wm_dp_totals_add(struct wm_dp_totals *t, const struct wm_pkt_path *p, const struct wm_mqtt_layer *mqtt,
                      uint64_t tx_packets, uint64_t tx_dropped)
{
    if (mqtt) add_mqtt(&t->mqtt, &mqtt->c);
    const volatile struct wm_pkt_path_counters *pc = &p->c;
    t->path.rx_packets += pc->rx_packets;
    t->path.rx_bytes += pc->rx_bytes;
    t->path.not_mqtt_port += pc->not_mqtt_port;
    t->path.reassembled += pc->reassembled;
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++) t->path.verdict[v] += pc->verdict[v];

    const volatile struct wm_flow_counters *fc = &p->flows.c;
#define ADD_FIELD(n) t->flows.n += fc->n;
    WM_FLOW_COUNTERS(ADD_FIELD)
#undef ADD_FIELD
    for (int r = 0; r < WM_FLOW_CLOSE_COUNT; r++) t->flows.closed[r] += fc->closed[r];
    for (int d = 0; d < WM_SD_COUNT; d++) t->flows.disposition[d] += fc->disposition[d];
    t->flows.stream.delivered_bytes += fc->stream.delivered_bytes;
    t->flows.stream.zero_copy_segments += fc->stream.zero_copy_segments;
    t->flows.stream.ooo_segments += fc->stream.ooo_segments;
    t->flows.stream.ooo_bytes += fc->stream.ooo_bytes;
    t->flows.stream.duplicate_bytes += fc->stream.duplicate_bytes;
    t->flows.stream.overlap_bytes += fc->stream.overlap_bytes;
    t->flows.stream.discarded_bytes += fc->stream.discarded_bytes;
    t->active_flows += *(const volatile uint32_t *)&p->flows.active;
    t->tx_packets += tx_packets;
    t->tx_dropped += tx_dropped;
    t->workers++;
}

void wm_dp_totals_visit(const struct wm_dp_totals *t, wm_stat_fn fn, void *ctx)
{
    fn(ctx, "packets", "rx", t->path.rx_packets);
    fn(ctx, "packets", "rx_bytes", t->path.rx_bytes);
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++)
        fn(ctx, "packets", wm_pkt_verdict_name(v), t->path.verdict[v]);
    fn(ctx, "packets", "not_mqtt_port", t->path.not_mqtt_port);
    fn(ctx, "packets", "reassembled", t->path.reassembled);

    for (int d = 0; d < WM_SD_COUNT; d++) fn(ctx, "segments", wm_seg_disposition_name(d), t->flows.disposition[d]);

#define VISIT_FIELD(n) fn(ctx, "flows", #n, t->flows.n);
    WM_FLOW_COUNTERS(VISIT_FIELD)
#undef VISIT_FIELD
    for (int r = 0; r < WM_FLOW_CLOSE_COUNT; r++) {
        char name[32];
        snprintf(name, sizeof name, "closed_%s", wm_flow_close_reason_name(r));
        fn(ctx, "flows", name, t->flows.closed[r]);
    }
    fn(ctx, "flows", "active", t->active_flows);

    fn(ctx, "stream", "delivered_bytes", t->flows.stream.delivered_bytes);
    fn(ctx, "stream", "zero_copy_segments", t->flows.stream.zero_copy_segments);
    fn(ctx, "stream", "ooo_segments", t->flows.stream.ooo_segments);
    fn(ctx, "stream", "ooo_bytes", t->flows.stream.ooo_bytes);
    fn(ctx, "stream", "duplicate_bytes", t->flows.stream.duplicate_bytes);
    fn(ctx, "stream", "overlap_bytes", t->flows.stream.overlap_bytes);
    fn(ctx, "stream", "discarded_bytes", t->flows.stream.discarded_bytes);

    fn(ctx, "tx", "packets", t->tx_packets);
    fn(ctx, "tx", "dropped", t->tx_dropped);

#define VISIT_MQTT(n) fn(ctx, "mqtt", #n, t->mqtt.n);
    WM_MQTT_COUNTERS(VISIT_MQTT)
#undef VISIT_MQTT
    for (int d = 0; d < 2; d++)
        for (unsigned k = 1; k < 16; k++) {
            char name[40], lower[24];
            const char *tn = wm_mqtt5_type_name(k);
            size_t i = 0;
            for (; tn[i] && i + 1 < sizeof lower; i++) lower[i] = (char)(tn[i] | 0x20);
            lower[i] = 0;
            snprintf(name, sizeof name, "%s_%s", d == 0 ? "c2s" : "s2c", lower);
            fn(ctx, "mqtt_packets", name, t->mqtt.packets[d][k]);
        }
    for (int e = 1; e < WM_MQTT5_E_COUNT_; e++) fn(ctx, "mqtt_malformed", wm_mqtt5_err_name(e), t->mqtt.malformed[e]);
    fn(ctx, "publish", "seen", t->mqtt.publish_seen);
    for (int o = 0; o < WM_MQTT_PUB_OUTCOME_COUNT; o++) fn(ctx, "publish", wm_mqtt_pub_outcome_name(o), t->mqtt.publish[o]);
}

int wm_dp_totals_publish_conserved(const struct wm_dp_totals *t) { return wm_mqtt_publish_conserved(&t->mqtt); }

int wm_dp_totals_conserved(const struct wm_dp_totals *t)
{
    uint64_t sum = t->path.not_mqtt_port;
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++)
        if (v != WM_PKT_TCP) sum += t->path.verdict[v];
    for (int d = 0; d < WM_SD_COUNT; d++) sum += t->flows.disposition[d];
    return sum == t->path.rx_packets + t->path.reassembled;
}
