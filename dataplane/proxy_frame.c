/* See proxy_frame.h. */
#include "dataplane/proxy_frame.h"

#include "codec/mqtt5_props.h"
#include "codec/mqtt5_reason.h"
#include "codec/mqtt5_wire.h"
#include "dataplane/proxy.h"

void wm_proxy_session_init(wm_proxy_session *ss, uint32_t max_packet)
{
    ss->max_packet = max_packet;
    ss->cfg[WM_PROXY_C2U] = (wm_mqtt5_config){ .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = max_packet };
    ss->cfg[WM_PROXY_U2C] = (wm_mqtt5_config){ .from = WM_MQTT5_FROM_SERVER, .maximum_packet_size = max_packet };
    ss->connack_sent = false;
    ss->stopped[0] = ss->stopped[1] = false;
}

/* What the receiver of direction `to` announced bounds the packets sent to it. */
static void learn_limits(wm_proxy_session *ss, int to, const wm_mqtt5_props *pr)
{
    wm_mqtt5_config *c = &ss->cfg[to];
    c->maximum_packet_size = ss->max_packet;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE) &&
        pr->v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u < ss->max_packet)
        c->maximum_packet_size = pr->v[WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE].u;
    c->topic_alias_maximum = wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM)
                                 ? (uint16_t)pr->v[WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM].u : 0;
}

wm_proxy_frame_result wm_proxy_frame(wm_proxy_session *ss, int dir, wm_proxy_queue *q)
{
    wm_proxy_frame_result res = { .verdict = WM_PROXY_FRAME_OK };
    if (ss->stopped[dir]) {
        res.verdict = WM_PROXY_FRAME_MALFORMED;
        return res;
    }
    while (q->ready < q->tail) {
        wm_mqtt5_packet pkt;
        wm_mqtt5_result r;
        wm_mqtt5_status st = wm_mqtt5_decode(&ss->cfg[dir], q->buf + q->ready, q->tail - q->ready, &pkt, &r);
        if (st == WM_MQTT5_NEED_MORE) break;
        if (st == WM_MQTT5_ERROR) {
            ss->stopped[dir] = true;
            res.verdict = r.err == WM_MQTT5_E_PACKET_TOO_LARGE ? WM_PROXY_FRAME_TOO_LARGE : WM_PROXY_FRAME_MALFORMED;
            res.err = r.err;
            res.reason_code = r.reason_code;
            res.offset = (uint32_t)r.offset;
            return res;
        }
        if (pkt.type == WM_MQTT5_CONNECT && dir == WM_PROXY_C2U) {
            learn_limits(ss, WM_PROXY_U2C, &pkt.props);
        } else if (pkt.type == WM_MQTT5_CONNACK && dir == WM_PROXY_U2C) {
            learn_limits(ss, WM_PROXY_C2U, &pkt.props);
            ss->connack_sent = true;
        } else if (pkt.type == WM_MQTT5_PUBLISH) {
            res.publishes++;
        }
        res.packets++;
        q->ready += (uint32_t)r.length;
    }
    return res;
}

uint32_t wm_proxy_error_packet(const wm_proxy_session *ss, int dir, uint8_t reason_code, uint8_t *out)
{
    uint8_t *o = out;
    if (dir == WM_PROXY_C2U && !ss->connack_sent) {
        /* CONNACK: flags 0, reason code, no properties (§3.2.2). */
        *o++ = WM_MQTT5_CONNACK << 4;
        o = wm_mqtt5_wr_vbi(o, 3);
        *o++ = 0;
        *o++ = reason_code;
        *o++ = 0;
    } else if (dir == WM_PROXY_U2C && !ss->connack_sent) {
        return 0;
    } else {
        /* DISCONNECT: reason code, no properties (§3.14.2). */
        *o++ = WM_MQTT5_DISCONNECT << 4;
        o = wm_mqtt5_wr_vbi(o, 2);
        *o++ = reason_code;
        *o++ = 0;
    }
    return (uint32_t)(o - out);
}
