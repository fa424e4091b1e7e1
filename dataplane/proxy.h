/* wirematch-proxy: an io_uring TCP front end that relays MQTT v5 between
 * unmodified clients and an unmodified upstream broker (ARCHITECTURE.md §1
 * use 3). One upstream connection per client connection, so sessions, wills,
 * retained messages and QoS stay the broker's.
 *
 * Threads: N workers, each with its own io_uring, its own provided-buffer
 * ring and its own SO_REUSEPORT listening socket, so the kernel spreads
 * connections over workers and a connection (both of its sockets) lives on
 * the worker that accepted it. Workers share no mutable state; counters are
 * per worker and summed at exit.
 *
 * Bounds (every crossing is counted, never a crash):
 *   max_conns      connections per process (split evenly over workers); a
 *                  client beyond it is answered CONNACK 0x89 Server busy
 *                  once its CONNECT is read (WM_PROXY_BUSY_SLOTS of them
 *                  per worker at a time, proxy_busy.h), or closed at once
 *                  when those are taken.
 *   connect_packet_timeout_ms  a client that has not sent a whole CONNECT
 *                  this long after the proxy started reading it is closed
 *                  (so are both its connections).
 *   conn_buffer    bytes queued towards one peer; above it, the other side
 *                  stops being read until the queue drains to half of it.
 *   total_buffer   bytes held by all connections (split evenly over
 *                  workers); above its share, a worker reads no connection
 *                  until it is back under 3/4 of it, so it holds at most
 *                  its share + one receive buffer (recv_buf_size) + what
 *                  framing that buffer adds (proxy_frame.h: a few bytes per
 *                  rewritten CONNECT/CONNACK/SUBSCRIBE, the filter's own
 *                  acknowledgements; topics restored to alias-only
 *                  PUBLISHes, each within the client's Maximum Packet
 *                  Size). Received bytes beyond it wait in the worker's
 *                  provided buffers (recv_buf_count x recv_buf_size).
 *   max_packet     bytes of one MQTT packet the framer accepts; announced
 *                  as Maximum Packet Size to the broker (in CONNECT) and to
 *                  the client (in CONNACK) unless they announced less.
 *   linger_ms, linger_bytes  a connection the proxy ends after telling the
 *                  client why (its last packet flushed: a DISCONNECT, a
 *                  CONNACK) is half-closed on that side and what the client
 *                  still sends is read and dropped until it closes, for at
 *                  most linger_ms and linger_bytes (then it is closed as it
 *                  is): closing a socket with unread bytes sends RST, which
 *                  destroys what the client has not received yet. The slot
 *                  stays taken meanwhile. Before that, the proxy's last
 *                  bytes wait for the peer to take them for at most
 *                  linger_ms too (2 s when 0): a client that never reads
 *                  again is then closed unflushed (drain_cut).
 */
#ifndef WM_DATAPLANE_PROXY_H
#define WM_DATAPLANE_PROXY_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "control/content_filters.h"

struct wm_proxy_counters;

typedef struct wm_proxy_config {
    struct sockaddr_storage listen_addr;
    socklen_t listen_len;
    struct sockaddr_storage upstream_addr;
    socklen_t upstream_len;
    const char *listen_text;     /* as given, for the summary */
    const char *upstream_text;
    unsigned threads;            /* workers, >= 1 */
    uint32_t max_conns;          /* connections, whole process */
    uint32_t conn_buffer;        /* bytes, per direction of a connection */
    uint64_t total_buffer;       /* bytes, whole process */
    uint32_t max_packet;         /* bytes, one MQTT packet */
    uint32_t recv_buf_size;      /* bytes of one provided receive buffer */
    uint32_t recv_buf_count;     /* provided buffers per worker (power of 2) */
    uint32_t ring_entries;       /* SQ entries per worker ring */
    uint32_t batch_wait_ns;      /* busy worker: let completions gather this long (0 = never) */
    uint32_t batch_rate;         /* frames/s (both directions) from which a worker is busy */
    uint32_t connect_timeout_ms; /* a connect to the upstream not done by then failed (timed out) */
    uint32_t connect_packet_timeout_ms; /* a client whose whole CONNECT has not come this long after the
                                    proxy started reading it is closed (>= 1; proxy_loop.c sweep) */
    uint32_t linger_ms;          /* lingering close: longest wait for the peer's close (0 = close at once) */
    uint32_t linger_bytes;       /* lingering close: most bytes read and dropped before closing anyway */
    const struct wm_proxy_spatial *spatial; /* loaded --resolution, NULL = transparent relay (at start: reloads replace it) */
    const struct wm_schema_reg *schemas;    /* loaded --schemas (needs --resolution), NULL = none (at start) */
    size_t exi_mem_cap;                     /* --mem-cap: memory for decoding one payload, bytes; 0 = codec default (4 MiB) */
    struct wm_proxy_tables *tables; /* both, and their reloads (SIGHUP, dataplane/proxy_reload.h); NULL = none */
    const char *resolution_text; /* as given, for the summary */
    uint32_t max_records;        /* recorded subscriptions per connection (spatial filtering) */
    uint32_t max_texts;          /* distinct content-filter texts per connection (--max-xpath-per-conn) */
    struct wm_proxy_registry *registry; /* with spatial: persistent sessions, and --prefilter if made with a matcher */
    uint32_t max_sessions;       /* persistent sessions remembered (spatial filtering) */
    struct wm_proxy_state_saver *state; /* --state FILE (dataplane/proxy_state.h): saved by the saver's
                                    thread (dataplane/proxy_saver.h) when the sessions change; NULL = none */
    uint32_t sid_epoch;          /* this process's turn of the proxy identifiers on the wire
                                    (dataplane/proxy_filter.h), < WM_PROXY_SID_SPAN; random per
                                    process (wirematch-proxy_main.c), 0 = none */
    int verbose;
    /* SIGUSR1 (live telemetry): called on the thread running wm_proxy_run
     * with the counters summed over the workers as each had them at the end
     * of its batch after the signal (a worker that did not answer within 1 s
     * is left out, counted in late), and the time since start (ns). NULL: SIGUSR1 is ignored. The counters are a copy: the
     * callback may read them as it likes, not keep the pointer. */
    void (*live)(void *ctx, const struct wm_proxy_counters *c, uint64_t elapsed_ns, unsigned late);
    void *live_ctx;
    /* Set by wm_proxy_fd_limit (0 if it was not called): file descriptors the
     * run may need, and RLIMIT_NOFILE's soft limit after it (UINT64_MAX: none). */
    uint64_t fds_needed, fds_limit;
} wm_proxy_config;

/* Defaults for everything but the two addresses. */
void wm_proxy_config_defaults(wm_proxy_config *cfg);

/* Directions of a connection. */
enum { WM_PROXY_C2U = 0, WM_PROXY_U2C = 1 };

/* Counters of one worker; every field is a count of events or bytes since
 * start. Summed over workers for the summary. */
typedef struct wm_proxy_counters {
    uint64_t conns_accepted;
    uint64_t conns_closed;
    uint64_t conns_peak;             /* gauge: most connections open at once */
    uint64_t conns_open;             /* gauge at exit */
    uint64_t limit_conns;            /* clients refused: max_conns reached */
    /* Out of file descriptors (RLIMIT_NOFILE, EMFILE; or the system's,
     * ENFILE): accepts that failed so (each pauses the worker's accepting
     * until one of its connections closes, or a retry after
     * WM_PROXY_FDS_RETRY_MS finds one; proxy_loop.c fds_out), clients in the
     * listener's backlog answered CONNACK 0x89 Server busy meanwhile through
     * the worker's spare descriptor, and upstream sockets that could not be
     * made (the client is answered CONNACK 0x88, as for an unreachable broker;
     * also in upstream_connect_failed). */
    uint64_t limit_fds;
    uint64_t fds_shed;
    uint64_t upstream_socket_failed;
    uint64_t upstream_connect_failed;
    uint64_t closed_by_client;       /* ended by the client: its EOF or error, or a bad packet from it */
    uint64_t closed_by_upstream;     /* ended by the broker: likewise, a refusing CONNACK, or it went away */
    uint64_t closed_at_shutdown;
    /* The upstream broker failing a client (README "Upstream failures and
     * shutdown"): of upstream_connect_failed, connects refused (ECONNREFUSED)
     * and timed out (connect_timeout_ms); the rest had another error. */
    uint64_t upstream_refused;
    uint64_t upstream_timed_out;
    uint64_t upstream_lost;          /* open upstream connections that ended (EOF, error) without a DISCONNECT */
    uint64_t sent_connack_unavailable; /* CONNACK 0x88 Server unavailable sent to a client (§3.2.2.2) */
    uint64_t sent_disconnect_lost;   /* DISCONNECT 0x80 Unspecified error: its broker connection ended */
    uint64_t sent_disconnect_shutdown; /* DISCONNECT 0x8B Server shutting down (SIGINT/SIGTERM) */
    uint64_t sent_connack_busy;      /* CONNACK 0x89 Server busy: a client beyond max_conns (proxy_busy.h) */
    uint64_t sent_disconnect_quota;  /* DISCONNECT (CONNACK) 0x97 Quota exceeded: the client sent more than
                                        the proxy parks while its side is paused (park_overflow) */
    uint64_t closed_no_connect;      /* clients closed with no whole CONNECT within connect_packet_timeout_ms */
    uint64_t refused_protocol_version; /* MQTT 3.1/3.1.1 CONNECTs answered with their own CONNACK, return code
                                          0x01 unacceptable protocol version (the proxy is v5-only) */
    uint64_t sent_second_connect;    /* DISCONNECT (CONNACK) 0x82 Protocol Error: a client's second CONNECT
                                        (MQTT-3.1.0-2), also in malformed[WM_PROXY_C2U] */
    /* Lingering closes (linger_ms): sides half-closed and read until the
     * peer closed, and of them those cut by a bound (closed with bytes
     * possibly unread: RST). */
    uint64_t lingers;
    uint64_t linger_cut_time;        /* still open after linger_ms (or at the stop's grace period) */
    uint64_t linger_cut_bytes;       /* sent more than linger_bytes meanwhile */
    uint64_t linger_bytes;           /* bytes read and dropped while lingering */
    uint64_t drain_cut;              /* connections the proxy ended whose peer did not take its last bytes
                                        within linger_ms (2 s when 0) of the end: closed unflushed */
    uint64_t bytes[2];               /* relayed per direction (sent to the peer) */
    uint64_t recv_bytes[2];
    uint64_t packets[2];             /* MQTT packets framed per direction */
    uint64_t publishes[2];           /* of which PUBLISH */
    uint64_t max_packet_announced[2]; /* CONNECT (c2u) / CONNACK (u2c) rewritten to carry max_packet
                                         (filtering: a client's own + WM_PROXY_SID_ROOM) */
    uint64_t malformed[2];           /* connections closed for a malformed packet (or protocol error) */
    uint64_t packet_too_large[2];    /* packets above max_packet */
    uint64_t limit_conn_buffer[2];   /* reading paused: peer's queue over conn_buffer */
    uint64_t limit_total_buffer;     /* times a worker went over its total share (every side paused) */
    uint64_t held_peak;              /* gauge: most bytes queued at once in a worker (summed: a bound) */
    uint64_t held_at_exit;           /* gauge: bytes still accounted as held at exit (0 once all closed) */
    uint64_t resumed;                /* reading resumed after a pause */
    uint64_t parked;                 /* receive buffers held back for lack of room */
    uint64_t park_overflow;          /* connections closed: too much in flight */
    uint64_t recv_nobufs;            /* multishot receives ended: provided ring empty */
    uint64_t recv_rearm;             /* multishot receives armed again */
    uint64_t accept_rearm;
    uint64_t sends;
    uint64_t sends_short;            /* sends that wrote less than asked */
    uint64_t sends_inline;           /* of the sends, finished within their submission (no completion) */
    uint64_t recvs;                  /* receive completions carrying data */
    uint64_t quickacks;              /* reads after a send on the same socket, acknowledged at once
                                        (TCP_QUICKACK: the socket had turned to delaying its ACKs) */
    uint64_t cqes;
    uint64_t submits;                /* io_uring_enter calls (batches) */
    uint64_t batched_waits;          /* of which waited batch_wait_ns (busy, see batch_rate) */
    /* Where the worker's time goes, by wait mode ([0] waking at the first completion, [1] busy:
     * batching, see batch_rate): thread CPU and wall time (ns), frames framed, io_uring_enter calls
     * that waited (wake-ups; submits also counts those that did not). */
    uint64_t mode_cpu_ns[2], mode_wall_ns[2], mode_frames[2], mode_wakeups[2];
    uint64_t sqes;
    /* Spatial filtering (dataplane/proxy_filter.h); all 0 without --resolution. */
    uint64_t filter_nbhd_subscribes;     /* SUBSCRIBEs with a known neighborhood, forwarded */
    uint64_t filter_suback_unknown_nbhd; /* filters refused by the proxy: unknown neighborhood */
    uint64_t filter_sid_added;           /* SUBSCRIBEs given a proxy Subscription Identifier */
    uint64_t filter_sid_reserved;        /* SUBSCRIBEs refused: client used a proxy identifier */
    uint64_t filter_records_full;        /* filters not recorded: max_records reached */
    uint64_t filter_sid_wait;            /* SUBSCRIBEs held for a --state identifier reservation (each try) */
    uint64_t filter_sid_unsaved;         /* SUBSCRIBEs refused: no reservation can be saved (--state unwritable) */
    uint64_t filter_withheld[3];         /* broker PUBLISHes withheld, by QoS */
    uint64_t filter_acked_on_behalf;     /* PUBACK/PUBREC sent to the broker for withheld ones */
    uint64_t filter_pubcomp_on_behalf;   /* PUBCOMP sent to the broker for their PUBREL */
    uint64_t filter_sid_stripped;        /* forwarded PUBLISHes rewritten without proxy identifiers */
    uint64_t filter_alias_rewritten[2];  /* alias-only PUBLISHes given their topic back */
    uint64_t filter_sid_unavailable;     /* nbhd SUBSCRIBEs refused (0xA1): the broker has no identifiers */
    uint64_t filter_too_large;           /* rewritten packets over the receiver's Maximum Packet Size, not sent */
    uint64_t filter_failed;              /* connections closed: no room for a packet the proxy had to send */
    uint64_t filter_prefiltered[3];      /* client PUBLISHes nobody could receive, kept from the broker, by QoS */
    uint64_t filter_prefiltered_too_many_peids; /* of those, with more than WM_PEIDS_MAX peids (peid_props.h) */
    uint64_t filter_too_many_peids;      /* broker PUBLISHes withheld (from every subscriber): more than
                                            WM_PEIDS_MAX peids (peid_props.h) */
    uint64_t filter_unknown_sid;         /* broker PUBLISHes withheld: only identifiers of subscriptions the
                                            proxy does not know, on a session that may hold filtered ones */
    uint64_t filter_session_full;        /* nbhd SUBSCRIBEs refused (0x97): no room in the session table */
    uint64_t filter_suback_prefilter;    /* filters refused (0x97; 0x8F invalid): the --prefilter registry could not
                                            take one of their SUBSCRIBE's (a matcher table full, memory) */
    uint64_t filter_expiry_from_zero;    /* client DISCONNECTs setting a Session Expiry Interval on a connection
                                            whose was 0 (MQTT 5.0 §3.14.2.2.2 Protocol Error): not taken */
    /* Content filtering (--schemas). */
    uint64_t filter_xpath_subscribes;    /* SUBSCRIBEs with a valid `xpath`, forwarded */
    uint64_t filter_suback_bad_xpath;    /* filters refused by the proxy: invalid xpath (or no --schemas) */
    uint64_t filter_content_pubs;        /* broker PUBLISHes decided by a content filter */
    uint64_t filter_content[WM_CONTENT_OUTCOME_COUNT]; /* ... by outcome (control/content_filters.h) */
    uint64_t filter_content_header_conflicts; /* ... decoded by an options header its Content Type's options
                                                 contradict (wm_content_reader_conflict) */
    uint64_t filter_share_refused;       /* filters refused (0x9E): a shared subscription whose members here use
                                            another neighborhood or xpath (dataplane/proxy_share.h) */
    uint64_t filter_share_mixed_restored; /* ... taken anyway: restored from a session, the broker holds it */
    uint64_t filter_unsub_refused;       /* UNSUBSCRIBE filters the broker answered >= 0x80: kept (§3.11.3) */
    uint64_t filter_refused_kept;        /* filters of SUBSCRIBEs the proxy refused that the connection already
                                            had a subscription to: it stays unchanged (proxy_filter.c refuse) */
    uint64_t filter_unsub_untracked;     /* UNSUBSCRIBEs applied at once: the connection's awaiting ones at their
                                            bound (1,024 or 1 MiB), or out of memory */
    uint64_t filter_content_slots_peak;  /* gauge: most slots the worker's content table used (summed: a bound) */
    uint64_t filter_content_slots_reused; /* new query texts that took a slot an earlier text had left */
    uint64_t filter_content_compiles;    /* worker automata published (compiled off the worker, or at a reload
                                            on it) */
    uint64_t filter_xpath_held;          /* SUBSCRIBEs held until their new content filter was compiled */
    uint64_t filter_resume_held;         /* resumed sessions whose broker packets waited for their content
                                            filters to be compiled (off the worker) */
    uint64_t filter_suback_xpath_quota;  /* filters refused (0x97): the connection's --max-xpath-per-conn, or the
                                            worker's set has no room (or no slot) for the text */
    uint64_t filter_resume_refused;      /* records of resumed sessions whose content filter the worker took no
                                            more (logged): they pass nothing */
    uint64_t filter_nbhd_gone;           /* records whose neighborhood a reloaded resolution lacks */
    uint64_t filter_xpath_gone;          /* records whose xpath compiles for no schema of a reloaded registry */
    uint64_t filter_acks_waited;         /* answers the proxy made that waited behind the peer's answers to
                                            earlier packets (dataplane/proxy_answers.h) */
    uint64_t filter_acks_overflow;       /* ... released early: WM_PROXY_ANSWERS_MAX bytes were waiting */
    uint64_t filter_pings_answered;      /* PINGREQs behind a held packet the proxy answered itself (one of the
                                            client's that passed the hold was still unanswered, proxy_frame.h) */
    uint64_t filter_content_cancelled;   /* compiles cancelled: every new text of theirs had lost its client */
    uint64_t filter_xpath_dropped_gone;  /* held SUBSCRIBEs dropped: their client left before the compile */
    uint64_t filter_suback_compile_busy; /* filters refused (0x97): the worker's texts awaiting a compile at their bound */
    uint64_t compile_detached;           /* 1: a compile was still running at the stop (the process _exits) */
    uint64_t state_saver_stuck;          /* 1: the --state saver was still in a save WM_PROXY_SAVER_STOP_NS
                                            after the stop (the process _exits without the clean save) */
    uint64_t filter_content_set_builds;  /* set builds the compiles tried (more than one each: texts that did not
                                            fit together, control/content_filters.h "No room") */
    uint64_t filter_content_room_cached; /* new content filters refused at once: proved not to fit, no text gone since */
} wm_proxy_counters;

/* Runs the proxy until SIGINT or SIGTERM (which must not be ignored), then
 * closes every connection, joins the workers and fills *total (summed
 * counters) and *elapsed_ns. SIGHUP reloads cfg->tables (if set; a bad file
 * is refused with its reason on stderr). Blocks SIGINT/SIGTERM/SIGHUP/SIGUSR1 in the
 * calling thread. With cfg->state, saves on a thread of its own
 * (dataplane/proxy_saver.h) and, once every connection detached, makes the
 * clean save there (a failure makes the return -1); if that thread is still
 * in a save WM_PROXY_SAVER_STOP_NS after the stop, total->state_saver_stuck
 * is 1 and the caller must leave the process (_exit) without freeing
 * cfg->state or cfg->registry. Does not wait for a content-filter compile at the stop
 * (dataplane/proxy_compile.h): if one still runs, total->compile_detached
 * is 1 and the caller must leave the process (_exit, after its output)
 * without freeing cfg->schemas / cfg->tables, which that compile reads.
 * Returns 0 after a clean stop; -1 if the run failed after it started
 * relaying (a worker's fatal error, the clean --state save), *total holding
 * what was counted; -2 if it never started (the io_uring features it needs
 * missing: kernel < 6.0: multishot receive; < 5.19: provided buffer rings,
 * multishot accept; --listen's address in use or not bindable; a thread or
 * memory it could not get): nothing was relayed, *total is zero, and
 * reason[0..reasoncap) holds the reason as one line (also on stderr). reason is ""
 * otherwise. */
int wm_proxy_run(const wm_proxy_config *cfg, wm_proxy_counters *total, uint64_t *elapsed_ns, char *reason,
                 size_t reasoncap);

/* The summary of a run that never started (wm_proxy_run returned -2): one
 * line {"error": why} to f, as the data plane writes for a failed start, in
 * place of counters that would all be zero. Returns 0 or -1 (a write
 * failed). */
int wm_proxy_write_failed_summary(FILE *f, const char *why);

/* Before wm_proxy_run, once the options are set (main thread): the file
 * descriptors a run with cfg->max_conns and cfg->threads may need (2 per
 * client connection, its own and its broker's, plus a fixed part) against
 * RLIMIT_NOFILE. If the soft limit is short it is raised to the hard one (as
 * mosquitto does). Sets cfg->fds_needed and cfg->fds_limit. Returns 0 if the
 * limit suffices (or cannot be read), 1 if it is still short: a warning with
 * both numbers and what to do is on stderr, and the run answers clients
 * past the limit CONNACK 0x89 (counters limit_fds, fds_shed). Before
 * 2026-12-02 nothing checked it (REVIEW14 finding 2). */
int wm_proxy_fd_limit(wm_proxy_config *cfg);

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1 in the calling thread (and so
 * in every thread it starts later) and fills *set with them, the signals
 * wm_proxy_run waits for (SIGUSR1: cfg->live is given the counters of the
 * moment, live telemetry; until 2026-12-02 it was taken and dropped). Call it first in main: a signal that comes while the tables load
 * then waits for wm_proxy_run instead of ending the process without its
 * summary. Idempotent. */
void wm_proxy_block_signals(sigset_t *set);

/* Checks once that this kernel offers what the workers use: provided buffer
 * rings (Linux 5.19), multishot accept (5.19) and multishot receive (6.0).
 * Returns 0, or -1 after naming the missing feature on stderr. */
int wm_proxy_probe(void);

/* Parses "ADDR:PORT" ("127.0.0.1:1883", "[::1]:1883", "localhost:1883")
 * into *ss and *len. Returns 0, or -1 with a reason in err (errlen bytes). */
int wm_proxy_parse_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len,
                        char *err, size_t errlen);

/* Writes the JSON summary of a run to f (one object, one line). late < 0:
 * the summary at the stop; late >= 0: a live one (SIGUSR1, cfg->live) while
 * the workers run, with "live": true and "late_workers": late (workers left
 * out of c), gauges as of now ("open_at_exit" then means open now), and
 * without the --state saver's running counters (saves, save_errors, bytes:
 * its thread writes them). Returns 0 or -1. */
int wm_proxy_write_summary(FILE *f, const wm_proxy_config *cfg,
                           const wm_proxy_counters *c, uint64_t elapsed_ns, int late);

#endif
