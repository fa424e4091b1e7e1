/* IPv4 reassembly for a worker: fragments of TCP datagrams to the broker
 * ports are put back together with DPDK's librte_ip_frag instead of being
 * dropped, so a PUBLISH split over IP fragments (a path without PMTU
 * discovery, a tunnel with a small MTU) is still matched.
 *
 * One rte_ip_frag_tbl per worker: the fragments of one datagram share its
 * addresses and IP id and carry no ports past the first, so NIC RSS hashes
 * them on the addresses only and they meet on one worker. LIMITATION with
 * several workers: that worker need not be the one the connection's
 * unfragmented segments reach (hashed with the ports), and the datagram is
 * then processed by a worker that does not own the flow (counted there as
 * a midstream/no-flow segment). With one worker, or NICs hashing TCP on
 * addresses only, this cannot happen; handing datagrams to the owning
 * worker (a software RSS ring) is not done. The table is bounded to
 * max_datagrams datagrams in reassembly, each at most
 * RTE_LIBRTE_IP_FRAG_MAX_FRAG (8) fragments, and a datagram not complete
 * within timeout_ms is freed. Fragments that the library refuses
 * (overlaps, too many fragments, table full) or that time out go to its
 * death row, which is freed once per burst and counted (`freed`).
 *
 * Accounting: every fragment frame keeps its parse verdict `ip_fragment`
 * (one per received frame); a completed datagram is parsed again as one more
 * packet (pkt_path.h, wm_pkt_path_datagram: counted in `reassembled`), so
 * received frames + reassembled datagrams = frames and datagrams counted.
 * IPv6 fragments are still counted and dropped.
 *
 * Thread safety: one per worker, used on the worker's lcore only; counters
 * may be read by other threads. */
#ifndef WM_DATAPLANE_IP_REASM_H
#define WM_DATAPLANE_IP_REASM_H

#include <stdint.h>

#include <rte_ip_frag.h>
#include <rte_mbuf.h>

#define WM_IP_REASM_COUNTERS(X)                                                      \
    X(fragments)    /* IPv4 TCP fragment frames taken */                              \
    X(reassembled)  /* datagrams completed */                                         \
    X(freed)        /* fragment mbufs freed: timeout, overlap, table full, shutdown */ \
    X(unusable)     /* fragments whose IPv4 header is not in the first mbuf: freed */

struct wm_ip_reasm_counters {
#define WM_IP_REASM_X_FIELD(n) uint64_t n;
    WM_IP_REASM_COUNTERS(WM_IP_REASM_X_FIELD)
#undef WM_IP_REASM_X_FIELD
};

struct wm_ip_reasm {
    struct rte_ip_frag_tbl *tbl;
    struct rte_ip_frag_death_row dr;
    struct wm_ip_reasm_counters c;
};

/* Creates the table on socket: at most max_datagrams (1..65536) datagrams
 * in reassembly, timeout_ms (1..60000) per datagram. NULL (message printed)
 * on a bad argument or no memory. */
struct wm_ip_reasm *wm_ip_reasm_new(uint32_t max_datagrams, uint32_t timeout_ms, int socket);

/* The DPDK memory (bytes) wm_ip_reasm_new takes for max_datagrams: the
 * table librte_ip_frag allocates (its per-datagram entry is private to the
 * library: 512 bytes in DPDK 22.11, "rte_ip_frag_table_create: allocated
 * of 131200 bytes" for 256) and ours. For memory plans (mem_plan.h). Pure. */
size_t wm_ip_reasm_memsize(uint32_t max_datagrams);

/* Takes ownership of the fragment m (its IPv4 header at l3_offset in the
 * first segment). Returns the complete datagram (a chained mbuf, IPv4 header
 * fixed up: total length, no fragment bits), which the caller then owns, or
 * NULL when the fragment is held or was refused. */
struct rte_mbuf *wm_ip_reasm_take(struct wm_ip_reasm *r, struct rte_mbuf *m, uint16_t l3_offset, uint64_t now_tsc);

/* Once per burst: expires datagrams older than the timeout and frees the
 * death row. */
void wm_ip_reasm_burst_end(struct wm_ip_reasm *r, uint64_t now_tsc);

/* Frees every held fragment (counted in freed); on the worker, when it stops. */
void wm_ip_reasm_flush(struct wm_ip_reasm *r);

/* Flushes and frees the table. NULL is a no-op. */
void wm_ip_reasm_free(struct wm_ip_reasm *r);

/* Adds r's counters to *sum. */
void wm_ip_reasm_counters_add(struct wm_ip_reasm_counters *sum, const struct wm_ip_reasm *r);

#endif
