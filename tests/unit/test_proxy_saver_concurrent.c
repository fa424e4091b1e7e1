/* The --state saver's thread (dataplane/proxy_saver.h): a hand-out that
 * waits for a reservation is saved and woken without the main thread, and a
 * save the disk holds neither blocks the caller of the stop beyond its bound
 * nor lets a reservation be used before it lands. The disk is made to hang
 * by interposing fsync(2), which the saver calls for FILE.tmp and its
 * directory. Also run under TSan (`make test TSAN=1 TEST_FILTER=concurrent`):
 * Criterion's runner cannot start there (its sandbox arena lands in TSan's
 * reserved ranges, tests/lib/concurrent_check.h; the interposed fsync plays
 * no part), so the TSan build runs both cases from its own main(), one after
 * the other in one process (the second leaves g_hold false again). */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_saver.h"
#include "dataplane/proxy_state.h"
#include "tests/lib/concurrent_check.h"

#define CID(s) (const uint8_t *)(s), (uint32_t)strlen(s)

static atomic_bool g_hold, g_in;

/* Overrides libc's for this executable: blocks while g_hold is set. */
int fsync(int fd)
{
    const struct timespec d = { 0, 5000000 };
    if (atomic_load(&g_hold)) atomic_store(&g_in, true);
    while (atomic_load(&g_hold)) nanosleep(&d, NULL);
    return (int)syscall(SYS_fsync, fd);
}

static void none(void *ctx, const wm_proxy_saved_sub *r) { (void)ctx; (void)r; }

static void woken(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

typedef struct fixture {
    char dir[64], path[96];
    wm_proxy_registry *g;
    wm_proxy_state_saver sv;
    wm_proxy_saver s;
    atomic_int wakes;
    uint64_t d;               /* session "d", attached */
} fixture;

/* A registry saved to a fresh directory by a saver thread that wakes
 * "workers" by counting; session "d" asks for an identifier and is told to
 * wait for a save (the registry made urgent: the thread kicked). hold: the
 * disk hangs from then on (after the start's own save). */
static void start(fixture *x, bool hold)
{
    snprintf(x->dir, sizeof x->dir, "/tmp/wm-saver-th.XXXXXX");
    CHECK(mkdtemp(x->dir) != NULL, "mkdtemp %s", x->dir);
    snprintf(x->path, sizeof x->path, "%s/s.state", x->dir);
    x->g = wm_proxy_registry_new(NULL, 16, 8);
    char err[512];
    CHECK(wm_proxy_state_start(&x->sv, x->path, 7, x->g, err, sizeof err) == 0, "%s", err);
    (void)wm_proxy_registry_sid_wake(x->g);   /* (the start's save: seen, nobody waited) */
    atomic_store(&x->wakes, 0);
    CHECK(wm_proxy_saver_start(&x->s, &x->sv, woken, &x->wakes) == 0, "saver start");
    wm_proxy_registry_on_urgent(x->g, wm_proxy_saver_kick, &x->s);
    atomic_store(&g_hold, hold);
    x->d = wm_proxy_registry_session_attach(x->g, NULL, CID("d"), true, true, none, NULL).gen;
    uint32_t sid = 0;
    CHECK(wm_proxy_registry_session_sid(x->g, NULL, CID("d"), x->d, 0, &sid) == WM_PROXY_SID_WAIT, "d waits");
}

/* After the saver stopped (or ended, detached). */
static void finish(fixture *x)
{
    wm_proxy_registry_on_urgent(x->g, NULL, NULL);
    wm_proxy_state_stop(&x->sv);
    wm_proxy_registry_free(x->g);
    unlink(x->path);
    rmdir(x->dir);
}

static void a_waiting_hand_out_is_saved_and_woken_by_the_thread(void)
{
    static fixture x;
    start(&x, false);
    uint32_t sid = 0;
    uint64_t t0 = mono_ms();
    while (atomic_load(&x.wakes) == 0 && mono_ms() - t0 < 10000) usleep(2000);
    CHECK(atomic_load(&x.wakes) == 1, "the workers woken once the reservation landed");
    CHECK(wm_proxy_registry_session_sid(x.g, NULL, CID("d"), x.d, 0, &sid) == WM_PROXY_SID_OK, "d handed out");
    CHECK(sid == WM_PROXY_SID_BASE, "sid %u", sid);
    wm_proxy_registry_session_detach(x.g, NULL, CID("d"), x.d, UINT64_MAX);
    CHECK(wm_proxy_saver_stop(&x.s, true, WM_PROXY_SAVER_STOP_NS) == 0, "stop");
    FILE *f = fopen(x.path, "r");
    char line[256];
    bool clean = false;
    while (f && fgets(line, sizeof line, f)) clean |= !strcmp(line, "clean 1\n");
    if (f) fclose(f);
    CHECK(clean, "the stop's save is clean");
    finish(&x);
}

static void a_save_the_disk_holds_keeps_reservations_waiting_and_the_stop_bounded(void)
{
    static fixture x;
    start(&x, true);
    uint32_t sid = 0;
    uint64_t t0 = mono_ms();
    while (!atomic_load(&g_in) && mono_ms() - t0 < 10000) usleep(2000);
    CHECK(atomic_load(&g_in), "the save reached fsync");
    usleep(300000);
    CHECK(wm_proxy_registry_session_sid(x.g, NULL, CID("d"), x.d, 0, &sid) == WM_PROXY_SID_WAIT,
          "not handed out while the save carrying it hangs");
    CHECK(atomic_load(&x.wakes) == 0, "nobody woken");
    t0 = mono_ms();
    CHECK(wm_proxy_saver_stop(&x.s, true, 300000000ull) == -2, "still in the save");
    uint64_t took = mono_ms() - t0;
    CHECK(took >= 290 && took < 3000, "the stop waited %llu ms for a bound of 300", (unsigned long long)took);
    /* the disk answers: the detached thread ends its save, then its final one */
    atomic_store(&g_hold, false);
    t0 = mono_ms();
    bool done = false;
    while (!done && mono_ms() - t0 < 10000) {
        pthread_mutex_lock(&x.s.mu);
        done = x.s.done;
        pthread_mutex_unlock(&x.s.mu);
        usleep(2000);
    }
    CHECK(done, "the detached saver did not end once the disk answered");
    usleep(10000);   /* (its last unlock and return) */
    finish(&x);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    a_waiting_hand_out_is_saved_and_woken_by_the_thread();
    a_save_the_disk_holds_keeps_reservations_waiting_and_the_stop_bounded();
    fprintf(stderr, "[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(proxy_saver_concurrent, a_waiting_hand_out_is_saved_and_woken_by_the_thread)
{
    a_waiting_hand_out_is_saved_and_woken_by_the_thread();
}
Test(proxy_saver_concurrent, a_save_the_disk_holds_keeps_reservations_waiting_and_the_stop_bounded)
{
    a_save_the_disk_holds_keeps_reservations_waiting_and_the_stop_bounded();
}
#endif
