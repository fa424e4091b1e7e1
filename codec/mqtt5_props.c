/* MQTT v5 properties (MQTT 5.0 §2.2.2): table-driven parse and write. The
 * parse loop is on the PUBLISH hot path, so identifier type, name and the
 * per-packet allowed set are plain table lookups. */
#include "codec/mqtt5_props.h"

#include "codec/mqtt5_reason.h"
#include "codec/mqtt5_wire.h"

#define B(id) (1ull << (id))

static const uint8_t prop_type[WM_MQTT5_PROP_ID_LIMIT] = {
    [WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL] = WM_MQTT5_PT_U32,
    [WM_MQTT5_PROP_CONTENT_TYPE] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_RESPONSE_TOPIC] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_CORRELATION_DATA] = WM_MQTT5_PT_BINARY,
    [WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER] = WM_MQTT5_PT_VBI,
    [WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL] = WM_MQTT5_PT_U32,
    [WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_SERVER_KEEP_ALIVE] = WM_MQTT5_PT_U16,
    [WM_MQTT5_PROP_AUTHENTICATION_METHOD] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_AUTHENTICATION_DATA] = WM_MQTT5_PT_BINARY,
    [WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_WILL_DELAY_INTERVAL] = WM_MQTT5_PT_U32,
    [WM_MQTT5_PROP_REQUEST_RESPONSE_INFORMATION] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_RESPONSE_INFORMATION] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_SERVER_REFERENCE] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_REASON_STRING] = WM_MQTT5_PT_UTF8,
    [WM_MQTT5_PROP_RECEIVE_MAXIMUM] = WM_MQTT5_PT_U16,
    [WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM] = WM_MQTT5_PT_U16,
    [WM_MQTT5_PROP_TOPIC_ALIAS] = WM_MQTT5_PT_U16,
    [WM_MQTT5_PROP_MAXIMUM_QOS] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_RETAIN_AVAILABLE] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_USER_PROPERTY] = WM_MQTT5_PT_PAIR,
    [WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE] = WM_MQTT5_PT_U32,
    [WM_MQTT5_PROP_WILDCARD_SUBSCRIPTION_AVAILABLE] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE] = WM_MQTT5_PT_BYTE,
    [WM_MQTT5_PROP_SHARED_SUBSCRIPTION_AVAILABLE] = WM_MQTT5_PT_BYTE,
};

static const char *const prop_names[WM_MQTT5_PROP_ID_LIMIT] = {
    [WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR] = "payload_format_indicator",
    [WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL] = "message_expiry_interval",
    [WM_MQTT5_PROP_CONTENT_TYPE] = "content_type",
    [WM_MQTT5_PROP_RESPONSE_TOPIC] = "response_topic",
    [WM_MQTT5_PROP_CORRELATION_DATA] = "correlation_data",
    [WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER] = "subscription_identifier",
    [WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL] = "session_expiry_interval",
    [WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER] = "assigned_client_identifier",
    [WM_MQTT5_PROP_SERVER_KEEP_ALIVE] = "server_keep_alive",
    [WM_MQTT5_PROP_AUTHENTICATION_METHOD] = "authentication_method",
    [WM_MQTT5_PROP_AUTHENTICATION_DATA] = "authentication_data",
    [WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION] = "request_problem_information",
    [WM_MQTT5_PROP_WILL_DELAY_INTERVAL] = "will_delay_interval",
    [WM_MQTT5_PROP_REQUEST_RESPONSE_INFORMATION] = "request_response_information",
    [WM_MQTT5_PROP_RESPONSE_INFORMATION] = "response_information",
    [WM_MQTT5_PROP_SERVER_REFERENCE] = "server_reference",
    [WM_MQTT5_PROP_REASON_STRING] = "reason_string",
    [WM_MQTT5_PROP_RECEIVE_MAXIMUM] = "receive_maximum",
    [WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM] = "topic_alias_maximum",
    [WM_MQTT5_PROP_TOPIC_ALIAS] = "topic_alias",
    [WM_MQTT5_PROP_MAXIMUM_QOS] = "maximum_qos",
    [WM_MQTT5_PROP_RETAIN_AVAILABLE] = "retain_available",
    [WM_MQTT5_PROP_USER_PROPERTY] = "user_property",
    [WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE] = "maximum_packet_size",
    [WM_MQTT5_PROP_WILDCARD_SUBSCRIPTION_AVAILABLE] = "wildcard_subscription_available",
    [WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE] = "subscription_identifier_available",
    [WM_MQTT5_PROP_SHARED_SUBSCRIPTION_AVAILABLE] = "shared_subscription_available",
};

/* Per-packet property lists (§3.x "Properties" subsections). */
static const uint64_t allowed[17] = {
    [WM_MQTT5_CONNECT] = B(0x11) | B(0x21) | B(0x27) | B(0x22) | B(0x19) | B(0x17) | B(0x26) | B(0x15) | B(0x16),
    [WM_MQTT5_CONNACK] = B(0x11) | B(0x21) | B(0x24) | B(0x25) | B(0x27) | B(0x12) | B(0x22) | B(0x1F) | B(0x26) |
                         B(0x28) | B(0x29) | B(0x2A) | B(0x13) | B(0x1A) | B(0x1C) | B(0x15) | B(0x16),
    [WM_MQTT5_PUBLISH] = B(0x01) | B(0x02) | B(0x23) | B(0x08) | B(0x09) | B(0x26) | B(0x0B) | B(0x03),
    [WM_MQTT5_PUBACK] = B(0x1F) | B(0x26),
    [WM_MQTT5_PUBREC] = B(0x1F) | B(0x26),
    [WM_MQTT5_PUBREL] = B(0x1F) | B(0x26),
    [WM_MQTT5_PUBCOMP] = B(0x1F) | B(0x26),
    [WM_MQTT5_SUBSCRIBE] = B(0x0B) | B(0x26),
    [WM_MQTT5_SUBACK] = B(0x1F) | B(0x26),
    [WM_MQTT5_UNSUBSCRIBE] = B(0x26),
    [WM_MQTT5_UNSUBACK] = B(0x1F) | B(0x26),
    [WM_MQTT5_DISCONNECT] = B(0x11) | B(0x1F) | B(0x26) | B(0x1C),
    [WM_MQTT5_AUTH] = B(0x15) | B(0x16) | B(0x1F) | B(0x26),
    [WM_MQTT5_PROPS_WILL] = B(0x18) | B(0x01) | B(0x02) | B(0x03) | B(0x08) | B(0x09) | B(0x26),
};

/* Byte properties whose only values are 0 and 1 (§3.1.2.11.6/7, §3.2.2.3.4,
 * §3.2.2.3.5, §3.2.2.3.11-13, §3.3.2.3.2). */
static const uint64_t boolean_props = B(0x01) | B(0x17) | B(0x19) | B(0x24) | B(0x25) | B(0x28) | B(0x29) | B(0x2A);

wm_mqtt5_prop_type wm_mqtt5_prop_type_of(uint32_t id)
{
    return id < WM_MQTT5_PROP_ID_LIMIT ? (wm_mqtt5_prop_type)prop_type[id] : WM_MQTT5_PT_NONE;
}

const char *wm_mqtt5_prop_name(uint32_t id)
{
    return id < WM_MQTT5_PROP_ID_LIMIT ? prop_names[id] : NULL;
}

uint64_t wm_mqtt5_props_allowed(unsigned ctx)
{
    return ctx <= WM_MQTT5_PROPS_WILL ? allowed[ctx] : 0;
}

wm_mqtt5_err wm_mqtt5_props_parse(const uint8_t *p, size_t len, unsigned ctx,
                                  wm_mqtt5_props *out, size_t *err_off)
{
    wm_mqtt5_cursor c = { p, p + len };
    const uint64_t ok = wm_mqtt5_props_allowed(ctx);
    const uint64_t repeatable = B(WM_MQTT5_PROP_USER_PROPERTY) |
        (ctx == WM_MQTT5_PUBLISH ? B(WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER) : 0);
    uint64_t present = 0;
    uint32_t n_user = 0, n_subid = 0;
    wm_mqtt5_err e = WM_MQTT5_E_OK;
    const uint8_t *at = p;

    out->raw.p = p;
    out->raw.len = (uint32_t)len;
    out->user_properties = NULL;
    out->subscription_identifiers = NULL;
    while (c.p < c.end) {
        at = c.p;
        uint32_t id = *c.p;
        /* Identifiers are VBIs (§2.2.2.2) but all defined ones are < 0x80, so
         * any byte >= 0x80 starts an identifier we do not know. Allowed sets
         * hold only known identifiers, so one test covers the common case;
         * the slow path tells unknown from not allowed. */
        if (id >= 64 || !((ok >> id) & 1)) {
            e = (id >= WM_MQTT5_PROP_ID_LIMIT || prop_type[id] == WM_MQTT5_PT_NONE) ? WM_MQTT5_E_PROPERTY_UNKNOWN
                                                                                : WM_MQTT5_E_PROPERTY_NOT_ALLOWED;
            goto fail;
        }
        if (present & B(id) & ~repeatable) { e = WM_MQTT5_E_PROPERTY_DUPLICATE; goto fail; }
        c.p++;
        wm_mqtt5_prop_val *v = &out->v[id];
        unsigned type = prop_type[id];
        /* User Properties dominate real traffic (spatial publish carries its
         * peid in one): a direct branch, not the jump table. */
        if (type == WM_MQTT5_PT_PAIR) {
            wm_mqtt5_bytes k, val;
            if ((e = wm_mqtt5_rd_str(&c, &k)) || (e = wm_mqtt5_rd_str(&c, &val))) {
                if (e != WM_MQTT5_E_TRUNCATED) at = c.p;
                goto fail_at;
            }
            if (!n_user++) { v->s = k; v->u = 0; }
            present |= B(id);
            continue;
        }
        switch (type) {
        case WM_MQTT5_PT_BYTE: {
            uint8_t b;
            if ((e = wm_mqtt5_rd_u8(&c, &b))) goto fail;
            if (b > 1 && (boolean_props & B(id))) { e = WM_MQTT5_E_PROPERTY_VALUE; goto fail; }
            v->u = b;
            break;
        }
        case WM_MQTT5_PT_U16: {
            uint16_t x;
            if ((e = wm_mqtt5_rd_u16(&c, &x))) goto fail;
            /* Receive Maximum 0 is a Protocol Error (§3.1.2.11.3, §3.2.2.3.3). */
            if (x == 0 && id == WM_MQTT5_PROP_RECEIVE_MAXIMUM) { e = WM_MQTT5_E_PROPERTY_VALUE; goto fail; }
            v->u = x;
            break;
        }
        case WM_MQTT5_PT_U32: {
            uint32_t x;
            if ((e = wm_mqtt5_rd_u32(&c, &x))) goto fail;
            /* Maximum Packet Size 0 is a Protocol Error (§3.1.2.11.4, §3.2.2.3.6). */
            if (x == 0 && id == WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE) { e = WM_MQTT5_E_PROPERTY_VALUE; goto fail; }
            v->u = x;
            break;
        }
        case WM_MQTT5_PT_VBI: { /* only Subscription Identifier */
            uint32_t x;
            const uint8_t *vat = c.p;
            if ((e = wm_mqtt5_rd_vbi(&c, &x))) { at = c.p; goto fail_at; }
            /* §3.3.2.3.8, §3.8.2.1.2: value 0 is a Protocol Error. */
            if (x == 0) { at = vat; e = WM_MQTT5_E_SUBSCRIPTION_ID_ZERO; goto fail_at; }
            if (!n_subid++) v->u = x;
            break;
        }
        case WM_MQTT5_PT_UTF8:
            if ((e = wm_mqtt5_rd_str(&c, &v->s))) { if (e != WM_MQTT5_E_TRUNCATED) at = c.p; goto fail_at; }
            break;
        case WM_MQTT5_PT_BINARY:
            if ((e = wm_mqtt5_rd_bin(&c, &v->s))) goto fail;
            break;
        }
        present |= B(id);
    }
    out->present = present;
    out->user_property_count = n_user;
    out->subscription_identifier_count = n_subid;
    return WM_MQTT5_E_OK;
fail:
fail_at:
    if (err_off) *err_off = (size_t)(at - p);
    return e;
}

/* Walks a validated block to the next property with identifier `want`. */
static const uint8_t *next_of(const wm_mqtt5_props *pr, size_t *pos, unsigned want)
{
    const uint8_t *p = pr->raw.p, *end = p + pr->raw.len;
    const uint8_t *q = p + *pos;
    while (q < end) {
        unsigned id = *q++;
        const uint8_t *val = q;
        if (id >= WM_MQTT5_PROP_ID_LIMIT) return NULL;
        switch (prop_type[id]) {
        case WM_MQTT5_PT_BYTE: q += 1; break;
        case WM_MQTT5_PT_U16: q += 2; break;
        case WM_MQTT5_PT_U32: q += 4; break;
        case WM_MQTT5_PT_VBI: while (*q++ & 0x80) {} break;
        case WM_MQTT5_PT_UTF8:
        case WM_MQTT5_PT_BINARY: q += 2 + (q[0] << 8 | q[1]); break;
        case WM_MQTT5_PT_PAIR: q += 2 + (q[0] << 8 | q[1]); q += 2 + (q[0] << 8 | q[1]); break;
        default: return NULL; /* not a validated block */
        }
        if (id == want) { *pos = (size_t)(q - p); return val; }
    }
    *pos = pr->raw.len;
    return NULL;
}

size_t wm_mqtt5_props_offset(const wm_mqtt5_props *pr, unsigned id)
{
    size_t pos = 0;
    const uint8_t *v = next_of(pr, &pos, id);
    return v ? (size_t)(v - 1 - pr->raw.p) : pr->raw.len;
}

bool wm_mqtt5_user_prop_next(const wm_mqtt5_props *pr, size_t *pos, wm_mqtt5_pair *out)
{
    const uint8_t *v = next_of(pr, pos, WM_MQTT5_PROP_USER_PROPERTY);
    if (!v) return false;
    out->key.len = (uint32_t)(v[0] << 8 | v[1]);
    out->key.p = v + 2;
    v += 2 + out->key.len;
    out->value.len = (uint32_t)(v[0] << 8 | v[1]);
    out->value.p = v + 2;
    return true;
}

bool wm_mqtt5_subid_next(const wm_mqtt5_props *pr, size_t *pos, uint32_t *out)
{
    const uint8_t *v = next_of(pr, pos, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER);
    if (!v) return false;
    size_t n;
    return wm_mqtt5_vbi_decode(v, 4, out, &n) == WM_MQTT5_VBI_OK;
}

/* Calls fn for every User Property and Subscription Identifier the encoder
 * must write, from the encoder-input arrays or the raw block. */
static size_t repeated_size(const wm_mqtt5_props *pr)
{
    size_t n = 0;
    if (!wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER) && !pr->subscription_identifiers) {
    } else if (pr->subscription_identifiers) {
        for (unsigned i = 0; i < pr->subscription_identifier_count; i++)
            n += 1 + wm_mqtt5_vbi_size(pr->subscription_identifiers[i]);
    } else {
        size_t pos = 0; uint32_t id;
        while (wm_mqtt5_subid_next(pr, &pos, &id)) n += 1 + wm_mqtt5_vbi_size(id);
    }
    if (pr->user_properties) {
        for (unsigned i = 0; i < pr->user_property_count; i++)
            n += 5 + pr->user_properties[i].key.len + pr->user_properties[i].value.len;
    } else if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_USER_PROPERTY)) {
        size_t pos = 0; wm_mqtt5_pair kv;
        while (wm_mqtt5_user_prop_next(pr, &pos, &kv)) n += 5 + kv.key.len + kv.value.len;
    }
    return n;
}

static const uint64_t single_mask = ~(B(WM_MQTT5_PROP_USER_PROPERTY) | B(WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER));

size_t wm_mqtt5_props_size(const wm_mqtt5_props *pr)
{
    size_t n = 0;
    uint64_t m = pr->present & single_mask;
    while (m) {
        unsigned id = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        if (id >= WM_MQTT5_PROP_ID_LIMIT) continue;
        switch (prop_type[id]) {
        case WM_MQTT5_PT_BYTE: n += 2; break;
        case WM_MQTT5_PT_U16: n += 3; break;
        case WM_MQTT5_PT_U32: n += 5; break;
        case WM_MQTT5_PT_UTF8:
        case WM_MQTT5_PT_BINARY: n += 3 + pr->v[id].s.len; break;
        default: break;
        }
    }
    return n + repeated_size(pr);
}

size_t wm_mqtt5_props_write(const wm_mqtt5_props *pr, uint8_t *out)
{
    uint8_t *o = out;
    uint64_t m = pr->present & single_mask;
    while (m) {
        unsigned id = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        if (id >= WM_MQTT5_PROP_ID_LIMIT || prop_type[id] == WM_MQTT5_PT_NONE) continue;
        const wm_mqtt5_prop_val *v = &pr->v[id];
        *o++ = (uint8_t)id;
        switch (prop_type[id]) {
        case WM_MQTT5_PT_BYTE: *o++ = (uint8_t)v->u; break;
        case WM_MQTT5_PT_U16: o = wm_mqtt5_wr_u16(o, v->u); break;
        case WM_MQTT5_PT_U32: o = wm_mqtt5_wr_u32(o, v->u); break;
        case WM_MQTT5_PT_UTF8:
        case WM_MQTT5_PT_BINARY: o = wm_mqtt5_wr_bytes(o, v->s); break;
        default: break;
        }
    }
    if (pr->subscription_identifiers) {
        for (unsigned i = 0; i < pr->subscription_identifier_count; i++) {
            *o++ = WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER;
            o = wm_mqtt5_wr_vbi(o, pr->subscription_identifiers[i]);
        }
    } else if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER)) {
        size_t pos = 0; uint32_t id;
        while (wm_mqtt5_subid_next(pr, &pos, &id)) {
            *o++ = WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER;
            o = wm_mqtt5_wr_vbi(o, id);
        }
    }
    if (pr->user_properties) {
        for (unsigned i = 0; i < pr->user_property_count; i++) {
            *o++ = WM_MQTT5_PROP_USER_PROPERTY;
            o = wm_mqtt5_wr_bytes(o, pr->user_properties[i].key);
            o = wm_mqtt5_wr_bytes(o, pr->user_properties[i].value);
        }
    } else if (wm_mqtt5_props_has(pr, WM_MQTT5_PROP_USER_PROPERTY)) {
        size_t pos = 0; wm_mqtt5_pair kv;
        while (wm_mqtt5_user_prop_next(pr, &pos, &kv)) {
            *o++ = WM_MQTT5_PROP_USER_PROPERTY;
            o = wm_mqtt5_wr_bytes(o, kv.key);
            o = wm_mqtt5_wr_bytes(o, kv.value);
        }
    }
    return (size_t)(o - out);
}
