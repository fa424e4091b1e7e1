/* Helpers over decoded packets (see codec/mqtt5_packet.h). */
#include "codec/mqtt5_packet.h"

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
