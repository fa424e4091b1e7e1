/* Why the MQTT v5 codec rejected a packet, and the reason code a server must
 * then send (MQTT 5.0 §4.13 Handling errors, §2.4 Reason Codes).
 *
 * Each error is precise (what rule, which spec section) so logs and tests can
 * tell a non-minimal VBI from a truncated string, and maps to the one reason
 * code a receiver sends in its CONNACK or DISCONNECT:
 *   0x81 Malformed Packet  - the bytes cannot be parsed as the spec lays out
 *   0x82 Protocol Error    - parsed, but breaks a rule of the protocol
 *   0x84 Unsupported Protocol Version (CONNECT only, §3.1.2.1/§3.1.2.2)
 *   0x94 Topic Alias invalid (§3.3.2.3.4)
 *   0x95 Packet too large (against the receiver's Maximum Packet Size, §3.1.2.11.4)
 *   0x99 Payload format invalid (optional check, §3.3.2.3.2)
 * Pure tables: thread safe.
 */
#ifndef WM_CODEC_MQTT5_ERROR_H
#define WM_CODEC_MQTT5_ERROR_H

#include <stdint.h>

typedef enum wm_mqtt5_err {
    WM_MQTT5_E_OK = 0,
    /* 0x81 Malformed Packet */
    WM_MQTT5_E_RESERVED_TYPE,        /* packet type 0 (§2.1.2) */
    WM_MQTT5_E_FIXED_HEADER_FLAGS,   /* flags other than the §2.1.3 table (§2.1.3) */
    WM_MQTT5_E_PUBLISH_QOS3,         /* PUBLISH QoS bits 11 (§3.3.1.2) */
    WM_MQTT5_E_PUBLISH_DUP_QOS0,     /* DUP 1 on a QoS 0 PUBLISH (§3.3.1.1) */
    WM_MQTT5_E_VBI_TOO_LONG,         /* more than 4 bytes (§1.5.5) */
    WM_MQTT5_E_VBI_NOT_MINIMAL,      /* not the minimum number of bytes (§1.5.5) */
    WM_MQTT5_E_TRUNCATED,            /* a field runs past its enclosing length (§2.1.4, §2.2.2.1) */
    WM_MQTT5_E_TRAILING_BYTES,       /* bytes left after the last field (§2.1.4) */
    WM_MQTT5_E_UTF8_ILL_FORMED,      /* §1.5.4, RFC 3629 */
    WM_MQTT5_E_UTF8_OVERLONG,        /* §1.5.4 */
    WM_MQTT5_E_UTF8_SURROGATE,       /* U+D800..U+DFFF (§1.5.4) */
    WM_MQTT5_E_UTF8_NUL,             /* U+0000 (§1.5.4) */
    WM_MQTT5_E_PROPERTY_UNKNOWN,     /* identifier not in §2.2.2.2 */
    WM_MQTT5_E_TOPIC_EMPTY,          /* zero-length topic filter (§4.7.3) */
    WM_MQTT5_E_TOPIC_HASH_NOT_LAST,  /* §4.7.1.2 */
    WM_MQTT5_E_TOPIC_HASH_NOT_ALONE, /* §4.7.1.2 */
    WM_MQTT5_E_TOPIC_PLUS_NOT_ALONE, /* §4.7.1.3 */
    WM_MQTT5_E_SHARE_EMPTY_NAME,     /* "$share//f" (§4.8.2) */
    WM_MQTT5_E_SHARE_BAD_NAME,       /* ShareName with '+'/'#' (§4.8.2) */
    WM_MQTT5_E_SHARE_NO_FILTER,      /* "$share/name" without "/filter" (§4.8.2) */
    WM_MQTT5_E_CONNECT_RESERVED_FLAG, /* CONNECT flags bit 0 (§3.1.2.3) */
    WM_MQTT5_E_WILL_QOS3,            /* Will QoS 3 (§3.1.2.6) */
    WM_MQTT5_E_WILL_FLAGS,           /* Will QoS/Retain set without the Will Flag (§3.1.2.6, §3.1.2.7) */
    WM_MQTT5_E_CONNACK_RESERVED_FLAGS, /* Connect Acknowledge Flags bits 7-1 (§3.2.2.1) */
    WM_MQTT5_E_SUBOPT_RESERVED,      /* Subscription Options bits 7-6 (§3.8.3.1) */
    /* 0x82 Protocol Error */
    WM_MQTT5_E_WRONG_DIRECTION,      /* a packet this side never receives (§2.1.2 direction column) */
    WM_MQTT5_E_PROPERTY_DUPLICATE,   /* a non-repeatable property twice (§2.2.2.2, §3.x) */
    WM_MQTT5_E_PROPERTY_NOT_ALLOWED, /* not in this packet's property list (§3.x.2.x) */
    WM_MQTT5_E_PROPERTY_VALUE,       /* a value the spec forbids (e.g. Receive Maximum 0) */
    WM_MQTT5_E_SUBSCRIPTION_ID_FROM_CLIENT, /* PUBLISH client->server (§3.3.4, MQTT-3.3.4-6) */
    WM_MQTT5_E_SUBSCRIPTION_ID_ZERO, /* §3.3.2.3.8, §3.8.2.1.2 */
    WM_MQTT5_E_TOPIC_NAME_EMPTY_NO_ALIAS, /* §3.3.2.3.4 (MQTT-3.3.2-1 ... 3.3.4) */
    WM_MQTT5_E_PACKET_ID_ZERO,       /* §2.2.1 (MQTT-2.2.1-3) */
    WM_MQTT5_E_NO_TOPIC_FILTERS,     /* SUBSCRIBE/UNSUBSCRIBE without a filter (MQTT-3.8.3-2, MQTT-3.10.3-2) */
    WM_MQTT5_E_NO_REASON_CODES,      /* SUBACK/UNSUBACK without a reason code (§3.9.3, §3.11.3) */
    WM_MQTT5_E_SUBOPT_QOS3,          /* Maximum QoS 3 (§3.8.3.1) */
    WM_MQTT5_E_SUBOPT_RETAIN_HANDLING3, /* Retain Handling 3 (§3.8.3.1) */
    WM_MQTT5_E_SHARED_NO_LOCAL,      /* No Local on a shared subscription (MQTT-3.8.3-4) */
    WM_MQTT5_E_REASON_CODE,          /* a reason code this packet cannot carry (§3.x) */
    WM_MQTT5_E_AUTH_DATA_NO_METHOD,  /* CONNECT (§3.1.2.11.10), AUTH (§3.15.2.2.3) */
    WM_MQTT5_E_AUTH_NO_METHOD,       /* a non-empty AUTH without Authentication Method (§3.15.2.2.2) */
    WM_MQTT5_E_SESSION_PRESENT_ON_ERROR, /* CONNACK (MQTT-3.2.2-6) */
    WM_MQTT5_E_SESSION_EXPIRY_FROM_SERVER, /* DISCONNECT (MQTT-3.14.2-2) */
    WM_MQTT5_E_RESPONSE_TOPIC_INVALID, /* Response Topic with wildcards (§3.3.2.3.5) */
    /* '+'/'#' in a Topic Name (MQTT-3.3.2-2, §4.7.1). The spec names no code;
     * the packet parses, but carries data the protocol forbids: a Protocol
     * Error by §4.13's definitions, and what mosquitto 2 sends as well. */
    WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME,
    /* 0x84 Unsupported Protocol Version */
    WM_MQTT5_E_PROTOCOL_NAME,        /* not "MQTT" (§3.1.2.1) */
    WM_MQTT5_E_PROTOCOL_VERSION,     /* not 5 (§3.1.2.2) */
    /* 0x94 Topic Alias invalid */
    WM_MQTT5_E_TOPIC_ALIAS_ZERO,     /* §3.3.2.3.4 (MQTT-3.3.2-8) */
    WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE, /* above the receiver's Topic Alias Maximum (MQTT-3.3.2-9/10) */
    /* 0x95 Packet too large */
    WM_MQTT5_E_PACKET_TOO_LARGE,     /* above the receiver's Maximum Packet Size (MQTT-3.1.2-24) */
    /* 0x99 Payload format invalid (only when the receiver asks for the check) */
    WM_MQTT5_E_PAYLOAD_FORMAT_INVALID, /* Payload Format Indicator 1, payload not UTF-8 (§3.3.2.3.2, §3.1.3.2) */
    WM_MQTT5_E_COUNT_
} wm_mqtt5_err;

/* Stable snake_case name ("vbi_not_minimal", ...); "ok" for WM_MQTT5_E_OK. */
const char *wm_mqtt5_err_name(wm_mqtt5_err e);

/* The reason code a receiver sends for e (0x81, 0x82, 0x84, 0x94, 0x95 or 0x99;
 * 0x00 for WM_MQTT5_E_OK). */
uint8_t wm_mqtt5_err_reason(wm_mqtt5_err e);

#endif
