/* Random MQTT workloads for matcher tests (see matcher_workload.h). */
#include "tests/lib/matcher_workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t wl_next(wl_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t wl_below(wl_rng *r, uint32_t n) { return (uint32_t)(((wl_next(r) >> 32) * (uint64_t)n) >> 32); }

/* Few, short level names so that random filters and topics meet often;
 * "" gives empty levels, "$SYS" the §4.7.2 '$' rule. */
static const char *const vocab[] = { "a", "b", "c", "", "sport", "$SYS" };
#define NVOCAB (sizeof vocab / sizeof vocab[0])

static size_t put(char *buf, size_t cap, size_t k, const char *s)
{
    size_t n = strlen(s);
    if (k + n + 1 < cap) { memcpy(buf + k, s, n); k += n; buf[k] = '\0'; }
    return k;
}

size_t wl_filter(wl_rng *r, char *buf, size_t cap, unsigned shared_pct)
{
    size_t k = 0;
    buf[0] = '\0';
    if (wl_below(r, 100) < shared_pct) {
        char g[32];
        snprintf(g, sizeof g, "$share/g%u/", wl_below(r, 3));
        k = put(buf, cap, k, g);
    }
    size_t start = k;
    unsigned levels = 1 + wl_below(r, 4);
    for (unsigned i = 0; i < levels; i++) {
        if (i) k = put(buf, cap, k, "/");
        unsigned x = wl_below(r, 100);
        if (i == levels - 1 && x < 15) { k = put(buf, cap, k, "#"); break; }
        if (x < 40) k = put(buf, cap, k, "+");
        else k = put(buf, cap, k, vocab[wl_below(r, i == 0 ? NVOCAB : NVOCAB - 1)]);
    }
    if (k == start) k = put(buf, cap, k, "a"); /* no empty filter (§4.7.3) */
    return k;
}

size_t wl_topic(wl_rng *r, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    unsigned levels = 1 + wl_below(r, 5);
    for (unsigned i = 0; i < levels; i++) {
        if (i) k = put(buf, cap, k, "/");
        k = put(buf, cap, k, vocab[wl_below(r, i == 0 ? NVOCAB : NVOCAB - 1)]);
    }
    if (k == 0) k = put(buf, cap, k, "a"); /* topic names are never empty (§4.7.3) */
    return k;
}

long wl_scaled(long normal, long sanitizer_div)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return normal / sanitizer_div;
#else
    if (getenv("WM_TEST_SCALE_DOWN")) return normal / sanitizer_div;
    return normal;
#endif
}
