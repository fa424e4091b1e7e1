/* The per-packet path of one worker; see pkt_path.h. */
#include "dataplane/pkt_path.h"

#include <string.h>

size_t wm_pkt_path_memsize(const struct wm_pkt_path_config *cfg)
{
    return wm_flow_table_memsize(&cfg->flows);
}

int wm_pkt_path_init(struct wm_pkt_path *p, void *mem, const struct wm_pkt_path_config *cfg,
                     const struct wm_stream_ops *ops, void *ops_ctx)
{
    if (cfg->n_ports == 0 || cfg->n_ports > WM_PKT_PATH_MAX_PORTS) return -1;
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    return wm_flow_table_init(&p->flows, mem, &cfg->flows, ops, ops_ctx);
}

static inline int is_mqtt_port(const struct wm_pkt_path *p, uint16_t port)
{
    for (unsigned i = 0; i < p->cfg.n_ports; i++)
        if (p->cfg.mqtt_ports[i] == port) return 1;
    return 0;
}

static inline enum wm_pkt_verdict classify(struct wm_pkt_path *p, const uint8_t *frame, size_t len,
                                           uint64_t now_ns, enum wm_seg_disposition *disp)
{
    struct wm_pkt_info pi;
    enum wm_pkt_verdict v = wm_pkt_parse(frame, len, &pi);
    p->c.verdict[v]++;
    if (disp) *disp = WM_SD_COUNT;
    if (v != WM_PKT_TCP) return v;
    if (!is_mqtt_port(p, pi.dport) && !is_mqtt_port(p, pi.sport)) {
        p->c.not_mqtt_port++;
        return v;
    }
    enum wm_seg_disposition d = wm_flow_table_process(&p->flows, &pi, now_ns, NULL);
    if (disp) *disp = d;
    return v;
}

enum wm_pkt_verdict wm_pkt_path_frame(struct wm_pkt_path *p, const uint8_t *frame, size_t len,
                                      uint64_t now_ns, enum wm_seg_disposition *disp)
{
    p->c.rx_packets++;
    p->c.rx_bytes += len;
    return classify(p, frame, len, now_ns, disp);
}

enum wm_pkt_verdict wm_pkt_path_datagram(struct wm_pkt_path *p, const uint8_t *frame, size_t len,
                                         uint64_t now_ns, enum wm_seg_disposition *disp)
{
    p->c.reassembled++;
    return classify(p, frame, len, now_ns, disp);
}

void wm_pkt_path_hw_bad(struct wm_pkt_path *p, size_t len, enum wm_pkt_verdict v)
{
    p->c.rx_packets++;
    p->c.rx_bytes += len;
    p->c.verdict[v]++;
}

int wm_pkt_path_check_conservation(const struct wm_pkt_path *p)
{
    uint64_t sum = p->c.not_mqtt_port, tcp = p->c.verdict[WM_PKT_TCP];
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++)
        if (v != WM_PKT_TCP) sum += p->c.verdict[v];
    uint64_t segs = 0;
    for (int d = 0; d < WM_SD_COUNT; d++) segs += p->flows.c.disposition[d];
    return sum + segs == p->c.rx_packets + p->c.reassembled && segs + p->c.not_mqtt_port == tcp;
}
