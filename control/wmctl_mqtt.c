/* `wmctl mqtt decode [--from client|server] [--max-packet-size N]
 *                    [--topic-alias-maximum N] [--check-payload-format] FILE|-`
 *
 * Decodes concatenated MQTT v5 packets with the codec's strict streaming
 * decoder and prints one JSON object per packet (schema in README.md,
 * "wmctl mqtt decode"). On the first bad packet it prints
 * {"error": NAME, "reason_code": N, "offset": BYTE} (offset from the start of
 * the input) and exits 1. It exists so humans and the capture cross-check
 * test see exactly what the data plane's decoder sees. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "control/wmctl.h"

static json_t *jstr(wm_mqtt5_bytes b)
{
    /* Decoded strings are validated UTF-8 without U+0000 (§1.5.4), which is
     * what json_stringn requires; it escapes control characters itself. */
    json_t *s = json_stringn((const char *)b.p, b.len);
    return s ? s : json_string("");
}

static json_t *jhex(wm_mqtt5_bytes b)
{
    static const char hex[] = "0123456789abcdef";
    char *s = malloc(2 * (size_t)b.len + 1);
    if (!s) return json_null();
    for (uint32_t i = 0; i < b.len; i++) {
        s[2 * i] = hex[b.p[i] >> 4];
        s[2 * i + 1] = hex[b.p[i] & 15];
    }
    json_t *j = json_stringn(s, 2 * (size_t)b.len);
    free(s);
    return j;
}

static json_t *props_json(const wm_mqtt5_props *pr)
{
    json_t *o = json_object();
    for (unsigned id = 1; id < WM_MQTT5_PROP_ID_LIMIT; id++) {
        if (!wm_mqtt5_props_has(pr, id)) continue;
        const char *name = wm_mqtt5_prop_name(id);
        const wm_mqtt5_prop_val *v = &pr->v[id];
        switch (wm_mqtt5_prop_type_of(id)) {
        case WM_MQTT5_PT_BYTE:
        case WM_MQTT5_PT_U16:
        case WM_MQTT5_PT_U32:
            json_object_set_new(o, name, json_integer(v->u));
            break;
        case WM_MQTT5_PT_VBI: { /* Subscription Identifier: may repeat in PUBLISH */
            json_t *a = json_array();
            size_t pos = 0; uint32_t x;
            while (wm_mqtt5_subid_next(pr, &pos, &x)) json_array_append_new(a, json_integer(x));
            json_object_set_new(o, name, a);
            break;
        }
        case WM_MQTT5_PT_UTF8: json_object_set_new(o, name, jstr(v->s)); break;
        case WM_MQTT5_PT_BINARY: json_object_set_new(o, name, jhex(v->s)); break;
        case WM_MQTT5_PT_PAIR: {
            json_t *a = json_array();
            size_t pos = 0; wm_mqtt5_pair kv;
            while (wm_mqtt5_user_prop_next(pr, &pos, &kv))
                json_array_append_new(a, json_pack("[oo]", jstr(kv.key), jstr(kv.value)));
            json_object_set_new(o, name, a);
            break;
        }
        case WM_MQTT5_PT_NONE: break;
        }
    }
    return o;
}

static void set_reason(json_t *o, const wm_mqtt5_packet *p)
{
    json_object_set_new(o, "reason_code", json_integer(p->reason_code));
    json_object_set_new(o, "reason", json_string(wm_mqtt5_reason_name(p->reason_code, p->type)));
}

static json_t *packet_json(const wm_mqtt5_packet *p, size_t offset)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(wm_mqtt5_type_name(p->type)));
    json_object_set_new(o, "offset", json_integer((json_int_t)offset));
    json_object_set_new(o, "length", json_integer(p->length));
    json_object_set_new(o, "flags", json_integer(p->flags));
    switch (p->type) {
    case WM_MQTT5_CONNECT: {
        const wm_mqtt5_connect *k = &p->connect;
        json_object_set_new(o, "protocol_name", jstr(k->protocol_name));
        json_object_set_new(o, "protocol_version", json_integer(k->protocol_version));
        json_object_set_new(o, "clean_start", json_boolean(k->clean_start));
        json_object_set_new(o, "keep_alive", json_integer(k->keep_alive));
        json_object_set_new(o, "client_id", jstr(k->client_id));
        json_object_set_new(o, "properties", props_json(&p->props));
        if (k->will_flag) {
            json_t *w = json_object();
            json_object_set_new(w, "qos", json_integer(k->will_qos));
            json_object_set_new(w, "retain", json_boolean(k->will_retain));
            json_object_set_new(w, "topic", jstr(k->will_topic));
            json_object_set_new(w, "properties", props_json(&k->will_props));
            json_object_set_new(w, "payload_length", json_integer(k->will_payload.len));
            json_object_set_new(o, "will", w);
        }
        if (k->username_flag) json_object_set_new(o, "username", jstr(k->username));
        if (k->password_flag) json_object_set_new(o, "password_length", json_integer(k->password.len));
        break;
    }
    case WM_MQTT5_CONNACK:
        json_object_set_new(o, "session_present", json_boolean(p->session_present));
        set_reason(o, p);
        json_object_set_new(o, "properties", props_json(&p->props));
        break;
    case WM_MQTT5_PUBLISH:
        json_object_set_new(o, "qos", json_integer(p->qos));
        json_object_set_new(o, "retain", json_boolean(p->retain));
        json_object_set_new(o, "dup", json_boolean(p->dup));
        json_object_set_new(o, "topic", jstr(p->topic));
        if (p->qos) json_object_set_new(o, "packet_id", json_integer(p->packet_id));
        json_object_set_new(o, "properties", props_json(&p->props));
        json_object_set_new(o, "payload_length", json_integer(p->payload.len));
        break;
    case WM_MQTT5_PUBACK:
    case WM_MQTT5_PUBREC:
    case WM_MQTT5_PUBREL:
    case WM_MQTT5_PUBCOMP:
        json_object_set_new(o, "packet_id", json_integer(p->packet_id));
        set_reason(o, p);
        json_object_set_new(o, "properties", props_json(&p->props));
        break;
    case WM_MQTT5_SUBSCRIBE:
    case WM_MQTT5_UNSUBSCRIBE: {
        json_object_set_new(o, "packet_id", json_integer(p->packet_id));
        json_object_set_new(o, "properties", props_json(&p->props));
        json_t *a = json_array();
        size_t pos = 0; wm_mqtt5_subscription s;
        while (wm_mqtt5_subscription_next(p, &pos, &s)) {
            if (p->type == WM_MQTT5_UNSUBSCRIBE) { json_array_append_new(a, jstr(s.filter)); continue; }
            json_array_append_new(a, json_pack("{s:o,s:i,s:b,s:b,s:i}", "filter", jstr(s.filter), "qos", s.qos,
                                               "no_local", s.no_local, "retain_as_published", s.retain_as_published,
                                               "retain_handling", s.retain_handling));
        }
        json_object_set_new(o, "filters", a);
        break;
    }
    case WM_MQTT5_SUBACK:
    case WM_MQTT5_UNSUBACK: {
        json_object_set_new(o, "packet_id", json_integer(p->packet_id));
        json_object_set_new(o, "properties", props_json(&p->props));
        json_t *a = json_array();
        for (uint32_t i = 0; i < p->count; i++) json_array_append_new(a, json_integer(p->payload.p[i]));
        json_object_set_new(o, "reason_codes", a);
        break;
    }
    case WM_MQTT5_DISCONNECT:
    case WM_MQTT5_AUTH:
        set_reason(o, p);
        json_object_set_new(o, "properties", props_json(&p->props));
        break;
    default: break; /* PINGREQ, PINGRESP: nothing but the fixed header */
    }
    return o;
}

static int emit(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s) return -1;
    puts(s);
    free(s);
    return 0;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *s == '\0' || *end || *s == '-' || v > max) return -1;
    *out = (uint32_t)v;
    return 0;
}

static const char USAGE[] = "usage: wmctl mqtt decode [--from client|server] [--max-packet-size N] [--topic-alias-maximum N] "
                            "[--check-payload-format] FILE|-";

static int decode_cmd(int argc, char **argv)
{
    wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_CLIENT, .maximum_packet_size = 0, .topic_alias_maximum = 65535 };
    const char *path = NULL;
    /* each option once: the last one used to win, silently */
    static const char *const once[] = { "--from", "--max-packet-size", "--topic-alias-maximum", "--check-payload-format" };
    unsigned char seen[sizeof once / sizeof once[0]] = { 0 };
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        uint32_t v;
        for (size_t k = 0; k < sizeof once / sizeof once[0]; k++)
            if (!strcmp(a, once[k]) && seen[k]++) return wmctl_usage_error("mqtt", "%s given twice: give it once", a);
        if (!strcmp(a, "--from") && i + 1 < argc) {
            const char *w = argv[++i];
            if (!strcmp(w, "client")) cfg.from = WM_MQTT5_FROM_CLIENT;
            else if (!strcmp(w, "server")) cfg.from = WM_MQTT5_FROM_SERVER;
            else return wmctl_usage_error("mqtt", "--from takes client or server, not '%s'", w);
        } else if (!strcmp(a, "--max-packet-size") && i + 1 < argc) {
            if (parse_u32(argv[++i], UINT32_MAX, &v) || v == 0)
                return wmctl_usage_error("mqtt", "--max-packet-size takes a positive byte count");
            cfg.maximum_packet_size = v;
        } else if (!strcmp(a, "--topic-alias-maximum") && i + 1 < argc) {
            if (parse_u32(argv[++i], 65535, &v))
                return wmctl_usage_error("mqtt", "--topic-alias-maximum takes 0..65535");
            cfg.topic_alias_maximum = (uint16_t)v;
        } else if (!strcmp(a, "--check-payload-format")) {
            cfg.check_payload_format = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return wmctl_usage_error("mqtt", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return wmctl_usage_error("mqtt", "more than one input file");
        }
    }
    if (!path) return wmctl_usage_error("mqtt", "no input file (FILE, or - for stdin)\n%s", USAGE);
    size_t len = 0;
    char msg[512];
    uint8_t *buf = wmctl_read_file(path, WMCTL_MAX_CAPTURE, &len, msg, sizeof msg);
    if (!buf) return wmctl_usage_error("mqtt", "%s", msg);

    size_t off = 0;
    int rc = 0;
    while (off < len) {
        wm_mqtt5_packet pkt;
        wm_mqtt5_result r;
        wm_mqtt5_status st = wm_mqtt5_decode(&cfg, buf + off, len - off, &pkt, &r);
        if (st == WM_MQTT5_DONE) {
            emit(packet_json(&pkt, off));
            off += r.length;
            continue;
        }
        /* The input ends inside a packet: report where the bytes ran out. */
        if (st == WM_MQTT5_NEED_MORE)
            emit(json_pack("{s:s,s:i,s:I}", "error", "truncated", "reason_code", WM_MQTT5_RC_MALFORMED_PACKET,
                           "offset", (json_int_t)len));
        else
            emit(json_pack("{s:s,s:i,s:I}", "error", wm_mqtt5_err_name(r.err), "reason_code", r.reason_code,
                           "offset", (json_int_t)(off + r.offset)));
        rc = 1;
        break;
    }
    free(buf);
    return rc;   /* wmctl's main flushes stdout and reports a write error */
}

int wmctl_mqtt(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "decode")) return decode_cmd(argc, argv);
    return wmctl_usage_error("mqtt", "%s\n%s", argc < 2 ? "no sub-command" : "unknown sub-command (only decode)", USAGE);
}
