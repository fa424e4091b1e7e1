/* The strict streaming MQTT v5 decoder (see codec/mqtt5_decode.h).
 *
 * Shape: wm_mqtt5_frame() checks the fixed header and finds the packet's
 * length; once all of it is in hand, one function per packet type walks a
 * bounded cursor over the body. Every reader stops at the cursor's end, so a
 * length field that lies cannot make us read past the packet. Errors carry
 * the position of the offending byte (`at`). PUBLISH, the packet the data
 * plane sees at line rate, is decoded first and touches only the fields it
 * sets. */
#include "codec/mqtt5_decode.h"

#include "codec/mqtt5_topic.h"
#include "codec/mqtt5_wire.h"

/* §2.1.3: required flag nibble per type; PUBLISH (0xFF) is checked apart. */
static const uint8_t fixed_flags[16] = {
    [WM_MQTT5_CONNECT] = 0, [WM_MQTT5_CONNACK] = 0, [WM_MQTT5_PUBLISH] = 0xFF,
    [WM_MQTT5_PUBACK] = 0, [WM_MQTT5_PUBREC] = 0, [WM_MQTT5_PUBREL] = 2, [WM_MQTT5_PUBCOMP] = 0,
    [WM_MQTT5_SUBSCRIBE] = 2, [WM_MQTT5_SUBACK] = 0, [WM_MQTT5_UNSUBSCRIBE] = 2, [WM_MQTT5_UNSUBACK] = 0,
    [WM_MQTT5_PINGREQ] = 0, [WM_MQTT5_PINGRESP] = 0, [WM_MQTT5_DISCONNECT] = 0, [WM_MQTT5_AUTH] = 0,
};

static inline wm_mqtt5_status fail(wm_mqtt5_result *r, wm_mqtt5_err e, size_t off)
{
    r->status = WM_MQTT5_ERROR;
    r->err = e;
    r->reason_code = wm_mqtt5_err_reason(e);
    r->offset = off;
    return WM_MQTT5_ERROR;
}

static inline wm_mqtt5_status frame(const wm_mqtt5_config *cfg, const uint8_t *buf, size_t len,
                                    wm_mqtt5_result *r, size_t *hdr_len)
{
    r->length = 0;
    if (len == 0) { r->status = WM_MQTT5_NEED_MORE; r->need = 1; return WM_MQTT5_NEED_MORE; }
    unsigned type = buf[0] >> 4, flags = buf[0] & 0x0F;
    if (type == WM_MQTT5_RESERVED) return fail(r, WM_MQTT5_E_RESERVED_TYPE, 0);
    if (type == WM_MQTT5_PUBLISH) {
        if ((flags & 0x06) == 0x06) return fail(r, WM_MQTT5_E_PUBLISH_QOS3, 0);        /* §3.3.1.2 */
        if ((flags & 0x08) && !(flags & 0x06)) return fail(r, WM_MQTT5_E_PUBLISH_DUP_QOS0, 0); /* §3.3.1.1 */
    } else if (flags != fixed_flags[type]) {
        return fail(r, WM_MQTT5_E_FIXED_HEADER_FLAGS, 0);
    }
    if (!wm_mqtt5_direction_allowed(type, cfg->from)) return fail(r, WM_MQTT5_E_WRONG_DIRECTION, 0);
    uint32_t rl;
    size_t n;
    switch (wm_mqtt5_vbi_decode(buf + 1, len - 1, &rl, &n)) {
    case WM_MQTT5_VBI_OK: break;
    case WM_MQTT5_VBI_NEED_MORE: r->status = WM_MQTT5_NEED_MORE; r->need = 1; return WM_MQTT5_NEED_MORE;
    case WM_MQTT5_VBI_TOO_LONG: return fail(r, WM_MQTT5_E_VBI_TOO_LONG, 1 + n);
    case WM_MQTT5_VBI_NOT_MINIMAL: return fail(r, WM_MQTT5_E_VBI_NOT_MINIMAL, 1 + n);
    }
    size_t total = 1 + n + (size_t)rl;
    /* §3.1.2.11.4 / §3.2.2.3.6: judged on the fixed header alone, so an
     * oversized packet is refused before its body is buffered. */
    if (cfg->maximum_packet_size && total > cfg->maximum_packet_size)
        return fail(r, WM_MQTT5_E_PACKET_TOO_LARGE, 1);
    *hdr_len = 1 + n;
    r->length = total;
    if (len < total) { r->status = WM_MQTT5_NEED_MORE; r->need = total - len; return WM_MQTT5_NEED_MORE; }
    r->status = WM_MQTT5_DONE;
    r->need = 0;
    return WM_MQTT5_DONE;
}

wm_mqtt5_status wm_mqtt5_frame(const wm_mqtt5_config *cfg, const uint8_t *buf, size_t len,
                               wm_mqtt5_result *r)
{
    size_t h;
    return frame(cfg, buf, len, r, &h);
}

/* ------------------------------------------------------------------ helpers */

/* A decode step failed: `at` is the offending position. */
#define TRY(expr) do { if ((e = (expr)) != WM_MQTT5_E_OK) { at = c.p; goto out; } } while (0)
#define FAIL(err, pos) do { e = (err); at = (pos); goto out; } while (0)

static void props_empty(wm_mqtt5_props *pr, const uint8_t *p)
{
    pr->present = 0;
    pr->raw.p = p;
    pr->raw.len = 0;
    pr->user_property_count = 0;
    pr->subscription_identifier_count = 0;
    pr->user_properties = NULL;
    pr->subscription_identifiers = NULL;
}

/* Property Length (§2.2.2.1) then the properties, for context ctx. */
static wm_mqtt5_err rd_props(wm_mqtt5_cursor *c, unsigned ctx, wm_mqtt5_props *pr, const uint8_t **at)
{
    const uint8_t *start = c->p;
    uint32_t n;
    wm_mqtt5_err e = wm_mqtt5_rd_vbi(c, &n);
    if (e) { *at = c->p; return e; }
    if (n > wm_mqtt5_cur_left(c)) { *at = start; return WM_MQTT5_E_TRUNCATED; }
    size_t off;
    if ((e = wm_mqtt5_props_parse(c->p, n, ctx, pr, &off))) { *at = c->p + off; return e; }
    c->p += n;
    return WM_MQTT5_E_OK;
}

/* Position of property `id` in a decoded block, for error reports. */
static const uint8_t *prop_at(const wm_mqtt5_props *pr, unsigned id)
{
    return pr->raw.p + wm_mqtt5_props_offset(pr, id);
}

static wm_mqtt5_err topic_err(wm_topic_status st, const uint8_t *s, size_t len)
{
    switch (st) {
    case WM_TOPIC_OK: return WM_MQTT5_E_OK;
    case WM_TOPIC_EMPTY: return WM_MQTT5_E_TOPIC_EMPTY;
    case WM_TOPIC_TOO_LONG: return WM_MQTT5_E_TRUNCATED; /* cannot happen: lengths are 16-bit */
    case WM_TOPIC_BAD_UTF8: return wm_mqtt5_utf8_err(wm_utf8_validate(s, len, NULL));
    case WM_TOPIC_NUL: return WM_MQTT5_E_UTF8_NUL;
    case WM_TOPIC_WILDCARD_IN_NAME: return WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME;
    case WM_TOPIC_HASH_NOT_LAST: return WM_MQTT5_E_TOPIC_HASH_NOT_LAST;
    case WM_TOPIC_HASH_NOT_ALONE: return WM_MQTT5_E_TOPIC_HASH_NOT_ALONE;
    case WM_TOPIC_PLUS_NOT_ALONE: return WM_MQTT5_E_TOPIC_PLUS_NOT_ALONE;
    case WM_TOPIC_SHARE_EMPTY_NAME: return WM_MQTT5_E_SHARE_EMPTY_NAME;
    case WM_TOPIC_SHARE_BAD_NAME: return WM_MQTT5_E_SHARE_BAD_NAME;
    case WM_TOPIC_SHARE_NO_FILTER: return WM_MQTT5_E_SHARE_NO_FILTER;
    }
    return WM_MQTT5_E_TOPIC_EMPTY;
}

/* A Topic Name field (§3.3.2.1, §4.7): Binary-shaped, then the topic rules
 * (which include UTF-8). Empty names are the caller's call (Topic Alias). */
static wm_mqtt5_err rd_topic_name(wm_mqtt5_cursor *c, wm_mqtt5_bytes *t, bool allow_empty)
{
    wm_mqtt5_err e = wm_mqtt5_rd_bin(c, t);
    if (e) return e;
    if (t->len == 0 && allow_empty) return WM_MQTT5_E_OK;
    if (wm_topic_name_is_plain((const char *)t->p, t->len)) return WM_MQTT5_E_OK;
    size_t off = 0;
    wm_topic_status st = wm_topic_name_validate((const char *)t->p, t->len, &off);
    if (st == WM_TOPIC_OK) return WM_MQTT5_E_OK;
    c->p = t->p + off;
    return topic_err(st, t->p, t->len);
}

/* A Topic Filter field (§3.8.3, §3.10.3, §4.7, §4.8.2). */
static wm_mqtt5_err rd_topic_filter(wm_mqtt5_cursor *c, wm_mqtt5_bytes *f)
{
    wm_mqtt5_err e = wm_mqtt5_rd_bin(c, f);
    if (e) return e;
    size_t off = 0;
    wm_topic_status st = wm_topic_filter_validate((const char *)f->p, f->len, &off);
    if (st == WM_TOPIC_OK) return WM_MQTT5_E_OK;
    c->p = f->p + off;
    return topic_err(st, f->p, f->len);
}

/* Response Topic is a Topic Name (§3.3.2.3.5, §3.1.3.2): no wildcards. */
static wm_mqtt5_err check_response_topic(const wm_mqtt5_props *pr, const uint8_t **at)
{
    if (!wm_mqtt5_props_has(pr, WM_MQTT5_PROP_RESPONSE_TOPIC)) return WM_MQTT5_E_OK;
    const wm_mqtt5_bytes *t = &pr->v[WM_MQTT5_PROP_RESPONSE_TOPIC].s;
    if (wm_topic_name_validate((const char *)t->p, t->len, NULL) == WM_TOPIC_OK) return WM_MQTT5_E_OK;
    *at = prop_at(pr, WM_MQTT5_PROP_RESPONSE_TOPIC);
    return WM_MQTT5_E_RESPONSE_TOPIC_INVALID;
}

/* §3.3.2.3.2 / §3.1.3.2: Payload Format Indicator 1 means UTF-8 payload. */
static wm_mqtt5_err check_payload_format(const wm_mqtt5_props *pr, wm_mqtt5_bytes payload, const uint8_t **at)
{
    if (!wm_mqtt5_props_has(pr, WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR) ||
        pr->v[WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR].u != 1)
        return WM_MQTT5_E_OK;
    size_t off = 0;
    if (wm_utf8_validate(payload.p, payload.len, &off) == WM_UTF8_OK) return WM_MQTT5_E_OK;
    *at = payload.p + off;
    return WM_MQTT5_E_PAYLOAD_FORMAT_INVALID;
}

static wm_mqtt5_err rd_packet_id(wm_mqtt5_cursor *c, uint16_t *id)
{
    wm_mqtt5_err e = wm_mqtt5_rd_u16(c, id);
    if (e) return e;
    if (*id == 0) { c->p -= 2; return WM_MQTT5_E_PACKET_ID_ZERO; } /* §2.2.1, MQTT-2.2.1-3 */
    return WM_MQTT5_E_OK;
}

static wm_mqtt5_err rd_reason(wm_mqtt5_cursor *c, unsigned type, uint8_t *rc)
{
    wm_mqtt5_err e = wm_mqtt5_rd_u8(c, rc);
    if (e) return e;
    if (!wm_mqtt5_reason_allowed(*rc, type)) { c->p--; return WM_MQTT5_E_REASON_CODE; }
    return WM_MQTT5_E_OK;
}

/* ------------------------------------------------------------------ packets */

static wm_mqtt5_err dec_publish(const wm_mqtt5_config *cfg, wm_mqtt5_cursor c, wm_mqtt5_packet *pkt,
                                const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    unsigned flags = pkt->flags;
    pkt->qos = (flags >> 1) & 3;
    pkt->dup = (flags >> 3) & 1;
    pkt->retain = flags & 1;
    const uint8_t *topic_at = c.p;
    TRY(rd_topic_name(&c, &pkt->topic, true));
    if (pkt->qos) TRY(rd_packet_id(&c, &pkt->packet_id));
    else pkt->packet_id = 0;
    if ((e = rd_props(&c, WM_MQTT5_PUBLISH, &pkt->props, &at))) goto out;
    const wm_mqtt5_props *pr = &pkt->props;
    if (pr->present & ((1ull << WM_MQTT5_PROP_TOPIC_ALIAS) | (1ull << WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER) |
                       (1ull << WM_MQTT5_PROP_RESPONSE_TOPIC))) {
        /* MQTT-3.3.4-6: a Client's PUBLISH never carries Subscription Identifiers. */
        if (cfg->from == WM_MQTT5_FROM_CLIENT && wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER))
            FAIL(WM_MQTT5_E_SUBSCRIPTION_ID_FROM_CLIENT, prop_at(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));
        if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS)) {
            uint32_t a = pr->v[WM_MQTT5_PROP_TOPIC_ALIAS].u;
            /* §3.3.2.3.4: 0 is not permitted (MQTT-3.3.2-8); above the
             * receiver's Topic Alias Maximum is refused (MQTT-3.3.2-9/10). */
            if (a == 0) FAIL(WM_MQTT5_E_TOPIC_ALIAS_ZERO, prop_at(pr, WM_MQTT5_PROP_TOPIC_ALIAS));
            if (a > cfg->topic_alias_maximum) FAIL(WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE, prop_at(pr, WM_MQTT5_PROP_TOPIC_ALIAS));
        }
        if ((e = check_response_topic(pr, &at))) goto out;
    }
    /* §3.3.2.3.4: a zero-length Topic Name needs a Topic Alias. */
    if (pkt->topic.len == 0 && !wm_mqtt5_props_has(pr, WM_MQTT5_PROP_TOPIC_ALIAS))
        FAIL(WM_MQTT5_E_TOPIC_NAME_EMPTY_NO_ALIAS, topic_at);
    pkt->payload.p = c.p;
    pkt->payload.len = (uint32_t)wm_mqtt5_cur_left(&c);
    if (cfg->check_payload_format && (e = check_payload_format(pr, pkt->payload, &at))) goto out;
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

static wm_mqtt5_err dec_connect(const wm_mqtt5_config *cfg, wm_mqtt5_cursor c, wm_mqtt5_packet *pkt,
                                const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    wm_mqtt5_connect *k = &pkt->connect;
    const uint8_t *name_at = c.p;
    TRY(wm_mqtt5_rd_str(&c, &k->protocol_name));
    if (k->protocol_name.len != 4 || memcmp(k->protocol_name.p, "MQTT", 4) != 0)
        FAIL(WM_MQTT5_E_PROTOCOL_NAME, name_at);                         /* §3.1.2.1 */
    TRY(wm_mqtt5_rd_u8(&c, &k->protocol_version));
    if (k->protocol_version != 5) FAIL(WM_MQTT5_E_PROTOCOL_VERSION, c.p - 1); /* §3.1.2.2 */
    uint8_t f;
    TRY(wm_mqtt5_rd_u8(&c, &f));
    const uint8_t *flags_at = c.p - 1;
    if (f & 0x01) FAIL(WM_MQTT5_E_CONNECT_RESERVED_FLAG, flags_at);     /* MQTT-3.1.2-3 */
    k->clean_start = (f >> 1) & 1;
    k->will_flag = (f >> 2) & 1;
    k->will_qos = (f >> 3) & 3;
    k->will_retain = (f >> 5) & 1;
    k->password_flag = (f >> 6) & 1;
    k->username_flag = (f >> 7) & 1;
    if (!k->will_flag && (k->will_qos || k->will_retain))
        FAIL(WM_MQTT5_E_WILL_FLAGS, flags_at);                          /* MQTT-3.1.2-11, -13 */
    if (k->will_qos == 3) FAIL(WM_MQTT5_E_WILL_QOS3, flags_at);         /* MQTT-3.1.2-12 */
    TRY(wm_mqtt5_rd_u16(&c, &k->keep_alive));
    if ((e = rd_props(&c, WM_MQTT5_CONNECT, &pkt->props, &at))) goto out;
    if (wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_AUTHENTICATION_DATA) &&
        !wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_AUTHENTICATION_METHOD))
        FAIL(WM_MQTT5_E_AUTH_DATA_NO_METHOD, prop_at(&pkt->props, WM_MQTT5_PROP_AUTHENTICATION_DATA));
    TRY(wm_mqtt5_rd_str(&c, &k->client_id));                             /* §3.1.3.1 */
    if (k->will_flag) {
        if ((e = rd_props(&c, WM_MQTT5_PROPS_WILL, &k->will_props, &at))) goto out; /* §3.1.3.2 */
        if ((e = check_response_topic(&k->will_props, &at))) goto out;
        TRY(rd_topic_name(&c, &k->will_topic, false));                 /* §3.1.3.3 */
        TRY(wm_mqtt5_rd_bin(&c, &k->will_payload));                    /* §3.1.3.4 */
        if (cfg->check_payload_format && (e = check_payload_format(&k->will_props, k->will_payload, &at))) goto out;
    } else {
        props_empty(&k->will_props, c.p);
        k->will_topic = (wm_mqtt5_bytes){ c.p, 0 };
        k->will_payload = (wm_mqtt5_bytes){ c.p, 0 };
    }
    if (k->username_flag) TRY(wm_mqtt5_rd_str(&c, &k->username));      /* §3.1.3.5 */
    else k->username = (wm_mqtt5_bytes){ c.p, 0 };
    if (k->password_flag) TRY(wm_mqtt5_rd_bin(&c, &k->password));      /* §3.1.3.6 */
    else k->password = (wm_mqtt5_bytes){ c.p, 0 };
    if (c.p != c.end) FAIL(WM_MQTT5_E_TRAILING_BYTES, c.p);
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

static wm_mqtt5_err dec_connack(wm_mqtt5_cursor c, wm_mqtt5_packet *pkt, const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    uint8_t f;
    TRY(wm_mqtt5_rd_u8(&c, &f));
    if (f & 0xFE) FAIL(WM_MQTT5_E_CONNACK_RESERVED_FLAGS, c.p - 1);   /* §3.2.2.1 */
    pkt->session_present = f & 1;
    TRY(rd_reason(&c, WM_MQTT5_CONNACK, &pkt->reason_code));
    if (pkt->session_present && pkt->reason_code != 0)
        FAIL(WM_MQTT5_E_SESSION_PRESENT_ON_ERROR, c.p - 2);            /* MQTT-3.2.2-6 */
    if ((e = rd_props(&c, WM_MQTT5_CONNACK, &pkt->props, &at))) goto out;
    if (c.p != c.end) FAIL(WM_MQTT5_E_TRAILING_BYTES, c.p);
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

/* PUBACK, PUBREC, PUBREL, PUBCOMP (§3.4 - §3.7): the Reason Code and the
 * Property Length may be omitted (Remaining Length 2, or 3). */
static wm_mqtt5_err dec_pub_ack(wm_mqtt5_cursor c, wm_mqtt5_packet *pkt, const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    TRY(rd_packet_id(&c, &pkt->packet_id));
    pkt->reason_code = 0;
    if (c.p < c.end) TRY(rd_reason(&c, pkt->type, &pkt->reason_code));
    if (c.p < c.end) {
        if ((e = rd_props(&c, pkt->type, &pkt->props, &at))) goto out;
    } else {
        props_empty(&pkt->props, c.p);
    }
    if (c.p != c.end) FAIL(WM_MQTT5_E_TRAILING_BYTES, c.p);
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

/* SUBSCRIBE (§3.8) and UNSUBSCRIBE (§3.10). */
static wm_mqtt5_err dec_subscribe(wm_mqtt5_cursor c, wm_mqtt5_packet *pkt, const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    bool sub = pkt->type == WM_MQTT5_SUBSCRIBE;
    TRY(rd_packet_id(&c, &pkt->packet_id));
    if ((e = rd_props(&c, pkt->type, &pkt->props, &at))) goto out;
    pkt->payload.p = c.p;
    uint32_t n = 0;
    while (c.p < c.end) {
        wm_mqtt5_bytes f;
        TRY(rd_topic_filter(&c, &f));
        if (sub) {
            uint8_t o;
            TRY(wm_mqtt5_rd_u8(&c, &o));
            const uint8_t *o_at = c.p - 1;
            /* §3.8.3.1 */
            if (o & 0xC0) FAIL(WM_MQTT5_E_SUBOPT_RESERVED, o_at);      /* MQTT-3.8.3-5: malformed */
            if ((o & 3) == 3) FAIL(WM_MQTT5_E_SUBOPT_QOS3, o_at);
            if (((o >> 4) & 3) == 3) FAIL(WM_MQTT5_E_SUBOPT_RETAIN_HANDLING3, o_at);
            if ((o & 0x04) && wm_topic_share_split((const char *)f.p, f.len, NULL))
                FAIL(WM_MQTT5_E_SHARED_NO_LOCAL, o_at);                /* MQTT-3.8.3-4 */
        }
        n++;
    }
    /* MQTT-3.8.3-2, MQTT-3.10.3-2: at least one Topic Filter. */
    if (n == 0) FAIL(WM_MQTT5_E_NO_TOPIC_FILTERS, c.p);
    pkt->payload.len = (uint32_t)(c.p - pkt->payload.p);
    pkt->count = n;
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

/* SUBACK (§3.9) and UNSUBACK (§3.11): one reason code per filter. */
static wm_mqtt5_err dec_suback(wm_mqtt5_cursor c, wm_mqtt5_packet *pkt, const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    TRY(rd_packet_id(&c, &pkt->packet_id));
    if ((e = rd_props(&c, pkt->type, &pkt->props, &at))) goto out;
    pkt->payload.p = c.p;
    pkt->payload.len = (uint32_t)wm_mqtt5_cur_left(&c);
    pkt->count = pkt->payload.len;
    if (pkt->count == 0) FAIL(WM_MQTT5_E_NO_REASON_CODES, c.p);
    for (const uint8_t *q = c.p; q < c.end; q++)
        if (!wm_mqtt5_reason_allowed(*q, pkt->type)) FAIL(WM_MQTT5_E_REASON_CODE, q);
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

/* §3.14.2.1 "Sent by": 0x04 only from a Client; 0x87, 0x89, 0x8B, 0x8D, 0x8E,
 * 0x8F and 0x9A..0xA2 only from a Server; the rest from either. */
static bool disconnect_reason_from(uint8_t rc, wm_mqtt5_dir from)
{
    bool server_only = rc == 0x87 || rc == 0x89 || rc == 0x8B || rc == 0x8D || rc == 0x8E || rc == 0x8F ||
                       (rc >= 0x9A && rc <= 0xA2);
    return from == WM_MQTT5_FROM_CLIENT ? !server_only : rc != 0x04;
}

/* §3.15.2.1 "Sent by": Success (0x00) only from a Server, Re-authenticate
 * (0x19) only from a Client; Continue authentication (0x18) from either. */
static bool auth_reason_from(uint8_t rc, wm_mqtt5_dir from)
{
    return from == WM_MQTT5_FROM_CLIENT ? rc != 0x00 : rc != 0x19;
}

/* §3.15.2.2: a non-empty AUTH carries an Authentication Method (omitting it
 * is a Protocol Error, §3.15.2.2.2), so Authentication Data never comes
 * without one (§3.15.2.2.3). The data rule is checked first: it names the
 * property that is there, the other only the block it is missing from. */
static wm_mqtt5_err check_auth_method(const wm_mqtt5_props *pr, const uint8_t *props_at, const uint8_t **at)
{
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_AUTHENTICATION_METHOD)) return WM_MQTT5_E_OK;
    if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_AUTHENTICATION_DATA)) {
        *at = prop_at(pr, WM_MQTT5_PROP_AUTHENTICATION_DATA);
        return WM_MQTT5_E_AUTH_DATA_NO_METHOD;
    }
    *at = props_at;
    return WM_MQTT5_E_AUTH_NO_METHOD;
}

/* DISCONNECT (§3.14) and AUTH (§3.15): Remaining Length 0 means reason 0x00
 * and no properties. DISCONNECT may also stop after the Reason Code
 * (§3.14.2.2.1); AUTH may not (§3.15.2.2.1 allows only the empty form). Who
 * may send which reason code is checked for both: the empty form is Success,
 * so from a Client it is refused at the byte where the Reason Code would be. */
static wm_mqtt5_err dec_disconnect(const wm_mqtt5_config *cfg, wm_mqtt5_cursor c, wm_mqtt5_packet *pkt,
                                   const uint8_t **at_out)
{
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = NULL;
    bool auth = pkt->type == WM_MQTT5_AUTH;
    pkt->reason_code = 0;
    props_empty(&pkt->props, c.p);
    if (c.p == c.end) {
        if (auth && !auth_reason_from(0x00, cfg->from)) FAIL(WM_MQTT5_E_REASON_CODE, c.p);
        return WM_MQTT5_E_OK;
    }
    TRY(rd_reason(&c, pkt->type, &pkt->reason_code));
    if (!(auth ? auth_reason_from : disconnect_reason_from)(pkt->reason_code, cfg->from))
        FAIL(WM_MQTT5_E_REASON_CODE, c.p - 1);
    const uint8_t *props_at = c.p;
    if (c.p < c.end || auth)
        if ((e = rd_props(&c, pkt->type, &pkt->props, &at))) goto out;
    if (auth && (e = check_auth_method(&pkt->props, props_at, &at))) goto out;
    /* MQTT-3.14.2-2: a Server must not send Session Expiry Interval. */
    if (pkt->type == WM_MQTT5_DISCONNECT && cfg->from == WM_MQTT5_FROM_SERVER &&
        wm_mqtt5_props_has(&pkt->props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL))
        FAIL(WM_MQTT5_E_SESSION_EXPIRY_FROM_SERVER, prop_at(&pkt->props, WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL));
    if (c.p != c.end) FAIL(WM_MQTT5_E_TRAILING_BYTES, c.p);
    return WM_MQTT5_E_OK;
out:
    *at_out = at;
    return e;
}

wm_mqtt5_status wm_mqtt5_decode(const wm_mqtt5_config *cfg, const uint8_t *buf, size_t len,
                                wm_mqtt5_packet *pkt, wm_mqtt5_result *r)
{
    size_t hdr;
    if (frame(cfg, buf, len, r, &hdr) != WM_MQTT5_DONE) return r->status;
    size_t total = r->length;
    wm_mqtt5_cursor c = { buf + hdr, buf + total };
    pkt->type = buf[0] >> 4;
    pkt->flags = buf[0] & 0x0F;
    pkt->remaining_length = (uint32_t)(total - hdr);
    pkt->length = (uint32_t)total;
    const uint8_t *at = buf;
    wm_mqtt5_err e;
    switch (pkt->type) {
    case WM_MQTT5_PUBLISH: e = dec_publish(cfg, c, pkt, &at); break;
    case WM_MQTT5_CONNECT: e = dec_connect(cfg, c, pkt, &at); break;
    case WM_MQTT5_CONNACK: e = dec_connack(c, pkt, &at); break;
    case WM_MQTT5_PUBACK:
    case WM_MQTT5_PUBREC:
    case WM_MQTT5_PUBREL:
    case WM_MQTT5_PUBCOMP: e = dec_pub_ack(c, pkt, &at); break;
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE: e = dec_subscribe(c, pkt, &at); break;
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK: e = dec_suback(c, pkt, &at); break;
    case WM_MQTT5_PINGREQ:
    case WM_MQTT5_PINGRESP:
        e = c.p == c.end ? WM_MQTT5_E_OK : WM_MQTT5_E_TRAILING_BYTES; /* §3.12, §3.13: Remaining Length 0 */
        at = c.p;
        props_empty(&pkt->props, c.p);  /* so generic code may walk any packet's properties */
        break;
    default: e = dec_disconnect(cfg, c, pkt, &at); break;          /* DISCONNECT, AUTH */
    }
    pkt->subscriptions = NULL;
    if (e != WM_MQTT5_E_OK) return fail(r, e, (size_t)(at - buf));
    return WM_MQTT5_DONE;
}
