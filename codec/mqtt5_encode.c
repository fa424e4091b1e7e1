/* MQTT v5 encoder (see codec/mqtt5_encode.h). One writer serves both passes:
 * with a NULL destination it only counts, so the size computation and the
 * bytes written cannot drift apart. */
#include "codec/mqtt5_encode.h"

#include <string.h>

#include "codec/mqtt5_vbi.h"

typedef struct sink {
    uint8_t *o;     /* NULL: measure only */
    size_t n;
    bool bad;
} sink;

static void put(sink *s, const void *p, size_t len)
{
    if (s->o && len) memcpy(s->o + s->n, p, len);
    s->n += len;
}
static void put_u8(sink *s, uint8_t v) { put(s, &v, 1); }
static void put_u16(sink *s, uint32_t v) { uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v }; put(s, b, 2); }
static void put_vbi(sink *s, uint32_t v)
{
    if (v > WM_MQTT5_VBI_MAX) { s->bad = true; return; }
    uint8_t b[4];
    size_t k = wm_mqtt5_vbi_encode(v, b);
    put(s, b, k);
}
/* Two Byte length + bytes: UTF-8 Encoded String or Binary Data (§1.5.4, §1.5.6). */
static void put_lv(sink *s, wm_mqtt5_bytes b)
{
    if (b.len > 0xFFFF) { s->bad = true; return; }
    put_u16(s, b.len);
    put(s, b.p, b.len);
}

static bool props_representable(const wm_mqtt5_props *pr)
{
    uint64_t m = pr->present;
    for (unsigned id = 0; id < WM_MQTT5_PROP_ID_LIMIT; id++) {
        if (!((m >> id) & 1)) continue;
        wm_mqtt5_prop_type t = wm_mqtt5_prop_type_of(id);
        if ((t == WM_MQTT5_PT_UTF8 || t == WM_MQTT5_PT_BINARY) && pr->v[id].s.len > 0xFFFF) return false;
    }
    if (pr->user_properties)
        for (unsigned i = 0; i < pr->user_property_count; i++)
            if (pr->user_properties[i].key.len > 0xFFFF || pr->user_properties[i].value.len > 0xFFFF) return false;
    if (pr->subscription_identifiers)
        for (unsigned i = 0; i < pr->subscription_identifier_count; i++)
            if (pr->subscription_identifiers[i] > WM_MQTT5_VBI_MAX) return false;
    return true;
}

/* Property Length + properties (§2.2.2). */
static void put_props(sink *s, const wm_mqtt5_props *pr)
{
    if (!props_representable(pr)) { s->bad = true; return; }
    size_t len = wm_mqtt5_props_size(pr);
    if (len > WM_MQTT5_VBI_MAX) { s->bad = true; return; }
    put_vbi(s, (uint32_t)len);
    if (s->o) wm_mqtt5_props_write(pr, s->o + s->n);
    s->n += len;
}

static bool props_empty(const wm_mqtt5_props *pr)
{
    return wm_mqtt5_props_size(pr) == 0;
}

static void body_connect(sink *s, const wm_mqtt5_packet *p)
{
    const wm_mqtt5_connect *k = &p->connect;
    wm_mqtt5_bytes name = k->protocol_name.len ? k->protocol_name : (wm_mqtt5_bytes){ (const uint8_t *)"MQTT", 4 };
    put_lv(s, name);
    put_u8(s, k->protocol_version ? k->protocol_version : 5);
    put_u8(s, (uint8_t)(k->username_flag << 7 | k->password_flag << 6 | k->will_retain << 5 |
                        (k->will_qos & 3) << 3 | k->will_flag << 2 | k->clean_start << 1));
    put_u16(s, k->keep_alive);
    put_props(s, &p->props);
    put_lv(s, k->client_id);
    if (k->will_flag) {
        put_props(s, &k->will_props);
        put_lv(s, k->will_topic);
        put_lv(s, k->will_payload);
    }
    if (k->username_flag) put_lv(s, k->username);
    if (k->password_flag) put_lv(s, k->password);
}

/* SUBSCRIBE / UNSUBSCRIBE payload: from the hand-built array or the raw list. */
static void body_filters(sink *s, const wm_mqtt5_packet *p)
{
    if (!p->subscriptions) { put(s, p->payload.p, p->payload.len); return; }
    for (uint32_t i = 0; i < p->count; i++) {
        const wm_mqtt5_subscription *e = &p->subscriptions[i];
        put_lv(s, e->filter);
        if (p->type == WM_MQTT5_SUBSCRIBE)
            put_u8(s, (uint8_t)((e->retain_handling & 3) << 4 | e->retain_as_published << 3 | e->no_local << 2 | (e->qos & 3)));
    }
}

/* Reason Code and properties in the shortest form §3.4.2.1 / §3.14.2.1
 * allow: nothing for 0x00 without properties, the code alone without
 * properties, else both. */
static void put_reason_short(sink *s, const wm_mqtt5_packet *p)
{
    if (props_empty(&p->props)) {
        if (p->reason_code) put_u8(s, p->reason_code);
        return;
    }
    put_u8(s, p->reason_code);
    put_props(s, &p->props);
}

static void body(sink *s, const wm_mqtt5_packet *p)
{
    switch (p->type) {
    case WM_MQTT5_CONNECT: body_connect(s, p); break;
    case WM_MQTT5_CONNACK:
        put_u8(s, p->session_present ? 1 : 0);
        put_u8(s, p->reason_code);
        put_props(s, &p->props);
        break;
    case WM_MQTT5_PUBLISH:
        put_lv(s, p->topic);
        if (p->qos) put_u16(s, p->packet_id);
        put_props(s, &p->props);
        put(s, p->payload.p, p->payload.len);
        break;
    case WM_MQTT5_PUBACK:
    case WM_MQTT5_PUBREC:
    case WM_MQTT5_PUBREL:
    case WM_MQTT5_PUBCOMP:
        put_u16(s, p->packet_id);
        put_reason_short(s, p);
        break;
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE:
        put_u16(s, p->packet_id);
        put_props(s, &p->props);
        body_filters(s, p);
        break;
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK:
        put_u16(s, p->packet_id);
        put_props(s, &p->props);
        put(s, p->payload.p, p->payload.len);
        break;
    case WM_MQTT5_PINGREQ:
    case WM_MQTT5_PINGRESP:
        break;
    case WM_MQTT5_DISCONNECT:
        put_reason_short(s, p);
        break;
    case WM_MQTT5_AUTH:
        if (p->reason_code || !props_empty(&p->props)) {
            put_u8(s, p->reason_code);
            put_props(s, &p->props);
        }
        break;
    default:
        s->bad = true;
    }
}

/* §2.1.3: flags are the type's, PUBLISH's from its fields. */
static uint8_t first_byte(const wm_mqtt5_packet *p)
{
    uint8_t f;
    switch (p->type) {
    case WM_MQTT5_PUBLISH: f = (uint8_t)(p->dup << 3 | (p->qos & 3) << 1 | p->retain); break;
    case WM_MQTT5_PUBREL:
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE: f = 2; break;
    default: f = 0;
    }
    return (uint8_t)(p->type << 4 | f);
}

wm_mqtt5_enc_status wm_mqtt5_encode(const wm_mqtt5_packet *pkt, uint8_t *out, size_t cap, size_t *n)
{
    if (pkt->type == 0 || pkt->type > 15) return WM_MQTT5_ENC_UNREPRESENTABLE;
    sink m = { NULL, 0, false };
    body(&m, pkt);
    if (m.bad || m.n > WM_MQTT5_VBI_MAX) return WM_MQTT5_ENC_UNREPRESENTABLE;
    size_t total = 1 + wm_mqtt5_vbi_size((uint32_t)m.n) + m.n;
    *n = total;
    if (!out || cap < total) return WM_MQTT5_ENC_BUFFER_TOO_SMALL;
    sink w = { out, 0, false };
    put_u8(&w, first_byte(pkt));
    put_vbi(&w, (uint32_t)m.n);
    body(&w, pkt);
    return WM_MQTT5_ENC_OK;
}
