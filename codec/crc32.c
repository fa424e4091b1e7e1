/* CRC-32 through zlib (see crc32.h): zlib's length type is 32 bits wide,
 * so a larger buffer is fed in chunks. */
#include "codec/crc32.h"

#include <zlib.h>

uint32_t wm_crc32(const void *p, uint64_t n)
{
    const Bytef *b = p;
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, chunk);
        b += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}
