/* Per-direction TCP stream reassembly for a passive observer.
 *
 * Model (Suricata's stream engine, Pigasus): the common case is a segment that
 * starts exactly at the next expected sequence number with nothing buffered;
 * its payload goes straight to the consumer from the packet buffer (zero copy).
 * Only segments that arrive ahead of a hole are copied, into fixed 2 KiB
 * blocks from a per-core pool, bounded per direction (max_blocks) and per core
 * (the pool size). Buffered bytes are kept sorted and non-overlapping.
 *
 * Overlaps are resolved "first copy wins": bytes already delivered or already
 * buffered are never replaced by a later copy, whatever that copy says. That is
 * what the receiving host does for delivered data, and it keeps an attacker
 * from rewriting what the matcher saw with a crafted retransmission.
 *
 * A hole that cannot be filled (the bounds are hit, the receiver acknowledged
 * bytes we never saw, the connection ended with data pending) is not guessed
 * over: the caller marks the direction lost (wm_tcp_dir_lose) and counts it.
 *
 * Sequence numbers are compared modulo 2^32 (RFC 9293 §3.4). Nothing here
 * allocates; the pool's memory belongs to the caller.
 *
 * Thread safety: a direction and its pool belong to one worker; no locking. */
#ifndef WM_DATAPLANE_TCP_STREAM_H
#define WM_DATAPLANE_TCP_STREAM_H

#include <stddef.h>
#include <stdint.h>

#define WM_OOO_BLOCK_SIZE 2048u
#define WM_OOO_BLOCK_DATA (WM_OOO_BLOCK_SIZE - 12u) /* payload bytes per block */
#define WM_OOO_NIL UINT32_MAX
/* Data more than this far beyond the next expected byte is not a plausible
 * segment of this connection (larger than any scaled TCP window we accept). */
#define WM_TCP_MAX_AHEAD (1u << 30)

struct wm_ooo_block {
    uint32_t next;  /* index of the next block (higher seq) or WM_OOO_NIL */
    uint32_t seq;   /* sequence number of data[0] */
    uint32_t len;   /* bytes used in data */
    uint8_t data[WM_OOO_BLOCK_DATA];
};

/* A per-core pool of out-of-order blocks. */
struct wm_ooo_pool {
    struct wm_ooo_block *blocks; /* n_blocks entries, caller-owned memory */
    uint32_t n_blocks;
    uint32_t n_free;
    uint32_t free_head;
};

/* Bytes of memory a pool of n blocks needs. */
size_t wm_ooo_pool_memsize(uint32_t n_blocks);
/* Initialises a pool over mem (wm_ooo_pool_memsize(n_blocks) bytes, 8-byte aligned). */
void wm_ooo_pool_init(struct wm_ooo_pool *pool, void *mem, uint32_t n_blocks);

enum wm_tcp_dir_state {
    WM_DIR_NONE = 0, /* initial sequence number not known yet */
    WM_DIR_OPEN,     /* streaming */
    WM_DIR_FIN,      /* FIN reached in order: the stream ended cleanly */
    WM_DIR_LOST,     /* a hole could not be filled: no more delivery */
};

struct wm_tcp_dir {
    uint32_t rcv_nxt;     /* next sequence number expected (valid unless NONE) */
    uint32_t fin_seq;     /* sequence number of the FIN (valid if has_fin) */
    uint32_t ooo_head;    /* first buffered block (lowest seq) or WM_OOO_NIL */
    uint16_t ooo_blocks;  /* blocks held by this direction */
    uint8_t state;        /* enum wm_tcp_dir_state */
    uint8_t has_fin;
    uint8_t acked_hole;   /* 0, or 1 + packets seen since the peer acknowledged unseen bytes */
    uint32_t acked_seq;   /* highest such acknowledgment (valid if acked_hole) */
    uint64_t delivered;   /* bytes handed to the consumer */
};

/* Counters a worker keeps about reassembly (bytes unless named segments). */
struct wm_stream_stats {
    uint64_t delivered_bytes;
    uint64_t zero_copy_segments;  /* delivered straight from the packet */
    uint64_t ooo_segments;        /* segments (partly) buffered */
    uint64_t ooo_bytes;           /* bytes copied into blocks */
    uint64_t duplicate_bytes;     /* already delivered: dropped (first copy wins) */
    uint64_t overlap_bytes;       /* already buffered: dropped (first copy wins) */
    uint64_t discarded_bytes;     /* buffered, then dropped when a direction was lost/closed */
};

/* Where in-order bytes go. Called zero or more times per segment, in stream
 * order; p points into the packet or into a pool block and is valid only for
 * the duration of the call. */
typedef void (*wm_stream_emit_fn)(void *ctx, const uint8_t *p, uint32_t n);

enum wm_seg_result {
    WM_SEG_DELIVERED,     /* new bytes reached the consumer */
    WM_SEG_BUFFERED,      /* ahead of a hole: copied (or already buffered) */
    WM_SEG_DUPLICATE,     /* nothing new: every byte already delivered */
    WM_SEG_OUT_OF_WINDOW, /* implausibly far ahead (WM_TCP_MAX_AHEAD): ignored */
    WM_SEG_OVERFLOW_FLOW, /* could not buffer: direction bound; caller must lose the direction */
    WM_SEG_OVERFLOW_CORE, /* could not buffer: pool empty; caller must lose the direction */
    WM_SEG_CLOSED,        /* direction not OPEN (NONE, FIN or LOST): ignored */
};

/* Starts a direction whose first data byte has sequence number next_seq. */
void wm_tcp_dir_open(struct wm_tcp_dir *d, uint32_t next_seq);

/* Takes one segment of this direction: payload p[0..n) at sequence seq, and
 * fin set if the segment carries FIN (its FIN occupies seq+n). Emits every
 * byte that becomes in order, drains buffered blocks that the segment joins,
 * and moves the direction to WM_DIR_FIN when the FIN is reached in order.
 * max_blocks bounds the blocks this direction may hold. */
enum wm_seg_result wm_tcp_dir_segment(struct wm_tcp_dir *d, struct wm_ooo_pool *pool,
                                      uint16_t max_blocks, uint32_t seq, const uint8_t *p,
                                      uint32_t n, int fin, wm_stream_emit_fn emit, void *ctx,
                                      struct wm_stream_stats *st);

/* True if bytes are buffered behind a hole. */
static inline int wm_tcp_dir_has_hole(const struct wm_tcp_dir *d) { return d->ooo_head != WM_OOO_NIL; }

/* Marks the direction lost and returns its blocks to the pool (their bytes
 * are counted in st->discarded_bytes). Idempotent. */
void wm_tcp_dir_lose(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, struct wm_stream_stats *st);

/* Returns the direction's blocks to the pool without changing its state
 * (connection closed or evicted). */
void wm_tcp_dir_release(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, struct wm_stream_stats *st);

/* Modular sequence comparison (RFC 9293 §3.4). */
static inline int32_t wm_seq_diff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

#endif
