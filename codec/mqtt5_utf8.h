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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* SWAR helpers for the common case of plain ASCII (bytes 0x01..0x7F), where
 * validation is a few word operations instead of a per-byte decoder. For a
 * 64-bit word w, wm_utf8_word_nul_or_high(w) is non-zero iff some byte is 0x00
 * or >= 0x80: (w | (w - 0x01..01)) has a byte's top bit set iff the byte has
 * it or was 0 (a borrow only runs on from a byte that was 0, which is
 * already a hit). */
#define WM_UTF8_LO 0x0101010101010101ull
#define WM_UTF8_HI 0x8080808080808080ull
/* Non-zero iff a byte of w is 0x00 or >= 0x80 (see above). Pure. */
static inline uint64_t wm_utf8_word_nul_or_high(uint64_t w) { return (w | (w - WM_UTF8_LO)) & WM_UTF8_HI; }

/* Applies `bad(word)` over [s, s+len) with word loads only (overlapping the
 * last word, or two overlapping 32-bit halves widened for 4..7 bytes), byte
 * by byte below 4 bytes. Bytes are replicated, never invented, so the
 * predicate sees only bytes of the string. */
#define WM_UTF8_SWAR_SCAN(s, len, bad, result)                                        \
    do {                                                                              \
        const uint8_t *s_ = (s); size_t n_ = (len); uint64_t acc_ = 0, w_;            \
        if (n_ >= 8) {                                                                \
            size_t i_ = 0;                                                            \
            for (; i_ + 8 <= n_; i_ += 8) { memcpy(&w_, s_ + i_, 8); acc_ |= bad(w_); } \
            if (i_ < n_) { memcpy(&w_, s_ + n_ - 8, 8); acc_ |= bad(w_); }            \
        } else if (n_ >= 4) {                                                         \
            uint32_t a_, b_;                                                          \
            memcpy(&a_, s_, 4); memcpy(&b_, s_ + n_ - 4, 4);                          \
            w_ = (uint64_t)a_ << 32 | b_; acc_ = bad(w_);                             \
        } else {                                                                      \
            uint64_t t_ = 0x0101010101010101ull * (n_ ? s_[0] : 1);                   \
            for (size_t i_ = 1; i_ < n_; i_++) t_ = t_ << 8 | s_[i_];                 \
            acc_ = bad(t_);                                                           \
        }                                                                             \
        (result) = acc_ == 0;                                                         \
    } while (0)

/* True when [s, s+len) is plain ASCII without U+0000, hence valid (§1.5.4).
 * False says nothing: call wm_utf8_validate() for the verdict. */
static inline __attribute__((always_inline)) bool wm_utf8_is_plain_ascii(const uint8_t *s, size_t len)
{
    bool ok;
    WM_UTF8_SWAR_SCAN(s, len, wm_utf8_word_nul_or_high, ok);
    return ok;
}

/* A short, stable, lower-case name for a status ("ill_formed", "nul", ...). */
const char *wm_utf8_status_name(wm_utf8_status st);

#endif
