/* The data plane's peid id cache (dataplane/peid_cache.h) against the
 * matcher it fronts: every answer equals wm_matcher_peid_find, through
 * hits, slot collisions, unknown and over-long peids, and a change of
 * matcher. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/peid_cache.h"

#define N_KNOWN 20000u

static wm_matcher *new_matcher(unsigned n, const char *fmt)
{
    wm_matcher_config cfg = {0};
    cfg.max_peids = 1u << 16;
    wm_matcher *m = wm_matcher_new(&cfg);
    cr_assert_not_null(m);
    char s[64];
    for (unsigned i = 0; i < n; i++) {
        snprintf(s, sizeof s, fmt, i);
        uint32_t id;
        cr_assert_eq(wm_matcher_peid_intern(m, s, strlen(s), &id), WM_MATCHER_OK);
    }
    return m;
}

/* Looks s up through the cache and checks it against the matcher. */
static uint32_t check(struct wm_peid_cache *c, wm_matcher *m, const char *s)
{
    uint32_t want = wm_matcher_peid_find(m, s, strlen(s));
    uint32_t got = wm_peid_cache_find(c, m, s, strlen(s));
    cr_assert_eq(got, want, "peid \"%s\": cache %u, matcher %u", s, got, want);
    return got;
}

Test(peid_cache, equals_the_matcher_on_a_zipf_like_stream)
{
    wm_matcher *m = new_matcher(N_KNOWN, "road-%u");
    struct wm_peid_cache *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    srand(7);
    char s[64];
    /* Many more distinct peids than slots, so slots are overwritten;
     * a skewed draw so that some are hits; 1 in 8 unknown. */
    for (unsigned k = 0; k < 200000; k++) {
        unsigned r = (unsigned)rand();
        unsigned i = (r % 8 == 0) ? N_KNOWN + r % 5000 : (unsigned)((uint64_t)(r % 1000) * (r % 1000) * (r % 1000) / 50000u);
        snprintf(s, sizeof s, "road-%u", i);
        check(c, m, s);
    }
    cr_assert_gt(c->hits, 100000u, "hits %llu", (unsigned long long)c->hits);
    cr_assert_gt(c->misses, 1000u);
    wm_matcher_free(m);
    free(c);
}

Test(peid_cache, unknown_peids_are_not_cached)
{
    wm_matcher *m = new_matcher(10, "p%u");
    struct wm_peid_cache *c = calloc(1, sizeof *c);
    cr_assert_eq(check(c, m, "nowhere"), WM_PEID_NONE);
    cr_assert_eq(check(c, m, "nowhere"), WM_PEID_NONE);
    cr_assert_eq(c->hits, 0u);
    /* Interned later: found, not a stale "unknown". */
    uint32_t id;
    cr_assert_eq(wm_matcher_peid_intern(m, "nowhere", 7, &id), WM_MATCHER_OK);
    cr_assert_eq(check(c, m, "nowhere"), id);
    cr_assert_eq(check(c, m, "nowhere"), id);
    cr_assert_eq(c->hits, 1u);
    wm_matcher_free(m);
    free(c);
}

Test(peid_cache, lengths_and_prefixes_are_told_apart)
{
    wm_matcher *m = new_matcher(0, "");
    struct wm_peid_cache *c = calloc(1, sizeof *c);
    /* Peids that are prefixes of each other, with zero bytes (the slot's
     * padding) inside, at and beyond the inline width. */
    static const struct { const char *s; size_t n; } keys[] = {
        {"a", 1}, {"a\0", 2}, {"a\0\0", 3}, {"ab", 2}, {"abcdefghijklmnopqrstuvw", 23},
        {"abcdefghijklmnopqrstuvwx", 24}, {"abcdefghijklmnopqrstuvwxy", 25}, {"\0", 1},
    };
    uint32_t ids[8];
    for (unsigned i = 0; i < 8; i++)
        cr_assert_eq(wm_matcher_peid_intern(m, keys[i].s, keys[i].n, &ids[i]), WM_MATCHER_OK);
    for (unsigned round = 0; round < 3; round++)
        for (unsigned i = 0; i < 8; i++)
            cr_assert_eq(wm_peid_cache_find(c, m, keys[i].s, keys[i].n), ids[i], "key %u round %u", i, round);
    cr_assert_eq(wm_peid_cache_find(c, m, "abcdefghijklmnopqrstuvwxyz", 26), WM_PEID_NONE);
    cr_assert_eq(wm_peid_cache_find(c, m, "", 0), WM_PEID_NONE);
    cr_assert_geq(c->bypassed, 5u); /* the 25-byte key thrice, 26 bytes, empty */
    wm_matcher_free(m);
    free(c);
}

Test(peid_cache, another_matcher_empties_it)
{
    /* Same strings, different ids: the second matcher interned them in reverse. */
    wm_matcher *a = new_matcher(100, "x%u");
    wm_matcher_config cfg = {0};
    wm_matcher *b = wm_matcher_new(&cfg);
    char s[16];
    for (int i = 99; i >= 0; i--) {
        snprintf(s, sizeof s, "x%d", i);
        uint32_t id;
        cr_assert_eq(wm_matcher_peid_intern(b, s, strlen(s), &id), WM_MATCHER_OK);
    }
    struct wm_peid_cache *c = calloc(1, sizeof *c);
    for (int round = 0; round < 2; round++)
        for (unsigned i = 0; i < 100; i++) {
            snprintf(s, sizeof s, "x%u", i);
            check(c, a, s);
            check(c, b, s);
        }
    wm_peid_cache_reset(c);
    check(c, b, "x5");
    wm_matcher_free(a);
    wm_matcher_free(b);
    free(c);
}

Test(peid_cache, cache_unknown_answers_unknown_peids_from_the_cache)
{
    wm_matcher *m = new_matcher(10, "p%u");
    struct wm_peid_cache *c = calloc(1, sizeof *c);
    c->cache_unknown = true;
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(check(c, m, "nowhere"), WM_PEID_NONE);
        cr_assert_eq(check(c, m, "p3"), wm_matcher_peid_find(m, "p3", 2));
    }
    cr_assert_eq(c->misses, 2u, "misses %llu", (unsigned long long)c->misses);
    cr_assert_eq(c->hits, 4u);
    /* A slot holding an unknown peid is still told apart from its neighbours. */
    cr_assert_eq(wm_peid_cache_find(c, m, "nowhere2", 8), WM_PEID_NONE);
    cr_assert_eq(wm_peid_cache_find(c, m, "p1", 2), wm_matcher_peid_find(m, "p1", 2));
    wm_matcher_free(m);
    free(c);
}
