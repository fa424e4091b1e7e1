/* LD_PRELOAD shim for tests/integration/proxy_state_hang.sh (not built by
 * the Makefile; the test compiles it): fsync(2) blocks while the file named
 * by WM_TEST_FSYNC_HOLD exists, as on an NFS mount whose server stopped
 * answering, and says so by creating that name + ".in" (so the test knows a
 * save is stuck, not merely slow). Then the real fsync runs. Test only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int fsync(int fd)
{
    const char *hold = getenv("WM_TEST_FSYNC_HOLD");
    if (hold && access(hold, F_OK) == 0) {
        char in[4096];
        snprintf(in, sizeof in, "%s.in", hold);
        int m = open(in, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (m >= 0) close(m);
        const struct timespec d = { 0, 10000000 };
        while (access(hold, F_OK) == 0) nanosleep(&d, NULL);
    }
    return (int)syscall(SYS_fsync, fd);
}
