/* Per-worker table of TCP connections: a bounded open-addressing hash keyed
 * by the connection (symmetric, so both directions find one entry), with an
 * LRU list that gives both idle timeouts and eviction when the table is full.
 *
 * Why not rte_hash: one worker owns the table (flows are pinned to cores by
 * symmetric RSS), so rte_hash's multi-reader machinery buys nothing, and a
 * plain table over caller-provided memory runs in unit tests and fuzz targets
 * without the EAL. Linear probing with backward-shift deletion keeps probes
 * short without tombstones; the index has at least twice as many slots as
 * entries, so the load factor never exceeds 1/2.
 *
 * Each entry carries user_size bytes of consumer state (the MQTT session) right
 * after struct wm_flow (wm_flow_user()).
 *
 * Thread safety: none; a table belongs to one worker. Telemetry reads only the
 * counters (naturally aligned 64-bit words, torn reads impossible on x86-64). */
#ifndef WM_DATAPLANE_FLOW_TABLE_H
#define WM_DATAPLANE_FLOW_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/pkt_parse.h"
#include "dataplane/tcp_stream.h"

/* Connection key: the two endpoints in canonical order (side 0 is the
 * endpoint whose address, then port, compares lower), plus the VLAN ids so
 * overlapping address spaces on different VLANs stay apart. */
struct wm_flow_key {
    uint8_t addr[2][16];
    uint16_t port[2];
    uint16_t vlan[2];
};

/* Builds the key of a parsed segment; returns the key side of its source (0/1). */
int wm_flow_key_make(const struct wm_pkt_info *pi, struct wm_flow_key *key);
/* Symmetric by construction: both directions give the same key and hash. */
uint32_t wm_flow_key_hash(const struct wm_flow_key *key);

enum wm_flow_state {
    WM_FLOW_FREE = 0,
    WM_FLOW_SYN_SENT,    /* client SYN seen */
    WM_FLOW_ESTABLISHED, /* SYN-ACK seen: both directions stream */
    WM_FLOW_MIDSTREAM,   /* first seen without a handshake: counted, not reassembled */
    WM_FLOW_CLOSED,      /* FIN/FIN or RST: kept briefly so late packets are recognised */
};

/* Direction index: client -> server (the SYN's sender) and back. */
enum { WM_DIR_C2S = 0, WM_DIR_S2C = 1 };

struct wm_flow {
    struct wm_flow_key key;
    uint32_t hash;
    uint32_t lru_prev, lru_next; /* entry indices, WM_FLOW_NIL at the ends */
    uint8_t state;               /* enum wm_flow_state */
    uint8_t client_side;         /* key side (0/1) of the client */
    uint8_t pad[2];
    uint32_t isn[2];             /* initial sequence numbers by direction, once seen */
    uint64_t last_ns;            /* time of the last packet */
    /* ESTABLISHED idle limit the consumer sets (the MQTT Keep Alive,
     * mqtt_session.h): 0 = the table's idle_timeout_ns, WM_FLOW_IDLE_NEVER
     * = no idle timeout (eviction only); at least WM_FLOW_IDLE_MIN_NS. */
    uint64_t idle_ns;
    uint64_t id;                 /* creation order in this table, from 1 */
    struct wm_tcp_dir dir[2];    /* indexed by WM_DIR_C2S / WM_DIR_S2C */
    uint64_t packets[2];
};

#define WM_FLOW_NIL UINT32_MAX
#define WM_FLOW_IDLE_NEVER UINT64_MAX
#define WM_FLOW_IDLE_MIN_NS 1000000000ull

/* A capture may show an acknowledgment before the data it covers (the two
 * directions captured on different CPUs or queues, loopback captures): a
 * hole the peer acknowledged is declared lost only if it is still open this
 * many packets of the connection later. */
#define WM_ACKED_HOLE_GRACE 16

/* Consumer state that follows the entry (64-byte aligned). */
static inline void *wm_flow_user(struct wm_flow *f) { return (uint8_t *)f + ((sizeof *f + 63) & ~(size_t)63); }

struct wm_flow_table_config {
    uint32_t max_flows;          /* entries, >= 1 */
    uint32_t user_size;          /* bytes of consumer state per entry */
    uint32_t ooo_pool_blocks;    /* out-of-order blocks for the whole table (2 KiB each) */
    uint16_t ooo_blocks_per_dir; /* bound per direction */
    uint64_t syn_timeout_ns;     /* SYN_SENT idle limit */
    uint64_t idle_timeout_ns;    /* ESTABLISHED / MIDSTREAM idle limit */
    uint64_t closed_timeout_ns;  /* how long a CLOSED entry lingers */
};

/* Sensible defaults: 65536 flows, 8192 blocks (16 MiB), 32 blocks per
 * direction, 30 s SYN, 600 s idle (a connection whose consumer set no
 * idle_ns), 5 s closed. */
void wm_flow_table_config_default(struct wm_flow_table_config *cfg);

/* Why a connection's entry ended (on_close). */
#define WM_FLOW_CLOSE_REASONS(X)                                               \
    X(FIN, "fin")         /* both directions ended */                        \
    X(RST, "rst")                                                              \
    X(TIMEOUT, "timeout") /* idle beyond its limit */                          \
    X(EVICTED, "evicted") /* least recently used, table full */                \
    X(REUSED, "reused")   /* a new SYN with another ISN on the same key */     \
    X(SHUTDOWN, "shutdown")

enum wm_flow_close_reason {
#define WM_FC_X_ENUM(e, s) WM_FLOW_CLOSE_##e,
    WM_FLOW_CLOSE_REASONS(WM_FC_X_ENUM)
#undef WM_FC_X_ENUM
    WM_FLOW_CLOSE_COUNT
};
/* The counter name of close reason r (WM_FLOW_CLOSE_REASONS' strings, as
 * the summary prints them), "?" out of range. Static storage; thread safe. */
const char *wm_flow_close_reason_name(enum wm_flow_close_reason r);

/* Why a direction stopped delivering (on_dir_end). */
enum wm_dir_end { WM_DIR_END_FIN, WM_DIR_END_LOST };

/* The stream consumer (the MQTT session layer). Every callback runs on the
 * worker, inside wm_flow_table_process/expire; none may call back into the
 * table. on_open is called once per reassembled connection before any data;
 * on_close exactly once after it (never for MIDSTREAM entries, which have no
 * consumer state). */
struct wm_stream_ops {
    void (*on_open)(void *ctx, struct wm_flow *f);
    void (*on_data)(void *ctx, struct wm_flow *f, int dir, const uint8_t *p, uint32_t n);
    void (*on_dir_end)(void *ctx, struct wm_flow *f, int dir, enum wm_dir_end why);
    void (*on_close)(void *ctx, struct wm_flow *f, enum wm_flow_close_reason why);
};

/* What became of one TCP segment: exactly one per segment, so
 * sum(dispositions) == segments processed. */
#define WM_SEG_DISPOSITIONS(X)                                                 \
    X(DELIVERED, "delivered")         /* new in-order bytes to the consumer */ \
    X(BUFFERED, "ooo_buffered")       /* held behind a hole */                 \
    X(CONTROL, "control")             /* no payload: handshake, ACK, FIN */    \
    X(DUPLICATE, "duplicate")         /* payload entirely seen before */       \
    X(RST, "rst")                     /* reset: connection closed */           \
    X(MIDSTREAM, "midstream")         /* connection without a seen handshake */\
    X(NO_FLOW, "no_flow")             /* no payload, no SYN, unknown key */    \
    X(AFTER_CLOSE, "after_close")     /* on a CLOSED entry */                  \
    X(DIR_ENDED, "dir_ended")         /* payload after FIN or after loss */    \
    X(NO_ISN, "no_isn")               /* server data before its SYN-ACK */     \
    X(OUT_OF_WINDOW, "out_of_window")                                          \
    X(OOO_OVERFLOW, "ooo_overflow")   /* could not buffer: direction lost */

enum wm_seg_disposition {
#define WM_SD_X_ENUM(e, s) WM_SD_##e,
    WM_SEG_DISPOSITIONS(WM_SD_X_ENUM)
#undef WM_SD_X_ENUM
    WM_SD_COUNT
};
/* The counter name of segment disposition d (WM_SEG_DISPOSITIONS'
 * strings), "?" out of range. Static storage; thread safe. */
const char *wm_seg_disposition_name(enum wm_seg_disposition d);

/* Connection events, X(field). */
#define WM_FLOW_COUNTERS(X)                                                    \
    X(opened_syn)       /* handshake seen from the SYN */                      \
    X(opened_synack)    /* handshake seen from the SYN-ACK (SYN missed) */      \
    X(midstream)        /* connections first seen mid-stream */                \
    X(syn_retransmits)                                                         \
    X(dir_fin)          /* directions ended by an in-order FIN */              \
    X(dir_lost_acked)   /* hole: the receiver acknowledged bytes never seen, and  \
                           they did not show up within WM_ACKED_HOLE_GRACE packets */ \
    X(dir_lost_ooo_flow)/* hole: per-direction buffer bound */                 \
    X(dir_lost_ooo_core)/* hole: per-core pool exhausted */                    \
    X(dir_lost_at_close)/* hole still open when the connection ended */        \
    X(lookups)                                                                 \
    X(probe_steps)      /* extra slots probed beyond the home slot */

struct wm_flow_counters {
#define WM_FLOW_X_FIELD(n) uint64_t n;
    WM_FLOW_COUNTERS(WM_FLOW_X_FIELD)
#undef WM_FLOW_X_FIELD
    uint64_t closed[WM_FLOW_CLOSE_COUNT]; /* by reason, reassembled connections only */
    uint64_t disposition[WM_SD_COUNT];
    struct wm_stream_stats stream;
};

struct wm_flow_table {
    struct wm_flow_table_config cfg;
    struct wm_stream_ops ops;
    void *ops_ctx;
    size_t entry_stride;  /* bytes per entry (struct + user area, 64-aligned) */
    uint8_t *entries;     /* max_flows entries */
    uint32_t *slot_entry; /* index slots: entry index + 1, 0 = empty */
    uint32_t *slot_hash;
    uint32_t slot_mask;
    uint32_t free_head;   /* free entries chained through lru_next */
    uint32_t lru_head, lru_tail; /* most / least recently used */
    uint32_t expire_at;   /* where the last expiry sweep stopped (WM_FLOW_NIL: the tail) */
    uint64_t young_ns;    /* no entry idle for less than this can have expired */
    uint32_t active;      /* entries in use */
    uint64_t next_id;
    struct wm_ooo_pool ooo;
    struct wm_flow_counters c;
};

/* Bytes of memory wm_flow_table_init needs for cfg (one block, 64-aligned). */
size_t wm_flow_table_memsize(const struct wm_flow_table_config *cfg);

/* Initialises t over mem (wm_flow_table_memsize(cfg) bytes, 64-byte aligned,
 * owned by the caller and kept until the table is dropped). Returns 0, or
 * -1 if cfg is invalid (max_flows 0 or above 2^30, ooo_blocks_per_dir 0 while
 * the pool is not empty). ops callbacks may be NULL. */
int wm_flow_table_init(struct wm_flow_table *t, void *mem, const struct wm_flow_table_config *cfg,
                       const struct wm_stream_ops *ops, void *ops_ctx);

/* Tracks one parsed TCP segment received at now_ns (any monotonic clock in
 * ns): finds or creates its connection, follows the TCP state (SYN, FIN, RST),
 * reassembles its payload and hands in-order bytes to ops.on_data. Returns
 * the disposition, which is also counted in t->c.disposition. If fp is not
 * NULL it receives the entry (NULL for NO_FLOW), valid until the next call. */
enum wm_seg_disposition wm_flow_table_process(struct wm_flow_table *t, const struct wm_pkt_info *pi,
                                              uint64_t now_ns, struct wm_flow **fp);

/* Ends entries that have been idle past their limit, looking at no more
 * than max of them (oldest first); call once per burst. Limits differ per
 * entry (idle_ns), so the least recently used entry need not be the first
 * to expire: the sweep goes on, burst after burst, from where it stopped
 * towards the most recent entries, and starts again at the oldest once it
 * meets an entry idle for less than every limit (so under traffic it looks
 * at one entry). Returns how many it ended. */
unsigned wm_flow_table_expire(struct wm_flow_table *t, uint64_t now_ns, unsigned max);

/* Ends every entry (reason SHUTDOWN) so consumers see on_close at exit. */
void wm_flow_table_flush(struct wm_flow_table *t);

/* Finds the entry of a key without touching LRU order or counters (tests,
 * telemetry from the owning worker). NULL if absent. */
struct wm_flow *wm_flow_table_lookup(struct wm_flow_table *t, const struct wm_flow_key *key);

#endif
