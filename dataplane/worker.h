/* One worker lcore: polls its RX queue on every port in 32-packet bursts
 * (the DPDK l2fwd/l3fwd loop shape), runs each frame through its own
 * per-packet path (pkt_path.h), optionally transmits frames back out, and
 * expires idle connections between bursts.
 *
 * Flows are pinned to workers by the NIC's symmetric RSS (both directions of a
 * connection hash to one queue), so workers share no mutable state: each owns
 * its flow table and buffers, allocated with rte_malloc on its socket.
 *
 * Thread safety: wm_worker_main runs on the worker's lcore; other threads may
 * read the counters (dp_stats.h) and set *quit. */
#ifndef WM_DATAPLANE_WORKER_H
#define WM_DATAPLANE_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ethdev.h>

#include "dataplane/app_options.h"
#include "dataplane/flow_report.h"
#include "dataplane/ip_reasm.h"
#include "dataplane/match_sink.h"
#include "dataplane/mqtt_session.h"
#include "dataplane/pkt_path.h"

#define WM_BURST 32
#define WM_MAX_PORTS 8
#define WM_PREFETCH_OFFSET 3
/* Cycles-per-packet histogram: 4 buckets per power of two (about 19 %
 * wide, fine enough to tell 256 from 300 cycles), values 0..2^24. */
#define WM_CYC_SUB 4
#define WM_CYC_BUCKETS (24 * WM_CYC_SUB)

/* The bucket of c cycles: c < 4 alone, else 4*log2(c) plus the two bits
 * after the leading one; the last bucket takes everything above. */
static inline unsigned wm_cyc_bucket(uint64_t c)
{
    if (c < WM_CYC_SUB) return (unsigned)c;
    unsigned e = 63u - (unsigned)__builtin_clzll(c);
    unsigned b = e * WM_CYC_SUB + (unsigned)((c >> (e - 2)) & (WM_CYC_SUB - 1));
    return b < WM_CYC_BUCKETS ? b : WM_CYC_BUCKETS - 1;
}

/* The smallest cycle count of bucket b (b + 1 gives the first beyond it). */
static inline uint64_t wm_cyc_bucket_lo(unsigned b)
{
    if (b < 2 * WM_CYC_SUB) return b < WM_CYC_SUB ? b : WM_CYC_SUB; /* buckets 4..7 stay empty */
    unsigned e = b / WM_CYC_SUB, s = b % WM_CYC_SUB;
    return (uint64_t)(WM_CYC_SUB + s) << (e - 2);
}

struct wm_worker {
    unsigned lcore_id;
    uint16_t queue_id;
    uint16_t n_ports;
    uint16_t port_ids[WM_MAX_PORTS];
    uint8_t port_has_queue[WM_MAX_PORTS]; /* the port has an RX/TX queue for us */
    uint8_t port_replay[WM_MAX_PORTS];    /* a capture file replayed once: stops when empty */
    enum wm_tx_mode tx;
    uint64_t idle_exit_tsc;               /* empty-poll time after which replay is over */
    struct rte_eth_dev_tx_buffer *txb[WM_MAX_PORTS];
    struct wm_pkt_path *path;             /* rte_malloc'd, with its flow memory */
    void *path_mem;
    struct wm_mqtt_layer *mqtt;           /* the stream consumer: MQTT sessions */
    void *mqtt_mem;
    struct wm_match_table *match_table;   /* shared; NULL: PUBLISHes end as no_table */
    const char *match_log;                /* this worker's match log file, or NULL */
    struct wm_match_worker *match;        /* created on the worker's thread */
    enum wm_xpath_apply xpath_apply;      /* a pending content filter: skip or wait (match_sink.h) */
    struct wm_ip_reasm *reasm;            /* IPv4 reassembly; NULL: fragments dropped */
    struct wm_flow_report flows_report;   /* /wirematch/flows asks, the worker answers */
    volatile bool *quit;                  /* set by the signal handler or the main lcore */
    volatile bool done;                   /* this worker left its loop */
    uint64_t tx_packets, tx_dropped;
    uint64_t multiseg_copied;             /* frames gathered from several segments */
    uint64_t oversize;                    /* frames beyond the gather buffer: counted, truncated */
    uint64_t tsc_hz;
    /* Cycles per packet, measured per burst (rte_rdtsc around the burst's
     * processing, divided by its size): a histogram weighted by packets,
     * bucket b counting packets that took [wm_cyc_bucket_lo(b),
     * wm_cyc_bucket_lo(b + 1)) cycles. */
    uint64_t cyc_hist[WM_CYC_BUCKETS];
    uint64_t cyc_total, cyc_packets;
    /* Scratch for chained mbufs: the largest IPv4/IPv6 packet (65,535 bytes)
     * plus room for Ethernet and two VLAN tags, so no legal frame is cut. */
    uint8_t gather[65535 + 64];
} __rte_cache_aligned;

/* Allocates the worker's packet path and MQTT session layer on socket
 * (rte_malloc); the flow table's user area is sized for the sessions.
 * sink (may be NULL) receives subscriptions and publications. Returns 0 or
 * -1 (out of memory or invalid configuration; a message is printed). */
int wm_worker_init(struct wm_worker *w, const struct wm_pkt_path_config *cfg,
                   const struct wm_mqtt_config *mcfg, const struct wm_mqtt_sink *sink, int socket);

/* The lcore entry point (rte_eal_remote_launch): runs until *quit, or until
 * every replay port it polls has been empty for idle_exit_tsc. Flushes its
 * connections (on_close with reason shutdown) before returning 0. */
int wm_worker_main(void *arg);

/* The DPDK memory (bytes) one worker takes with these configurations: its
 * struct wm_worker (in the workers array), MQTT layer and packet path with
 * its flow memory, as wm_worker_init allocates them (IPv4 reassembly
 * apart: wm_ip_reasm_memsize). For memory plans (mem_plan.h). Pure. */
size_t wm_worker_memsize(const struct wm_pkt_path_config *cfg, const struct wm_mqtt_config *mcfg);

/* Frees what wm_worker_init allocated. */
void wm_worker_free(struct wm_worker *w);

#endif
