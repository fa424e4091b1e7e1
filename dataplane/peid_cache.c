/* Per-worker peid id cache; see peid_cache.h. */
#include "dataplane/peid_cache.h"

#include <stddef.h>
#include <string.h>

#include <rte_hash_crc.h>

void wm_peid_cache_reset(struct wm_peid_cache *c)
{
    memset(c->slot, 0, sizeof c->slot);
    c->owner = NULL;
}

_Static_assert(offsetof(struct wm_peid_cache, slot) % 64 == 0 && sizeof(struct wm_peid_cache_slot) == 32,
               "a set's two slots share one line");

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Slot e holds key k (zero-padded) of len bytes. */
static inline bool slot_is(const struct wm_peid_cache_slot *e, const uint64_t *k, size_t len)
{
    uint64_t diff = e->len ^ (uint32_t)len;
    for (unsigned i = 0; i < WM_PEID_CACHE_KEY_MAX / 8; i++) diff |= ld64(e->key + 8 * i) ^ k[i];
    return diff == 0;
}

uint32_t wm_peid_cache_find(struct wm_peid_cache *c, const wm_matcher *m, const char *s, size_t len)
{
    if (len == 0 || len > WM_PEID_CACHE_KEY_MAX) {
        c->bypassed++;
        return wm_matcher_peid_find(m, s, len);
    }
    if (c->owner != m) {
        wm_peid_cache_reset(c);
        c->owner = m;
    }
    /* The key zero-padded to the slot's width: one CRC over fixed words and
     * word-wise compares, no length-dependent loop. */
    uint64_t k[WM_PEID_CACHE_KEY_MAX / 8] = {0};
    memcpy(k, s, len);
    uint32_t h = rte_hash_crc(k, sizeof k, (uint32_t)len);
    struct wm_peid_cache_slot *set = &c->slot[(h & (WM_PEID_CACHE_SLOTS / WM_PEID_CACHE_WAYS - 1)) * WM_PEID_CACHE_WAYS];
    _Static_assert(WM_PEID_CACHE_WAYS == 2, "the replacement below is for two ways");
    if (slot_is(&set[0], k, len)) {
        c->hits++;
        return set[0].id;
    }
    if (slot_is(&set[1], k, len)) {
        c->hits++;
        struct wm_peid_cache_slot e = set[1]; /* most recently used first */
        set[1] = set[0];
        set[0] = e;
        return e.id;
    }
    c->misses++;
    uint32_t id = wm_matcher_peid_find(m, s, len);
    if (id != WM_PEID_NONE || c->cache_unknown) {
        set[1] = set[0]; /* the least recently used way goes */
        memcpy(set[0].key, k, sizeof k);
        set[0].len = (uint32_t)len;
        set[0].id = id;
    }
    return id;
}
