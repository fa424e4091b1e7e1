/* The MQTT v5 encoder: wm_mqtt5_packet -> wire bytes (MQTT 5.0 §2, §3).
 *
 * The inverse of codec/mqtt5_decode.h over the same struct: every packet the
 * decoder accepts re-encodes to bytes that decode to an equal packet (the
 * fuzz target checks it). It writes the canonical form: minimal VBIs, fixed
 * header flags from the type (§2.1.3; PUBLISH flags from qos/dup/retain),
 * single-valued properties in identifier order then Subscription Identifiers
 * then User Properties in their order, and the short forms where the spec
 * allows them (PUBACK..PUBCOMP and DISCONNECT without Reason Code / Property
 * Length when the code is 0x00 and there are no properties, §3.4.2.1,
 * §3.14.2.1; AUTH with Remaining Length 0 likewise, §3.15.2.1).
 *
 * Packets built by hand: set the fields of the type (see mqtt5_packet.h),
 * props.present plus value slots, and for repeated items either a raw view or
 * the encoder-input arrays (props.user_properties,
 * props.subscription_identifiers, pkt.subscriptions). An empty CONNECT
 * protocol_name means "MQTT" and protocol_version 0 means 5.
 *
 * The encoder does not re-check protocol rules (the decoder is the judge);
 * it only refuses what cannot be represented. Pure: no allocation, thread safe.
 */
#ifndef WM_CODEC_MQTT5_ENCODE_H
#define WM_CODEC_MQTT5_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_packet.h"

typedef enum wm_mqtt5_enc_status {
    WM_MQTT5_ENC_OK = 0,
    WM_MQTT5_ENC_BUFFER_TOO_SMALL,  /* *n = bytes needed; nothing written */
    WM_MQTT5_ENC_UNREPRESENTABLE,   /* a string/binary field over 65,535 bytes, a
                                       Remaining Length over 268,435,455, a VBI
                                       value over 268,435,455, or type 0 / > 15 */
} wm_mqtt5_enc_status;

/* Encodes pkt into [out, out+cap). On OK, *n = bytes written (the whole
 * packet); on BUFFER_TOO_SMALL, *n = bytes needed and out is untouched
 * (out may be NULL with cap 0 to ask for the size). */
wm_mqtt5_enc_status wm_mqtt5_encode(const wm_mqtt5_packet *pkt, uint8_t *out, size_t cap, size_t *n);

#endif
