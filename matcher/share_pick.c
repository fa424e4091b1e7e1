/* Shared-subscription member picking (see share_pick.h). */
#include "matcher/share_pick.h"

#include "matcher/intern.h"

uint32_t wm_share_pick_rr(uint32_t *cursor, uint32_t count)
{
    if (count == 0) return UINT32_MAX;
    uint32_t i = *cursor % count;
    *cursor = i + 1;
    return i;
}

uint32_t wm_share_pick_hash(const char *publisher, size_t publisher_len, const uint32_t *members, uint32_t count)
{
    if (count == 0) return UINT32_MAX;
    uint64_t ph = wm_hash_bytes(0, publisher ? publisher : "", publisher ? publisher_len : 0);
    uint32_t best = 0;
    uint64_t best_w = 0;
    for (uint32_t i = 0; i < count; i++) {
        /* Weight depends only on (publisher, member), not on position. */
        uint64_t w = wm_hash_mix(ph ^ members[i], 0x9FB21C651E98DF25ull) ^ ph;
        if (i == 0 || w > best_w) { best = i; best_w = w; }
    }
    return best;
}
