/* EXI bit streams: the reader and writer under every EXI item (W3C EXI 1.0
 * Second Edition §6.2 event-code representation, §7.1 primitive encodings,
 * §5 header alignment).
 *
 * Two alignments exist (§5.4 "alignment"): bit-packed, where items follow one
 * another without padding and bits are read most-significant first; and
 * byte-aligned, where every event-code part and every n-bit value is padded
 * to whole bytes (an n-bit value takes ceil(n/8) bytes, least significant
 * byte first, §7.1.9) and booleans take one byte. Unsigned integers (§7.1.6)
 * are 7-bit groups, least significant group first, high bit = "more"; in
 * bit-packed mode their octets are simply not byte-aligned.
 *
 * The reader never reads outside [buf, buf+len): every function checks the
 * remaining bits first and returns WM_EXI_E_TRUNCATED, leaving the position
 * unchanged. The writer writes into a caller buffer of fixed capacity and
 * returns WM_EXI_E_LENGTH when it is full. Both are plain structs owned by
 * the caller; no allocation, no global state; one stream per thread.
 */
#ifndef WM_CODEC_EXI_STREAM_H
#define WM_CODEC_EXI_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __BMI2__
#include <immintrin.h>
#endif

#include "codec/exi_error.h"

typedef struct wm_exi_reader {
    const uint8_t *buf;
    uint64_t len_bits;      /* 8 * buffer length in bytes */
    uint64_t pos;           /* next bit to read, from the start of buf */
    bool byte_aligned;      /* alignment option: byte-alignment (true) or bit-packed */
    wm_exi_error *err;      /* where failures are reported (may be NULL) */
} wm_exi_reader;

typedef struct wm_exi_writer {
    uint8_t *buf;           /* caller-owned output, cap bytes */
    size_t cap;
    uint64_t pos;           /* next bit to write */
    bool byte_aligned;
    wm_exi_error *err;
} wm_exi_writer;

/* Sets r to read buf[0..len) (bytes; borrowed, must outlive r) from bit 0,
 * bit-packed (set r->byte_aligned for byte-alignment, EXI 1.0 §5.4 /
 * §7.1). Reads past len_bits fail with WM_EXI_E_TRUNCATED, reported in
 * *err when err is not NULL. One reader per thread; nothing to free. */
void wm_exi_reader_init(wm_exi_reader *r, const uint8_t *buf, size_t len, wm_exi_error *err);
/* Sets w to write into buf[0..cap) (bytes; caller-owned, zeroed here
 * because bits are OR-ed in) from bit 0, bit-packed unless
 * w->byte_aligned is set. A write past cap fails with WM_EXI_E_LENGTH,
 * reported in *err (with the bit position) when err is not NULL. One
 * writer per thread; nothing to free. */
void wm_exi_writer_init(wm_exi_writer *w, uint8_t *buf, size_t cap, wm_exi_error *err);

/* Number of bits needed for an event-code part with n distinct values:
 * ceil(log2(n)), 0 for n <= 1 (§6.2). */
static inline unsigned wm_exi_code_width(uint32_t n)
{
    return n <= 1 ? 0 : 32u - (unsigned)__builtin_clz(n - 1);
}

/* Raw bits (n <= 32), most significant first, ignoring the alignment mode:
 * used by the header (§5) whose fields are always bit fields. */
wm_exi_status wm_exi_read_raw_slow(wm_exi_reader *r, unsigned n, uint32_t *out);
/* Raw bits (above), inline when 8 bytes are readable; WM_EXI_E_TRUNCATED
 * past the end. */
static inline wm_exi_status wm_exi_read_raw(wm_exi_reader *r, unsigned n, uint32_t *out)
{
    /* fast path: 8 readable bytes from the current byte cover any 32-bit field */
    uint64_t byte = r->pos >> 3;
    if (n && byte + 8 <= (r->len_bits >> 3)) {
        uint64_t w;
        __builtin_memcpy(&w, r->buf + byte, 8);
        w = __builtin_bswap64(w);
        *out = (uint32_t)((w << (r->pos & 7)) >> (64 - n));
        r->pos += n;
        return WM_EXI_OK;
    }
    return wm_exi_read_raw_slow(r, n, out);
}
/* Writes the low n bits of v (n <= 32; 0 writes nothing), most significant
 * first, ignoring the alignment mode (the header's bit fields, §5). Returns
 * WM_EXI_OK, or WM_EXI_E_LENGTH (w->err filled with the bit position) when
 * fewer than n bits are left in the buffer: then nothing is written. The
 * buffer's bits must start zeroed (wm_exi_writer_init). One writer per
 * thread. */
wm_exi_status wm_exi_write_raw(wm_exi_writer *w, unsigned n, uint32_t v);

/* Skips to the next byte boundary (padding after the header, §5). */
void wm_exi_reader_align(wm_exi_reader *r);
wm_exi_status wm_exi_writer_align(wm_exi_writer *w);

/* n-bit unsigned integer (§7.1.9), n <= 32; also every event-code part
 * (§6.2). Honours the alignment mode. n == 0 reads nothing and yields 0. */
wm_exi_status wm_exi_read_nbit_aligned(wm_exi_reader *r, unsigned n, uint32_t *out);
/* n-bit unsigned integer (above); WM_EXI_E_TRUNCATED past the end. */
static inline wm_exi_status wm_exi_read_nbit(wm_exi_reader *r, unsigned n, uint32_t *out)
{
    if (!r->byte_aligned) {
        if (n == 0) { *out = 0; return WM_EXI_OK; }
        return wm_exi_read_raw(r, n, out);
    }
    return wm_exi_read_nbit_aligned(r, n, out);
}
/* Writes v as an n-bit unsigned integer (§7.1.9; n <= 32, v < 2^n), also
 * every event-code part (§6.2): n bits bit-packed, ceil(n/8) bytes least
 * significant first when byte-aligned; n == 0 writes nothing. Returns
 * WM_EXI_OK or WM_EXI_E_LENGTH (buffer full; byte-aligned, the bytes that
 * fitted are written: the stream is incomplete and must be dropped). One
 * writer per thread. */
wm_exi_status wm_exi_write_nbit(wm_exi_writer *w, unsigned n, uint32_t v);

/* Boolean (§7.1.2): one bit, or one byte when byte-aligned. */
wm_exi_status wm_exi_read_bool_slow(wm_exi_reader *r, bool *out);
/* Boolean (above), inline when bit-packed; WM_EXI_E_TRUNCATED past the end. */
static inline wm_exi_status wm_exi_read_bool(wm_exi_reader *r, bool *out)
{
    if (!r->byte_aligned && r->pos < r->len_bits) {
        *out = (r->buf[r->pos >> 3] >> (7 - (r->pos & 7))) & 1;
        r->pos++;
        return WM_EXI_OK;
    }
    return wm_exi_read_bool_slow(r, out);
}
/* Writes a Boolean (§7.1.2): one bit bit-packed, one byte (0 or 1) when
 * byte-aligned. Returns WM_EXI_OK, or WM_EXI_E_LENGTH when the buffer has
 * no room for it (nothing written). One writer per thread. */
wm_exi_status wm_exi_write_bool(wm_exi_writer *w, bool v);

/* The unsigned integer (§7.1.6) at the top of a 64-bit window (first octet
 * in the most significant byte, 56 valid bits at least): its octet count
 * 1..7, or 0 when it is longer than seven octets. Branch-free: octet
 * lengths of sensor values vary at random, a loop mispredicts on them. */
static inline unsigned wm_exi_uint_window(uint64_t w, uint64_t *v)
{
    uint64_t stop = ~w & 0x8080808080808000ull; /* octets without the "more" bit */
    if (__builtin_expect(!stop, 0)) return 0;
    unsigned len = ((unsigned)__builtin_clzll(stop) >> 3) + 1;
#ifdef __BMI2__
    /* first octet in the low byte: one extract puts the groups in order */
    uint64_t x = _pext_u64(__builtin_bswap64(w), 0x007f7f7f7f7f7f7full);
#else
    uint64_t x = ((w >> 56) & 0x7full) | ((w >> 41) & (0x7full << 7)) | ((w >> 26) & (0x7full << 14)) |
                 ((w >> 11) & (0x7full << 21)) | ((w << 4) & (0x7full << 28)) | ((w << 19) & (0x7full << 35)) |
                 ((w << 34) & (0x7full << 42));
#endif
    *v = x & ((1ull << (7 * len)) - 1);
    return len;
}

/* Unsigned integer (§7.1.6) up to 64 bits; a longer value returns
 * WM_EXI_E_UNSUPPORTED (values beyond 2^64-1 are legal EXI but not kept). */
wm_exi_status wm_exi_read_uint_slow(wm_exi_reader *r, uint64_t *out);
/* Unsigned integer (above): up to seven octets inline, the rest and the
 * errors (TRUNCATED, UNSUPPORTED) from wm_exi_read_uint_slow. */
static inline wm_exi_status wm_exi_read_uint(wm_exi_reader *r, uint64_t *out)
{
    /* fast path: values below 2^49 (seven octets) with 8 bytes readable */
    uint64_t byte = r->pos >> 3;
    if (byte + 8 <= (r->len_bits >> 3)) {
        uint64_t w;
        __builtin_memcpy(&w, r->buf + byte, 8);
        unsigned len = wm_exi_uint_window(__builtin_bswap64(w) << (r->pos & 7), out);
        if (__builtin_expect(len != 0, 1)) {
            r->pos += 8 * len;
            return WM_EXI_OK;
        }
    }
    return wm_exi_read_uint_slow(r, out);
}
/* Writes v as an unsigned integer (§7.1.6): 7-bit groups, least
 * significant first, the high bit of each octet set when more follow (1 to
 * 10 octets for 64 bits; not byte-aligned when bit-packed). Returns
 * WM_EXI_OK or WM_EXI_E_LENGTH (buffer full: the octets that fitted are
 * written, the stream is incomplete and must be dropped). One writer per
 * thread. */
wm_exi_status wm_exi_write_uint(wm_exi_writer *w, uint64_t v);

/* Integer (§7.1.5): sign bit, then the magnitude as an unsigned integer
 * (negative values store magnitude - 1). Up to 64 bits; beyond that
 * WM_EXI_E_UNSUPPORTED. */
wm_exi_status wm_exi_read_int_slow(wm_exi_reader *r, int64_t *out);
/* Integer (above): bit-packed values up to seven octets inline, the rest and
 * the errors (TRUNCATED, UNSUPPORTED) from wm_exi_read_int_slow. */
static inline wm_exi_status wm_exi_read_int(wm_exi_reader *r, int64_t *out)
{
    /* fast path (bit-packed): sign bit and up to seven octets from one window
     * (1 + 56 bits after a shift of at most 7 fit in 64) */
    uint64_t byte = r->pos >> 3;
    if (!r->byte_aligned && byte + 8 <= (r->len_bits >> 3)) {
        uint64_t w, v;
        __builtin_memcpy(&w, r->buf + byte, 8);
        w = __builtin_bswap64(w) << (r->pos & 7);
        unsigned len = wm_exi_uint_window(w << 1, &v);
        if (__builtin_expect(len != 0, 1)) {
            r->pos += 1 + 8 * len;
            *out = (w >> 63) ? -(int64_t)v - 1 : (int64_t)v;
            return WM_EXI_OK;
        }
    }
    return wm_exi_read_int_slow(r, out);
}

/* One whole byte (binary content octets, §7.1.1): 8 bits in either mode.
 * WM_EXI_E_TRUNCATED past the end (position unchanged). */
wm_exi_status wm_exi_read_byte(wm_exi_reader *r, uint8_t *out);
/* Writes one whole byte (§7.1.1), 8 bits in either mode, at the current bit
 * position (not padded to a byte boundary when bit-packed). Returns
 * WM_EXI_OK, or WM_EXI_E_LENGTH with nothing written when fewer than 8 bits
 * are left. One writer per thread. */
wm_exi_status wm_exi_write_byte(wm_exi_writer *w, uint8_t v);

/* Bytes written so far, the last one padded with zero bits. */
static inline size_t wm_exi_writer_bytes(const wm_exi_writer *w) { return (size_t)((w->pos + 7) / 8); }

#endif
