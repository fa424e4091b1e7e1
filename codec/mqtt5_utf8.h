/* MQTT v5 UTF-8 Encoded String validation (MQTT 5.0 §1.5.4).
 *
 * Character data must be well-formed UTF-8 (RFC 3629): no overlong forms, no
 * code points above U+10FFFF, no UTF-16 surrogates U+D800..U+DFFF (Malformed
 * Packet), and no U+0000 (Malformed Packet). U+FEFF (BOM) is kept and is not
 * skipped or stripped (§1.5.4, last rule). Control characters U+0001..U+001F,
 * U+007F..U+009F and non-characters are allowed: the spec says SHOULD NOT, and
 * a receiver that closes on them breaks interoperability.
 *
 * Pure functions: no allocation, no global state, thread safe.
 */
#ifndef WM_CODEC_MQTT5_UTF8_H
#define WM_CODEC_MQTT5_UTF8_H

#include <stddef.h>
#include <stdint.h>

typedef enum wm_utf8_status {
    WM_UTF8_OK = 0,
    WM_UTF8_ILL_FORMED, /* bad lead/continuation byte, truncated sequence, > U+10FFFF */
    WM_UTF8_OVERLONG,   /* a code point encoded in more bytes than needed */
    WM_UTF8_SURROGATE,  /* U+D800..U+DFFF */
    WM_UTF8_NUL,        /* U+0000 */
} wm_utf8_status;

/* Validates `len` bytes at `s` (s may be NULL when len == 0). On failure,
 * *err_off (if not NULL) receives the offset in bytes of the first byte of the
 * offending sequence. Reads exactly the bytes [s, s+len). */
wm_utf8_status wm_utf8_validate(const uint8_t *s, size_t len, size_t *err_off);

/* A short, stable, lower-case name for a status ("ill_formed", "nul", ...). */
const char *wm_utf8_status_name(wm_utf8_status st);

#endif
