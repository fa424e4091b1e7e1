/* MQTT v5 Variable Byte Integer (MQTT 5.0 §1.5.5).
 *
 * Seven value bits per byte, least significant group first, the top bit says
 * "another byte follows". At most four bytes (values 0..268,435,455). A
 * receiver must reject more than four bytes, and wirematch also rejects
 * non-minimal encodings (e.g. 0x80 0x00 for 0): §1.5.5 says "the encoded value
 * MUST use the minimum number of bytes necessary", and accepting two spellings
 * of one value lets a peer smuggle bytes past length-based checks. Both are
 * Malformed Packet (0x81).
 *
 * Pure functions, no allocation, thread safe.
 */
#ifndef WM_CODEC_MQTT5_VBI_H
#define WM_CODEC_MQTT5_VBI_H

#include <stddef.h>
#include <stdint.h>

#define WM_MQTT5_VBI_MAX 268435455u   /* 0xFF 0xFF 0xFF 0x7F */
#define WM_MQTT5_VBI_MAX_BYTES 4

typedef enum wm_mqtt5_vbi_status {
    WM_MQTT5_VBI_OK = 0,
    WM_MQTT5_VBI_NEED_MORE,     /* the bytes end while a continuation bit is set */
    WM_MQTT5_VBI_TOO_LONG,      /* a 4th byte with its continuation bit set (§1.5.5) */
    WM_MQTT5_VBI_NOT_MINIMAL,   /* last byte 0x00 after at least one other byte (§1.5.5) */
} wm_mqtt5_vbi_status;

/* Decodes a VBI from [p, p+len). On OK, *value gets the value and *nbytes the
 * number of bytes it used (1..4). On TOO_LONG / NOT_MINIMAL, *nbytes gets the
 * offset of the offending byte (for error positions). On NEED_MORE, *nbytes
 * gets len. Never reads past p+len nor past the 4th byte. */
static inline wm_mqtt5_vbi_status wm_mqtt5_vbi_decode(const uint8_t *p, size_t len,
                                                      uint32_t *value, size_t *nbytes)
{
    uint32_t v = 0;
    size_t n = len < WM_MQTT5_VBI_MAX_BYTES ? len : WM_MQTT5_VBI_MAX_BYTES;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        v |= (uint32_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0) { *nbytes = i; return WM_MQTT5_VBI_NOT_MINIMAL; }
            *value = v; *nbytes = i + 1;
            return WM_MQTT5_VBI_OK;
        }
    }
    if (n == WM_MQTT5_VBI_MAX_BYTES) { *nbytes = WM_MQTT5_VBI_MAX_BYTES - 1; return WM_MQTT5_VBI_TOO_LONG; }
    *nbytes = len;
    return WM_MQTT5_VBI_NEED_MORE;
}

/* Bytes needed to encode v (1..4); v must be <= WM_MQTT5_VBI_MAX. */
static inline size_t wm_mqtt5_vbi_size(uint32_t v)
{
    return v < 128u ? 1 : v < 16384u ? 2 : v < 2097152u ? 3 : 4;
}

/* Writes the minimal encoding of v (<= WM_MQTT5_VBI_MAX) to out, which must
 * have room for wm_mqtt5_vbi_size(v) bytes; returns the bytes written. */
static inline size_t wm_mqtt5_vbi_encode(uint32_t v, uint8_t *out)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        out[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

#endif
