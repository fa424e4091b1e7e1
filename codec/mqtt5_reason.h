/* MQTT v5 Reason Codes (MQTT 5.0 §2.4) and the control packet types (§2.1.2).
 *
 * A reason code is one byte; which values a packet may carry depends on the
 * packet (CONNACK §3.2.2.2, PUBACK §3.4.2.1, PUBREC §3.5.2.1, PUBREL
 * §3.6.2.1, PUBCOMP §3.7.2.1, SUBACK §3.9.3, UNSUBACK §3.11.3, DISCONNECT
 * §3.14.2.1, AUTH §3.15.2.1). Pure tables: thread safe.
 */
#ifndef WM_CODEC_MQTT5_REASON_H
#define WM_CODEC_MQTT5_REASON_H

#include <stdbool.h>
#include <stdint.h>

/* Control packet types, the high nibble of the first byte (§2.1.2). */
typedef enum wm_mqtt5_type {
    WM_MQTT5_RESERVED = 0,
    WM_MQTT5_CONNECT = 1,
    WM_MQTT5_CONNACK = 2,
    WM_MQTT5_PUBLISH = 3,
    WM_MQTT5_PUBACK = 4,
    WM_MQTT5_PUBREC = 5,
    WM_MQTT5_PUBREL = 6,
    WM_MQTT5_PUBCOMP = 7,
    WM_MQTT5_SUBSCRIBE = 8,
    WM_MQTT5_SUBACK = 9,
    WM_MQTT5_UNSUBSCRIBE = 10,
    WM_MQTT5_UNSUBACK = 11,
    WM_MQTT5_PINGREQ = 12,
    WM_MQTT5_PINGRESP = 13,
    WM_MQTT5_DISCONNECT = 14,
    WM_MQTT5_AUTH = 15,
} wm_mqtt5_type;

/* The reason codes of §2.4 that the codec itself produces or checks. */
enum {
    WM_MQTT5_RC_SUCCESS = 0x00,
    WM_MQTT5_RC_UNSPECIFIED_ERROR = 0x80,
    WM_MQTT5_RC_MALFORMED_PACKET = 0x81,
    WM_MQTT5_RC_PROTOCOL_ERROR = 0x82,
    WM_MQTT5_RC_UNSUPPORTED_PROTOCOL_VERSION = 0x84,
    WM_MQTT5_RC_TOPIC_ALIAS_INVALID = 0x94,
    WM_MQTT5_RC_PACKET_TOO_LARGE = 0x95,
};

/* "CONNECT", "PUBLISH", ...; "RESERVED" for 0 and anything above 15. */
const char *wm_mqtt5_type_name(unsigned type);

/* The §2.4 name of a reason code in snake_case ("success",
 * "no_matching_subscribers", "malformed_packet", ...). Where §2.4 gives one
 * value several names by packet (0x00: Success / Normal disconnection /
 * Granted QoS 0; 0x01/0x02: Granted QoS 1/2), `type` selects the name.
 * Unknown values give "unknown". */
const char *wm_mqtt5_reason_name(uint8_t code, unsigned type);

/* True when `code` is a reason code packet `type` may carry (the per-packet
 * tables of §3). For SUBACK/UNSUBACK this is the per-filter code. Packets
 * without a reason code (CONNECT, PUBLISH, SUBSCRIBE, ...) allow none. */
bool wm_mqtt5_reason_allowed(uint8_t code, unsigned type);

#endif
