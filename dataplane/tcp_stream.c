/* Per-direction TCP reassembly; see tcp_stream.h for the model. */
#include "dataplane/tcp_stream.h"

#include <string.h>

size_t wm_ooo_pool_memsize(uint32_t n_blocks) { return (size_t)n_blocks * sizeof(struct wm_ooo_block); }

void wm_ooo_pool_init(struct wm_ooo_pool *pool, void *mem, uint32_t n_blocks)
{
    pool->blocks = mem;
    pool->n_blocks = n_blocks;
    pool->n_free = n_blocks;
    pool->free_head = n_blocks ? 0 : WM_OOO_NIL;
    for (uint32_t i = 0; i < n_blocks; i++)
        pool->blocks[i].next = i + 1 < n_blocks ? i + 1 : WM_OOO_NIL;
}

static inline void block_free(struct wm_ooo_pool *pool, uint32_t i)
{
    pool->blocks[i].next = pool->free_head;
    pool->free_head = i;
    pool->n_free++;
}

void wm_tcp_dir_open(struct wm_tcp_dir *d, uint32_t next_seq)
{
    memset(d, 0, sizeof *d);
    d->rcv_nxt = next_seq;
    d->ooo_head = WM_OOO_NIL;
    d->state = WM_DIR_OPEN;
}

void wm_tcp_dir_release(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, struct wm_stream_stats *st)
{
    uint32_t i = d->ooo_head;
    while (i != WM_OOO_NIL) {
        uint32_t next = pool->blocks[i].next;
        st->discarded_bytes += pool->blocks[i].len;
        block_free(pool, i);
        i = next;
    }
    d->ooo_head = WM_OOO_NIL;
    d->ooo_blocks = 0;
}

void wm_tcp_dir_lose(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, struct wm_stream_stats *st)
{
    wm_tcp_dir_release(d, pool, st);
    d->state = WM_DIR_LOST;
}

static inline void emit_bytes(struct wm_tcp_dir *d, const uint8_t *p, uint32_t n,
                              wm_stream_emit_fn emit, void *ctx, struct wm_stream_stats *st)
{
    if (n == 0) return;
    d->rcv_nxt += n;
    d->delivered += n;
    st->delivered_bytes += n;
    emit(ctx, p, n);
}

/* The FIN is reached once every byte before it was delivered. Blocks beyond
 * it can only be bogus data (first copy of the FIN wins), so they go. */
static void check_fin(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, struct wm_stream_stats *st)
{
    if (d->has_fin && d->state == WM_DIR_OPEN && d->rcv_nxt == d->fin_seq) {
        wm_tcp_dir_release(d, pool, st);
        d->rcv_nxt++;
        d->state = WM_DIR_FIN;
    }
}

/* Emits buffered blocks that start at or before rcv_nxt (the hole closed). */
static void drain(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, wm_stream_emit_fn emit,
                  void *ctx, struct wm_stream_stats *st)
{
    while (d->ooo_head != WM_OOO_NIL) {
        struct wm_ooo_block *b = &pool->blocks[d->ooo_head];
        if (wm_seq_diff(b->seq, d->rcv_nxt) > 0) break;
        uint32_t end = b->seq + b->len;
        if (wm_seq_diff(end, d->rcv_nxt) > 0) {
            uint32_t off = d->rcv_nxt - b->seq;
            emit_bytes(d, b->data + off, end - d->rcv_nxt, emit, ctx, st);
        }
        uint32_t i = d->ooo_head;
        d->ooo_head = b->next;
        d->ooo_blocks--;
        block_free(pool, i);
    }
}

/* In order: new bytes up to the next buffered block go out from the packet
 * itself; where a buffered block already covers a range, its (earlier) copy
 * is emitted and the new copy of that range skipped. */
static void deliver_in_order(struct wm_tcp_dir *d, struct wm_ooo_pool *pool, const uint8_t *p,
                             uint32_t n, wm_stream_emit_fn emit, void *ctx, struct wm_stream_stats *st)
{
    uint32_t cur = d->rcv_nxt;
    for (;;) {
        drain(d, pool, emit, ctx, st);
        if (n == 0) break;
        int32_t behind = wm_seq_diff(d->rcv_nxt, cur);
        if (behind > 0) {
            uint32_t skip = (uint32_t)behind < n ? (uint32_t)behind : n;
            st->overlap_bytes += skip;
            p += skip; n -= skip; cur += skip;
            continue;
        }
        uint32_t take = n;
        if (d->ooo_head != WM_OOO_NIL) {
            uint32_t gap = pool->blocks[d->ooo_head].seq - cur;
            if (gap < take) take = gap;
        }
        emit_bytes(d, p, take, emit, ctx, st);
        p += take; n -= take; cur += take;
    }
}

/* Copies the parts of [seq, seq+n) that no block holds yet into new blocks,
 * keeping the list sorted and non-overlapping. */
static enum wm_seg_result buffer_ahead(struct wm_tcp_dir *d, struct wm_ooo_pool *pool,
                                       uint16_t max_blocks, uint32_t seq, const uint8_t *p,
                                       uint32_t n, struct wm_stream_stats *st)
{
    uint32_t prev = WM_OOO_NIL, cur = d->ooo_head;
    uint32_t pos = seq, end = seq + n;
    int copied = 0;
    while (wm_seq_diff(end, pos) > 0) {
        while (cur != WM_OOO_NIL &&
               wm_seq_diff(pool->blocks[cur].seq + pool->blocks[cur].len, pos) <= 0) {
            prev = cur;
            cur = pool->blocks[cur].next;
        }
        if (cur != WM_OOO_NIL && wm_seq_diff(pool->blocks[cur].seq, pos) <= 0) {
            uint32_t bend = pool->blocks[cur].seq + pool->blocks[cur].len;
            uint32_t stop = wm_seq_diff(bend, end) < 0 ? bend : end;
            st->overlap_bytes += stop - pos;
            pos = stop;
            continue;
        }
        uint32_t limit = end;
        if (cur != WM_OOO_NIL && wm_seq_diff(pool->blocks[cur].seq, end) < 0)
            limit = pool->blocks[cur].seq;
        while (wm_seq_diff(limit, pos) > 0) {
            if (d->ooo_blocks >= max_blocks) return WM_SEG_OVERFLOW_FLOW;
            if (pool->free_head == WM_OOO_NIL) return WM_SEG_OVERFLOW_CORE;
            uint32_t take = limit - pos;
            if (take > WM_OOO_BLOCK_DATA) take = WM_OOO_BLOCK_DATA;
            uint32_t i = pool->free_head;
            struct wm_ooo_block *b = &pool->blocks[i];
            pool->free_head = b->next;
            pool->n_free--;
            b->seq = pos;
            b->len = take;
            memcpy(b->data, p + (pos - seq), take);
            b->next = cur;
            if (prev == WM_OOO_NIL) d->ooo_head = i;
            else pool->blocks[prev].next = i;
            prev = i;
            d->ooo_blocks++;
            st->ooo_bytes += take;
            pos += take;
            copied = 1;
        }
    }
    if (copied) st->ooo_segments++;
    return WM_SEG_BUFFERED;
}

enum wm_seg_result wm_tcp_dir_segment(struct wm_tcp_dir *d, struct wm_ooo_pool *pool,
                                      uint16_t max_blocks, uint32_t seq, const uint8_t *p,
                                      uint32_t n, int fin, wm_stream_emit_fn emit, void *ctx,
                                      struct wm_stream_stats *st)
{
    if (d->state != WM_DIR_OPEN) return WM_SEG_CLOSED;
    int32_t ahead = wm_seq_diff(seq, d->rcv_nxt);
    if (ahead > (int32_t)WM_TCP_MAX_AHEAD || ahead < -(int32_t)WM_TCP_MAX_AHEAD)
        return WM_SEG_OUT_OF_WINDOW;
    if (fin && !d->has_fin) {
        d->has_fin = 1;
        d->fin_seq = seq + n;
    }
    /* Nothing after the FIN belongs to the stream. */
    if (d->has_fin && wm_seq_diff(seq + n, d->fin_seq) > 0)
        n = wm_seq_diff(seq, d->fin_seq) >= 0 ? 0 : d->fin_seq - seq;
    if (ahead < 0) {
        uint32_t old = (uint32_t)-ahead;
        if (old >= n) {
            st->duplicate_bytes += n;
            check_fin(d, pool, st);
            return WM_SEG_DUPLICATE;
        }
        st->duplicate_bytes += old;
        p += old; n -= old; seq = d->rcv_nxt; ahead = 0;
    }
    if (ahead == 0) {
        if (n == 0) {
            check_fin(d, pool, st);
            return WM_SEG_DUPLICATE;
        }
        if (d->ooo_head == WM_OOO_NIL) {
            st->zero_copy_segments++;
            emit_bytes(d, p, n, emit, ctx, st);
        } else {
            deliver_in_order(d, pool, p, n, emit, ctx, st);
        }
        check_fin(d, pool, st);
        return WM_SEG_DELIVERED;
    }
    if (n == 0) return WM_SEG_BUFFERED; /* a bare FIN beyond a hole: remembered above */
    return buffer_ahead(d, pool, max_blocks, seq, p, n, st);
}
