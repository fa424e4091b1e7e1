/* Heap figures of the process for summaries and telemetry (the memory an
 * operator watches grow with sessions, records and filter tables): from
 * jemalloc's statistics (mallctl "stats.*", refreshed through "epoch")
 * when the program runs on jemalloc, which the Makefile links into every
 * program outside the data plane's DPDK memory (not into sanitizer
 * builds, which bring their own allocator). */
#ifndef WM_CONTROL_MEM_STATS_H
#define WM_CONTROL_MEM_STATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct wm_mem_stats {
    bool jemalloc;          /* false: the figures below are 0 (another allocator) */
    uint64_t allocated;     /* bytes the program holds in live allocations */
    uint64_t active;        /* bytes in pages with live allocations (>= allocated) */
    uint64_t resident;      /* bytes of allocator memory resident in RAM (metadata included) */
    uint64_t mapped;        /* bytes the allocator has mapped */
} wm_mem_stats;

/* Fills *s with the allocator's current figures (bytes). Returns true when
 * they come from jemalloc; false (s zeroed, s->jemalloc false) when the
 * program runs on another allocator or a statistic cannot be read.
 * Thread safe (jemalloc serialises its epoch refresh); costs a few
 * microseconds: for summaries and telemetry, not per packet. */
bool wm_mem_stats_read(wm_mem_stats *s);

/* The process's own figures, from the kernel rather than the allocator:
 * its resident set now (/proc/self/statm, pages x page size; what `ps` and
 * VmRSS show: every touched page, the allocator's, mmaps, stacks and
 * libraries) and its peak (getrusage ru_maxrss). jemalloc's "resident" is
 * no measure of it: jemalloc documents it as an upper bound that counts
 * pages of its mappings never touched (REVIEW14 finding 6: 248 MB "resident"
 * for a process of 13 MB). Bytes; 0 where the kernel does not say (no
 * /proc). Thread safe. */
void wm_mem_stats_process(uint64_t *rss, uint64_t *peak_rss);

/* The summaries' "memory" object for the figures read now:
 * {"allocator": "jemalloc"|"other", "allocated", "active", "resident",
 * "mapped" (jemalloc's, bytes; absent on another allocator),
 * "process_rss", "process_peak_rss" (wm_mem_stats_process, bytes, always)}.
 * A new reference the caller owns; NULL when out of memory. Thread safe. */
json_t *wm_mem_stats_json(void);

#endif
