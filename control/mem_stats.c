/* jemalloc statistics without a link-time dependency: mallctl is declared
 * weak, so a program linked without jemalloc (sanitizer builds, unit
 * tests) sees it NULL and reports no figures instead of failing to link. */
#include "control/mem_stats.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

static bool stat_u64(const char *name, uint64_t *out)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0 || len != sizeof v) return false;
    *out = v;
    return true;
}

bool wm_mem_stats_read(wm_mem_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!mallctl) return false;
    /* the stats are a snapshot taken at the last epoch: advance it first */
    uint64_t epoch = 1;
    size_t elen = sizeof epoch;
    if (mallctl("epoch", &epoch, &elen, &epoch, sizeof epoch) != 0) return false;
    wm_mem_stats t = { .jemalloc = true };
    if (!stat_u64("stats.allocated", &t.allocated) || !stat_u64("stats.active", &t.active) ||
        !stat_u64("stats.resident", &t.resident) || !stat_u64("stats.mapped", &t.mapped))
        return false;
    *s = t;
    return true;
}

void wm_mem_stats_process(uint64_t *rss, uint64_t *peak_rss)
{
    *rss = *peak_rss = 0;
    unsigned long long size, resident;
    FILE *f = fopen("/proc/self/statm", "re");
    long page = sysconf(_SC_PAGESIZE);
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0) *rss = resident * (uint64_t)page;
        fclose(f);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0) *peak_rss = (uint64_t)ru.ru_maxrss * 1024;   /* KiB */
}

json_t *wm_mem_stats_json(void)
{
    wm_mem_stats s;
    uint64_t rss, peak;
    wm_mem_stats_process(&rss, &peak);
    if (!wm_mem_stats_read(&s))
        return json_pack("{s:s,s:I,s:I}", "allocator", "other", "process_rss", (json_int_t)rss, "process_peak_rss",
                         (json_int_t)peak);
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "allocator", "jemalloc", "allocated", (json_int_t)s.allocated,
                     "active", (json_int_t)s.active, "resident", (json_int_t)s.resident, "mapped", (json_int_t)s.mapped,
                     "process_rss", (json_int_t)rss, "process_peak_rss", (json_int_t)peak);
}
