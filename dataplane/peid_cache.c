/* Per-worker peid id cache; see peid_cache.h. */
#include "dataplane/peid_cache.h"

#include <string.h>

#include <rte_hash_crc.h>

void wm_peid_cache_reset(struct wm_peid_cache *c)
{
    memset(c->slot, 0, sizeof c->slot);
    c->owner = NULL;
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
     * a word-wise compare, no length-dependent loop. */
    uint64_t k[WM_PEID_CACHE_KEY_MAX / 8] = {0};
    memcpy(k, s, len);
    uint32_t h = rte_hash_crc(k, sizeof k, (uint32_t)len);
    struct wm_peid_cache_slot *e = &c->slot[h & (WM_PEID_CACHE_SLOTS - 1)];
    uint64_t have[WM_PEID_CACHE_KEY_MAX / 8], diff = e->len ^ (uint32_t)len;
    memcpy(have, e->key, sizeof have);
    for (unsigned i = 0; i < WM_PEID_CACHE_KEY_MAX / 8; i++) diff |= have[i] ^ k[i];
    if (diff == 0) {
        c->hits++;
        return e->id;
    }
    c->misses++;
    uint32_t id = wm_matcher_peid_find(m, s, len);
    if (id != WM_PEID_NONE || c->cache_unknown) {
        memcpy(e->key, k, sizeof k);
        e->len = (uint32_t)len;
        e->id = id;
    }
    return id;
}
