/* --mem-cap BYTES for every tool that decodes EXI (see exi_mem_cap.h). */
#include "control/exi_mem_cap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int wm_exi_mem_cap_parse(const char *s, size_t *out, char *why, size_t cap)
{
    char *end;
    errno = 0;
    /* strtoull takes a sign (and wraps "-1"): digits only */
    unsigned long long b = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
    if (!s || *s < '0' || *s > '9' || errno || *end || b < WM_EXI_MEM_CAP_MIN || b > WM_EXI_MEM_CAP_MAX) {
        snprintf(why, cap, "--mem-cap takes bytes from %llu to %llu, not '%s'", (unsigned long long)WM_EXI_MEM_CAP_MIN,
                 (unsigned long long)WM_EXI_MEM_CAP_MAX, s ? s : "");
        return -1;
    }
    *out = (size_t)b;
    return 0;
}
