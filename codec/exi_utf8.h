/* UTF-8 <-> code points for EXI String content (§7.1.10: a string is its
 * length in characters followed by each character's Unicode code point as an
 * Unsigned Integer). Validation of untrusted UTF-8 lives in codec/mqtt5_utf8.h;
 * these helpers only convert. Inline, no state. */
#ifndef WM_CODEC_EXI_UTF8_H
#define WM_CODEC_EXI_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Writes cp (<= 0x10FFFF) as UTF-8 into out (room for 4 bytes); returns bytes written. */
static inline unsigned wm_exi_utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f)); return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f)); return 4;
}

/* Decodes one code point from s[0..len) (len >= 1); returns bytes consumed,
 * 0 if the sequence is ill-formed or truncated. */
static inline unsigned wm_exi_utf8_get(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) { *cp = u[0]; return 1; }
    unsigned n = (u[0] >= 0xf0) ? 4 : (u[0] >= 0xe0) ? 3 : (u[0] >= 0xc0) ? 2 : 0;
    if (n == 0 || n > len || u[0] > 0xf4) return 0;
    uint32_t c = u[0] & (0x7f >> n);
    for (unsigned i = 1; i < n; i++) {
        if ((u[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (u[i] & 0x3f);
    }
    if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff))) return 0;
    *cp = c;
    return n;
}

/* Number of code points in valid UTF-8 s[0..len). */
static inline size_t wm_exi_utf8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

#endif
