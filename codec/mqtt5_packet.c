/* Helpers over decoded packets (see codec/mqtt5_packet.h). */
#include "codec/mqtt5_packet.h"

bool wm_mqtt5_direction_allowed(unsigned type, wm_mqtt5_dir from)
{
    /* §2.1.2 "Direction of flow": bit t set = type t may come from that side. */
    static const uint16_t from_client = 1u << WM_MQTT5_CONNECT | 1u << WM_MQTT5_PUBLISH | 1u << WM_MQTT5_PUBACK |
        1u << WM_MQTT5_PUBREC | 1u << WM_MQTT5_PUBREL | 1u << WM_MQTT5_PUBCOMP | 1u << WM_MQTT5_SUBSCRIBE |
        1u << WM_MQTT5_UNSUBSCRIBE | 1u << WM_MQTT5_PINGREQ | 1u << WM_MQTT5_DISCONNECT | 1u << WM_MQTT5_AUTH;
    static const uint16_t from_server = 1u << WM_MQTT5_CONNACK | 1u << WM_MQTT5_PUBLISH | 1u << WM_MQTT5_PUBACK |
        1u << WM_MQTT5_PUBREC | 1u << WM_MQTT5_PUBREL | 1u << WM_MQTT5_PUBCOMP | 1u << WM_MQTT5_SUBACK |
        1u << WM_MQTT5_UNSUBACK | 1u << WM_MQTT5_PINGRESP | 1u << WM_MQTT5_DISCONNECT | 1u << WM_MQTT5_AUTH;
    if (type > 15) return false;
    return ((from == WM_MQTT5_FROM_CLIENT ? from_client : from_server) >> type) & 1;
}

bool wm_mqtt5_subscription_next(const wm_mqtt5_packet *pkt, size_t *pos, wm_mqtt5_subscription *out)
{
    const uint8_t *p = pkt->payload.p, *end = p + pkt->payload.len;
    const uint8_t *q = p + *pos;
    if (end - q < 2) return false;
    uint32_t n = (uint32_t)(q[0] << 8 | q[1]);
    bool sub = pkt->type == WM_MQTT5_SUBSCRIBE;
    if ((size_t)(end - q) < 2 + n + (sub ? 1u : 0u)) return false;
    out->filter.p = q + 2;
    out->filter.len = n;
    q += 2 + n;
    uint8_t o = sub ? *q++ : 0;
    out->qos = o & 3;
    out->no_local = (o >> 2) & 1;
    out->retain_as_published = (o >> 3) & 1;
    out->retain_handling = (o >> 4) & 3;
    *pos = (size_t)(q - p);
    return true;
}
