/* Random MQTT workloads for the matcher's tests: topic filters with '+',
 * '#', '$' levels, empty levels and $share groups; topic names over the same
 * small level vocabulary (so that matches are frequent); neighborhoods as
 * random peid sets. Deterministic for a given seed. Not thread safe (each
 * thread keeps its own wl_rng). */
#ifndef WM_TESTS_MATCHER_WORKLOAD_H
#define WM_TESTS_MATCHER_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct wl_rng { uint64_t s; } wl_rng;

/* splitmix64 */
uint64_t wl_next(wl_rng *r);
/* Uniform in [0, n). */
uint32_t wl_below(wl_rng *r, uint32_t n);
/* Writes a random valid topic filter into buf (NUL-terminated); shared_pct
 * percent of them are "$share/gN/...". Returns its length. */
size_t wl_filter(wl_rng *r, char *buf, size_t cap, unsigned shared_pct);
/* Writes a random valid topic name into buf. Returns its length. */
size_t wl_topic(wl_rng *r, char *buf, size_t cap);
/* Number of runs to do: normal value, divided by `sanitizer_div` under
 * ASan/TSan or when WM_TEST_SCALE_DOWN is set in the environment. */
long wl_scaled(long normal, long sanitizer_div);

#endif
