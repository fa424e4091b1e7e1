/* See tests/lib/mqtt5_equal.h. */
#include "tests/lib/mqtt5_equal.h"

#include <stdio.h>
#include <string.h>

static bool beq(wm_mqtt5_bytes a, wm_mqtt5_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* i-th User Property / Subscription Identifier from either representation. */
typedef struct rep_iter { const wm_mqtt5_props *pr; size_t pos; unsigned i; } rep_iter;

static bool next_user(rep_iter *it, wm_mqtt5_pair *kv)
{
    if (it->pr->user_properties) {
        if (it->i >= it->pr->user_property_count) return false;
        *kv = it->pr->user_properties[it->i++];
        return true;
    }
    return wm_mqtt5_user_prop_next(it->pr, &it->pos, kv);
}

static bool next_subid(rep_iter *it, uint32_t *v)
{
    if (it->pr->subscription_identifiers) {
        if (it->i >= it->pr->subscription_identifier_count) return false;
        *v = it->pr->subscription_identifiers[it->i++];
        return true;
    }
    return wm_mqtt5_subid_next(it->pr, &it->pos, v);
}

static bool props_eq(const wm_mqtt5_props *a, const wm_mqtt5_props *b, const char **what)
{
    *what = "property set";
    if (a->present != b->present) return false;
    for (unsigned id = 1; id < WM_MQTT5_PROP_ID_LIMIT; id++) {
        if (!wm_mqtt5_props_has(a, id)) continue;
        *what = wm_mqtt5_prop_name(id);
        switch (wm_mqtt5_prop_type_of(id)) {
        case WM_MQTT5_PT_BYTE:
        case WM_MQTT5_PT_U16:
        case WM_MQTT5_PT_U32:
            if (a->v[id].u != b->v[id].u) return false;
            break;
        case WM_MQTT5_PT_UTF8:
        case WM_MQTT5_PT_BINARY:
            if (!beq(a->v[id].s, b->v[id].s)) return false;
            break;
        case WM_MQTT5_PT_VBI: {
            rep_iter x = { a, 0, 0 }, y = { b, 0, 0 };
            uint32_t u, v;
            for (;;) {
                bool hx = next_subid(&x, &u), hy = next_subid(&y, &v);
                if (hx != hy || (hx && u != v)) return false;
                if (!hx) break;
            }
            break;
        }
        case WM_MQTT5_PT_PAIR: {
            rep_iter x = { a, 0, 0 }, y = { b, 0, 0 };
            wm_mqtt5_pair u, v;
            for (;;) {
                bool hx = next_user(&x, &u), hy = next_user(&y, &v);
                if (hx != hy || (hx && (!beq(u.key, v.key) || !beq(u.value, v.value)))) return false;
                if (!hx) break;
            }
            break;
        }
        case WM_MQTT5_PT_NONE: break;
        }
    }
    return true;
}

typedef struct sub_iter { const wm_mqtt5_packet *p; size_t pos; uint32_t i; } sub_iter;

static bool next_sub(sub_iter *it, wm_mqtt5_subscription *s)
{
    if (it->p->subscriptions) {
        if (it->i >= it->p->count) return false;
        *s = it->p->subscriptions[it->i++];
        if (it->p->type == WM_MQTT5_UNSUBSCRIBE) { s->qos = 0; s->no_local = s->retain_as_published = false; s->retain_handling = 0; }
        return true;
    }
    return wm_mqtt5_subscription_next(it->p, &it->pos, s);
}

#define NE(field) do { what = field; goto differ; } while (0)

bool wm_mqtt5_packet_equal(const wm_mqtt5_packet *a, const wm_mqtt5_packet *b, char *why, size_t why_len)
{
    const char *what = "";
    if (a->type != b->type) NE("type");
    switch (a->type) {
    case WM_MQTT5_CONNECT: {
        const wm_mqtt5_connect *x = &a->connect, *y = &b->connect;
        if (x->protocol_version != y->protocol_version) NE("protocol_version");
        if (!beq(x->protocol_name, y->protocol_name)) NE("protocol_name");
        if (x->clean_start != y->clean_start || x->will_flag != y->will_flag || x->will_qos != y->will_qos ||
            x->will_retain != y->will_retain || x->username_flag != y->username_flag ||
            x->password_flag != y->password_flag) NE("connect flags");
        if (x->keep_alive != y->keep_alive) NE("keep_alive");
        if (!beq(x->client_id, y->client_id)) NE("client_id");
        if (!props_eq(&a->props, &b->props, &what)) goto differ;
        if (x->will_flag) {
            if (!props_eq(&x->will_props, &y->will_props, &what)) goto differ;
            if (!beq(x->will_topic, y->will_topic)) NE("will_topic");
            if (!beq(x->will_payload, y->will_payload)) NE("will_payload");
        }
        if (x->username_flag && !beq(x->username, y->username)) NE("username");
        if (x->password_flag && !beq(x->password, y->password)) NE("password");
        return true;
    }
    case WM_MQTT5_CONNACK:
        if (a->session_present != b->session_present) NE("session_present");
        if (a->reason_code != b->reason_code) NE("reason_code");
        break;
    case WM_MQTT5_PUBLISH:
        if (a->qos != b->qos || a->dup != b->dup || a->retain != b->retain) NE("publish flags");
        if (!beq(a->topic, b->topic)) NE("topic");
        if (a->qos && a->packet_id != b->packet_id) NE("packet_id");
        if (!beq(a->payload, b->payload)) NE("payload");
        break;
    case WM_MQTT5_PUBACK:
    case WM_MQTT5_PUBREC:
    case WM_MQTT5_PUBREL:
    case WM_MQTT5_PUBCOMP:
        if (a->packet_id != b->packet_id) NE("packet_id");
        if (a->reason_code != b->reason_code) NE("reason_code");
        break;
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE: {
        if (a->packet_id != b->packet_id) NE("packet_id");
        if (a->count != b->count) NE("count");
        sub_iter x = { a, 0, 0 }, y = { b, 0, 0 };
        wm_mqtt5_subscription u, v;
        for (;;) {
            bool hx = next_sub(&x, &u), hy = next_sub(&y, &v);
            if (hx != hy) NE("subscription count");
            if (!hx) break;
            if (!beq(u.filter, v.filter) || u.qos != v.qos || u.no_local != v.no_local ||
                u.retain_as_published != v.retain_as_published || u.retain_handling != v.retain_handling)
                NE("subscription");
        }
        break;
    }
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK:
        if (a->packet_id != b->packet_id) NE("packet_id");
        if (a->count != b->count || !beq(a->payload, b->payload)) NE("reason codes");
        break;
    case WM_MQTT5_PINGREQ:
    case WM_MQTT5_PINGRESP:
        return true;
    case WM_MQTT5_DISCONNECT:
    case WM_MQTT5_AUTH:
        if (a->reason_code != b->reason_code) NE("reason_code");
        break;
    }
    if (!props_eq(&a->props, &b->props, &what)) goto differ;
    return true;
differ:
    if (why && why_len) snprintf(why, why_len, "%s", what);
    return false;
}
