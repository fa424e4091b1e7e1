/* A worker's cache of peid string -> matcher peid id, in front of
 * wm_matcher_peid_find (matcher/matcher.h).
 *
 * Why: a spatial publish names its peid as a string; finding its interned
 * id in the matcher's table (every peid of the resolution) costs a hash of
 * the string and a probe through several arrays and the stored string,
 * cache misses each, on every PUBLISH. Peids are Zipf-distributed in spaPS
 * traffic, so a small cache of the hot ones, one 32-byte slot per peid with
 * the string inline, answers most lookups from one line: two-way set
 * associative, both ways of a set in one 64-byte line (when the cache is
 * 64-byte aligned), the most recently used way first. Against the
 * direct-mapped 4,096 slots it replaced, 16,384 slots in two ways take the
 * hit rate of `make bench-dataplane` (Zipf(1.1) over 20,000 peids) from
 * 83 % to 97.7 % (summary: match.peid_cache_hits / _misses); a miss probes
 * the matcher's table through several dependent cache misses.
 * The matcher documents its peid ids as dense and permanent for its life,
 * "so the data plane may cache them".
 *
 * By default only ids the matcher knows are cached: an unknown peid is
 * asked again next time (a neighborhood defined later may intern it). A
 * caller whose matcher interns no peid while the cache is used (its
 * neighborhoods are all defined when it is built, as the data plane's match
 * table is) sets cache_unknown, so unknown peids — in spaPS traffic, every
 * entity no subscriber's neighborhood contains — are answered from the
 * cache too. Peids longer than WM_PEID_CACHE_KEY_MAX bytes bypass the
 * cache. Results are exactly those of wm_matcher_peid_find.
 *
 * The cache belongs to one matcher: wm_peid_cache_find empties it when
 * called with another matcher than last time, and a caller that frees a
 * matcher and may get a new one at the same address (hot reload) calls
 * wm_peid_cache_reset when it switches.
 *
 * Thread safety: one cache per worker thread, used only by it (the matcher
 * lookups it makes are reader-side, lock-free). */
#ifndef WM_DATAPLANE_PEID_CACHE_H
#define WM_DATAPLANE_PEID_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "matcher/matcher.h"

#define WM_PEID_CACHE_SLOTS   16384u /* power of two: 512 KiB per worker */
#define WM_PEID_CACHE_WAYS    2u     /* slots per set, one line */
#define WM_PEID_CACHE_KEY_MAX 24u    /* bytes of a cached peid */

struct wm_peid_cache_slot {
    uint8_t key[WM_PEID_CACHE_KEY_MAX]; /* zero-padded */
    uint32_t id;                        /* WM_PEID_NONE: unknown (cache_unknown only) */
    uint32_t len;                       /* 0 = empty slot (peids are never empty) */
};

struct wm_peid_cache {
    const wm_matcher *owner;
    uint64_t hits, misses, bypassed;    /* bypassed: longer than KEY_MAX, or empty */
    bool cache_unknown;                 /* see above; false after calloc */
    uint8_t pad_[64 - 33];              /* slots start at a 64-byte offset */
    struct wm_peid_cache_slot slot[WM_PEID_CACHE_SLOTS];
};

/* Empties the cache (counters are kept). */
void wm_peid_cache_reset(struct wm_peid_cache *c);

/* The id of peid s[0..len) in m, or WM_PEID_NONE: what
 * wm_matcher_peid_find(m, s, len) returns, from the cache when it can. */
uint32_t wm_peid_cache_find(struct wm_peid_cache *c, const wm_matcher *m, const char *s, size_t len);

#endif
