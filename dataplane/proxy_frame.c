/* See proxy_frame.h. */
#include "dataplane/proxy_frame.h"

#include <string.h>

#include "codec/mqtt5_encode.h"
#include "codec/mqtt5_props.h"
#include "codec/mqtt5_reason.h"
#include "codec/mqtt5_wire.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_answers.h"

void wm_proxy_session_init(wm_proxy_session *ss, uint32_t max_packet)
{
    ss->max_packet = max_packet;
    ss->cfg[WM_PROXY_C2U] = (wm_mqtt5_config){ .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = max_packet };
    ss->cfg[WM_PROXY_U2C] = (wm_mqtt5_config){ .from = WM_MQTT5_FROM_SERVER, .maximum_packet_size = max_packet };
    ss->connack_sent = ss->connack_refused = ss->connect_seen = false;
    ss->client_level = 0;
    ss->stopped[0] = ss->stopped[1] = false;
    ss->disconnect_seen[0] = ss->disconnect_seen[1] = false;
    ss->filter = NULL;
    ss->queues = NULL;
    ss->scratch = NULL;
    ss->scratch_cap = 0;
    ss->peeked[0] = ss->peeked[1] = 0;
    ss->ping_out = ss->pings_wait = false;
}

/* The ping side dir sends: PINGREQ from the client, PINGRESP from the broker
 * (one the wrong way is held like any packet). */
static wm_mqtt5_type ping_type(int dir)
{
    return dir == WM_PROXY_C2U ? WM_MQTT5_PINGREQ : WM_MQTT5_PINGRESP;
}

/* n pings of side dir at p (2 bytes each, §3.12, §3.13). */
static void fill_pings(uint8_t *p, int dir, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p[2 * i] = (uint8_t)(ping_type(dir) << 4);
        p[2 * i + 1] = 0;
    }
}

/* How many PINGRESPs the proxy may queue towards the client now: those it
 * has framed for it and not sent stay within WM_PROXY_ANSWERS_MAX bytes, as
 * its answers that wait do (proxy_answers.h), and they fit in the queue as
 * it is (no compaction under a send in flight). A client that reads nothing
 * so has its later pings wait in its own stream (answer_pings). */
static uint32_t pingresp_room(const wm_proxy_session *ss)
{
    const wm_proxy_queue *u = &ss->queues[WM_PROXY_U2C];
    uint32_t pending = wm_proxy_queue_pending(u);
    uint32_t fit = u->sending ? u->cap - u->tail : u->cap - wm_proxy_queue_held(u);
    uint32_t bytes = pending < WM_PROXY_ANSWERS_MAX ? WM_PROXY_ANSWERS_MAX - pending : 0;
    if (bytes > fit) bytes = fit;
    if (bytes > ss->scratch_cap) bytes = ss->scratch_cap;
    return bytes / 2;
}

/* The proxy answers n PINGREQs of a held client itself: n PINGRESPs into
 * the client's queue at its framed end, in one move of its unframed bytes.
 * Not counted for the order of the answers (proxy_answers.h): they answer
 * packets the broker never saw, and §4.6 does not order PINGRESP. */
static void answer_pings(wm_proxy_session *ss, uint32_t n)
{
    wm_proxy_queue *u = &ss->queues[WM_PROXY_U2C];
    fill_pings(ss->scratch, WM_PROXY_U2C, n);
    /* within pingresp_room(): it fits */
    (void)wm_proxy_queue_splice(u, u->ready, 0, ss->scratch, 2 * n);
    u->ready += 2 * n;
}

/* n pings of side dir went on at q->ready (framed): counted for the order
 * of the answers like any packet that goes on (wm_proxy_filter_passed: a
 * PINGREQ is one more of the client's packets the broker answers, a
 * PINGRESP one more broker answer relayed), and the proxy's answers that
 * makes due follow them at once, at q->ready. False if q has no room for
 * those. */
static bool pass_pings(wm_proxy_session *ss, int dir, wm_proxy_queue *q, uint32_t n)
{
    wm_mqtt5_packet ping;
    memset(&ping, 0, sizeof ping);
    ping.type = (uint8_t)ping_type(dir);
    for (uint32_t i = 0; i < n; i++) wm_proxy_filter_passed(ss->filter, dir, &ping);
    return wm_proxy_answers_release(&ss->filter->answers[1 - dir], q);
}

/* Shows the filter the complete packets after the held one at q->ready
 * (len bytes), from where the last look stopped; decode errors are left to
 * the framing that reaches them. A PINGREQ (PINGRESP) among them is taken
 * out of the held bytes now: it carries nothing the held packets could
 * change, MQTT lets a client send it at any time (§3.12), and it is what
 * keeps a held client's connection alive (the broker closes one it hears
 * nothing from for 1.5 x Keep Alive, §3.1.2.10; the client closes one whose
 * PINGRESP does not come). A PINGRESP goes on to the client, framed in
 * front of the held packet. Of the client's PINGREQs one goes on to the
 * broker the same way while none that passed a hold waits for its
 * PINGRESP (ss->ping_out): the broker's keep-alive needs no more; the
 * others the proxy answers itself (answer_pings), so a held client gets a
 * PINGRESP for each, at the pace it reads them (pingresp_room: a PINGREQ
 * with no room for its answer waits in place, ss->pings_wait).
 * Cost (REVIEW8 finding 3): the pings are taken out as the window is
 * looked at, each packet that stays moved once over the room they leave,
 * and those that go on are put in front of the held bytes with one move of
 * them per call: O(bytes received) per call, plus the held bytes once when
 * a ping goes on (towards the broker at most once per broker round trip).
 * Before 2026-12-02 each ping moved all the held bytes and went to the
 * broker: a client's PINGREQ flood behind a held SUBSCRIBE and a 60 KB
 * PUBLISH kept its worker moving memory (32,000 bytes per byte received),
 * and every other connection of the worker waited for seconds.
 * The broker's DISCONNECT among them ends the hold (*ended): the broker
 * closes the connection next ([MQTT-3.14.4-2]), so what is held would never
 * be released. It is framed in place of the held packets (after the pings
 * before it), which are dropped with anything after it ([MQTT-3.14.4-1]):
 * QoS 1 and 2 deliveries were not acknowledged, so the broker keeps them in
 * the session and sends them again on its next connection (the one that
 * took it over, say); QoS 0 is at most once. So the client learns the
 * broker's reason (0x8E Session taken over, 0x8B Server shutting down, ...)
 * and the broker's close is no lost broker. Before 2026-12-01 it stayed
 * unframed and was dropped at the close: DISCONNECT 0x80 from the proxy,
 * counted as lost (REVIEW7 finding 4). The pings that go on count for the
 * order of the answers (pass_pings). Returns the number of packets framed
 * so; *answered is the number of PINGREQs the proxy answered; *no_room if
 * the queue could not take the answers the pings made due. */
static uint32_t peek_behind(wm_proxy_session *ss, int dir, wm_proxy_queue *q, uint32_t len, bool *ended,
                            uint32_t *answered, bool *no_room)
{
    uint32_t at = q->ready + (ss->peeked[dir] > len ? ss->peeked[dir] : len);
    uint32_t to = at;   /* [ready, to) stays held: the window so far without its pings */
    uint32_t fwd = 0, ans = 0, room = dir == WM_PROXY_C2U ? pingresp_room(ss) : 0;
    bool wait = false;
    while (at < q->tail) {
        wm_mqtt5_packet pkt;
        wm_mqtt5_result r;
        if (wm_mqtt5_decode(&ss->cfg[dir], q->buf + at, q->tail - at, &pkt, &r) != WM_MQTT5_DONE) break;
        uint32_t n = (uint32_t)r.length;
        if (pkt.type == WM_MQTT5_DISCONNECT && dir == WM_PROXY_U2C) {
            memmove(q->buf + q->ready + 2 * fwd, q->buf + at, n);
            fill_pings(q->buf + q->ready, dir, fwd);
            q->ready += 2 * fwd;
            q->tail = q->ready + n;   /* the DISCONNECT, unframed: what the pings make due goes before it */
            *no_room = !pass_pings(ss, dir, q, fwd);
            q->ready = q->tail;
            ss->disconnect_seen[dir] = true;
            ss->peeked[dir] = 0;
            *ended = true;
            return fwd + 1;
        }
        if (pkt.type == ping_type(dir) && n == 2) {
            if (dir == WM_PROXY_U2C || !ss->ping_out) fwd++;
            else if (ans < room) ans++;
            else {
                wait = true;
                break;
            }
            ss->ping_out = dir == WM_PROXY_C2U;
            at += 2;
            continue;
        }
        wm_proxy_filter_prefetch(ss->filter, dir, &pkt);
        if (to != at) memmove(q->buf + to, q->buf + at, n);
        at += n;
        to += n;
    }
    if (to != at) {
        memmove(q->buf + to, q->buf + at, q->tail - at);
        q->tail -= at - to;
    }
    ss->peeked[dir] = to - q->ready;
    if (dir == WM_PROXY_C2U) ss->pings_wait = wait;
    if (fwd) {
        /* room: the window gave up at least 2 * fwd bytes */
        memmove(q->buf + q->ready + 2 * fwd, q->buf + q->ready, q->tail - q->ready);
        fill_pings(q->buf + q->ready, dir, fwd);
        q->ready += 2 * fwd;
        q->tail += 2 * fwd;
        *no_room = !pass_pings(ss, dir, q, fwd);
    }
    if (ans) answer_pings(ss, ans);
    *answered = ans;
    return fwd;
}

/* Withheld packets leave a gap [q->ready, rd) between the framed bytes and
 * the next packet to frame; it is closed by moving what follows down, once
 * per call (or before a packet must be rewritten in place), so dropping k
 * packets of a chunk costs one move, not k. */
static void close_gap(wm_proxy_queue *q, uint32_t *rd)
{
    if (*rd == q->ready) return;
    memmove(q->buf + q->ready, q->buf + *rd, q->tail - *rd);
    q->tail -= *rd - q->ready;
    *rd = q->ready;
}

/* No room for a packet the proxy had to send: the direction stops. */
static wm_proxy_frame_result no_room(wm_proxy_session *ss, int dir, wm_proxy_frame_result res)
{
    ss->stopped[dir] = true;
    res.verdict = WM_PROXY_FRAME_NO_ROOM;
    res.reason_code = 0x97;   /* Quota exceeded */
    return res;
}

/* A packet of side dir has just been relayed into q: the answers the proxy
 * made for the other side that waited for it go right after it
 * (dataplane/proxy_answers.h). False if q has no room for them. */
static bool release_acks(wm_proxy_session *ss, int dir, wm_proxy_queue *q, uint32_t *rd)
{
    wm_proxy_answers *a = &ss->filter->answers[1 - dir];
    if (!wm_proxy_answers_due(a)) return true;
    close_gap(q, rd);
    bool ok = wm_proxy_answers_release(a, q);
    *rd = q->ready;
    return ok;
}

/* The Maximum Packet Size the proxy announces for the sender of pkt (its
 * CONNECT or CONNACK) and holds the other direction to: the sender's own,
 * capped at max_packet (none: max_packet). A filtering proxy adds its
 * Subscription Identifier to SUBSCRIBEs, so the broker adds it to what it
 * delivers and the proxy strips it again: the client's own bound goes to the
 * broker WM_PROXY_SID_ROOM bytes larger, so the broker does not drop a
 * message that reaches the client within it, and the filter holds the client
 * to its own (proxy_filter.h). */
static uint32_t announced_max(const wm_proxy_session *ss, const wm_mqtt5_packet *pkt)
{
    const wm_mqtt5_props *pr = &pkt->props;
    if (!wm_mqtt5_props_has(pr, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE)) return ss->max_packet;
    uint64_t v = pr->v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u;
    if (ss->filter && pkt->type == WM_MQTT5_CONNECT) v += WM_PROXY_SID_ROOM;
    return v < ss->max_packet ? (uint32_t)v : ss->max_packet;
}

/* What the receiver of direction `to` announced bounds the packets sent to it. */
static void learn_limits(wm_proxy_session *ss, int to, const wm_mqtt5_packet *pkt)
{
    const wm_mqtt5_props *pr = &pkt->props;
    wm_mqtt5_config *c = &ss->cfg[to];
    c->maximum_packet_size = announced_max(ss, pkt);
    c->topic_alias_maximum = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM)
                                 ? (uint16_t)pr->v[WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM].u : 0;
}

/* Makes the CONNECT (to the broker) or successful CONNACK (to the client) at
 * q->ready announce announced_max(): no larger than the proxy's own bound, so
 * neither end sends the proxy a packet it would have to refuse: the broker
 * then drops oversized messages for this client as §3.1.2.11.4 says, instead
 * of the proxy closing the connection. An announced value that is already
 * right is left alone; another is overwritten in place; an absent one is
 * appended to the properties (the Property Length and Remaining Length grow
 * with it). *len is the packet's length, updated. Returns 1 if the packet was
 * rewritten, 0 if not, -1 if the queue has no room for the larger packet. */
static int announce_max_packet(const wm_proxy_session *ss, wm_proxy_queue *q, const wm_mqtt5_packet *pkt,
                               uint32_t *len)
{
    const wm_mqtt5_props *pr = &pkt->props;
    uint32_t want = announced_max(ss, pkt);
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE)) {
        if (pr->v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u == want) return 0;
        size_t at = wm_mqtt5_props_offset(pr, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE);
        wm_mqtt5_wr_u32((uint8_t *)pr->raw.p + at + 1, want);
        return 1;
    }
    uint32_t raw_rel = (uint32_t)(pr->raw.p - (q->buf + q->ready)), raw_len = (uint32_t)pr->raw.len;
    uint32_t pl_vbi = (uint32_t)wm_mqtt5_vbi_size(raw_len), new_pl = raw_len + 5;
    uint32_t new_pl_vbi = (uint32_t)wm_mqtt5_vbi_size(new_pl);
    uint32_t rl = pkt->remaining_length, rl_vbi = (uint32_t)wm_mqtt5_vbi_size(rl);
    uint32_t new_rl = rl + 5 + new_pl_vbi - pl_vbi;
    if (new_rl > WM_MQTT5_VBI_MAX) return -1;
    uint8_t prop[5] = { WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE }, v[4];
    wm_mqtt5_wr_u32(prop + 1, want);
    /* Back to front, so the offsets computed above stay valid; each splice
     * may compact the queue, which moves `ready` with everything else. */
    if (!wm_proxy_queue_splice(q, q->ready + raw_rel + raw_len, 0, prop, 5)) return -1;
    if (!wm_proxy_queue_splice(q, q->ready + raw_rel - pl_vbi, pl_vbi, v, (uint32_t)wm_mqtt5_vbi_encode(new_pl, v)))
        return -1;
    if (!wm_proxy_queue_splice(q, q->ready + 1, rl_vbi, v, (uint32_t)wm_mqtt5_vbi_encode(new_rl, v))) return -1;
    *len = 1 + (uint32_t)wm_mqtt5_vbi_size(new_rl) + new_rl;
    return 1;
}

/* The protocol level of p[0..n), a CONNECT the codec refused, if it is an
 * MQTT 3.1 ("MQIsdp", 3) or 3.1.1 ("MQTT", 4) one (§3.1.2.1-2 of each), else 0. */
static uint8_t old_level(const uint8_t *p, uint32_t n)
{
    if (n < 2 || p[0] != WM_MQTT5_CONNECT << 4) return 0;
    uint32_t i = 1;
    while (i < n && i < 5 && p[i] & 0x80) i++;   /* Remaining Length */
    i++;
    if (i + 2 > n) return 0;
    uint32_t len = (uint32_t)p[i] << 8 | p[i + 1];
    i += 2;
    if (i + len + 1 > n) return 0;
    uint8_t level = p[i + len];
    if (len == 4 && !memcmp(p + i, "MQTT", 4) && level == 4) return 4;
    if (len == 6 && !memcmp(p + i, "MQIsdp", 6) && level == 3) return 3;
    return 0;
}

wm_proxy_frame_result wm_proxy_frame(wm_proxy_session *ss, int dir, wm_proxy_queue *q)
{
    wm_proxy_frame_result res = { .verdict = WM_PROXY_FRAME_OK };
    if (ss->stopped[dir]) {
        res.verdict = WM_PROXY_FRAME_MALFORMED;
        return res;
    }
    uint32_t rd = q->ready;   /* next packet; [q->ready, rd) is withheld */
    bool hold = dir == WM_PROXY_C2U && wm_proxy_session_holding(ss);
    uint32_t moved = 0;       /* bytes of the stream framed by this call (as received) */
    while (rd < q->tail) {
        if (hold && q->buf[rd] >> 4 != WM_MQTT5_AUTH && q->buf[rd] >> 4 != WM_MQTT5_DISCONNECT) break;
        wm_mqtt5_packet pkt;
        wm_mqtt5_result r;
        wm_mqtt5_status st = wm_mqtt5_decode(&ss->cfg[dir], q->buf + rd, q->tail - rd, &pkt, &r);
        if (st == WM_MQTT5_NEED_MORE) break;
        if (st == WM_MQTT5_ERROR) {
            if (dir == WM_PROXY_C2U && !ss->connect_seen && (r.err == WM_MQTT5_E_PROTOCOL_NAME ||
                                                             r.err == WM_MQTT5_E_PROTOCOL_VERSION))
                res.old_version = (ss->client_level = old_level(q->buf + rd, q->tail - rd)) != 0;
            close_gap(q, &rd);
            ss->stopped[dir] = true;
            res.verdict = r.err == WM_MQTT5_E_PACKET_TOO_LARGE ? WM_PROXY_FRAME_TOO_LARGE : WM_PROXY_FRAME_MALFORMED;
            res.err = r.err;
            res.reason_code = r.reason_code;
            res.offset = (uint32_t)r.offset;
            return res;
        }
        if (pkt.type == WM_MQTT5_CONNECT && dir == WM_PROXY_C2U && ss->connect_seen) {
            /* [MQTT-3.1.0-2]: the proxy ends it, so the broker's close is not
             * taken for a lost broker (and no session is renamed) */
            close_gap(q, &rd);
            ss->stopped[dir] = true;
            res.verdict = WM_PROXY_FRAME_MALFORMED;
            res.connect_again = true;
            res.reason_code = WM_MQTT5_RC_PROTOCOL_ERROR;
            return res;
        }
        uint32_t len = (uint32_t)r.length;
        bool announce = (pkt.type == WM_MQTT5_CONNECT && dir == WM_PROXY_C2U) ||
                        (pkt.type == WM_MQTT5_CONNACK && dir == WM_PROXY_U2C && pkt.reason_code < 0x80);
        if (announce && rd != q->ready) {
            close_gap(q, &rd);   /* the rewrite below works at q->ready: decode again there */
            continue;
        }
        wm_proxy_action act = WM_PROXY_KEEP;
        uint32_t new_len = 0;
        if (ss->filter) {
            act = wm_proxy_filter_packet(ss->filter, dir, &pkt, ss->cfg, &ss->queues[1 - dir], ss->scratch,
                                         ss->scratch_cap, &new_len);
            if (act == WM_PROXY_FAIL) {
                close_gap(q, &rd);
                return no_room(ss, dir, res);
            }
            if (act == WM_PROXY_HOLD) {
                close_gap(q, &rd);
                ss->peeked[dir] = ss->peeked[dir] > moved ? ss->peeked[dir] - moved : 0;
                bool ended = false, full = false;
                res.packets += peek_behind(ss, dir, q, len, &ended, &res.pings_answered, &full);
                if (full) return no_room(ss, dir, res);
                res.held = !ended;
                return res;
            }
        }
        moved += len;
        if (pkt.type == WM_MQTT5_PUBLISH) res.publishes++;
        res.packets++;
        if (pkt.type == WM_MQTT5_CONNECT && dir == WM_PROXY_C2U) {
            ss->connect_seen = true;
            hold = wm_proxy_session_holding(ss);
        }
        if (pkt.type == WM_MQTT5_DISCONNECT) ss->disconnect_seen[dir] = true;
        if (pkt.type == WM_MQTT5_PINGRESP && dir == WM_PROXY_U2C) ss->ping_out = false;
        if (act == WM_PROXY_DROP) {
            res.dropped++;
            rd += len;
            continue;
        }
        if (act == WM_PROXY_REPLACE && new_len <= rd + len - q->ready) {
            /* It fits where the gap and the packet were: written there, the
             * bytes after it stay put (a splice would move them all, for
             * every forwarded packet of a chunk that withholds most). */
            memcpy(q->buf + q->ready, ss->scratch, new_len);
            q->ready += new_len;
            rd += len;
            res.replaced++;
            if (!release_acks(ss, dir, q, &rd)) return no_room(ss, dir, res);
            continue;
        }
        if (act == WM_PROXY_REPLACE) {
            close_gap(q, &rd);
            if (!wm_proxy_queue_splice(q, q->ready, len, ss->scratch, new_len)) return no_room(ss, dir, res);
            len = new_len;
            rd = q->ready;
            res.replaced++;
        } else if (announce) {
            learn_limits(ss, 1 - dir, &pkt);
            int rw = announce_max_packet(ss, q, &pkt, &len);
            if (rw < 0) {
                ss->stopped[dir] = true;
                res.verdict = WM_PROXY_FRAME_TOO_LARGE;
                res.err = WM_MQTT5_E_PACKET_TOO_LARGE;
                res.reason_code = 0x95;
                return res;
            }
            res.rewritten += (uint32_t)rw;
            rd = q->ready;
        }
        if (pkt.type == WM_MQTT5_CONNACK && dir == WM_PROXY_U2C && !ss->connack_sent) {
            ss->connack_sent = res.connack = true;
            ss->connack_refused = pkt.reason_code >= 0x80;
        }
        if (rd != q->ready) memmove(q->buf + q->ready, q->buf + rd, len);
        q->ready += len;
        rd += len;
        if (ss->filter && !release_acks(ss, dir, q, &rd)) return no_room(ss, dir, res);
    }
    close_gap(q, &rd);
    ss->peeked[dir] = 0;
    return res;
}

uint32_t wm_proxy_error_packet(const wm_proxy_session *ss, int dir, uint8_t reason_code, uint8_t *out)
{
    wm_mqtt5_packet pkt;
    memset(&pkt, 0, sizeof pkt);
    if (dir == WM_PROXY_C2U && !ss->connack_sent && ss->client_level) {
        static const uint8_t refused[4] = { WM_MQTT5_CONNACK << 4, 2, 0, 0x01 };
        memcpy(out, refused, sizeof refused);
        return sizeof refused;
    }
    if (dir == WM_PROXY_C2U && !ss->connack_sent) pkt.type = WM_MQTT5_CONNACK;   /* §3.2.2.2 */
    else if (dir == WM_PROXY_U2C && !ss->connack_sent) return 0;
    else pkt.type = WM_MQTT5_DISCONNECT;                                      /* §3.14.2.1 */
    pkt.reason_code = reason_code;
    size_t n;
    if (wm_mqtt5_encode(&pkt, out, WM_PROXY_ERROR_PACKET_MAX, &n) != WM_MQTT5_ENC_OK) return 0;
    return (uint32_t)n;
}
