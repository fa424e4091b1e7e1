/* Spatial filtering of one proxied connection (issue 7): the MQTT v5 packets
 * the proxy must look into, and what it does with them so that an
 * unmodified broker and unmodified clients get neighborhood subscriptions.
 *
 * Client -> broker
 *   SUBSCRIBE with an `xpath` User Property (with or without `nbhd`; the
 *     first one applies to every filter of the packet): a content filter,
 *     validated against every schema of --schemas (control/content_filters.h);
 *     one that compiles for none (or no --schemas) is answered by the proxy
 *     with SUBACK 0x80 for every filter and the Reason String "invalid xpath:
 *     REASON" and never reaches the broker. A valid one is recorded with the
 *     subscription; without a client identifier it gets a proxy identifier
 *     of its own (below), so its deliveries are attributed to it. The
 *     SUBSCRIBE waits (WM_PROXY_HOLD) until its text is compiled (see
 *     wm_proxy_content). A connection holds at most max_texts distinct
 *     texts (recorded or awaited; a text only the records a SUBSCRIBE
 *     replaces hold does not count for it): one more gets SUBACK 0x97 and a
 *     Reason String; so does a new text when the worker's connections
 *     already await max_awaiting texts (wm_proxy_content). A SUBSCRIBE still
 *     held when its client leaves is dropped (wm_proxy_filter_client_gone).
 *   SUBSCRIBE with a `nbhd` User Property (the first one names the
 *     neighborhood of every filter of the packet, as in the data plane,
 *     dataplane/mqtt_session.c): an unknown neighborhood is answered by the
 *     proxy itself with a SUBACK 0x80 for every filter and a Reason String
 *     (§3.9.2.1.2; omitted if the client asked for no problem information,
 *     §3.1.2.11.7); the SUBSCRIBE never reaches the broker, so broker and
 *     client agree that nothing was installed. A known neighborhood without
 *     a Subscription Identifier gets one added: the session's next proxy
 *     identifier (WM_PROXY_SID_BASE up, one per SUBSCRIBE). An identifier
 *     names one record for the life of the session: none is used twice in
 *     a session (not after a reload, which renumbers neighborhoods and
 *     content slots, nor after an UNSUBSCRIBE, whose queued deliveries the
 *     broker may still send with it), the session entry handing them out
 *     (wm_proxy_registry_session_sid: one numbering across connections;
 *     with --state only below the reservation the file on disk holds, the
 *     SUBSCRIBE waiting, WM_PROXY_HOLD, for the save that writes one and
 *     dropped if its client leaves meanwhile); a session out of them gets
 *     SUBACK 0x97. On the wire the identifier is turned by the process's epoch
 *     (sid_epoch: BASE + (sid - BASE + epoch) mod WM_PROXY_SID_SPAN; the
 *     records and the session table keep the session's own numbering). A
 *     persistent session outlives the process at the broker, and a new
 *     process, which starts the session's numbering again, must not hand
 *     out an identifier under which the broker still delivers for a
 *     subscription of the old one (it would be judged by the new record,
 *     e.g. a second copy for an overlapping filter): with a random epoch per
 *     process, the identifiers of two processes for one session meet only
 *     if those ranges overlap, a chance of (used by the old + by the new) /
 *     16,777,215; what the old one's deliveries carry then matches no
 *     record and is withheld. A client's own identifier is kept. Either is recorded with the neighborhood (see
 *     Sessions below). A subscription with neither gets
 *     WM_PROXY_SID_PLAIN, so that every delivery says what it was delivered
 *     for even when the broker sends one PUBLISH for several overlapping
 *     subscriptions (§3.3.4: then it lists all their identifiers, and a
 *     subscription without one would be invisible). Identifiers >= WM_PROXY_SID_BASE are
 *     the proxy's: a client SUBSCRIBE using one gets SUBACK 0x83.
 *   A shared subscription ($share/G/F) whose members on this process's
 *     connections (the connection's own records of that filter, which it
 *     replaces, aside) use another neighborhood or xpath (or none) is refused by
 *     the proxy with SUBACK 0x9E and a Reason String naming theirs: the
 *     broker gives each message to one member, whose filter would withhold
 *     what the others want (dataplane/proxy_share.h).
 *   Every SUBSCRIBE is recorded per filter once the broker's SUBACK grants
 *     it (a refused filter is forgotten), replacing an earlier record of the
 *     same filter (§3.8.4). An UNSUBSCRIBE is kept until its UNSUBACK,
 *     which forgets the records of each filter it answers 0x00 or 0x11
 *     made by SUBSCRIBEs before it (the broker applies them in the order
 *     they came, §4.6); a filter answered >= 0x80 stays (§3.11.3: not
 *     deleted). One whose UNSUBACK never came is taken as applied when the
 *     connection ends.
 *   CONNECT: the client's identifier, Clean Start, Request Problem
 *     Information and Session Expiry Interval (DISCONNECT may change the
 *     latter).
 *   PUBLISH with --prefilter: a PUBLISH that no subscription registered in
 *     the process (dataplane/proxy_registry.h) can receive is withheld from
 *     the broker and acknowledged to the client with reason 0x10 No
 *     matching subscribers (PUBACK; PUBREC, then PUBCOMP for its PUBREL);
 *     retained messages always go on (a later subscriber receives them).
 *     A subscription with a content filter counts only for a PUBLISH whose
 *     Content Type names an EXI schema of the registry in force (any other
 *     is withheld by every content filter, below); its query is not
 *     evaluated at ingress (that would decode the payload).
 *     Client topic aliases are handled as the broker's below.
 *
 * Broker -> client
 *   PUBLISH: forwarded if at least one subscription it was delivered for
 *     passes (a record with a content filter passes only if, besides the
 *     rules below, its filter selects something in the payload: the payload
 *     is decoded once, whole stream validated, with the schema its Content
 *     Type "application/exi; schema=NAME" names, for all such records; no
 *     or another Content Type, an unknown schema or a bad payload passes
 *     none of them, counted by reason): WM_PROXY_SID_PLAIN or no Subscription Identifier at all (a
 *     subscription without neighborhood, possibly made before the proxy), an
 *     identifier recorded (with a filter matching the topic) without
 *     neighborhood or with one that contains one of the PUBLISH's `peid`
 *     User Properties, or a client identifier (< WM_PROXY_SID_BASE) that
 *     matches no record on a session whose subscriptions are all known. A
 *     proxy identifier matching no record, or any identifier on a session
 *     that may hold subscriptions the proxy does not know, is withheld
 *     (counted: filter_unknown_sid), never guessed. Proxy identifiers are
 *     removed from what the client receives.
 *   A withheld QoS 1 PUBLISH is acknowledged to the broker (PUBACK), a QoS 2
 *     one received (PUBREC) and the broker's PUBREL for it completed
 *     (PUBCOMP) and not forwarded, so the broker's in-flight window towards
 *     the client (its Receive Maximum, §4.9) never fills with messages the
 *     client will never see.
 *   Topic aliases (§3.3.2.3.4): every binding the broker makes is
 *     remembered with whether the client saw it; an alias-only PUBLISH whose
 *     binding the client did not see (it was set up by a withheld PUBLISH)
 *     is forwarded with the full topic and the alias, which binds it for the
 *     client too.
 *   SUBACK: installs or forgets the pending records of its SUBSCRIBE.
 *   UNSUBACK: forgets the records its UNSUBSCRIBE's granted filters had.
 *   CONNACK (successful): the session the broker continues or starts.
 *
 * Sessions (MQTT v5 §4.1): a subscription outlives its connection when the
 *   session does (Clean Start 0 resumes it, queued QoS 1/2 deliveries
 *   included). The records are mirrored into the process-wide registry
 *   (dataplane/proxy_registry.h) under the client identifier, and the
 *   connection that resumes the session (CONNACK Session Present 1) takes
 *   them back, neighborhoods resolved again by name (a name no longer in
 *   the resolution contains nothing) and content filters compiled again
 *   from their text (one that compiles for no schema passes nothing). A fresh session (Clean Start 1,
 *   Session Present 0) drops what was kept. A session the registry cannot
 *   vouch for (resumed without an entry: the proxy restarted, the table was
 *   full; or an entry that lost records) makes the connection withhold
 *   every delivery it cannot attribute. With the table full, a
 *   neighborhood SUBSCRIBE on a session that outlives its connection is
 *   refused (SUBACK 0x97) rather than made unrecoverable.
 *
 * Packets the proxy sends itself go into the queue towards the packet's
 * sender (`back`), at its framed end, so they follow what is already queued,
 * and after the peer's answers to that side's earlier packets: an answer
 * that must wait for them is queued by the framer right after the one it
 * waits for (dataplane/proxy_answers.h, wm_proxy_filter.answers).
 * A packet that must change is re-encoded into the caller's scratch buffer
 * (codec/mqtt5_encode.h) and the caller replaces the original with it.
 *
 * Memory: records and alias bindings are allocated on SUBSCRIBE / alias
 * binding, the client identifier on CONNECT (never per delivered message,
 * except the list of the client's identifiers of a PUBLISH rewritten with
 * more than 64 of them), bounded by max_records per connection and by the
 * Topic Alias Maximum the receiver announced.
 * One connection, one thread.
 */
#ifndef WM_DATAPLANE_PROXY_FILTER_H
#define WM_DATAPLANE_PROXY_FILTER_H

/* Bytes of one proxy Subscription Identifier property on the wire (0x0B and
 * a 4-byte Variable Byte Integer: WM_PROXY_SID_BASE and up). The client's
 * Maximum Packet Size goes to the broker this much larger (proxy_frame.h),
 * since the broker counts the identifier the proxy strips; a delivery that
 * still exceeds the client's own bound once rewritten is discarded as
 * §3.1.2.24 says and completed towards the broker like a withheld one. */
#define WM_PROXY_SID_ROOM 5

#include <stdbool.h>
#include <stdint.h>

#include "codec/mqtt5_packet.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_answers.h"
#include "dataplane/proxy_compile.h"
#include "dataplane/proxy_queue.h"
#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_spatial.h"
#include "control/content_filters.h"

/* What the caller does with the packet it handed over. */
typedef enum wm_proxy_action {
    WM_PROXY_KEEP = 0,   /* forward unchanged */
    WM_PROXY_DROP,       /* withhold: remove it from the queue */
    WM_PROXY_REPLACE,    /* forward scratch[0..*out_len) instead */
    WM_PROXY_FAIL,       /* no room for a packet the proxy had to send: close the connection */
    WM_PROXY_HOLD,       /* not yet: leave it (and what follows but PINGREQ/PINGRESP) unframed;
                            present it again once wm_proxy_content_poll says a compile ended */
} wm_proxy_action;

/* The content filters of one worker's connections (--schemas): the XPath
 * texts of their `xpath` subscriptions interned in one table over the
 * schema registry in force, recompiled (one automaton per schema) when a
 * text comes or goes, and this worker's reader of the current snapshot.
 * One thread: a replaced snapshot is freed at once. A reload of the
 * registry replaces the table as a whole (wm_proxy_filter_reload_begin).
 *
 * Compiles happen on the process's compile thread (dataplane/proxy_compile.h),
 * never on the worker (finding 7: one client's 100 new matches() texts
 * stalled every connection of its worker for 20 s). A SUBSCRIBE whose text
 * is not compiled yet takes an interest (wm_content_want: no compile) and
 * answers HOLD: the framer stops that client's stream at it, and looks at
 * the packets already received behind it so that their texts join the same
 * compile (wm_proxy_filter_prefetch). The worker serves its other
 * connections meanwhile. At most one compile per worker is in flight; the
 * texts that come meanwhile all go into the next one (N pipelined
 * SUBSCRIBEs cost a few compiles, not N). When a compile is published the
 * held streams are framed again: the SUBSCRIBE finds its text READY and goes
 * to the broker only now, so the broker never delivers for a filter that
 * does not exist yet; or REFUSED, and the proxy answers SUBACK 0x80. The
 * client's later packets stay behind its SUBSCRIBE, except PINGREQ, which
 * passes it (proxy_frame.h: one goes on to the broker while the proxy
 * answers the others), so that a held client's keep-alive reaches the
 * broker (§3.1.2.10: the broker closes a client it hears nothing from for
 * 1.5 x Keep Alive; REVIEW6 finding 2) and the client gets its PINGRESPs.
 *
 * A session resumed with texts the table lacks (restored records) takes
 * interests too (PENDING slots, no compile on the worker; REVIEW6 finding
 * 1: such a resume compiled on the worker and stalled all its clients for
 * 16-35 s): its CONNACK goes to the client at once, and the broker's
 * packets to it stop at the first PUBLISH (WM_PROXY_HOLD on that
 * direction, PINGRESP excepted) until no record's text is PENDING; then
 * every delivery is judged by compiled filters, in the broker's order. A
 * text that compiles for no schema passes nothing. The only compile left on
 * the worker is a reload's (with every recorded text, as before).
 *
 * Bounds and fairness (REVIEW6 finding 2): each worker has its own compile
 * thread, so one worker's burst never delays another's compiles. Within a
 * worker, the interests awaiting a compile are bounded by max_awaiting (a
 * new text beyond it: SUBACK 0x97 "... awaiting a compile ...; try again
 * later", §3.9.3 Quota exceeded, counted filter_suback_compile_busy). A
 * compile whose every new text lost its client (it left while held) is
 * cancelled (control/content_filters.h wm_content_job_cancel: between two
 * texts' validations, or before the set build; a build already started
 * runs to its end). What stays: one automaton per worker, so a client's
 * trivial text waits for the compile in flight and is compiled with every
 * live text of the worker (up to max_texts per connection): a connection's
 * heavy texts slow every later compile of its worker.
 *
 * Slots are reused: a text whose last record went leaves its slot, and the
 * next new text takes it once the table has been committed without it
 * (control/content_filters.h). The worker's thread is the table's only
 * writer and only reader and rebuilds its reader on every snapshot it
 * commits, freeing the old one, so no snapshot that still maps the slot to
 * the old text survives the commit: the grace period is over when the
 * commit returns. A record always holds a reference to its slot (a query
 * that compiles for no schema has slot 0 and no reference); everything
 * else that outlives it — the session entry (dataplane/proxy_registry.h), a
 * reload's retry of a query gone from the registry — keeps the TEXT and
 * looks the slot up again, and a delivery queued for a record that went is
 * attributed by its Subscription Identifier, which no other record of the
 * session ever carries. So a reused slot never decides for an old record.
 * Bound: WM_CONTENT_MAX_SLOTS texts live at once per worker. */
typedef struct wm_proxy_content {
    wm_content *tab;
    wm_content_reader *rd;
    wm_proxy_compiler *cc;        /* the compile thread; NULL: compiles run inline (tests, tools) */
    wm_proxy_compile_req req;     /* req.job: the compile in flight, NULL = none */
    wm_proxy_counters *cnt;       /* compiles are counted here (may be NULL) */
    uint32_t awaiting;            /* interests of held SUBSCRIBEs (wm_proxy_filter want) on this table */
    uint32_t max_awaiting;        /* their bound: a new text beyond it is refused (0x97) */
    bool dropped;                 /* a reference went since the last kick (the compile in flight may be stale) */
    size_t mem_cap;               /* memory for decoding one payload (wm_exi_limits.mem_cap), 0 = codec default */
} wm_proxy_content;

/* Opens ct: an empty table over reg (borrowed: it must outlive the table),
 * slots reused as above, no reader until the first commit. cc, req.wake_fd,
 * cnt, max_awaiting and mem_cap are the caller's to set (a reload keeps them). Returns 0, or -1
 * on out of memory (ct->tab NULL). One thread. */
int wm_proxy_content_open(wm_proxy_content *ct, const wm_schema_reg *reg);
/* Frees ct's reader and table (not the registry); ct may be opened again.
 * Its compile in flight is abandoned, not waited for
 * (wm_proxy_compiler_abandon): a running one still reads the registry until
 * it ends, so the registry must then outlive it (the process exits). After
 * it no compile thread writes ct->req.wake_fd (the caller may close it). */
void wm_proxy_content_close(wm_proxy_content *ct);
/* Starts a compile of what changed in ct's table (texts wanted or dropped)
 * if none is in flight: on cc, or inline without one. Cheap when nothing
 * changed: the worker calls it once per loop turn, so everything a turn
 * brought goes into one compile. A compile in flight whose new texts all
 * lost their interests since is cancelled (counted filter_content_cancelled). */
void wm_proxy_content_kick(wm_proxy_content *ct);
/* Publishes the compile in flight if it has run: a new snapshot and reader
 * (held SUBSCRIBEs may go on: frame them again), and starts the next one
 * if texts came meanwhile. Returns true if one was published. */
bool wm_proxy_content_poll(wm_proxy_content *ct);

/* Configuration shared by the connections of one worker. */
typedef struct wm_proxy_filter_shared {
    wm_proxy_content *content;    /* NULL without --schemas: an `xpath` SUBSCRIBE is refused */
    const wm_proxy_spatial *sp;   /* the resolution in force (not NULL) */
    uint32_t max_records;         /* recorded subscriptions per connection */
    wm_proxy_registry *reg;       /* sessions (and --prefilter) of the process; NULL = neither */
    wm_matcher_reader *rd;        /* this worker's reader of reg's matcher (--prefilter), else NULL */
    uint64_t rd_gen;              /* the matcher generation rd reads (wm_proxy_registry_reader) */
    uint32_t sid_epoch;           /* the process's turn of proxy identifiers on the wire (below), < WM_PROXY_SID_SPAN */
    uint32_t max_texts;           /* distinct content-filter texts per connection (recorded or awaited);
                                     a SUBSCRIBE with one more gets SUBACK 0x97 */
} wm_proxy_filter_shared;

typedef struct wm_proxy_sub_rec wm_proxy_sub_rec;
typedef struct wm_proxy_unsub wm_proxy_unsub;
typedef struct wm_proxy_alias_tab {
    uint32_t max;                 /* aliases 1..max tracked (0 = table not allocated) */
    uint8_t **topic;              /* [max + 1]: 2-byte big-endian length + bytes, or NULL */
    uint8_t *known;               /* [max + 1]: the receiver saw the current binding */
} wm_proxy_alias_tab;

typedef struct wm_proxy_filter {
    const wm_proxy_filter_shared *sh;
    wm_proxy_counters *c;         /* the worker's counters */
    wm_proxy_sub_rec *recs;
    uint32_t n_recs, cap_recs;
    uint32_t n_nbhd_recs;         /* records with a neighborhood or a content filter */
    wm_proxy_unsub *unsubs;       /* UNSUBSCRIBEs relayed, awaiting their UNSUBACK, oldest first */
    uint32_t n_unsubs, cap_unsubs, unsub_bytes; /* bounded (proxy_filter.c): beyond, one applies at once */
    uint64_t order;               /* SUBSCRIBEs and UNSUBSCRIBEs relayed: their order at the broker */
    wm_proxy_alias_tab alias[2];  /* by sender: [WM_PROXY_U2C] bindings made by the broker */
    uint64_t *qos2_withheld[2];   /* 65,536 bits by sender: packet ids the proxy sent PUBREC for */
    bool problem_info;            /* the client's Request Problem Information (default 1) */
    uint32_t session_expiry;      /* seconds, CONNECT or DISCONNECT (§3.1.2.11.2, §3.14.2.2.2) */
    uint32_t client_max;          /* the client's own Maximum Packet Size (CONNECT), 0 = none */
    bool sid_unavailable;         /* the broker's CONNACK: Subscription Identifier Available 0 (§3.2.2.3.12) */
    bool clean_start;             /* CONNECT's Clean Start (§3.1.2.4) */
    bool connected;               /* a successful CONNACK was seen */
    bool subs_unknown;            /* the session may hold subscriptions the proxy does not know */
    uint8_t *cid;                 /* client identifier (CONNECT, or the broker's assigned one), malloc'd */
    uint32_t cid_len;
    uint64_t sess_gen;            /* the registry's session entry, 0 = none */
    uint32_t sid_next;            /* the next proxy identifier of the session (never one it used) */
    uint32_t n_texts;             /* distinct content-filter texts of the records */
    uint32_t *want, n_want, cap_want; /* slots of texts awaited by held SUBSCRIBEs (one reference each) */
    wm_proxy_answers answers[2];  /* by side (as dir): the order of the answers it receives (proxy_answers.h) */
    bool gone;                    /* the client left (wm_proxy_filter_client_gone) */
    bool resume_wait;             /* a resumed session's content filters are not compiled yet: deliveries wait */
} wm_proxy_filter;

/* Starts the state of a new connection; allocates nothing yet. */
void wm_proxy_filter_init(wm_proxy_filter *f, const wm_proxy_filter_shared *sh, wm_proxy_counters *c);

/* Frees records and alias tables; f may be initialised again. The
 * connection leaves its session entry (dataplane/proxy_registry.h), which
 * expires after the Session Expiry Interval. With --prefilter, the
 * subscriptions not kept by a session entry leave the registry now, or when
 * the session expires if the session outlives the connection. */
void wm_proxy_filter_reset(wm_proxy_filter *f);

/* A reload (dataplane/proxy_reload.h) on the worker that owns sh, in three
 * steps at one loop turn, so that its connections never see a mix:
 *   _reload_begin: sh takes the new resolution sp and, with --schemas, a new
 *     content table over `schemas` (the old table and its reader move to
 *     *old); with --prefilter, sh->rd is replaced by a reader of the
 *     registry's current matcher (the rebound one).
 *   _retable, for every connection of the worker: each recorded
 *     neighborhood is resolved again by name, each content filter compiled
 *     again from its text in the new table. A name the resolution lacks
 *     contains nothing, a text that compiles for no schema passes nothing
 *     (their deliveries are withheld: never more than before, never a
 *     guess); both stay recorded and are tried again at the next reload.
 *     Adds the records of each kind to *nbhd_gone / *xpath_gone.
 *     The texts awaited by held SUBSCRIBEs are forgotten with the old
 *     table: framed again, a held SUBSCRIBE asks the new one.
 *   _reload_end: compiles the new table once (one automaton per schema) and
 *     frees *old (after the compile in flight, if any, has run).
 * Compiling the connections' texts is the only work on the worker's
 * thread (as when a subscription comes); files and schemas were compiled
 * by the main thread. Allocation failures leave nothing passing. */
void wm_proxy_filter_reload_begin(wm_proxy_filter_shared *sh, const wm_proxy_spatial *sp,
                                  const wm_schema_reg *schemas, wm_proxy_content *old);
void wm_proxy_filter_retable(wm_proxy_filter *f, uint32_t *nbhd_gone, uint32_t *xpath_gone);
void wm_proxy_filter_reload_end(wm_proxy_filter_shared *sh, wm_proxy_content *old);

/* The client sent its last bytes (EOF) while its stream was held: the
 * texts it awaits are dropped (a compile that only they need is cancelled
 * at the next wm_proxy_content_kick), and its held SUBSCRIBEs whose text
 * is not compiled are dropped when framed again (no SUBACK: nobody reads
 * it; counted filter_xpath_dropped_gone), so the rest of what it sent (a
 * DISCONNECT, say) reaches the broker and the connection ends as the
 * client's. */
void wm_proxy_filter_client_gone(wm_proxy_filter *f);

/* A packet `pkt` from side dir received behind one held (WM_PROXY_HOLD),
 * not framed yet: a SUBSCRIBE with a content filter takes its interest now
 * (within the connection's max_texts), so that its text joins the compile
 * the held one waits for. Changes nothing else; the packet is handled when
 * framed. */
void wm_proxy_filter_prefetch(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt);

/* A packet `pkt` from side dir goes on without being judged: a PINGREQ
 * (PINGRESP) the framer moves in front of a held packet (proxy_frame.h).
 * Counted for the order of the answers as a packet wm_proxy_filter_packet
 * lets through: a PINGREQ is one more of the client's packets the broker
 * answers, a PINGRESP one more broker answer relayed to the client
 * (dataplane/proxy_answers.h). Uncounted, the PINGRESP of a PINGREQ that
 * passed a held SUBSCRIBE was taken for the broker's answer to that
 * SUBSCRIBE once it went, and released the proxy's refusal of a later
 * SUBSCRIBE ahead of its SUBACK (proxy_ack_order "late"). The caller moves
 * the answers this makes due into the queue right after the packet. */
void wm_proxy_filter_passed(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt);

/* Handles one decoded packet `pkt` sent by side dir (WM_PROXY_C2U /
 * WM_PROXY_U2C). cfg[2] are the decoder configurations of the session
 * (cfg[d] = limits announced by the receiver of direction d). `back` is the
 * queue towards the sender (packets the proxy answers with are appended at
 * its framed end). scratch holds scratch_cap bytes (at least the packet's
 * length + 65,546) for a replacement. Returns the action; on REPLACE
 * *out_len is its length; HOLD only for a client SUBSCRIBE whose content
 * filter is not compiled yet, or a broker PUBLISH to a resumed session
 * whose content filters are not (above). */
wm_proxy_action wm_proxy_filter_packet(wm_proxy_filter *f, int dir, const wm_mqtt5_packet *pkt,
                                       const wm_mqtt5_config cfg[2], wm_proxy_queue *back,
                                       uint8_t *scratch, uint32_t scratch_cap, uint32_t *out_len);

#endif
