/* What a run of build/wirematch needs from DPDK's memory, what EAL has, and
 * how to run when it is not enough: the text of every memory failure of the
 * data plane's start.
 *
 * Why: the data plane takes all its memory at the start from EAL (the mbuf
 * pool, then each worker's flow table, out-of-order blocks, MQTT sessions and
 * reassembly table), and EAL has either hugepages or, with --no-huge, the -m
 * MB of ordinary memory it was given (64 by default). A failure used to say
 * "Cannot allocate memory (raise EAL -m)" for whichever allocation came
 * first, with no figure: with one worker the defaults fit in 64 MB, with two
 * they do not, and without hugepages EAL itself failed with "Cannot get
 * hugepage information ... Permission denied". The plan adds up the run's
 * parts from the same sizes the allocations use (worker.h
 * wm_worker_memsize, ip_reasm.h wm_ip_reasm_memsize, the mbuf pool's object
 * size), so the message can say what was needed, what was free and which
 * -m would do.
 *
 * Thread safety: the plan is plain data; wm_mem_plan_eal_free and
 * wm_mem_plan_explain read EAL's heap statistics (after rte_eal_init);
 * wm_hugepages_describe reads sysfs and /proc/mounts (any time). */
#ifndef WM_DATAPLANE_MEM_PLAN_H
#define WM_DATAPLANE_MEM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wm_mem_plan {
    uint32_t n_mbufs;        /* the mbuf pool's size */
    uint64_t pool_bytes;     /* ... in bytes (objects, headers, per-lcore caches) */
    unsigned n_workers;
    uint64_t worker_bytes;   /* one worker: wm_worker_memsize */
    uint64_t reasm_bytes;    /* one worker's IPv4 reassembly table (0: --frag-max 0) */
    uint32_t max_flows, ooo_blocks, frag_max; /* the options behind worker_bytes, for the text */
    uint64_t total;          /* pool + n_workers * (worker + reasm) */
    uint64_t eal_free_at_start; /* EAL's free heap bytes before the run allocated anything */
    uint64_t eal_total_at_start; /* ... and its heap size then */
    bool hugepages;          /* EAL runs on hugepages (not --no-huge) */
    uint64_t page_size;      /* EAL's (smallest) page size: 4 KiB with --no-huge */
};

/* Fills the run's fields of p (after wm_mem_plan_eal_state, whose page
 * size it uses) and returns p->total. The pool's objects are the mbuf
 * pool's (RTE_MBUF_DEFAULT_BUF_SIZE data room, no private area), one per
 * page at most where a page holds fewer (4 KiB pages); cache_size is its
 * per-lcore cache. */
uint64_t wm_mem_plan_init(struct wm_mem_plan *p, uint32_t n_mbufs, unsigned cache_size, unsigned n_workers,
                          uint64_t worker_bytes, uint64_t reasm_bytes, uint32_t max_flows, uint32_t ooo_blocks,
                          uint32_t frag_max);

/* Clears p and records EAL's heap (all sockets) and page size now, before
 * the run allocates: call right after rte_eal_init. */
void wm_mem_plan_eal_state(struct wm_mem_plan *p);

/* The -m (MB) that fits the plan with --no-huge: what EAL used itself at
 * the start plus the plan, a quarter more for the heap's own overhead and
 * fragmentation, rounded up to 64 MB. */
unsigned wm_mem_plan_suggest_mb(const struct wm_mem_plan *p);

/* The text of a memory failure: what failed (failed, e.g. "cannot create
 * the mbuf pool"), the plan's figures, EAL's free memory at the start, and
 * how to run (-m, or hugepages, or smaller options), into buf[0..len).
 * Returns buf. */
char *wm_mem_plan_explain(const struct wm_mem_plan *p, const char *failed, char *buf, size_t len);

/* After rte_eal_init failed on a run without --no-huge: if the machine has
 * no usable hugepages, writes why and how to run without them into
 * buf[0..len) and returns true; false (buf "") when hugepages look usable,
 * so EAL's own message is the better one. Reads
 * /sys/kernel/mm/hugepages and /proc/mounts. */
bool wm_hugepages_describe(char *buf, size_t len);

#endif
