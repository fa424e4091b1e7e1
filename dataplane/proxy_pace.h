/* When and how long a proxy worker batches its wake-ups (--batch-rate,
 * --batch-wait-us; README "Adaptive batching"). Batching lets completions
 * gather for a wait before a worker takes them, which cuts its CPU per packet
 * several-fold at high rates and adds up to about twice the wait to every
 * packet's latency, so it must be on where the rate needs it and short
 * everywhere else.
 *
 * The rate is measured over windows (the worker closes one at its first
 * wake-up 4 ms or more after the last, so a window spans at least 4 ms and,
 * after a pause, as long as the pause lasted). The rule:
 * - on when two of the last eight windows were at or over batch_rate (one
 *   burst must not do it; a saturated relay in front of a broker that writes
 *   with Nagle goes stop-and-go without batching, 4 ms at full rate then
 *   8-20 ms of nothing, so its mean rate can be low while its bursts are not);
 *   off after four windows in a row under it; once off, the old windows no
 *   longer count, so turning it on again takes two new windows over (before
 *   2026-12-02 two old ones still in the eight turned it on again at once);
 * - the wait: --batch-wait-us after a window at or over batch_rate, a quarter
 *   of it after a window under. Below saturation, a peer that paused (on a
 *   shared machine, another process holding the CPU for 10-50 ms) sends what
 *   it owes in a burst of a window or two that turns batching on, and the
 *   flow is back under the rate at once: the four windows that end batching
 *   then wait 250 us instead of 1 ms per wake-up (the default wait). Before,
 *   such catch-ups at 50,000 packets/s (`make bench-proxy`'s latency rounds,
 *   2/3 of the default batch_rate) added 1-2 ms to every packet for 16 ms or
 *   more each and put single rounds' p99 at 2-3 ms. At saturation most
 *   windows are over and wait in full. Ending batching at the first window
 *   under (when only two were over) was tried and not kept: at saturation on
 *   a loaded machine the flow stutters (the broker paused for tens of ms),
 *   and batching fell from ~90 % to ~30 % of the wake-ups.
 *
 * Pure, no allocation, no I/O; one worker's state, one thread.
 */
#ifndef WM_DATAPLANE_PROXY_PACE_H
#define WM_DATAPLANE_PROXY_PACE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wm_proxy_pace {
    uint8_t over;          /* last 8 windows, bit 0 the latest: 1 = at or over batch_rate */
    bool batching;
} wm_proxy_pace;

/* Not batching, no history. */
void wm_proxy_pace_init(wm_proxy_pace *p);

/* A window closed: frames MQTT packets (both directions) were framed in
 * dt_ns nanoseconds (> 0). batch_rate: packets/s (0: every window is over
 * it). Returns whether the worker batches from now on (also p->batching). */
bool wm_proxy_pace_window(wm_proxy_pace *p, uint64_t frames, uint64_t dt_ns, uint64_t batch_rate);

/* How long a batching wake-up waits (ns) given the configured batch_wait_ns:
 * 0 when not batching, batch_wait_ns after a window at or over the rate, a
 * quarter of it after one under. */
uint64_t wm_proxy_pace_wait_ns(const wm_proxy_pace *p, uint64_t batch_wait_ns);

#endif
