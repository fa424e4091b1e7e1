/* The data plane's control thread; see reload_ctl.h. */
#include "dataplane/reload_ctl.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <rte_lcore.h>

#define CTL_PERIOD_MS 50u /* housekeeping, and the longest sleep between looks at the flags */

static pthread_t ctl_tid;
static volatile int ctl_reload_wanted, ctl_stop, ctl_running;

static void reload_now(struct wm_match_table *t)
{
    wm_load_error err;
    if (wm_match_table_reload(t, &err) != 0) {
        char text[WM_LOAD_ERROR_TEXT_MAX];
        fprintf(stderr, "wirematch: reload refused, the running tables stay: %s\n",
                wm_load_error_format(&err, text, sizeof text));
        return;
    }
    struct wm_match_counters c;
    wm_match_table_counters(t, &c);
    fprintf(stderr, "wirematch: reload: generation %" PRIu64 " (nbhds %" PRIu64 ", preloaded subs %" PRIu64
                    ", learned subs %" PRIu64 ", dropped %" PRIu64 ")\n",
            c.generation, c.nbhds, c.subs_preloaded, c.subs_live, c.reload_subs_dropped);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *ctl_main(void *arg)
{
    struct wm_match_table *t = arg;
    uint64_t last_hk = 0;
    while (!__atomic_load_n(&ctl_stop, __ATOMIC_ACQUIRE)) {
        if (__atomic_exchange_n(&ctl_reload_wanted, 0, __ATOMIC_ACQ_REL)) reload_now(t);
        /* content filters first: a worker's new filter waits for this */
        int rc = wm_match_table_compile(t);
        uint64_t now = now_ms();
        if (now - last_hk >= CTL_PERIOD_MS) {
            wm_match_table_housekeeping(t);
            last_hk = now;
        }
        /* after a compile, look again at once: filters that came during it
         * are compiled together by the next one */
        if (rc != 1) wm_match_table_wait_work(t, CTL_PERIOD_MS);
    }
    return NULL;
}

int wm_reload_ctl_start(struct wm_match_table *t)
{
    ctl_stop = 0;
    int rc = rte_ctrl_thread_create(&ctl_tid, "wm-reload", NULL, ctl_main, t);
    if (rc == 0) ctl_running = 1;
    return rc;
}

void wm_reload_ctl_request(void) { __atomic_store_n(&ctl_reload_wanted, 1, __ATOMIC_RELEASE); }

void wm_reload_ctl_stop(void)
{
    if (!ctl_running) return;
    __atomic_store_n(&ctl_stop, 1, __ATOMIC_RELEASE);
    pthread_join(ctl_tid, NULL);
    ctl_running = 0;
}
