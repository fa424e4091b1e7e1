/* CRC-32 of file bodies: the one checksum of wirematch's binary files
 * (resolution files .wmr, control/RESOLUTION_FORMAT.md; compiled EXI
 * grammars .wmg, codec/exi_grammar_io.c). It lives in the lowest layer so that
 * every layer's file formats share it.
 *
 * The CRC is zlib's crc32 (ISO-HDLC / IEEE 802.3 polynomial 0x04C11DB7,
 * reflected, initial and final XOR 0xFFFFFFFF: the CRC of "123456789" is
 * 0xCBF43926), so a file's checksum can be checked with any standard tool. */
#ifndef WM_CODEC_CRC32_H
#define WM_CODEC_CRC32_H

#include <stdint.h>

/* The CRC-32 of p[0..n). n may exceed zlib's 32-bit length type (the bytes
 * are fed in chunks); n == 0 gives 0. Reads only; thread-safe. */
uint32_t wm_crc32(const void *p, uint64_t n);

#endif
