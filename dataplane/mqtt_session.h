/* The MQTT v5 session layer of a worker: the stream consumer that plugs into
 * the flow table (flow_table.h, struct wm_stream_ops). It frames each
 * reassembled direction into MQTT control packets with the codec
 * (codec/mqtt5_decode.h) and keeps per-connection session state:
 *
 *   - CONNECT: the client identifier (or the server's Assigned Client
 *     Identifier from CONNACK); MQTT v5 is required, other protocol versions
 *     are counted and the connection is followed no further.
 *   - Topic aliases in both directions (MQTT 5.0 §3.3.2.3.4), aliases
 *     1..WM_MQTT_MAX_ALIASES, topics up to WM_MQTT_ALIAS_TOPIC_MAX bytes kept
 *     in a per-worker slot pool.
 *   - SUBSCRIBE from the client is kept PENDING by its packet identifier
 *     (a copy of the packet in a per-worker pool allocated with the layer,
 *     nothing per packet: at most pending_subscribes copies of together
 *     pending_bytes; a packet finding no room is not kept, counted; one
 *     session holds at most pending_per_session copies and a sixteenth of
 *     the bytes: one client cannot take them all) until the
 *     broker's SUBACK: each filter the SUBACK
 *     grants (reason code < 0x80, §3.9.3) is handed to the sink
 *     (wm_mqtt_sink.subscribe) with the granted QoS, its subscription
 *     identifier and the SUBSCRIBE's `nbhd` and `xpath` user properties
 *     (the first of each applies to every filter of the packet); a filter
 *     the broker refuses never existed in the broker and is only counted.
 *     The sink keys it clientid#subscription-identifier, or
 *     clientid#filter without one. An UNSUBSCRIBE is kept pending the same
 *     way (same bound) until the broker's UNSUBACK (§3.11.3): a filter it
 *     answers 0x00 (Success) or 0x11 (No subscription existed: the broker
 *     has none, so neither may the data plane) is handed to
 *     wm_mqtt_sink.unsubscribe; one it refuses (>= 0x80) stays.
 *   - The session's lifetime (§3.1.2.4 Clean Start, §3.1.2.11.2 Session
 *     Expiry Interval, §3.2.2.1.1 Session Present, §3.14.2.2.2): its Session
 *     Expiry Interval comes from CONNECT, the CONNACK may override it, the
 *     client's DISCONNECT may change it (not from 0). A successful CONNACK
 *     starts (Session Present 0: a NEW session, the client's earlier
 *     subscriptions are gone) or resumes the session; the connection's end
 *     (DISCONNECT either way, FIN, RST, idle timeout) ends it with its
 *     interval. The sink (wm_mqtt_sink.session) keeps the subscriptions,
 *     drops them, or lets them expire in packet time (now_ns).
 *   - Quiet connections (§3.1.2.10): the layer sets the connection's idle
 *     limit (wm_flow.idle_ns) from its Keep Alive, the CONNECT's or the
 *     CONNACK's Server Keep Alive: 1.5 times it plus
 *     WM_MQTT_KEEPALIVE_GRACE_S, when the broker has closed it itself;
 *     never for Keep Alive 0. The flow table's eviction (table full) is
 *     not the connection's end: the session stays as it is (counted in
 *     sessions_unobserved), its Will unpublished.
 *   - The broker's limits (CONNACK Topic Alias Maximum, Maximum Packet Size,
 *     Maximum QoS, Retain Available; §3.2.2.3): a client PUBLISH over one is
 *     one the broker refuses with a DISCONNECT, never delivers: it ends as
 *     MALFORMED (counted by codec reason or limit_qos / limit_retain) and
 *     the direction stops, as the broker closes it. After the broker's own
 *     DISCONNECT (§3.14.4) nothing more of the client is followed.
 *   - QoS 2 (§4.3.3) is matched at the client's PUBREL, not at the
 *     PUBLISH: mosquitto stores the message at the PUBLISH and hands it to
 *     its subscribers when the PUBREL releases it (the spec's "Method A"),
 *     so a message whose PUBREL never comes (the broker's PUBREC refused
 *     it, the session ended first) reaches nobody, and a subscription made
 *     between PUBLISH and PUBREL receives it. A PUBLISH whose packet
 *     identifier still awaits its PUBREL is the same message whatever its
 *     DUP flag (outcome DUPLICATE, never a second line). The PUBLISH (its
 *     resolved topic and its bytes) is copied into a per-worker pool
 *     (cfg.qos2_held slots of cfg.qos2_max bytes); one that does not fit
 *     or finds no slot is matched at the PUBLISH instead (qos2_at_publish)
 *     and still only once. The identifiers in flight travel with the
 *     session across connections (the sink keeps them while it is
 *     detached); the copies stay in the pool until the session's expiry
 *     and come back when the session resumes on this worker, or, with a
 *     shared store (wm_mqtt_layer_set_qos2_store: several workers), move
 *     there when the session detaches and to whichever worker's layer sees
 *     it resume (§4.4: the exchange is resumed). The broker's
 *     PUBREC with an error reason code (>= 0x80) ends the exchange: the
 *     copy is dropped (outcome REFUSED), the identifier released.
 *   - Wills (§3.1.2.5, §3.1.3.2): a CONNECT's Will Topic, Will Properties
 *     and Will Payload are copied into a per-worker pool (cfg.wills slots of
 *     cfg.will_max bytes; a larger Will, or one finding no slot, is counted
 *     and never matched). When the connection's session ends as the data
 *     plane sees it (DISCONNECT either way, FIN, RST, timeout) and the
 *     client did not send a DISCONNECT other than 0x04 (Disconnect with Will
 *     Message, §3.14.4), the broker publishes the Will, handed to
 *     wm_mqtt_sink.publish
 *     like a PUBLISH (wm_mqtt_publish.will set; topic, `peid` User
 *     Properties by peid_props.h, Content Type and payload). When (rule of
 *     §3.1.2.5 and §3.1.3.2.2, the Will Delay Interval "delay"):
 *       at once if delay is 0 or the session ends with the connection
 *       (Session Expiry 0), AFTER the session's end was reported to the
 *       sink: its own subscriptions are gone with it and never receive it;
 *       else at min(delay, Session Expiry) seconds later in packet time
 *       (now_ns, the clock of session expiry; wm_mqtt_layer_tick), unless a
 *       successful CONNACK for the client id on this worker comes first:
 *       Session Present 1 (the session goes on) cancels it, Session Present
 *       0 (the old session ended) publishes it then, after the new session
 *       started. A connection whose session a newer one takes over while it
 *       still holds its Will publishes it at its end if the newer one
 *       started a new session or the delay is 0, else never.
 *     Wills are per worker: a reconnect that RSS sends to another worker
 *     does not cancel or hasten a delayed Will.
 *   - Retained messages (§3.3.1.3): a broker PUBLISH with RETAIN 1 that
 *     follows a SUBACK granting a filter, with only such PUBLISHes between
 *     (mosquitto sends the retained messages of a new subscription right
 *     after its SUBACK, before anything else), is a retained message for
 *     the subscriber: handed to the sink with `retained` set and the
 *     subscriber as client, matched against that client's subscriptions.
 *     Elsewhere RETAIN 1 is Retain As Published forwarding of a message
 *     matched at its PUBLISH: counted only.
 *   - PUBLISH from the client: topic (alias resolved), `peid` user
 *     properties, handed to the sink for matching; every such PUBLISH ends in
 *     exactly one outcome counter (WM_MQTT_PUB_OUTCOMES).
 *
 * Zero copy: a control packet that lies inside one delivered chunk (usually
 * one TCP segment) is decoded where it lies. Only a packet split across
 * chunks is copied, into a staging buffer from a per-worker pool, bounded by
 * max_packet (larger packets are skipped and counted). A fixed header split
 * across chunks (at most 5 bytes) is kept inline in the session.
 *
 * A packet the codec rejects is counted by its codec reason
 * (codec/mqtt5_error.h) and that direction is marked broken: an MQTT stream
 * cannot be re-synchronised after a malformed packet, exactly as a broker
 * closes the connection (§4.13).
 *
 * Thread safety: one wm_mqtt_layer per worker, used only by that worker;
 * counters may be read by other threads. */
#ifndef WM_DATAPLANE_MQTT_SESSION_H
#define WM_DATAPLANE_MQTT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_decode.h"
#include "dataplane/flow_table.h"
#include "control/peid_props.h"

#define WM_MQTT_CLIENT_ID_MAX 128   /* bytes of client id kept; a longer one's client is not followed (counted) */
#define WM_MQTT_MAX_ALIASES 32      /* topic aliases followed per direction (1..32) */
#define WM_MQTT_ALIAS_TOPIC_MAX 254 /* bytes of an aliased topic kept */
#define WM_MQTT_MAX_PEIDS WM_PEIDS_MAX /* peid user properties per PUBLISH (peid_props.h) */
#define WM_MQTT_QOS2_INFLIGHT 16    /* QoS 2 packet ids awaiting PUBREL followed per session */
#define WM_MQTT_KEEPALIVE_GRACE_S 2 /* seconds beyond 1.5 x Keep Alive before an idle connection times out */

#define WM_MQTT_PEND_CHUNK 256    /* bytes of one piece of a pending copy (wm_mqtt_config.pending_bytes) */

struct pend_sub; /* a pending copy (mqtt_session.c) */
struct wm_qos2_store; /* qos2_store.h */

/* What became of a client -> server PUBLISH: exactly one per PUBLISH seen. */
#define WM_MQTT_PUB_OUTCOMES(X)                                                 \
    X(MATCHED, "matched")                   /* reaches at least one subscription */ \
    X(NO_MATCH, "no_match")                 /* reaches none */                  \
    X(NO_TABLE, "no_table")                 /* no match table loaded: not matched */ \
    X(MALFORMED, "malformed")               /* the codec rejected it (reason in malformed[]) */ \
    X(ALIAS_UNKNOWN, "dropped_alias_unknown") /* empty topic, alias never set or beyond bound */ \
    X(TOO_LARGE, "dropped_too_large")       /* over max_packet: skipped */      \
    X(STAGING_FULL, "dropped_staging_full") /* split packet, no staging buffer free */ \
    X(TRUNCATED, "dropped_truncated")       /* the stream ended (FIN/RST/loss) inside it */ \
    X(NOT_CONNECTED, "dropped_not_connected") /* before a v5 CONNECT */        \
    X(TOO_MANY_PEIDS, "dropped_too_many_peids") /* over WM_PEIDS_MAX (peid_props.h) */ \
    X(MATCH_ERROR, "dropped_match_error")   /* the matcher failed (counted by the sink) */ \
    X(DUPLICATE, "duplicate_qos2")          /* QoS 2 id still awaiting its PUBREL: the same message again */ \
    X(CONNECT_REFUSED, "dropped_connect_refused") /* sent before a CONNACK >= 0x80: never processed (§3.1.4) */ \
    X(REFUSED, "dropped_refused_by_broker") /* QoS 2 held for its PUBREL, the broker's PUBREC >= 0x80 */ \
    X(SESSION_ENDED, "dropped_session_ended") /* QoS 2 held, its session ended or expired before the PUBREL */ \
    X(UNOBSERVED, "dropped_unobserved")     /* QoS 2 held, its connection evicted from the flow table */ \
    X(UNRELEASED, "qos2_unreleased_at_end") /* QoS 2 held, no PUBREL before the end of the run */

enum wm_mqtt_pub_outcome {
#define WM_MQTT_X_ENUM(e, s) WM_MQTT_PUB_##e,
    WM_MQTT_PUB_OUTCOMES(WM_MQTT_X_ENUM)
#undef WM_MQTT_X_ENUM
    WM_MQTT_PUB_OUTCOME_COUNT
};
/* The counter name of PUBLISH outcome o (WM_MQTT_PUB_OUTCOMES' strings,
 * e.g. "dropped_too_many_peids"), "?" out of range. Static storage;
 * thread safe. */
const char *wm_mqtt_pub_outcome_name(enum wm_mqtt_pub_outcome o);

/* A PUBLISH from a client, as the sink sees it. Views are valid during the call. */
struct wm_mqtt_publish {
    uint64_t seq;                 /* per worker, from 1, in arrival order */
    uint64_t flow_id;
    const char *client;           /* publisher's client id */
    uint32_t client_len;
    const char *topic;            /* resolved through the topic alias if needed */
    uint32_t topic_len;
    wm_mqtt5_bytes peids[WM_MQTT_MAX_PEIDS];
    uint32_t n_peids;
    const wm_mqtt5_packet *pkt;   /* the decoded packet (qos, payload, properties) */
    bool will;                    /* a Will Message the broker publishes (built from the
                                     CONNECT: type PUBLISH, qos, retain, topic, Will
                                     Properties, payload), not a client PUBLISH */
    bool retained;                /* a retained message the broker sends client (the
                                     subscriber, not the publisher) for its new
                                     subscription: the broker's PUBLISH as sent */
};

/* One filter of a SUBSCRIBE (or of an UNSUBSCRIBE the broker's UNSUBACK
 * accepted: only client and filter). */
struct wm_mqtt_subscribe {
    const char *client;
    uint32_t client_len;
    wm_mqtt5_bytes filter;
    uint32_t subscription_id;     /* 0 = none (§3.8.2.1.2) */
    wm_mqtt5_bytes nbhd;          /* `nbhd` user property; p NULL = none (an empty value is
                                     present: it names no neighborhood, refused) */
    wm_mqtt5_bytes xpath;         /* `xpath` user property (content filter); p NULL = none
                                     (an empty value is present: no query, refused) */
    uint8_t qos;
    bool no_local;
    uint32_t max_packet;          /* the subscriber's CONNECT Maximum Packet Size (0: none, §3.1.2.11.4) */
};

/* How the sink took a subscription. */
enum wm_mqtt_sub_status {
    WM_MQTT_SUB_INSTALLED = 0,
    WM_MQTT_SUB_NBHD_UNKNOWN, /* names no neighborhood of the loaded resolution: not installed */
    WM_MQTT_SUB_REJECTED,     /* the matcher refused it (full, invalid): not installed */
    WM_MQTT_SUB_XPATH_INVALID,/* its `xpath` compiles for no registered schema: not installed */
    WM_MQTT_SUB_FULL,         /* a bound of the table (--max-subs, --max-trie-nodes) is reached: not installed */
    WM_MQTT_SUB_QUOTA,        /* its client's share of the trie (--client-trie-nodes) is used: not
                                 installed (a broker enforcing it would answer 0x97 Quota exceeded, §3.9.3) */
};

/* A session's lifetime, as the broker's answers show it (mqtt_session.h
 * header comment). */
enum wm_mqtt_session_kind {
    WM_MQTT_SESSION_NEW = 0, /* successful CONNACK, Session Present 0: earlier subscriptions are gone */
    WM_MQTT_SESSION_RESUME,  /* successful CONNACK, Session Present 1: the session goes on */
    WM_MQTT_SESSION_END,     /* the connection ended: the session ends now (expiry_s 0) or expires */
};

struct wm_mqtt_session_event {
    enum wm_mqtt_session_kind kind;
    const char *client;           /* the session's client id (view, valid during the call) */
    uint32_t client_len;
    uint64_t conn;                /* the connection (flow id, unique within the worker) */
    uint32_t expiry_s;            /* END: Session Expiry Interval, seconds; 0xFFFFFFFF never expires */
    uint64_t now_ns;              /* packet time of the event (wm_mqtt_layer.now_ns) */
    /* QoS 2 packet ids awaiting PUBREL: END hands the connection's to the
     * session; RESUME lets the sink write the session's back (at most
     * WM_MQTT_QOS2_INFLIGHT) and set *n_qos2. */
    uint16_t *qos2;
    uint32_t *n_qos2;
    /* NEW, RESUME: the Maximum Packet Size of the client's CONNECT (0:
     * none): the broker sends it no larger packet (§3.1.2.11.4). */
    uint32_t max_packet;
};

/* Where sessions report. NULL members are allowed: without publish every
 * client PUBLISH ends as NO_TABLE; without subscribe, subscriptions are
 * counted only; without session, subscriptions outlive their session. All
 * are called on the layer's worker thread. */
struct wm_mqtt_sink {
    /* A filter the broker granted (after its SUBACK). */
    enum wm_mqtt_sub_status (*subscribe)(void *ctx, const struct wm_mqtt_subscribe *s);
    void (*unsubscribe)(void *ctx, const struct wm_mqtt_subscribe *s);
    /* Returns MATCHED, NO_MATCH or MATCH_ERROR. */
    enum wm_mqtt_pub_outcome (*publish)(void *ctx, const struct wm_mqtt_publish *p);
    void *ctx;
    /* A session started, resumed or ended (see wm_mqtt_session_event). */
    void (*session)(void *ctx, const struct wm_mqtt_session_event *e);
};

#define WM_MQTT_COUNTERS(X)                                                      \
    X(sessions)             /* connections given to the layer */                 \
    X(connect_v5)           /* MQTT v5 CONNECTs */                               \
    X(connect_other_version)/* CONNECT of another protocol version: not followed */ \
    X(connack_refused)      /* CONNACK with a reason code >= 0x80: the client is read no further */ \
    X(second_connect)       /* a second CONNECT (Protocol Error, §3.1): the client is read no further */ \
    X(publish_held)         /* client PUBLISHes before the CONNACK, held until it */ \
    X(publish_unheld)       /* ... no copy free (pending_subscribes): matched at once */ \
    X(sessions_new)         /* successful CONNACK, Session Present 0 */          \
    X(sessions_resumed)     /* successful CONNACK, Session Present 1 */          \
    X(sessions_ended)       /* connections of a started session that ended */    \
    X(sessions_unobserved)  /* connections of a live session evicted from the flow table (table full): \
                               the session is NOT ended, its subscriptions stay (the broker still has it) */ \
    X(disconnect_expiry_from_zero) /* DISCONNECT expiry set from 0: Protocol Error, not taken */ \
    X(server_disconnects)   /* broker DISCONNECT: the client is followed no further */ \
    X(limit_qos)            /* client PUBLISH above the CONNACK Maximum QoS (0x9B) */ \
    X(limit_retain)         /* retained PUBLISH, CONNACK Retain Available 0 (0x9A) */ \
    X(qos2_duplicates)      /* QoS 2 PUBLISH again while its id awaits PUBREL (any DUP flag) */ \
    X(qos2_duplicates_dup0) /* ... of which with DUP 0 (a client that breaks §3.3.1.1; mosquitto too takes \
                               them for the same message) */ \
    X(qos2_untracked)       /* QoS 2 ids beyond WM_MQTT_QOS2_INFLIGHT: matched at the PUBLISH, a resend \
                               would count again */ \
    X(qos2_pubrec_errors)   /* broker PUBREC >= 0x80: the QoS 2 id released (§4.3.3) */ \
    X(qos2_held)            /* QoS 2 PUBLISHes copied to be matched at their PUBREL */ \
    X(qos2_released)        /* ... matched at their PUBREL */                    \
    X(qos2_at_publish)      /* QoS 2 PUBLISH over cfg.qos2_max or no slot free: matched at the PUBLISH */ \
    X(qos2_pubrel_unknown)  /* PUBREL of an id not awaiting one (its PUBLISH unseen): nothing matched */ \
    X(qos2_pubrel_no_copy)  /* PUBREL of an id whose copy is in another worker's pool (the shared store was \
                               full, or none): nothing matched */ \
    X(qos2_waiting)         /* gauge: copies awaiting their PUBREL held here (live sessions; detached ones \
                               without a shared store, or that found it full) */ \
    X(qos2_detached_shared) /* copies a detaching session left in the shared store (qos2_store.h) */ \
    X(qos2_resumed_shared)  /* ... taken from it by a session resumed here (left by any worker) */ \
    X(qos2_shared_full)     /* ... that found it full: kept here, found only by a resume on this worker */ \
    X(publish_refused_by_broker) /* broker PUBACK / PUBREC >= 0x80: a QoS 1/2 PUBLISH it did not accept \
                                    (its match-log line, written at the PUBLISH, stays) */ \
    X(wills_kept)           /* CONNECT Wills copied into the pool */            \
    X(wills_too_large)      /* Will topic + properties + payload over cfg.will_max: never matched */ \
    X(wills_untracked)      /* no Will slot free (cfg.wills): never matched */  \
    X(wills_discarded)      /* not published: DISCONNECT without 0x04, or the CONNECT never accepted */ \
    X(wills_delayed)        /* Wills that waited for their Will Delay Interval */ \
    X(wills_waiting)        /* ... still waiting (gauge; the end of the run publishes none) */ \
    X(wills_held_at_end)    /* Wills of connections still open when the run ended: not published */ \
    X(wills_unobserved)     /* Wills of connections evicted from the flow table: their end is never seen */ \
    X(wills_cancelled)      /* ... cancelled: the session resumed before the delay (§3.1.3.2.2) */ \
    X(wills_published)      /* Wills the broker publishes: = matched + no_match + dropped */ \
    X(wills_matched)        /* ... reaching at least one subscription */       \
    X(wills_no_match)       /* ... reaching none */                             \
    X(wills_dropped)        /* ... not looked up: no table, > WM_PEIDS_MAX peids, matcher error */ \
    X(retained_sent)        /* broker PUBLISH, RETAIN 1, right after a SUBACK: a retained message for \
                               the new subscription (§3.3.1.3) = matched + no_match + dropped */ \
    X(retained_matched)     /* ... reaching one of the subscriber's subscriptions */ \
    X(retained_no_match)    /* ... reaching none (e.g. outside the subscription's neighborhood) */ \
    X(retained_dropped)     /* ... not looked up: no table, > WM_PEIDS_MAX peids, matcher error */ \
    X(retained_forwarded)   /* broker PUBLISH, RETAIN 1, elsewhere: Retain As Published forwarding of \
                               a message matched at its PUBLISH; no line */ \
    X(client_id_too_long)   /* client id over WM_MQTT_CLIENT_ID_MAX: its connection not followed */ \
    X(not_connected)        /* client packets before a v5 CONNECT */             \
    X(publish_seen)         /* client -> server PUBLISH (fixed header seen) */   \
    X(publish_from_server)                                                       \
    X(subscribe_filters)    /* filters in client SUBSCRIBEs */                   \
    X(subs_granted)         /* filters the broker's SUBACK granted (< 0x80) */   \
    X(subs_refused_by_broker) /* ... refused (>= 0x80): never installed */       \
    X(subscribes_unacknowledged) /* SUBSCRIBEs whose SUBACK never came (connection ended) */ \
    X(subs_after_session_end) /* granted after the session ended (expiry 0): not installed */ \
    X(subscribe_untracked)  /* SUBSCRIBEs not kept: pending_subscribes full, or the session's share */ \
    X(pending_over_share)   /* (UN)SUBSCRIBEs and held PUBLISHes not kept: their session held
                               pending_per_session copies or a sixteenth of cfg.pending_bytes (also in \
                               *_untracked, publish_unheld) */ \
    X(pending_bytes_full)   /* ... not kept: the copies' bytes (cfg.pending_bytes) are taken (also in \
                               *_untracked, publish_unheld) */ \
    X(suback_unknown)       /* SUBACK for no pending SUBSCRIBE (or fewer codes than filters) */ \
    X(subs_installed)                                                            \
    X(subs_nbhd_unknown)                                                         \
    X(subs_xpath_invalid)   /* `xpath` refused (reason: match.last_xpath_error) */ \
    X(subs_full)            /* refused: a bound of the table (--max-subs, --max-trie-nodes) */ \
    X(subs_quota)           /* refused: the client's share of the trie (--client-trie-nodes; 0x97) */ \
    X(subs_rejected)        /* refused by the matcher otherwise (invalid) */     \
    X(unsubscribe_filters)  /* filters in client UNSUBSCRIBEs */                 \
    X(unsubs_removed)       /* ... the UNSUBACK answered 0x00: removed */        \
    X(unsubs_no_subscription) /* ... 0x11 No subscription existed: removed too (if held) */ \
    X(unsubs_refused_by_broker) /* ... >= 0x80: the subscription stays */      \
    X(unsubscribes_unacknowledged) /* UNSUBSCRIBEs whose UNSUBACK never came (connection ended) */ \
    X(unsubscribe_untracked) /* UNSUBSCRIBEs not kept: pending_subscribes full; they remove nothing */ \
    X(unsuback_unknown)     /* UNSUBACK for no pending UNSUBSCRIBE (or fewer codes than filters) */ \
    X(alias_set)                                                                 \
    X(alias_used)                                                                \
    X(alias_beyond_bound)   /* alias number > WM_MQTT_MAX_ALIASES */             \
    X(alias_topic_too_long)                                                      \
    X(alias_pool_full)                                                           \
    X(staged_packets)       /* packets assembled from several chunks */          \
    X(staged_bytes)                                                              \
    X(zero_copy_packets)    /* packets decoded in place */                       \
    X(too_large_packets)                                                         \
    X(skipped_bytes)        /* bytes of packets skipped (too large, no staging) */ \
    X(staging_full)                                                              \
    X(truncated_packets)    /* streams that ended inside a packet */             \
    X(dirs_broken)          /* directions stopped by a malformed packet */       \
    X(ignored_bytes)        /* bytes after a direction stopped */                \
    X(unread_bytes)         /* client bytes the broker does not read: after its DISCONNECT, a refusing \
                               CONNACK, a second CONNECT (§3.14.4, §3.1.4, §3.1) */

struct wm_mqtt_counters {
#define WM_MQTT_X_FIELD(n) uint64_t n;
    WM_MQTT_COUNTERS(WM_MQTT_X_FIELD)
#undef WM_MQTT_X_FIELD
    uint64_t packets[2][16];                       /* by direction (WM_DIR_*) and type */
    uint64_t malformed[WM_MQTT5_E_COUNT_];         /* by codec reason, any packet */
    uint64_t publish[WM_MQTT_PUB_OUTCOME_COUNT];   /* client PUBLISH outcomes */
};

struct wm_mqtt_config {
    uint32_t max_packet;      /* bytes; larger packets are skipped (default 65536) */
    uint32_t staging_buffers; /* split packets assembled at once per worker (default 64) */
    uint32_t alias_slots;     /* aliased topics kept per worker (default 8192) */
    uint32_t pending_subscribes; /* SUBSCRIBEs and UNSUBSCRIBEs awaiting their ack per worker (default 1024) */
    uint32_t pending_per_session; /* ... of them one session may hold (0: pending_subscribes / 16, at least 1;
                                     default 0, so 64 of 1024) */
    uint32_t wills;           /* Wills kept per worker: live connections' and delayed ones (default 1024) */
    uint32_t will_max;        /* bytes of one Will: topic + properties + payload (default 2048) */
    uint32_t qos2_held;       /* QoS 2 PUBLISHes held for their PUBREL per worker (default 1024) */
    uint32_t qos2_max;        /* bytes of one: resolved topic + the PUBLISH (default 4096) */
    uint32_t pending_bytes;   /* bytes of all pending copies per worker, in WM_MQTT_PEND_CHUNK pieces (default
                                 262144; at most 2^30); one session holds at most a sixteenth of them */
};
/* Fills *cfg with the defaults written beside each field above (units:
 * bytes and counts per worker), the configuration build/wirematch runs
 * with; the caller then changes what its options set. Pure, any thread. */
void wm_mqtt_config_default(struct wm_mqtt_config *cfg);

struct wm_mqtt_layer {
    struct wm_mqtt_config cfg;
    struct wm_mqtt_sink sink;
    struct wm_mqtt_counters c;
    uint8_t *stage_mem;       /* staging_buffers * max_packet */
    uint32_t *stage_free;     /* stack of free staging buffer indices */
    uint32_t stage_free_n;
    uint8_t *alias_mem;       /* alias_slots * (WM_MQTT_ALIAS_TOPIC_MAX + 2) */
    uint32_t *alias_free;
    uint32_t alias_free_n;
    uint64_t next_seq;
    uint32_t pending_n;       /* (UN)SUBSCRIBEs awaiting their ack (<= cfg.pending_subscribes) */
    struct pend_sub *pend_slots; /* cfg.pending_subscribes slots */
    struct pend_sub *pend_free; /* free slots (NULL: none) */
    uint8_t *pend_data;       /* the copies' chunks: cfg.pending_bytes rounded up to WM_MQTT_PEND_CHUNK */
    uint32_t *pend_chunk_next; /* per chunk: the next of its copy or of the free list (UINT32_MAX: none) */
    uint32_t pend_chunk_free; /* first free chunk (UINT32_MAX: none) */
    uint32_t pend_chunks_free;
    uint32_t pend_chunk_share; /* chunks one session may hold */
    uint8_t *pend_scratch;    /* cfg.max_packet bytes: a copy of several chunks, made contiguous to decode */
    struct wm_mqtt_will *wills; /* cfg.wills slots */
    uint8_t *will_data;       /* cfg.wills * cfg.will_max */
    uint32_t will_free;       /* first free slot (index), UINT32_MAX none */
    uint64_t will_next_ns;    /* earliest deadline of a delayed Will (UINT64_MAX: none) */
    struct wm_mqtt_q2 *q2;    /* cfg.qos2_held slots */
    uint8_t *q2_data;         /* cfg.qos2_held * cfg.qos2_max */
    uint32_t q2_free;         /* first free slot (index), UINT32_MAX none */
    uint32_t q2_detached;     /* slots of detached sessions */
    uint64_t q2_next_ns;      /* earliest expiry of a detached one (UINT64_MAX: none) */
    struct wm_qos2_store *store; /* detached sessions' copies shared by the workers (NULL: kept here) */
    /* Packet time in ns (the clock of wm_pkt_path_frame's now_ns): the
     * caller sets it before each frame. Session expiry is measured in it. */
    uint64_t now_ns;
    uint32_t publish_matched_in_frame; /* set by the layer when a PUBLISH of the current frame matched */
};

/* Publishes the delayed Wills whose deadline has passed at l->now_ns
 * (mqtt_session.h header comment), in deadline order, through the sink.
 * Call on the layer's worker once per burst, AFTER the sink's session
 * expiry (wm_match_worker_quiescent) at the same time, so that a Will due
 * when its session expires finds the session's subscriptions gone. One
 * comparison when nothing is due. */
void wm_mqtt_layer_tick(struct wm_mqtt_layer *l);

/* The run ends (after wm_flow_table_flush, on the layer's worker): the
 * QoS 2 messages of detached sessions still awaiting their PUBREL end as
 * UNRELEASED, so that the PUBLISH outcomes sum up; delayed Wills stay
 * counted in wills_waiting. Idempotent. */
void wm_mqtt_layer_finish(struct wm_mqtt_layer *l);

/* Several workers: the sessions that detach on l leave their QoS 2 copies
 * in st (qos2_store.h), where a resume on any worker's layer finds them;
 * NULL (the default) keeps them in l's pool, found by resumes on l only.
 * Set before the first packet; every layer of the run gets the same st. */
void wm_mqtt_layer_set_qos2_store(struct wm_mqtt_layer *l, struct wm_qos2_store *st);

/* Once every worker has run wm_mqtt_layer_finish and none runs: the copies
 * still in l's shared store end as UNRELEASED, counted in l (any layer of
 * the run; nothing without a store). */
void wm_mqtt_layer_finish_shared(struct wm_mqtt_layer *l);

/* Bytes of consumer state per connection: the flow table's user_size. */
size_t wm_mqtt_session_size(void);

/* Bytes of caller memory wm_mqtt_layer_init needs (8-byte aligned). */
size_t wm_mqtt_layer_memsize(const struct wm_mqtt_config *cfg);

/* Initialises l over mem. sink may be NULL. Returns 0, or -1 if cfg is
 * invalid (max_packet < 16 or > 268435460, will_max > 268435455,
 * qos2_max > 268435460, pending_bytes > 2^30). */
int wm_mqtt_layer_init(struct wm_mqtt_layer *l, void *mem, const struct wm_mqtt_config *cfg,
                       const struct wm_mqtt_sink *sink);

/* The flow-table consumer: pass with ctx = l to wm_flow_table_init /
 * wm_pkt_path_init, whose user_size must be >= wm_mqtt_session_size(). */
extern const struct wm_stream_ops wm_mqtt_stream_ops;

/* The client id of a connection's session ("" before CONNECT). */
const char *wm_mqtt_session_client(struct wm_flow *f, uint32_t *len);

/* 1 if publish_seen == sum of publish outcomes (all streams ended), else 0. */
int wm_mqtt_publish_conserved(const struct wm_mqtt_counters *c);

#endif
