/* The peids of a spatial publish; see peid_props.h. */
#include "control/peid_props.h"

#include <string.h>

uint32_t wm_peids_collect(const wm_mqtt5_props *pr, wm_mqtt5_bytes out[WM_PEIDS_MAX])
{
    uint32_t n = 0;
    size_t pos = 0;
    wm_mqtt5_pair up;
    while (wm_mqtt5_user_prop_next(pr, &pos, &up)) {
        if (up.key.len != 4 || memcmp(up.key.p, "peid", 4) != 0 || up.value.len == 0) continue;
        if (!wm_peids_fit(n + 1)) return WM_PEIDS_TOO_MANY;
        out[n++] = up.value;
    }
    return n;
}
