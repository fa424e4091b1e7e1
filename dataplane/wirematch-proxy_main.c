/* wirematch-proxy: io_uring MQTT v5 front end for an unmodified broker.
 * Option parsing only; the relay is proxy_loop.c. Exit codes: 0 clean stop
 * (SIGINT/SIGTERM), 1 runtime failure (missing kernel feature, socket
 * error), 2 usage. */
#include "control/exi_mem_cap.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_reload.h"
#include "dataplane/proxy_spatial.h"
#include "dataplane/proxy_state.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: wirematch-proxy --listen ADDR:PORT --upstream ADDR:PORT [options]\n"
        "  Relays MQTT v5 between clients and an upstream broker; one upstream\n"
        "  connection per client connection; a client whose broker cannot be reached\n"
        "  gets CONNACK 0x88 (Server unavailable), one whose broker connection ends\n"
        "  without a DISCONNECT gets DISCONNECT 0x80. Stops on SIGINT/SIGTERM (every\n"
        "  acknowledged client gets DISCONNECT 0x8B, Server shutting down) and prints a\n"
        "  JSON summary (stdout, or --summary FILE). SIGHUP reloads --resolution\n"
        "  and --schemas together, live connections included (a bad file is refused\n"
        "  and the current ones stay). SIGUSR1 writes the summary of the moment\n"
        "  (\"live\": true) without stopping anything: it replaces --summary FILE\n"
        "  (written aside and renamed over it), or is one line on stderr.\n"
        "  At start RLIMIT_NOFILE is raised to its hard limit if 2 x --max-conns +\n"
        "  a fixed part exceeds it (a warning if still short); out of descriptors,\n"
        "  waiting clients get CONNACK 0x89 (Server busy), counted in limits.fds.\n"
        "  Each option at most once; one that needs another (below: \"with ...\") is\n"
        "  refused without it (exit 2). A --listen address in use: exit 1, the reason\n"
        "  on stderr and {\"error\": REASON} in --summary FILE (nothing on stdout).\n"
        "options:\n"
        "  --threads N          workers, one io_uring each (default 1)\n"
        "  --max-conns N        client connections at once, all workers (default 1024); a\n"
        "                       client beyond it gets CONNACK 0x89 (Server busy) to its CONNECT\n"
        "  --conn-buffer BYTES  queued bytes towards one peer before its other side\n"
        "                       stops being read (default 65536)\n"
        "  --total-buffer BYTES bytes held by all connections (default 67108864)\n"
        "  --max-packet BYTES   largest MQTT packet relayed (default 262144)\n"
        "  --connect-timeout MS a connect to the upstream not done by then fails: the\n"
        "                       client gets CONNACK 0x88 (default 5000)\n"
        "  --connect-packet-timeout MS  a client whose whole CONNECT has not come MS after\n"
        "                       the proxy started reading it (its upstream connect done or\n"
        "                       failed) is closed, both connections (default 10000)\n"
        "  --linger-ms MS       a connection the proxy ends after telling the client why is\n"
        "                       half-closed, and what the client still sends read and dropped\n"
        "                       until it closes, at most MS (default 2000; 0: close at once,\n"
        "                       a client that sent more then gets RST, which can destroy the\n"
        "                       DISCONNECT telling it why)\n"
        "  --linger-bytes BYTES ... and at most BYTES (default 1048576)\n"
        "  --batch-wait-us US   when busy, let completions gather US microseconds before\n"
        "                       handling them (fewer wake-ups and TCP segments; default 1000)\n"
        "  --batch-rate N       a worker batches once two of its last eight 4 ms windows\n"
        "                       relayed at least N MQTT packets/s (both directions), until\n"
        "                       four in a row under it (default 75000; 0: always);\n"
        "                       otherwise it wakes at the first completion\n"
        "  --resolution R.wmr   filter spatially: SUBSCRIBEs with a `nbhd` User Property get\n"
        "                       only PUBLISHes whose `peid` is in that neighborhood of R.wmr\n"
        "                       (made by `wmctl resolve --out`); see README\n"
        "  --max-subs-per-conn N  (with --resolution) subscriptions recorded per connection\n"
        "                       (default 4096; a neighborhood SUBSCRIBE beyond it gets SUBACK 0x97)\n"
        "  --max-sessions N     (with --resolution) persistent sessions whose filters are remembered across\n"
        "                       reconnects (default 65536; beyond it a neighborhood SUBSCRIBE\n"
        "                       on a session with a Session Expiry Interval gets SUBACK 0x97)\n"
        "  --state FILE         (with --resolution) keep the persistent sessions' filtered\n"
        "                       subscriptions in FILE across restarts: saved atomically when\n"
        "                       they change (every 200 ms at most) and at the stop, loaded at\n"
        "                       start; a bad FILE is refused with its line and column\n"
        "  --prefilter          (with --resolution) keep a client PUBLISH that no subscription\n"
        "                       made through this proxy can receive from the broker; QoS > 0\n"
        "                       is acknowledged with 0x10 No matching subscribers; retained\n"
        "                       messages always go on; its table holds\n"
        "                       (--max-conns + --max-sessions) x --max-subs-per-conn\n"
        "                       subscriptions, at most 1048576 (~225 MB of heap at that);\n"
        "                       a filter deeper than 64 levels counts as its first 63 + '#',\n"
        "                       one the table has no room for gets SUBACK 0x97 (Quota exceeded)\n"
        "  --schemas REG        (with --resolution) content filters: SUBSCRIBEs with an `xpath`\n"
        "                       User Property get only PUBLISHes whose EXI payload it selects\n"
        "                       something in, with the schema the PUBLISH's Content Type\n"
        "                       \"application/exi; schema=NAME\" names in the registry REG\n"
        "                       (lines NAME XSD [OPTION...] [PREFIX=URI...]); see README\n"
        "  --mem-cap BYTES      (with --schemas) memory for decoding one PUBLISH's EXI payload\n"
        "                       (string table, values, element stack), 65536..68719476736\n"
        "                       (default 4194304, 4 MiB); a payload needing more is a decode\n"
        "                       error for its filters, counted, and no filter passes it\n"
        "  --max-xpath-per-conn N  (with --schemas) distinct `xpath` texts one connection may hold (default\n"
        "                       128; a SUBSCRIBE with one more gets SUBACK 0x97 Quota exceeded)\n"
        "  --summary FILE       write the JSON summary there instead of stdout\n"
        "  -v, --verbose        log connection errors to stderr\n"
        "  -h, --help\n"
        "example: wirematch-proxy --listen 127.0.0.1:1884 --upstream 127.0.0.1:1883 --threads 2\n");
}

/* The summary (at the stop, or live on SIGUSR1) into --summary's file,
 * written aside (FILE.tmp) and renamed over it, so that a reader never sees
 * half of one; if the directory refuses the file aside, FILE is rewritten in
 * place. Without --summary: the stop's goes to stdout, a live one to stderr
 * (stdout carries one summary, at the end). */
typedef struct summary_out {
    const char *path;     /* --summary, NULL = none */
    const wm_proxy_config *cfg;
} summary_out;

static int summary_to_path(const summary_out *so, const wm_proxy_counters *c, uint64_t elapsed, int late)
{
    size_t n = strlen(so->path);
    char *tmp = malloc(n + 5);
    if (!tmp) return -1;
    memcpy(tmp, so->path, n);
    memcpy(tmp + n, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (f) {
        rc = wm_proxy_write_summary(f, so->cfg, c, elapsed, late);
        if (fclose(f) != 0) rc = -1;
        if (rc == 0 && rename(tmp, so->path) != 0) rc = -1;
        if (rc != 0) unlink(tmp);
    }
    if (rc != 0 && (f = fopen(so->path, "w"))) {
        rc = wm_proxy_write_summary(f, so->cfg, c, elapsed, late);
        if (fclose(f) != 0) rc = -1;
    }
    free(tmp);
    return rc;
}

static void live_summary(void *ctx, const wm_proxy_counters *c, uint64_t elapsed, unsigned late)
{
    const summary_out *so = ctx;
    if (!so->path) {
        wm_proxy_write_summary(stderr, so->cfg, c, elapsed, (int)late);
    } else if (summary_to_path(so, c, elapsed, (int)late) != 0) {
        fprintf(stderr, "wirematch-proxy: SIGUSR1: cannot write --summary %s: %s\n", so->path, strerror(errno));
    }
}

static int parse_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || !*v || *end || v[0] == '-' || x < lo || x > hi) {
        fprintf(stderr, "wirematch-proxy: %s: \"%s\" is not an integer in %llu..%llu\n", opt, v,
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

int main(int argc, char **argv)
{
    sigset_t sigs;
    wm_proxy_block_signals(&sigs);
    wm_proxy_config cfg;
    wm_proxy_config_defaults(&cfg);
    const char *summary = NULL, *resolution = NULL, *schemas = NULL, *state = NULL;
    wm_proxy_state_saver saver = { 0 };
    int prefilter = 0;
    static const struct option opts[] = {
        { "listen", required_argument, 0, 'l' },      { "upstream", required_argument, 0, 'u' },
        { "threads", required_argument, 0, 't' },     { "max-conns", required_argument, 0, 'c' },
        { "conn-buffer", required_argument, 0, 'b' }, { "total-buffer", required_argument, 0, 'B' },
        { "max-packet", required_argument, 0, 'p' },  { "summary", required_argument, 0, 's' },
        { "batch-wait-us", required_argument, 0, 'W' },
        { "batch-rate", required_argument, 0, 'r' },
        { "connect-timeout", required_argument, 0, 'T' },
        { "connect-packet-timeout", required_argument, 0, 'K' },
        { "linger-ms", required_argument, 0, 'L' },   { "linger-bytes", required_argument, 0, 'Y' },
        { "state", required_argument, 0, 'Z' },
        { "resolution", required_argument, 0, 'R' }, { "schemas", required_argument, 0, 'S' },
        { "max-subs-per-conn", required_argument, 0, 'M' }, { "prefilter", no_argument, 0, 'P' },
        { "max-sessions", required_argument, 0, 'X' }, { "max-xpath-per-conn", required_argument, 0, 'x' },
        { "mem-cap", required_argument, 0, 'C' },
        { "verbose", no_argument, 0, 'v' },           { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 } };
    int o;
    uint64_t x;
    char err[512];
    /* Every option once: a second one was taken silently, the last winning
     * (a second --upstream replaced the first: REVIEW14 finding 7). */
    unsigned char given[128] = { 0 };
    while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        if (o > 0 && o < 128 && o != 'h' && o != '?' && given[o]++) {
            const struct option *d = opts;
            while (d->name && d->val != o) d++;
            fprintf(stderr, "wirematch-proxy: --%s given twice: give it once\n", d->name ? d->name : "?");
            usage(stderr);
            return 2;
        }
        switch (o) {
        case 'l':
            cfg.listen_text = optarg;
            if (wm_proxy_parse_addr(optarg, &cfg.listen_addr, &cfg.listen_len, err, sizeof err) < 0) {
                fprintf(stderr, "wirematch-proxy: --listen %s\n", err);
                return 2;
            }
            break;
        case 'u':
            cfg.upstream_text = optarg;
            if (wm_proxy_parse_addr(optarg, &cfg.upstream_addr, &cfg.upstream_len, err, sizeof err) < 0) {
                fprintf(stderr, "wirematch-proxy: --upstream %s\n", err);
                return 2;
            }
            break;
        case 't': if (parse_u64("--threads", optarg, 1, 256, &x)) return 2; cfg.threads = (unsigned)x; break;
        case 'c': if (parse_u64("--max-conns", optarg, 1, 1u << 20, &x)) return 2; cfg.max_conns = (uint32_t)x; break;
        case 'b': if (parse_u64("--conn-buffer", optarg, 1024, 1u << 30, &x)) return 2; cfg.conn_buffer = (uint32_t)x; break;
        case 'B': if (parse_u64("--total-buffer", optarg, 4096, 1ull << 40, &x)) return 2; cfg.total_buffer = x; break;
        case 'p': if (parse_u64("--max-packet", optarg, 2, 268435460u, &x)) return 2; cfg.max_packet = (uint32_t)x; break;
        case 'W': if (parse_u64("--batch-wait-us", optarg, 0, 10000, &x)) return 2; cfg.batch_wait_ns = (uint32_t)x * 1000; break;
        case 'r': if (parse_u64("--batch-rate", optarg, 0, 1000000000, &x)) return 2; cfg.batch_rate = (uint32_t)x; break;
        case 'T': if (parse_u64("--connect-timeout", optarg, 1, 600000, &x)) return 2; cfg.connect_timeout_ms = (uint32_t)x; break;
        case 'K':
            if (parse_u64("--connect-packet-timeout", optarg, 1, 3600000, &x)) return 2;
            cfg.connect_packet_timeout_ms = (uint32_t)x;
            break;
        case 'L': if (parse_u64("--linger-ms", optarg, 0, 60000, &x)) return 2; cfg.linger_ms = (uint32_t)x; break;
        case 'Y': if (parse_u64("--linger-bytes", optarg, 1, 1u << 30, &x)) return 2; cfg.linger_bytes = (uint32_t)x; break;
        case 's': summary = optarg; break;
        case 'Z': state = optarg; break;
        case 'R': resolution = optarg; break;
        case 'P': prefilter = 1; break;
        case 'S': schemas = optarg; break;
        case 'x': if (parse_u64("--max-xpath-per-conn", optarg, 1, WM_CONTENT_MAX_SLOTS, &x)) return 2; cfg.max_texts = (uint32_t)x; break;
        case 'M': if (parse_u64("--max-subs-per-conn", optarg, 1, 1u << 24, &x)) return 2; cfg.max_records = (uint32_t)x; break;
        case 'X': if (parse_u64("--max-sessions", optarg, 1, 1u << 24, &x)) return 2; cfg.max_sessions = (uint32_t)x; break;
        case 'C':
            if (wm_exi_mem_cap_parse(optarg, &cfg.exi_mem_cap, err, sizeof err)) {
                fprintf(stderr, "wirematch-proxy: %s\n", err);
                return 2;
            }
            break;
        case 'v': cfg.verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || !cfg.listen_text || !cfg.upstream_text) {
        if (optind < argc) fprintf(stderr, "wirematch-proxy: unexpected argument \"%s\"\n", argv[optind]);
        else fprintf(stderr, "wirematch-proxy: --listen and --upstream are required\n");
        usage(stderr);
        return 2;
    }
    if (cfg.max_conns < cfg.threads) cfg.max_conns = cfg.threads;
    /* An option that would do nothing without another is refused, naming
     * it: before 2026-12-02 --max-subs-per-conn, --max-sessions and
     * --max-xpath-per-conn were taken and ignored while --mem-cap, --state
     * and --prefilter were refused (REVIEW14 finding 7). Only the filtering
     * (--resolution) keeps records, sessions and the registry; the content
     * filters (--schemas), which decode payloads, hold texts. */
    static const struct { int opt; int needs; const char *name, *needs_name; } needs[] = {
        { 'P', 'R', "--prefilter", "--resolution" },         { 'Z', 'R', "--state", "--resolution" },
        { 'M', 'R', "--max-subs-per-conn", "--resolution" }, { 'X', 'R', "--max-sessions", "--resolution" },
        { 'S', 'R', "--schemas", "--resolution" },           { 'C', 'S', "--mem-cap", "--schemas" },
        { 'x', 'S', "--max-xpath-per-conn", "--schemas" },
    };
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if (given[needs[i].opt] && !given[needs[i].needs]) {
            fprintf(stderr, "wirematch-proxy: %s needs %s\n", needs[i].name, needs[i].needs_name);
            usage(stderr);
            return 2;
        }
    wm_proxy_spatial *sp = NULL;
    wm_proxy_registry *reg = NULL;
    wm_schema_reg *sreg = NULL;
    wm_load_error serr;
    if (schemas && wm_schema_reg_load(schemas, &sreg, &serr)) {
        fprintf(stderr, "wirematch-proxy: --schemas %s\n", wm_load_error_format(&serr, err, sizeof err));
        return 1;
    }
    cfg.schemas = sreg;
    wm_proxy_tables *tables = NULL;
    if (resolution) {
        char why[512];
        /* The --prefilter registry holds the subscriptions of the connections
         * (at most --max-conns, each at most --max-subs-per-conn records) and
         * those of persistent sessions whose client is away (at most
         * --max-sessions entries of as many); without --prefilter none. */
        uint64_t subs = prefilter ? ((uint64_t)cfg.max_conns + cfg.max_sessions) * cfg.max_records : 0;
        sp = wm_proxy_spatial_open(resolution, subs > WM_PROXY_SPATIAL_SUBS_MAX ? WM_PROXY_SPATIAL_SUBS_MAX : (uint32_t)subs,
                                   why, sizeof why);
        if (!sp) {
            fprintf(stderr, "wirematch-proxy: --resolution %s\n", why);
            wm_schema_reg_free(sreg);
            return 1;
        }
        /* A persistent session outlives this process at the broker: its
         * identifiers are turned by an epoch of this process's own so that a
         * later process does not hand out the same ones (proxy_filter.h).
         * Without the kernel's randomness, time and pid are unlikely to repeat. */
        uint32_t epoch;
        if (getrandom(&epoch, sizeof epoch, 0) != (ssize_t)sizeof epoch) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            epoch = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)getpid() << 16;
        }
        cfg.sid_epoch = epoch % WM_PROXY_SID_SPAN;
        /* Sessions always; the matcher only for --prefilter. The tables own
         * sp and sreg from here on (reloads replace them). */
        reg = wm_proxy_registry_new(prefilter ? wm_proxy_spatial_matcher(sp) : NULL, cfg.max_sessions, cfg.max_records);
        if (reg) tables = wm_proxy_tables_new(resolution, sp, schemas, sreg, cfg.threads, prefilter ? reg : NULL);
        if (!tables) {
            fprintf(stderr, "wirematch-proxy: out of memory\n");
            wm_proxy_registry_free(reg);
            wm_proxy_spatial_close(sp);
            wm_schema_reg_free(sreg);
            return 1;
        }
        cfg.spatial = sp;
        cfg.tables = tables;
        cfg.resolution_text = resolution;
        cfg.registry = reg;
    }
    if (state) {
        /* Before relaying: a bad file is refused with its position, and the
         * first save (also a check that FILE can be written) holds what it
         * had, with the epoch its identifiers were turned by. */
        if (wm_proxy_state_start(&saver, state, cfg.sid_epoch, reg, err, sizeof err) == 0) {
            cfg.sid_epoch = saver.epoch;
        } else {
            fprintf(stderr, "wirematch-proxy: --state %s\n", err);
            wm_proxy_state_stop(&saver);
            wm_proxy_registry_free(reg);
            wm_proxy_tables_free(tables);
            return 1;
        }
        if (cfg.verbose)
            fprintf(stderr, "wirematch-proxy: --state %s: %u sessions, %u records restored (%s)\n", state,
                    saver.loaded.sessions, saver.loaded.records,
                    !saver.loaded.found ? "no file yet" : saver.loaded.clean ? "clean stop" : "not a clean stop");
        cfg.state = &saver;
    }

    /* Opened before relaying: an unwritable --summary is refused at start,
     * not discovered at the stop, when the counters would be lost. */
    FILE *out = stdout;
    if (summary && !(out = fopen(summary, "w"))) {
        fprintf(stderr, "wirematch-proxy: --summary %s: %s\n", summary, strerror(errno));
        wm_proxy_state_stop(&saver);
        wm_proxy_registry_free(reg);
        wm_proxy_tables_free(tables);
        if (!tables) wm_schema_reg_free(sreg);
        return 1;
    }
    if (out != stdout) fclose(out);
    summary_out so = { summary, &cfg };
    cfg.live = live_summary;
    cfg.live_ctx = &so;
    wm_proxy_fd_limit(&cfg);
    wm_proxy_counters total;
    uint64_t elapsed;
    /* (the clean --state save is made by wm_proxy_run, on the saver's thread) */
    char why[512];
    int rc = wm_proxy_run(&cfg, &total, &elapsed, why, sizeof why);
    if (rc == -2) {
        /* Never started (stderr has said why): no counters to give. The
         * --summary FILE says why; stdout, where a summary would be taken
         * for one of a run, gets nothing (as the data plane does). Before
         * 2026-12-02 a full all-zero summary (REVIEW14 finding 7). */
        FILE *f = summary ? fopen(summary, "w") : NULL;
        if (f) {
            wm_proxy_write_failed_summary(f, why);
            fclose(f);
        }
    } else if (summary ? summary_to_path(&so, &total, elapsed, -1) < 0
                       : wm_proxy_write_summary(stdout, &cfg, &total, elapsed, -1) < 0) {
        rc = -1;
    }
    /* a compile abandoned at the stop still reads the schemas, a saver the
     * disk holds the registry: no frees */
    if (total.compile_detached || total.state_saver_stuck) {
        fflush(NULL);
        _exit(rc == 0 ? 0 : 1);
    }
    if (cfg.state) wm_proxy_state_stop(cfg.state);
    wm_proxy_registry_free(reg);    /* before the tables: it points into their matcher */
    wm_proxy_tables_free(tables);   /* the tables in use then (the first ones, or reloaded), schemas included */
    return rc == 0 ? 0 : 1;
}
