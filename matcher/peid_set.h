/* Building a neighborhood's peid set on the writer's add path: sort and
 * de-duplicate the member peids, then make the CRoaring bitmap from the
 * sorted run in one pass. Internal to the matcher (nbhd.c).
 *
 * Why not roaring_bitmap_of_ptr(): it inserts value by value, ~5 ns each,
 * which for a 2,000-peid neighborhood is half the time a whole
 * subscription add may take (issue 3: <= 20 us). The sorted run already
 * has the bitmap's shape — one container per 2^16 block, each a sorted
 * array of the low 16 bits (a bitset past 4,096 values) — so the set is
 * written in the portable serialization format
 * (https://github.com/RoaringBitmap/RoaringFormatSpec, the cross-language
 * format CRoaring, Java and Go all read) and handed to
 * roaring_bitmap_portable_deserialize_safe(), which copies each container
 * with one memcpy.
 */
#ifndef WM_MATCHER_PEID_SET_H
#define WM_MATCHER_PEID_SET_H

#include <stddef.h>
#include <stdint.h>

#include <roaring/roaring.h>

/* Sorts a[0..n) ascending and drops duplicates; returns the new n.
 * a has room for n + 16 entries (vector stores run past the end), tmp for
 * 2n (8-byte aligned). Dense sets (span <= 64n) go through a bitset, others
 * through an LSD radix sort by bytes that skips bytes equal in every key. */
size_t wm_peid_sort_unique(uint32_t *a, uint32_t *tmp, size_t n);

/* Bytes of scratch wm_peid_set_of_sorted() needs for n sorted peids. */
size_t wm_peid_set_scratch_bytes(size_t n);

/* The bitmap of sorted, duplicate-free ids[0..n), or NULL on allocation
 * failure. scratch: wm_peid_set_scratch_bytes(n) bytes, 8-byte aligned. */
roaring_bitmap_t *wm_peid_set_of_sorted(const uint32_t *ids, size_t n, void *scratch);

#endif
