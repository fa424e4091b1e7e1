/* tcp_relay: the least a TCP relay can do, as a latency floor for
 * wirematch-proxy in `make bench-proxy`.
 *
 * One thread, epoll, no MQTT: every accepted client gets one upstream
 * connection (blocking connect), and whatever one side sends is written to
 * the other at once (TCP_NODELAY both ways). No framing, no io_uring, no
 * queues: a write that would block is finished by blocking (fine below
 * saturation, which is the only place the bench uses it). What it adds over
 * a direct connection is the price of the two extra loopback hops and the
 * two extra task wake-ups per message on this machine, which the proxy
 * cannot avoid either; the proxy's own cost is what it adds beyond this.
 *
 * --spin-us N: after a wake-up that carried data, poll (epoll_wait with
 * timeout 0) for up to N us before sleeping again, to show what keeping the
 * CPU awake buys at the price of the CPU it burns.
 *
 * usage: tcp_relay --listen PORT --upstream PORT [--spin-us N]   (127.0.0.1)
 * Runs until SIGTERM/SIGINT; prints {"reads":R,"writes":W,"wakeups":K,
 * "spins":S} on stdout at the end. Exit 1 on a setup failure, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXFD 4096

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int peer[MAXFD];

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void drop(int ep, int fd)
{
    int o = peer[fd];
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    peer[fd] = -1;
    if (o >= 0 && o < MAXFD && peer[o] == fd) {
        epoll_ctl(ep, EPOLL_CTL_DEL, o, NULL);
        close(o);
        peer[o] = -1;
    }
}

int main(int argc, char **argv)
{
    int lport = 0, uport = 0;
    long spin_us = 0;
    static const struct option opts[] = {
        { "listen", required_argument, 0, 'l' }, { "upstream", required_argument, 0, 'u' },
        { "spin-us", required_argument, 0, 's' }, { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'l') lport = atoi(optarg);
        else if (c == 'u') uport = atoi(optarg);
        else if (c == 's') spin_us = atol(optarg);
        else return 2;
    }
    if (lport <= 0 || lport > 65535 || uport <= 0 || uport > 65535 || spin_us < 0) {
        fprintf(stderr, "usage: tcp_relay --listen PORT --upstream PORT [--spin-us N]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    for (int i = 0; i < MAXFD; i++) peer[i] = -1;
    struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons((uint16_t)lport) };
    struct sockaddr_in ua = { .sin_family = AF_INET, .sin_port = htons((uint16_t)uport) };
    la.sin_addr.s_addr = ua.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) < 0 || listen(lfd, 128) < 0) {
        perror("tcp_relay: listen");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd };
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    static char buf[1 << 16];
    uint64_t reads = 0, writes = 0, wakeups = 0, spins = 0, spin_until = 0;
    struct epoll_event evs[64];
    while (!g_stop) {
        int timeout = -1;
        if (spin_us && now_ns() < spin_until) { timeout = 0; spins++; }
        int n = epoll_wait(ep, evs, 64, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("tcp_relay: epoll_wait");
            return 1;
        }
        if (n == 0) continue;
        wakeups++;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) continue;
                int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (c >= MAXFD || u < 0 || u >= MAXFD || connect(u, (struct sockaddr *)&ua, sizeof ua) < 0) {
                    close(c);
                    if (u >= 0) close(u);
                    continue;
                }
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                peer[c] = u;
                peer[u] = c;
                struct epoll_event e1 = { .events = EPOLLIN, .data.fd = c }, e2 = { .events = EPOLLIN, .data.fd = u };
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &e1);
                epoll_ctl(ep, EPOLL_CTL_ADD, u, &e2);
                continue;
            }
            if (peer[fd] < 0) continue;
            ssize_t k = read(fd, buf, sizeof buf);
            if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            reads++;
            if (k <= 0 || write_all(peer[fd], buf, (size_t)k) < 0) { drop(ep, fd); continue; }
            writes++;
        }
        if (spin_us) spin_until = now_ns() + (uint64_t)spin_us * 1000;
    }
    printf("{\"reads\":%llu,\"writes\":%llu,\"wakeups\":%llu,\"spins\":%llu}\n", (unsigned long long)reads,
           (unsigned long long)writes, (unsigned long long)wakeups, (unsigned long long)spins);
    return 0;
}
