/* TCP connection tracking for a passive observer: which segment opens,
 * continues or ends a connection, and what its payload becomes.
 *
 * A connection is reassembled only when its handshake was seen, from the
 * client's SYN or (the SYN missed) from the server's SYN-ACK, whose ack number
 * names the client's next byte exactly. A connection first seen with payload
 * and no handshake is counted as midstream and its bytes are not delivered:
 * an MQTT stream cannot be entered at an arbitrary byte without guessing
 * where a packet starts. Pure ACK/FIN/RST segments of unknown connections
 * create nothing (they are the tail of connections we ended). */
#include "dataplane/flow_table.h"
#include "dataplane/flow_table_internal.h"

#include <string.h>

struct emit_ctx {
    struct wm_flow_table *t;
    struct wm_flow *f;
    int dir;
};

static void emit_to_consumer(void *ctx, const uint8_t *p, uint32_t n)
{
    struct emit_ctx *e = ctx;
    if (e->t->ops.on_data) e->t->ops.on_data(e->t->ops_ctx, e->f, e->dir, p, n);
}

static void lose_dir(struct wm_flow_table *t, struct wm_flow *f, int d)
{
    wm_tcp_dir_lose(&f->dir[d], &t->ooo, &t->c.stream);
    if (t->ops.on_dir_end) t->ops.on_dir_end(t->ops_ctx, f, d, WM_DIR_END_LOST);
}

static void start_from_syn(struct wm_flow_table *t, struct wm_flow *f, int src_side,
                           const struct wm_pkt_info *pi)
{
    f->state = WM_FLOW_SYN_SENT;
    f->client_side = (uint8_t)src_side;
    f->isn[WM_DIR_C2S] = pi->seq;
    wm_tcp_dir_open(&f->dir[WM_DIR_C2S], pi->seq + 1);
    memset(&f->dir[WM_DIR_S2C], 0, sizeof f->dir[WM_DIR_S2C]);
    f->dir[WM_DIR_S2C].ooo_head = WM_OOO_NIL;
    f->packets[0] = f->packets[1] = 0;
    t->c.opened_syn++;
    if (t->ops.on_open) t->ops.on_open(t->ops_ctx, f);
}

static void start_from_synack(struct wm_flow_table *t, struct wm_flow *f, int src_side,
                              const struct wm_pkt_info *pi)
{
    f->state = WM_FLOW_ESTABLISHED;
    f->client_side = (uint8_t)!src_side;
    f->isn[WM_DIR_C2S] = pi->ack - 1;
    f->isn[WM_DIR_S2C] = pi->seq;
    wm_tcp_dir_open(&f->dir[WM_DIR_C2S], pi->ack);
    wm_tcp_dir_open(&f->dir[WM_DIR_S2C], pi->seq + 1);
    t->c.opened_synack++;
    if (t->ops.on_open) t->ops.on_open(t->ops_ctx, f);
}

static enum wm_seg_disposition count(struct wm_flow_table *t, enum wm_seg_disposition d)
{
    t->c.disposition[d]++;
    return d;
}

/* A direction's end is final once each side either reached its FIN or lost
 * its stream after sending one. */
static int both_ended(const struct wm_flow *f)
{
    for (int d = 0; d < 2; d++) {
        const struct wm_tcp_dir *x = &f->dir[d];
        if (!(x->state == WM_DIR_FIN || (x->state == WM_DIR_LOST && x->has_fin))) return 0;
    }
    return 1;
}

enum wm_seg_disposition wm_flow_table_process(struct wm_flow_table *t, const struct wm_pkt_info *pi,
                                              uint64_t now_ns, struct wm_flow **fp)
{
    struct wm_flow_key key;
    int side = wm_flow_key_make(pi, &key);
    uint32_t h = wm_flow_key_hash(&key);
    uint8_t fl = pi->tcp_flags;
    int syn = (fl & WM_TCP_SYN) != 0, ack = (fl & WM_TCP_ACK) != 0;
    if (fp) *fp = NULL;

    struct wm_flow *f = wm_flow_find(t, &key, h);
    if (f && wm_flow_expired(t, f, now_ns)) {
        wm_flow_remove(t, f, WM_FLOW_CLOSE_TIMEOUT);
        f = NULL;
    }
    if (!f) {
        if (syn || pi->payload_len > 0) {
            f = wm_flow_create(t, &key, h, now_ns);
        } else {
            return count(t, WM_SD_NO_FLOW);
        }
        if (fp) *fp = f;
        if (syn && !ack) {
            start_from_syn(t, f, side, pi);
        } else if (syn) {
            start_from_synack(t, f, side, pi);
        } else {
            f->state = WM_FLOW_MIDSTREAM;
            t->c.midstream++;
            f->packets[0]++;
            return count(t, WM_SD_MIDSTREAM);
        }
        if (pi->payload_len == 0) {
            f->packets[side == f->client_side ? WM_DIR_C2S : WM_DIR_S2C]++;
            return count(t, WM_SD_CONTROL);
        }
        /* Data on a SYN (TCP Fast Open) continues below with the new entry. */
    } else {
        wm_flow_touch(t, f, now_ns);
        if (fp) *fp = f;
        if (f->state == WM_FLOW_MIDSTREAM) {
            f->packets[0]++;
            if (fl & WM_TCP_RST) f->state = WM_FLOW_CLOSED;
            return count(t, WM_SD_MIDSTREAM);
        }
        if (f->state == WM_FLOW_CLOSED) {
            if (syn && !ack) {
                start_from_syn(t, f, side, pi);
                if (pi->payload_len == 0) return count(t, WM_SD_CONTROL);
            } else {
                return count(t, WM_SD_AFTER_CLOSE);
            }
        } else if (fl & WM_TCP_RST) {
            f->packets[side == f->client_side ? WM_DIR_C2S : WM_DIR_S2C]++;
            wm_flow_end(t, f, WM_FLOW_CLOSE_RST);
            return count(t, WM_SD_RST);
        } else if (syn) {
            int dir = side == f->client_side ? WM_DIR_C2S : WM_DIR_S2C;
            if (!ack) {
                if (dir == WM_DIR_C2S && pi->seq == f->isn[WM_DIR_C2S]) {
                    t->c.syn_retransmits++;
                    f->packets[dir]++;
                    return count(t, WM_SD_DUPLICATE);
                }
                /* A new connection on the same endpoints (we missed the end of
                 * the previous one). */
                wm_flow_end(t, f, WM_FLOW_CLOSE_REUSED);
                start_from_syn(t, f, side, pi);
                if (pi->payload_len == 0) return count(t, WM_SD_CONTROL);
            } else if (dir == WM_DIR_S2C && f->dir[WM_DIR_S2C].state == WM_DIR_NONE) {
                f->isn[WM_DIR_S2C] = pi->seq;
                wm_tcp_dir_open(&f->dir[WM_DIR_S2C], pi->seq + 1);
                f->state = WM_FLOW_ESTABLISHED;
            } else if (dir == WM_DIR_S2C && pi->seq == f->isn[WM_DIR_S2C]) {
                if (pi->payload_len == 0) {
                    f->packets[dir]++;
                    return count(t, WM_SD_DUPLICATE);
                }
            } else {
                /* A SYN-ACK that contradicts the handshake we followed. */
                f->packets[dir]++;
                return count(t, WM_SD_OUT_OF_WINDOW);
            }
        }
    }

    int dir = side == f->client_side ? WM_DIR_C2S : WM_DIR_S2C;
    struct wm_tcp_dir *d = &f->dir[dir];
    f->packets[dir]++;
    int fin = (fl & WM_TCP_FIN) != 0;
    uint32_t data_seq = pi->seq + (syn ? 1u : 0u);
    enum wm_seg_disposition disp;
    uint8_t before = d->state;

    if (d->state == WM_DIR_NONE) {
        disp = (pi->payload_len || fin) ? WM_SD_NO_ISN : WM_SD_CONTROL;
    } else if (d->state != WM_DIR_OPEN) {
        if (fin && !d->has_fin) {
            d->has_fin = 1;
            d->fin_seq = data_seq + pi->payload_len;
        }
        disp = pi->payload_len ? WM_SD_DIR_ENDED : WM_SD_CONTROL;
    } else {
        struct emit_ctx ec = {t, f, dir};
        enum wm_seg_result r =
            wm_tcp_dir_segment(d, &t->ooo, t->cfg.ooo_blocks_per_dir, data_seq, pi->payload,
                               pi->payload_len, fin, emit_to_consumer, &ec, &t->c.stream);
        switch (r) {
        case WM_SEG_DELIVERED: disp = WM_SD_DELIVERED; break;
        case WM_SEG_BUFFERED: disp = pi->payload_len ? WM_SD_BUFFERED : WM_SD_CONTROL; break;
        case WM_SEG_DUPLICATE: disp = pi->payload_len ? WM_SD_DUPLICATE : WM_SD_CONTROL; break;
        case WM_SEG_OUT_OF_WINDOW: disp = WM_SD_OUT_OF_WINDOW; break;
        case WM_SEG_OVERFLOW_FLOW:
        case WM_SEG_OVERFLOW_CORE:
            if (r == WM_SEG_OVERFLOW_FLOW) t->c.dir_lost_ooo_flow++;
            else t->c.dir_lost_ooo_core++;
            lose_dir(t, f, dir);
            disp = WM_SD_OOO_OVERFLOW;
            break;
        default: disp = pi->payload_len ? WM_SD_DIR_ENDED : WM_SD_CONTROL; break;
        }
        if (before == WM_DIR_OPEN && d->state == WM_DIR_FIN) {
            t->c.dir_fin++;
            if (t->ops.on_dir_end) t->ops.on_dir_end(t->ops_ctx, f, dir, WM_DIR_END_FIN);
        }
    }

    /* The receiver acknowledged bytes of the other direction that we have
     * not seen. Either the capture shows the ACK before the data (it follows
     * shortly) or the data was never captured: wait WM_ACKED_HOLE_GRACE
     * packets of this connection before calling the hole lost. */
    if (ack) {
        struct wm_tcp_dir *od = &f->dir[!dir];
        if (od->state == WM_DIR_OPEN) {
            int32_t beyond = wm_seq_diff(pi->ack, od->rcv_nxt);
            if (beyond > 0 && beyond <= (int32_t)WM_TCP_MAX_AHEAD) {
                if (!od->acked_hole) od->acked_hole = 1, od->acked_seq = pi->ack;
                else if (wm_seq_diff(pi->ack, od->acked_seq) > 0) od->acked_seq = pi->ack;
            }
        }
    }
    for (int x = 0; x < 2; x++) {
        struct wm_tcp_dir *xd = &f->dir[x];
        if (!xd->acked_hole || xd->state != WM_DIR_OPEN) continue;
        if (wm_seq_diff(xd->rcv_nxt, xd->acked_seq) >= 0) {
            xd->acked_hole = 0;
        } else if (++xd->acked_hole > WM_ACKED_HOLE_GRACE) {
            t->c.dir_lost_acked++;
            lose_dir(t, f, x);
        }
    }

    if (both_ended(f)) wm_flow_end(t, f, WM_FLOW_CLOSE_FIN);
    return count(t, disp);
}
