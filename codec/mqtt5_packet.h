/* MQTT v5 control packets (MQTT 5.0 §2, §3): the decoded form of all 15
 * packet types and the strict decoder of one complete packet.
 *
 * Zero copy: every string, binary field and payload in wm_mqtt5_packet is a
 * view into the caller's buffer, valid as long as that buffer is. Repeated
 * items (User Properties, Subscription Identifiers, SUBSCRIBE/UNSUBSCRIBE
 * topic filters, SUBACK/UNSUBACK reason codes) are kept as a validated raw
 * view plus a count and walked with the iterators below, so decoding never
 * allocates. Fields that a packet type does not have are left untouched
 * (not zeroed): read only the fields of the decoded type.
 *
 * The decoder is codec/mqtt5_decode.h, the encoder codec/mqtt5_encode.h.
 * The helpers below only read the packet: thread safe, no allocation.
 */
#ifndef WM_CODEC_MQTT5_PACKET_H
#define WM_CODEC_MQTT5_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_error.h"
#include "codec/mqtt5_props.h"
#include "codec/mqtt5_reason.h"

/* Who sent the bytes being decoded. Direction decides which packets may
 * arrive at all (§2.1.2) and some rules (a Subscription Identifier in a
 * client's PUBLISH is a Protocol Error, MQTT-3.3.4-6). */
typedef enum wm_mqtt5_dir {
    WM_MQTT5_FROM_CLIENT = 0,
    WM_MQTT5_FROM_SERVER = 1,
} wm_mqtt5_dir;

/* The receiver's limits, owned by the caller (one per connection direction,
 * or shared read-only). */
typedef struct wm_mqtt5_config {
    wm_mqtt5_dir from;
    /* The Maximum Packet Size the receiver announced (§3.1.2.11.4 /
     * §3.2.2.3.6), in bytes of the whole packet; 0 = no limit beyond the
     * protocol's 268,435,460. Larger packets fail with 0x95 Packet too large
     * as soon as their fixed header is seen. */
    uint32_t maximum_packet_size;
    /* The Topic Alias Maximum the receiver announced (§3.1.2.11.5 /
     * §3.2.2.3.8): a PUBLISH Topic Alias above it fails with 0x94. 0 (the
     * spec's default when absent) accepts no Topic Alias at all. */
    uint16_t topic_alias_maximum;
    /* §3.3.2.3.2: "The receiver MAY validate that the Payload is of the
     * format indicated". When true, a PUBLISH payload or CONNECT Will Payload
     * whose Payload Format Indicator is 1 must be valid UTF-8 (§1.5.4), else
     * 0x99 Payload format invalid. Off by default: it costs a pass over the
     * payload. */
    bool check_payload_format;
} wm_mqtt5_config;

/* One SUBSCRIBE payload entry (§3.8.3): Topic Filter + Subscription Options
 * (§3.8.3.1). For UNSUBSCRIBE only `filter` is meaningful. */
typedef struct wm_mqtt5_subscription {
    wm_mqtt5_bytes filter;
    uint8_t qos;              /* Maximum QoS, 0..2 */
    bool no_local;
    bool retain_as_published;
    uint8_t retain_handling;  /* 0..2 */
} wm_mqtt5_subscription;

/* CONNECT variable header and payload (§3.1.2, §3.1.3). */
typedef struct wm_mqtt5_connect {
    wm_mqtt5_bytes protocol_name;   /* "MQTT" */
    uint8_t protocol_version;       /* 5 */
    bool clean_start;
    bool will_flag;
    uint8_t will_qos;
    bool will_retain;
    bool username_flag;
    bool password_flag;
    uint16_t keep_alive;            /* seconds (§3.1.2.10) */
    wm_mqtt5_bytes client_id;       /* may be empty (§3.1.3.1) */
    wm_mqtt5_props will_props;      /* valid when will_flag */
    wm_mqtt5_bytes will_topic;      /* valid when will_flag */
    wm_mqtt5_bytes will_payload;    /* binary (§3.1.3.4), valid when will_flag */
    wm_mqtt5_bytes username;        /* valid when username_flag */
    wm_mqtt5_bytes password;        /* binary, valid when password_flag */
} wm_mqtt5_connect;

typedef struct wm_mqtt5_packet {
    uint8_t type;              /* wm_mqtt5_type, 1..15 */
    uint8_t flags;             /* low nibble of the first byte (§2.1.3) */
    uint32_t remaining_length; /* §2.1.4 */
    uint32_t length;           /* whole packet: fixed header + remaining length */
    /* PUBLISH (§3.3): flags split out, topic and payload. */
    uint8_t qos;
    bool dup, retain;
    wm_mqtt5_bytes topic;      /* may be empty when a Topic Alias is present */
    /* PUBLISH: the Application Message. SUBSCRIBE/UNSUBSCRIBE: the raw list of
     * filters (walk with wm_mqtt5_subscription_next()). SUBACK/UNSUBACK: one
     * reason code per byte. */
    wm_mqtt5_bytes payload;
    uint32_t count;            /* SUBSCRIBE/UNSUBSCRIBE filters, SUBACK/UNSUBACK codes */
    /* PUBLISH QoS>0, PUBACK..PUBCOMP, SUBSCRIBE..UNSUBACK (§2.2.1). */
    uint16_t packet_id;
    /* CONNACK, PUBACK..PUBCOMP, DISCONNECT, AUTH; 0x00 when omitted on the wire. */
    uint8_t reason_code;
    bool session_present;      /* CONNACK (§3.2.2.1.1) */
    wm_mqtt5_props props;      /* every type (empty for PINGREQ/PINGRESP) */
    wm_mqtt5_connect connect;  /* CONNECT only */
    /* Encoder input for SUBSCRIBE/UNSUBSCRIBE built by hand: `count` entries;
     * NULL (as the decoder leaves it) means "encode the filters in payload". */
    const wm_mqtt5_subscription *subscriptions;
} wm_mqtt5_packet;

/* Walks the topic filters of a decoded SUBSCRIBE or UNSUBSCRIBE in wire
 * order: set *pos = 0, then each call fills *out and returns true until the
 * end (false). For UNSUBSCRIBE the options fields are 0. Only valid on a
 * packet wm_mqtt5_packet_decode() accepted. */
bool wm_mqtt5_subscription_next(const wm_mqtt5_packet *pkt, size_t *pos, wm_mqtt5_subscription *out);

/* True when a packet of `type` may be sent by `from` (§2.1.2 "Direction of
 * flow"). Bit t of each mask = type t may come from that side. */
static inline bool wm_mqtt5_direction_allowed(unsigned type, wm_mqtt5_dir from)
{
    enum {
        BOTH = 1u << WM_MQTT5_PUBLISH | 1u << WM_MQTT5_PUBACK | 1u << WM_MQTT5_PUBREC | 1u << WM_MQTT5_PUBREL |
               1u << WM_MQTT5_PUBCOMP | 1u << WM_MQTT5_DISCONNECT | 1u << WM_MQTT5_AUTH,
        FROM_CLIENT = BOTH | 1u << WM_MQTT5_CONNECT | 1u << WM_MQTT5_SUBSCRIBE | 1u << WM_MQTT5_UNSUBSCRIBE |
                      1u << WM_MQTT5_PINGREQ,
        FROM_SERVER = BOTH | 1u << WM_MQTT5_CONNACK | 1u << WM_MQTT5_SUBACK | 1u << WM_MQTT5_UNSUBACK |
                      1u << WM_MQTT5_PINGRESP,
    };
    return type < 16 && (((from == WM_MQTT5_FROM_CLIENT ? FROM_CLIENT : FROM_SERVER) >> type) & 1u);
}

#endif
