/* Reason code names and per-packet sets (MQTT 5.0 §2.4 and the reason code
 * tables of each packet in §3). */
#include "codec/mqtt5_reason.h"

#include <stddef.h>

static const char *const type_names[16] = {
    "RESERVED", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP",
    "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH",
};

const char *wm_mqtt5_type_name(unsigned type)
{
    return type < 16 ? type_names[type] : "RESERVED";
}

const char *wm_mqtt5_reason_name(uint8_t code, unsigned type)
{
    switch (code) {
    case 0x00:
        if (type == WM_MQTT5_DISCONNECT) return "normal_disconnection";
        if (type == WM_MQTT5_SUBACK) return "granted_qos_0";
        return "success";
    case 0x01: return "granted_qos_1";
    case 0x02: return "granted_qos_2";
    case 0x04: return "disconnect_with_will_message";
    case 0x10: return "no_matching_subscribers";
    case 0x11: return "no_subscription_existed";
    case 0x18: return "continue_authentication";
    case 0x19: return "re_authenticate";
    case 0x80: return "unspecified_error";
    case 0x81: return "malformed_packet";
    case 0x82: return "protocol_error";
    case 0x83: return "implementation_specific_error";
    case 0x84: return "unsupported_protocol_version";
    case 0x85: return "client_identifier_not_valid";
    case 0x86: return "bad_user_name_or_password";
    case 0x87: return "not_authorized";
    case 0x88: return "server_unavailable";
    case 0x89: return "server_busy";
    case 0x8A: return "banned";
    case 0x8B: return "server_shutting_down";
    case 0x8C: return "bad_authentication_method";
    case 0x8D: return "keep_alive_timeout";
    case 0x8E: return "session_taken_over";
    case 0x8F: return "topic_filter_invalid";
    case 0x90: return "topic_name_invalid";
    case 0x91: return "packet_identifier_in_use";
    case 0x92: return "packet_identifier_not_found";
    case 0x93: return "receive_maximum_exceeded";
    case 0x94: return "topic_alias_invalid";
    case 0x95: return "packet_too_large";
    case 0x96: return "message_rate_too_high";
    case 0x97: return "quota_exceeded";
    case 0x98: return "administrative_action";
    case 0x99: return "payload_format_invalid";
    case 0x9A: return "retain_not_supported";
    case 0x9B: return "qos_not_supported";
    case 0x9C: return "use_another_server";
    case 0x9D: return "server_moved";
    case 0x9E: return "shared_subscriptions_not_supported";
    case 0x9F: return "connection_rate_exceeded";
    case 0xA0: return "maximum_connect_time";
    case 0xA1: return "subscription_identifiers_not_supported";
    case 0xA2: return "wildcard_subscriptions_not_supported";
    }
    return "unknown";
}

static bool in(uint8_t code, const uint8_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == code) return true;
    return false;
}
#define IN(code, ...) in((code), (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }))

bool wm_mqtt5_reason_allowed(uint8_t c, unsigned type)
{
    switch (type) {
    case WM_MQTT5_CONNACK: /* §3.2.2.2 */
        return IN(c, 0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C,
                  0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F);
    case WM_MQTT5_PUBACK:  /* §3.4.2.1 */
    case WM_MQTT5_PUBREC:  /* §3.5.2.1: the same set */
        return IN(c, 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99);
    case WM_MQTT5_PUBREL:  /* §3.6.2.1 */
    case WM_MQTT5_PUBCOMP: /* §3.7.2.1 */
        return IN(c, 0x00, 0x92);
    case WM_MQTT5_SUBACK:  /* §3.9.3 */
        return IN(c, 0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2);
    case WM_MQTT5_UNSUBACK: /* §3.11.3 */
        return IN(c, 0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91);
    case WM_MQTT5_DISCONNECT: /* §3.14.2.1 (both senders' codes) */
        return IN(c, 0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x90,
                  0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
                  0xA0, 0xA1, 0xA2);
    case WM_MQTT5_AUTH:    /* §3.15.2.1 */
        return IN(c, 0x00, 0x18, 0x19);
    }
    return false;
}
