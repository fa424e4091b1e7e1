/* UTF-8 validation for MQTT strings (§1.5.4). Strings in MQTT traffic are
 * overwhelmingly ASCII topic levels and property keys, so the loop checks
 * eight bytes at a time for the high bit and for a zero byte before falling
 * back to the per-sequence decoder. */
#include "codec/mqtt5_utf8.h"

#include <string.h>

wm_utf8_status wm_utf8_validate(const uint8_t *s, size_t len, size_t *err_off)
{
    size_t i = 0;
    wm_utf8_status st = WM_UTF8_OK;
    while (i < len) {
        if (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!wm_utf8_word_nul_or_high(w)) { i += 8; continue; }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0) { st = WM_UTF8_NUL; goto fail; }
            i++;
            continue;
        }
        uint32_t cp; size_t n; uint32_t min;
        if (c >= 0xC2 && c <= 0xDF)      { n = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; min = 0x10000; }
        else if (c == 0xC0 || c == 0xC1) { st = WM_UTF8_OVERLONG; goto fail; }
        else { st = WM_UTF8_ILL_FORMED; goto fail; }
        if (len - i < n) { st = WM_UTF8_ILL_FORMED; goto fail; }
        for (size_t k = 1; k < n; k++) {
            uint8_t cc = s[i + k];
            if ((cc & 0xC0) != 0x80) { st = WM_UTF8_ILL_FORMED; goto fail; }
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (cp < min) { st = WM_UTF8_OVERLONG; goto fail; }
        if (cp > 0x10FFFF) { st = WM_UTF8_ILL_FORMED; goto fail; }
        if (cp >= 0xD800 && cp <= 0xDFFF) { st = WM_UTF8_SURROGATE; goto fail; }
        i += n;
    }
    return WM_UTF8_OK;
fail:
    if (err_off) *err_off = i;
    return st;
}

const char *wm_utf8_status_name(wm_utf8_status st)
{
    switch (st) {
    case WM_UTF8_OK: return "ok";
    case WM_UTF8_ILL_FORMED: return "ill_formed";
    case WM_UTF8_OVERLONG: return "overlong";
    case WM_UTF8_SURROGATE: return "surrogate";
    case WM_UTF8_NUL: return "nul";
    }
    return "unknown";
}
