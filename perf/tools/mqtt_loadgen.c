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
 * the rate found is what the system sustains. The loop sleeps in epoll_pwait2
 * rather than spinning: on a small machine the generator must not take the
 * CPU the measured processes need. In open loop it sleeps exactly until the
 * next message is due (message m at t0 + m / rate), so messages leave one by
 * one, evenly spaced, and not in bursts that would queue behind each other and
 * show up as latency of the system under test; a generator that fell behind
 * sends what is due at once (open loop: the schedule does not wait).
 *
 * Spatial workload (issue 7's filtering proxy): --peids FILE (one peid per
 * line) makes every PUBLISH carry a `peid` User Property, cycling through the
 * peids (one pre-encoded frame per peid and publisher); --nbhds FILE (lines
 * "NAME PEID PEID ...", e.g. from `wmctl resolve --json`) makes subscriber i
 * subscribe with the `nbhd` User Property of line i mod L. A delivery is then
 * expected only where the subscriber's neighborhood holds the peid: the
 * payload carries the peid's index (bytes 16..19), and a delivery outside
 * the neighborhood is counted in `unwanted` (and fails the run).
 *
 * --nbhd-topics (with --peids): the reference for the spatial workload with
 * the broker alone doing the filtering. The publications of peid k go to
 * topic "lg/<k>/x", and each subscriber subscribes to the topics of the peids
 * it wants (all of them without --nbhds), without `nbhd`: the broker then
 * sends every subscriber exactly what a spatial proxy would forward to it,
 * so the subscribers get as few deliveries, and the generator sleeps between
 * them, as behind that proxy.
 *
 * --connack-first: subscribers send their SUBSCRIBE once they have their
 * CONNACK, as mosquitto_sub, Paho and MQTT.js do (by default it follows the
 * CONNECT at once, MQTT 5.0 §3.1.4). Through a proxy that makes the proxy
 * send the SUBSCRIBE right after reading the CONNACK from the broker, which
 * once cost every delivery ~1 ms (README "ACKs at read").
 *
 * --pair-port PORT (open loop only): a paired measurement of what a relay
 * adds, that cancels the stalls both paths share. Every connection is opened
 * twice: path D on --port (the broker itself) and path P on --pair-port (the
 * broker behind the proxy or relay under test), each with its own topic
 * prefix ("lg/" and "lp/") so the broker does not cross-deliver. Each message
 * goes out on both paths back to back (the order alternating by sequence
 * number) with the same send time and sequence number; per subscriber and
 * message, added = t_recv(P) - t_recv(D). A stall of the whole machine, or of
 * the broker or the generator both paths go through, delays both copies
 * alike and cancels out; what is left is the extra path's own delay. With
 * --peids, path D always lets the broker filter by topic (as --nbhd-topics:
 * the broker alone cannot apply a neighborhood), and path P subscribes with
 * the `nbhd` User Property of --nbhds ("lp/#"; or by topic too with
 * --nbhd-topics), so both paths deliver the same messages to the same
 * subscribers. Both paths load the broker and the machine: the rate per path
 * is what --rate says, the broker sees twice that.
 *
 * --stall-us N: stall meters, one thread pinned to each CPU the process may
 * run on, each sleeping N us at a time (absolute deadlines, CLOCK_MONOTONIC,
 * timer slack 1 ns) and recording how late each wake-up comes: the machine's
 * own noise floor for one task wake-up, per vCPU, measured in the same run
 * and with the process's scheduling policy (under SCHED_FIFO/RR one priority
 * above it, so that they do not queue behind the measured processes), so that
 * environmental stalls can be told from the delay of the path under test.
 *
 * Prints one JSON object: published, delivered, expected, unwanted,
 * elapsed_s, published_per_s, delivered_per_s, latency_us {p50, p90, p99,
 * max}, hist (the latency histogram: [[bucket lower bound us, count], ...],
 * non-empty buckets only, so runs can be pooled), subs_latency_us ([p50,
 * p99] of each of the first 16 subscribers, in their order of connection,
 * mosquitto's order of delivery here), slice_ms and timeline
 * ([[deliveries, largest latency us], ...] per --slice-ms of send time from
 * the first publication, default 10 ms, at most 4096 slices: a stall, every message sent within
 * some ms late alike, shows as a run of slices; a spread tail does not),
 * cpu_s (this process:
 * utime + stime over the publishing and draining phases), errors.
 * With --pair-port, published counts messages (each sent on both paths),
 * delivered/expected/unwanted both paths' deliveries; latency_us, hist,
 * subs_latency_us and timeline are path D's; "pair" holds per path (d, p)
 * the port, deliveries, latency_us and hist, and "added_us": the pairs
 * matched, lost_d (arrived on P only), lost_p (arrived on D only), the
 * per-message difference's p50/p90/p99/p999/min/max (us, exact, signed) and
 * its histogram ([[signed bucket bound us, count]], log-linear in |us| as
 * above, for pooling runs), the unpaired figures (p50/p99/p999 of P minus
 * those of D), added_us_kernel (the same pairs by the kernel's receive
 * times, SO_TIMESTAMPNS: without this process's own reading), subs_added_us
 * ([p50, p99] of each of the first 16 subscribers' differences) and
 * added_timeline (the largest difference per slice). With
 * --stall-us, "stall" holds period_us, sched and priority (their policy),
 * over all meters wakeups, over_1ms (wake-ups at least 1 ms late), late_us
 * (p50/p90/p99/p999/max), hist and timeline (the latest wake-up per slice,
 * us), and cpus (per meter: cpu, wakeups, over_1ms, max_us); with --pair-port too, "added_us_quiet" is "added_us" over the pairs
 * sent in slices where, and in the slice after which, no wake-up was 1 ms late.
 * Exit status: 0 when every expected delivery arrived and nothing else did,
 * 3 otherwise, 1 on a failure, 2 on bad usage.
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
#include <pthread.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RXCAP (1u << 20)
#define TXCAP (1u << 18)
#define HBUCKETS 2048
#define MAX_SLICES 4096u

typedef struct lg_conn {
    int fd;
    bool sub, connected, subscribed;
    int idx;
    int path;   /* 0: --port (path D), 1: --pair-port (path P) */
    uint8_t *rx;
    uint32_t rxlen;
    uint8_t *tx;
    uint32_t txoff, txlen;
    /* publishers: pre-encoded PUBLISH frames, one per peid (one without
     * --peids), frame k at frames + k * frame_stride */
    uint8_t *frames;
    uint32_t frame_stride, *frame_len, *ts_off;
    /* subscribers with --nbhds: bit k set = peid k is in the neighborhood */
    uint64_t *wants;
    /* subscribers with --connack-first: the SUBSCRIBE, sent at the CONNACK */
    uint8_t *sub_frame;
    uint32_t sub_len;
} lg_conn;

static struct {
    const char *host, *peids_file, *nbhds_file;
    int port, subs, pubs, spread, payload, duration, drain, connack_first, slice_ms, nbhd_topics, pair_port, stall_us;
    long long count, rate, window;
} opt = { "127.0.0.1", NULL, NULL, 1883, 4, 1, 0, 64, 10, 5, 0, 10, 0, 0, 0, 1000000, 0, 1000 };

#define MAX_PEIDS 65536u
#define MAX_NBHDS 4096u
#define PEID_MAX_LEN 255u

static uint64_t hist[HBUCKETS];
/* The first SUB_HISTS subscribers' own histograms: the broker writes a
 * message's deliveries one subscriber after the other, so a later place in
 * that order shows as a later p50 (the wait behind the copies before it). */
#define SUB_HISTS 16
static uint64_t sub_hist[SUB_HISTS][HBUCKETS];
static uint64_t lat_max, published, delivered, expected, unwanted, errors;

/* --pair-port: path P's own histogram, and per message (sequence number m,
 * 1..n_pair) and subscriber i the receive time on each path at
 * t_rx[path][(m - 1) * subs + i] (0: not arrived) and the send time at
 * t_tx[m - 1]. */
static uint64_t hist_p[HBUCKETS], lat_max_p, delivered_path[2];
static uint64_t *t_rx[2], *t_tx, n_pair;
/* ... and the kernel's receive time of the segment that completed the
 * delivery (SO_TIMESTAMPNS, CLOCK_REALTIME ns), at the same index. */
static uint64_t *t_krx[2];

/* --stall-us: one stall meter per CPU the process may run on, each with its
 * lateness histogram and, per slice, its latest wake-up (us); written by its
 * thread only, read after the join. stall_hist/stall_slice/...: all merged. */
#define MAX_METERS 64
typedef struct stall_meter {
    pthread_t th;
    int cpu;
    uint64_t hist[HBUCKETS], max, wakeups, over_1ms;
    uint32_t slice[MAX_SLICES];
} stall_meter;
static stall_meter *meters;
static int n_meters;
static uint64_t stall_hist[HBUCKETS], stall_max, stall_wakeups, stall_over_1ms;
static uint32_t stall_slice[MAX_SLICES];
static int stall_policy, stall_prio;
static atomic_bool stall_stop;

/* The timeline: per slice of --slice-ms of send time (from the first
 * publication), the deliveries and their largest latency, so that a stall
 * (every message sent within some ms delayed alike: a process not run) can be
 * told from a spread tail (single messages late) and placed in the run. */
static uint64_t t_pub0;
static uint32_t slice_n[MAX_SLICES], slice_max[MAX_SLICES], n_slices;

/* The spatial workload: peids[k] (n_peids of them; 0 = no peid property),
 * neighborhood names and member bitmaps (n_nbhds of them). */
static char **peids;
static uint32_t n_peids;
static char **nbhd_names;
static uint64_t **nbhd_bits;
static uint32_t n_nbhds;

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
static uint64_t percentile(const uint64_t *h, double p, uint64_t max)
{
    uint64_t n = 0, want;
    for (unsigned i = 0; i < HBUCKETS; i++) n += h[i];
    if (!n) return 0;
    want = (uint64_t)(p * (double)n);
    if (want >= n) want = n - 1;
    uint64_t acc = 0;
    for (unsigned i = 0; i < HBUCKETS; i++) {
        acc += h[i];
        if (acc > want) return bucket_us(i);
    }
    return max;
}

static void print_hist(const uint64_t *h)
{
    bool first = true;
    printf("[");
    for (unsigned i = 0; i < HBUCKETS; i++) {
        if (!h[i]) continue;
        printf("%s[%llu,%llu]", first ? "" : ",", (unsigned long long)bucket_us(i), (unsigned long long)h[i]);
        first = false;
    }
    printf("]");
}

/* "p50":..,"p90":..,"p99":..,"p999":..,"max":.. of a histogram */
static void print_pcts(const uint64_t *h, uint64_t max)
{
    printf("{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu}",
           (unsigned long long)percentile(h, 0.50, max), (unsigned long long)percentile(h, 0.90, max),
           (unsigned long long)percentile(h, 0.99, max), (unsigned long long)percentile(h, 0.999, max),
           (unsigned long long)max);
}

/* ---- the spatial workload files */
static void die_input(const char *file, unsigned line, const char *why)
{
    fprintf(stderr, "mqtt_loadgen: %s:%u: %s\n", file, line, why);
    exit(1);
}

static int peid_index(const char *peid)
{
    for (uint32_t k = 0; k < n_peids; k++)
        if (!strcmp(peids[k], peid)) return (int)k;
    return -1;
}

/* --peids FILE: one peid per line, no blanks inside, no repeats. */
static void load_peids(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f) { perror(file); exit(1); }
    char line[PEID_MAX_LEN + 2];
    unsigned ln = 0;
    peids = calloc(MAX_PEIDS, sizeof *peids);
    if (!peids) exit(1);
    while (fgets(line, sizeof line, f)) {
        ln++;
        size_t n = strcspn(line, "\r\n");
        if (line[n] == 0 && !feof(f)) die_input(file, ln, "peid longer than 255 bytes");
        line[n] = 0;
        if (!n) continue;
        if (strpbrk(line, " \t")) die_input(file, ln, "blank inside a peid");
        if (n_peids == MAX_PEIDS) die_input(file, ln, "more than 65536 peids");
        if (peid_index(line) >= 0) die_input(file, ln, "repeated peid");
        peids[n_peids++] = strdup(line);
    }
    fclose(f);
    if (!n_peids) die_input(file, ln, "no peids");
}

/* --nbhds FILE: "NAME PEID PEID ..." per line; every peid must be in --peids. */
static void load_nbhds(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f) { perror(file); exit(1); }
    char *line = NULL, *save;
    size_t cap = 0;
    unsigned ln = 0;
    nbhd_names = calloc(MAX_NBHDS, sizeof *nbhd_names);
    nbhd_bits = calloc(MAX_NBHDS, sizeof *nbhd_bits);
    if (!nbhd_names || !nbhd_bits) exit(1);
    while (getline(&line, &cap, f) > 0) {
        ln++;
        char *name = strtok_r(line, " \t\r\n", &save);
        if (!name) continue;
        if (n_nbhds == MAX_NBHDS) die_input(file, ln, "more than 4096 neighborhoods");
        if (strlen(name) > PEID_MAX_LEN) die_input(file, ln, "neighborhood name longer than 255 bytes");
        uint64_t *bits = calloc((n_peids + 63) / 64, sizeof(uint64_t));
        if (!bits) exit(1);
        for (char *p; (p = strtok_r(NULL, " \t\r\n", &save));) {
            int k = peid_index(p);
            if (k < 0) die_input(file, ln, "peid not in --peids");
            bits[k / 64] |= 1ull << (k % 64);
        }
        nbhd_names[n_nbhds] = strdup(name);
        nbhd_bits[n_nbhds++] = bits;
    }
    free(line);
    fclose(f);
    if (!n_nbhds) die_input(file, ln, "no neighborhoods");
}

static bool wants(const lg_conn *c, uint32_t k)
{
    return !c->wants || (c->wants[k / 64] >> (k % 64)) & 1u;
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
/* A SUBSCRIBE of n filters, with a `nbhd` User Property when nbhd is not NULL. */
static uint32_t enc_subscribe(uint8_t *o, size_t cap, const char *const *filters, uint32_t n, const char *nbhd)
{
    static wm_mqtt5_subscription subs[MAX_PEIDS];
    for (uint32_t i = 0; i < n; i++) subs[i] = (wm_mqtt5_subscription){ .filter = bytes_of(filters[i]), .qos = 0 };
    wm_mqtt5_pair up = { bytes_of("nbhd"), bytes_of(nbhd ? nbhd : "") };
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_SUBSCRIBE;
    p.packet_id = 1;
    p.count = n;
    p.subscriptions = subs;
    if (nbhd) {
        p.props.user_properties = &up;
        p.props.user_property_count = 1;
    }
    return encode(&p, o, cap);
}
/* A QoS 0 PUBLISH with a `peid` User Property when peid is not NULL; the
 * payload's bytes 16..19 hold peid_idx. */
static uint32_t enc_publish(uint8_t *o, size_t cap, const char *topic, const char *peid, uint32_t peid_idx,
                            uint32_t payload, uint32_t *ts_off)
{
    static uint8_t body[65536];
    memset(body, 'p', payload);
    if (payload >= 20) memcpy(body + 16, &peid_idx, 4);
    wm_mqtt5_pair up = { bytes_of("peid"), bytes_of(peid ? peid : "") };
    wm_mqtt5_packet p;
    memset(&p, 0, sizeof p);
    p.type = WM_MQTT5_PUBLISH;
    p.topic = bytes_of(topic);
    p.payload = (wm_mqtt5_bytes){ body, payload };
    if (peid) {
        p.props.user_properties = &up;
        p.props.user_property_count = 1;
    }
    uint32_t n = encode(&p, o, cap);
    *ts_off = n - payload;   /* the payload ends the packet */
    return n;
}

/* --nbhd-topics: the publications of peid k go to topic "<pre>/<k>/x" (pre:
 * the path's prefix, "lg" or "lp"); the topic filters of the peids a
 * subscriber wants (all without --nbhds), n of them (owned by the caller:
 * free_topics once encoded). */
static char **peid_topics_of(const char *pre, const uint64_t *want, uint32_t *n)
{
    char **f = calloc(n_peids, sizeof *f);
    if (!f) exit(1);
    *n = 0;
    for (uint32_t k = 0; k < n_peids; k++) {
        if (want && !((want[k / 64] >> (k % 64)) & 1u)) continue;
        char t[32];
        snprintf(t, sizeof t, "%s/%u/x", pre, k);
        if (!(f[(*n)++] = strdup(t))) exit(1);
    }
    return f;
}

static void free_topics(char **f, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) free(f[i]);
    free(f);
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

static void on_packet(lg_conn *c, const wm_mqtt5_packet *pkt, uint64_t now, uint64_t krx)
{
    switch (pkt->type) {
    case WM_MQTT5_CONNACK:
        if (pkt->reason_code >= 0x80) { fprintf(stderr, "mqtt_loadgen: CONNACK 0x%02x\n", pkt->reason_code); exit(1); }
        c->connected = true;
        if (c->sub_frame) {
            tx_put(c, c->sub_frame, c->sub_len);
            tx_flush(c);
        }
        break;
    case WM_MQTT5_SUBACK:
        if (pkt->count < 1 || pkt->payload.p[0] >= 0x80) { fprintf(stderr, "mqtt_loadgen: SUBACK refused\n"); exit(1); }
        c->subscribed = true;
        break;
    case WM_MQTT5_PUBLISH:
        if (pkt->payload.len < 16) { errors++; break; }
        uint64_t ts, sq;
        memcpy(&ts, pkt->payload.p, 8);
        memcpy(&sq, pkt->payload.p + 8, 8);
        if (c->wants) {
            uint32_t k;
            if (pkt->payload.len < 20) { errors++; break; }
            memcpy(&k, pkt->payload.p + 16, 4);
            if (k >= n_peids) { errors++; break; }
            if (!wants(c, k)) { unwanted++; break; }
        }
        uint64_t us = now > ts ? (now - ts) / 1000 : 0;
        delivered++;
        delivered_path[c->path]++;
        if (n_pair) {
            uint64_t *slot = sq >= 1 && sq <= n_pair ? &t_rx[c->path][(sq - 1) * (uint64_t)opt.subs + (uint64_t)c->idx] : NULL;
            if (!slot || *slot) { errors++; break; }   /* not sent, or delivered twice */
            *slot = now;
            t_krx[c->path][slot - t_rx[c->path]] = krx;
        }
        if (c->path) {   /* path P: its own histogram; the rest below is path D's */
            hist_p[bucket_of(us)]++;
            if (us > lat_max_p) lat_max_p = us;
            break;
        }
        hist[bucket_of(us)]++;
        if (c->idx < SUB_HISTS) sub_hist[c->idx][bucket_of(us)]++;
        if (us > lat_max) lat_max = us;
        if (ts >= t_pub0 && t_pub0) {
            uint64_t sl = (ts - t_pub0) / ((uint64_t)opt.slice_ms * 1000000u);
            if (sl < MAX_SLICES) {
                slice_n[sl]++;
                if (us > slice_max[sl]) slice_max[sl] = (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us);
                if (sl >= n_slices) n_slices = (uint32_t)sl + 1;
            }
        }
        break;
    case WM_MQTT5_DISCONNECT:
        fprintf(stderr, "mqtt_loadgen: DISCONNECT 0x%02x from the server\n", pkt->reason_code);
        exit(1);
    default: break;
    }
}

/* With --pair-port, the kernel's receive time of the latest segment a read
 * took (SO_TIMESTAMPNS; 0 without one). */
static uint64_t krx_of(struct msghdr *mh)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(cm), sizeof ts);
            return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        }
    return 0;
}

static void rx(lg_conn *c)
{
    for (;;) {
        union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
        struct iovec iov = { c->rx + c->rxlen, RXCAP - c->rxlen };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
        ssize_t r = recvmsg(c->fd, &mh, 0);
        if (r == 0) { fprintf(stderr, "mqtt_loadgen: connection closed by the server\n"); exit(1); }
        if (r < 0) {
            if (errno == EAGAIN) return;
            perror("mqtt_loadgen: recv");
            exit(1);
        }
        c->rxlen += (uint32_t)r;
        uint64_t now = now_ns(), krx = n_pair ? krx_of(&mh) : 0;
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
            on_packet(c, &pkt, now, krx);
            off += (uint32_t)res.length;
        }
        memmove(c->rx, c->rx + off, c->rxlen - off);
        c->rxlen -= off;
    }
}

/* ---- the stall meters (--stall-us): one thread pinned to each CPU of the
 * process's affinity, so that a stall of one vCPU (another task holding it,
 * RT throttling of that CPU, the host not running it), which delays the
 * processes there and not the others, is seen too. Each sleeps to absolute
 * deadlines and records how late it wakes. Under SCHED_FIFO they run one
 * priority above the process, so that they measure what the machine
 * withholds from the run, not their queueing behind the measured processes.
 * A stall of L us is marked in every slice it covered. */
static void *stall_main(void *arg)
{
    stall_meter *m = arg;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   /* ordinary tasks default to 50 us of slack */
    uint64_t period = (uint64_t)opt.stall_us * 1000u, slice = (uint64_t)opt.slice_ms * 1000000u;
    uint64_t next = now_ns() + period;
    while (!atomic_load_explicit(&stall_stop, memory_order_relaxed)) {
        struct timespec ts = { .tv_sec = (time_t)(next / 1000000000u), .tv_nsec = (long)(next % 1000000000u) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
        uint64_t t = now_ns(), us = t > next ? (t - next) / 1000 : 0;
        m->hist[bucket_of(us)]++;
        m->wakeups++;
        if (us > m->max) m->max = us;
        if (us >= 1000) m->over_1ms++;
        for (uint64_t sl = (next - t_pub0) / slice; sl <= (t - t_pub0) / slice && sl < MAX_SLICES; sl++)
            if (us > m->slice[sl]) m->slice[sl] = (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us);
        next += period;
        if (next <= t) next = t + period;   /* ticks missed in a stall are not made up in a burst */
    }
    return NULL;
}

/* One meter per CPU of the affinity mask (at most MAX_METERS). */
static bool stall_start(void)
{
    struct sched_param sp;
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) < 0) { perror("mqtt_loadgen: sched_getaffinity"); return false; }
    meters = calloc(MAX_METERS, sizeof *meters);
    if (!meters) return false;
    stall_policy = sched_getscheduler(0);
    if (stall_policy == SCHED_FIFO || stall_policy == SCHED_RR) {
        sched_getparam(0, &sp);
        if (sp.sched_priority < sched_get_priority_max(stall_policy)) sp.sched_priority++;
        stall_prio = sp.sched_priority;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE && n_meters < MAX_METERS; cpu++) {
        if (!CPU_ISSET(cpu, &cpus)) continue;
        stall_meter *m = &meters[n_meters];
        pthread_attr_t at;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pthread_attr_init(&at);
        pthread_attr_setaffinity_np(&at, sizeof one, &one);
        if (stall_policy == SCHED_FIFO || stall_policy == SCHED_RR) {
            pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
            pthread_attr_setschedpolicy(&at, stall_policy);
            pthread_attr_setschedparam(&at, &sp);
        }
        m->cpu = cpu;
        int e = pthread_create(&m->th, &at, stall_main, m);
        pthread_attr_destroy(&at);
        if (e) {
            fprintf(stderr, "mqtt_loadgen: stall meter on CPU %d: %s\n", cpu, strerror(e));
            return false;
        }
        n_meters++;
    }
    return n_meters > 0;
}

/* Stops and joins the meters, and merges their figures. */
static void stall_stop_all(void)
{
    atomic_store(&stall_stop, true);
    for (int i = 0; i < n_meters; i++) {
        stall_meter *m = &meters[i];
        pthread_join(m->th, NULL);
        for (unsigned b = 0; b < HBUCKETS; b++) stall_hist[b] += m->hist[b];
        for (unsigned sl = 0; sl < MAX_SLICES; sl++)
            if (m->slice[sl] > stall_slice[sl]) stall_slice[sl] = m->slice[sl];
        stall_wakeups += m->wakeups;
        stall_over_1ms += m->over_1ms;
        if (m->max > stall_max) stall_max = m->max;
    }
}

/* ---- --pair-port: the per-message differences */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* p-quantile of n sorted values (ns), in us with 0.1 us */
static double q_us(const int64_t *v, size_t n, double p)
{
    if (!n) return 0;
    size_t i = (size_t)(p * (double)n);
    return (double)v[i < n ? i : n - 1] / 1000.0;
}

/* A difference's histogram key: the bound of its bucket of |us|
 * (bucket_of), negative for a negative difference; monotone in x. */
static long long added_key(int64_t x)
{
    uint64_t us = (uint64_t)(x < 0 ? -x : x) / 1000;
    long long b = (long long)bucket_us(bucket_of(us));
    return x < 0 ? -b : b;
}

/* "pairs":n,"p50":..(p90 p99 p999 min max),"hist":[[signed us, count]...] of
 * n sorted differences (ns), so that runs can be pooled. */
static void print_added(const int64_t *v, size_t n)
{
    printf("\"pairs\":%zu,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"min\":%.1f,\"max\":%.1f,\"hist\":[", n,
           q_us(v, n, 0.5), q_us(v, n, 0.9), q_us(v, n, 0.99), q_us(v, n, 0.999), n ? q_us(v, n, 0) : 0.0,
           n ? (double)v[n - 1] / 1000.0 : 0.0);
    for (size_t i = 0, j; i < n; i = j) {   /* sorted: a bucket's values are adjacent */
        long long k = added_key(v[i]);
        for (j = i + 1; j < n && added_key(v[j]) == k; j++) {}
        printf("%s[%lld,%zu]", i ? "," : "", k, j - i);
    }
    printf("]");
}

/* The pairs: t_rx on P minus on D, per message and subscriber; "added_us",
 * "added_us_quiet" (with the stall meter) and the unpaired figures. */
static void print_pairs(void)
{
    uint64_t cells = n_pair * (uint64_t)opt.subs, lost_d = 0, lost_p = 0, slice = (uint64_t)opt.slice_ms * 1000000u;
    int64_t *d = malloc((cells ? cells : 1) * sizeof *d), *dq = malloc((cells ? cells : 1) * sizeof *dq);
    int64_t *dk = malloc((cells ? cells : 1) * sizeof *dk);
    static int64_t tl[MAX_SLICES];
    static bool tl_set[MAX_SLICES];
    if (!d || !dq || !dk) exit(1);
    size_t n = 0, nq = 0, nk = 0;
    for (uint64_t m = 0; m < published && m < n_pair; m++) {
        uint64_t sl = (t_tx[m] - t_pub0) / slice;
        /* quiet: no wake-up of the stall meter 1 ms late in the send's slice nor the next */
        bool quiet = opt.stall_us && sl + 1 < MAX_SLICES && stall_slice[sl] < 1000 && stall_slice[sl + 1] < 1000;
        for (int i = 0; i < opt.subs; i++) {
            uint64_t a = t_rx[0][m * (uint64_t)opt.subs + (uint64_t)i], b = t_rx[1][m * (uint64_t)opt.subs + (uint64_t)i];
            if (!a || !b) { lost_d += b && !a; lost_p += a && !b; continue; }
            int64_t x = (int64_t)(b - a);
            d[n++] = x;
            uint64_t ka = t_krx[0][m * (uint64_t)opt.subs + (uint64_t)i], kb = t_krx[1][m * (uint64_t)opt.subs + (uint64_t)i];
            if (ka && kb) dk[nk++] = (int64_t)(kb - ka);
            if (quiet) dq[nq++] = x;
            if (sl < MAX_SLICES && (!tl_set[sl] || x > tl[sl])) { tl[sl] = x; tl_set[sl] = true; }
        }
    }
    qsort(d, n, sizeof *d, cmp_i64);
    qsort(dq, nq, sizeof *dq, cmp_i64);
    qsort(dk, nk, sizeof *dk, cmp_i64);
    printf(",\"pair\":{\"d\":{\"port\":%d,\"delivered\":%llu,\"latency_us\":", opt.port, (unsigned long long)delivered_path[0]);
    print_pcts(hist, lat_max);
    printf(",\"hist\":");
    print_hist(hist);
    printf("},\"p\":{\"port\":%d,\"delivered\":%llu,\"latency_us\":", opt.pair_port, (unsigned long long)delivered_path[1]);
    print_pcts(hist_p, lat_max_p);
    printf(",\"hist\":");
    print_hist(hist_p);
    printf("}},\"added_us\":{\"lost_d\":%llu,\"lost_p\":%llu,", (unsigned long long)lost_d, (unsigned long long)lost_p);
    print_added(d, n);
    printf("},\"added_us_kernel\":{");
    print_added(dk, nk);
    printf("},\"unpaired_added_us\":{\"p50\":%lld,\"p99\":%lld,\"p999\":%lld},\"added_timeline\":[",
           (long long)percentile(hist_p, 0.5, lat_max_p) - (long long)percentile(hist, 0.5, lat_max),
           (long long)percentile(hist_p, 0.99, lat_max_p) - (long long)percentile(hist, 0.99, lat_max),
           (long long)percentile(hist_p, 0.999, lat_max_p) - (long long)percentile(hist, 0.999, lat_max));
    for (uint32_t i = 0; i < n_slices; i++) printf("%s%.0f", i ? "," : "", tl_set[i] ? (double)tl[i] / 1000.0 : 0.0);
    printf("]");
    if (opt.stall_us) {
        printf(",\"added_us_quiet\":{");
        print_added(dq, nq);
        printf("}");
    }
    /* per subscriber (the first SUB_HISTS, in the broker's order of delivery):
     * where a later place costs path P more than path D
     * (dq is free again: the quiet pairs are printed) */
    printf(",\"subs_added_us\":[");
    for (int i = 0; i < opt.subs && i < SUB_HISTS; i++) {
        size_t k = 0;
        for (uint64_t m = 0; m < published && m < n_pair; m++) {
            uint64_t a = t_rx[0][m * (uint64_t)opt.subs + (uint64_t)i], b = t_rx[1][m * (uint64_t)opt.subs + (uint64_t)i];
            if (a && b) dq[k++] = (int64_t)(b - a);
        }
        qsort(dq, k, sizeof *dq, cmp_i64);
        printf("%s[%.1f,%.1f]", i ? "," : "", q_us(dq, k, 0.5), q_us(dq, k, 0.99));
    }
    printf("]");
    free(d);
    free(dq);
    free(dk);
}

static void print_stall(void)
{
    printf(",\"stall\":{\"period_us\":%d,\"sched\":\"%s\",\"priority\":%d,\"wakeups\":%llu,\"over_1ms\":%llu,\"late_us\":",
           opt.stall_us, stall_policy == SCHED_FIFO ? "fifo" : stall_policy == SCHED_RR ? "rr" : "other", stall_prio,
           (unsigned long long)stall_wakeups, (unsigned long long)stall_over_1ms);
    print_pcts(stall_hist, stall_max);
    printf(",\"hist\":");
    print_hist(stall_hist);
    printf(",\"cpus\":[");
    for (int i = 0; i < n_meters; i++)
        printf("%s{\"cpu\":%d,\"wakeups\":%llu,\"over_1ms\":%llu,\"max_us\":%llu}", i ? "," : "", meters[i].cpu,
               (unsigned long long)meters[i].wakeups, (unsigned long long)meters[i].over_1ms, (unsigned long long)meters[i].max);
    printf("],\"timeline\":[");
    for (uint32_t i = 0; i < n_slices; i++) printf("%s%u", i ? "," : "", stall_slice[i]);
    printf("]}");
}

__attribute__((noreturn)) static void usage(void)
{
    fprintf(stderr,
        "usage: mqtt_loadgen [--host A] [--port P] [--subs S] [--pubs P] [--spread K]\n"
        "                    [--payload BYTES>=16] [--count N] [--duration SEC] [--drain SEC]\n"
        "                    [--rate MSG/S (0 = closed loop)] [--window N]\n"
        "                    [--peids FILE [--nbhds FILE]] [--connack-first] [--slice-ms MS]\n"
        "                    [--nbhd-topics (with --peids)]\n"
        "                    [--pair-port P (with --rate > 0: every message also through port P;\n"
        "                                    per-message added latency P - D)]\n"
        "                    [--stall-us N (a stall meter waking every N us)]\n");
    exit(2);
}

/* A usage error with its reason, then the usage. */
__attribute__((format(printf, 1, 2), noreturn)) static void refuse(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mqtt_loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    usage();
}

/* --NAME's value: a whole decimal integer in [lo, hi], or a usage error
 * (atoi read "abc" as 0 and "-1" as a closed loop). */
static long long num(const char *name, const char *v, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) refuse("--%s: '%s' is not an integer in [%lld, %lld]", name, v, lo, hi);
    return x;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "host", 1, 0, 'h' }, { "port", 1, 0, 'p' }, { "subs", 1, 0, 's' }, { "pubs", 1, 0, 'P' },
        { "spread", 1, 0, 'k' }, { "payload", 1, 0, 'l' }, { "count", 1, 0, 'n' }, { "duration", 1, 0, 'd' },
        { "drain", 1, 0, 'D' }, { "rate", 1, 0, 'r' }, { "window", 1, 0, 'w' },
        { "peids", 1, 0, 'e' }, { "nbhds", 1, 0, 'N' }, { "connack-first", 0, 0, 'C' }, { "slice-ms", 1, 0, 'T' }, { "nbhd-topics", 0, 0, 'B' },
        { "pair-port", 1, 0, 'Q' }, { "stall-us", 1, 0, 'S' },
        { 0, 0, 0, 0 } };
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'h': opt.host = optarg; break;
        case 'p': opt.port = (int)num("port", optarg, 1, 65535); break;
        case 's': opt.subs = (int)num("subs", optarg, 1, 10000); break;
        case 'P': opt.pubs = (int)num("pubs", optarg, 1, 10000); break;
        case 'k': opt.spread = (int)num("spread", optarg, 0, 1000000); break;
        case 'l': opt.payload = (int)num("payload", optarg, 16, 65536); break;
        case 'n': opt.count = num("count", optarg, 1, LLONG_MAX); break;
        case 'd': opt.duration = (int)num("duration", optarg, 1, 86400); break;
        case 'D': opt.drain = (int)num("drain", optarg, 0, 3600); break;
        case 'r': opt.rate = num("rate", optarg, 0, 1000000000); break;
        case 'w': opt.window = num("window", optarg, 1, 1000000000); break;
        case 'e': opt.peids_file = optarg; break;
        case 'N': opt.nbhds_file = optarg; break;
        case 'C': opt.connack_first = 1; break;
        case 'T': opt.slice_ms = (int)num("slice-ms", optarg, 1, 60000); break;
        case 'B': opt.nbhd_topics = 1; break;
        case 'Q': opt.pair_port = (int)num("pair-port", optarg, 1, 65535); break;
        case 'S': opt.stall_us = (int)num("stall-us", optarg, 0, 1000000); break;
        default: usage();
        }
    }
    if (optind < argc) refuse("unexpected argument '%s'", argv[optind]);
    if (opt.nbhds_file && !opt.peids_file) refuse("--nbhds needs --peids");
    if (opt.nbhd_topics && (!opt.peids_file || opt.spread)) refuse("--nbhd-topics needs --peids and no --spread");
    if (opt.peids_file && opt.payload < 20) refuse("--peids needs --payload >= 20");
    if (opt.pair_port && opt.rate < 1) refuse("--pair-port needs an open loop (--rate > 0)");
    if (opt.pair_port && opt.peids_file && opt.spread) refuse("--pair-port with --peids takes no --spread");
    if (opt.peids_file) load_peids(opt.peids_file);
    if (opt.nbhds_file) load_nbhds(opt.nbhds_file);
    uint32_t n_frames = n_peids ? n_peids : 1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
    if (inet_pton(AF_INET, opt.host, &a.sin_addr) != 1) refuse("--host: '%s' is not an IPv4 address", opt.host);

    /* Path D: connections 0..n-1 on --port; with --pair-port, path P:
     * connections n..2n-1 on it, the same clients with the prefix "lp". */
    int n = opt.subs + opt.pubs, paths = opt.pair_port ? 2 : 1, ep = epoll_create1(EPOLL_CLOEXEC);
    lg_conn *cs = calloc((size_t)n * (size_t)paths, sizeof(lg_conn));
    if (!cs || ep < 0) return 1;
    if (opt.pair_port) {
        /* one slot per message the schedule can send, and per subscriber */
        n_pair = (uint64_t)(opt.rate * opt.duration + 4096);
        if ((uint64_t)opt.count < n_pair) n_pair = (uint64_t)opt.count;
        t_rx[0] = calloc(n_pair * (uint64_t)opt.subs, sizeof(uint64_t));
        t_rx[1] = calloc(n_pair * (uint64_t)opt.subs, sizeof(uint64_t));
        t_krx[0] = calloc(n_pair * (uint64_t)opt.subs, sizeof(uint64_t));
        t_krx[1] = calloc(n_pair * (uint64_t)opt.subs, sizeof(uint64_t));
        t_tx = calloc(n_pair, sizeof(uint64_t));
        if (!t_rx[0] || !t_rx[1] || !t_krx[0] || !t_krx[1] || !t_tx) { fprintf(stderr, "mqtt_loadgen: no memory for %llu pairs\n", (unsigned long long)n_pair); return 1; }
    }
    uint8_t tmp[256];
    char name[64];
    for (int i = 0; i < n * paths; i++) {
        lg_conn *c = &cs[i];
        c->path = i / n;
        c->sub = i % n < opt.subs;
        c->idx = c->sub ? i % n : i % n - opt.subs;
        c->rx = malloc(RXCAP);
        c->tx = malloc(TXCAP);
        if (!c->rx || !c->tx) return 1;
        /* path D of a paired run lets the broker filter by topic: it knows no neighborhoods */
        const char *pre = c->path ? "lp" : "lg";
        bool by_topic = opt.nbhd_topics || (opt.pair_port && !c->path && n_peids);
        a.sin_port = htons((uint16_t)(c->path ? opt.pair_port : opt.port));
        c->fd = connect_to(&a);
        int on = 1;
        if (opt.pair_port && c->sub && setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0) {
            perror("mqtt_loadgen: SO_TIMESTAMPNS");
            return 1;
        }
        snprintf(name, sizeof name, "%s-%s-%d-%d", pre, c->sub ? "sub" : "pub", c->idx, (int)getpid());
        tx_put(c, tmp, enc_connect(tmp, sizeof tmp, name));
        if (c->sub) {
            if (opt.spread) snprintf(name, sizeof name, "%s/%d/#", pre, c->idx % opt.spread);
            else snprintf(name, sizeof name, "%s/#", pre);
            const char *nbhd = NULL, *one = name, *const *filters = &one;
            uint32_t nf = 1;
            if (n_nbhds) {
                nbhd = nbhd_names[(uint32_t)c->idx % n_nbhds];
                c->wants = nbhd_bits[(uint32_t)c->idx % n_nbhds];
            }
            if (by_topic) {
                /* the broker filters: one topic filter per peid wanted, no nbhd */
                filters = (const char *const *)peid_topics_of(pre, c->wants, &nf);
                nbhd = NULL;
            }
            static uint8_t sub_buf[1u << 20];
            uint32_t len = enc_subscribe(sub_buf, sizeof sub_buf, filters, nf, nbhd);
            if (by_topic) free_topics((char **)filters, nf);
            if (opt.connack_first) {
                if (!(c->sub_frame = malloc(len))) return 1;
                memcpy(c->sub_frame, sub_buf, len);
                c->sub_len = len;
            } else {
                tx_put(c, sub_buf, len);
            }
        } else {
            snprintf(name, sizeof name, "%s/%d/x", pre, opt.spread ? c->idx % opt.spread : c->idx);
            c->frame_stride = (uint32_t)opt.payload + 512 + PEID_MAX_LEN;
            c->frames = malloc((size_t)n_frames * c->frame_stride);
            c->frame_len = calloc(n_frames, sizeof(uint32_t));
            c->ts_off = calloc(n_frames, sizeof(uint32_t));
            if (!c->frames || !c->frame_len || !c->ts_off) return 1;
            for (uint32_t k = 0; k < n_frames; k++) {
                if (by_topic) snprintf(name, sizeof name, "%s/%u/x", pre, k);   /* peid_topics_of's topic */
                c->frame_len[k] = enc_publish(c->frames + (size_t)k * c->frame_stride, c->frame_stride, name,
                                              n_peids ? peids[k] : NULL, k, (uint32_t)opt.payload, &c->ts_off[k]);
            }
        }
        tx_flush(c);
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    /* Receivers of frame k of publisher j: with --spread K, the subscribers i
     * with i mod K == j mod K; with --nbhds, those whose neighborhood holds peid k. */
    int *fan = calloc((size_t)opt.pubs * n_frames, sizeof(int));
    if (!fan) return 1;
    for (int j = 0; j < opt.pubs; j++)
        for (uint32_t k = 0; k < n_frames; k++)
            for (int i = 0; i < opt.subs; i++)
                fan[(size_t)j * n_frames + k] += (!opt.spread || i % opt.spread == j % opt.spread) && wants(&cs[i], k);

    struct epoll_event evs[256];
    uint64_t t_setup = now_ns() + 10000000000ull;
    for (bool ready = false; !ready;) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int e = 0; e < k; e++) rx(&cs[evs[e].data.u32]);
        ready = true;
        for (int i = 0; i < n * paths; i++) ready &= cs[i].connected && (!cs[i].sub || cs[i].subscribed);
        if (now_ns() > t_setup) { fprintf(stderr, "mqtt_loadgen: setup timed out\n"); return 1; }
    }

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)opt.duration * 1000000000ull, stop_pub = 0;
    t_pub0 = t0;
    bool stall_on = opt.stall_us && stall_start();
    if (opt.stall_us && !stall_on) return 1;
    uint64_t seq = 0;
    int next_pub = 0;
    uint32_t next_frame = 0;   /* peids in turn, across publishers */
    for (;;) {
        uint64_t now = now_ns();
        bool publishing = (long long)published < opt.count && now < end && (!n_pair || published < n_pair);
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
                uint32_t k = next_frame;
                bool room = true;
                for (int p = 0; p < paths; p++) {
                    lg_conn *c = &cs[p * n + opt.subs + next_pub];
                    room &= c->txlen + c->frame_len[k] <= TXCAP;
                }
                if (!room) break;
                uint64_t ts = now_ns();
                seq++;
                /* Paired: the same message on both paths back to back, flushed
                 * at once, the first path alternating so neither is always second. */
                for (int q = 0; q < paths; q++) {
                    lg_conn *c = &cs[((q + (int)(seq & 1)) % paths) * n + opt.subs + next_pub];
                    uint8_t *fr = c->frames + (size_t)k * c->frame_stride;
                    memcpy(fr + c->ts_off[k], &ts, 8);
                    memcpy(fr + c->ts_off[k] + 8, &seq, 8);
                    tx_put(c, fr, c->frame_len[k]);
                    if (paths > 1) tx_flush(c);
                }
                if (n_pair) t_tx[seq - 1] = ts;
                published++;
                expected += (uint64_t)fan[(size_t)next_pub * n_frames + k] * (uint64_t)paths;
                next_pub = (next_pub + 1) % opt.pubs;
                next_frame = (next_frame + 1) % n_frames;
            }
            for (int p = 0; p < paths; p++)
                for (int j = 0; j < opt.pubs; j++) tx_flush(&cs[p * n + opt.subs + j]);
        }
        /* Open loop: until the next message is due; closed loop (and draining): 1 ms. */
        uint64_t wait_ns = 1000000;
        if (publishing && opt.rate > 0) {
            uint64_t due = t0 + (uint64_t)((double)(published + 1) * 1e9 / (double)opt.rate), t = now_ns();
            wait_ns = due > t ? due - t : 0;
            if (wait_ns > 1000000) wait_ns = 1000000;
        }
        struct timespec to = { .tv_sec = 0, .tv_nsec = (long)wait_ns };
        int k = epoll_pwait2(ep, evs, 256, &to, NULL);
        for (int e = 0; e < k; e++) rx(&cs[evs[e].data.u32]);
    }
    uint64_t t1 = now_ns();
    if (stall_on) stall_stop_all();
    getrusage(RUSAGE_SELF, &ru1);
    double el = (double)((stop_pub ? stop_pub : t1) - t0) / 1e9;
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    printf("{\"published\":%llu,\"delivered\":%llu,\"expected\":%llu,\"unwanted\":%llu,\"elapsed_s\":%.3f,"
           "\"published_per_s\":%.0f,\"delivered_per_s\":%.0f,"
           "\"latency_us\":{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"max\":%llu},\"hist\":",
           (unsigned long long)published, (unsigned long long)delivered, (unsigned long long)expected,
           (unsigned long long)unwanted, el, (double)published / el, (double)delivered / el,
           (unsigned long long)percentile(hist, 0.50, lat_max), (unsigned long long)percentile(hist, 0.90, lat_max),
           (unsigned long long)percentile(hist, 0.99, lat_max), (unsigned long long)lat_max);
    print_hist(hist);
    printf(",\"subs_latency_us\":[");
    for (int i = 0; i < opt.subs && i < SUB_HISTS; i++)
        printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long)percentile(sub_hist[i], 0.50, lat_max),
               (unsigned long long)percentile(sub_hist[i], 0.99, lat_max));
    printf("],\"slice_ms\":%d,\"timeline\":[", opt.slice_ms);
    for (uint32_t i = 0; i < n_slices; i++) printf("%s[%u,%u]", i ? "," : "", slice_n[i], slice_max[i]);
    printf("]");
    if (n_pair) print_pairs();
    if (stall_on) print_stall();
    printf(",\"cpu_s\":%.3f,\"errors\":%llu}\n", cpu, (unsigned long long)errors);
    for (int i = 0; i < n * paths; i++) {
        tx_put(&cs[i], (const uint8_t *)"\xe0\x00", 2);
        tx_flush(&cs[i]);
        close(cs[i].fd);
        free(cs[i].rx);
        free(cs[i].tx);
        free(cs[i].sub_frame);
        free(cs[i].frames);
        free(cs[i].frame_len);
        free(cs[i].ts_off);
    }
    free(cs);
    free(fan);
    free(t_rx[0]);
    free(t_rx[1]);
    free(t_krx[0]);
    free(t_krx[1]);
    free(t_tx);
    free(meters);
    return delivered == expected && !unwanted && !errors ? 0 : 3;
}
