/* Batching on and off, and its wait, by the rate of a worker's windows
 * (proxy_pace.h). */
#include "dataplane/proxy_pace.h"

#include <string.h>

void wm_proxy_pace_init(wm_proxy_pace *p)
{
    memset(p, 0, sizeof *p);
}

/* frames / ns >= rate per second (128-bit products: no overflow). */
static bool at_rate(uint64_t frames, uint64_t ns, uint64_t rate)
{
    return (unsigned __int128)frames * 1000000000u >= (unsigned __int128)rate * ns;
}

bool wm_proxy_pace_window(wm_proxy_pace *p, uint64_t frames, uint64_t dt_ns, uint64_t batch_rate)
{
    p->over = (uint8_t)(p->over << 1 | at_rate(frames, dt_ns, batch_rate));
    if (!p->batching) {
        p->batching = __builtin_popcount(p->over) >= 2;
    } else if ((p->over & 0x0F) == 0) {
        p->batching = false;
        p->over = 0;   /* on again only on new evidence */
    }
    return p->batching;
}

uint64_t wm_proxy_pace_wait_ns(const wm_proxy_pace *p, uint64_t batch_wait_ns)
{
    if (!p->batching) return 0;
    return (p->over & 1) ? batch_wait_ns : batch_wait_ns / 4;
}
