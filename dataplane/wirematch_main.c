/* build/wirematch: the DPDK data plane.
 *
 *   wirematch [EAL options] -- [app options]      (app options: app_options.h)
 *
 * Ports are whatever EAL gives (--vdev net_pcap0,rx_pcap=IN.pcap replays a
 * capture and stops when it is exhausted; net_null, net_af_packet, real NICs).
 * Every port gets one RX/TX queue per worker and, with several queues, RSS
 * with a symmetric key so both directions of a connection reach one worker.
 * With one lcore (-l 0) the main lcore is the worker; with more, every
 * worker lcore polls one queue and the main lcore prints progress and waits.
 *
 * Shape and teardown follow DPDK's examples/l2fwd: configure, start, launch,
 * wait, stop, close, rte_eal_cleanup. SIGINT/SIGTERM stop the workers; the
 * exit summary (JSON, dp_stats.h counters and the conservation check) goes
 * to stdout or --summary FILE.
 *
 * Exit codes: 0 ok, 1 a port or memory failed at run time, 2 bad usage,
 * 3 the run completed but match-log lines could not be written (the
 * summary has the counts and the reason: match.log_lines_failed, log_error). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "control/mem_stats.h"
#include "dataplane/app_options.h"
#include "dataplane/dp_stats.h"
#include "dataplane/mem_plan.h"
#include "dataplane/qos2_store.h"
#include "dataplane/reload_ctl.h"
#include "dataplane/telemetry.h"
#include "dataplane/worker.h"

#define NB_RXD 1024
#define NB_TXD 1024
#define MBUF_CACHE 256

static volatile bool force_quit;

/* Why the run failed before it could count anything: the --summary FILE
 * then says so instead of being left empty. */
static char run_error[4096];

__attribute__((format(printf, 1, 2))) static void run_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run_error, sizeof run_error, fmt, ap);
    va_end(ap);
    fprintf(stderr, "wirematch: %s\n", run_error);
}

/* A run that failed has no counters to give: its --summary FILE (opened at
 * the start) holds {"error": REASON} rather than nothing, and is closed.
 * Nothing is written to stdout, where no summary is not mistaken for one. */
static void close_failed_summary(FILE *out)
{
    if (out == stdout) return;
    json_t *root = json_object();
    json_object_set_new(root, "error", json_string(run_error[0] ? run_error : "the run failed before it started: see stderr"));
    json_dumpf(root, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(root);
    fclose(out);
}

static void print_app_usage(const char *prgname)
{
    (void)prgname;
    fputs(wm_app_options_usage(), stdout);
}

static void on_signal(int sig)
{
    if (sig == SIGHUP) wm_reload_ctl_request();
    else force_quit = true;
}

/* A symmetric Toeplitz key: with the 16-bit pattern 0x6d5a repeated, the
 * hash of (src, dst, sport, dport) equals that of (dst, src, dport, sport)
 * (Woo & Park, "Scalable TCP Session Monitoring with Symmetric RSS", 2012). */
static uint8_t sym_rss_key[40] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

struct port_info {
    uint16_t id;
    uint16_t nb_rxq, nb_txq;
    int replay;
    char name[RTE_ETH_NAME_MAX_LEN];
    const char *driver;
};

/* A net_pcap port reading a capture file once (not infinite_rx, not a live
 * interface) has nothing more to give when its queue stays empty. */
static int is_replay_port(const struct rte_eth_dev_info *info)
{
    if (!info->device || !info->driver_name || strcmp(info->driver_name, "net_pcap") != 0) return 0;
    const struct rte_devargs *da = rte_dev_devargs(info->device);
    if (!da || !da->args) return 0;
    return strstr(da->args, "rx_pcap=") != NULL && strstr(da->args, "infinite_rx=1") == NULL;
}

static int port_setup(struct port_info *p, unsigned n_workers, struct rte_mempool *pool, enum wm_tx_mode tx)
{
    struct rte_eth_dev_info info;
    int rc = rte_eth_dev_info_get(p->id, &info);
    if (rc != 0) {
        fprintf(stderr, "wirematch: port %u: cannot read device info: %s\n", p->id, strerror(-rc));
        return -1;
    }
    rte_eth_dev_get_name_by_port(p->id, p->name);
    p->driver = info.driver_name;
    p->replay = is_replay_port(&info);
    p->nb_rxq = (uint16_t)RTE_MIN(n_workers, (unsigned)info.max_rx_queues);
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    uint64_t rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
    if (p->nb_rxq > 1) {
        if (rss_hf == 0) {
            fprintf(stderr, "wirematch: port %u (%s) has no RSS: using one queue\n", p->id, p->name);
            p->nb_rxq = 1;
        } else {
            conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_key = sym_rss_key;
            conf.rx_adv_conf.rss_conf.rss_key_len = sizeof sym_rss_key;
            conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
        }
    }
    /* Where the port verifies checksums, have it say so in the mbuf flags:
     * the worker drops what it finds bad (worker.c handle). The TCP checksum
     * is verified only this way; ports without the offload (net_pcap, most
     * vdevs) leave the flags "unknown". */
    conf.rxmode.offloads |= info.rx_offload_capa & (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM);
    p->nb_txq = (uint16_t)RTE_MIN((unsigned)p->nb_rxq, (unsigned)info.max_tx_queues);
    if (p->nb_txq == 0) p->nb_txq = 1;
    rc = rte_eth_dev_configure(p->id, p->nb_rxq, p->nb_txq, &conf);
    if (rc != 0) {
        fprintf(stderr, "wirematch: port %u: configure: %s\n", p->id, strerror(-rc));
        return -1;
    }
    uint16_t nb_rxd = NB_RXD, nb_txd = NB_TXD;
    rte_eth_dev_adjust_nb_rx_tx_desc(p->id, &nb_rxd, &nb_txd);
    int socket = rte_eth_dev_socket_id(p->id);
    if (socket < 0) socket = (int)rte_socket_id();
    for (uint16_t q = 0; q < p->nb_rxq; q++) {
        rc = rte_eth_rx_queue_setup(p->id, q, nb_rxd, (unsigned)socket, NULL, pool);
        if (rc != 0) {
            fprintf(stderr, "wirematch: port %u: rx queue %u: %s\n", p->id, q, strerror(-rc));
            return -1;
        }
    }
    for (uint16_t q = 0; q < p->nb_txq; q++) {
        rc = rte_eth_tx_queue_setup(p->id, q, nb_txd, (unsigned)socket, NULL);
        if (rc != 0) {
            fprintf(stderr, "wirematch: port %u: tx queue %u: %s\n", p->id, q, strerror(-rc));
            return -1;
        }
    }
    rc = rte_eth_dev_start(p->id);
    if (rc != 0) {
        fprintf(stderr, "wirematch: port %u: start: %s\n", p->id, strerror(-rc));
        return -1;
    }
    rte_eth_promiscuous_enable(p->id); /* not every vdev supports it; harmless if not */
    (void)tx;
    return 0;
}

static int file_readable(const char *opt, const char *path)
{
    if (path && access(path, R_OK) != 0) {
        fprintf(stderr, "wirematch: %s %s: %s\n", opt, path, strerror(errno));
        return 0;
    }
    return 1;
}

struct json_visit {
    json_t *root;
};

static void json_stat(void *ctx, const char *group, const char *name, uint64_t v)
{
    struct json_visit *jv = ctx;
    json_t *g = json_object_get(jv->root, group);
    if (!g) {
        g = json_object();
        json_object_set_new(jv->root, group, g);
    }
    json_object_set_new(g, name, json_integer((json_int_t)v));
}

/* out: stdout, or --summary FILE opened at the start (closed here). */
static int write_summary(const struct wm_app_options *o, FILE *out, struct wm_worker *workers, unsigned n_workers,
                         const struct port_info *ports, unsigned n_ports, double elapsed_s,
                         struct wm_match_table *match)
{
    struct wm_dp_totals t = {0};
    json_t *root = json_object();
    json_t *jw = json_array();
    for (unsigned i = 0; i < n_workers; i++) {
        struct wm_worker *w = &workers[i];
        wm_dp_totals_add(&t, w->path, w->mqtt, w->tx_packets, w->tx_dropped);
        json_t *x = json_object();
        json_object_set_new(x, "lcore", json_integer(w->lcore_id));
        json_object_set_new(x, "queue", json_integer(w->queue_id));
        json_object_set_new(x, "rx", json_integer((json_int_t)w->path->c.rx_packets));
        json_object_set_new(x, "multiseg_copied", json_integer((json_int_t)w->multiseg_copied));
        json_object_set_new(x, "oversize", json_integer((json_int_t)w->oversize));
        json_array_append_new(jw, x);
    }
    json_object_set_new(root, "workers", jw);
    if (n_workers && workers[0].reasm) {
        struct wm_ip_reasm_counters rc = {0};
        for (unsigned i = 0; i < n_workers; i++) wm_ip_reasm_counters_add(&rc, workers[i].reasm);
        json_t *jr = json_object();
#define WM_REASM_JSON(n) json_object_set_new(jr, #n, json_integer((json_int_t)rc.n));
        WM_IP_REASM_COUNTERS(WM_REASM_JSON)
#undef WM_REASM_JSON
        json_object_set_new(root, "ip_reasm", jr);
    }
    /* Cycles per packet over all workers: mean and percentiles from the
     * histogram (a percentile is reported as its bucket's upper bound, at
     * most 19 % above the true value; see wm_cyc_bucket). */
    uint64_t hist[WM_CYC_BUCKETS] = {0}, cyc = 0, cpk = 0;
    for (unsigned i = 0; i < n_workers; i++) {
        for (int b = 0; b < WM_CYC_BUCKETS; b++) hist[b] += workers[i].cyc_hist[b];
        cyc += workers[i].cyc_total;
        cpk += workers[i].cyc_packets;
    }
    json_t *jc = json_object(), *jh = json_object();
    json_object_set_new(jc, "mean", json_real(cpk ? (double)cyc / (double)cpk : 0));
    static const double pct[] = {25, 50, 75, 90, 99};
    for (int k = 0; k < 5; k++) {
        uint64_t want = (uint64_t)((double)cpk * pct[k] / 100.0), run = 0;
        unsigned b = 0;
        for (; b < WM_CYC_BUCKETS - 1; b++) {
            run += hist[b];
            if (run >= want && run > 0) break;
        }
        char name[8];
        snprintf(name, sizeof name, "p%d", (int)pct[k]);
        json_object_set_new(jc, name, json_integer((json_int_t)wm_cyc_bucket_lo(b + 1) - 1));
    }
    for (unsigned b = 0; b < WM_CYC_BUCKETS; b++) {
        if (!hist[b]) continue;
        char name[48];
        if (b == WM_CYC_BUCKETS - 1)
            snprintf(name, sizeof name, "%llu-", (unsigned long long)wm_cyc_bucket_lo(b));
        else
            snprintf(name, sizeof name, "%llu-%llu", (unsigned long long)wm_cyc_bucket_lo(b),
                     (unsigned long long)wm_cyc_bucket_lo(b + 1) - 1);
        json_object_set_new(jh, name, json_integer((json_int_t)hist[b]));
    }
    json_object_set_new(jc, "histogram", jh);
    json_object_set_new(jc, "tsc_hz", json_integer((json_int_t)rte_get_tsc_hz()));
    json_object_set_new(root, "cycles_per_packet", jc);
    if (match) {
        struct wm_match_counters mc;
        wm_match_table_counters(match, &mc);
        json_t *jm = json_object();
#define WM_MATCH_JSON(n) json_object_set_new(jm, #n, json_integer((json_int_t)mc.n));
        WM_MATCH_COUNTERS(WM_MATCH_JSON)
#undef WM_MATCH_JSON
        char xerr[400];
        wm_match_table_last_xpath_error(match, xerr, sizeof xerr);
        json_object_set_new(jm, "last_xpath_error", json_string(xerr));
        char lerr[WM_MATCH_LOG_ERROR_MAX];
        wm_match_table_log_error(match, lerr, sizeof lerr);
        json_object_set_new(jm, "log_error", json_string(lerr));
        /* the whole line: telemetry's strings are bounded, this one is not */
        wm_load_error rerr;
        char rtext[WM_LOAD_ERROR_TEXT_MAX];
        wm_match_table_last_error(match, &rerr);
        json_object_set_new(jm, "last_error", json_string(wm_load_error_format(&rerr, rtext, sizeof rtext)));
        json_object_set_new(root, "match", jm);
    }
    uint64_t nic_rx = 0, nic_missed = 0, nic_nombuf = 0;
    json_t *jp = json_array();
    for (unsigned i = 0; i < n_ports; i++) {
        struct rte_eth_stats st;
        memset(&st, 0, sizeof st);
        rte_eth_stats_get(ports[i].id, &st);
        nic_rx += st.ipackets;
        nic_missed += st.imissed;
        nic_nombuf += st.rx_nombuf;
        json_t *x = json_object();
        json_object_set_new(x, "port", json_integer(ports[i].id));
        json_object_set_new(x, "name", json_string(ports[i].name));
        json_object_set_new(x, "driver", json_string(ports[i].driver ? ports[i].driver : ""));
        json_object_set_new(x, "rx_queues", json_integer(ports[i].nb_rxq));
        json_object_set_new(x, "ipackets", json_integer((json_int_t)st.ipackets));
        json_object_set_new(x, "imissed", json_integer((json_int_t)st.imissed));
        json_object_set_new(x, "ierrors", json_integer((json_int_t)st.ierrors));
        json_object_set_new(x, "rx_nombuf", json_integer((json_int_t)st.rx_nombuf));
        json_object_set_new(x, "opackets", json_integer((json_int_t)st.opackets));
        json_array_append_new(jp, x);
    }
    json_object_set_new(root, "ports", jp);
    struct json_visit jv = {root};
    wm_dp_totals_visit(&t, json_stat, &jv);

    uint64_t counted = t.path.not_mqtt_port, segs = 0;
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++)
        if (v != WM_PKT_TCP) counted += t.path.verdict[v];
    for (int d = 0; d < WM_SD_COUNT; d++) segs += t.flows.disposition[d];
    counted += segs;
    json_t *cons = json_object();
    json_object_set_new(cons, "nic_rx", json_integer((json_int_t)nic_rx));
    json_object_set_new(cons, "rx", json_integer((json_int_t)t.path.rx_packets));
    json_object_set_new(cons, "reassembled", json_integer((json_int_t)t.path.reassembled));
    json_object_set_new(cons, "counted", json_integer((json_int_t)counted));
    json_object_set_new(cons, "segments", json_integer((json_int_t)segs));
    json_object_set_new(cons, "packets_hold", json_boolean(wm_dp_totals_conserved(&t)));
    json_object_set_new(cons, "nic_rx_equals_rx", json_boolean(nic_rx == t.path.rx_packets));
    uint64_t outcomes = 0;
    for (int x = 0; x < WM_MQTT_PUB_OUTCOME_COUNT; x++) outcomes += t.mqtt.publish[x];
    json_object_set_new(cons, "publish_seen", json_integer((json_int_t)t.mqtt.publish_seen));
    json_object_set_new(cons, "publish_outcomes", json_integer((json_int_t)outcomes));
    json_object_set_new(cons, "publish_hold", json_boolean(wm_dp_totals_publish_conserved(&t)));
    if (match) {
        /* every PUBLISH with a content-filtered candidate ends in exactly one content outcome */
        struct wm_match_counters mc;
        wm_match_table_counters(match, &mc);
        uint64_t co = mc.content_decoded + mc.content_no_content_type + mc.content_not_exi + mc.content_bad_content_type +
                      mc.content_unknown_schema +
                      mc.content_no_filter_for_schema + mc.content_decode_error + mc.content_value_too_large;
        json_object_set_new(cons, "content_hold", json_boolean(co == mc.content_pubs));
    }
    json_object_set_new(root, "conservation", cons);
    json_object_set_new(root, "elapsed_s", json_real(elapsed_s));
    json_object_set_new(root, "rx_pps", json_real(elapsed_s > 0 ? (double)t.path.rx_packets / elapsed_s : 0));
    json_object_set_new(root, "nic_missed", json_integer((json_int_t)(nic_missed + nic_nombuf)));
    /* the heap outside DPDK's memory: control-plane tables, content filters, the match log's buffers */
    json_object_set_new(root, "memory", wm_mem_stats_json());

    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (fputc('\n', out) == EOF || fflush(out) != 0 || ferror(out)) rc = -1;
    if (out != stdout && fclose(out) != 0) rc = -1;
    if (rc != 0) fprintf(stderr, "wirematch: cannot write the summary to %s: %s\n", o->summary ? o->summary : "stdout", strerror(errno));
    json_decref(root);
    return rc == 0 ? 0 : 1;
}

static void progress_line(struct wm_worker *workers, unsigned n, double elapsed)
{
    static uint64_t last_rx;
    static double last_t;
    struct wm_dp_totals t = {0};
    for (unsigned i = 0; i < n; i++) wm_dp_totals_add(&t, workers[i].path, workers[i].mqtt, workers[i].tx_packets, workers[i].tx_dropped);
    double pps = elapsed > last_t ? (double)(t.path.rx_packets - last_rx) / (elapsed - last_t) : 0;
    fprintf(stderr, "wirematch: %.1fs rx %" PRIu64 " rx_pps %.0f publish %" PRIu64 " matched %" PRIu64
                    " delivered %" PRIu64 " B flows %" PRIu64 " midstream %" PRIu64 "\n",
            elapsed, t.path.rx_packets, pps, t.mqtt.publish_seen, t.mqtt.publish[WM_MQTT_PUB_MATCHED],
            t.flows.stream.delivered_bytes, t.active_flows, t.flows.midstream);
    last_rx = t.path.rx_packets;
    last_t = elapsed;
}

int main(int argc, char **argv)
{
    /* Before anything slow (EAL initialisation, loading the tables): a
     * SIGINT/SIGTERM arriving meanwhile then stops the run once it is set up,
     * with its summary, instead of killing the process by the default action
     * (seen under load: a test's SIGTERM during a slow start). A SIGHUP
     * meanwhile asks for a reload of the tables being loaded (harmless), and
     * without tables nobody acts on it. */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    /* A match log on a FIFO whose reader went away: the write fails with
     * EPIPE and the lost lines are counted (match_log.h), rather than the
     * whole run being killed without its summary. */
    signal(SIGPIPE, SIG_IGN);
    /* The app options (after "--") are read before EAL starts: --help and a
     * bad option then answer at once, without EAL's start, which needs
     * memory (hugepages) just to print a usage. getopt may reorder what it
     * parses, so it gets a copy of the pointers. */
    struct wm_app_options o;
    char err[512];
    {
        int dd = 1;
        while (dd < argc && strcmp(argv[dd], "--") != 0) dd++;
        char *app_argv[argc + 1];
        int app_argc = 0;
        app_argv[app_argc++] = argv[0];
        for (int i = dd + 1; i < argc; i++) app_argv[app_argc++] = argv[i];
        app_argv[app_argc] = NULL;
        if (wm_app_options_parse(app_argc, app_argv, &o, err, sizeof err) != 0) {
            fprintf(stderr, "wirematch: %s\n%s", err, wm_app_options_usage());
            return 2;
        }
        if (o.help) {
            fputs(wm_app_options_usage(), stdout);
            return fflush(stdout) == 0 ? 0 : 1;
        }
    }
    /* EAL's own --help (before "--") lists EAL's options, then calls this */
    rte_set_application_usage_hook(print_app_usage);
    int ret = rte_eal_init(argc, argv);
    if (ret < 0) {
        int e = rte_errno;
        bool no_huge = false;
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) no_huge |= strcmp(argv[i], "--no-huge") == 0;
        char why[2048];
        /* EAL's own words for a machine without hugepages are "Cannot get
         * hugepage information" and a stray errno ("Permission denied") */
        if (!no_huge && wm_hugepages_describe(why, sizeof why))
            fprintf(stderr, "wirematch: EAL initialisation failed: %s\n", why);
        else
            fprintf(stderr, "wirematch: EAL initialisation failed: %s\n", rte_strerror(e));
        return 2;
    }
    struct wm_mem_plan plan;
    wm_mem_plan_eal_state(&plan); /* before the run allocates anything */
    if (!file_readable("--resolution", o.resolution) || !file_readable("--subs", o.subs) ||
        !file_readable("--schemas", o.schemas)) {
        rte_eal_cleanup();
        return 2;
    }
    /* Opened before anything runs, as the proxy does: an unwritable --summary
     * is refused now, not found at the stop, when the run's counters would be lost. */
    FILE *sum_out = stdout;
    if (o.summary && !(sum_out = fopen(o.summary, "w"))) {
        fprintf(stderr, "wirematch: --summary %s: %s\n", o.summary, strerror(errno));
        rte_eal_cleanup();
        return 1;
    }
    struct wm_match_table *match = NULL;
    if (o.resolution || o.subs || o.schemas || o.match_log) {
        wm_load_error merr;
        struct wm_match_bounds mb = {o.max_subs, o.max_trie_nodes, o.client_trie_nodes};
        match = wm_match_table_new_bounded(o.resolution, o.subs, o.schemas, &mb, &merr);
        if (match) wm_match_table_set_share_policy(match, o.share_policy);
        if (match) wm_match_table_set_exi_mem_cap(match, o.exi_mem_cap);
        if (!match) {
            char text[WM_LOAD_ERROR_TEXT_MAX];
            run_fail("%s", wm_load_error_format(&merr, text, sizeof text));
            close_failed_summary(sum_out);
            rte_eal_cleanup();
            return 1;
        }
    }
    /* SIGHUP re-reads --resolution/--subs (reload_ctl.h); without tables it is ignored. */
    if (!match) signal(SIGHUP, SIG_IGN);

    unsigned n_ports = rte_eth_dev_count_avail();
    if (n_ports == 0) {
        run_fail("no ports; give EAL one, e.g. --vdev net_pcap0,rx_pcap=IN.pcap");
        close_failed_summary(sum_out);
        wm_match_table_free(match);
        rte_eal_cleanup();
        return 2;
    }
    if (n_ports > WM_MAX_PORTS) {
        fprintf(stderr, "wirematch: %u ports; at most %d are used\n", n_ports, WM_MAX_PORTS);
        n_ports = WM_MAX_PORTS;
    }

    /* Workers: every worker lcore, or the main lcore alone. */
    unsigned lcores[RTE_MAX_LCORE], n_workers = 0, lc;
    RTE_LCORE_FOREACH_WORKER(lc) lcores[n_workers++] = lc;
    bool main_works = n_workers == 0;
    if (main_works) lcores[n_workers++] = rte_get_main_lcore();

    unsigned n_mbufs = n_ports * n_workers * (NB_RXD + NB_TXD + 2 * WM_BURST) + n_workers * MBUF_CACHE + 1024;
    /* Fragments held for reassembly, at most RTE_LIBRTE_IP_FRAG_MAX_FRAG per datagram. */
    n_mbufs += n_workers * o.frag_max * RTE_LIBRTE_IP_FRAG_MAX_FRAG;
    if (n_mbufs < 8191) n_mbufs = 8191;
    if (o.mbufs) n_mbufs = o.mbufs;
    struct wm_pkt_path_config pcfg;
    memset(&pcfg, 0, sizeof pcfg);
    memcpy(pcfg.mqtt_ports, o.mqtt_ports, sizeof o.mqtt_ports);
    pcfg.n_ports = o.n_ports;
    wm_flow_table_config_default(&pcfg.flows);
    pcfg.flows.max_flows = o.max_flows;
    pcfg.flows.ooo_pool_blocks = o.ooo_blocks;
    pcfg.flows.idle_timeout_ns = (uint64_t)o.idle_timeout_s * 1000000000ull;
    struct wm_mqtt_config mcfg;
    wm_mqtt_config_default(&mcfg);
    wm_mem_plan_init(&plan, n_mbufs, MBUF_CACHE, n_workers, wm_worker_memsize(&pcfg, &mcfg),
                     o.frag_max ? wm_ip_reasm_memsize(o.frag_max) : 0, o.max_flows, o.ooo_blocks, o.frag_max);
    char what[160], why[sizeof run_error];
    struct rte_mempool *pool = rte_pktmbuf_pool_create("wm_mbufs", n_mbufs, MBUF_CACHE, 0,
                                                       RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
    if (!pool) {
        snprintf(what, sizeof what, "cannot create the mbuf pool of %u mbufs (%s)", n_mbufs, rte_strerror(rte_errno));
        run_fail("%s", wm_mem_plan_explain(&plan, what, why, sizeof why));
        close_failed_summary(sum_out);
        wm_match_table_free(match);
        rte_eal_cleanup();
        return 1;
    }

    struct port_info ports[WM_MAX_PORTS];
    unsigned n_started = 0;
    int status = 0;
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid) {
        if (n_started == n_ports) break;
        ports[n_started].id = pid;
        if (port_setup(&ports[n_started], n_workers, pool, o.tx) != 0) {
            status = 1;
            break;
        }
        n_started++;
    }

    struct wm_worker *workers = NULL;
    if (status == 0) {
        workers = rte_zmalloc("wm_workers", sizeof *workers * n_workers, RTE_CACHE_LINE_SIZE);
        if (!workers) {
            snprintf(what, sizeof what, "no memory for the %u workers' state", n_workers);
            run_fail("%s", wm_mem_plan_explain(&plan, what, why, sizeof why));
            status = 1;
        }
    }
    for (unsigned i = 0; status == 0 && i < n_workers; i++) {
        struct wm_worker *w = &workers[i];
        w->lcore_id = lcores[i];
        w->queue_id = (uint16_t)i;
        w->n_ports = (uint16_t)n_started;
        w->tx = o.tx;
        w->quit = &force_quit;
        w->idle_exit_tsc = rte_get_tsc_hz() / 1000 * o.idle_exit_ms;
        w->xpath_apply = o.xpath_apply;
        w->match_table = match;
        if (o.match_log) {
            char *path = NULL;
            if (n_workers == 1) path = strdup(o.match_log);
            else if (asprintf(&path, "%s.%u", o.match_log, i) < 0) path = NULL;
            w->match_log = path;
        }
        for (unsigned p = 0; p < n_started; p++) {
            w->port_ids[p] = ports[p].id;
            w->port_has_queue[p] = i < ports[p].nb_rxq;
            w->port_replay[p] = (uint8_t)ports[p].replay;
        }
        if (wm_worker_init(w, &pcfg, &mcfg, NULL, (int)rte_lcore_to_socket_id(lcores[i])) != 0) {
            snprintf(what, sizeof what, "worker %u of %u (lcore %u) could not get its flow and session memory", i + 1,
                     n_workers, lcores[i]);
            run_fail("%s", wm_mem_plan_explain(&plan, what, why, sizeof why));
            status = 1;
        }
        if (status == 0 && o.frag_max) {
            w->reasm = wm_ip_reasm_new(o.frag_max, o.frag_timeout_ms, (int)rte_lcore_to_socket_id(lcores[i]));
            if (!w->reasm) {
                snprintf(what, sizeof what, "worker %u of %u (lcore %u) could not get its IPv4 reassembly table",
                         i + 1, n_workers, lcores[i]);
                run_fail("%s", wm_mem_plan_explain(&plan, what, why, sizeof why));
                status = 1;
            }
        }
    }
    /* Several workers: a session may resume on another worker than the one
     * that held its QoS 2 exchanges (mqtt_session.h, "QoS 2"). The store is
     * the run's control state, like the match tables: process memory, one
     * allocation at the start. */
    void *q2_mem = NULL;
    struct wm_qos2_store *q2_store = NULL;
    if (status == 0 && n_workers > 1) {
        size_t n = wm_qos2_store_memsize(mcfg.qos2_held, mcfg.qos2_max);
        if (!(q2_mem = aligned_alloc(64, (n + 63) & ~(size_t)63)) ||
            !(q2_store = wm_qos2_store_init(q2_mem, mcfg.qos2_held, mcfg.qos2_max))) {
            run_fail("no memory for the workers' shared QoS 2 store (%zu bytes)", n);
            status = 1;
        }
        for (unsigned i = 0; status == 0 && i < n_workers; i++) wm_mqtt_layer_set_qos2_store(workers[i].mqtt, q2_store);
    }
    if (status == 0 && wm_telemetry_register(workers, n_workers) != 0)
        fprintf(stderr, "wirematch: telemetry commands not registered (telemetry disabled?)\n");
    if (status == 0 && match) wm_telemetry_register_subs(match);
    if (status == 0 && match && wm_reload_ctl_start(match) != 0) {
        fprintf(stderr, "wirematch: cannot start the control thread\n");
        status = 1;
    }

    uint64_t t0 = rte_get_tsc_cycles();
    if (status == 0) {
        if (main_works) {
            if (wm_worker_main(&workers[0]) != 0) status = 1;
        } else {
            for (unsigned i = 0; i < n_workers; i++) rte_eal_remote_launch(wm_worker_main, &workers[i], lcores[i]);
            uint64_t hz = rte_get_tsc_hz(), next = t0 + (uint64_t)o.stats_interval * hz;
            for (;;) {
                bool all_done = true;
                for (unsigned i = 0; i < n_workers; i++) all_done &= workers[i].done;
                if (all_done || force_quit) break;
                rte_delay_us_sleep(10000); /* sleep, not spin: the main lcore may share a core */
                if (o.stats_interval && rte_get_tsc_cycles() >= next) {
                    progress_line(workers, n_workers, (double)(rte_get_tsc_cycles() - t0) / (double)hz);
                    next += (uint64_t)o.stats_interval * hz;
                }
            }
            force_quit = true;
            /* A worker that could not start (e.g. its match log cannot be
             * opened) has said why; the run then fails as a whole. */
            for (unsigned i = 0; i < n_workers; i++)
                if (rte_eal_wait_lcore(lcores[i]) != 0) status = 1;
        }
    }
    double elapsed = (double)(rte_get_tsc_cycles() - t0) / (double)rte_get_tsc_hz();
    wm_reload_ctl_stop();
    if (q2_store) wm_mqtt_layer_finish_shared(workers[0].mqtt); /* every worker has finished */

    if (status == 0 && write_summary(&o, sum_out, workers, n_workers, ports, n_started, elapsed, match) != 0) status = 1;
    else if (status != 0) close_failed_summary(sum_out);
    if (status == 0 && match) {
        struct wm_match_counters mc;
        wm_match_table_counters(match, &mc);
        if (mc.log_lines_failed) {
            char lerr[WM_MATCH_LOG_ERROR_MAX];
            wm_match_table_log_error(match, lerr, sizeof lerr);
            fprintf(stderr, "wirematch: --match-log: %" PRIu64 " of %" PRIu64 " lines not written: %s\n",
                    mc.log_lines_failed, mc.log_lines + mc.log_lines_failed, lerr);
            status = 3;
        }
    }

    for (unsigned p = 0; p < n_started; p++) {
        rte_eth_dev_stop(ports[p].id);
        rte_eth_dev_close(ports[p].id);
    }
    wm_telemetry_detach();
    if (workers) {
        for (unsigned i = 0; i < n_workers; i++) {
            free((char *)workers[i].match_log);
            wm_ip_reasm_free(workers[i].reasm);
            wm_worker_free(&workers[i]);
        }
        rte_free(workers);
    }
    rte_mempool_free(pool);
    wm_qos2_store_fini(q2_store);
    free(q2_mem);
    wm_match_table_free(match);
    rte_eal_cleanup();
    return status;
}
