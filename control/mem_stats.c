/* jemalloc statistics without a link-time dependency: mallctl is declared
 * weak, so a program linked without jemalloc (sanitizer builds, unit
 * tests) sees it NULL and reports no figures instead of failing to link. */
#include "control/mem_stats.h"

#include <stddef.h>
#include <string.h>

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

json_t *wm_mem_stats_json(void)
{
    wm_mem_stats s;
    if (!wm_mem_stats_read(&s)) return json_pack("{s:s}", "allocator", "other");
    return json_pack("{s:s,s:I,s:I,s:I,s:I}", "allocator", "jemalloc", "allocated", (json_int_t)s.allocated, "active",
                     (json_int_t)s.active, "resident", (json_int_t)s.resident, "mapped", (json_int_t)s.mapped);
}
