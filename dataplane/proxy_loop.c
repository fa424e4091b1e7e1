/* The proxy's workers: one io_uring per thread, everything asynchronous.
 *
 * Per worker: a SO_REUSEPORT listener with one multishot accept; a provided
 * buffer ring (IORING_REGISTER_PBUF_RING) that every receive of the worker
 * draws from (multishot, or one per wake-up when batching: arm_recv); a
 * fixed table of connection slots allocated at start (no allocation per
 * connection or per message). A loop iteration submits every SQE prepared
 * while handling the previous batch of CQEs in one io_uring_enter
 * (io_uring_submit_and_wait), which also waits for the next ones, then
 * handles all ready CQEs; sends finish inside that enter without a CQE when
 * the socket has room (kick_send).
 *
 * A connection is two sockets (side 0 = client, 1 = upstream) and two queues,
 * q[s] holding what side s sent and the other side has not received yet.
 * Receiving on side s appends to q[s] and frees the provided buffer at once;
 * at most one send per queue is in flight. Back-pressure: when q[s] holds
 * more than conn_buffer framed bytes, the receive on side s is cancelled
 * and armed again once the queue is under half the bound; when the worker
 * holds more than its share of total_buffer, the receives of every side are
 * (check_bounds), until it is under 3/4 of its share. Chunks that still
 * arrive on a paused side are parked (their provided buffer kept) and
 * appended once it may grow again.
 *
 * user_data: op (8 bits) | side (8) | slot (24) | generation (24). A slot is
 * freed only once none of its operations is outstanding, so a completion
 * never refers to a reused slot; the generation is a check of that.
 */
#include "codec/mqtt5_encode.h"
#include "codec/mqtt5_error.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_busy.h"
#include "dataplane/proxy_compile.h"
#include "dataplane/proxy_frame.h"
#include "dataplane/proxy_pace.h"
#include "dataplane/proxy_queue.h"
#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_reload.h"
#include "dataplane/proxy_saver.h"
#include "dataplane/proxy_state.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { OP_ACCEPT = 1, OP_CONNECT, OP_RECV, OP_SEND, OP_SEND_INLINE, OP_CANCEL, OP_WAKE, OP_SWEEP,
       OP_BUSY_RECV, OP_BUSY_SEND, OP_LINGER, OP_LINGER_SWEEP, OP_FDS_RETRY };
enum { ST_FREE = 0, ST_CONNECTING, ST_OPEN, ST_CLOSING };
enum { PAUSE_CONN = 1, PAUSE_TOTAL = 2, PAUSE_HOLD = 4 };
#define PARK_MAX 256
#define BGID 1
#define STOP_GRACE_NS 2000000000ull
/* Lingers still running at a stop are cut this long before its grace period
 * ends, so their slots are free (finalized) when the workers leave. */
#define STOP_LINGER_MARGIN_NS 300000000ull
#define LINGER_BUF 16384
/* How long a drain may wait for a peer to take the proxy's last bytes when
 * lingering is off (--linger-ms 0): the default --linger-ms. */
#define DRAIN_MS_NO_LINGER 2000u

typedef struct park {
    uint16_t bid;
    uint32_t len;
} park;

typedef struct conn {
    int fd[2];
    uint32_t gen;
    uint8_t state;
    uint8_t recv_armed[2];
    uint8_t recv_multi[2];    /* the armed receive is multishot (not batching) */
    uint8_t again[2];         /* batching: the next receive reads at once (arm_recv) */
    uint32_t read_wake[2];    /* batching: the wake-up (w->wakes) of the last read */
    uint8_t paused[2];        /* PAUSE_* bits */
    uint8_t eof[2];           /* side s sends nothing more (EOF, or stopped by an error) */
    uint8_t drain;            /* error: close once both queues are flushed */
    uint8_t ender;            /* with drain: the side that ended the connection (maybe_finish counts it) */
    uint8_t up_gone;          /* the upstream takes nothing more: unreachable, or ended (upstream_gone) */
    uint8_t stop;             /* draining for a shutdown (closed_at_shutdown) */
    uint8_t kick[2];          /* q[s] has data for a send at the end of this batch (in w->kicks) */
    uint8_t held;             /* bit s: side s's stream waits at a packet the filter holds (WM_PROXY_HOLD:
                                 a client SUBSCRIBE, a broker PUBLISH to a resumed session) */
    uint8_t slow[2];          /* the last inline send towards 1 - s could not finish: wait for room */
    uint8_t sent_on[2];       /* something was sent on fd[s] since its last read (ack_at_read) */
    uint32_t inline_tag[2];   /* the send of q[s] in flight is inline (its w->inl entry), 0 if not */
    uint16_t ops;             /* operations outstanding */
    uint32_t next_free;
    uint64_t connect_by;      /* ns (CLOCK_MONOTONIC): closed if no whole CONNECT came by then (sweep); 0 = none */
    uint8_t told;             /* bit s: the proxy queued its own last word for side s (tell) */
    uint8_t linger;           /* bit s: closing, side s half-closed and read until its peer closes (close_conn) */
    uint32_t linger_read;     /* bytes read and dropped while lingering, both sides */
    uint64_t linger_by;       /* ns: lingering is cut then (linger_sweep) */
    uint64_t drain_by;        /* ns: a drain (start_drain) not flushed by then is cut (linger_sweep); 0 = none */
    wm_proxy_queue q[2];
    wm_proxy_session ss;
    wm_proxy_filter flt;      /* used when the proxy filters (cfg->spatial) */
    uint16_t npark[2];
    park parks[2][PARK_MAX];   /* up to worker.park_max used */
} conn;

typedef struct slot_ref {
    uint32_t slot, gen;
    uint8_t side;
} slot_ref;

/* A client beyond max_conns, read until its CONNECT is whole and answered
 * with CONNACK 0x89 (dataplane/proxy_busy.h), then until it closes; at most
 * connect_packet_timeout from accept. */
typedef struct busy_slot {
    int fd;                   /* -1: free */
    uint32_t gen;
    uint16_t ops;             /* operations outstanding */
    uint8_t answered, closing;
    uint64_t connect_by;      /* ns, as conn.connect_by */
    wm_proxy_busy b;
} busy_slot;

/* An inline send (send_inline) waiting to be settled; tag tells it from a
 * later send of the same queue. */
typedef struct inline_ref {
    uint32_t slot, tag;
    uint8_t side;
} inline_ref;

typedef struct deadline_timer {
    bool armed;
    struct __kernel_timespec ts;   /* read by the kernel at submission */
} deadline_timer;

typedef struct worker {
    unsigned id;
    const wm_proxy_config *cfg;
    struct io_uring ring;
    bool ring_ok;
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    uint8_t *bufs;
    uint32_t nbufs, bufsz;
    int buf_returned;         /* buffers added to the ring, not yet published */
    bool bufs_freed;          /* some buffer went back this iteration */
    int listen_fd, wake_fd;
    int test_done_fd;         /* WM_PROXY_TEST_COMPILE_DONE_FILE (worker_alloc), -1 = none */
    uint64_t wake_val;
    bool accept_armed, wake_armed, stopping;
    bool woken;               /* the wake fd fired: held streams are tried again (a saved --state reservation) */
    conn *conns;
    uint32_t nconns, free_head, open;
    uint8_t *qmem;
    size_t qmem_bytes, qcap;
    uint64_t held, held_limit;
    bool over_total;          /* held went over held_limit: no connection is read (check_bounds) */
    slot_ref *nobufs, *kicks;
    uint32_t n_nobufs, n_kicks;
    inline_ref *inl;          /* inline sends not settled yet, in submission order */
    uint32_t n_inl, inl_cap, inl_tag;
    uint32_t wakes;           /* enters that waited */
    bool reread;              /* batching: second reads armed, the next enter must not wait */
    slot_ref *later;          /* batching: receives to arm at the next wake-up (arm_recv) */
    uint32_t n_later;
    uint32_t parked;          /* chunks parked now, all connections */
    wm_proxy_counters c;
    wm_proxy_filter_shared fsh;
    wm_proxy_content content; /* this worker's content filters (--schemas) */
    uint64_t tables_gen;      /* the reloaded resolution (cfg->tables) in use */
    uint8_t *scratch;         /* rewritten packets (filtering) */
    uint32_t scratch_cap;
    /* Adaptive batching: frames framed since rate_t0 (the window being
     * measured), and whether the worker batches (pace decides). */
    uint64_t rate_t0, rate_frames;
    bool busy;
    uint64_t mode_cpu0, mode_wall0, mode_frames0; /* where the current mode's accounting started */
    wm_proxy_pace pace;       /* when to batch (proxy_pace.h) */
    pthread_t th;
    int err;
    char why[256];            /* with err set before relaying: the reason (START_FAIL) */
    pthread_barrier_t *ready;
    struct __kernel_timespec connect_ts;   /* cfg->connect_timeout_ms, read by the kernel at submission */
    /* Clients that owe their CONNECT (conn.connect_by, busy_slot.connect_by)
     * and lingering closes (conn.linger_by): one absolute timeout at a time
     * each, for the earliest deadline (sweep, linger_sweep). */
    deadline_timer sweep_t, linger_t;
    uint64_t linger_cap;      /* stopping: no linger lasts past this (ns); else UINT64_MAX */
    unsigned park_max;        /* chunks a side may park (PARK_MAX; lower by a test hook, worker_alloc) */
    uint8_t *discard;         /* LINGER_BUF bytes lingering receives may write (MSG_TRUNC: none do); never read */
    busy_slot refused[WM_PROXY_BUSY_SLOTS]; /* clients beyond max_conns being answered */
    uint8_t busy_connack[8];  /* CONNACK 0x89 Server busy, encoded at start */
    uint32_t busy_connack_len;
    /* Out of file descriptors (fds_out): accepting is paused until one of
     * the worker's connections closes or fds_t fires; spare_fd (an eventfd,
     * -1 if it could not be made again) is given up for a moment to answer
     * one waiting client (fds_shed); fds_logged: when the last line about it
     * was written (ns), fds_unlogged: the failures since. */
    bool accept_paused;
    int spare_fd;
    deadline_timer fds_t;
    uint64_t fds_logged, fds_unlogged;
    /* Live telemetry (SIGUSR1, wm_proxy_run): the counters as of the end of
     * the batch that first saw g_snap_seq move, published by snap_done = that
     * sequence number (release; the main thread reads snap after acquiring
     * it, and asks for the next only after). */
    uint64_t snap_seen;
    wm_proxy_counters snap;
    _Atomic uint64_t snap_done;
} worker;

static atomic_int g_fatal;
static atomic_int g_stop;     /* a wake-up means stop (else: look for reloaded tables) */
static _Atomic uint64_t g_snap_seq;   /* moved by the main thread for each SIGUSR1 (worker.snap) */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ud(unsigned op, unsigned side, uint32_t slot, uint32_t gen)
{
    return (uint64_t)op | (uint64_t)side << 8 | (uint64_t)slot << 16 | (uint64_t)(gen & 0xFFFFFF) << 40;
}

/* The load decides how the worker waits. Each wake-up costs the kernel about
 * the same whatever it carries: per socket read, a TCP ACK to the sender
 * (on loopback, with the transmit of what the sender's Nagle held back,
 * charged to us) and a task switch. Idle or light load: wake at the first
 * completion, the latency is the kernel's. At high rates (from batch_rate
 * frames/s, measured over windows of RATE_WINDOW_NS; the rule and why are in
 * proxy_pace.h): sleep up to batch_wait_ns before taking completions, so every
 * read and every send carries what arrived meanwhile (interrupt coalescing,
 * as NICs do). */
#define RATE_WINDOW_NS 4000000ull

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Charges the time since the last call to the current mode (w->busy). Called
 * at mode switches only (at most one per window) and at the end, so reading
 * the thread's CPU clock (a syscall) costs nothing measurable. */
static void account_mode(worker *w)
{
    uint64_t cpu = thread_cpu_ns(), t = now_ns(), f = w->c.packets[0] + w->c.packets[1];
    w->c.mode_cpu_ns[w->busy] += cpu - w->mode_cpu0;
    w->c.mode_wall_ns[w->busy] += t - w->mode_wall0;
    w->c.mode_frames[w->busy] += f - w->mode_frames0;
    w->mode_cpu0 = cpu;
    w->mode_wall0 = t;
    w->mode_frames0 = f;
}

static void update_rate(worker *w, uint64_t frames)
{
    w->rate_frames += frames;
    uint64_t t = now_ns(), dt = t - w->rate_t0;
    if (dt < RATE_WINDOW_NS) return;
    bool busy = wm_proxy_pace_window(&w->pace, w->rate_frames, dt, w->cfg->batch_rate);
    if (busy != w->busy) {
        account_mode(w);
        w->busy = busy;
    }
    w->rate_t0 = t;
    w->rate_frames = 0;
}

static struct io_uring_sqe *get_sqe(worker *w)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    if (!sqe) {
        /* SQ full within one batch: flush it and go on. */
        int n = io_uring_submit(&w->ring);
        w->c.submits++;
        if (n > 0) w->c.sqes += (uint64_t)n;
        sqe = io_uring_get_sqe(&w->ring);
    }
    return sqe;
}

/* ------------------------------------------------------------ buffers */

static inline uint8_t *buf_addr(worker *w, uint16_t bid) { return w->bufs + (size_t)bid * w->bufsz; }

static void buf_return(worker *w, uint16_t bid)
{
    io_uring_buf_ring_add(w->br, buf_addr(w, bid), w->bufsz, bid,
                          io_uring_buf_ring_mask(w->nbufs), w->buf_returned++);
    w->bufs_freed = true;
}

static void buf_publish(worker *w)
{
    if (w->buf_returned) {
        io_uring_buf_ring_advance(w->br, w->buf_returned);
        w->buf_returned = 0;
    }
}

/* ------------------------------------------------------------ connections */

/* Not batching, a multishot receive: each arrival is taken at once. When
 * batching, single receives, two per socket and wake-up. Why not multishot
 * there too: a multishot receive reads again as long as the socket is not
 * empty, and on loopback each read's ACK makes the sender's TCP transmit
 * what its Nagle held back, on our CPU, into the socket being read: a
 * ping-pong of small reads, each a full round of kernel TCP work, for as
 * long as the sender keeps writing (up to 32 reads per socket and wake-up).
 * Two reads: the first takes what arrived since the last wake-up, and its
 * ACK releases what the sender held back meanwhile, which the second takes;
 * both are armed without POLL_FIRST and read within an enter that does not
 * wait (w->reread). What the second read's ACK releases waits for the next
 * wake-up, where the socket's receive is armed again (w->later): armed at
 * once it would find that data ready and read it at the start of the wait,
 * and everything the sender then held back would wait one wake-up more. A
 * socket with nothing to read since has a POLL_FIRST receive armed. */
static void arm_recv(worker *w, conn *k, uint32_t slot, int s)
{
    /* Not while chunks are parked: a new receive would read more that can
     * only be parked too (on_send arms it once they are in the queue). */
    if (k->state != ST_OPEN || k->recv_armed[s] || k->paused[s] || k->eof[s] || k->npark[s]) return;
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return;
    bool multi = !(w->busy && w->cfg->batch_wait_ns);
    if (multi) {
        io_uring_prep_recv_multishot(sqe, k->fd[s], NULL, 0, 0);
    } else {
        io_uring_prep_recv(sqe, k->fd[s], NULL, 0, 0);
        if (!k->again[s]) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
    }
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data64(sqe, ud(OP_RECV, (unsigned)s, slot, k->gen));
    k->recv_armed[s] = 1;
    k->recv_multi[s] = multi;
    k->ops++;
}

/* Sends towards a peer are inline when they can be: MSG_DONTWAIT makes the
 * kernel either finish one during the io_uring_enter that submits it or fail
 * it at once (EAGAIN, or the bytes written so far when MSG_WAITALL could not
 * be met; a MSG_DONTWAIT request is never parked on a poll), and
 * IOSQE_CQE_SKIP_SUCCESS posts a completion only for such a failure. So a
 * whole send posts nothing, and the wait for the next receive goes in the
 * same io_uring_enter as the submission: one system call per wake-up instead
 * of two (the second returning at once with the completions of the sends),
 * which on this path are what the latency and the wake-ups are made of.
 * settle_inline() completes the ones without a failure once the enter that
 * submitted them has returned and its completions are handled
 * (wm_proxy_probe checks the kernel does this). After a failure the queue's
 * next send waits for room as an ordinary send with a completion. */
static void kick_send(worker *w, conn *k, uint32_t slot, int s)
{
    const uint8_t *p;
    uint32_t len;
    if (k->state != ST_OPEN || k->fd[1 - s] < 0 || !wm_proxy_queue_next_send(&k->q[s], &p, &len)) return;
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) { wm_proxy_queue_sent(&k->q[s], 0); return; }
    if (!k->slow[s] && w->n_inl < w->inl_cap) {
        io_uring_prep_send(sqe, k->fd[1 - s], p, len, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_WAITALL);
        sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
        io_uring_sqe_set_data64(sqe, ud(OP_SEND_INLINE, (unsigned)s, slot, k->gen));
        if (++w->inl_tag == 0) w->inl_tag = 1;
        k->inline_tag[s] = w->inl_tag;
        w->inl[w->n_inl++] = (inline_ref){ slot, w->inl_tag, (uint8_t)s };
    } else {
        io_uring_prep_send(sqe, k->fd[1 - s], p, len, MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, ud(OP_SEND, (unsigned)s, slot, k->gen));
    }
    k->sent_on[1 - s] = 1;
    k->ops++;
    w->c.sends++;
}

/* The proxy acknowledges what it reads when it reads it, on both sides.
 * Linux delays the ACKs of a socket that sent data within the delayed-ACK
 * timeout (~40 ms) of receiving some ("pingpong", interactive mode): it
 * expects a reply to carry them, and then a read no longer sends the ACK of
 * a small segment. The proxy's sends are no replies (they relay the other
 * side), and its peers write with Nagle (mosquitto does not set
 * TCP_NODELAY), so a peer's small packet written while its previous one is
 * unacknowledged waits for that ACK: a subscriber's upstream socket, which
 * sent the SUBSCRIBE right after reading the CONNACK (a client waiting for
 * its CONNACK, or the proxy releasing what a pipelining client sent behind
 * it, proxy_frame.h), then got mosquitto's deliveries in bursts about every
 * 1.8 ms instead of one by one (the ACK of a full-sized segment still goes
 * at once, so the delayed-ACK timer, which would end the mode, never
 * fired). TCP_QUICKACK leaves the mode and sends the ACK due for the read
 * just done; only the first read after a send on that socket needs it, so a
 * socket that is only read (most of a QoS 0 stream's) pays it once. Test
 * proxy_acks. */
static void ack_at_read(worker *w, conn *k, int s)
{
    if (!k->sent_on[s]) return;
    k->sent_on[s] = 0;
    int one = 1;
    if (setsockopt(k->fd[s], IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) == 0) w->c.quickacks++;
}

/* Sends start once a batch of completions is handled, not as each receive
 * is: a send in flight holds its queue, so a receive handled before the
 * completion of the previous send (completions come in arrival order) would
 * otherwise wait a whole further wake-up, and with batching every hop would
 * cost two waits instead of one. It also makes everything a wake-up received
 * for one socket leave in one send. */
static void want_send(worker *w, conn *k, uint32_t slot, int s)
{
    if (k->kick[s]) return;
    k->kick[s] = 1;
    w->kicks[w->n_kicks++] = (slot_ref){ slot, k->gen, (uint8_t)s };
}

static void kick_wanted(worker *w)
{
    for (uint32_t i = 0; i < w->n_kicks; i++) {
        slot_ref r = w->kicks[i];
        conn *k = &w->conns[r.slot];
        if (k->gen != r.gen) continue;
        k->kick[r.side] = 0;
        kick_send(w, k, r.slot, r.side);
    }
    w->n_kicks = 0;
}

static void cancel_op(worker *w, uint64_t target)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return;
    io_uring_prep_cancel64(sqe, target, 0);
    io_uring_sqe_set_data64(sqe, OP_CANCEL);
}

/* Batching just started: the multishot receives end (on_recv arms single
 * ones in their place, see arm_recv). */
static void end_multishot(worker *w)
{
    for (uint32_t i = 0; i < w->nconns; i++) {
        conn *k = &w->conns[i];
        for (int s = 0; s < 2; s++)
            if (k->state == ST_OPEN && k->recv_armed[s] && k->recv_multi[s])
                cancel_op(w, ud(OP_RECV, (unsigned)s, i, k->gen));
    }
}

static void pause_side(worker *w, conn *k, uint32_t slot, int s, uint8_t why)
{
    if (k->paused[s] & why) return;
    k->paused[s] |= why;
    if (k->recv_armed[s]) cancel_op(w, ud(OP_RECV, (unsigned)s, slot, k->gen));
}

static void unpause_side(worker *w, conn *k, uint32_t slot, int s, uint8_t why)
{
    if (!(k->paused[s] & why)) return;
    k->paused[s] &= (uint8_t)~why;
    if (!k->paused[s]) {
        w->c.resumed++;
        arm_recv(w, k, slot, s);
    }
}

static void finalize(worker *w, conn *k, uint32_t slot)
{
    for (int s = 0; s < 2; s++) {
        if (k->fd[s] >= 0) close(k->fd[s]);
        k->fd[s] = -1;
        for (unsigned i = 0; i < k->npark[s]; i++) buf_return(w, k->parks[s][i].bid);
        w->parked -= k->npark[s];
        k->npark[s] = 0;
        w->held -= wm_proxy_queue_held(&k->q[s]);
        wm_proxy_queue_init(&k->q[s], k->q[s].buf, k->q[s].cap);
    }
    if (k->ss.filter) wm_proxy_filter_reset(&k->flt);
    /* Give the queue pages back: a closed connection must not pin memory. */
    madvise(k->q[0].buf, 2 * w->qcap, MADV_DONTNEED);
    k->kick[0] = k->kick[1] = 0;
    k->held = 0;
    k->state = ST_FREE;
    k->gen++;
    k->next_free = w->free_head;
    w->free_head = slot;
    w->open--;
    w->c.conns_closed++;
    w->accept_paused = false;   /* its descriptors are free: accept again (fds_out) */
}

/* ------------------------------------------------------------ lingering close
 *
 * Closing a socket whose peer sent bytes the proxy has not read makes the
 * kernel send RST instead of FIN and drop what it has not transmitted yet.
 * The proxy stops reading a side it ends (stop_side), so a client that
 * streams (QoS 0 PUBLISHes) has bytes unread then, and what the proxy sent
 * it last (deliveries, then the DISCONNECT telling it why) was lost whenever
 * it still sat in the proxy's send buffer because the client was not
 * reading at that moment (tests/integration/proxy_linger.sh: a subscriber
 * with deliveries backed up sends a packet too large; before, it read part
 * of the deliveries, no DISCONNECT, and its writes failed with ECONNRESET;
 * a segment lost on the way is not sent again after a RST either). So, as
 * web servers do (nginx's lingering_close, Apache's lingering close), once
 * the last byte is handed to the kernel the side is half-closed (FIN after
 * it) and read, what comes dropped, until its peer closes or errs, or a
 * bound ends it: linger_ms (the slot stays taken: a client that never
 * closes must not hold it for good) or linger_bytes; then it is closed as
 * it is. A stop cuts every linger STOP_LINGER_MARGIN_NS before its grace
 * period ends. */

static void arm_timer(worker *w, deadline_timer *t, unsigned op, uint64_t at);
static void close_conn(worker *w, conn *k, uint32_t slot, uint64_t *why);
static uint32_t unsent(const conn *k, int s);

/* A receive of side s that drops what it reads: MSG_TRUNC makes TCP discard
 * the bytes instead of copying them (tcp(7)); w->discard is there in case
 * a kernel copies anyway. No SQE: the side is closed at once instead. */
static void linger_recv(worker *w, conn *k, uint32_t slot, int s)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) {
        k->linger &= (uint8_t)~(1u << s);
        return;
    }
    io_uring_prep_recv(sqe, k->fd[s], w->discard, LINGER_BUF, MSG_TRUNC);
    io_uring_sqe_set_data64(sqe, ud(OP_LINGER, (unsigned)s, slot, k->gen));
    k->ops++;
}

static uint64_t linger_deadline(const worker *w, const conn *k)
{
    return k->linger_by < w->linger_cap ? k->linger_by : w->linger_cap;
}

/* A lingering receive of side s completed: go on until the peer's EOF or
 * error, or a bound. */
static void on_linger(worker *w, conn *k, uint32_t slot, int s, int res)
{
    uint8_t bit = (uint8_t)(1u << s);
    if (res > 0) {
        k->linger_read += (uint32_t)res;
        w->c.linger_bytes += (uint64_t)res;
    }
    if (!(k->linger & bit)) return;   /* cut by linger_sweep */
    if (res > 0 && k->linger_read > w->cfg->linger_bytes) {
        w->c.linger_cut_bytes++;
    } else if (res > 0 && now_ns() >= linger_deadline(w, k)) {
        w->c.linger_cut_time++;
    } else if (res > 0) {
        linger_recv(w, k, slot, s);
        return;
    }
    if (res > 0 && w->cfg->verbose)
        fprintf(stderr, "wirematch-proxy: worker %u: the %s still sent after the close (%u bytes dropped): "
                        "closed as it is\n", w->id, s == WM_PROXY_C2U ? "client" : "upstream broker", k->linger_read);
    k->linger &= (uint8_t)~bit;
}

/* Lingers past their deadline are cut (their receives cancelled: the close
 * follows once they end); the timer is armed again for the next, at least
 * linger_ms / 16 later, so a linger ends between 1 and 1 1/16 x linger_ms
 * after it started. Also run at every turn of a stopping worker. */
static void linger_sweep(worker *w, bool timer)
{
    if (timer) w->linger_t.armed = false;
    uint64_t now = now_ns(), next = UINT64_MAX;
    for (uint32_t i = 0; i < w->nconns; i++) {
        conn *k = &w->conns[i];
        if (k->state == ST_OPEN && k->drain && k->drain_by) {
            if (k->drain_by > now) {
                if (k->drain_by < next) next = k->drain_by;
                continue;
            }
            /* The peer did not take the proxy's last bytes within the
             * bound (it stopped reading): closed unflushed, no linger
             * (nothing more of it would be read either), counted by the
             * side that ended it as a flushed drain is (maybe_finish). */
            w->c.drain_cut++;
            if (w->cfg->verbose)
                fprintf(stderr, "wirematch-proxy: worker %u: %u + %u bytes not taken by the peers within %u ms of "
                                "the end (the client stopped reading?): closed unflushed\n", w->id, unsent(k, 0),
                        unsent(k, 1), w->cfg->linger_ms ? w->cfg->linger_ms : DRAIN_MS_NO_LINGER);
            close_conn(w, k, i, k->ender == WM_PROXY_C2U ? &w->c.closed_by_client : &w->c.closed_by_upstream);
            continue;
        }
        if (k->state != ST_CLOSING || !k->linger) continue;
        uint64_t by = linger_deadline(w, k);
        if (by > now) {
            if (by < next) next = by;
            continue;
        }
        for (int s = 0; s < 2; s++) {
            if (!(k->linger & 1u << s)) continue;
            w->c.linger_cut_time++;
            cancel_op(w, ud(OP_LINGER, (unsigned)s, i, k->gen));
            if (w->cfg->verbose)
                fprintf(stderr, "wirematch-proxy: worker %u: the %s did not close within %u ms of the proxy's "
                                "(%u bytes dropped): closed as it is\n", w->id,
                        s == WM_PROXY_C2U ? "client" : "upstream broker", w->cfg->linger_ms, k->linger_read);
        }
        k->linger = 0;
    }
    uint64_t gap = (uint64_t)(w->cfg->linger_ms ? w->cfg->linger_ms : DRAIN_MS_NO_LINGER) * (1000000ull / 16);
    if (next != UINT64_MAX) arm_timer(w, &w->linger_t, OP_LINGER_SWEEP, next > now + gap ? next : now + gap);
}

/* why: which counter names the cause. The sockets are shut down at once so
 * pending receives end; cancels take the rest (a connect in flight). Sides
 * in k->linger are half-closed and read until their peers close (above);
 * the slot is freed once every operation ended. */
static void close_conn(worker *w, conn *k, uint32_t slot, uint64_t *why)
{
    if (k->state == ST_CLOSING || k->state == ST_FREE) return;
    if (why) (*why)++;
    k->state = ST_CLOSING;
    if (k->linger) {
        k->linger_read = 0;
        k->linger_by = now_ns() + (uint64_t)w->cfg->linger_ms * 1000000ull;
        arm_timer(w, &w->linger_t, OP_LINGER_SWEEP, linger_deadline(w, k));
    }
    for (int s = 0; s < 2; s++) {
        if (k->fd[s] < 0) continue;
        if (k->linger & 1u << s) {
            shutdown(k->fd[s], SHUT_WR);
            w->c.lingers++;
            linger_recv(w, k, slot, s);
            if (k->linger & 1u << s) continue;
        }
        shutdown(k->fd[s], SHUT_RDWR);
        struct io_uring_sqe *sqe = get_sqe(w);
        if (sqe) {
            io_uring_prep_cancel_fd(sqe, k->fd[s], IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(sqe, OP_CANCEL);
        }
    }
    if (k->ops == 0) finalize(w, k, slot);
}

/* Bytes of q[s] that count against conn_buffer: those framed for the peer,
 * and on the client's side also those held behind the broker's CONNACK
 * (proxy_frame.h), which are only framed once it comes. */
static uint32_t queued(const conn *k, int s)
{
    return s == WM_PROXY_C2U && wm_proxy_session_holding(&k->ss) ? wm_proxy_queue_held(&k->q[s])
                                                                   : wm_proxy_queue_pending(&k->q[s]);
}

/* The worker's share of total_buffer is a bound on what it holds, not only
 * on what the side that crossed it holds: once over it, every side of every
 * connection stops being read (PAUSE_TOTAL), and what their receives still
 * bring is parked in its provided buffer (take_chunk), not queued, until
 * the worker is back under 3/4 of its share (resume_total). So the worker
 * holds at most its share + the one chunk that crossed it (a receive
 * buffer) + what framing that chunk adds (proxy_frame.h rewrites, the
 * filter's own packets). */
static void check_bounds(worker *w, conn *k, uint32_t slot, int s)
{
    if (queued(k, s) > w->cfg->conn_buffer && !(k->paused[s] & PAUSE_CONN)) {
        w->c.limit_conn_buffer[s]++;
        pause_side(w, k, slot, s, PAUSE_CONN);
    }
    if (w->held > w->held_limit && !w->over_total) {
        w->c.limit_total_buffer++;
        w->over_total = true;
        for (uint32_t i = 0; i < w->nconns; i++)
            if (w->conns[i].state == ST_OPEN)
                for (int d = 0; d < 2; d++) pause_side(w, &w->conns[i], i, d, PAUSE_TOTAL);
    }
}

/* Side s sends nothing more: stop reading it, drop what it sent after the
 * last whole packet and whatever of it is parked. */
static void stop_side(worker *w, conn *k, uint32_t slot, int s)
{
    k->eof[s] = 1;
    if (k->recv_armed[s]) cancel_op(w, ud(OP_RECV, (unsigned)s, slot, k->gen));
    w->held -= k->q[s].tail - k->q[s].ready;
    k->q[s].tail = k->q[s].ready;
    for (unsigned i = 0; i < k->npark[s]; i++) buf_return(w, k->parks[s][i].bid);
    w->parked -= k->npark[s];
    k->npark[s] = 0;
}

static void maybe_finish(worker *w, conn *k, uint32_t slot, int s);
static bool release_held(worker *w, conn *k, uint32_t slot);

/* Side `ender` ended the connection (a bad packet from it, a refusing
 * CONNACK, the broker gone): it closes once both queues are flushed, and is
 * counted as ended by that side, not by the side whose queue happened to
 * flush last (before 2026-12-02 a client's malformed packet was counted in
 * closed_by_upstream once the proxy's DISCONNECT to it went out). */
static void start_drain(worker *w, conn *k, int ender)
{
    if (k->drain) return;
    k->drain = 1;
    k->ender = (uint8_t)ender;
    /* A peer that never reads again (its receive window closed on the
     * deliveries before the proxy's last word) would hold the connection
     * and its slot for good: the drain gets the bound a linger has, from
     * now (linger_sweep cuts it). */
    uint32_t ms = w->cfg->linger_ms ? w->cfg->linger_ms : DRAIN_MS_NO_LINGER;
    k->drain_by = now_ns() + (uint64_t)ms * 1000000ull;
    arm_timer(w, &w->linger_t, OP_LINGER_SWEEP, k->drain_by);
}
static void upstream_gone(worker *w, conn *k, uint32_t slot, bool ended);

/* Queues the proxy's own packet telling side s why the connection ends
 * (wm_proxy_error_packet: a CONNACK before the client is acknowledged, else
 * a DISCONNECT with reason) after what is framed for it, and sends it. Side
 * 1 - s must be stopped (stop_side: no partial packet behind the framed
 * bytes). Returns whether it was queued. */
static bool tell(worker *w, conn *k, uint32_t slot, int s, uint8_t reason)
{
    uint8_t pkt[WM_PROXY_ERROR_PACKET_MAX];
    uint32_t n = wm_proxy_error_packet(&k->ss, s, reason, pkt);
    if (!n || !wm_proxy_queue_append(&k->q[1 - s], pkt, n)) return false;
    k->q[1 - s].ready = k->q[1 - s].tail;
    k->told |= (uint8_t)(1u << s);
    w->held += n;
    kick_send(w, k, slot, 1 - s);
    return true;
}

/* Frames what q[s] holds; returns false if side s was stopped by an error. */
static bool frame(worker *w, conn *k, uint32_t slot, int s)
{
    uint32_t held_before = wm_proxy_queue_held(&k->q[0]) + wm_proxy_queue_held(&k->q[1]);
    wm_proxy_frame_result r = wm_proxy_frame(&k->ss, s, &k->q[s]);
    /* A rewritten packet may hold more bytes than were received, a withheld
     * one fewer, and the filter may have queued answers towards side s. */
    w->held = w->held + wm_proxy_queue_held(&k->q[0]) + wm_proxy_queue_held(&k->q[1]) - held_before;
    if (w->held > w->c.held_peak) w->c.held_peak = w->held;
    w->c.packets[s] += r.packets;
    w->c.filter_pings_answered += r.pings_answered;
    w->c.publishes[s] += r.publishes;
    w->c.max_packet_announced[s] += r.rewritten;
    if (k->ss.filter) want_send(w, k, slot, 1 - s);
    /* A held stream is read on until its unframed bytes pass conn_buffer
     * (what is read is looked at for the texts to compile with it). */
    k->held = (uint8_t)(r.held ? k->held | 1u << s : k->held & ~(1u << s));
    if (r.held && k->q[s].tail - k->q[s].ready > w->cfg->conn_buffer) pause_side(w, k, slot, s, PAUSE_HOLD);
    else unpause_side(w, k, slot, s, PAUSE_HOLD);   /* not held, or the pings taken out made room */
    /* No broker to take what the client sends (up_gone): whatever the
     * verdict, its CONNECT gets the CONNACK of an unavailable server and what
     * was framed for the broker is dropped, by upstream_gone, as when a bad
     * packet comes in a later chunk (never read then). Before 2026-12-01 a
     * bad packet in the CONNECT's chunk took the error path below: the
     * CONNECT stayed framed towards the missing broker and the connection
     * never closed (REVIEW7 finding 3). */
    bool gone = k->up_gone && s == WM_PROXY_C2U;
    if (r.verdict == WM_PROXY_FRAME_OK && !gone) return !(r.connack && k->ss.filter) || release_held(w, k, slot);
    if (r.verdict == WM_PROXY_FRAME_TOO_LARGE) w->c.packet_too_large[s]++;
    else if (r.verdict == WM_PROXY_FRAME_NO_ROOM) w->c.filter_failed++;
    else if (r.old_version) w->c.refused_protocol_version++;
    else if (r.verdict != WM_PROXY_FRAME_OK) w->c.malformed[s]++;
    if (r.connect_again) w->c.sent_second_connect++;
    if (r.verdict != WM_PROXY_FRAME_OK && w->cfg->verbose)
        fprintf(stderr, "wirematch-proxy: worker %u: %s from the %s: %s at byte %u of the packet; "
                        "reason code 0x%02x%s, closing\n",
                w->id, r.verdict == WM_PROXY_FRAME_TOO_LARGE ? "packet too large"
                       : r.verdict == WM_PROXY_FRAME_NO_ROOM ? "no room for the proxy's own packets"
                       : r.old_version ? "MQTT 3.1/3.1.1 CONNECT (the proxy is v5-only)"
                       : "malformed packet",
                s == WM_PROXY_C2U ? "client" : "upstream broker",
                r.connect_again ? "second_connect" : wm_mqtt5_err_name(r.err), r.offset,
                r.reason_code, gone && k->ss.connect_seen ? " (not sent: the upstream is gone)" : "");
    if (gone) {
        if (k->ss.connect_seen) upstream_gone(w, k, slot, false);
        if (k->ss.connect_seen || r.verdict == WM_PROXY_FRAME_OK) return false;
    }
    /* The packets before the bad one still reach the peer; the sender gets a
     * CONNACK/DISCONNECT with the reason code after what is queued for it;
     * nothing more is read from either side; then the connection closes. */
    stop_side(w, k, slot, s);
    stop_side(w, k, slot, 1 - s);
    kick_send(w, k, slot, s);
    tell(w, k, slot, s, r.reason_code);
    start_drain(w, k, s);
    maybe_finish(w, k, slot, s);
    return false;
}

/* Side s sent more chunks than a paused side may park (park_max: what the
 * worker holds stays bounded). The proxy ends the connection, so it says
 * why where that can arrive in order: a client that floods (s = C2U) gets
 * DISCONNECT 0x97 Quota exceeded (CONNACK 0x97 if not acknowledged yet)
 * after what is queued for it, what it sent before still goes to the
 * broker, and the connection drains and lingers as after a bad packet. A
 * broker flooding a client that does not read (s = U2C) cannot be told
 * anything in order behind what the client leaves unread: the connection
 * closes, the client's side lingering so that what the kernel holds for it
 * still arrives (FIN, not RST). Before 2026-12-02 both closed at once,
 * nobody told. Counted park_overflow (and the 0x97 in told_clients). */
static void park_overflow(worker *w, conn *k, uint32_t slot, int s)
{
    w->c.park_overflow++;
    if (s == WM_PROXY_U2C || k->drain || k->up_gone) {
        if (w->cfg->linger_ms) k->linger = (uint8_t)(1u << WM_PROXY_C2U);
        close_conn(w, k, slot, NULL);
        return;
    }
    stop_side(w, k, slot, WM_PROXY_C2U);
    stop_side(w, k, slot, WM_PROXY_U2C);
    kick_send(w, k, slot, WM_PROXY_C2U);
    if (tell(w, k, slot, WM_PROXY_C2U, 0x97)) w->c.sent_disconnect_quota++;
    start_drain(w, k, WM_PROXY_C2U);
    maybe_finish(w, k, slot, WM_PROXY_C2U);
}

/* Appends a received chunk to q[s], or parks it behind earlier parked ones
 * (also when side s is paused for a bound: a receive cancelled for it may
 * still bring chunks, which must not grow the queue past it); returns false
 * if it could not be kept and the connection was closed. */
static bool take_chunk(worker *w, conn *k, uint32_t slot, int s, uint16_t bid, uint32_t len)
{
    if (k->npark[s] == 0 && !(k->paused[s] & (PAUSE_CONN | PAUSE_TOTAL)) &&
        wm_proxy_queue_append(&k->q[s], buf_addr(w, bid), len)) {
        buf_return(w, bid);
        w->held += len;
        if (w->held > w->c.held_peak) w->c.held_peak = w->held;
        return true;
    }
    if (k->npark[s] >= w->park_max) {
        buf_return(w, bid);
        park_overflow(w, k, slot, s);
        return false;
    }
    k->parks[s][k->npark[s]++] = (park){ bid, len };
    w->parked++;
    w->c.parked++;
    return true;
}

/* Queues parked chunks of side s one at a time, framing each, while the side
 * would not be paused for a bound: its queue within conn_buffer (queued();
 * the chunk that crosses it is the last, as for a receive), a stream held
 * at a SUBSCRIBE within conn_buffer of unframed bytes, the worker within
 * its share of total_buffer (check_bounds then). Before 2026-12-01 every
 * parked chunk went in at once (up to PARK_MAX): one fast publisher held
 * 5-18 times --conn-buffer (REVIEW6 finding 8). Bytes of a packet not
 * complete yet are not framed, so they do not count: a packet larger than
 * conn_buffer still comes together. The rest waits for what lifts the
 * bound that stopped it (take_in). Returns false if framing stopped the
 * connection. */
static bool unpark(worker *w, conn *k, uint32_t slot, int s)
{
    while (k->npark[s] && w->held <= w->held_limit && queued(k, s) <= w->cfg->conn_buffer &&
           !((k->held & 1u << s) && k->q[s].tail - k->q[s].ready > w->cfg->conn_buffer)) {
        park p = k->parks[s][0];
        if (!wm_proxy_queue_append(&k->q[s], buf_addr(w, p.bid), p.len)) break;
        w->held += p.len;
        if (w->held > w->c.held_peak) w->c.held_peak = w->held;
        buf_return(w, p.bid);
        memmove(k->parks[s], k->parks[s] + 1, (k->npark[s] - 1u) * sizeof(park));
        k->npark[s]--;
        w->parked--;
        if (!frame(w, k, slot, s)) return false;
    }
    return true;
}

/* Something that held side s back is gone: a send completed, a hold ended
 * (compile, reload, CONNACK), the unframed bytes went under the bound. Its
 * parked chunks go in while the bounds allow (unpark; over the worker's
 * share, resume_total takes them), it is read again once none is left, its
 * framed bytes are sent and a side paused for its queue resumes at half of
 * conn_buffer. Every such place runs this: until 2026-12-01 only a send
 * completion unparked, so chunks parked behind a held SUBSCRIBE that the
 * proxy answered itself (refused: nothing sent) waited for good (REVIEW7
 * finding 6). Returns false if framing stopped the connection. */
static bool take_in(worker *w, conn *k, uint32_t slot, int s)
{
    if (k->npark[s] && !(k->paused[s] & PAUSE_TOTAL)) {
        if (!unpark(w, k, slot, s)) return false;
        check_bounds(w, k, slot, s);
        arm_recv(w, k, slot, s);
    }
    want_send(w, k, slot, s);
    if ((k->paused[s] & PAUSE_CONN) && queued(k, s) <= w->cfg->conn_buffer / 2)
        unpause_side(w, k, slot, s, PAUSE_CONN);
    return true;
}

/* What q[s] has framed and not sent yet, for a drain: nothing once there is
 * no socket to send it on (fd[1] after a failed upstream connect), or the
 * connection would wait for it forever. */
static uint32_t unsent(const conn *k, int s)
{
    return k->fd[1 - s] < 0 ? 0 : wm_proxy_queue_pending(&k->q[s]);
}

/* Side s said EOF: once what it sent is flushed, the connection ends (a
 * client's packets held behind the CONNACK still go to the broker first).
 * After an error (drain) both queues must be flushed first. */
static void maybe_finish(worker *w, conn *k, uint32_t slot, int s)
{
    if (k->state != ST_OPEN) return;
    if (k->drain) {
        if (unsent(k, 0) != 0 || unsent(k, 1) != 0) return;
        /* The proxy's last bytes to the client (its own word, the broker's
         * DISCONNECT or refusing CONNACK, deliveries before them), and to a
         * broker it told why, must not be destroyed by a RST: lingering
         * close (above). */
        if (w->cfg->linger_ms) k->linger = (uint8_t)(1u << WM_PROXY_C2U | (k->told & 1u << WM_PROXY_U2C));
        close_conn(w, k, slot, k->stop ? &w->c.closed_at_shutdown
                               : k->ender == WM_PROXY_C2U ? &w->c.closed_by_client : &w->c.closed_by_upstream);
        return;
    }
    if (k->eof[s] && k->npark[s] == 0 && queued(k, s) == 0 && !(k->held & 1u << s)) {
        /* The client ended (its EOF, or its socket failed: client_failed)
         * and its last bytes (its DISCONNECT, say) are in the kernel on the
         * broker's side: closing that socket with deliveries of the broker
         * unread would send RST and drop what is not transmitted yet, so it
         * lingers (the broker closes at once once it reads the FIN). The
         * client's own side needs none: it sent its FIN or failed, nothing
         * of it is left unread. Nor does a broker the client's CONNECT
         * never went to (a client that left before it): nothing to protect. */
        if (s == WM_PROXY_C2U && w->cfg->linger_ms && k->fd[WM_PROXY_U2C] >= 0 && !k->up_gone && k->ss.connect_seen)
            k->linger = (uint8_t)(1u << WM_PROXY_U2C);
        close_conn(w, k, slot, s == WM_PROXY_C2U ? &w->c.closed_by_client : &w->c.closed_by_upstream);
    }
}

/* The client sent its last bytes: EOF, or its socket failed (client_failed).
 * A client that leaves while held waits for no compile: its held SUBSCRIBEs
 * go, what follows them reaches the broker, and the connection ends as the
 * client's (REVIEW6 finding 3). */
static void client_ended(worker *w, conn *k, uint32_t slot)
{
    k->eof[WM_PROXY_C2U] = 1;
    if (k->held & 1u << WM_PROXY_C2U) {
        wm_proxy_filter_client_gone(&k->flt);
        if (frame(w, k, slot, WM_PROXY_C2U)) take_in(w, k, slot, WM_PROXY_C2U);
    }
    maybe_finish(w, k, slot, WM_PROXY_C2U);
}

/* The client's socket failed (a receive or a send error: reset, EPIPE):
 * nothing more goes to it or comes from it, but what it sent before, which
 * the proxy took in (TCP acknowledged it), still goes to the broker, and
 * then the broker's side lingers as after an EOF (maybe_finish). Before
 * 2026-12-02 the connection was closed at once, both sides: what the client
 * sent last and the proxy had not handed to the kernel yet was dropped, and
 * what it had was destroyed by the RST. A connection already ending
 * (drain: told why, or its broker gone) closes as before. */
static void client_failed(worker *w, conn *k, uint32_t slot)
{
    if (k->state != ST_OPEN) return;
    if (k->drain || k->up_gone || k->fd[WM_PROXY_U2C] < 0) {
        /* a connection already ending is counted by the side that ended it
         * (start_drain), as maybe_finish would: a client told that its
         * broker went away may reset before the close (proxy_churn_concurrent
         * counted one such in closed_by_client, where upstream_lost had it) */
        bool by_upstream = k->drain ? k->ender == WM_PROXY_U2C : k->up_gone;
        close_conn(w, k, slot, by_upstream ? &w->c.closed_by_upstream : &w->c.closed_by_client);
        return;
    }
    /* What was for the client is dropped (a send in flight keeps its
     * bytes until it ends), and the broker is no longer read. */
    stop_side(w, k, slot, WM_PROXY_U2C);
    wm_proxy_queue *q = &k->q[WM_PROXY_U2C];
    w->held -= q->tail - (q->head + q->sending);
    q->ready = q->tail = q->head + q->sending;
    client_ended(w, k, slot);
}

/* The broker's CONNACK was framed (proxy_frame.h): the client's packets
 * held behind it are framed now; if it refused the client, they are dropped
 * and the connection ends once the CONNACK is out (the broker closes too,
 * [MQTT-3.2.2-7]). Returns false if framing them stopped the connection. */
static bool release_held(worker *w, conn *k, uint32_t slot)
{
    if (k->ss.connack_refused) {
        stop_side(w, k, slot, WM_PROXY_C2U);
        start_drain(w, k, WM_PROXY_U2C);
        return true;
    }
    /* and chunks parked while the client was paused for what it sent
     * meanwhile (nothing of it was sendable: no send completion takes them) */
    if (!frame(w, k, slot, WM_PROXY_C2U) || !take_in(w, k, slot, WM_PROXY_C2U)) return false;
    check_bounds(w, k, slot, WM_PROXY_C2U);
    maybe_finish(w, k, slot, WM_PROXY_C2U);
    return true;
}

/* The upstream broker takes nothing more: its connect failed, it closed
 * (EOF) or an error ended it. Unless an end already spoke (a DISCONNECT
 * either way, a refusing CONNACK), the client is told after what is queued
 * for it (MQTT 5.0 §4.13: the broker's own DISCONNECT, if any, passed as it
 * was): before its CONNACK, CONNACK 0x88 Server unavailable (§3.2.2.2), so a
 * client of an unreachable broker, or of one that closed before its CONNECT
 * came, learns why instead of seeing a bare close (its CONNECT is read
 * first: the CONNACK answers it); once acknowledged,
 * DISCONNECT 0x80 Unspecified error (§3.14.2.1 lists no 0x88 for
 * DISCONNECT, and the proxy cannot tell a broker's crash from a network
 * fault or a restart). What the client sent that is not on its way is
 * dropped; the connection closes once the rest is flushed. ended: an open
 * upstream connection ended (counted as lost if nobody had spoken). */
static void upstream_gone(worker *w, conn *k, uint32_t slot, bool ended)
{
    const wm_proxy_session *ss = &k->ss;
    bool spoke = ss->disconnect_seen[WM_PROXY_C2U] || ss->disconnect_seen[WM_PROXY_U2C] || ss->connack_refused;
    /* A client that had left first (its DISCONNECT or its EOF came before
     * the broker's close, which answers it) ended the connection: it counts
     * as the client's, and nobody is told 0x80 (proxy_park_hold: A's
     * DISCONNECT, then the broker's close seen before the client's was
     * counted closed_by_upstream). */
    bool client_left = k->eof[WM_PROXY_C2U] || ss->disconnect_seen[WM_PROXY_C2U];
    if (ended && !k->up_gone && !k->drain && !spoke && !client_left) w->c.upstream_lost++;
    k->up_gone = 1;
    stop_side(w, k, slot, WM_PROXY_U2C);
    if (k->state != ST_OPEN || k->drain) return;
    if (!ss->connect_seen && !ss->connack_sent && !k->eof[WM_PROXY_C2U]) {
        /* Nothing to answer yet: the CONNECT is read (what came of it is
         * kept) and frame() answers it, plainly: nothing of it is filtered
         * or recorded. So also when the broker ends a connection it has
         * just accepted (mosquitto at max_connections, a listener
         * restarting) before the CONNECT came: until 2026-12-01 only an
         * unreachable broker's client waited, this one got a bare close
         * (REVIEW7 finding 10). */
        if (k->fd[1] >= 0) close(k->fd[1]);   /* nothing was sent on it; a cancelled receive holds its own reference */
        k->fd[1] = -1;
        if (ss->filter) wm_proxy_filter_reset(&k->flt);
        k->ss.filter = NULL;
        arm_recv(w, k, slot, WM_PROXY_C2U);
        return;
    }
    stop_side(w, k, slot, WM_PROXY_C2U);
    wm_proxy_queue *q = &k->q[WM_PROXY_C2U];
    w->held -= q->tail - (q->head + q->sending);     /* a send in flight keeps its bytes until it ends */
    q->ready = q->tail = q->head + q->sending;
    if (ss->connect_seen && !ss->connack_sent && tell(w, k, slot, WM_PROXY_C2U, 0x88))
        w->c.sent_connack_unavailable++;
    else if (ss->connack_sent && !spoke && !client_left && tell(w, k, slot, WM_PROXY_C2U, 0x80))
        w->c.sent_disconnect_lost++;
    start_drain(w, k, client_left ? WM_PROXY_C2U : WM_PROXY_U2C);
    maybe_finish(w, k, slot, WM_PROXY_U2C);
}

/* ------------------------------------------------------------ clients that owe their CONNECT */

/* A client must send a whole CONNECT within connect_packet_timeout_ms of
 * its accept, else both its connections close without a word (MQTT 5.0
 * §3.1: the first packet is a CONNECT; §4.13: the Server closes the Network
 * Connection; with no CONNECT there is nothing to answer). Before, a client
 * that opened TCP and sent nothing, or part of a CONNECT, held its slot and
 * an upstream connection until it closed. The time counts from when the
 * client is first read: its upstream connect done or failed (bounded by
 * connect_timeout_ms), or, refused for max_conns, its accept. Deadlines are
 * that time + a constant, so they come in the order they are set: one absolute io_uring timeout per worker,
 * for the earliest, armed again by the sweep for the next (at least 1/16 of
 * the timeout later, so a stream of accepts costs at most 16 sweeps per
 * timeout: a client is closed between 1 and 1 1/16 x the timeout). */
static void arm_timer(worker *w, deadline_timer *t, unsigned op, uint64_t at)
{
    if (t->armed) return;
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return;   /* the next deadline set arms it */
    t->ts = (struct __kernel_timespec){ .tv_sec = (long long)(at / 1000000000ull),
                                        .tv_nsec = (long long)(at % 1000000000ull) };
    io_uring_prep_timeout(sqe, &t->ts, 0, IORING_TIMEOUT_ABS);
    io_uring_sqe_set_data64(sqe, op);
    t->armed = true;
}

static void arm_sweep(worker *w, uint64_t at) { arm_timer(w, &w->sweep_t, OP_SWEEP, at); }

static uint64_t connect_deadline(const worker *w)
{
    return now_ns() + (uint64_t)w->cfg->connect_packet_timeout_ms * 1000000ull;
}

static void busy_close(worker *w, busy_slot *b, uint32_t i);

static void sweep(worker *w)
{
    w->sweep_t.armed = false;
    uint64_t now = now_ns(), next = UINT64_MAX;
    for (uint32_t i = 0; i < w->nconns; i++) {
        conn *k = &w->conns[i];
        if (!k->connect_by) continue;
        if (k->ss.connect_seen || k->state != ST_OPEN) {
            k->connect_by = 0;
        } else if (k->connect_by <= now) {
            k->connect_by = 0;
            if (w->cfg->verbose)
                fprintf(stderr, "wirematch-proxy: worker %u: no whole CONNECT within %u ms of accept (%u bytes), "
                                "closing\n", w->id, w->cfg->connect_packet_timeout_ms, wm_proxy_queue_held(&k->q[0]));
            close_conn(w, k, i, &w->c.closed_no_connect);
        } else if (k->connect_by < next) {
            next = k->connect_by;
        }
    }
    for (uint32_t i = 0; i < WM_PROXY_BUSY_SLOTS; i++) {
        busy_slot *b = &w->refused[i];
        if (b->fd < 0 || b->closing) continue;
        if (b->connect_by > now) {
            if (b->connect_by < next) next = b->connect_by;
            continue;
        }
        if (!b->answered) w->c.closed_no_connect++;
        busy_close(w, b, i);
    }
    uint64_t gap = (uint64_t)w->cfg->connect_packet_timeout_ms * (1000000ull / 16);
    if (next != UINT64_MAX && !w->stopping) arm_sweep(w, next > now + gap ? next : now + gap);
}

/* A client beyond max_conns (proxy_busy.h): its CONNECT is read through the
 * worker's provided buffers, kept nowhere, and answered with CONNACK 0x89;
 * the connection closes when the client does, or at its deadline. Returns
 * false if no busy slot is free (the caller closes fd at once). */
static bool busy_take(worker *w, int fd)
{
    uint32_t i = 0;
    while (i < WM_PROXY_BUSY_SLOTS && w->refused[i].fd >= 0) i++;
    if (i == WM_PROXY_BUSY_SLOTS || !w->busy_connack_len) return false;
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return false;
    busy_slot *b = &w->refused[i];
    b->fd = fd;
    b->ops = 1;
    b->answered = b->closing = 0;
    b->connect_by = connect_deadline(w);
    wm_proxy_busy_init(&b->b);
    io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data64(sqe, ud(OP_BUSY_RECV, 0, i, b->gen));
    arm_sweep(w, b->connect_by);
    return true;
}

static void busy_done(worker *w, busy_slot *b)
{
    if (!b->closing || b->ops) return;
    close(b->fd);
    b->fd = -1;
    b->gen++;
    w->accept_paused = false;   /* a descriptor is free: accept again (fds_out) */
}

static void busy_close(worker *w, busy_slot *b, uint32_t i)
{
    (void)i;
    if (b->closing) return;
    b->closing = 1;
    shutdown(b->fd, SHUT_RDWR);
    struct io_uring_sqe *sqe = get_sqe(w);
    if (sqe) {
        io_uring_prep_cancel_fd(sqe, b->fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, OP_CANCEL);
    }
    busy_done(w, b);
}

static void on_busy(worker *w, unsigned op, uint32_t i, uint32_t gen, struct io_uring_cqe *cqe)
{
    bool has_buf = cqe->flags & IORING_CQE_F_BUFFER;
    uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    busy_slot *b = i < WM_PROXY_BUSY_SLOTS ? &w->refused[i] : NULL;
    if (!b || b->fd < 0 || (b->gen & 0xFFFFFF) != gen) {   /* cannot happen: a slot outlives its operations */
        if (has_buf) buf_return(w, bid);
        return;
    }
    int res = cqe->res;
    if (op == OP_BUSY_SEND) {
        b->ops--;
        /* The answer is out: the client sees it, then the end (FIN); what it
         * still sends is read and dropped until it closes. */
        if (res > 0 && !b->closing) shutdown(b->fd, SHUT_WR);
        else busy_close(w, b, i);
        busy_done(w, b);
        return;
    }
    bool more = cqe->flags & IORING_CQE_F_MORE;
    if (!more) b->ops--;
    if (res > 0 && has_buf && !b->answered && !b->closing) {
        wm_proxy_busy_status st = wm_proxy_busy_feed(&b->b, w->cfg->max_packet, buf_addr(w, bid), (uint32_t)res);
        struct io_uring_sqe *sqe = st == WM_PROXY_BUSY_CONNECT ? get_sqe(w) : NULL;
        if (sqe) {
            io_uring_prep_send(sqe, b->fd, w->busy_connack, w->busy_connack_len, MSG_NOSIGNAL);
            io_uring_sqe_set_data64(sqe, ud(OP_BUSY_SEND, 0, i, b->gen));
            b->ops++;
            b->answered = 1;
            w->c.sent_connack_busy++;
        } else if (st != WM_PROXY_BUSY_MORE) {
            busy_close(w, b, i);   /* not a CONNECT (or no SQE for the answer) */
        }
    } else if (res <= 0) {
        busy_close(w, b, i);       /* EOF, error, or out of provided buffers: no retry for a refused client */
    }
    if (has_buf) buf_return(w, bid);   /* nothing of it is kept */
    if (!more && !b->closing) {
        struct io_uring_sqe *sqe = get_sqe(w);
        if (!sqe) {
            busy_close(w, b, i);
        } else {
            io_uring_prep_recv_multishot(sqe, b->fd, NULL, 0, 0);
            sqe->flags |= IOSQE_BUFFER_SELECT;
            sqe->buf_group = BGID;
            io_uring_sqe_set_data64(sqe, ud(OP_BUSY_RECV, 0, i, b->gen));
            b->ops++;
        }
    }
    busy_done(w, b);
}

/* Out of file descriptors: how long a paused worker waits before it
 * accepts again when none of its own connections closes meanwhile (another
 * worker's may have), and how many waiting clients one pause answers. */
#define WM_PROXY_FDS_RETRY_MS 100u
#define FDS_SHED_MAX 64
#define FDS_LOG_NS 10000000000ull

/* Client fd (non-blocking, or one the caller will not read again) gets
 * CONNACK 0x89 Server busy and the close at once, holding no descriptor
 * after: what it sent (its CONNECT) is read and dropped first, so that the
 * close sends FIN, not RST. */
static void busy_now(worker *w, int fd)
{
    uint8_t sink[512];
    for (int i = 0; i < 8 && recv(fd, sink, sizeof sink, MSG_DONTWAIT | MSG_TRUNC) > 0; i++) {}
    if (w->busy_connack_len &&
        send(fd, w->busy_connack, w->busy_connack_len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)w->busy_connack_len)
        w->c.sent_connack_busy++;
    shutdown(fd, SHUT_WR);
    close(fd);
}

/* Clients waiting in the listener's backlog while the worker cannot accept
 * them (no descriptor) would wait for nothing (REVIEW14 finding 2): each
 * gets CONNACK 0x89 Server busy through the worker's spare descriptor, given
 * up for the moment it takes, and the close (busy_now; a client whose
 * CONNECT is still on its way sees the CONNACK, then a reset when it
 * arrives). The multishot accept is not armed (fds_out), so nothing else
 * takes from the listener, which only this worker reads (SO_REUSEPORT):
 * poll says whether accept4 would block. */
static void fds_shed(worker *w)
{
    for (int n = 0; n < FDS_SHED_MAX && w->spare_fd >= 0 && w->busy_connack_len; n++) {
        struct pollfd p = { .fd = w->listen_fd, .events = POLLIN };
        if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return;
        close(w->spare_fd);
        int fd = accept4(w->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            busy_now(w, fd);
            w->c.fds_shed++;
        }
        /* (another thread may have taken the descriptor meanwhile: then the
         * worker has no spare until it can make one, fds_out) */
        w->spare_fd = eventfd(0, EFD_CLOEXEC);
        if (fd < 0) return;
    }
}

/* An accept failed for want of descriptors (EMFILE: RLIMIT_NOFILE; ENFILE:
 * the system's). The connection stays in the backlog, so a multishot accept
 * armed again at once fails again at once: before 2026-12-02 the worker spun
 * so at full CPU, one log line per failure with -v, while the waiting
 * clients got nothing (REVIEW14 finding 2). Now accepting pauses until a
 * connection of the worker closes (finalize, busy_done) or
 * WM_PROXY_FDS_RETRY_MS pass (fds_t), the waiting clients are answered
 * (fds_shed), each failure is counted (limits.fds) and a line is written at
 * most every 10 s, with the failures since the last. */
static void fds_out(worker *w, int err)
{
    w->c.limit_fds++;
    w->fds_unlogged++;
    uint64_t now = now_ns();
    if (!w->fds_logged || now - w->fds_logged >= FDS_LOG_NS) {
        struct rlimit rl = { 0, 0 };
        getrlimit(RLIMIT_NOFILE, &rl);
        fprintf(stderr, "wirematch-proxy: worker %u: accept: %s (RLIMIT_NOFILE %llu, %u connections open here; "
                        "%llu such failures since the last line): accepting pauses until a connection closes, "
                        "waiting clients get CONNACK 0x89 Server busy\n",
                w->id, strerror(err), (unsigned long long)rl.rlim_cur, w->open,
                (unsigned long long)w->fds_unlogged);
        w->fds_logged = now;
        w->fds_unlogged = 0;
    }
    w->accept_paused = true;
    if (w->spare_fd < 0) w->spare_fd = eventfd(0, EFD_CLOEXEC);
    if (!w->accept_armed) fds_shed(w);
    arm_timer(w, &w->fds_t, OP_FDS_RETRY, now + WM_PROXY_FDS_RETRY_MS * 1000000ull);
}

static void on_connect(worker *w, conn *k, uint32_t slot, int res);

static void on_accept(worker *w, struct io_uring_cqe *cqe)
{
    if (!(cqe->flags & IORING_CQE_F_MORE)) w->accept_armed = false;
    int fd = cqe->res;
    if (fd == -EMFILE || fd == -ENFILE) {
        /* a multishot accept that goes on after it would fail the same way */
        if (w->accept_armed) cancel_op(w, OP_ACCEPT);
        fds_out(w, -fd);
        return;
    }
    if (fd < 0) {
        if (fd != -ECANCELED && w->cfg->verbose)
            fprintf(stderr, "wirematch-proxy: worker %u: accept: %s\n", w->id, strerror(-fd));
        return;
    }
    if (w->stopping) { close(fd); return; }
    if (w->free_head == UINT32_MAX) {
        w->c.limit_conns++;
        if (!busy_take(w, fd)) close(fd);
        return;
    }
    /* A socket for the broker that cannot be made was closed unanswered
     * before 2026-12-02 (REVIEW14 finding 2). Out of descriptors (the accept
     * took the last one) the client is told CONNACK 0x89 Server busy after
     * its CONNECT, as one beyond --max-conns (a busy slot; else at once), and
     * accepting pauses (fds_out): the limit is the proxy's, the broker may be
     * fine. Any other failure makes the broker unreachable for this client:
     * admitted, its CONNECT read and answered CONNACK 0x88 Server unavailable
     * (on_connect), as the help text promises. */
    int up = socket(w->cfg->upstream_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int up_err = up < 0 ? errno : 0;
    if (up < 0) {
        w->c.upstream_socket_failed++;
        if (w->cfg->verbose)
            fprintf(stderr, "wirematch-proxy: worker %u: socket for the upstream: %s\n", w->id, strerror(up_err));
    }
    if (up < 0 && (up_err == EMFILE || up_err == ENFILE)) {
        w->c.upstream_connect_failed++;   /* not admitted: not in accepted */
        if (!busy_take(w, fd)) busy_now(w, fd);
        w->c.fds_shed++;
        if (w->accept_armed) cancel_op(w, OP_ACCEPT);
        fds_out(w, up_err);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (up >= 0) setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    w->c.conns_accepted++;
    uint32_t slot = w->free_head;
    conn *k = &w->conns[slot];
    w->free_head = k->next_free;
    k->fd[0] = fd;
    k->fd[1] = up;
    k->state = ST_CONNECTING;
    k->ops = 0;
    for (int s = 0; s < 2; s++) {
        k->recv_armed[s] = k->paused[s] = k->eof[s] = k->slow[s] = k->again[s] = k->sent_on[s] = 0;
        k->read_wake[s] = 0;
        k->inline_tag[s] = 0;
        k->npark[s] = 0;
    }
    k->drain = k->up_gone = k->stop = 0;
    k->drain_by = 0;
    k->told = k->linger = 0;
    k->connect_by = 0;   /* set once the client is read (on_connect) */
    wm_proxy_session_init(&k->ss, w->cfg->max_packet);
    if (w->cfg->spatial) {
        wm_proxy_filter_init(&k->flt, &w->fsh, &w->c);
        k->ss.filter = &k->flt;
        k->ss.queues = k->q;
        k->ss.scratch = w->scratch;
        k->ss.scratch_cap = w->scratch_cap;
    }
    w->open++;
    if (w->open > w->c.conns_peak) w->c.conns_peak = w->open;
    if (up < 0) {
        on_connect(w, k, slot, -up_err);
        return;
    }
    /* The connect and its timeout are linked: both in one submission. */
    if (io_uring_sq_space_left(&w->ring) < 2) {
        int n = io_uring_submit(&w->ring);
        w->c.submits++;
        if (n > 0) w->c.sqes += (uint64_t)n;
    }
    struct io_uring_sqe *sqe = io_uring_sq_space_left(&w->ring) >= 2 ? get_sqe(w) : NULL;
    if (!sqe) { close_conn(w, k, slot, &w->c.upstream_connect_failed); return; }
    io_uring_prep_connect(sqe, up, (const struct sockaddr *)&w->cfg->upstream_addr, w->cfg->upstream_len);
    io_uring_sqe_set_data64(sqe, ud(OP_CONNECT, 0, slot, k->gen));
    sqe->flags |= IOSQE_IO_LINK;
    sqe = get_sqe(w);
    io_uring_prep_link_timeout(sqe, &w->connect_ts, 0);
    io_uring_sqe_set_data64(sqe, OP_CANCEL);   /* its own completion says nothing the connect's does not */
    k->ops++;
}

static void on_connect(worker *w, conn *k, uint32_t slot, int res)
{
    if (k->state != ST_CONNECTING) return;
    /* The client is read from now on (its broker reached or not): its
     * CONNECT is due within connect_packet_timeout_ms (sweep). */
    k->connect_by = connect_deadline(w);
    arm_sweep(w, k->connect_by);
    if (res < 0) {
        /* -ECANCELED: the linked timeout fired (a close cancels only a
         * connection no longer ST_CONNECTING). */
        if (w->cfg->verbose)
            fprintf(stderr, "wirematch-proxy: worker %u: upstream %s: %s\n", w->id, w->cfg->upstream_text,
                    res == -ECANCELED ? "connect timed out" : strerror(-res));
        w->c.upstream_connect_failed++;
        if (res == -ECONNREFUSED) w->c.upstream_refused++;
        if (res == -ECANCELED || res == -ETIMEDOUT) w->c.upstream_timed_out++;
        /* The client's CONNECT is read and answered (upstream_gone). */
        k->state = ST_OPEN;
        upstream_gone(w, k, slot, false);
        return;
    }
    k->state = ST_OPEN;
    if (w->over_total) k->paused[0] = k->paused[1] = PAUSE_TOTAL;   /* resume_total reads them */
    arm_recv(w, k, slot, 0);
    arm_recv(w, k, slot, 1);
}

static void on_recv(worker *w, conn *k, uint32_t slot, int s, struct io_uring_cqe *cqe)
{
    bool more = cqe->flags & IORING_CQE_F_MORE;
    if (!more) k->recv_armed[s] = 0;
    int res = cqe->res;
    bool later = false;
    if (!k->recv_multi[s] && res > 0) {
        bool first = k->read_wake[s] != w->wakes;
        k->read_wake[s] = w->wakes;
        k->again[s] = 1;
        if (first) w->reread = true;
        else later = w->n_later < w->nconns * 2;
    } else {
        k->again[s] = 0;
    }
    if (res > 0) {
        uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        w->c.recv_bytes[s] += (uint64_t)res;
        w->c.recvs++;
        ack_at_read(w, k, s);
        if (k->state != ST_OPEN || k->eof[s]) {
            buf_return(w, bid);
        } else if (take_chunk(w, k, slot, s, bid, (uint32_t)res) && frame(w, k, slot, s) &&
                   take_in(w, k, slot, s)) {
            check_bounds(w, k, slot, s);
        }
    } else if (res == 0) {
        if (k->state == ST_OPEN && !k->eof[s] && s == WM_PROXY_U2C) {
            upstream_gone(w, k, slot, true);
        } else if (k->state == ST_OPEN && !k->eof[s]) {
            client_ended(w, k, slot);
        }
    } else if (res == -ENOBUFS) {
        w->c.recv_nobufs++;
        if (!more && k->state == ST_OPEN && w->n_nobufs < w->nconns * 2)
            w->nobufs[w->n_nobufs++] = (slot_ref){ slot, k->gen, (uint8_t)s };
        return;
    } else if (res == -EINVAL) {
        fprintf(stderr, "wirematch-proxy: multishot receive refused (EINVAL): it needs Linux 6.0 or later\n");
        atomic_store(&g_fatal, 1);
        close_conn(w, k, slot, NULL);
    } else if (res != -ECANCELED && s == WM_PROXY_U2C && k->state == ST_OPEN && !k->up_gone) {
        upstream_gone(w, k, slot, true);
    } else if (res != -ECANCELED && s == WM_PROXY_C2U) {
        client_failed(w, k, slot);
    } else if (res != -ECANCELED) {
        close_conn(w, k, slot, s == WM_PROXY_C2U ? &w->c.closed_by_client : &w->c.closed_by_upstream);
    }
    if (!more && k->state == ST_OPEN) {
        w->c.recv_rearm++;
        if (later) w->later[w->n_later++] = (slot_ref){ slot, k->gen, (uint8_t)s };
        else arm_recv(w, k, slot, s);
    }
}

/* The receives left for this wake-up (see arm_recv). */
static void arm_later(worker *w)
{
    for (uint32_t i = 0; i < w->n_later; i++) {
        slot_ref r = w->later[i];
        conn *k = &w->conns[r.slot];
        if (k->gen == r.gen) arm_recv(w, k, r.slot, r.side);
    }
    if (w->n_later) w->reread = true;
    w->n_later = 0;
}

static void on_send(worker *w, conn *k, uint32_t slot, int s, int res)
{
    if (k->state != ST_OPEN) return;
    if (res < 0 && s == WM_PROXY_C2U) {
        /* The upstream is gone: the client is told (once), the rest of its
         * stream dropped. */
        k->q[s].sending = 0;
        w->held -= wm_proxy_queue_held(&k->q[s]);
        k->q[s].head = k->q[s].ready = k->q[s].tail = 0;
        upstream_gone(w, k, slot, true);
        maybe_finish(w, k, slot, WM_PROXY_U2C);
        return;
    }
    if (res < 0) {
        /* The client is gone. */
        k->q[s].sending = 0;
        client_failed(w, k, slot);
        return;
    }
    wm_proxy_queue *q = &k->q[s];
    if ((uint32_t)res < q->sending) w->c.sends_short++;
    w->c.bytes[s] += (uint64_t)res;
    w->held -= (uint64_t)res;
    wm_proxy_queue_sent(q, (uint32_t)res);
    if (!take_in(w, k, slot, s)) return;
    maybe_finish(w, k, slot, s);
    /* The client read: a PINGREQ held back for want of room for the
     * PINGRESP the proxy owes it may be answered now (proxy_frame.h). */
    if (s == WM_PROXY_U2C && k->state == ST_OPEN && k->ss.pings_wait && (k->held & 1u << WM_PROXY_C2U) &&
        frame(w, k, slot, WM_PROXY_C2U) && take_in(w, k, slot, WM_PROXY_C2U))
        check_bounds(w, k, slot, WM_PROXY_C2U);
}

static void stop_worker(worker *w)
{
    w->stopping = true;
    w->linger_cap = now_ns() + STOP_GRACE_NS - STOP_LINGER_MARGIN_NS;
    for (uint32_t i = 0; i < WM_PROXY_BUSY_SLOTS; i++)
        if (w->refused[i].fd >= 0) busy_close(w, &w->refused[i], i);
    if (w->listen_fd >= 0) {
        shutdown(w->listen_fd, SHUT_RDWR);
        struct io_uring_sqe *sqe = get_sqe(w);
        if (sqe) {
            io_uring_prep_cancel_fd(sqe, w->listen_fd, IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(sqe, OP_CANCEL);
        }
    }
    for (uint32_t i = 0; i < w->nconns; i++) {
        conn *k = &w->conns[i];
        if (k->state == ST_OPEN && k->drain) continue;   /* closes once flushed, already told why */
        if (k->state == ST_OPEN && k->ss.connack_sent && !k->ss.connack_refused && !k->up_gone) {
            /* An acknowledged client is told the server is shutting down
             * (MQTT 5.0 §3.14.2.1, 0x8B) after what is framed for it, and what
             * it sent goes to the broker first; the loop waits for that up to
             * STOP_GRACE_NS. The broker sees the network connection close
             * without DISCONNECT: the client's Will is its to publish
             * (§3.1.2.5), as for any client whose connection is lost. */
            k->stop = 1;
            stop_side(w, k, i, WM_PROXY_C2U);
            stop_side(w, k, i, WM_PROXY_U2C);
            if (!k->ss.disconnect_seen[WM_PROXY_C2U] && !k->ss.disconnect_seen[WM_PROXY_U2C] &&
                tell(w, k, i, WM_PROXY_C2U, 0x8B))
                w->c.sent_disconnect_shutdown++;
            kick_send(w, k, i, WM_PROXY_C2U);
            k->drain = 1;
            maybe_finish(w, k, i, WM_PROXY_C2U);
        } else if (k->state == ST_CONNECTING || k->state == ST_OPEN) {
            close_conn(w, k, i, &w->c.closed_at_shutdown);
        }
    }
}

static void arm_wake(worker *w);

/* One operation of connection k ended (last: its final completion). */
static void op_done(worker *w, conn *k, uint32_t slot, bool last)
{
    if (last) k->ops--;
    if (k->state == ST_CLOSING && k->ops == 0) finalize(w, k, slot);
}

static void handle(worker *w, struct io_uring_cqe *cqe)
{
    uint64_t u = io_uring_cqe_get_data64(cqe);
    unsigned op = u & 0xFF, side = (u >> 8) & 0xFF;
    uint32_t slot = (uint32_t)(u >> 16) & 0xFFFFFF, gen = (uint32_t)(u >> 40);
    switch (op) {
    case OP_ACCEPT: on_accept(w, cqe); return;
    case OP_WAKE:
        w->wake_armed = false;
        if (atomic_load(&g_stop)) stop_worker(w);
        else arm_wake(w);   /* woken for a reload: tables_poll sees it */
        w->woken = true;    /* ... or for a saved reservation (wm_proxy_registry_sid_wake) */
        return;
    case OP_CANCEL: return;
    case OP_SWEEP: sweep(w); return;
    case OP_LINGER_SWEEP: linger_sweep(w, true); return;
    case OP_FDS_RETRY:
        w->fds_t.armed = false;
        w->accept_paused = false;   /* armed again by the loop; failing again pauses again */
        return;
    case OP_BUSY_RECV:
    case OP_BUSY_SEND: on_busy(w, op, slot, gen, cqe); return;
    default: break;
    }
    if (slot >= w->nconns) return;
    conn *k = &w->conns[slot];
    if ((k->gen & 0xFFFFFF) != gen || k->state == ST_FREE) {
        /* Cannot happen (slots outlive their operations); a buffer must not leak. */
        if (cqe->flags & IORING_CQE_F_BUFFER) buf_return(w, (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT));
        return;
    }
    bool last = !(op == OP_RECV && (cqe->flags & IORING_CQE_F_MORE));
    switch (op) {
    case OP_CONNECT: on_connect(w, k, slot, cqe->res); break;
    case OP_LINGER: on_linger(w, k, slot, (int)side, cqe->res); break;
    case OP_RECV: on_recv(w, k, slot, (int)side, cqe); break;
    case OP_SEND:
        k->slow[side] = 0;   /* the peer took what waited for room: inline again */
        on_send(w, k, slot, (int)side, cqe->res);
        break;
    case OP_SEND_INLINE: {
        /* An inline send that could not finish: what it wrote (none for
         * EAGAIN) is sent, the rest goes as an ordinary send. */
        int res = cqe->res == -EAGAIN ? 0 : cqe->res;
        k->inline_tag[side] = 0;
        if (res >= 0) k->slow[side] = 1;
        on_send(w, k, slot, (int)side, res);
        break;
    }
    default: break;
    }
    op_done(w, k, slot, last);
}

/* Whether completing an unsettled inline send has consequences of its own
 * (on_send: a connection to close once flushed, parked chunks to take in, a
 * side to resume reading, or more framed bytes queued behind it since it was
 * kicked, e.g. a held SUBSCRIBE released at a compile's end: nothing else
 * may come to wake the worker, the peer waits for exactly those): then the enter that submits it must not also
 * wait, or they would wait for an unrelated completion. Otherwise the
 * completion only frees the queue, and the next receive brings the wake-up
 * that settles it. */
static bool inline_prompt(const worker *w)
{
    if (w->over_total) return true;
    for (uint32_t i = 0; i < w->n_inl; i++) {
        const conn *k = &w->conns[w->inl[i].slot];
        int s = w->inl[i].side;
        if (k->inline_tag[s] == w->inl[i].tag &&
            (k->state != ST_OPEN || k->npark[s] || k->paused[s] || k->eof[s] || k->drain ||
             wm_proxy_queue_pending(&k->q[s]) > k->q[s].sending))
            return true;
    }
    return false;
}

/* The inline sends submitted before the last io_uring_enter that consumed
 * the whole SQ (n of them, the first in w->inl) and that posted no failure
 * among the completions just handled wrote everything: complete them. */
static void settle_inline(worker *w, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        inline_ref r = w->inl[i];
        conn *k = &w->conns[r.slot];
        if (k->inline_tag[r.side] != r.tag) continue;   /* failed: handled as a completion */
        k->inline_tag[r.side] = 0;
        w->c.sends_inline++;
        on_send(w, k, r.slot, r.side, (int)k->q[r.side].sending);
        op_done(w, k, r.slot, true);
    }
    memmove(w->inl, w->inl + n, (w->n_inl - n) * sizeof *w->inl);
    w->n_inl -= n;
}

static void arm_accept(worker *w)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return;
    io_uring_prep_multishot_accept(sqe, w->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, OP_ACCEPT);
    w->accept_armed = true;
    w->c.accept_rearm++;
}

static void arm_wake(worker *w)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe) return;
    io_uring_prep_read(sqe, w->wake_fd, &w->wake_val, sizeof w->wake_val, 0);
    io_uring_sqe_set_data64(sqe, OP_WAKE);
    w->wake_armed = true;
}

/* The worker is back under 3/4 of its share of total_buffer: every side is
 * read again, its parked chunks queued first. If that takes the worker over
 * its share again, check_bounds pauses everything again and the rest waits. */
static void resume_total(worker *w)
{
    w->over_total = false;
    for (uint32_t i = 0; i < w->nconns && !w->over_total; i++) {
        conn *k = &w->conns[i];
        for (int s = 0; s < 2 && !w->over_total; s++) {
            if (k->state != ST_OPEN || !(k->paused[s] & PAUSE_TOTAL)) continue;
            if (k->npark[s]) {
                if (!unpark(w, k, i, s)) continue;
                want_send(w, k, i, s);
                check_bounds(w, k, i, s);
                if (w->over_total) break;
            }
            unpause_side(w, k, i, s, PAUSE_TOTAL);
        }
    }
}

/* Live telemetry (SIGUSR1): the main thread asked for the counters (a new
 * g_snap_seq, and a wake-up): the worker copies them between batches, where
 * they are whole, so the main thread never reads what a worker writes. The
 * gauges set at exit are set here as of now. */
static void snapshot(worker *w)
{
    uint64_t seq = atomic_load_explicit(&g_snap_seq, memory_order_acquire);
    if (seq == w->snap_seen) return;
    w->snap_seen = seq;
    w->c.conns_open = w->open;
    w->c.held_at_exit = w->held;
    w->snap = w->c;
    atomic_store_explicit(&w->snap_done, seq, memory_order_release);
}

/* After a batch: publish returned buffers, retry receives that ran out of
 * them, resume sides paused for the worker's total. */
static void after_batch(worker *w)
{
    /* Second reads armed (arm_recv): their data leaves with this batch's in
     * one send per socket, after the enter that takes them. */
    if (!w->reread) kick_wanted(w);
    buf_publish(w);
    if (w->n_nobufs && w->bufs_freed) {
        uint32_t n = w->n_nobufs;
        w->n_nobufs = 0;
        for (uint32_t i = 0; i < n; i++) {
            slot_ref r = w->nobufs[i];
            conn *k = &w->conns[r.slot];
            if (k->gen == r.gen && k->state == ST_OPEN) {
                w->c.recv_rearm++;
                arm_recv(w, k, r.slot, r.side);
            }
        }
    }
    w->bufs_freed = false;
    if (w->over_total && w->held <= w->held_limit / 4 * 3) resume_total(w);
}

/* Streams held at a packet waiting for a compile (a client's SUBSCRIBE, the
 * broker's deliveries to a resumed session) go on (or hold again, for a
 * text of the next compile). */
static void resume_held(worker *w)
{
    for (uint32_t i = 0; i < w->nconns; i++) {
        conn *k = &w->conns[i];
        for (int s = 0; s < 2; s++) {
            if (!(k->held & 1u << s) || k->state != ST_OPEN) continue;
            if (!frame(w, k, i, s) || !take_in(w, k, i, s)) continue;
            check_bounds(w, k, i, s);
            maybe_finish(w, k, i, s);
        }
    }
    /* now, not at the end of the next batch of completions (unless second
     * reads are armed: that batch comes at once, see after_batch) */
    if (!w->reread) kick_wanted(w);
}

/* Reloaded tables (SIGHUP, dataplane/proxy_reload.h): swapped in as a whole,
 * and every connection's records resolved / compiled again. */
static void tables_poll(worker *w)
{
    const wm_proxy_tableset *ts = wm_proxy_tables_poll(w->cfg->tables, &w->tables_gen);
    if (!ts) return;
    wm_proxy_content old;
    uint32_t nbhd_gone = 0, xpath_gone = 0;
    wm_proxy_filter_reload_begin(&w->fsh, ts->sp, ts->schemas, &old);
    for (uint32_t i = 0; i < w->nconns; i++)
        if (w->conns[i].ss.filter) wm_proxy_filter_retable(&w->conns[i].flt, &nbhd_gone, &xpath_gone);
    wm_proxy_filter_reload_end(&w->fsh, &old);
    for (uint32_t i = 0; i < w->nconns; i++)   /* awaited texts went with the table */
        w->conns[i].ss.peeked[WM_PROXY_C2U] = w->conns[i].ss.peeked[WM_PROXY_U2C] = 0;
    resume_held(w);
    w->c.filter_nbhd_gone += nbhd_gone;
    w->c.filter_xpath_gone += xpath_gone;
    wm_proxy_tables_ack(w->cfg->tables, w->id, w->tables_gen, nbhd_gone, xpath_gone);
}

/* A worker that cannot start: the reason on stderr and in w->why, which
 * wm_proxy_run hands to its caller (the --summary FILE then says why rather
 * than giving counters of a run that never was). */
#define START_FAIL(w, ...)                                                      \
    (snprintf((w)->why, sizeof (w)->why, __VA_ARGS__),                         \
     fprintf(stderr, "wirematch-proxy: %s\n", (w)->why), (w)->err = 1)

static void *worker_main(void *arg)
{
    worker *w = arg;
    /* Ring flags, best first: one issuer with task work deferred to our own
     * io_uring_enter (6.1+), else cooperative task work (5.19+), else none. */
    static const unsigned flag_sets[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN, 0 };
    int rc = -EINVAL;
    for (unsigned i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = flag_sets[i] | IORING_SETUP_SUBMIT_ALL;
        p.cq_entries = w->cfg->ring_entries * 4;
        p.flags |= IORING_SETUP_CQSIZE;
        rc = io_uring_queue_init_params(w->cfg->ring_entries, &w->ring, &p);
        if (rc == 0) break;
    }
    if (rc < 0) {
        START_FAIL(w, "worker %u: io_uring_queue_init: %s", w->id, strerror(-rc));
    } else {
        w->ring_ok = true;
        /* The ring's fd registered: io_uring_enter skips the fd lookup
         * (5.18+; without it the plain fd is used, same behaviour). */
        io_uring_register_ring_fd(&w->ring);
        struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)w->br, .ring_entries = w->nbufs, .bgid = BGID };
        rc = io_uring_register_buf_ring(&w->ring, &reg, 0);
        if (rc < 0) {
            START_FAIL(w, "provided buffer rings unavailable (%s): they need Linux 5.19 or later", strerror(-rc));
        } else {
            io_uring_buf_ring_init(w->br);
            for (uint32_t i = 0; i < w->nbufs; i++) buf_return(w, (uint16_t)i);
            buf_publish(w);
        }
    }
    if (!w->err && w->cfg->registry && wm_proxy_registry_prefilter(w->cfg->registry) &&
        !(w->fsh.rd = wm_proxy_registry_reader(w->cfg->registry, &w->fsh.rd_gen))) {
        START_FAIL(w, "worker %u: cannot register as a reader of the subscription registry", w->id);
    }
    pthread_barrier_wait(w->ready);
    if (w->err || atomic_load(&g_fatal)) {
        if (w->fsh.rd) wm_matcher_reader_free(w->fsh.rd);
        w->fsh.rd = NULL;
        return NULL;
    }

    arm_accept(w);
    arm_wake(w);
    uint64_t stop_deadline = 0;
    wm_proxy_pace_init(&w->pace);
    w->rate_t0 = w->mode_wall0 = now_ns();
    w->mode_cpu0 = thread_cpu_ns();
    for (;;) {
        if (w->stopping && w->open == 0 && !w->accept_armed) break;
        if (w->stopping && !stop_deadline) stop_deadline = now_ns() + STOP_GRACE_NS;
        if (stop_deadline && now_ns() > stop_deadline) break;
        if (w->stopping) linger_sweep(w, false);
        if (!w->stopping && !w->accept_armed && !w->accept_paused) arm_accept(w);
        if (w->cfg->tables) tables_poll(w);
        if ((w->fsh.content && wm_proxy_content_poll(w->fsh.content)) || w->woken) resume_held(w);
        w->woken = false;
        if (w->fsh.content) wm_proxy_content_kick(w->fsh.content);   /* what this turn changed, in one compile */
        int n;
        unsigned queued = io_uring_sq_ready(&w->ring);
        uint32_t inl_before = w->n_inl;   /* the inline sends this enter submits */
        struct io_uring_cqe *cq;
        /* A reader blocked in the kernel must not hold grace periods back. */
        /* (after tables_poll: a reload replaces the reader) */
        wm_matcher_reader *rd = w->fsh.rd;
        if (rd) wm_matcher_reader_offline(rd);
        bool timed = !stop_deadline && w->busy && w->cfg->batch_wait_ns && !w->parked;
        /* Only a timed wait may leave receives unarmed (it ends anyway). */
        if (!timed) arm_later(w);
        bool prompt = w->reread || (w->n_inl && inline_prompt(w));
        w->reread = false;
        if (prompt) {
            n = io_uring_submit_and_wait(&w->ring, 0);
        } else if (stop_deadline) {
            struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100000000 };
            n = io_uring_submit_and_wait_timeout(&w->ring, &cq, 1, &ts, NULL);
        } else if (timed) {
            /* (Not while chunks are parked: a peer is slower than its sender,
             * and a wait would let a burst of receives outrun the pause.) */
            /* Asking for a full CQ makes the timeout the only wake-up (short
             * of an overflowing CQ): completions gather for batch_wait_ns. */
            struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = (long long)wm_proxy_pace_wait_ns(&w->pace, w->cfg->batch_wait_ns) };
            n = io_uring_submit_and_wait_timeout(&w->ring, &cq, w->ring.cq.ring_entries, &ts, NULL);
            w->c.batched_waits++;
        } else {
            n = io_uring_submit_and_wait(&w->ring, 1);
        }
        if (rd) wm_matcher_reader_online(rd);
        /* All SQEs reached the kernel, the inline sends among them too (an
         * enter that stopped short, e.g. EINTR, leaves them for the next). */
        bool sent_all = io_uring_sq_ready(&w->ring) == 0;
        if (!prompt) {
            w->wakes++;
            arm_later(w);
        }
        w->c.submits++;
        if (!prompt) w->c.mode_wakeups[w->busy]++;
        if (n >= 0 || n == -ETIME) w->c.sqes += queued;
        if (n < 0 && n != -EINTR && n != -ETIME && n != -EAGAIN && n != -EBUSY) {
            fprintf(stderr, "wirematch-proxy: worker %u: io_uring_enter: %s\n", w->id, strerror(-n));
            atomic_store(&g_fatal, 1);
            break;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        uint64_t frames0 = w->c.packets[0] + w->c.packets[1];
        io_uring_for_each_cqe(&w->ring, head, cqe) {
            handle(w, cqe);
            seen++;
        }
        io_uring_cq_advance(&w->ring, seen);
        w->c.cqes += seen;
        if (sent_all) settle_inline(w, inl_before);
        bool was_busy = w->busy;
        update_rate(w, w->c.packets[0] + w->c.packets[1] - frames0);
        if (w->busy && !was_busy && w->cfg->batch_wait_ns) end_multishot(w);
        after_batch(w);
        snapshot(w);
        if (w->fsh.rd) wm_matcher_quiescent(w->fsh.rd);
        if (atomic_load(&g_fatal) && !w->stopping) stop_worker(w);
    }
    account_mode(w);
    /* Connections left after the grace period leave the registry from this
     * thread, while its reader still exists. */
    for (uint32_t i = 0; i < w->nconns; i++)
        if (w->conns[i].ss.filter) wm_proxy_filter_reset(&w->conns[i].flt);
    if (w->fsh.rd) wm_matcher_reader_free(w->fsh.rd);
    w->fsh.rd = NULL;
    w->c.conns_open = w->open;
    w->c.held_at_exit = w->held;
    return NULL;
}

/* ------------------------------------------------------------ setup */

static int make_listener(const wm_proxy_config *cfg)
{
    int fd = socket(cfg->listen_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)&cfg->listen_addr, cfg->listen_len) < 0 || listen(fd, 1024) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int worker_alloc(worker *w, const wm_proxy_config *cfg, unsigned id)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    w->cfg = cfg;
    w->listen_fd = w->wake_fd = w->test_done_fd = -1;
    /* the descriptor given up to answer a client when none is left (fds_shed) */
    w->spare_fd = eventfd(0, EFD_CLOEXEC);
    w->linger_cap = UINT64_MAX;
    /* Test hook (tests/integration/proxy_linger_ends.sh): a lower park bound,
     * so that a real client's burst overflows it (at 256 x 16 KiB a test
     * cannot make one happen on demand). Not for production use. */
    const char *pm = getenv("WM_PROXY_TEST_PARK_MAX");
    w->park_max = pm && atoi(pm) > 0 && atoi(pm) < PARK_MAX ? (unsigned)atoi(pm) : PARK_MAX;
    w->discard = malloc(LINGER_BUF);
    for (uint32_t i = 0; i < WM_PROXY_BUSY_SLOTS; i++) w->refused[i].fd = -1;
    w->nconns = (cfg->max_conns + cfg->threads - 1) / cfg->threads;
    w->held_limit = cfg->total_buffer / cfg->threads;
    w->connect_ts = (struct __kernel_timespec){ .tv_sec = cfg->connect_timeout_ms / 1000,
                                                .tv_nsec = (long long)(cfg->connect_timeout_ms % 1000) * 1000000 };
    w->nbufs = cfg->recv_buf_count;
    w->bufsz = cfg->recv_buf_size;
    w->br_bytes = (w->nbufs * sizeof(struct io_uring_buf) + 4095) & ~(size_t)4095;
    w->br = mmap(NULL, w->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    w->bufs = mmap(NULL, (size_t)w->nbufs * w->bufsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* Queue memory is reserved for every slot but only touched pages cost. */
    w->qcap = (size_t)cfg->max_packet + cfg->conn_buffer + cfg->recv_buf_size;
    w->qmem_bytes = (size_t)w->nconns * 2 * w->qcap;
    w->qmem = mmap(NULL, w->qmem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    w->conns = calloc(w->nconns, sizeof(conn));
    w->nobufs = calloc((size_t)w->nconns * 2, sizeof(slot_ref));
    w->kicks = calloc((size_t)w->nconns * 2, sizeof(slot_ref));
    w->later = calloc((size_t)w->nconns * 2, sizeof(slot_ref));
    /* One inline send per queue in flight, plus the failed ones of the
     * current batch; a full list only means ordinary sends. */
    w->inl_cap = w->nconns * 4;
    w->inl = calloc(w->inl_cap, sizeof(inline_ref));
    w->fsh = (wm_proxy_filter_shared){ .sp = cfg->spatial, .max_records = cfg->max_records, .reg = cfg->registry,
                                       .sid_epoch = cfg->sid_epoch, .max_texts = cfg->max_texts };
    if (cfg->schemas) {
        if (wm_proxy_content_open(&w->content, cfg->schemas)) {
            START_FAIL(w, "worker %u: cannot reserve memory", id);
            return -1;
        }
        w->fsh.content = &w->content;
        w->content.cnt = &w->c;
        w->content.mem_cap = cfg->exi_mem_cap;
        /* four connections' worth of new texts may await a compile at once */
        w->content.max_awaiting = cfg->max_texts > UINT32_MAX / 4 ? UINT32_MAX : 4 * cfg->max_texts;
    }
    if (cfg->spatial) {
        w->scratch_cap = cfg->max_packet + 65546 + 16;
        w->scratch = malloc(w->scratch_cap);
        if (!w->scratch) {
            START_FAIL(w, "worker %u: cannot reserve memory", id);
            return -1;
        }
    }
    if (w->br == MAP_FAILED || w->bufs == MAP_FAILED || w->qmem == MAP_FAILED || !w->conns || !w->nobufs || !w->kicks || !w->inl || !w->later || !w->discard) {
        START_FAIL(w, "worker %u: cannot reserve memory", id);
        return -1;
    }
    wm_mqtt5_packet connack = { .type = WM_MQTT5_CONNACK, .reason_code = 0x89 };   /* Server busy, §3.2.2.2 */
    size_t clen;
    if (wm_mqtt5_encode(&connack, w->busy_connack, sizeof w->busy_connack, &clen) == WM_MQTT5_ENC_OK)
        w->busy_connack_len = (uint32_t)clen;
    w->free_head = UINT32_MAX;
    for (uint32_t i = w->nconns; i-- > 0;) {
        conn *k = &w->conns[i];
        k->fd[0] = k->fd[1] = -1;
        wm_proxy_queue_init(&k->q[0], w->qmem + (size_t)i * 2 * w->qcap, (uint32_t)w->qcap);
        wm_proxy_queue_init(&k->q[1], w->qmem + ((size_t)i * 2 + 1) * w->qcap, (uint32_t)w->qcap);
        k->next_free = w->free_head;
        w->free_head = i;
    }
    w->listen_fd = make_listener(cfg);
    if (w->listen_fd < 0) {
        START_FAIL(w, "listen on %s: %s", cfg->listen_text, strerror(errno));
        return -1;
    }
    w->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (w->wake_fd < 0) {
        START_FAIL(w, "worker %u: eventfd: %s", id, strerror(errno));
        return -1;
    }
    w->content.req.wake_fd = w->wake_fd;   /* the compile thread wakes the worker */
    /* Test hook (README "Tests"; tests/integration/proxy_inline_settle.sh):
     * a compile's end is appended (8 bytes) to this file instead of waking
     * the worker, which sees it at its next turn, whatever completion that
     * is. That is the state of a worker whose compile wake-up came in the
     * same batch as another completion (a race of the compile thread and the
     * network otherwise), made certain, and visible to the test. */
    const char *done_file = getenv("WM_PROXY_TEST_COMPILE_DONE_FILE");
    if (done_file && *done_file && cfg->schemas) {
        w->test_done_fd = open(done_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (w->test_done_fd < 0) {
            START_FAIL(w, "WM_PROXY_TEST_COMPILE_DONE_FILE %s: %s", done_file, strerror(errno));
            return -1;
        }
        w->content.req.wake_fd = w->test_done_fd;
    }
    return 0;
}

static void worker_free(worker *w)
{
    if (w->ring_ok) io_uring_queue_exit(&w->ring);
    for (uint32_t i = 0; i < WM_PROXY_BUSY_SLOTS; i++)
        if (w->refused[i].fd >= 0) close(w->refused[i].fd);
    for (uint32_t i = 0; w->conns && i < w->nconns; i++)
        for (int s = 0; s < 2; s++)
            if (w->conns[i].fd[s] >= 0) close(w->conns[i].fd[s]);
    if (w->listen_fd >= 0) close(w->listen_fd);
    if (w->br && w->br != MAP_FAILED) munmap(w->br, w->br_bytes);
    if (w->bufs && w->bufs != MAP_FAILED) munmap(w->bufs, (size_t)w->nbufs * w->bufsz);
    if (w->qmem && w->qmem != MAP_FAILED) munmap(w->qmem, w->qmem_bytes);
    for (uint32_t i = 0; w->conns && i < w->nconns; i++)
        if (w->conns[i].ss.filter) wm_proxy_filter_reset(&w->conns[i].flt);
    wm_proxy_content_close(&w->content);   /* abandons its compile in flight (no write to wake_fd after) */
    if (w->wake_fd >= 0) close(w->wake_fd);
    if (w->test_done_fd >= 0) close(w->test_done_fd);
    if (w->spare_fd >= 0) close(w->spare_fd);
    free(w->scratch);
    free(w->discard);
    free(w->conns);
    free(w->nobufs);
    free(w->kicks);
    free(w->inl);
    free(w->later);
}

static void sum(wm_proxy_counters *t, const wm_proxy_counters *c)
{
    const uint64_t *src = (const uint64_t *)c;
    uint64_t *dst = (uint64_t *)t;
    for (size_t i = 0; i < sizeof *c / sizeof(uint64_t); i++) dst[i] += src[i];
}

void wm_proxy_config_defaults(wm_proxy_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->threads = 1;
    cfg->max_conns = 1024;
    cfg->conn_buffer = 64 * 1024;
    cfg->total_buffer = 64ull * 1024 * 1024;
    cfg->max_packet = 256 * 1024;
    cfg->recv_buf_size = 16 * 1024;
    cfg->recv_buf_count = 1024;
    cfg->ring_entries = 1024;
    cfg->batch_wait_ns = 1000000;
    cfg->batch_rate = 75000;
    cfg->connect_timeout_ms = 5000;
    cfg->connect_packet_timeout_ms = 10000;
    cfg->linger_ms = 2000;
    cfg->linger_bytes = 1u << 20;
    cfg->max_records = 4096;
    cfg->max_texts = 128;
    cfg->max_sessions = 65536;
}

void wm_proxy_block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, set, NULL);
}

/* Descriptors a run uses besides 2 per client connection: stdio, the
 * --summary and --state files (a save has the file, its temporary and the
 * directory open), the compile threads' wake-ups, and per worker its ring,
 * listener, wake-up, spare (fds_shed), test hook and WM_PROXY_BUSY_SLOTS
 * refused clients. A bound, not a count: the check below errs high. */
#define FDS_FIXED 24u
#define FDS_PER_WORKER (8u + WM_PROXY_BUSY_SLOTS)

int wm_proxy_fd_limit(wm_proxy_config *cfg)
{
    cfg->fds_needed = 2ull * cfg->max_conns + FDS_FIXED + (uint64_t)FDS_PER_WORKER * cfg->threads;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return 0;   /* cannot tell: fds_out handles running out */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < cfg->fds_needed && rl.rlim_max > rl.rlim_cur) {
        /* As mosquitto does: the soft limit up to the hard one (a hard limit
         * above the kernel's nr_open is refused: then just what is needed). */
        struct rlimit up = { rl.rlim_max, rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
            up.rlim_cur = cfg->fds_needed < rl.rlim_max ? cfg->fds_needed : rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &up) < 0) up.rlim_cur = rl.rlim_cur;
        }
        if (up.rlim_cur != rl.rlim_cur && cfg->verbose)
            fprintf(stderr, "wirematch-proxy: RLIMIT_NOFILE raised from %llu to %llu (--max-conns %u needs up to "
                            "%llu descriptors)\n", (unsigned long long)rl.rlim_cur, (unsigned long long)up.rlim_cur,
                    cfg->max_conns, (unsigned long long)cfg->fds_needed);
        rl.rlim_cur = up.rlim_cur;
    }
    cfg->fds_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    if (cfg->fds_limit >= cfg->fds_needed) return 0;
    uint64_t room = cfg->fds_limit > cfg->fds_needed - 2ull * cfg->max_conns
                        ? (cfg->fds_limit - (cfg->fds_needed - 2ull * cfg->max_conns)) / 2 : 0;
    fprintf(stderr, "wirematch-proxy: warning: --max-conns %u needs up to %llu file descriptors (2 per client "
                    "connection + up to %llu), but RLIMIT_NOFILE is %llu (hard limit %llu): beyond %llu connections or "
                    "more, clients get CONNACK 0x89 Server busy (summary limits.fds); raise the limit (ulimit -n) "
                    "or lower --max-conns\n",
            cfg->max_conns, (unsigned long long)cfg->fds_needed,
            (unsigned long long)(cfg->fds_needed - 2ull * cfg->max_conns), (unsigned long long)cfg->fds_limit,
            (unsigned long long)rl.rlim_max, (unsigned long long)room);
    return 1;
}

/* SIGUSR1: every worker copies its counters at the end of its current batch
 * (snapshot; woken to do so), the sum goes to cfg->live. Only a worker that
 * answered is read (one that did not within 1 s may be writing its copy yet:
 * left out and counted). The main thread waits meanwhile: signals and
 * reloads are taken after. */
static void live_summary(const wm_proxy_config *cfg, worker *ws, unsigned n, uint64_t t0)
{
    uint64_t seq = atomic_fetch_add_explicit(&g_snap_seq, 1, memory_order_acq_rel) + 1;
    uint64_t one = 1;
    for (unsigned i = 0; i < n; i++)
        if (write(ws[i].wake_fd, &one, sizeof one) < 0) { /* it copies at its next batch */ }
    uint64_t until = now_ns() + 1000000000ull;
    unsigned late;
    for (;;) {
        late = 0;
        for (unsigned i = 0; i < n; i++)
            late += atomic_load_explicit(&ws[i].snap_done, memory_order_acquire) != seq;
        if (!late || now_ns() > until) break;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    wm_proxy_counters total;
    memset(&total, 0, sizeof total);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&ws[i].snap_done, memory_order_acquire) == seq) sum(&total, &ws[i].snap);
    cfg->live(cfg->live_ctx, &total, now_ns() - t0, late);
}

/* The workers of a run, for the saver's thread: a save that carried
 * reservations landed, their held SUBSCRIBEs may go on. */
typedef struct run_workers {
    worker *ws;
    unsigned n;
} run_workers;

static void wake_workers(void *ctx)
{
    const run_workers *rw = ctx;
    uint64_t one = 1;
    for (unsigned i = 0; i < rw->n; i++)
        if (write(rw->ws[i].wake_fd, &one, sizeof one) < 0) { /* it tries at its next turn */ }
}

int wm_proxy_run(const wm_proxy_config *cfg, wm_proxy_counters *total, uint64_t *elapsed_ns, char *reason,
                 size_t reasoncap)
{
    memset(total, 0, sizeof *total);
    *elapsed_ns = 0;
    snprintf(reason, reasoncap, "%s", "");
    if (wm_proxy_probe() < 0) {
        snprintf(reason, reasoncap, "the kernel lacks an io_uring feature the proxy needs (stderr says which)");
        return -2;
    }
    sigset_t set;
    wm_proxy_block_signals(&set);
    atomic_store(&g_stop, 0);
    signal(SIGPIPE, SIG_IGN);

    unsigned n = cfg->threads;
    worker *ws = calloc(n, sizeof(worker));
    if (!ws) {
        snprintf(reason, reasoncap, "out of memory");
        return -2;
    }
    int rc = 0;
    bool relayed = false;   /* every worker started: from here on a failure ends a run that was */
    unsigned started = 0;
    for (unsigned i = 0; i < n; i++)
        if (worker_alloc(&ws[i], cfg, i) < 0) { rc = -1; break; }
    /* Content filters compile on their own threads, one per worker, never
     * on a worker (dataplane/proxy_compile.h). */
    wm_proxy_compiler *cc = NULL;
    if (rc == 0 && cfg->schemas && !(cc = wm_proxy_compiler_start(n))) {
        snprintf(reason, reasoncap, "cannot start the content filters' compile threads");
        fprintf(stderr, "wirematch-proxy: %s\n", reason);
        rc = -1;
    }
    for (unsigned i = 0; i < n; i++) ws[i].content.cc = cc;
    pthread_barrier_t ready;
    uint64_t t0 = now_ns();
    /* --state saves on a thread of their own (dataplane/proxy_saver.h): a
     * write the disk holds must not hold this thread's signals and reloads */
    run_workers rw = { ws, n };
    wm_proxy_saver saver = { 0 };
    if (rc == 0 && cfg->state && cfg->registry) {
        if (wm_proxy_saver_start(&saver, cfg->state, wake_workers, &rw) < 0) {
            snprintf(reason, reasoncap, "cannot start the --state saver's thread: %s", strerror(errno));
            fprintf(stderr, "wirematch-proxy: %s\n", reason);
            rc = -1;
        } else {
            wm_proxy_registry_on_urgent(cfg->registry, wm_proxy_saver_kick, &saver);
        }
    }
    if (rc == 0) {
        pthread_barrier_init(&ready, NULL, n + 1);
        for (unsigned i = 0; i < n; i++) {
            ws[i].ready = &ready;
            if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0) {
                /* The barrier counts on every worker: a missing one is fatal now. */
                fprintf(stderr, "wirematch-proxy: cannot start worker %u\n", i);
                abort();
            }
            started++;
        }
        pthread_barrier_wait(&ready);
        for (unsigned i = 0; i < n; i++) if (ws[i].err) rc = -1;
        relayed = rc == 0;
        if (rc < 0) atomic_store(&g_fatal, 1);
        else if (cfg->verbose)
            fprintf(stderr, "wirematch-proxy: %u worker(s) relaying %s -> %s\n", n, cfg->listen_text, cfg->upstream_text);
        /* Wait for a signal, or for a worker that hit a fatal error. */
        struct timespec tick = { 0, 200000000 }, soon = { 0, 5000000 };
        /* A SIGHUP while the previous reload is still reaching the workers
         * is remembered and applied once every worker has it (the files may
         * have changed again in between): never refused. */
        bool hup = false;
        while (rc == 0 && !atomic_load(&g_fatal)) {
            int sig = sigtimedwait(&set, NULL, hup ? &soon : &tick);
            if (sig == SIGINT || sig == SIGTERM) break;
            if (sig == SIGUSR1 && cfg->live) live_summary(cfg, ws, n, t0);
            if (sig == SIGHUP && !cfg->tables)
                fprintf(stderr, "wirematch-proxy: SIGHUP: no --resolution, nothing to reload\n");
            if (sig == SIGHUP && cfg->tables) hup = true;
            if (hup && wm_proxy_tables_settle(cfg->tables)) {
                hup = false;
                char why[512];
                if (wm_proxy_tables_reload(cfg->tables, why, sizeof why) == 0) {
                    fprintf(stderr, "wirematch-proxy: SIGHUP: reloaded %s\n", why);
                    uint64_t one = 1;
                    for (unsigned i = 0; i < n; i++)
                        if (write(ws[i].wake_fd, &one, sizeof one) < 0) { /* it sees the reload at its next turn */ }
                } else {
                    fprintf(stderr, "wirematch-proxy: SIGHUP: reload refused, the current tables stay: %s\n", why);
                }
            }
            if (cfg->tables) wm_proxy_tables_settle(cfg->tables);
            if (cfg->registry) wm_proxy_registry_reclaim(cfg->registry, now_ns());
        }
        atomic_store(&g_stop, 1);
        uint64_t one = 1;
        for (unsigned i = 0; i < n; i++)
            if (write(ws[i].wake_fd, &one, sizeof one) < 0) { /* the worker already left */ }
        for (unsigned i = 0; i < started; i++) pthread_join(ws[i].th, NULL);
        if (cfg->state && cfg->registry) wm_proxy_registry_on_urgent(cfg->registry, NULL, NULL);
        pthread_barrier_destroy(&ready);
        if (atomic_load(&g_fatal)) rc = -1;
    }
    /* Every connection has detached from its session now: the clean save,
     * on the saver's thread, waited for within a bound (a disk that hangs
     * must not keep the process from stopping). */
    if (cfg->state && cfg->registry) {
        int sr = wm_proxy_saver_stop(&saver, rc == 0, WM_PROXY_SAVER_STOP_NS);
        if (sr == -2) {
            fprintf(stderr, "wirematch-proxy: --state %s: the last save did not end within %.0f s (the disk does "
                    "not answer): stopping without the clean save; the file is the last one saved while running\n",
                    cfg->state->path, (double)WM_PROXY_SAVER_STOP_NS / 1e9);
            total->state_saver_stuck = 1;
        }
        if (sr < 0) rc = -1;
    }
    *elapsed_ns = now_ns() - t0;
    for (unsigned i = 0; i < n; i++) {
        sum(total, &ws[i].c);
        worker_free(&ws[i]);
    }
    /* A compile still running was abandoned by its worker: the caller must
     * not free the registry it reads (wirematch-proxy _exits). */
    if (wm_proxy_compiler_stop(cc)) total->compile_detached = 1;
    if (rc < 0 && !relayed) {
        /* the first worker's reason, unless one of the run's own came first */
        for (unsigned i = 0; i < n && !reason[0]; i++)
            if (ws[i].why[0]) snprintf(reason, reasoncap, "%s", ws[i].why);
        if (!reason[0]) snprintf(reason, reasoncap, "the proxy could not start (stderr says why)");
        rc = -2;
    }
    /* Peak is a gauge: the sum of worker peaks bounds the process peak. */
    free(ws);
    return rc;
}
