/* A start-up check of the io_uring features the proxy is built on, done on a
 * throw-away ring over loopback sockets, so a kernel that lacks one fails
 * with the feature's name instead of a stream of EINVAL completions later.
 * Nothing falls back to a slower path: the issue asks for io_uring "done
 * properly", and a silent fallback would hide that the deployment is not. */
#include "dataplane/proxy.h"

#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static int wait_one(struct io_uring *ring, int *res, unsigned *flags)
{
    struct io_uring_cqe *cqe;
    struct __kernel_timespec ts = { .tv_sec = 2, .tv_nsec = 0 };
    int rc = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
    if (rc < 0) return rc;
    *res = cqe->res;
    *flags = cqe->flags;
    io_uring_cqe_seen(ring, cqe);
    return 0;
}

int wm_proxy_probe(void)
{
    struct io_uring ring;
    int rc = io_uring_queue_init(8, &ring, 0);
    if (rc < 0) {
        fprintf(stderr, "wirematch-proxy: io_uring unavailable (%s): needs Linux 6.0+ with io_uring enabled "
                        "(sysctl kernel.io_uring_disabled=0, no seccomp filter blocking it)\n", strerror(-rc));
        return -1;
    }
    int ok = -1, sv[2] = { -1, -1 }, fp[2] = { -1, -1 }, lfd = -1, cfd = -1;
    enum { NBUF = 4, BSZ = 64 };
    void *br = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static char bufs[NBUF][BSZ];
    struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)br, .ring_entries = NBUF, .bgid = 7 };
    if (br == MAP_FAILED || (rc = io_uring_register_buf_ring(&ring, &reg, 0)) < 0) {
        fprintf(stderr, "wirematch-proxy: provided buffer rings unavailable (%s): need Linux 5.19+\n", strerror(-rc));
        goto out;
    }
    io_uring_buf_ring_init(br);
    for (int i = 0; i < NBUF; i++) io_uring_buf_ring_add(br, bufs[i], BSZ, (unsigned short)i, io_uring_buf_ring_mask(NBUF), i);
    io_uring_buf_ring_advance(br, NBUF);

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) goto out;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 7;
    io_uring_submit(&ring);
    if (write(sv[1], "x", 1) != 1) goto out;
    int res;
    unsigned flags;
    if (wait_one(&ring, &res, &flags) < 0 || res != 1 || !(flags & IORING_CQE_F_MORE) || !(flags & IORING_CQE_F_BUFFER)) {
        fprintf(stderr, "wirematch-proxy: multishot receive with provided buffers unavailable (res %d): needs Linux 6.0+\n", res);
        goto out;
    }

    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) < 0) {
        fprintf(stderr, "wirematch-proxy: cannot open a loopback socket for the io_uring check: %s\n", strerror(errno));
        goto out;
    }
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_submit(&ring);
    cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof a) < 0) goto out;
    if (wait_one(&ring, &res, &flags) < 0 || res < 0 || !(flags & IORING_CQE_F_MORE)) {
        fprintf(stderr, "wirematch-proxy: multishot accept unavailable (res %d): needs Linux 5.19+\n", res);
        goto out;
    }
    close(res);
    res = -1;

    /* Inline sends (proxy_loop.c): a MSG_DONTWAIT send the socket has no room
     * for must fail within its submission, never wait for room unseen. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fp) < 0) goto out;
    static char junk[4096];
    while (send(fp[0], junk, sizeof junk, MSG_DONTWAIT) > 0) {}
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_send(sqe, fp[0], junk, sizeof junk, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_WAITALL);
    sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    io_uring_submit(&ring);
    struct io_uring_cqe *cqe;
    if (io_uring_peek_cqe(&ring, &cqe) == 0) { res = cqe->res; io_uring_cqe_seen(&ring, cqe); }
    if (res != -EAGAIN) {
        fprintf(stderr, "wirematch-proxy: a MSG_DONTWAIT io_uring send without room did not fail at once (res %d): "
                        "needs Linux 6.0+\n", res);
        goto out;
    }
    ok = 0;
out:
    io_uring_queue_exit(&ring);   /* cancels what is still armed */
    if (sv[0] >= 0) close(sv[0]);
    if (sv[1] >= 0) close(sv[1]);
    for (int i = 0; i < 2; i++) if (fp[i] >= 0) close(fp[i]);
    if (lfd >= 0) close(lfd);
    if (cfd >= 0) close(cfd);
    if (br != MAP_FAILED) munmap(br, 4096);
    return ok;
}
