/* wm_crc32 (codec/crc32.h), the checksum of .wmr and .wmg files: the
 * standard CRC-32 check value, and the same answer as zlib fed in one call. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "codec/crc32.h"

Test(crc32, check_value_empty_input_and_zlib_agree)
{
    /* the catalogue check value of CRC-32/ISO-HDLC */
    cr_assert_eq(wm_crc32("123456789", 9), 0xCBF43926u);
    cr_assert_eq(wm_crc32("", 0), 0u);
    uint8_t *b = malloc(1 << 20);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < 1 << 20; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    for (size_t n = 1; n <= 1 << 20; n = n * 3 + 1) cr_assert_eq(wm_crc32(b, n), (uint32_t)crc32(0, b, (uInt)n), "n = %zu", n);
    free(b);
}
