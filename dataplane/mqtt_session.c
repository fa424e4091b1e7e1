/* MQTT v5 session layer; see mqtt_session.h. */
#include "dataplane/mqtt_session.h"

#include <string.h>

#include "codec/mqtt5_props.h"
#include "codec/mqtt5_reason.h"
#include "dataplane/qos2_store.h"

#define NO_BUF UINT32_MAX
#define ALIAS_SLOT_SIZE (WM_MQTT_ALIAS_TOPIC_MAX + 2)

/* DS_UNREAD: the broker reads no more of this client (its DISCONNECT, a
 * refusing CONNACK, a second CONNECT): what follows is counted apart. */
enum dir_state { DS_OPEN = 0, DS_BROKEN, DS_IGNORED, DS_UNREAD };
enum sess_state { SS_NONE = 0, SS_CONNECTED, SS_OTHER_VERSION }; /* OTHER_VERSION: not followed */

struct mqtt_dir {
    uint8_t state;          /* enum dir_state */
    uint8_t hdr_len;        /* bytes of a split fixed header in hdr */
    uint8_t cur_type;       /* type of the packet being assembled/skipped */
    uint8_t cur_publish;    /* a client PUBLISH whose outcome is still open */
    uint8_t hdr[5];
    uint32_t stage;         /* staging buffer index or NO_BUF */
    uint32_t stage_len, stage_total;
    uint32_t skip;          /* bytes of a skipped packet still to pass */
    uint32_t alias[WM_MQTT_MAX_ALIASES]; /* alias n -> slot index + 1; 0 = unset */
};

/* A SUBSCRIBE awaiting its SUBACK, an UNSUBSCRIBE awaiting its UNSUBACK,
 * or a PUBLISH awaiting the CONNACK (type): a copy of the packet, decoded
 * again when the answer says what the broker took. A slot of the layer's
 * pool (cfg.pending_subscribes slots), on a session's list or the free list
 * (next); its bytes in a chain of WM_MQTT_PEND_CHUNK-byte chunks of the
 * layer's chunk pool (cfg.pending_bytes), from chunk on (pend_chunk_next):
 * fixed pieces, so that copies of any size share the pool without
 * fragmenting it, and the SUBSCRIBEs of a few hundred bytes most are take
 * one chunk and decode in place. */
struct pend_sub {
    struct pend_sub *next;
    uint32_t len;
    uint32_t chunk;         /* first chunk */
    uint16_t packet_id;
    uint8_t type;           /* WM_MQTT5_SUBSCRIBE, _UNSUBSCRIBE or _PUBLISH */
};
#define PEND_CHUNKS(len) (((len) + WM_MQTT_PEND_CHUNK - 1) / WM_MQTT_PEND_CHUNK)

struct mqtt_session {
    uint8_t state;          /* enum sess_state */
    uint8_t client_len;
    uint8_t clean_start;    /* the CONNECT's Clean Start */
    uint8_t started;        /* a successful CONNACK started or resumed the session */
    uint8_t ended;          /* its end was reported (once per connection) */
    uint8_t connack_seen;   /* the broker's limits below apply */
    uint8_t after_suback;   /* the broker's last packets: a SUBACK granting a filter, then only retained PUBLISHes */
    uint8_t will;           /* a Will the broker publishes if the connection ends without DISCONNECT 0x00 */
    uint32_t will_slot;     /* its copy in the layer's pool: slot + 1, 0 none */
    uint8_t max_qos;        /* CONNACK Maximum QoS (2 when absent) */
    uint8_t retain_ok;      /* CONNACK Retain Available (1 when absent) */
    uint16_t alias_max;     /* CONNACK Topic Alias Maximum (0 when absent) */
    uint32_t max_packet;    /* CONNACK Maximum Packet Size (0: none) */
    uint32_t expiry;        /* Session Expiry Interval, seconds */
    uint32_t client_max_packet; /* the CONNECT's Maximum Packet Size (0: none) */
    uint32_t n_qos2;
    uint16_t qos2[WM_MQTT_QOS2_INFLIGHT]; /* client QoS 2 ids awaiting PUBREL */
    uint32_t qos2_slot[WM_MQTT_QOS2_INFLIGHT]; /* ... their copies: slot + 1, Q2_AT_PUBLISH, Q2_ELSEWHERE */
    struct pend_sub *pend;  /* SUBSCRIBEs awaiting their SUBACK */
    uint32_t pend_n;        /* copies in pend (<= cfg.pending_per_session) */
    uint32_t pend_chunks;   /* their chunks (<= the layer's pend_chunk_share) */
    char client[WM_MQTT_CLIENT_ID_MAX + 1];
    struct mqtt_dir d[2];
};

/* A Will in the layer's pool (mqtt_session.h, "Wills"). Its bytes (topic,
 * properties, payload) are in will_data at slot * will_max. */
enum will_state { W_FREE = 0, W_CONNECT, W_HELD, W_DELAYED };
enum will_sup { SUP_NONE = 0, SUP_NEW, SUP_RESUMED };
struct wm_mqtt_will {
    uint32_t next_free;
    uint8_t state;          /* enum will_state; W_CONNECT until a successful CONNACK */
    uint8_t superseded;     /* W_HELD: a later CONNACK of the client id elsewhere (enum will_sup) */
    uint8_t qos, retain;
    uint8_t client_len;
    char client[WM_MQTT_CLIENT_ID_MAX + 1];
    uint64_t conn;          /* flow id of the connection that set it */
    uint64_t deadline_ns;   /* W_DELAYED: packet time it is published */
    uint32_t delay_s;       /* Will Delay Interval */
    uint32_t topic_len, props_len, payload_len;
};

/* A QoS 2 PUBLISH held for its PUBREL (mqtt_session.h, "QoS 2"). Its
 * bytes (the resolved topic, then the PUBLISH as received) are in q2_data
 * at slot * qos2_max. LIVE: its connection's session refers to it;
 * DETACHED: its session waits for a resume (until deadline_ns). */
enum q2_state { Q_FREE = 0, Q_LIVE, Q_DETACHED };
struct wm_mqtt_q2 {
    uint32_t next_free;
    uint8_t state;
    uint8_t client_len;
    uint16_t packet_id;
    char client[WM_MQTT_CLIENT_ID_MAX + 1];
    uint64_t deadline_ns;
    uint32_t topic_len, len;
};
/* A session's qos2_slot[] besides slot + 1: matched at its PUBLISH already
 * (no copy), its copy is not in this worker's hands (resumed here: in the
 * shared store, or in another worker's pool), or Q2_STORE | entry: an entry
 * of the shared store this layer owns (qos2_store.h). */
#define Q2_AT_PUBLISH 0u
#define Q2_ELSEWHERE UINT32_MAX
#define Q2_STORE 0x80000000u

static const char *const outcome_names[] = {
#define WM_MQTT_X_NAME(e, s) s,
    WM_MQTT_PUB_OUTCOMES(WM_MQTT_X_NAME)
#undef WM_MQTT_X_NAME
};

const char *wm_mqtt_pub_outcome_name(enum wm_mqtt_pub_outcome o)
{
    return (unsigned)o < WM_MQTT_PUB_OUTCOME_COUNT ? outcome_names[o] : "?";
}

void wm_mqtt_config_default(struct wm_mqtt_config *cfg)
{
    cfg->max_packet = 65536;
    cfg->staging_buffers = 64;
    cfg->alias_slots = 8192;
    cfg->pending_subscribes = 1024;
    cfg->pending_per_session = 0;   /* a sixteenth of pending_subscribes (wm_mqtt_layer_init) */
    cfg->wills = 1024;
    cfg->will_max = 2048;
    cfg->qos2_held = 1024;
    cfg->qos2_max = 4096;
    cfg->pending_bytes = 262144;
}

size_t wm_mqtt_session_size(void) { return sizeof(struct mqtt_session); }

static size_t al8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t wm_mqtt_layer_memsize(const struct wm_mqtt_config *cfg)
{
    return al8((size_t)cfg->staging_buffers * cfg->max_packet) + al8((size_t)cfg->staging_buffers * 4) +
           al8((size_t)cfg->alias_slots * ALIAS_SLOT_SIZE) + al8((size_t)cfg->alias_slots * 4) +
           al8((size_t)cfg->wills * sizeof(struct wm_mqtt_will)) + al8((size_t)cfg->wills * cfg->will_max) +
           al8((size_t)cfg->qos2_held * sizeof(struct wm_mqtt_q2)) + al8((size_t)cfg->qos2_held * cfg->qos2_max) +
           al8((size_t)cfg->pending_subscribes * sizeof(struct pend_sub)) +
           al8((size_t)PEND_CHUNKS(cfg->pending_bytes) * 4) +
           al8((size_t)PEND_CHUNKS(cfg->pending_bytes) * WM_MQTT_PEND_CHUNK) + al8(cfg->max_packet);
}

int wm_mqtt_layer_init(struct wm_mqtt_layer *l, void *mem, const struct wm_mqtt_config *cfg,
                       const struct wm_mqtt_sink *sink)
{
    if (cfg->max_packet < 16 || cfg->max_packet > 268435460u || cfg->will_max > 268435455u || cfg->qos2_held >= Q2_STORE ||
        cfg->qos2_max > 268435460u || cfg->pending_bytes > 1073741824u)
        return -1;
    memset(l, 0, sizeof *l);
    l->cfg = *cfg;
    if (!l->cfg.pending_per_session) l->cfg.pending_per_session = cfg->pending_subscribes / 16 ? cfg->pending_subscribes / 16 : 1;
    if (sink) l->sink = *sink;
    uint8_t *m = mem;
    l->stage_mem = m;
    m += al8((size_t)cfg->staging_buffers * cfg->max_packet);
    l->stage_free = (uint32_t *)m;
    m += al8((size_t)cfg->staging_buffers * 4);
    l->alias_mem = m;
    m += al8((size_t)cfg->alias_slots * ALIAS_SLOT_SIZE);
    l->alias_free = (uint32_t *)m;
    m += al8((size_t)cfg->alias_slots * 4);
    l->wills = (struct wm_mqtt_will *)m;
    m += al8((size_t)cfg->wills * sizeof(struct wm_mqtt_will));
    l->will_data = m;
    m += al8((size_t)cfg->wills * cfg->will_max);
    l->q2 = (struct wm_mqtt_q2 *)m;
    m += al8((size_t)cfg->qos2_held * sizeof(struct wm_mqtt_q2));
    l->q2_data = m;
    m += al8((size_t)cfg->qos2_held * cfg->qos2_max);
    l->pend_slots = (struct pend_sub *)m;
    m += al8((size_t)cfg->pending_subscribes * sizeof(struct pend_sub));
    uint32_t nch = PEND_CHUNKS(cfg->pending_bytes);
    l->pend_chunk_next = (uint32_t *)m;
    m += al8((size_t)nch * 4);
    l->pend_data = m;
    m += al8((size_t)nch * WM_MQTT_PEND_CHUNK);
    l->pend_scratch = m;
    l->pend_free = NULL;
    for (uint32_t i = cfg->pending_subscribes; i-- > 0;) {
        l->pend_slots[i].next = l->pend_free;
        l->pend_free = &l->pend_slots[i];
    }
    for (uint32_t i = 0; i < nch; i++) l->pend_chunk_next[i] = i + 1 < nch ? i + 1 : UINT32_MAX;
    l->pend_chunk_free = nch ? 0 : UINT32_MAX;
    l->pend_chunks_free = nch;
    /* one session's share of the chunks, as of the copies */
    l->pend_chunk_share = nch / 16 ? nch / 16 : nch;
    memset(l->q2, 0, (size_t)cfg->qos2_held * sizeof(struct wm_mqtt_q2));
    for (uint32_t i = 0; i < cfg->qos2_held; i++) l->q2[i].next_free = i + 1 < cfg->qos2_held ? i + 1 : UINT32_MAX;
    l->q2_free = cfg->qos2_held ? 0 : UINT32_MAX;
    l->q2_next_ns = UINT64_MAX;
    memset(l->wills, 0, (size_t)cfg->wills * sizeof(struct wm_mqtt_will));
    for (uint32_t i = 0; i < cfg->wills; i++) l->wills[i].next_free = i + 1 < cfg->wills ? i + 1 : UINT32_MAX;
    l->will_free = cfg->wills ? 0 : UINT32_MAX;
    l->will_next_ns = UINT64_MAX;
    for (uint32_t i = 0; i < cfg->staging_buffers; i++) l->stage_free[i] = cfg->staging_buffers - 1 - i;
    l->stage_free_n = cfg->staging_buffers;
    for (uint32_t i = 0; i < cfg->alias_slots; i++) l->alias_free[i] = cfg->alias_slots - 1 - i;
    l->alias_free_n = cfg->alias_slots;
    l->next_seq = 1;
    return 0;
}

int wm_mqtt_publish_conserved(const struct wm_mqtt_counters *c)
{
    uint64_t sum = 0;
    for (int o = 0; o < WM_MQTT_PUB_OUTCOME_COUNT; o++) sum += c->publish[o];
    return sum == c->publish_seen;
}

const char *wm_mqtt_session_client(struct wm_flow *f, uint32_t *len)
{
    struct mqtt_session *s = wm_flow_user(f);
    if (len) *len = s->client_len;
    return s->client;
}

/* ------------------------------------------------------------ helpers */

static void outcome(struct wm_mqtt_layer *l, struct mqtt_dir *d, enum wm_mqtt_pub_outcome o)
{
    if (!d->cur_publish) return;
    d->cur_publish = 0;
    l->c.publish[o]++;
    if (o == WM_MQTT_PUB_MATCHED) l->publish_matched_in_frame++;
}

static void stage_release(struct wm_mqtt_layer *l, struct mqtt_dir *d)
{
    if (d->stage != NO_BUF) {
        l->stage_free[l->stage_free_n++] = d->stage;
        d->stage = NO_BUF;
    }
    d->stage_len = d->stage_total = 0;
}

static void aliases_release(struct wm_mqtt_layer *l, struct mqtt_dir *d)
{
    for (int a = 0; a < WM_MQTT_MAX_ALIASES; a++) {
        if (d->alias[a]) l->alias_free[l->alias_free_n++] = d->alias[a] - 1;
        d->alias[a] = 0;
    }
}

static void stop_dir(struct wm_mqtt_layer *l, struct mqtt_dir *d, uint8_t state)
{
    stage_release(l, d);
    d->hdr_len = 0;
    d->skip = 0;
    d->state = state;
}

static void malformed(struct wm_mqtt_layer *l, struct mqtt_session *s, struct mqtt_dir *d, wm_mqtt5_err e)
{
    l->c.malformed[e]++;
    outcome(l, d, WM_MQTT_PUB_MALFORMED);
    if ((e == WM_MQTT5_E_PROTOCOL_VERSION || e == WM_MQTT5_E_PROTOCOL_NAME) && d->cur_type == WM_MQTT5_CONNECT &&
        s->state == SS_NONE) {
        /* Another protocol version: not ours to follow, in either direction. */
        l->c.connect_other_version++;
        s->state = SS_OTHER_VERSION;
        stop_dir(l, &s->d[0], DS_IGNORED);
        stop_dir(l, &s->d[1], DS_IGNORED);
        return;
    }
    l->c.dirs_broken++;
    stop_dir(l, d, DS_BROKEN);
}

/* The broker reads no more of the client (state DS_IGNORED after its own
 * DISCONNECT, DS_UNREAD when it refused the CONNECT): a packet the client
 * was in the middle of is never delivered. */
static void stop_client(struct wm_mqtt_layer *l, struct mqtt_session *s, uint8_t state)
{
    struct mqtt_dir *c2s = &s->d[WM_DIR_C2S];
    if (c2s->state != DS_OPEN) return;
    if (c2s->hdr_len || c2s->stage != NO_BUF || c2s->skip) l->c.truncated_packets++;
    outcome(l, c2s, WM_MQTT_PUB_TRUNCATED);
    stop_dir(l, c2s, state);
}

/* ------------------------------------------------------------ packets */

static bool pend_add(struct wm_mqtt_layer *l, struct mqtt_session *s, const uint8_t *raw, const wm_mqtt5_packet *pkt);

static uint8_t *pend_chunk(const struct wm_mqtt_layer *l, uint32_t c)
{
    return l->pend_data + (size_t)c * WM_MQTT_PEND_CHUNK;
}

/* The copy's bytes, contiguous: in place if it has one chunk, else
 * gathered into the layer's scratch buffer, valid until the next call. */
static const uint8_t *pend_bytes(const struct wm_mqtt_layer *l, const struct pend_sub *ps)
{
    if (ps->len <= WM_MQTT_PEND_CHUNK) return pend_chunk(l, ps->chunk);
    uint32_t c = ps->chunk;
    for (uint32_t off = 0; off < ps->len; off += WM_MQTT_PEND_CHUNK, c = l->pend_chunk_next[c]) {
        uint32_t k = ps->len - off < WM_MQTT_PEND_CHUNK ? ps->len - off : WM_MQTT_PEND_CHUNK;
        memcpy(l->pend_scratch + off, pend_chunk(l, c), k);
    }
    return l->pend_scratch;
}

/* The client id names the session (§3.1.3.1): one longer than
 * WM_MQTT_CLIENT_ID_MAX cannot be kept whole, and cut it would merge with
 * another client's. Returns false (counted) for such a client, which is
 * then followed no further in either direction. */
static bool set_client(struct wm_mqtt_layer *l, struct mqtt_session *s, wm_mqtt5_bytes id)
{
    if (id.len > WM_MQTT_CLIENT_ID_MAX) {
        l->c.client_id_too_long++;
        return false;
    }
    memcpy(s->client, id.p, id.len);
    s->client[id.len] = 0;
    s->client_len = (uint8_t)id.len;
    return true;
}

/* The connection's idle timeout follows its Keep Alive (seconds, §3.1.2.10):
 * the broker closes a connection it heard nothing from for 1.5 times it,
 * so a quieter one is gone (its session ends, its Will is published);
 * with 0 the broker never does, and neither does the data plane (only the
 * flow table's eviction, which ends nothing, can take it). */
static void keep_alive(struct wm_flow *f, uint32_t ka)
{
    f->idle_ns = ka ? ((uint64_t)ka * 3 / 2 + WM_MQTT_KEEPALIVE_GRACE_S) * 1000000000ull + (ka & 1) * 500000000ull
                    : WM_FLOW_IDLE_NEVER;
}

static void unfollow(struct wm_mqtt_layer *l, struct mqtt_session *s)
{
    s->state = SS_OTHER_VERSION;
    stop_client(l, s, DS_IGNORED);
    stop_dir(l, &s->d[WM_DIR_S2C], DS_IGNORED);
}

static const uint8_t *alias_topic(struct wm_mqtt_layer *l, uint32_t slot, uint16_t *len)
{
    uint8_t *p = l->alias_mem + (size_t)slot * ALIAS_SLOT_SIZE;
    *len = (uint16_t)(p[0] | p[1] << 8);
    return p + 2;
}

/* Resolves the PUBLISH topic through its Topic Alias (§3.3.2.3.4): a
 * non-empty topic (re)binds the alias, an empty one uses the binding.
 * Returns 0 and the topic, or -1 if it cannot be known. */
static int resolve_topic(struct wm_mqtt_layer *l, struct mqtt_dir *d, const wm_mqtt5_packet *pkt,
                         const uint8_t **topic, uint32_t *topic_len)
{
    *topic = pkt->topic.p;
    *topic_len = pkt->topic.len;
    if (!wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_TOPIC_ALIAS)) return 0;
    uint32_t a = pkt->props.v[WM_MQTT5_PROP_TOPIC_ALIAS].u;
    if (a == 0 || a > WM_MQTT_MAX_ALIASES) {
        l->c.alias_beyond_bound++;
        return pkt->topic.len ? 0 : -1;
    }
    uint32_t *slot = &d->alias[a - 1];
    if (pkt->topic.len) {
        if (pkt->topic.len > WM_MQTT_ALIAS_TOPIC_MAX) {
            l->c.alias_topic_too_long++;
            if (*slot) l->alias_free[l->alias_free_n++] = *slot - 1;
            *slot = 0;
            return 0;
        }
        if (!*slot) {
            if (l->alias_free_n == 0) {
                l->c.alias_pool_full++;
                return 0;
            }
            *slot = l->alias_free[--l->alias_free_n] + 1;
        }
        uint8_t *p = l->alias_mem + (size_t)(*slot - 1) * ALIAS_SLOT_SIZE;
        p[0] = (uint8_t)pkt->topic.len;
        p[1] = (uint8_t)(pkt->topic.len >> 8);
        memcpy(p + 2, pkt->topic.p, pkt->topic.len);
        l->c.alias_set++;
        return 0;
    }
    if (!*slot) return -1;
    uint16_t len;
    *topic = alias_topic(l, *slot - 1, &len);
    *topic_len = len;
    l->c.alias_used++;
    return 0;
}

static int bytes_eq(wm_mqtt5_bytes b, const char *s)
{
    size_t n = strlen(s);
    return b.len == n && memcmp(b.p, s, n) == 0;
}

/* A PUBLISH outcome decided after its packet was handled (a QoS 2
 * message at its PUBREL, or dropped meanwhile). */
static void outcome_later(struct wm_mqtt_layer *l, enum wm_mqtt_pub_outcome o)
{
    l->c.publish[o]++;
    if (o == WM_MQTT_PUB_MATCHED) l->publish_matched_in_frame++;
}

/* The broker hands the client's message to its subscribers (or, retained,
 * sends subscriber s a retained message for its new subscription):
 * matched through the sink. Returns the outcome. */
static enum wm_mqtt_pub_outcome deliver(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s,
                                        const uint8_t *topic, uint32_t topic_len, const wm_mqtt5_packet *pkt,
                                        bool retained)
{
    struct wm_mqtt_publish p;
    p.seq = l->next_seq++;
    p.flow_id = f->id;
    p.client = s->client;
    p.client_len = s->client_len;
    p.topic = (const char *)topic;
    p.topic_len = topic_len;
    p.pkt = pkt;
    p.will = false;
    p.retained = retained;
    p.n_peids = wm_peids_collect(&pkt->props, p.peids);
    if (p.n_peids == WM_PEIDS_TOO_MANY) return WM_MQTT_PUB_TOO_MANY_PEIDS;
    if (!l->sink.publish) return WM_MQTT_PUB_NO_TABLE;
    return l->sink.publish(l->sink.ctx, &p);
}

/* The broker sends the subscriber a retained message for its new
 * subscription (mqtt_session.h, "Retained messages"): matched against the
 * subscriber's subscriptions; not a client PUBLISH (no outcome). */
static void retained(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, const uint8_t *topic,
                     uint32_t topic_len, const wm_mqtt5_packet *pkt)
{
    l->c.retained_sent++;
    enum wm_mqtt_pub_outcome o = deliver(l, f, s, topic, topic_len, pkt, true);
    if (o == WM_MQTT_PUB_MATCHED) l->c.retained_matched++;
    else if (o == WM_MQTT_PUB_NO_MATCH) l->c.retained_no_match++;
    else l->c.retained_dropped++;
}

/* ------------------------------------------------------------ QoS 2 */

static uint8_t *q2_bytes(struct wm_mqtt_layer *l, const struct wm_mqtt_q2 *q)
{
    return l->q2_data + (size_t)(q - l->q2) * l->cfg.qos2_max;
}

/* Gives a held copy's slot back (its message lives on elsewhere, or ends
 * by the caller's outcome). */
static void q2_slot_free(struct wm_mqtt_layer *l, struct wm_mqtt_q2 *q)
{
    if (q->state == Q_DETACHED) l->q2_detached--;
    q->state = Q_FREE;
    q->next_free = l->q2_free;
    l->q2_free = (uint32_t)(q - l->q2);
    l->c.qos2_waiting--;
}

/* Frees a held copy; its PUBLISH ends with outcome o. */
static void q2_free(struct wm_mqtt_layer *l, struct wm_mqtt_q2 *q, enum wm_mqtt_pub_outcome o)
{
    q2_slot_free(l, q);
    outcome_later(l, o);
}

/* A store entry this layer owns is done with; its PUBLISH ends with o. */
static void q2_store_done(struct wm_mqtt_layer *l, int32_t e, enum wm_mqtt_pub_outcome o)
{
    wm_qos2_store_release(l->store, e);
    l->c.qos2_waiting--;
    outcome_later(l, o);
}

/* The copy of session s's QoS 2 id in the shared store, claimed for this
 * layer (a resume that did not find it: its old connection ended after the
 * new one resumed), or -1. */
static int32_t q2_store_claim(struct wm_mqtt_layer *l, const struct mqtt_session *s, uint16_t id)
{
    int32_t e = l->store ? wm_qos2_store_claim(l->store, s->client, s->client_len, id) : -1;
    if (e >= 0) {
        l->c.qos2_resumed_shared++;
        l->c.qos2_waiting++;
    }
    return e;
}

/* Ends the held message of qos2_slot value slot with outcome o, wherever
 * its copy is (nothing for AT_PUBLISH: its outcome came at the PUBLISH). */
static void q2_drop(struct wm_mqtt_layer *l, const struct mqtt_session *s, uint16_t id, uint32_t slot,
                    enum wm_mqtt_pub_outcome o)
{
    if (slot == Q2_AT_PUBLISH) return;
    int32_t e = slot == Q2_ELSEWHERE ? q2_store_claim(l, s, id) : (slot & Q2_STORE) ? (int32_t)(slot & ~Q2_STORE) : -1;
    if (e >= 0) q2_store_done(l, e, o);
    else if (slot != Q2_ELSEWHERE) q2_free(l, &l->q2[slot - 1], o);
}

/* Copies a QoS 2 PUBLISH (resolved topic + its bytes) to be matched at its
 * PUBREL. Returns slot + 1, or 0 (too large, no slot free). */
static uint32_t q2_keep(struct wm_mqtt_layer *l, const struct mqtt_session *s, const uint8_t *topic,
                        uint32_t topic_len, const uint8_t *raw, const wm_mqtt5_packet *pkt)
{
    if (!raw || (uint64_t)topic_len + pkt->length > l->cfg.qos2_max || l->q2_free == UINT32_MAX) return 0;
    struct wm_mqtt_q2 *q = &l->q2[l->q2_free];
    l->q2_free = q->next_free;
    q->state = Q_LIVE;
    q->packet_id = pkt->packet_id;
    q->client_len = s->client_len;
    memcpy(q->client, s->client, s->client_len);
    q->client[s->client_len] = 0;
    q->deadline_ns = 0;
    q->topic_len = topic_len;
    q->len = pkt->length;
    uint8_t *b = q2_bytes(l, q);
    if (topic_len) memcpy(b, topic, topic_len);
    memcpy(b + topic_len, raw, pkt->length);
    l->c.qos2_held++;
    l->c.qos2_waiting++;
    return (uint32_t)(q - l->q2) + 1;
}

/* Takes the session's QoS 2 id i off its list (order does not matter). */
static void qos2_remove(struct mqtt_session *s, uint32_t i)
{
    s->n_qos2--;
    s->qos2[i] = s->qos2[s->n_qos2];
    s->qos2_slot[i] = s->qos2_slot[s->n_qos2];
}

static uint32_t qos2_find(const struct mqtt_session *s, uint16_t id)
{
    uint32_t i = 0;
    while (i < s->n_qos2 && s->qos2[i] != id) i++;
    return i;
}

/* The broker releases a held QoS 2 message (the resolved topic, then the
 * PUBLISH's bytes) to its subscribers: matched now. */
static enum wm_mqtt_pub_outcome q2_release(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s,
                                           const uint8_t *b, uint32_t topic_len, uint32_t len)
{
    wm_mqtt5_config cfg = {.from = WM_MQTT5_FROM_CLIENT, .topic_alias_maximum = 65535};
    wm_mqtt5_packet pkt;
    wm_mqtt5_result r;
    l->c.qos2_released++;
    if (wm_mqtt5_decode(&cfg, b + topic_len, len, &pkt, &r) != WM_MQTT5_DONE)
        return WM_MQTT_PUB_MATCH_ERROR; /* it decoded when it came: cannot fail */
    return deliver(l, f, s, b, topic_len, &pkt, false);
}

/* The client's PUBREL (§4.3.3): the broker releases the message to its
 * subscribers now; the id is free again. */
static void qos2_pubrel(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, uint16_t id)
{
    uint32_t i = qos2_find(s, id);
    if (i == s->n_qos2) {
        l->c.qos2_pubrel_unknown++;
        return;
    }
    uint32_t slot = s->qos2_slot[i];
    qos2_remove(s, i);
    if (slot == Q2_AT_PUBLISH) return;
    int32_t e = slot == Q2_ELSEWHERE ? q2_store_claim(l, s, id) : (slot & Q2_STORE) ? (int32_t)(slot & ~Q2_STORE) : -1;
    if (e >= 0) {
        uint32_t tl, len;
        const uint8_t *b = wm_qos2_store_bytes(l->store, e, &tl, &len);
        q2_store_done(l, e, q2_release(l, f, s, b, tl, len));
        return;
    }
    if (slot == Q2_ELSEWHERE) {
        l->c.qos2_pubrel_no_copy++;
        return;
    }
    struct wm_mqtt_q2 *q = &l->q2[slot - 1];
    q2_free(l, q, q2_release(l, f, s, q2_bytes(l, q), q->topic_len, q->len));
}

/* The session's held copies: dropped with outcome o (its end, expiry 0),
 * or detached until its expiry (expiry_s; 0xFFFFFFFF never). */
static void qos2_end(struct wm_mqtt_layer *l, struct mqtt_session *s, bool detach, enum wm_mqtt_pub_outcome o)
{
    uint64_t deadline = s->expiry == UINT32_MAX ? UINT64_MAX : l->now_ns + (uint64_t)s->expiry * 1000000000ull;
    for (uint32_t i = 0; i < s->n_qos2; i++) {
        uint32_t slot = s->qos2_slot[i];
        if (slot == Q2_AT_PUBLISH || slot == Q2_ELSEWHERE) continue;
        s->qos2_slot[i] = Q2_ELSEWHERE;
        if (!detach) {
            q2_drop(l, s, s->qos2[i], slot, o);
            continue;
        }
        if (slot & Q2_STORE) { /* back to the store, for whichever worker sees the resume */
            wm_qos2_store_detach(l->store, (int32_t)(slot & ~Q2_STORE), deadline);
            l->c.qos2_waiting--;
            l->c.qos2_detached_shared++;
            continue;
        }
        struct wm_mqtt_q2 *q = &l->q2[slot - 1];
        if (l->store) {
            const uint8_t *b = q2_bytes(l, q);
            if (wm_qos2_store_put(l->store, s->client, s->client_len, q->packet_id, deadline, b, q->topic_len,
                                  b + q->topic_len, q->len) >= 0) {
                q2_slot_free(l, q);
                l->c.qos2_detached_shared++;
                continue;
            }
            l->c.qos2_shared_full++; /* kept here: only a resume on this worker finds it */
        }
        q->state = Q_DETACHED;
        q->deadline_ns = deadline;
        l->q2_detached++;
        if (q->deadline_ns < l->q2_next_ns) l->q2_next_ns = q->deadline_ns;
    }
}

/* A successful CONNACK for the session's client id: a resumed session
 * (present) takes back the copies of its ids still held here; a new one
 * drops the detached copies of the client id (the old session is gone). */
static void qos2_on_connack(struct wm_mqtt_layer *l, struct mqtt_session *s, bool present)
{
    for (uint32_t i = 0; i < s->n_qos2; i++) s->qos2_slot[i] = Q2_ELSEWHERE;
    if (!l->q2_detached) return;
    for (uint32_t k = 0; k < l->cfg.qos2_held; k++) {
        struct wm_mqtt_q2 *q = &l->q2[k];
        if (q->state != Q_DETACHED || q->client_len != s->client_len || memcmp(q->client, s->client, s->client_len))
            continue;
        uint32_t i = present ? qos2_find(s, q->packet_id) : s->n_qos2;
        if (i == s->n_qos2) { /* a new session, or an id the session no longer holds */
            q2_free(l, q, WM_MQTT_PUB_SESSION_ENDED);
            continue;
        }
        q->state = Q_LIVE;
        l->q2_detached--;
        s->qos2_slot[i] = k + 1;
    }
}

/* The same for the copies in the shared store, which any worker's
 * detached sessions left there: a resumed session takes those of its ids
 * (this layer owns them from now on), a new one drops the client id's. */
static void qos2_on_connack_shared(struct wm_mqtt_layer *l, struct mqtt_session *s, bool present)
{
    int32_t got[WM_MQTT_QOS2_INFLIGHT];
    uint32_t n = present ? s->n_qos2 : 0;
    uint32_t dropped = wm_qos2_store_resume(l->store, s->client, s->client_len, s->qos2, n, got);
    for (uint32_t k = 0; k < dropped; k++) outcome_later(l, WM_MQTT_PUB_SESSION_ENDED);
    for (uint32_t i = 0; i < n; i++) {
        if (got[i] < 0) continue;
        l->c.qos2_waiting++;
        l->c.qos2_resumed_shared++;
        if (s->qos2_slot[i] == Q2_ELSEWHERE) s->qos2_slot[i] = Q2_STORE | (uint32_t)got[i];
        else q2_store_done(l, got[i], WM_MQTT_PUB_SESSION_ENDED); /* a copy here too: cannot be, one is enough */
    }
}

/* Detached copies whose session expired by now: their message is gone. */
static void qos2_expire(struct wm_mqtt_layer *l)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t k = 0; l->q2_detached && k < l->cfg.qos2_held; k++) {
        struct wm_mqtt_q2 *q = &l->q2[k];
        if (q->state != Q_DETACHED) continue;
        if (q->deadline_ns <= l->now_ns) q2_free(l, q, WM_MQTT_PUB_SESSION_ENDED);
        else if (q->deadline_ns < next) next = q->deadline_ns;
    }
    l->q2_next_ns = next;
}

void wm_mqtt_layer_set_qos2_store(struct wm_mqtt_layer *l, struct wm_qos2_store *st) { l->store = st; }

void wm_mqtt_layer_finish_shared(struct wm_mqtt_layer *l)
{
    uint32_t n = l->store ? wm_qos2_store_finish(l->store) : 0;
    for (uint32_t k = 0; k < n; k++) outcome_later(l, WM_MQTT_PUB_UNRELEASED);
}

void wm_mqtt_layer_finish(struct wm_mqtt_layer *l)
{
    for (uint32_t k = 0; l->q2_detached && k < l->cfg.qos2_held; k++)
        if (l->q2[k].state == Q_DETACHED) q2_free(l, &l->q2[k], WM_MQTT_PUB_UNRELEASED);
    l->q2_next_ns = UINT64_MAX;
}

static void on_publish(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, int dir,
                       const uint8_t *raw, const wm_mqtt5_packet *pkt)
{
    struct mqtt_dir *d = &s->d[dir];
    if (raw && dir == WM_DIR_C2S && s->state == SS_CONNECTED && !s->connack_seen && pend_add(l, s, raw, pkt)) {
        /* Before the CONNACK: the broker processes it only if it accepts
         * the CONNECT (§3.1.4), so it waits for that answer (its outcome
         * too); no copy free: matched at once (publish_unheld). */
        l->c.publish_held++;
        d->cur_publish = 0;
        return;
    }
    const uint8_t *topic;
    uint32_t topic_len;
    int known = resolve_topic(l, d, pkt, &topic, &topic_len) == 0;
    if (dir == WM_DIR_S2C) {
        l->c.publish_from_server++;
        if (!pkt->retain) return;
        if (!s->after_suback || !known || s->state != SS_CONNECTED || !s->client_len) {
            l->c.retained_forwarded++;
            return;
        }
        retained(l, f, s, topic, topic_len, pkt);
        return;
    }
    if (s->state != SS_CONNECTED) {
        outcome(l, d, WM_MQTT_PUB_NOT_CONNECTED);
        return;
    }
    if (!known) {
        outcome(l, d, WM_MQTT_PUB_ALIAS_UNKNOWN);
        return;
    }
    if (s->connack_seen && (pkt->qos > s->max_qos || (pkt->retain && !s->retain_ok))) {
        /* §3.2.2.3.4 / §3.2.2.3.5: the broker disconnects (0x9B / 0x9A) */
        if (pkt->qos > s->max_qos) l->c.limit_qos++;
        else l->c.limit_retain++;
        outcome(l, d, WM_MQTT_PUB_MALFORMED);
        l->c.dirs_broken++;
        stop_dir(l, d, DS_BROKEN);
        return;
    }
    if (pkt->qos == 2) {
        /* §4.3.3: until the PUBREL the receiver treats a PUBLISH with the
         * same id as the same message, whatever its DUP flag; the broker
         * delivers it at the PUBREL (mqtt_session.h, "QoS 2") */
        uint32_t i = qos2_find(s, pkt->packet_id);
        if (i < s->n_qos2) {
            l->c.qos2_duplicates++;
            if (!pkt->dup) l->c.qos2_duplicates_dup0++;
            outcome(l, d, WM_MQTT_PUB_DUPLICATE);
            return;
        }
        if (s->n_qos2 < WM_MQTT_QOS2_INFLIGHT) {
            uint32_t slot = q2_keep(l, s, topic, topic_len, raw, pkt);
            s->qos2[s->n_qos2] = pkt->packet_id;
            s->qos2_slot[s->n_qos2++] = slot;
            if (slot) {
                d->cur_publish = 0; /* its outcome comes with the PUBREL */
                return;
            }
            l->c.qos2_at_publish++;
        } else {
            l->c.qos2_untracked++;
        }
    }
    outcome(l, d, deliver(l, f, s, topic, topic_len, pkt, false));
}

/* The SUBSCRIBE's filters as the sink takes them, with the properties
 * that apply to all of them. */
static void sub_common(const struct mqtt_session *s, const wm_mqtt5_packet *pkt, struct wm_mqtt_subscribe *sub)
{
    memset(sub, 0, sizeof *sub);
    sub->client = s->client;
    sub->client_len = s->client_len;
    sub->max_packet = s->client_max_packet;
    if (pkt->type != WM_MQTT5_SUBSCRIBE) return;
    if (wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER))
        sub->subscription_id = pkt->props.v[WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER].u;
    size_t pos = 0;
    wm_mqtt5_pair up;
    bool nb = false, xp = false;
    while ((!nb || !xp) && wm_mqtt5_user_prop_next(&pkt->props, &pos, &up)) {
        if (!nb && bytes_eq(up.key, "nbhd")) {
            sub->nbhd = up.value;
            nb = true;
        } else if (!xp && bytes_eq(up.key, "xpath")) {
            sub->xpath = up.value;
            xp = true;
        }
    }
}

/* A client SUBSCRIBE waits for the broker's SUBACK (§3.9.3), an
 * UNSUBSCRIBE for its UNSUBACK (§3.11.3): only what the broker took
 * happened in the broker. The packet is copied (its bytes go with the
 * segment) into a bounded number of pending copies, of which one session
 * holds at most its share (pending_per_session): the pool is the worker's,
 * and a client that never reads its SUBACKs (or a broker slow to send
 * them) must not leave the other clients' SUBSCRIBEs untracked, i.e. never
 * installed. */
static bool pend_add(struct wm_mqtt_layer *l, struct mqtt_session *s, const uint8_t *raw, const wm_mqtt5_packet *pkt)
{
    struct pend_sub *ps = NULL;
    uint32_t need = PEND_CHUNKS(pkt->length);
    if (s->pend_n >= l->cfg.pending_per_session || s->pend_chunks + need > l->pend_chunk_share) {
        l->c.pending_over_share++;
    } else if (need > l->pend_chunks_free) {
        l->c.pending_bytes_full++;
    } else if (l->pend_free) { /* pending_n < cfg.pending_subscribes: the pool has a slot */
        ps = l->pend_free;
        l->pend_free = ps->next;
    }
    if (!ps) {
        if (pkt->type == WM_MQTT5_SUBSCRIBE) l->c.subscribe_untracked++;
        else if (pkt->type == WM_MQTT5_UNSUBSCRIBE) l->c.unsubscribe_untracked++;
        else l->c.publish_unheld++;
        return false;
    }
    ps->packet_id = pkt->packet_id;
    ps->type = (uint8_t)pkt->type;
    ps->len = pkt->length;
    ps->chunk = l->pend_chunk_free;
    uint32_t c = UINT32_MAX;
    for (uint32_t off = 0; off < pkt->length; off += WM_MQTT_PEND_CHUNK) {
        c = l->pend_chunk_free;
        l->pend_chunk_free = l->pend_chunk_next[c];
        uint32_t k = pkt->length - off < WM_MQTT_PEND_CHUNK ? pkt->length - off : WM_MQTT_PEND_CHUNK;
        memcpy(pend_chunk(l, c), raw + off, k);
    }
    l->pend_chunk_next[c] = UINT32_MAX; /* a packet has 2 bytes at least: c is its last chunk */
    l->pend_chunks_free -= need;
    s->pend_chunks += need;
    ps->next = NULL;
    /* in order: a SUBACK answers the oldest SUBSCRIBE with its identifier */
    struct pend_sub **tail = &s->pend;
    while (*tail) tail = &(*tail)->next;
    *tail = ps;
    l->pending_n++;
    s->pend_n++;
    return true;
}

/* ps, off s's list already: back to the pool, with its chunks */
static void pend_free(struct wm_mqtt_layer *l, struct mqtt_session *s, struct pend_sub *ps)
{
    uint32_t need = PEND_CHUNKS(ps->len), last = ps->chunk;
    while (l->pend_chunk_next[last] != UINT32_MAX) last = l->pend_chunk_next[last];
    l->pend_chunk_next[last] = l->pend_chunk_free;
    l->pend_chunk_free = ps->chunk;
    l->pend_chunks_free += need;
    s->pend_chunks -= need;
    ps->next = l->pend_free;
    l->pend_free = ps;
    l->pending_n--;
    s->pend_n--;
}

static uint8_t pend_type(const struct pend_sub *ps) { return ps->type; }

/* The oldest pending copy of type `type` with the ack's packet identifier,
 * taken off the list and decoded again into *pkt (it decoded when it came);
 * NULL (counted by the caller) if there is none. */
static struct pend_sub *pend_take(struct wm_mqtt_layer *l, struct mqtt_session *s, uint8_t type, uint16_t packet_id,
                                  wm_mqtt5_packet *pkt)
{
    struct pend_sub **pp = &s->pend;
    while (*pp && ((*pp)->packet_id != packet_id || pend_type(*pp) != type)) pp = &(*pp)->next;
    struct pend_sub *ps = *pp;
    if (!ps) return NULL;
    *pp = ps->next;
    wm_mqtt5_config cfg = {.from = WM_MQTT5_FROM_CLIENT, .topic_alias_maximum = 65535};
    wm_mqtt5_result r;
    if (wm_mqtt5_decode(&cfg, pend_bytes(l, ps), ps->len, pkt, &r) != WM_MQTT5_DONE) {
        pend_free(l, s, ps);
        return NULL;
    }
    return ps;
}

/* The PUBLISHes held for the CONNACK (on_publish), in order: matched now
 * that the broker accepted the CONNECT (deliver), or ended with outcome
 * `o` (a refusing CONNACK, a connection ended before any). */
static void held_publishes(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, bool deliver,
                           enum wm_mqtt_pub_outcome o)
{
    struct mqtt_dir *d = &s->d[WM_DIR_C2S];
    uint8_t in_progress = d->cur_publish; /* a PUBLISH still arriving has its own outcome to come */
    struct pend_sub **pp = &s->pend;
    while (*pp) {
        struct pend_sub *ps = *pp;
        if (pend_type(ps) != WM_MQTT5_PUBLISH) {
            pp = &ps->next;
            continue;
        }
        *pp = ps->next;
        d->cur_publish = 1;
        wm_mqtt5_config cfg = {.from = WM_MQTT5_FROM_CLIENT, .topic_alias_maximum = 65535};
        wm_mqtt5_packet pkt;
        wm_mqtt5_result r;
        const uint8_t *b = deliver ? pend_bytes(l, ps) : NULL;
        if (deliver && wm_mqtt5_decode(&cfg, b, ps->len, &pkt, &r) == WM_MQTT5_DONE)
            on_publish(l, f, s, WM_DIR_C2S, b, &pkt);
        outcome(l, d, deliver ? WM_MQTT_PUB_MALFORMED : o); /* no-op unless it was not handed on */
        pend_free(l, s, ps);
    }
    d->cur_publish = in_progress;
}

static void count_sub_status(struct wm_mqtt_layer *l, enum wm_mqtt_sub_status st)
{
    switch (st) {
    case WM_MQTT_SUB_INSTALLED: l->c.subs_installed++; break;
    case WM_MQTT_SUB_NBHD_UNKNOWN: l->c.subs_nbhd_unknown++; break;
    case WM_MQTT_SUB_XPATH_INVALID: l->c.subs_xpath_invalid++; break;
    case WM_MQTT_SUB_FULL: l->c.subs_full++; break;
    case WM_MQTT_SUB_QUOTA: l->c.subs_quota++; break;
    default: l->c.subs_rejected++; break;
    }
}

/* A filter the broker's SUBACK answered with code: a granted one (code =
 * granted QoS, §3.9.3) installs or replaces the subscription; a refused
 * one is only counted. */
static void suback_filter(struct wm_mqtt_layer *l, const struct mqtt_session *s, struct wm_mqtt_subscribe *sub,
                          const wm_mqtt5_subscription *e, uint8_t code)
{
    if (code >= 0x80) {
        l->c.subs_refused_by_broker++;
        return;
    }
    l->c.subs_granted++;
    if (s->ended && s->expiry == 0) {
        /* granted before the broker read the DISCONNECT behind it (§4.6
         * order): the session, and this subscription, ended with it */
        l->c.subs_after_session_end++;
        return;
    }
    sub->qos = code; /* the granted QoS may be below the requested one */
    sub->no_local = e->no_local;
    if (l->sink.subscribe) count_sub_status(l, l->sink.subscribe(l->sink.ctx, sub));
}

/* A filter the broker's UNSUBACK answered with code (§3.11.3): 0x00 removes
 * the subscription; 0x11 (No subscription existed) says the broker has
 * none, so the data plane drops any it still holds; a refusal (>= 0x80)
 * leaves it in place. */
static void unsuback_filter(struct wm_mqtt_layer *l, const struct wm_mqtt_subscribe *sub, uint8_t code)
{
    if (code >= 0x80) {
        l->c.unsubs_refused_by_broker++;
        return;
    }
    if (code == 0x11) l->c.unsubs_no_subscription++;
    else l->c.unsubs_removed++;
    if (l->sink.unsubscribe) l->sink.unsubscribe(l->sink.ctx, sub);
}

/* The broker's SUBACK or UNSUBACK: one reason code per filter of the
 * pending SUBSCRIBE or UNSUBSCRIBE with its packet identifier, in order
 * (§3.9.3, §3.11.3). */
static void on_ack(struct wm_mqtt_layer *l, struct mqtt_session *s, const wm_mqtt5_packet *ack)
{
    bool sub_ack = ack->type == WM_MQTT5_SUBACK;
    uint64_t *unknown = sub_ack ? &l->c.suback_unknown : &l->c.unsuback_unknown;
    wm_mqtt5_packet pkt;
    struct pend_sub *ps = pend_take(l, s, sub_ack ? WM_MQTT5_SUBSCRIBE : WM_MQTT5_UNSUBSCRIBE, ack->packet_id, &pkt);
    if (!ps) {
        (*unknown)++;
        return;
    }
    struct wm_mqtt_subscribe sub;
    sub_common(s, &pkt, &sub);
    size_t pos = 0;
    wm_mqtt5_subscription e;
    for (uint32_t i = 0; wm_mqtt5_subscription_next(&pkt, &pos, &e); i++) {
        if (i >= ack->count) { /* fewer codes than filters: the broker's answer is not this packet's */
            (*unknown)++;
            break;
        }
        sub.filter = e.filter;
        if (sub_ack) {
            suback_filter(l, s, &sub, &e, ack->payload.p[i]);
            if (ack->payload.p[i] < 0x80) s->after_suback = 1; /* its retained messages come next */
        }
        else unsuback_filter(l, &sub, ack->payload.p[i]);
    }
    pend_free(l, s, ps);
}

static void session_event(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s,
                          enum wm_mqtt_session_kind kind)
{
    if (!l->sink.session || s->client_len == 0) return;
    uint32_t n = s->n_qos2;
    struct wm_mqtt_session_event e = {kind, s->client, s->client_len, f->id, s->expiry, l->now_ns, s->qos2, &n,
                                      s->client_max_packet};
    l->sink.session(l->sink.ctx, &e);
    if (kind == WM_MQTT_SESSION_RESUME) s->n_qos2 = n < WM_MQTT_QOS2_INFLIGHT ? n : WM_MQTT_QOS2_INFLIGHT;
}

/* ------------------------------------------------------------ wills */

static uint8_t *will_bytes(struct wm_mqtt_layer *l, const struct wm_mqtt_will *w)
{
    return l->will_data + (size_t)(w - l->wills) * l->cfg.will_max;
}

static void will_free(struct wm_mqtt_layer *l, struct wm_mqtt_will *w)
{
    if (w->state == W_DELAYED) l->c.wills_waiting--;
    w->state = W_FREE;
    w->next_free = l->will_free;
    l->will_free = (uint32_t)(w - l->wills);
}

/* The CONNECT's Will, copied (its views go with the segment); the session
 * refers to it until its end decides. */
static void will_keep(struct wm_mqtt_layer *l, struct mqtt_session *s, const wm_mqtt5_connect *c)
{
    if (s->will_slot) will_free(l, &l->wills[s->will_slot - 1]); /* a second CONNECT */
    s->will_slot = 0;
    if (!c->will_flag) return;
    size_t n = (size_t)c->will_topic.len + c->will_props.raw.len + c->will_payload.len;
    if (n > l->cfg.will_max) {
        l->c.wills_too_large++;
        return;
    }
    if (l->will_free == UINT32_MAX) {
        l->c.wills_untracked++;
        return;
    }
    struct wm_mqtt_will *w = &l->wills[l->will_free];
    l->will_free = w->next_free;
    w->state = W_CONNECT;
    w->superseded = SUP_NONE;
    w->qos = c->will_qos;
    w->retain = c->will_retain;
    w->client_len = 0;
    w->deadline_ns = 0;
    w->delay_s = wm_mqtt5_props_has(&c->will_props, WM_MQTT5_PROP_WILL_DELAY_INTERVAL)
                     ? c->will_props.v[WM_MQTT5_PROP_WILL_DELAY_INTERVAL].u : 0;
    w->topic_len = c->will_topic.len;
    w->props_len = c->will_props.raw.len;
    w->payload_len = c->will_payload.len;
    uint8_t *b = will_bytes(l, w);
    if (w->topic_len) memcpy(b, c->will_topic.p, w->topic_len);
    if (w->props_len) memcpy(b + w->topic_len, c->will_props.raw.p, w->props_len);
    if (w->payload_len) memcpy(b + w->topic_len + w->props_len, c->will_payload.p, w->payload_len);
    s->will_slot = (uint32_t)(w - l->wills) + 1;
    l->c.wills_kept++;
}

/* The broker publishes the Will: it is matched as a PUBLISH of its client
 * would be (the same sink call and rules), then freed. */
static void will_publish(struct wm_mqtt_layer *l, struct wm_mqtt_will *w)
{
    l->c.wills_published++;
    const uint8_t *b = will_bytes(l, w);
    wm_mqtt5_packet pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.type = WM_MQTT5_PUBLISH;
    pkt.qos = w->qos;
    pkt.retain = w->retain;
    pkt.topic = (wm_mqtt5_bytes){b, w->topic_len};
    pkt.payload = (wm_mqtt5_bytes){b + w->topic_len + w->props_len, w->payload_len};
    size_t off;
    struct wm_mqtt_publish p;
    p.seq = l->next_seq++;
    p.flow_id = w->conn;
    p.client = w->client;
    p.client_len = w->client_len;
    p.topic = (const char *)pkt.topic.p;
    p.topic_len = pkt.topic.len;
    p.pkt = &pkt;
    p.will = true;
    p.retained = false;
    enum wm_mqtt_pub_outcome o = WM_MQTT_PUB_MATCH_ERROR;
    /* the block parsed at the CONNECT: a failure here is ours, not the client's */
    if (wm_mqtt5_props_parse(b + w->topic_len, w->props_len, WM_MQTT5_PROPS_WILL, &pkt.props, &off) ==
            WM_MQTT5_E_OK &&
        (p.n_peids = wm_peids_collect(&pkt.props, p.peids)) != WM_PEIDS_TOO_MANY && l->sink.publish)
        o = l->sink.publish(l->sink.ctx, &p);
    if (o == WM_MQTT_PUB_MATCHED) l->c.wills_matched++;
    else if (o == WM_MQTT_PUB_NO_MATCH) l->c.wills_no_match++;
    else l->c.wills_dropped++;
    will_free(l, w);
}

static void will_next_update(struct wm_mqtt_layer *l)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < l->cfg.wills; i++)
        if (l->wills[i].state == W_DELAYED && l->wills[i].deadline_ns < next) next = l->wills[i].deadline_ns;
    l->will_next_ns = next;
}

void wm_mqtt_layer_tick(struct wm_mqtt_layer *l)
{
    if (l->now_ns >= l->q2_next_ns) qos2_expire(l);
    if (l->store && l->now_ns >= wm_qos2_store_next_deadline(l->store)) {
        uint32_t n = wm_qos2_store_expire(l->store, l->now_ns);
        for (uint32_t k = 0; k < n; k++) outcome_later(l, WM_MQTT_PUB_SESSION_ENDED);
    }
    if (l->now_ns < l->will_next_ns) return;
    for (;;) {
        struct wm_mqtt_will *due = NULL;
        for (uint32_t i = 0; i < l->cfg.wills; i++) {
            struct wm_mqtt_will *w = &l->wills[i];
            if (w->state == W_DELAYED && w->deadline_ns <= l->now_ns && (!due || w->deadline_ns < due->deadline_ns))
                due = w;
        }
        if (!due) break;
        will_publish(l, due);
    }
    will_next_update(l);
}

/* A successful CONNACK for the client id of connection f (§3.1.3.2.2): a
 * delayed Will of its earlier connection is cancelled if the session goes
 * on (Session Present 1) and published now if it ended (0); one still held
 * by a live connection (a takeover, §3.1.4) learns which, for its end. */
static void wills_on_connack(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, bool present)
{
    int delayed = 0;
    for (uint32_t i = 0; i < l->cfg.wills; i++) {
        struct wm_mqtt_will *w = &l->wills[i];
        if ((w->state != W_HELD && w->state != W_DELAYED) || w->conn == f->id || w->client_len != s->client_len ||
            memcmp(w->client, s->client, s->client_len) != 0)
            continue;
        if (w->state == W_HELD) {
            w->superseded = present ? SUP_RESUMED : SUP_NEW;
            continue;
        }
        delayed = 1;
        if (present) {
            l->c.wills_cancelled++;
            will_free(l, w);
        } else {
            will_publish(l, w);
        }
    }
    if (delayed) will_next_update(l);
}

/* The connection's session ended (as the sink was just told): the broker
 * publishes its Will now, later, or not at all (mqtt_session.h, "Wills"). */
static void will_end(struct wm_mqtt_layer *l, struct mqtt_session *s)
{
    if (!s->will_slot) return;
    struct wm_mqtt_will *w = &l->wills[s->will_slot - 1];
    s->will_slot = 0;
    if (!s->will || w->state != W_HELD) { /* a DISCONNECT without 0x04, or never accepted */
        l->c.wills_discarded++;
        will_free(l, w);
        return;
    }
    if (w->superseded == SUP_RESUMED && w->delay_s) { /* the session goes on elsewhere before the delay */
        l->c.wills_cancelled++;
        will_free(l, w);
        return;
    }
    int session_ends = w->superseded == SUP_NEW || (w->superseded == SUP_NONE && s->expiry == 0);
    if (w->delay_s == 0 || session_ends) {
        will_publish(l, w);
        return;
    }
    /* whichever comes first: the delay or the session's expiry */
    uint64_t wait_s = w->delay_s;
    if (w->superseded == SUP_NONE && s->expiry < wait_s) wait_s = s->expiry;
    w->state = W_DELAYED;
    w->deadline_ns = l->now_ns + wait_s * 1000000000ull;
    l->c.wills_delayed++;
    l->c.wills_waiting++;
    if (w->deadline_ns < l->will_next_ns) l->will_next_ns = w->deadline_ns;
}

/* The connection that held a session ended (once): the session ends with
 * it or starts its expiry (§3.1.2.11.2), then its Will is decided. */
static void session_end(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s)
{
    if (!s->started || s->ended) return;
    s->ended = 1;
    l->c.sessions_ended++;
    session_event(l, f, s, WM_MQTT_SESSION_END);
    /* the ids went to the sink with the session; their copies wait with it */
    qos2_end(l, s, s->expiry != 0, WM_MQTT_PUB_SESSION_ENDED);
    will_end(l, s);
}

static void on_connack(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, const wm_mqtt5_packet *pkt)
{
    if (pkt->reason_code >= 0x80) {
        l->c.connack_refused++;
        if (s->state != SS_CONNECTED || s->connack_seen) return;
        /* §3.1.4 [MQTT-3.1.4-6]: the broker processes nothing the client
         * sent after the refused CONNECT, held PUBLISHes included */
        held_publishes(l, f, s, false, WM_MQTT_PUB_CONNECT_REFUSED);
        stop_client(l, s, DS_UNREAD);
        return;
    }
    if (s->state != SS_CONNECTED || s->connack_seen) return;
    const wm_mqtt5_props *pr = &pkt->props;
    if (s->client_len == 0 && wm_mqtt5_props_has(pr, WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER) &&
        !set_client(l, s, pr->v[WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER].s)) {
        held_publishes(l, f, s, false, WM_MQTT_PUB_NOT_CONNECTED);
        unfollow(l, s);
        return;
    }
    /* §3.2.2.3: absent properties mean no alias, any size, QoS 2, retain */
    s->connack_seen = 1;
    s->alias_max = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM)
                       ? (uint16_t)pr->v[WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM].u : 0;
    s->max_packet = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE)
                        ? pr->v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u : 0;
    s->max_qos = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_MAXIMUM_QOS) ? (uint8_t)pr->v[WM_MQTT5_PROP_MAXIMUM_QOS].u : 2;
    s->retain_ok = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_RETAIN_AVAILABLE)
                       ? (uint8_t)pr->v[WM_MQTT5_PROP_RETAIN_AVAILABLE].u : 1;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL)) /* the server's value wins (§3.2.2.3.2) */
        s->expiry = pr->v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SERVER_KEEP_ALIVE)) /* so does its Keep Alive (§3.2.2.3.14) */
        keep_alive(f, pr->v[WM_MQTT5_PROP_SERVER_KEEP_ALIVE].u);
    s->started = 1;
    if (s->will_slot) { /* accepted: the Will is the session's now, under its final client id */
        struct wm_mqtt_will *w = &l->wills[s->will_slot - 1];
        w->state = W_HELD;
        w->conn = f->id;
        w->client_len = s->client_len;
        memcpy(w->client, s->client, s->client_len);
        w->client[s->client_len] = 0;
    }
    if (pkt->session_present) {
        l->c.sessions_resumed++;
        session_event(l, f, s, WM_MQTT_SESSION_RESUME);
    } else {
        /* Clean Start 1, or no session left: the client's earlier one is gone */
        l->c.sessions_new++;
        s->n_qos2 = 0;
        session_event(l, f, s, WM_MQTT_SESSION_NEW);
    }
    if (s->client_len) qos2_on_connack(l, s, pkt->session_present);
    if (s->client_len && l->store) qos2_on_connack_shared(l, s, pkt->session_present);
    if (s->client_len) wills_on_connack(l, f, s, pkt->session_present);
    held_publishes(l, f, s, true, WM_MQTT_PUB_MATCHED);
}

static void on_disconnect(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, int dir,
                          const wm_mqtt5_packet *pkt)
{
    if (dir == WM_DIR_C2S) {
        if (pkt->reason_code != 0x04) s->will = 0; /* §3.14.4: only 0x04 keeps the Will */
        if (wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL)) {
            uint32_t e = pkt->props.v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u;
            /* §3.14.2.2.2: from 0 to non-zero is a Protocol Error, not taken */
            if (s->expiry == 0 && e != 0) l->c.disconnect_expiry_from_zero++;
            else s->expiry = e;
        }
        session_end(l, f, s);
        /* §3.14.4: the broker closes the connection on it and reads nothing
         * after it (the client must send nothing more) */
        stop_dir(l, &s->d[WM_DIR_C2S], DS_UNREAD);
        return;
    }
    /* The broker closes the connection (§3.14.4): what the client sends
     * after this is never delivered. */
    l->c.server_disconnects++;
    session_end(l, f, s);
    stop_client(l, s, DS_IGNORED);
}

static void handle_packet(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, int dir,
                          const uint8_t *raw, const wm_mqtt5_packet *pkt)
{
    struct mqtt_dir *d = &s->d[dir];
    l->c.packets[dir][pkt->type & 15]++;
    if (dir == WM_DIR_S2C && !(pkt->type == WM_MQTT5_PUBLISH && pkt->retain)) s->after_suback = 0;
    if (dir == WM_DIR_C2S && s->state == SS_NONE && pkt->type != WM_MQTT5_CONNECT) {
        l->c.not_connected++;
        if (pkt->type == WM_MQTT5_PUBLISH) outcome(l, d, WM_MQTT_PUB_NOT_CONNECTED);
        return;
    }
    switch (pkt->type) {
    case WM_MQTT5_CONNECT:
        if (s->state == SS_CONNECTED) {
            /* §3.1 [MQTT-3.1.0-2]: a Protocol Error, the broker closes the
             * connection; the session stays the first CONNECT's */
            l->c.second_connect++;
            stop_dir(l, d, DS_UNREAD);
            break;
        }
        l->c.connect_v5++;
        if (!set_client(l, s, pkt->connect.client_id)) {
            unfollow(l, s);
            break;
        }
        s->clean_start = pkt->connect.clean_start;
        s->will = pkt->connect.will_flag;
        will_keep(l, s, &pkt->connect);
        s->expiry = wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL)
                        ? pkt->props.v[WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL].u : 0;
        /* §3.1.2.11.4: the broker sends this client nothing larger */
        s->client_max_packet = wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE)
                                   ? pkt->props.v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u : 0;
        keep_alive(f, pkt->connect.keep_alive);
        s->state = SS_CONNECTED;
        break;
    case WM_MQTT5_CONNACK: on_connack(l, f, s, pkt); break;
    case WM_MQTT5_PUBLISH: on_publish(l, f, s, dir, raw, pkt); break;
    case WM_MQTT5_PUBREL:
        if (dir == WM_DIR_C2S) qos2_pubrel(l, f, s, pkt->packet_id);
        break;
    case WM_MQTT5_PUBACK:
        /* §3.4.2.1: the broker did not accept the publication; its line,
         * written at the PUBLISH, stays (README: counted, not revised) */
        if (dir == WM_DIR_S2C && pkt->reason_code >= 0x80) l->c.publish_refused_by_broker++;
        break;
    case WM_MQTT5_PUBREC:
        /* §4.3.3: a PUBREC with an error code ends the exchange, no PUBREL follows */
        if (dir == WM_DIR_S2C && pkt->reason_code >= 0x80) {
            l->c.publish_refused_by_broker++;
            l->c.qos2_pubrec_errors++;
            uint32_t i = qos2_find(s, pkt->packet_id);
            if (i == s->n_qos2) break;
            uint32_t slot = s->qos2_slot[i];
            qos2_remove(s, i);
            /* held for a PUBREL that never comes: the broker never delivers it */
            q2_drop(l, s, pkt->packet_id, slot, WM_MQTT_PUB_REFUSED);
        }
        break;
    case WM_MQTT5_SUBSCRIBE:
        l->c.subscribe_filters += pkt->count;
        pend_add(l, s, raw, pkt);
        break;
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK:
        if (s->state == SS_CONNECTED) on_ack(l, s, pkt);
        break;
    case WM_MQTT5_UNSUBSCRIBE:
        l->c.unsubscribe_filters += pkt->count;
        pend_add(l, s, raw, pkt);
        break;
    case WM_MQTT5_DISCONNECT:
        if (s->state == SS_CONNECTED) on_disconnect(l, f, s, dir, pkt);
        break;
    default: break;
    }
}

/* The client's packets are decoded with the limits the broker announced in
 * its CONNACK (§3.2.2.3.6 Maximum Packet Size, §3.2.2.3.8 Topic Alias
 * Maximum): one beyond them is refused by the broker with a DISCONNECT, so
 * it is malformed here too and the direction stops. Before the CONNACK, and
 * for the broker's packets (the client's limits are its own business), the
 * observer is lenient: sizes are bounded by our own max_packet, aliases by
 * WM_MQTT_MAX_ALIASES. */
static wm_mqtt5_config codec_cfg(const struct mqtt_session *s, int dir)
{
    wm_mqtt5_config c = { .from = dir == WM_DIR_C2S ? WM_MQTT5_FROM_CLIENT : WM_MQTT5_FROM_SERVER,
                          .maximum_packet_size = 0, .topic_alias_maximum = 65535 };
    if (dir == WM_DIR_C2S && s->connack_seen) {
        c.maximum_packet_size = s->max_packet;
        c.topic_alias_maximum = s->alias_max;
    }
    return c;
}

static void decode_and_handle(struct wm_mqtt_layer *l, struct wm_flow *f, struct mqtt_session *s, int dir,
                              const uint8_t *p, size_t n)
{
    wm_mqtt5_config cfg = codec_cfg(s, dir);
    wm_mqtt5_packet pkt;
    wm_mqtt5_result r;
    if (wm_mqtt5_decode(&cfg, p, n, &pkt, &r) != WM_MQTT5_DONE) {
        /* The frame was complete, so NEED_MORE cannot happen; treat as truncated. */
        malformed(l, s, &s->d[dir], r.status == WM_MQTT5_ERROR ? r.err : WM_MQTT5_E_TRUNCATED);
        return;
    }
    handle_packet(l, f, s, dir, p, &pkt);
}

/* A packet whose first byte is p0 starts. */
static void begin(struct wm_mqtt_layer *l, struct mqtt_session *s, int dir, uint8_t p0)
{
    struct mqtt_dir *d = &s->d[dir];
    d->cur_type = p0 >> 4;
    if (dir == WM_DIR_C2S && d->cur_type == WM_MQTT5_PUBLISH) {
        l->c.publish_seen++;
        d->cur_publish = 1;
    }
}

/* A packet of total bytes, of which `have` are in hand, cannot be decoded:
 * skip the rest. */
static void skip_packet(struct wm_mqtt_layer *l, struct mqtt_dir *d, uint32_t total, uint32_t have,
                        enum wm_mqtt_pub_outcome why)
{
    outcome(l, d, why);
    l->c.skipped_bytes += have;
    d->skip = total - have;
}

static void on_data(void *ctx, struct wm_flow *f, int dir, const uint8_t *p, uint32_t n)
{
    struct wm_mqtt_layer *l = ctx;
    struct mqtt_session *s = wm_flow_user(f);
    struct mqtt_dir *d = &s->d[dir];
    wm_mqtt5_result r;
    while (n > 0) {
        /* a CONNACK decoded in this loop may change the client's limits */
        wm_mqtt5_config cfg = codec_cfg(s, dir);
        if (d->state != DS_OPEN) {
            if (d->state == DS_UNREAD) l->c.unread_bytes += n;
            else l->c.ignored_bytes += n;
            return;
        }
        if (d->skip) {
            uint32_t k = n < d->skip ? n : d->skip;
            d->skip -= k;
            l->c.skipped_bytes += k;
            p += k;
            n -= k;
            continue;
        }
        if (d->stage != NO_BUF) {
            uint8_t *buf = l->stage_mem + (size_t)d->stage * l->cfg.max_packet;
            uint32_t k = d->stage_total - d->stage_len;
            if (k > n) k = n;
            memcpy(buf + d->stage_len, p, k);
            d->stage_len += k;
            l->c.staged_bytes += k;
            p += k;
            n -= k;
            if (d->stage_len == d->stage_total) {
                l->c.staged_packets++;
                decode_and_handle(l, f, s, dir, buf, d->stage_total);
                stage_release(l, d);
            }
            continue;
        }
        if (d->hdr_len) {
            /* Complete the split fixed header one byte at a time: it is at
             * most 5 bytes and the codec says when it has enough. */
            d->hdr[d->hdr_len++] = *p++;
            n--;
            wm_mqtt5_frame(&cfg, d->hdr, d->hdr_len, &r);
            if (r.status == WM_MQTT5_ERROR) {
                malformed(l, s, d, r.err);
                return;
            }
            if (r.status == WM_MQTT5_DONE) { /* a 2-byte packet such as PINGREQ */
                uint8_t tmp[5];
                size_t len = r.length;
                memcpy(tmp, d->hdr, len);
                d->hdr_len = 0;
                l->c.staged_packets++;
                decode_and_handle(l, f, s, dir, tmp, len);
                continue;
            }
            if (r.length == 0) continue;
            uint32_t total = (uint32_t)r.length, have = d->hdr_len;
            d->hdr_len = 0;
            if (total > l->cfg.max_packet) {
                l->c.too_large_packets++;
                skip_packet(l, d, total, have, WM_MQTT_PUB_TOO_LARGE);
            } else if (l->stage_free_n == 0) {
                l->c.staging_full++;
                skip_packet(l, d, total, have, WM_MQTT_PUB_STAGING_FULL);
            } else {
                d->stage = l->stage_free[--l->stage_free_n];
                memcpy(l->stage_mem + (size_t)d->stage * l->cfg.max_packet, d->hdr, have);
                d->stage_len = have;
                d->stage_total = total;
            }
            continue;
        }
        /* At a packet boundary: decode in place if the whole packet is here. */
        begin(l, s, dir, p[0]);
        wm_mqtt5_frame(&cfg, p, n, &r);
        if (r.status == WM_MQTT5_ERROR) {
            malformed(l, s, d, r.err);
            return;
        }
        if (r.status == WM_MQTT5_DONE) {
            uint32_t len = (uint32_t)r.length;
            if (len > l->cfg.max_packet) {
                l->c.too_large_packets++;
                skip_packet(l, d, len, 0, WM_MQTT_PUB_TOO_LARGE);
                continue; /* the skip consumes it */
            }
            l->c.zero_copy_packets++;
            decode_and_handle(l, f, s, dir, p, len);
            p += len;
            n -= len;
            continue;
        }
        if (r.length == 0) { /* fixed header split: keep its bytes */
            memcpy(d->hdr, p, n);
            d->hdr_len = (uint8_t)n;
            return;
        }
        uint32_t total = (uint32_t)r.length;
        if (total > l->cfg.max_packet) {
            l->c.too_large_packets++;
            skip_packet(l, d, total, 0, WM_MQTT_PUB_TOO_LARGE);
            continue;
        }
        if (l->stage_free_n == 0) {
            l->c.staging_full++;
            skip_packet(l, d, total, 0, WM_MQTT_PUB_STAGING_FULL);
            continue;
        }
        d->stage = l->stage_free[--l->stage_free_n];
        d->stage_len = 0;
        d->stage_total = total;
    }
}

/* The stream ended: a packet in progress is truncated. */
static void end_dir(struct wm_mqtt_layer *l, struct mqtt_dir *d)
{
    if (d->state == DS_OPEN && (d->hdr_len || d->stage != NO_BUF || d->skip)) l->c.truncated_packets++;
    outcome(l, d, WM_MQTT_PUB_TRUNCATED);
    stop_dir(l, d, DS_IGNORED);
}

static void on_open(void *ctx, struct wm_flow *f)
{
    struct wm_mqtt_layer *l = ctx;
    struct mqtt_session *s = wm_flow_user(f);
    memset(s, 0, sizeof *s);
    s->d[0].stage = s->d[1].stage = NO_BUF;
    l->c.sessions++;
}

static void on_dir_end(void *ctx, struct wm_flow *f, int dir, enum wm_dir_end why)
{
    struct mqtt_session *s = wm_flow_user(f);
    end_dir(ctx, &s->d[dir]);
}

static void on_close(void *ctx, struct wm_flow *f, enum wm_flow_close_reason why)
{
    struct wm_mqtt_layer *l = ctx;
    struct mqtt_session *s = wm_flow_user(f);
    for (int dir = 0; dir < 2; dir++) {
        end_dir(l, &s->d[dir]);
        aliases_release(l, &s->d[dir]);
    }
    /* never accepted: the broker processed none of them */
    held_publishes(l, f, s, false, WM_MQTT_PUB_NOT_CONNECTED);
    while (s->pend) {
        struct pend_sub *ps = s->pend;
        s->pend = ps->next;
        if (pend_type(ps) == WM_MQTT5_SUBSCRIBE) l->c.subscribes_unacknowledged++;
        else l->c.unsubscribes_unacknowledged++;
        pend_free(l, s, ps);
    }
    /* A connection lost without DISCONNECT ends its session too (and may
     * publish its Will), and so does an idle timeout: the timeout follows
     * the Keep Alive (on_connack), past which the broker has closed the
     * connection itself (§3.1.2.10). Two closes are not the connection's
     * end: at shutdown the data plane stops watching, and an eviction (the
     * flow table full) only loses sight of a connection the broker still
     * holds. Its session stays as it is (subscriptions, Will unpublished:
     * its end is never seen), counted. */
    bool live = s->started && !s->ended;
    if (why == WM_FLOW_CLOSE_EVICTED && live) l->c.sessions_unobserved++;
    else if (why != WM_FLOW_CLOSE_SHUTDOWN) session_end(l, f, s);
    qos2_end(l, s, false,
             why == WM_FLOW_CLOSE_SHUTDOWN  ? WM_MQTT_PUB_UNRELEASED
             : why == WM_FLOW_CLOSE_EVICTED ? WM_MQTT_PUB_UNOBSERVED
                                            : WM_MQTT_PUB_SESSION_ENDED);
    if (s->will_slot) { /* never accepted, the run ends, or the connection went out of sight */
        bool held = s->will && l->wills[s->will_slot - 1].state == W_HELD;
        if (why == WM_FLOW_CLOSE_SHUTDOWN) l->c.wills_held_at_end += held;
        else if (why == WM_FLOW_CLOSE_EVICTED && held) l->c.wills_unobserved++;
        else l->c.wills_discarded++;
        will_free(l, &l->wills[s->will_slot - 1]);
        s->will_slot = 0;
    }
}

const struct wm_stream_ops wm_mqtt_stream_ops = {on_open, on_data, on_dir_end, on_close};
