/* The --state saver's spacing (dataplane/proxy_state.h): saves follow a
 * slow write at ten times its duration, but never more than
 * WM_PROXY_STATE_MAX_INTERVAL_NS later, whatever the disk did. The disk is
 * made slow by interposing fsync(2), which the saver calls for FILE.tmp and
 * for the directory. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

static long g_fsync_delay_ms;

/* Overrides libc's for this executable: the saver's calls land here. */
int fsync(int fd)
{
    if (g_fsync_delay_ms > 0) {
        struct timespec d = { g_fsync_delay_ms / 1000, (g_fsync_delay_ms % 1000) * 1000000L };
        nanosleep(&d, NULL);
    }
    return (int)syscall(SYS_fsync, fd);
}

static uint64_t interval_after_start(long delay_ms)
{
    char dir[] = "/tmp/wm-saver.XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/proxy.state", dir);
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 8, 8);
    cr_assert_not_null(g);
    wm_proxy_state_saver sv;
    char err[512];
    g_fsync_delay_ms = delay_ms;
    cr_assert_eq(wm_proxy_state_start(&sv, path, 1, g, err, sizeof err), 0, "%s", err);
    g_fsync_delay_ms = 0;
    uint64_t interval = sv.interval_ns;
    wm_proxy_state_stop(&sv);
    wm_proxy_registry_free(g);
    unlink(path);
    rmdir(dir);
    return interval;
}

Test(proxy_state_saver, a_slow_write_spaces_the_next_save_by_ten_times_its_duration)
{
    /* two fsyncs of 60 ms: 120 ms or more of write, 1.2 s or more to the next save */
    uint64_t i = interval_after_start(60);
    cr_assert_geq(i, 120000000ull * WM_PROXY_STATE_SPACING);
    cr_assert_lt(i, WM_PROXY_STATE_MAX_INTERVAL_NS);
}

Test(proxy_state_saver, a_write_stalled_by_the_disk_leaves_the_file_stale_for_the_bounded_interval_only)
{
    /* two fsyncs of 600 ms: ten times the write is 12 s or more */
    cr_assert_eq(interval_after_start(600), WM_PROXY_STATE_MAX_INTERVAL_NS);
}
