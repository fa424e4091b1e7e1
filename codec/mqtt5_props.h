/* MQTT v5 Properties (MQTT 5.0 §2.2.2): identifiers, types, names, the set
 * each packet may carry, and a zero-copy decoded form.
 *
 * A property block is a Variable Byte Integer length followed by properties,
 * each an identifier (§2.2.2.2: a VBI, one byte in v5) and a value of the
 * property's type: Byte, Two/Four Byte Integer, Variable Byte Integer, UTF-8
 * Encoded String (§1.5.4), Binary Data (§1.5.6) or UTF-8 String Pair (§1.5.7).
 *
 * Decoded form (wm_mqtt5_props): a presence bit per identifier and one value
 * slot per identifier holding the number or a view into the caller's buffer.
 * Only User Property (everywhere) and Subscription Identifier (in PUBLISH,
 * §3.3.2.3.8) may repeat; their slots hold the first occurrence and a count,
 * and wm_mqtt5_user_prop_next() / wm_mqtt5_subid_next() walk every
 * occurrence in wire order over the raw block view, without allocation.
 * Slots of absent identifiers are not cleared: test wm_mqtt5_props_has().
 * All functions are pure (no allocation, no global state) and thread safe.
 */
#ifndef WM_CODEC_MQTT5_PROPS_H
#define WM_CODEC_MQTT5_PROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_error.h"

/* Property identifiers (§2.2.2.2, Table 2-4). */
enum {
    WM_MQTT5_PROP_PAYLOAD_FORMAT_INDICATOR = 0x01,
    WM_MQTT5_PROP_MESSAGE_EXPIRY_INTERVAL = 0x02,
    WM_MQTT5_PROP_CONTENT_TYPE = 0x03,
    WM_MQTT5_PROP_RESPONSE_TOPIC = 0x08,
    WM_MQTT5_PROP_CORRELATION_DATA = 0x09,
    WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER = 0x0B,
    WM_MQTT5_PROP_SESSION_EXPIRY_INTERVAL = 0x11,
    WM_MQTT5_PROP_ASSIGNED_CLIENT_IDENTIFIER = 0x12,
    WM_MQTT5_PROP_SERVER_KEEP_ALIVE = 0x13,
    WM_MQTT5_PROP_AUTHENTICATION_METHOD = 0x15,
    WM_MQTT5_PROP_AUTHENTICATION_DATA = 0x16,
    WM_MQTT5_PROP_REQUEST_PROBLEM_INFORMATION = 0x17,
    WM_MQTT5_PROP_WILL_DELAY_INTERVAL = 0x18,
    WM_MQTT5_PROP_REQUEST_RESPONSE_INFORMATION = 0x19,
    WM_MQTT5_PROP_RESPONSE_INFORMATION = 0x1A,
    WM_MQTT5_PROP_SERVER_REFERENCE = 0x1C,
    WM_MQTT5_PROP_REASON_STRING = 0x1F,
    WM_MQTT5_PROP_RECEIVE_MAXIMUM = 0x21,
    WM_MQTT5_PROP_TOPIC_ALIAS_MAXIMUM = 0x22,
    WM_MQTT5_PROP_TOPIC_ALIAS = 0x23,
    WM_MQTT5_PROP_MAXIMUM_QOS = 0x24,
    WM_MQTT5_PROP_RETAIN_AVAILABLE = 0x25,
    WM_MQTT5_PROP_USER_PROPERTY = 0x26,
    WM_MQTT5_PROP_MAXIMUM_PACKET_SIZE = 0x27,
    WM_MQTT5_PROP_WILDCARD_SUBSCRIPTION_AVAILABLE = 0x28,
    WM_MQTT5_PROP_SUBSCRIPTION_IDENTIFIER_AVAILABLE = 0x29,
    WM_MQTT5_PROP_SHARED_SUBSCRIPTION_AVAILABLE = 0x2A,
    WM_MQTT5_PROP_ID_LIMIT = 0x2B,   /* one past the highest identifier */
};

/* Property value types (§2.2.2.2, the "Type" column). */
typedef enum wm_mqtt5_prop_type {
    WM_MQTT5_PT_NONE = 0,   /* not a property identifier */
    WM_MQTT5_PT_BYTE,
    WM_MQTT5_PT_U16,        /* Two Byte Integer */
    WM_MQTT5_PT_U32,        /* Four Byte Integer */
    WM_MQTT5_PT_VBI,        /* Variable Byte Integer */
    WM_MQTT5_PT_UTF8,       /* UTF-8 Encoded String */
    WM_MQTT5_PT_BINARY,     /* Binary Data */
    WM_MQTT5_PT_PAIR,       /* UTF-8 String Pair */
} wm_mqtt5_prop_type;

/* Which property list applies: a packet type (1..15) or the Will Properties
 * of a CONNECT payload (§3.1.3.2). */
#define WM_MQTT5_PROPS_WILL 16u

/* A view into the caller's buffer: bytes of a string, binary data or payload.
 * Strings are not NUL-terminated; they are validated UTF-8 when decoded. */
typedef struct wm_mqtt5_bytes {
    const uint8_t *p;
    uint32_t len;
} wm_mqtt5_bytes;

/* A UTF-8 String Pair (§1.5.7), e.g. one User Property. */
typedef struct wm_mqtt5_pair {
    wm_mqtt5_bytes key, value;
} wm_mqtt5_pair;

/* One property value: `u` for integer types, `s` for strings and binary. */
typedef struct wm_mqtt5_prop_val {
    uint32_t u;
    wm_mqtt5_bytes s;
} wm_mqtt5_prop_val;

typedef struct wm_mqtt5_props {
    uint64_t present;              /* bit (1 << id) per identifier present */
    wm_mqtt5_bytes raw;            /* the properties, without the length prefix */
    uint32_t user_property_count;
    uint32_t subscription_identifier_count;
    wm_mqtt5_prop_val v[WM_MQTT5_PROP_ID_LIMIT]; /* valid where present */
    /* Encoder inputs for packets built by hand (the decoder sets both NULL):
     * when non-NULL, the encoder writes these (user_property_count /
     * subscription_identifier_count of them) instead of those found in raw. */
    const wm_mqtt5_pair *user_properties;
    const uint32_t *subscription_identifiers;
} wm_mqtt5_props;

/* Type of an identifier; WM_MQTT5_PT_NONE for anything not in §2.2.2.2. */
wm_mqtt5_prop_type wm_mqtt5_prop_type_of(uint32_t id);

/* The §2.2.2.2 name in snake_case ("topic_alias", "user_property", ...) or
 * NULL for an unknown identifier. */
const char *wm_mqtt5_prop_name(uint32_t id);

/* Bit set (1 << id) of the properties allowed in `ctx` (a packet type or
 * WM_MQTT5_PROPS_WILL), from the property lists of §3.1.2.11, §3.1.3.2,
 * §3.2.2.3, §3.3.2.3, §3.4.2.2 - §3.7.2.2, §3.8.2.1, §3.9.2.1, §3.10.2.1,
 * §3.11.2.1, §3.14.2.2, §3.15.2.2. 0 for packets without properties. */
uint64_t wm_mqtt5_props_allowed(unsigned ctx);

/* Whether property id (§2.2.2.2) was present in the parsed block; false for
 * id >= 64. Pure. */
static inline bool wm_mqtt5_props_has(const wm_mqtt5_props *pr, unsigned id)
{
    return id < 64 && (pr->present >> id) & 1u;
}

/* Parses the properties [p, p+len) (the block after its length VBI) for
 * context ctx into *out (present, raw, counts, value slots; encoder inputs set
 * NULL). Checks: known identifier (else PROPERTY_UNKNOWN), allowed in ctx
 * (PROPERTY_NOT_ALLOWED), not repeated unless User Property or (ctx PUBLISH)
 * Subscription Identifier (PROPERTY_DUPLICATE), value inside the block
 * (TRUNCATED), UTF-8 strings valid (UTF8_*), VBIs minimal (VBI_*), values in
 * range (PROPERTY_VALUE: Byte booleans 0/1, Receive Maximum and Maximum
 * Packet Size > 0, Maximum QoS 0/1; SUBSCRIPTION_ID_ZERO). Direction rules
 * that need the packet (Subscription Identifier from a client, Topic Alias
 * limits) are the packet decoder's. On error, *err_off gets the offset from p
 * of the offending property or value. Reads only [p, p+len). */
wm_mqtt5_err wm_mqtt5_props_parse(const uint8_t *p, size_t len, unsigned ctx,
                                  wm_mqtt5_props *out, size_t *err_off);

/* Iterates the User Properties of a decoded block in wire order: set *pos to
 * 0, then each call stores the next pair and returns true, or returns false
 * at the end. Only valid on a block wm_mqtt5_props_parse() accepted (the
 * encoder-input array, if set, is not walked: index it directly). */
bool wm_mqtt5_user_prop_next(const wm_mqtt5_props *pr, size_t *pos, wm_mqtt5_pair *out);

/* The same for Subscription Identifiers (values 1..268,435,455). */
bool wm_mqtt5_subid_next(const wm_mqtt5_props *pr, size_t *pos, uint32_t *out);

/* Offset in pr->raw of the first property `id` (its identifier byte), or
 * pr->raw.len when absent; for error positions. Validated blocks only. */
size_t wm_mqtt5_props_offset(const wm_mqtt5_props *pr, unsigned id);

/* Bytes the encoded block needs, not counting its length prefix. */
size_t wm_mqtt5_props_size(const wm_mqtt5_props *pr);

/* Writes the block without its length prefix into out (room for
 * wm_mqtt5_props_size() bytes): single-valued properties in identifier order,
 * then Subscription Identifiers, then User Properties in their order (the
 * order of User Properties is kept, §3.3.2.3.7). Returns bytes written. */
size_t wm_mqtt5_props_write(const wm_mqtt5_props *pr, uint8_t *out);

#endif
