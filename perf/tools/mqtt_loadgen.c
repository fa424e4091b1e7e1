/* mqtt_loadgen: an MQTT v5 load generator for brokers and wirematch-proxy.
 *
 * Raw sockets, one thread, epoll. S subscribers each subscribe (QoS 0) to the
 * topic filter "lg/#" (or, with --spread, to "lg/<i mod K>/#"); P publishers
 * send pre-encoded QoS 0 PUBLISH frames to "lg/<j>/x" whose first 16 payload
 * bytes are a send timestamp (CLOCK_MONOTONIC ns) and a sequence number,
 * patched in place. Every delivery is checked (framed and decoded by the
 * codec) and its one-way latency recorded in a log-linear histogram.
 *
 * Bounded: --count messages at most, --duration seconds at most, then up to
 * --drain seconds for deliveries still on their way. Open loop at --rate
 * messages/s (for latency below saturation), or closed loop (--rate 0) with
 * at most --window deliveries outstanding (published, not yet received by a
 * subscriber that should get them), so queues in the broker stay bounded and
 * the rate found is what the system sustains. The loop sleeps in epoll_wait
 * (1 ms) rather than spinning: on a small machine the generator must not take
 * the CPU the measured processes need.
 *
 * Prints one JSON object: published, delivered, expected, elapsed_s,
 * published_per_s, delivered_per_s, latency_us {p50, p90, p99, max},
 * cpu_s (this process), errors.
 */
#include "codec/mqtt5_decode.h"
#include "codec/mqtt5_encode.h"
#include "codec/mqtt5_reason.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RXCAP (1u << 20)
#define TXCAP (1u << 18)
#define HBUCKETS 2048

typedef struct lg_conn {
    int fd;
    bool sub, connected, subscribed;
    int idx;
    uint8_t *rx;
    uint32_t rxlen;
    uint8_t *tx;
    uint32_t txoff, txlen;
    uint8_t frame[512 + 65536];   /* publishers: the pre-encoded PUBLISH */
    uint32_t frame_len, ts_off;
} lg_conn;

static struct {
    const char *host;
    int port, subs, pubs, spread, payload, duration, drain;
    long long count, rate, window;
} opt = { "127.0.0.1", 1883, 4, 1, 0, 64, 10, 5, 1000000, 0, 1000 };

static uint64_t hist[HBUCKETS];
static uint64_t lat_max, published, delivered, expected, errors;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Log-linear buckets over microseconds: 0..1023 us exactly, then 64 buckets
 * per power of two (1.6 % resolution). */
static unsigned bucket_of(uint64_t us)
{
    if (us < 1024) return (unsigned)us;
    unsigned e = 63u - (unsigned)__builtin_clzll(us);     /* >= 10 */
    unsigned b = 1024 + (e - 10) * 64 + (unsigned)((us >> (e - 6)) & 63);
    return b < HBUCKETS ? b : HBUCKETS - 1;
}
static uint64_t bucket_us(unsigned b)
{
    if (b < 1024) return b;
    unsigned e = (b - 1024) / 64 + 10, m = (b - 1024) % 64;
    return (1ull << e) + ((uint64_t)m << (e - 6));
}
static uint64_t percentile(double p)
{
    uint64_t n = 0, want;
    for (unsigned i = 0; i < HBUCKETS; i++) n += hist[i];
    if (!n) return 0;
    want = (uint64_t)(p * (double)n);
    if (want >= n) want = n - 1;
    for (unsigned i = 0, acc = 0; i < HBUCKETS; i++) {
        acc += (unsigned)hist[i];
        if (acc > want) return bucket_us(i);
    }
    return lat_max;
}

/* ---- pre-encoded frames (MQTT 5.0 §3.1, §3.8, §3.3) by the codec's encoder: QoS 0, no properties */
static uint32_t encode(const wm_mqtt5_packet *pkt, uint8_t *o, size_t cap)
{
    size_t n;
    if (wm_mqtt5_encode(pkt, o, cap, &n) != WM_MQTT5_ENC_OK) { fprintf(stderr, "mqtt_loadgen: cannot encode\n"); exit(1); }
    return (uint32_t)n;
}
static wm_mqtt5_bytes bytes_of(const char *s) { return (wm_mqtt5_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) }; }
static uint32_t enc_connect(uint8_t *o, size_t cap, const char *cid)
{
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_CONNECT;
    p.connect.clean_start = true;
    p.connect.keep_alive = 60;
    p.connect.client_id = bytes_of(cid);
    return encode(&p, o, cap);
}
static uint32_t enc_subscribe(uint8_t *o, size_t cap, const char *filter)
{
    wm_mqtt5_subscription sub = { .filter = bytes_of(filter), .qos = 0 };
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_SUBSCRIBE;
    p.packet_id = 1;
    p.count = 1;
    p.subscriptions = &sub;
    return encode(&p, o, cap);
}
static uint32_t enc_publish(uint8_t *o, size_t cap, const char *topic, uint32_t payload, uint32_t *ts_off)
{
    static uint8_t body[65536];
    memset(body, 'p', payload);
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_PUBLISH;
    p.topic = bytes_of(topic);
    p.payload = (wm_mqtt5_bytes){ body, payload };
    uint32_t n = encode(&p, o, cap);
    *ts_off = n - payload;   /* the payload ends the packet */
    return n;
}

/* ---- I/O */
static int connect_to(const struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) < 0) {
        perror("mqtt_loadgen: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static bool tx_flush(lg_conn *c)
{
    while (c->txoff < c->txlen) {
        ssize_t w = send(c->fd, c->tx + c->txoff, c->txlen - c->txoff, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN) return false;
            perror("mqtt_loadgen: send");
            exit(1);
        }
        c->txoff += (uint32_t)w;
    }
    c->txoff = c->txlen = 0;
    return true;
}

static void tx_put(lg_conn *c, const uint8_t *p, uint32_t n)
{
    if (c->txlen + n > TXCAP) {
        if (c->txoff) {
            memmove(c->tx, c->tx + c->txoff, c->txlen - c->txoff);
            c->txlen -= c->txoff;
            c->txoff = 0;
        }
        if (c->txlen + n > TXCAP) { fprintf(stderr, "mqtt_loadgen: send buffer full\n"); exit(1); }
    }
    memcpy(c->tx + c->txlen, p, n);
    c->txlen += n;
}

static void on_packet(lg_conn *c, const wm_mqtt5_packet *pkt, uint64_t now)
{
    switch (pkt->type) {
    case WM_MQTT5_CONNACK:
        if (pkt->reason_code >= 0x80) { fprintf(stderr, "mqtt_loadgen: CONNACK 0x%02x\n", pkt->reason_code); exit(1); }
        c->connected = true;
        break;
    case WM_MQTT5_SUBACK:
        if (pkt->count < 1 || pkt->payload.p[0] >= 0x80) { fprintf(stderr, "mqtt_loadgen: SUBACK refused\n"); exit(1); }
        c->subscribed = true;
        break;
    case WM_MQTT5_PUBLISH:
        if (pkt->payload.len < 16) { errors++; break; }
        uint64_t ts;
        memcpy(&ts, pkt->payload.p, 8);
        uint64_t us = now > ts ? (now - ts) / 1000 : 0;
        hist[bucket_of(us)]++;
        if (us > lat_max) lat_max = us;
        delivered++;
        break;
    case WM_MQTT5_DISCONNECT:
        fprintf(stderr, "mqtt_loadgen: DISCONNECT 0x%02x from the server\n", pkt->reason_code);
        exit(1);
    default: break;
    }
}

static void rx(lg_conn *c)
{
    for (;;) {
        ssize_t r = recv(c->fd, c->rx + c->rxlen, RXCAP - c->rxlen, 0);
        if (r == 0) { fprintf(stderr, "mqtt_loadgen: connection closed by the server\n"); exit(1); }
        if (r < 0) {
            if (errno == EAGAIN) return;
            perror("mqtt_loadgen: recv");
            exit(1);
        }
        c->rxlen += (uint32_t)r;
        uint64_t now = now_ns();
        wm_mqtt5_config cfg = { .from = WM_MQTT5_FROM_SERVER };
        uint32_t off = 0;
        for (;;) {
            wm_mqtt5_packet pkt;
            wm_mqtt5_result res;
            wm_mqtt5_status st = wm_mqtt5_decode(&cfg, c->rx + off, c->rxlen - off, &pkt, &res);
            if (st == WM_MQTT5_NEED_MORE) break;
            if (st == WM_MQTT5_ERROR) {
                fprintf(stderr, "mqtt_loadgen: bad packet from the server: %s\n", wm_mqtt5_err_name(res.err));
                exit(1);
            }
            on_packet(c, &pkt, now);
            off += (uint32_t)res.length;
        }
        memmove(c->rx, c->rx + off, c->rxlen - off);
        c->rxlen -= off;
    }
}

static void usage(void)
{
    fprintf(stderr,
        "usage: mqtt_loadgen [--host A] [--port P] [--subs S] [--pubs P] [--spread K]\n"
        "                    [--payload BYTES>=16] [--count N] [--duration SEC] [--drain SEC]\n"
        "                    [--rate MSG/S (0 = closed loop)] [--window N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "host", 1, 0, 'h' }, { "port", 1, 0, 'p' }, { "subs", 1, 0, 's' }, { "pubs", 1, 0, 'P' },
        { "spread", 1, 0, 'k' }, { "payload", 1, 0, 'l' }, { "count", 1, 0, 'n' }, { "duration", 1, 0, 'd' },
        { "drain", 1, 0, 'D' }, { "rate", 1, 0, 'r' }, { "window", 1, 0, 'w' }, { 0, 0, 0, 0 } };
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'h': opt.host = optarg; break;
        case 'p': opt.port = atoi(optarg); break;
        case 's': opt.subs = atoi(optarg); break;
        case 'P': opt.pubs = atoi(optarg); break;
        case 'k': opt.spread = atoi(optarg); break;
        case 'l': opt.payload = atoi(optarg); break;
        case 'n': opt.count = atoll(optarg); break;
        case 'd': opt.duration = atoi(optarg); break;
        case 'D': opt.drain = atoi(optarg); break;
        case 'r': opt.rate = atoll(optarg); break;
        case 'w': opt.window = atoll(optarg); break;
        default: usage();
        }
    }
    if (opt.subs < 1 || opt.pubs < 1 || opt.payload < 16 || opt.payload > 65536 || opt.count < 1 ||
        opt.duration < 1 || opt.window < 1 || opt.spread < 0 || opt.subs > 10000 || opt.pubs > 10000)
        usage();
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
    if (inet_pton(AF_INET, opt.host, &a.sin_addr) != 1) usage();

    int n = opt.subs + opt.pubs, ep = epoll_create1(EPOLL_CLOEXEC);
    lg_conn *cs = calloc((size_t)n, sizeof(lg_conn));
    if (!cs || ep < 0) return 1;
    uint8_t tmp[256];
    char name[64];
    for (int i = 0; i < n; i++) {
        lg_conn *c = &cs[i];
        c->sub = i < opt.subs;
        c->idx = c->sub ? i : i - opt.subs;
        c->rx = malloc(RXCAP);
        c->tx = malloc(TXCAP);
        if (!c->rx || !c->tx) return 1;
        c->fd = connect_to(&a);
        snprintf(name, sizeof name, "lg-%s-%d-%d", c->sub ? "sub" : "pub", c->idx, (int)getpid());
        tx_put(c, tmp, enc_connect(tmp, sizeof tmp, name));
        if (c->sub) {
            if (opt.spread) snprintf(name, sizeof name, "lg/%d/#", c->idx % opt.spread);
            else snprintf(name, sizeof name, "lg/#");
            tx_put(c, tmp, enc_subscribe(tmp, sizeof tmp, name));
        } else {
            snprintf(name, sizeof name, "lg/%d/x", opt.spread ? c->idx % opt.spread : c->idx);
            c->frame_len = enc_publish(c->frame, sizeof c->frame, name, (uint32_t)opt.payload, &c->ts_off);
        }
        tx_flush(c);
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    /* Receivers per publisher: with --spread K, the subscribers i with i mod K == j mod K. */
    int *fan = calloc((size_t)opt.pubs, sizeof(int));
    for (int j = 0; j < opt.pubs; j++)
        for (int i = 0; i < opt.subs; i++)
            fan[j] += !opt.spread || i % opt.spread == j % opt.spread;

    struct epoll_event evs[256];
    uint64_t t_setup = now_ns() + 10000000000ull;
    for (bool ready = false; !ready;) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int e = 0; e < k; e++) rx(&cs[evs[e].data.u32]);
        ready = true;
        for (int i = 0; i < n; i++) ready &= cs[i].connected && (!cs[i].sub || cs[i].subscribed);
        if (now_ns() > t_setup) { fprintf(stderr, "mqtt_loadgen: setup timed out\n"); return 1; }
    }

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)opt.duration * 1000000000ull, stop_pub = 0;
    uint64_t seq = 0;
    int next_pub = 0;
    for (;;) {
        uint64_t now = now_ns();
        bool publishing = (long long)published < opt.count && now < end;
        if (!publishing && !stop_pub) stop_pub = now;
        if (!publishing && (delivered >= expected || now > stop_pub + (uint64_t)opt.drain * 1000000000ull)) break;
        if (publishing) {
            /* How many may go now: open loop by the clock, closed loop by the window. */
            long long allow;
            if (opt.rate > 0) allow = (long long)((double)(now - t0) * 1e-9 * (double)opt.rate) - (long long)published;
            else allow = opt.window - (long long)(expected - delivered);
            if (allow > 256) allow = 256;
            if (allow > opt.count - (long long)published) allow = opt.count - (long long)published;
            for (long long m = 0; m < allow; m++) {
                lg_conn *c = &cs[opt.subs + next_pub];
                if (c->txlen + c->frame_len > TXCAP) break;
                uint64_t ts = now_ns();
                seq++;
                memcpy(c->frame + c->ts_off, &ts, 8);
                memcpy(c->frame + c->ts_off + 8, &seq, 8);
                tx_put(c, c->frame, c->frame_len);
                published++;
                expected += (uint64_t)fan[next_pub];
                next_pub = (next_pub + 1) % opt.pubs;
            }
            for (int j = 0; j < opt.pubs; j++) tx_flush(&cs[opt.subs + j]);
        }
        int k = epoll_wait(ep, evs, 256, 1);   /* 1 ms: paces the open loop without spinning */
        for (int e = 0; e < k; e++) rx(&cs[evs[e].data.u32]);
    }
    uint64_t t1 = now_ns();
    getrusage(RUSAGE_SELF, &ru1);
    double el = (double)((stop_pub ? stop_pub : t1) - t0) / 1e9;
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    printf("{\"published\":%llu,\"delivered\":%llu,\"expected\":%llu,\"elapsed_s\":%.3f,"
           "\"published_per_s\":%.0f,\"delivered_per_s\":%.0f,"
           "\"latency_us\":{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"max\":%llu},\"cpu_s\":%.3f,\"errors\":%llu}\n",
           (unsigned long long)published, (unsigned long long)delivered, (unsigned long long)expected, el,
           (double)published / el, (double)delivered / el, (unsigned long long)percentile(0.50),
           (unsigned long long)percentile(0.90), (unsigned long long)percentile(0.99),
           (unsigned long long)lat_max, cpu, (unsigned long long)errors);
    for (int i = 0; i < n; i++) {
        tx_put(&cs[i], (const uint8_t *)"\xe0\x00", 2);
        tx_flush(&cs[i]);
        close(cs[i].fd);
        free(cs[i].rx);
        free(cs[i].tx);
    }
    free(cs);
    free(fan);
    return delivered == expected ? 0 : 3;
}
