/* EXI bit reader/writer. Hot path of the decoder: the bit-packed read gathers
 * the (at most five) bytes covering the field and shifts once. */
#include "codec/exi_stream.h"

#include <string.h>

void wm_exi_reader_init(wm_exi_reader *r, const uint8_t *buf, size_t len, wm_exi_error *err)
{
    r->buf = buf;
    r->len_bits = (uint64_t)len * 8;
    r->pos = 0;
    r->byte_aligned = false;
    r->err = err;
}

void wm_exi_writer_init(wm_exi_writer *w, uint8_t *buf, size_t cap, wm_exi_error *err)
{
    w->buf = buf;
    w->cap = cap;
    w->pos = 0;
    w->byte_aligned = false;
    w->err = err;
    if (cap) memset(buf, 0, cap);
}

static wm_exi_status truncated(wm_exi_reader *r, unsigned n)
{
    return wm_exi_fail(r->err, WM_EXI_E_TRUNCATED, r->pos,
                       "stream ends: %u more bits needed, %llu left", n,
                       (unsigned long long)(r->len_bits - r->pos));
}

wm_exi_status wm_exi_read_raw_slow(wm_exi_reader *r, unsigned n, uint32_t *out)
{
    if (n == 0) { *out = 0; return WM_EXI_OK; }
    if (r->len_bits - r->pos < n) return truncated(r, n);
    uint64_t first = r->pos >> 3, last = (r->pos + n - 1) >> 3;
    uint64_t acc = 0;
    for (uint64_t i = first; i <= last; i++) acc = (acc << 8) | r->buf[i];
    unsigned tail = (unsigned)(((last + 1) << 3) - (r->pos + n));
    acc >>= tail;
    *out = (uint32_t)(acc & ((n == 32) ? 0xffffffffull : ((1ull << n) - 1)));
    r->pos += n;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_write_raw(wm_exi_writer *w, unsigned n, uint32_t v)
{
    if (n == 0) return WM_EXI_OK;
    if ((uint64_t)w->cap * 8 - w->pos < n)
        return wm_exi_fail(w->err, WM_EXI_E_LENGTH, w->pos, "output buffer full (%zu bytes)", w->cap);
    for (int i = (int)n - 1; i >= 0; i--) {
        if ((v >> i) & 1u) w->buf[w->pos >> 3] |= (uint8_t)(0x80u >> (w->pos & 7));
        w->pos++;
    }
    return WM_EXI_OK;
}

void wm_exi_reader_align(wm_exi_reader *r)
{
    uint64_t p = (r->pos + 7) & ~(uint64_t)7;
    r->pos = p > r->len_bits ? r->len_bits : p;
}

wm_exi_status wm_exi_writer_align(wm_exi_writer *w)
{
    uint64_t p = (w->pos + 7) & ~(uint64_t)7;
    if (p > (uint64_t)w->cap * 8)
        return wm_exi_fail(w->err, WM_EXI_E_LENGTH, w->pos, "output buffer full (%zu bytes)", w->cap);
    w->pos = p;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_read_nbit_aligned(wm_exi_reader *r, unsigned n, uint32_t *out)
{
    uint32_t v = 0;
    unsigned nbytes = (n + 7) / 8;
    if (r->len_bits - r->pos < 8ull * nbytes) return truncated(r, 8 * nbytes);
    for (unsigned i = 0; i < nbytes; i++) {
        uint32_t b = 0;
        wm_exi_read_raw(r, 8, &b);
        v |= b << (8 * i);
    }
    /* padding bits of the last byte must be zero: a value beyond n bits
     * is passed up unmasked so range checks catch it */
    *out = v;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_write_nbit(wm_exi_writer *w, unsigned n, uint32_t v)
{
    if (!w->byte_aligned) return wm_exi_write_raw(w, n, v);
    unsigned nbytes = (n + 7) / 8;
    for (unsigned i = 0; i < nbytes; i++) {
        wm_exi_status st = wm_exi_write_raw(w, 8, (v >> (8 * i)) & 0xff);
        if (st) return st;
    }
    return WM_EXI_OK;
}

wm_exi_status wm_exi_read_bool_slow(wm_exi_reader *r, bool *out)
{
    uint32_t v = 0;
    wm_exi_status st = r->byte_aligned ? wm_exi_read_raw(r, 8, &v) : wm_exi_read_raw(r, 1, &v);
    if (st) return st;
    if (v > 1)
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos - 8, "boolean byte %u is neither 0 nor 1", v);
    *out = v != 0;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_write_bool(wm_exi_writer *w, bool v)
{
    return wm_exi_write_raw(w, w->byte_aligned ? 8 : 1, v ? 1 : 0);
}

wm_exi_status wm_exi_read_uint_slow(wm_exi_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    uint64_t start = r->pos;
    for (unsigned shift = 0;; shift += 7) {
        uint32_t b = 0;
        wm_exi_status st = wm_exi_read_raw(r, 8, &b);
        if (st) { r->pos = start; return st; }
        if (shift >= 63 && ((b & 0x7f) >> (shift == 63 ? 1 : 0)) != 0) {
            uint64_t at = r->pos;
            r->pos = start;
            return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, at,
                               "unsigned integer longer than 64 bits (§7.1.6)");
        }
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        if (shift > 70) { /* only zero groups could follow; bound the loop anyway */
            uint64_t at = r->pos;
            r->pos = start;
            return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, at, "unsigned integer longer than 64 bits (§7.1.6)");
        }
    }
    *out = v;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_write_uint(wm_exi_writer *w, uint64_t v)
{
    do {
        uint32_t b = v & 0x7f;
        v >>= 7;
        if (v) b |= 0x80;
        wm_exi_status st = wm_exi_write_raw(w, 8, b);
        if (st) return st;
    } while (v);
    return WM_EXI_OK;
}

wm_exi_status wm_exi_read_byte(wm_exi_reader *r, uint8_t *out)
{
    uint32_t v = 0;
    wm_exi_status st = wm_exi_read_raw(r, 8, &v);
    *out = (uint8_t)v;
    return st;
}

wm_exi_status wm_exi_write_byte(wm_exi_writer *w, uint8_t v) { return wm_exi_write_raw(w, 8, v); }

wm_exi_status wm_exi_read_int_slow(wm_exi_reader *r, int64_t *out)
{
    bool neg;
    uint64_t mag;
    wm_exi_status st = wm_exi_read_bool(r, &neg);
    if (st || (st = wm_exi_read_uint(r, &mag))) return st;
    if (mag > (uint64_t)INT64_MAX)
        return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, r->pos, "integer beyond 64 bits (§7.1.5)");
    *out = neg ? -(int64_t)mag - 1 : (int64_t)mag;
    return WM_EXI_OK;
}
