/* The worker burst loop; see worker.h. */
#include "dataplane/worker.h"

#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

/* The worker's packet path configuration: the flow table's user area holds an MQTT session. */
static struct wm_pkt_path_config path_config(const struct wm_pkt_path_config *cfg_in)
{
    struct wm_pkt_path_config pcfg = *cfg_in;
    pcfg.flows.user_size = (uint32_t)wm_mqtt_session_size();
    return pcfg;
}

size_t wm_worker_memsize(const struct wm_pkt_path_config *cfg, const struct wm_mqtt_config *mcfg)
{
    struct wm_pkt_path_config pcfg = path_config(cfg);
    return sizeof(struct wm_worker) + sizeof(struct wm_mqtt_layer) + wm_mqtt_layer_memsize(mcfg) +
           sizeof(struct wm_pkt_path) + wm_pkt_path_memsize(&pcfg);
}

int wm_worker_init(struct wm_worker *w, const struct wm_pkt_path_config *cfg_in,
                   const struct wm_mqtt_config *mcfg, const struct wm_mqtt_sink *sink, int socket)
{
    struct wm_pkt_path_config pcfg = path_config(cfg_in);
    const struct wm_pkt_path_config *cfg = &pcfg;
    size_t mqtt_size = wm_mqtt_layer_memsize(mcfg);
    w->mqtt = rte_zmalloc_socket("wm_mqtt", sizeof *w->mqtt, RTE_CACHE_LINE_SIZE, socket);
    w->mqtt_mem = rte_malloc_socket("wm_mqtt_mem", mqtt_size ? mqtt_size : 64, RTE_CACHE_LINE_SIZE, socket);
    if (!w->mqtt || !w->mqtt_mem || wm_mqtt_layer_init(w->mqtt, w->mqtt_mem, mcfg, sink) != 0) {
        fprintf(stderr, "wirematch: cannot set up the MQTT layer for lcore %u (%zu bytes)\n", w->lcore_id, mqtt_size);
        wm_worker_free(w);
        return -1;
    }
    size_t memsize = wm_pkt_path_memsize(cfg);
    if (memsize == 0) {
        fprintf(stderr, "wirematch: invalid flow table configuration\n");
        return -1;
    }
    w->path = rte_zmalloc_socket("wm_pkt_path", sizeof *w->path, RTE_CACHE_LINE_SIZE, socket);
    w->path_mem = rte_malloc_socket("wm_flows", memsize, RTE_CACHE_LINE_SIZE, socket);
    if (!w->path || !w->path_mem) {
        fprintf(stderr, "wirematch: cannot allocate %zu bytes of flow memory for lcore %u "
                        "(see below)\n", memsize, w->lcore_id);
        wm_worker_free(w);
        return -1;
    }
    if (wm_pkt_path_init(w->path, w->path_mem, cfg, &wm_mqtt_stream_ops, w->mqtt) != 0) {
        fprintf(stderr, "wirematch: invalid packet path configuration\n");
        wm_worker_free(w);
        return -1;
    }
    w->tsc_hz = rte_get_tsc_hz();
    return 0;
}

void wm_worker_free(struct wm_worker *w)
{
    rte_free(w->path);
    rte_free(w->path_mem);
    rte_free(w->mqtt);
    rte_free(w->mqtt_mem);
    w->path = NULL;
    w->path_mem = NULL;
    w->mqtt = NULL;
    w->mqtt_mem = NULL;
    for (int i = 0; i < WM_MAX_PORTS; i++) {
        rte_free(w->txb[i]);
        w->txb[i] = NULL;
    }
}

static void count_tx_drop(struct rte_mbuf **pkts, uint16_t unsent, void *userdata)
{
    struct wm_worker *w = userdata;
    w->tx_dropped += unsent;
    rte_pktmbuf_free_bulk(pkts, unsent);
}

static inline uint64_t tsc_to_ns(const struct wm_worker *w, uint64_t tsc)
{
    /* 128-bit product: exact for any uptime. */
    return (uint64_t)((unsigned __int128)tsc * 1000000000u / w->tsc_hz);
}

/* The slow path of an IP fragment: IPv4 ones go to reassembly (which owns
 * the mbuf from then on); a completed datagram replaces the fragment in the
 * burst and is processed as one packet. Returns -1 when the mbuf was
 * taken, else as handle(). */
static __rte_noinline int handle_fragment(struct wm_worker *w, struct rte_mbuf **mp, const uint8_t *data,
                                          uint32_t len, uint64_t now_ns)
{
    struct wm_pkt_info pi;
    if (wm_pkt_parse(data, len, &pi) != WM_PKT_IP_FRAGMENT || pi.ip_version != 4) return 0;
    struct rte_mbuf *d = wm_ip_reasm_take(w->reasm, *mp, pi.l3_offset, rte_rdtsc());
    if (!d) return -1;
    *mp = d;
    len = rte_pktmbuf_pkt_len(d);
    if (len > sizeof w->gather) {
        w->oversize++;
        len = sizeof w->gather;
    }
    data = d->nb_segs == 1 ? rte_pktmbuf_mtod(d, const uint8_t *) : rte_pktmbuf_read(d, 0, len, w->gather);
    w->mqtt->publish_matched_in_frame = 0;
    wm_pkt_path_datagram(w->path, data, len, now_ns, NULL);
    return w->mqtt->publish_matched_in_frame != 0;
}

/* Returns 1 if the frame carried a client PUBLISH that matched, 0 if not,
 * -1 if reassembly took the mbuf. */
static inline int handle(struct wm_worker *w, struct rte_mbuf **mp, uint64_t now_ns)
{
    struct rte_mbuf *m = *mp;
    const uint8_t *data;
    uint32_t len = rte_pktmbuf_pkt_len(m);
    if (likely(m->nb_segs == 1)) {
        data = rte_pktmbuf_mtod(m, const uint8_t *);
    } else {
        if (len > sizeof w->gather) {
            w->oversize++;
            len = sizeof w->gather;
        }
        data = rte_pktmbuf_read(m, 0, len, w->gather);
        w->multiseg_copied++;
    }
    /* The NIC's checksum verdict, where the port reports one (port_setup
     * asks for it): a frame it found bad is counted and not parsed. */
    uint64_t ol = m->ol_flags;
    if (unlikely((ol & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD)) {
        wm_pkt_path_hw_bad(w->path, len, WM_PKT_IP4_BAD_CHECKSUM);
        return 0;
    }
    if (unlikely((ol & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD)) {
        wm_pkt_path_hw_bad(w->path, len, WM_PKT_L4_BAD_CHECKSUM_HW);
        return 0;
    }
    w->mqtt->publish_matched_in_frame = 0;
    /* Session expiry runs in receive time: DPDK 22.11's net_pcap offers no
     * capture timestamps (no RTE_ETH_RX_OFFLOAD_TIMESTAMP), and no other
     * port's device clock has a known unit. */
    w->mqtt->now_ns = now_ns;
    enum wm_pkt_verdict v = wm_pkt_path_frame(w->path, data, len, now_ns, NULL);
    if (unlikely(v == WM_PKT_IP_FRAGMENT) && w->reasm) return handle_fragment(w, mp, data, len, now_ns);
    return w->mqtt->publish_matched_in_frame != 0;
}

int wm_worker_main(void *arg)
{
    struct wm_worker *w = arg;
    struct rte_mbuf *pkts[WM_BURST];
    for (uint16_t i = 0; i < w->n_ports; i++) {
        if (!w->port_has_queue[i] || w->tx == WM_TX_NONE) continue;
        w->txb[i] = rte_zmalloc_socket("wm_txb", RTE_ETH_TX_BUFFER_SIZE(WM_BURST), 0,
                                       rte_eth_dev_socket_id(w->port_ids[i]));
        if (!w->txb[i]) {
            fprintf(stderr, "wirematch: lcore %u: no memory for a TX buffer\n", w->lcore_id);
            *w->quit = true;
            break;
        }
        rte_eth_tx_buffer_init(w->txb[i], WM_BURST);
        rte_eth_tx_buffer_set_err_callback(w->txb[i], count_tx_drop, w);
    }

    if (w->match_table) {
        char err[256];
        w->match = wm_match_worker_new(w->match_table, w->match_log, err, sizeof err);
        if (!w->match) {
            fprintf(stderr, "wirematch: lcore %u: %s\n", w->lcore_id, err);
            *w->quit = true;
            w->done = true;
            return -1;
        }
        w->mqtt->sink = wm_match_worker_sink(w->match);
    }
    unsigned replay_ports = 0, polled_ports = 0;
    for (uint16_t i = 0; i < w->n_ports; i++) {
        polled_ports += w->port_has_queue[i];
        replay_ports += w->port_has_queue[i] && w->port_replay[i];
    }
    /* Only a worker whose every port is a one-shot replay stops by itself. */
    int may_finish = polled_ports > 0 && replay_ports == polled_ports;
    /* Such a worker loses nothing by waiting for a content compile, and its
     * result then does not depend on how fast the compile was. */
    if (w->match)
        wm_match_worker_set_content_wait(w->match, w->xpath_apply == WM_XPATH_APPLY_WAIT ||
                                                       (w->xpath_apply == WM_XPATH_APPLY_AUTO && may_finish));
    uint64_t last_rx = rte_rdtsc();
    /* A worker left without a queue (the ports offer fewer rx queues than
     * there are workers) has nothing to wait for: it must not hold up the
     * end of a one-shot replay. */
    if (polled_ports == 0)
        fprintf(stderr, "wirematch: lcore %u: no rx queue to poll (the ports offer fewer queues than workers)\n",
                w->lcore_id);

    while (!*w->quit && polled_ports > 0) {
        uint64_t now_tsc = rte_rdtsc();
        uint64_t now_ns = tsc_to_ns(w, now_tsc);
        unsigned got = 0;
        for (uint16_t i = 0; i < w->n_ports; i++) {
            if (!w->port_has_queue[i]) continue;
            uint16_t port = w->port_ids[i];
            uint16_t nb = rte_eth_rx_burst(port, w->queue_id, pkts, WM_BURST);
            if (nb == 0) continue;
            got += nb;
            uint64_t t_start = rte_rdtsc();
            unsigned nfree = 0;
            for (uint16_t j = 0; j < nb && j < WM_PREFETCH_OFFSET; j++)
                rte_prefetch0(rte_pktmbuf_mtod(pkts[j], void *));
            for (uint16_t j = 0; j < nb; j++) {
                if (j + WM_PREFETCH_OFFSET < nb)
                    rte_prefetch0(rte_pktmbuf_mtod(pkts[j + WM_PREFETCH_OFFSET], void *));
                int matched = handle(w, &pkts[j], now_ns);
                if (matched < 0) continue; /* held for IPv4 reassembly */
                if (w->tx == WM_TX_ALL || (w->tx == WM_TX_MATCHED && matched)) {
                    w->tx_packets += rte_eth_tx_buffer(port, w->queue_id, w->txb[i], pkts[j]);
                } else {
                    pkts[nfree++] = pkts[j]; /* j >= nfree: the slot is done with */
                }
            }
            /* One mempool put for the burst instead of one per packet. */
            if (nfree) rte_pktmbuf_free_bulk(pkts, nfree);
            uint64_t cyc = rte_rdtsc() - t_start;
            w->cyc_hist[wm_cyc_bucket(cyc / nb)] += nb;
            w->cyc_total += cyc;
            w->cyc_packets += nb;
        }
        for (uint16_t i = 0; i < w->n_ports; i++)
            if (w->txb[i]) w->tx_packets += rte_eth_tx_buffer_flush(w->port_ids[i], w->queue_id, w->txb[i]);
        wm_flow_table_expire(&w->path->flows, now_ns, 8);
        if (w->reasm) wm_ip_reasm_burst_end(w->reasm, now_tsc);
        wm_flow_report_serve(&w->flows_report, &w->path->flows, now_ns);
        if (w->match) wm_match_worker_quiescent(w->match, w->mqtt->now_ns);
        /* after the session expiry above: a Will due as its session expires finds its subscriptions gone */
        wm_mqtt_layer_tick(w->mqtt);
        if (got) {
            last_rx = now_tsc;
        } else if (may_finish && now_tsc - last_rx > w->idle_exit_tsc) {
            break;
        }
    }
    wm_flow_table_flush(&w->path->flows);
    wm_mqtt_layer_finish(w->mqtt);
    if (w->reasm) wm_ip_reasm_flush(w->reasm);
    if (w->match) {
        memset(&w->mqtt->sink, 0, sizeof w->mqtt->sink);
        wm_match_worker_free(w->match);
        w->match = NULL;
    }
    w->done = true;
    return 0;
}
