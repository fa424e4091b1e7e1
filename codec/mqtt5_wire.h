/* MQTT v5 data representation (MQTT 5.0 §1.5): the bounded readers and the
 * writers every packet and property is built from.
 *
 * Readers work on a cursor over [p, end) and never read at or past `end`; on
 * failure they return an error and leave the offending position in the
 * cursor, so callers report precise offsets. Writers assume the caller sized
 * the output (the encoder computes sizes first). Inline because they sit on
 * the PUBLISH hot path. Pure: thread safe, no allocation.
 */
#ifndef WM_CODEC_MQTT5_WIRE_H
#define WM_CODEC_MQTT5_WIRE_H

#include <stdint.h>
#include <string.h>

#include "codec/mqtt5_error.h"
#include "codec/mqtt5_props.h"
#include "codec/mqtt5_utf8.h"
#include "codec/mqtt5_vbi.h"

typedef struct wm_mqtt5_cursor {
    const uint8_t *p;    /* next byte to read */
    const uint8_t *end;  /* one past the last readable byte */
} wm_mqtt5_cursor;

/* Bytes left to read at c. */
static inline size_t wm_mqtt5_cur_left(const wm_mqtt5_cursor *c) { return (size_t)(c->end - c->p); }

/* Maps a UTF-8 validation failure to the codec error (§1.5.4: all Malformed). */
static inline wm_mqtt5_err wm_mqtt5_utf8_err(wm_utf8_status st)
{
    switch (st) {
    case WM_UTF8_OK: return WM_MQTT5_E_OK;
    case WM_UTF8_OVERLONG: return WM_MQTT5_E_UTF8_OVERLONG;
    case WM_UTF8_SURROGATE: return WM_MQTT5_E_UTF8_SURROGATE;
    case WM_UTF8_NUL: return WM_MQTT5_E_UTF8_NUL;
    case WM_UTF8_ILL_FORMED: break;
    }
    return WM_MQTT5_E_UTF8_ILL_FORMED;
}

/* One byte; WM_MQTT5_E_TRUNCATED at the end (c unchanged). */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_u8(wm_mqtt5_cursor *c, uint8_t *v)
{
    if (c->p >= c->end) return WM_MQTT5_E_TRUNCATED;
    *v = *c->p++;
    return WM_MQTT5_E_OK;
}

/* Two Byte Integer, big-endian (§1.5.2). */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_u16(wm_mqtt5_cursor *c, uint16_t *v)
{
    if (wm_mqtt5_cur_left(c) < 2) return WM_MQTT5_E_TRUNCATED;
    *v = (uint16_t)(c->p[0] << 8 | c->p[1]);
    c->p += 2;
    return WM_MQTT5_E_OK;
}

/* Four Byte Integer, big-endian (§1.5.3). */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_u32(wm_mqtt5_cursor *c, uint32_t *v)
{
    if (wm_mqtt5_cur_left(c) < 4) return WM_MQTT5_E_TRUNCATED;
    *v = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 | (uint32_t)c->p[2] << 8 | c->p[3];
    c->p += 4;
    return WM_MQTT5_E_OK;
}

/* Variable Byte Integer inside a packet (§1.5.5): running out of bytes is a
 * truncation, not "need more", since the enclosing length is known. */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_vbi(wm_mqtt5_cursor *c, uint32_t *v)
{
    size_t n;
    switch (wm_mqtt5_vbi_decode(c->p, wm_mqtt5_cur_left(c), v, &n)) {
    case WM_MQTT5_VBI_OK: c->p += n; return WM_MQTT5_E_OK;
    case WM_MQTT5_VBI_NEED_MORE: return WM_MQTT5_E_TRUNCATED;
    case WM_MQTT5_VBI_TOO_LONG: c->p += n; return WM_MQTT5_E_VBI_TOO_LONG;
    case WM_MQTT5_VBI_NOT_MINIMAL: c->p += n; return WM_MQTT5_E_VBI_NOT_MINIMAL;
    }
    return WM_MQTT5_E_VBI_TOO_LONG;
}

/* Binary Data (§1.5.6): a Two Byte length then that many bytes. */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_bin(wm_mqtt5_cursor *c, wm_mqtt5_bytes *out)
{
    if (wm_mqtt5_cur_left(c) < 2) return WM_MQTT5_E_TRUNCATED;
    uint32_t n = (uint32_t)(c->p[0] << 8 | c->p[1]);
    if (wm_mqtt5_cur_left(c) - 2 < n) return WM_MQTT5_E_TRUNCATED;
    out->p = c->p + 2;
    out->len = n;
    c->p += 2 + n;
    return WM_MQTT5_E_OK;
}

/* UTF-8 Encoded String (§1.5.4). On a UTF-8 error the cursor points at the
 * offending byte. */
static inline __attribute__((always_inline)) wm_mqtt5_err wm_mqtt5_rd_str(wm_mqtt5_cursor *c, wm_mqtt5_bytes *out)
{
    const uint8_t *start = c->p;
    wm_mqtt5_err e = wm_mqtt5_rd_bin(c, out);
    if (e) return e;
    if (wm_utf8_is_plain_ascii(out->p, out->len)) return WM_MQTT5_E_OK;
    size_t off;
    wm_utf8_status st = wm_utf8_validate(out->p, out->len, &off);
    if (st != WM_UTF8_OK) { c->p = start + 2 + off; return wm_mqtt5_utf8_err(st); }
    return WM_MQTT5_E_OK;
}

/* Writers: put v big-endian at o (Two/Four Byte Integer §1.5.2-3, Binary Data
 * §1.5.6 as length + bytes, VBI §1.5.5) and return the byte after it. The
 * caller sized the buffer; nothing is checked. */
static inline uint8_t *wm_mqtt5_wr_u16(uint8_t *o, uint32_t v) { o[0] = (uint8_t)(v >> 8); o[1] = (uint8_t)v; return o + 2; }
/* Four Byte Integer (see wm_mqtt5_wr_u16). */
static inline uint8_t *wm_mqtt5_wr_u32(uint8_t *o, uint32_t v)
{
    o[0] = (uint8_t)(v >> 24); o[1] = (uint8_t)(v >> 16); o[2] = (uint8_t)(v >> 8); o[3] = (uint8_t)v;
    return o + 4;
}
/* Binary Data or UTF-8 string: two-byte length, then b.len bytes. */
static inline uint8_t *wm_mqtt5_wr_bytes(uint8_t *o, wm_mqtt5_bytes b)
{
    o = wm_mqtt5_wr_u16(o, b.len);
    if (b.len) memcpy(o, b.p, b.len);
    return o + b.len;
}
/* Variable Byte Integer, 1-4 bytes (v < 2^28). */
static inline uint8_t *wm_mqtt5_wr_vbi(uint8_t *o, uint32_t v) { return o + wm_mqtt5_vbi_encode(v, o); }

#endif
