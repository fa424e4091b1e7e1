/* The data plane's memory plan and its failure texts; see mem_plan.h. */
#include "dataplane/mem_plan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#define MIB (1024.0 * 1024.0)

uint64_t wm_mem_plan_init(struct wm_mem_plan *p, uint32_t n_mbufs, unsigned cache_size, unsigned n_workers,
                          uint64_t worker_bytes, uint64_t reasm_bytes, uint32_t max_flows, uint32_t ooo_blocks,
                          uint32_t frag_max)
{
    struct rte_mempool_objsz sz;
    uint64_t obj = rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 0, &sz);
    /* An object never spans a page boundary (the mempool's default
     * populate for memory not IOVA-contiguous): with --no-huge's 4 KiB
     * pages one 2.3 KiB mbuf takes a whole page. */
    uint64_t pg = p->page_size ? p->page_size : 4096;
    uint64_t per_page = obj <= pg ? pg / obj : 1;
    uint64_t pages = (n_mbufs + per_page - 1) / per_page;
    p->n_mbufs = n_mbufs;
    /* the objects' pages, the pool's header with one cache per lcore, and
     * its ring of n_mbufs pointers */
    p->pool_bytes = pages * (obj <= pg ? pg : obj) + sizeof(struct rte_mempool) +
                    (uint64_t)RTE_MAX_LCORE * sizeof(struct rte_mempool_cache) +
                    (uint64_t)rte_align32pow2(n_mbufs + 1) * sizeof(void *);
    p->n_workers = n_workers;
    p->worker_bytes = worker_bytes;
    p->reasm_bytes = reasm_bytes;
    p->max_flows = max_flows;
    p->ooo_blocks = ooo_blocks;
    p->frag_max = frag_max;
    p->total = p->pool_bytes + (uint64_t)n_workers * (worker_bytes + reasm_bytes);
    return p->total;
}

static int smallest_page(const struct rte_memseg_list *msl, void *arg)
{
    uint64_t *pg = arg;
    if (msl->page_sz && (*pg == 0 || msl->page_sz < *pg)) *pg = msl->page_sz;
    return 0;
}

void wm_mem_plan_eal_state(struct wm_mem_plan *p)
{
    memset(p, 0, sizeof *p);
    for (unsigned s = 0; s < rte_socket_count(); s++) {
        struct rte_malloc_socket_stats st;
        if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(s), &st) != 0) continue;
        p->eal_free_at_start += st.heap_freesz_bytes;
        p->eal_total_at_start += st.heap_totalsz_bytes;
    }
    p->hugepages = rte_eal_has_hugepages() != 0;
    rte_memseg_list_walk(smallest_page, &p->page_size);
}

unsigned wm_mem_plan_suggest_mb(const struct wm_mem_plan *p)
{
    uint64_t used = p->eal_total_at_start > p->eal_free_at_start ? p->eal_total_at_start - p->eal_free_at_start : 0;
    double need = (double)(used + p->total) * 1.25 / MIB;
    unsigned mb = (unsigned)((need + 63.0) / 64.0) * 64;
    return mb < 64 ? 64 : mb;
}

char *wm_mem_plan_explain(const struct wm_mem_plan *p, const char *failed, char *buf, size_t len)
{
    int k = snprintf(buf, len,
                     "not enough DPDK memory: %s.\n"
                     "  This run needs about %.1f MiB of DPDK memory: the mbuf pool %.1f MiB (%u mbufs of %u bytes of data; "
                     "--mbufs), and %u worker%s x %.1f MiB (flow table of --max-flows %u, --ooo-blocks %u out-of-order "
                     "blocks of 2 KiB, MQTT sessions, IPv4 reassembly of --frag-max %u: %.1f MiB).\n",
                     failed, (double)p->total / MIB, (double)p->pool_bytes / MIB, p->n_mbufs,
                     (unsigned)RTE_MBUF_DEFAULT_DATAROOM, p->n_workers, p->n_workers == 1 ? "" : "s",
                     (double)(p->worker_bytes + p->reasm_bytes) / MIB, p->max_flows, p->ooo_blocks, p->frag_max,
                     (double)p->reasm_bytes / MIB);
    if (k < 0 || (size_t)k >= len) return buf;
    size_t off = (size_t)k;
    if (p->hugepages)
        snprintf(buf + off, len - off,
                 "  EAL runs on hugepages and had %.1f MiB of them in its heap at the start; the rest must come from free "
                 "hugepages. Reserve more (/sys/kernel/mm/hugepages/*/nr_hugepages), or run without them: "
                 "--no-huge -m %u (ordinary memory, in MB), or with fewer workers (-l) or lower --max-flows / "
                 "--ooo-blocks / --mbufs.",
                 (double)p->eal_free_at_start / MIB, wm_mem_plan_suggest_mb(p));
    else
        snprintf(buf + off, len - off,
                 "  EAL had %.1f MiB free of %.1f MiB at the start (--no-huge: the -m MB given to EAL, 64 by default). "
                 "Run with -m %u, or with fewer workers (-l) or lower --max-flows / --ooo-blocks / --mbufs.",
                 (double)p->eal_free_at_start / MIB, (double)p->eal_total_at_start / MIB, wm_mem_plan_suggest_mb(p));
    return buf;
}

static unsigned long read_ul(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    unsigned long v = 0;
    if (f) {
        if (fscanf(f, "%lu", &v) != 1) v = 0;
        fclose(f);
    }
    return v;
}

static bool hugetlbfs_mounted(void)
{
    FILE *f = fopen("/proc/mounts", "r");
    if (!f) return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char dev[256], dir[512], type[64];
        if (sscanf(line, "%255s %511s %63s", dev, dir, type) == 3 && strcmp(type, "hugetlbfs") == 0) found = true;
    }
    fclose(f);
    return found;
}

bool wm_hugepages_describe(char *buf, size_t len)
{
    buf[0] = 0;
    char sizes[256] = "";
    size_t off = 0;
    unsigned long free_total = 0;
    DIR *d = opendir("/sys/kernel/mm/hugepages");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        unsigned long kb;
        if (sscanf(e->d_name, "hugepages-%lukB", &kb) != 1) continue;
        unsigned long nr = read_ul(e->d_name, "nr_hugepages"), fr = read_ul(e->d_name, "free_hugepages");
        free_total += fr;
        int k = snprintf(sizes + off, sizeof sizes - off, "%s%lu of %lu %lu kB pages free", off ? ", " : "", fr, nr, kb);
        if (k > 0 && (size_t)k < sizeof sizes - off) off += (size_t)k;
    }
    if (d) closedir(d);
    bool mounted = hugetlbfs_mounted();
    if (free_total > 0 && mounted) return false;
    snprintf(buf, len,
             "EAL found no usable hugepages (%s; hugetlbfs %s) and DPDK takes its memory from hugepages unless told "
             "otherwise.\n"
             "  Run without hugepages: add --no-huge to the EAL options (before --); EAL then takes -m MB of ordinary "
             "memory, 64 by default, enough for one worker with the default options (more workers, --max-flows or "
             "--ooo-blocks need more: a start that does not fit says which -m would). Or reserve hugepages "
             "(/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages) and mount hugetlbfs.",
             off ? sizes : "the kernel reports no hugepage sizes", mounted ? "mounted" : "not mounted");
    return true;
}
