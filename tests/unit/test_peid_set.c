/* The matcher's stored neighborhood sets (matcher/peid_set.h, internal):
 * listing a set gives back exactly the peids it was made of, for every
 * packing of the block numbers (one block, and spans needing 4, 8 and 16
 * bits), in pieces of any size; de-duplication keeps exactly the distinct
 * ids. Checked against sorted reference copies on random inputs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/peid_set.h"

static uint64_t rng_state = 12345;
static uint32_t below(uint32_t n)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((((z ^ (z >> 31)) >> 32) * n) >> 32);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted distinct copy of a[0..n); returns its length. */
static size_t reference(const uint32_t *a, size_t n, uint32_t *out)
{
    memcpy(out, a, n * sizeof *a);
    qsort(out, n, sizeof *out, cmp_u32);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || out[i] != out[k - 1]) out[k++] = out[i];
    return k;
}

/* Up to n ids drawn from [base, base + span), in random order; without
 * dups the repeats are dropped. Returns how many. */
static size_t gen(uint32_t *a, size_t n, uint32_t base, uint32_t span, bool dups)
{
    for (size_t i = 0; i < n; i++) a[i] = base + below(span);
    if (dups) return n;
    uint32_t *r = malloc((n + 1) * sizeof *r);
    n = reference(a, n, r);
    memcpy(a, r, n * sizeof *r);
    free(r);
    for (size_t i = n; i > 1; i--) {
        size_t j = below((uint32_t)i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
    return n;
}

Test(peid_set, lists_back_what_it_holds_for_every_packing)
{
    /* spans: one block; < 16 blocks (4 bits); < 256 (8 bits); up to 2^28 (16 bits) */
    static const uint32_t spans[] = { 1000, 60000, 65536, 200000, 1u << 20, 5u << 20, 250u << 16, (1u << 28) - 70000 };
    static const uint32_t bases[] = { 0, 1, 65535, 123456, 70000 };
    uint32_t *a = malloc(5000 * sizeof *a), *ref = malloc(5000 * sizeof *ref), *got = malloc(5000 * sizeof *got);
    for (size_t s = 0; s < sizeof spans / sizeof *spans; s++)
        for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
            for (size_t n = 0; n < 5000; n = n < 4 ? n + 1 : n * 3) {
                uint32_t span = spans[s];
                if (bases[b] + span > (1u << 28)) span = (1u << 28) - bases[b];
                size_t m = gen(a, n, bases[b], span, false);
                reference(a, m, ref);
                wm_peid_set *set = wm_peid_set_new(a, m);
                cr_assert_not_null(set);
                /* in pieces of 1..300 */
                size_t cur = 0, k = 0, piece = 1 + below(300);
                for (size_t got_n; (got_n = wm_peid_set_next(set, &cur, got + k, piece)) != 0; k += got_n)
                    cr_assert_leq(got_n, piece);
                cr_assert_eq(k, m, "span %u base %u n %zu: listed %zu of %zu", span, bases[b], n, k, m);
                qsort(got, k, sizeof *got, cmp_u32);
                cr_assert_arr_eq(got, ref, m * sizeof *ref, "span %u base %u n %zu", span, bases[b], n);
                free(set);
            }
    free(a); free(ref); free(got);
}

Test(peid_set, unique_keeps_exactly_the_distinct_ids)
{
    static const uint32_t spans[] = { 10, 3000, 65536, 300000, 1u << 24 };
    size_t cap = 6000;
    uint32_t *a = malloc(cap * sizeof *a), *ref = malloc(cap * sizeof *ref);
    uint32_t *tmp = malloc(wm_peid_unique_scratch(cap) * sizeof *tmp);
    uint64_t *bits = calloc(1024, sizeof *bits);
    for (size_t s = 0; s < sizeof spans / sizeof *spans; s++)
        for (size_t n = 0; n < cap; n = n * 2 + 1) {
            gen(a, n, 7 * (uint32_t)s, spans[s], true);
            size_t m = reference(a, n, ref);
            size_t k = wm_peid_unique(a, n, tmp, bits);
            cr_assert_eq(k, m, "span %u n %zu", spans[s], n);
            qsort(a, k, sizeof *a, cmp_u32);
            cr_assert_arr_eq(a, ref, m * sizeof *ref, "span %u n %zu", spans[s], n);
            for (size_t w = 0; w < 1024; w++) cr_assert_eq(bits[w], 0, "bitset left zeroed");
        }
    free(a); free(ref); free(tmp); free(bits);
}
