/* When and how long a proxy worker batches (dataplane/proxy_pace.h): on for
 * loads at or over batch_rate, steady or stop-and-go, waiting in full there;
 * a short wait once the flow is back under the rate after a catch-up burst;
 * never on again because of old windows. */
#include <criterion/criterion.h>

#include "dataplane/proxy_pace.h"

#define MS 1000000ull
#define RATE 75000ull      /* the proxy's default --batch-rate, packets/s */
#define WAIT 1000000ull    /* its default --batch-wait-us, ns */

/* One window of ms milliseconds at pps packets/s. */
static bool win(wm_proxy_pace *p, uint64_t pps, uint64_t ms)
{
    return wm_proxy_pace_window(p, pps * ms / 1000, ms * MS, RATE);
}

Test(proxy_pace, steady_load_under_the_rate_never_batches)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    for (int i = 0; i < 1000; i++) {
        cr_assert_not(win(&p, 74000, 4), "window %d", i);
        cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), 0);
    }
}

Test(proxy_pace, steady_load_over_the_rate_batches_from_the_second_window_in_full)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    cr_assert_not(win(&p, 200000, 4));
    cr_assert(win(&p, 200000, 4));
    for (int i = 0; i < 1000; i++) {
        cr_assert(win(&p, 200000, 4), "window %d", i);
        cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT);
    }
}

/* Saturation through a broker that writes with Nagle, unbatched: 4 ms at full
 * rate, then 12 ms of nothing (README "Adaptive batching"); the mean (50,000/s)
 * is under the rate, the bursts are not. */
Test(proxy_pace, stop_and_go_bursts_turn_batching_on)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    cr_assert_not(win(&p, 200000, 4));
    cr_assert_not(win(&p, 0, 12));
    cr_assert(win(&p, 200000, 4));
    cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT);
}

/* Batching, pauses of the broker (its CPU taken for 20-40 ms) among windows
 * over the rate do not end it; the wake-ups after a pause wait less. */
Test(proxy_pace, pauses_at_saturation_keep_batching)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    for (int i = 0; i < 8; i++) win(&p, 200000, 4);
    cr_assert(p.batching);
    cr_assert(win(&p, 0, 20));
    cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT / 4);
    cr_assert(win(&p, 200000, 4));
    cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT);
    cr_assert(win(&p, 0, 40));
    cr_assert(win(&p, 200000, 4));
}

/* Below saturation (50,000 packets/s, bench-proxy's latency rounds), a peer
 * stops for 20 ms and catches up in two windows: batching starts; the flow is
 * back under the rate at once, so its four last windows wait a quarter (before:
 * in full), and then the two old windows over do not turn it on again (before:
 * at once, for one more window). */
Test(proxy_pace, a_catch_up_below_the_rate)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    for (int i = 0; i < 8; i++) cr_assert_not(win(&p, 50000, 4));
    cr_assert_not(win(&p, 0, 20));
    /* the 1,000 packets of the pause + the window's own 200, in two windows */
    cr_assert_not(wm_proxy_pace_window(&p, 700, 4 * MS, RATE));
    cr_assert(wm_proxy_pace_window(&p, 700, 4 * MS, RATE));
    cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT);
    for (int i = 0; i < 3; i++) {
        cr_assert(win(&p, 50000, 4), "window %d", i);
        cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT / 4, "window %d", i);
    }
    cr_assert_not(win(&p, 50000, 4));
    for (int i = 0; i < 20; i++) cr_assert_not(win(&p, 50000, 4), "window %d", i);
}

/* --batch-rate 0: batching at any rate, from the second window on, never off,
 * always the full wait. */
Test(proxy_pace, rate_zero_always_batches_in_full)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    cr_assert_not(wm_proxy_pace_window(&p, 0, 4 * MS, 0));
    for (int i = 0; i < 100; i++) {
        cr_assert(wm_proxy_pace_window(&p, 0, 400 * MS, 0), "window %d", i);
        cr_assert_eq(wm_proxy_pace_wait_ns(&p, WAIT), WAIT);
    }
}

/* Long windows (a worker idle for an hour) and huge counts do not overflow. */
Test(proxy_pace, no_overflow)
{
    wm_proxy_pace p;
    wm_proxy_pace_init(&p);
    cr_assert_not(wm_proxy_pace_window(&p, 10, 3600ull * 1000 * MS, RATE));
    cr_assert_not(wm_proxy_pace_window(&p, UINT64_MAX / 2, UINT64_MAX / 2, RATE));
    cr_assert(wm_proxy_pace_window(&p, UINT64_MAX, 1, RATE));
}
