/* wm_peid_set: a neighborhood's member peids, stored once at 2 to 2.5
 * bytes a peid for any realistic peid space, for the one thing the matcher
 * needs of them once the neighborhood is installed: listing them again to
 * withdraw its postings. Internal to the matcher (nbhd.c).
 *
 * Why not a sorted set (a CRoaring bitmap before): nothing reads the set in
 * order or tests membership in it — whether a neighborhood holds a peid is
 * answered at lookup time by the peid's posting slot, which the lookup has
 * read anyway. Sorting 2,000 peids and building the bitmap cost ~10 us of
 * the 20 us a subscription add with a new neighborhood may take (issue 3);
 * this set is written in one pass over the peids in any order, and takes
 * about the room of roaring's array containers.
 *
 * Layout (one allocation): the low 16 bits of each peid, then its block
 * (peid >> 16) minus the lowest block, packed in 0, 4, 8 or 16 bits as the
 * span of blocks needs: 0 below 65,536 peids, 4 below 1,048,576.
 *
 * Thread safety: none needed; the writer builds, lists and frees sets.
 */
#ifndef WM_MATCHER_PEID_SET_H
#define WM_MATCHER_PEID_SET_H

#include <stddef.h>
#include <stdint.h>

typedef struct wm_peid_set {
    uint32_t n;      /* peids */
    uint16_t block0; /* lowest block */
    uint8_t hbits;   /* bits per packed block: 0, 4, 8 or 16 */
    uint8_t pad;
    uint16_t low[];  /* [n], then the packed blocks */
} wm_peid_set;

/* The set of the distinct ids[0..n) (any order, each below 2^28), or NULL
 * on allocation failure. Free it with free(). */
wm_peid_set *wm_peid_set_new(const uint32_t *ids, size_t n);

/* Listing in pieces: a cursor starts at 0; each call writes up to max
 * further peids to out and returns how many (0 at the end). */
size_t wm_peid_set_next(const wm_peid_set *s, size_t *cursor, uint32_t *out, size_t max);

/* The smallest and largest of ids[0..n) (n > 0). */
void wm_peid_range(const uint32_t *ids, size_t n, uint32_t *lo, uint32_t *hi);

/* Words of scratch wm_peid_unique() needs for n peids. */
size_t wm_peid_unique_scratch(size_t n);

/* De-duplicates ids[0..n) in place (the order changes; each id below
 * 2^28); returns the new n. tmp: wm_peid_unique_scratch(n) words. bits:
 * 1,024 zeroed words, zeroed again on return. */
size_t wm_peid_unique(uint32_t *ids, size_t n, uint32_t *tmp, uint64_t *bits);

#endif
