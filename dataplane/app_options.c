/* Application options of build/wirematch; see app_options.h. */
#include "dataplane/app_options.h"

#include "control/exi_mem_cap.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every app option once: its name, its value's form, what it does, and for
 * numbers the range and default. The parser (getopt's table, the range
 * checks, the defaults) and the --help text are both built from it, so they
 * cannot disagree; README's option list is this text verbatim
 * (tests/integration/dataplane_help.sh compares them). */
enum opt_kind { OPT_STR, OPT_U32, OPT_OTHER, OPT_FLAG };
struct opt_def {
    const char *name;
    int val;
    enum opt_kind kind;
    const char *arg;              /* the value's form in the usage */
    uint32_t lo, hi, def;         /* OPT_U32 */
    size_t off;                   /* OPT_STR, OPT_U32: the field of struct wm_app_options */
    const char *help;             /* units and default; for OPT_U32 the range and default are appended */
};
#define F(field) offsetof(struct wm_app_options, field)
static const struct opt_def opts[] = {
    {"mqtt-port", 'p', OPT_OTHER, "P[,P...]", 0, 0, 0, 0,
     "broker TCP ports whose connections are followed, each 1..65535, at most 16 (default 1883)"},
    {"resolution", 'r', OPT_STR, "FILE", 0, 0, 0, F(resolution),
     "resolution (.wmr, wmctl resolve --out) of the neighborhoods to match against (default none)"},
    {"subs", 's', OPT_STR, "FILE", 0, 0, 0, F(subs), "subscriptions to preload, JSON lines (default none)"},
    {"schemas", 'x', OPT_STR, "FILE", 0, 0, 0, F(schemas),
     "schema registry that content filters (`xpath`) bind to through the Content Type (default none)"},
    {"match-log", 'm', OPT_STR, "FILE", 0, 0, 0, F(match_log),
     "one JSON line per PUBLISH; with several workers FILE.<n> per worker (default none)"},
    {"summary", 'S', OPT_STR, "FILE", 0, 0, 0, F(summary),
     "the exit summary (JSON) goes there, opened at the start (default stdout)"},
    {"tx", 't', OPT_OTHER, "matched|all|none", 0, 0, 0, 0,
     "frames sent back out of the receiving port (default none)"},
    {"stats-interval", 'i', OPT_U32, "SEC", 0, 86400, 0, F(stats_interval),
     "a progress line on stderr every SEC seconds, 0 = never"},
    {"max-flows", 'f', OPT_U32, "N", 1, 1u << 24, 16384, F(max_flows), "TCP connections tracked per worker"},
    {"ooo-blocks", 'o', OPT_U32, "N", 0, 1u << 22, 2048, F(ooo_blocks),
     "out-of-order blocks of 2 KiB per worker"},
    {"max-subs", 'B', OPT_U32, "N", 1, 1u << 24, 65536, F(max_subs),
     "subscriptions in the match table, preloaded + learned (a learned one beyond: refused, counted)"},
    {"max-trie-nodes", 'N', OPT_U32, "N", 1, 1u << 28, 0, F(max_trie_nodes),
     "wildcard-trie nodes in the match table, preloaded + learned: a filter with + or # of L distinct levels "
     "takes L (default 8 x --max-subs)"},
    {"client-trie-nodes", 'Q', OPT_U32, "N", 1, 1u << 28, 0, F(client_trie_nodes),
     "trie nodes one client's learned subscriptions may add (a SUBSCRIBE beyond: refused, counted in "
     "subs_quota) (default --max-trie-nodes / 16, at least 256)"},
    {"idle-exit-ms", 'I', OPT_U32, "MS", 1, 3600000, 200, F(idle_exit_ms),
     "a capture replay (net_pcap rx_pcap) ends after MS milliseconds of empty polling"},
    {"mbufs", 'M', OPT_U32, "N", 1024, 1u << 26, 0, F(mbufs),
     "mbufs in the pool (default: enough for the rings and reassembly; an infinite_rx replay keeps its whole "
     "capture: give at least its frame count + 8192)"},
    {"share-policy", 'P', OPT_OTHER, "round-robin|hash", 0, 0, 0, 0,
     "which member of a $share group the match log reports (default round-robin)"},
    {"xpath-apply", 'X', OPT_OTHER, "auto|async|wait", 0, 0, 0, 0,
     "with --schemas: a PUBLISH whose candidate's content filter is still compiling: skips it (async) or waits (wait); "
     "auto = wait on workers that only replay captures, async elsewhere (default auto)"},
    {"frag-max", 'F', OPT_U32, "N", 0, 65536, 256, F(frag_max),
     "IPv4 datagrams in reassembly per worker; 0 = fragments are counted and dropped"},
    {"frag-timeout-ms", 'T', OPT_U32, "MS", 1, 60000, 2000, F(frag_timeout_ms),
     "a datagram not complete within MS milliseconds is freed"},
    {"idle-timeout", 'D', OPT_U32, "SEC", 1, 604800, 600, F(idle_timeout_s),
     "a connection whose MQTT Keep Alive is not known (before its CONNECT, another protocol version) ends "
     "after SEC seconds of silence; an MQTT connection's own limit is its Keep Alive"},
    {"mem-cap", 'C', OPT_OTHER, "BYTES", 0, 0, 0, 0,
     "with --schemas: memory for decoding one PUBLISH's EXI payload for content filters, 65536..68719476736 "
     "bytes, as wmctl exi decode --mem-cap (default 4 MiB); a payload needing more counts in "
     "match.content_decode_error and passes no content filter"},
    {"help", 'h', OPT_FLAG, NULL, 0, 0, 0, 0, "this text, exit 0 (-h too; before --, EAL's options follow it)"},
};
#define N_OPTS (sizeof opts / sizeof opts[0])

/* Appends to buf[*k..cap) (cut to fit). */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t cap, size_t *k, const char *fmt, ...)
{
    if (*k >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *k, cap - *k, fmt, ap);
    va_end(ap);
    if (n > 0) *k = *k + (size_t)n < cap ? *k + (size_t)n : cap - 1;
}

const char *wm_app_options_usage(void)
{
    static char text[6144];
    if (text[0]) return text;
    size_t k = 0;
    put(text, sizeof text, &k,
        "usage: wirematch [EAL options] -- [app options]\n"
        "EAL options are DPDK's (wirematch --help lists them), for example:\n"
        "  -l 0 --no-huge --no-pci --no-shconf --vdev net_pcap0,rx_pcap=IN.pcap\n"
        "app options:\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const struct opt_def *d = &opts[i];
        char head[64], line[512];
        snprintf(head, sizeof head, "--%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
        if (d->kind == OPT_U32 && d->def >= d->lo)
            snprintf(line, sizeof line, "%s (%u..%u, default %u)", d->help, d->lo, d->hi, d->def);
        else if (d->kind == OPT_U32)
            snprintf(line, sizeof line, "%s (%u..%u)", d->help, d->lo, d->hi);
        else
            snprintf(line, sizeof line, "%s", d->help);
        /* the description in a column from 28, wrapped before column 110 */
        put(text, sizeof text, &k, "  %s", head);
        size_t col = 2 + strlen(head);
        if (col > 26) {
            put(text, sizeof text, &k, "\n");
            col = 0;
        }
        put(text, sizeof text, &k, "%*s", (int)(28 - col), "");
        col = 28;
        for (const char *w = line; *w;) {
            size_t n = strcspn(w, " ");
            if (col > 28 && col + 1 + n > 110) {
                put(text, sizeof text, &k, "\n%28s", "");
                col = 28;
            } else if (col > 28) {
                put(text, sizeof text, &k, " ");
                col++;
            }
            put(text, sizeof text, &k, "%.*s", (int)n, w);
            col += n;
            w += n;
            while (*w == ' ') w++;
        }
        put(text, sizeof text, &k, "\n");
    }
    return text;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_ports(const char *s, struct wm_app_options *o)
{
    o->n_ports = 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char buf[8];
        uint32_t v;
        if (n == 0 || n >= sizeof buf) return -1;
        memcpy(buf, p, n);
        buf[n] = 0;
        if (parse_u32(buf, 1, 65535, &v) || o->n_ports == WM_PKT_PATH_MAX_PORTS) return -1;
        o->mqtt_ports[o->n_ports++] = (uint16_t)v;
        if (!comma) return 0;
        p = comma + 1;
    }
}

int wm_app_options_parse(int argc, char **argv, struct wm_app_options *o, char *err, size_t errlen)
{
    struct option longopts[N_OPTS + 1];
    memset(longopts, 0, sizeof longopts);
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < N_OPTS; i++) {
        longopts[i] = (struct option){opts[i].name, opts[i].kind == OPT_FLAG ? no_argument : required_argument, NULL,
                                      opts[i].val};
        if (opts[i].kind == OPT_U32) *(uint32_t *)((char *)o + opts[i].off) = opts[i].def;
    }
    o->mqtt_ports[0] = 1883;
    o->n_ports = 1;
    optind = 1;
    opterr = 0;
    int c;
    /* Every option once: a second one was taken silently, the last winning
     * (REVIEW14 finding 7, found on the proxy first). */
    bool given[N_OPTS] = { false };
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        const struct opt_def *d = NULL;
        for (size_t i = 0; i < N_OPTS && !d; i++)
            if (opts[i].val == c) d = &opts[i];
        if (d && d->kind != OPT_FLAG && given[d - opts]) {
            snprintf(err, errlen, "--%s given twice: give it once", d->name);
            return -1;
        }
        if (d) given[d - opts] = true;
        if (d && d->kind == OPT_STR) {
            *(const char **)((char *)o + d->off) = optarg;
            continue;
        }
        if (d && d->kind == OPT_U32) {
            if (parse_u32(optarg, d->lo, d->hi, (uint32_t *)((char *)o + d->off))) {
                snprintf(err, errlen, "--%s: \"%s\" is not in %u..%u", d->name, optarg, d->lo, d->hi);
                return -1;
            }
            continue;
        }
        switch (c) {
        case 'p':
            if (parse_ports(optarg, o)) {
                snprintf(err, errlen, "--mqtt-port: \"%s\" is not a list of 1..%d ports in 1..65535",
                         optarg, WM_PKT_PATH_MAX_PORTS);
                return -1;
            }
            break;
        case 't':
            if (!strcmp(optarg, "none")) o->tx = WM_TX_NONE;
            else if (!strcmp(optarg, "matched")) o->tx = WM_TX_MATCHED;
            else if (!strcmp(optarg, "all")) o->tx = WM_TX_ALL;
            else {
                snprintf(err, errlen, "--tx: \"%s\" is not one of matched, all, none", optarg);
                return -1;
            }
            break;
        case 'P':
            if (!strcmp(optarg, "round-robin")) o->share_policy = WM_SHARE_ROUND_ROBIN;
            else if (!strcmp(optarg, "hash")) o->share_policy = WM_SHARE_HASH;
            else {
                snprintf(err, errlen, "--share-policy: \"%s\" is not one of round-robin, hash", optarg);
                return -1;
            }
            break;
        case 'X':
            if (!strcmp(optarg, "auto")) o->xpath_apply = WM_XPATH_APPLY_AUTO;
            else if (!strcmp(optarg, "async")) o->xpath_apply = WM_XPATH_APPLY_ASYNC;
            else if (!strcmp(optarg, "wait")) o->xpath_apply = WM_XPATH_APPLY_WAIT;
            else {
                snprintf(err, errlen, "--xpath-apply: \"%s\" is not one of auto, async, wait", optarg);
                return -1;
            }
            break;
        case 'C':
            if (wm_exi_mem_cap_parse(optarg, &o->exi_mem_cap, err, errlen)) return -1;
            break;
        case 'h':
            o->help = true;
            return 0;
        case ':':
            snprintf(err, errlen, "%s: missing its value", name);
            return -1;
        default:
            snprintf(err, errlen, "%s: unknown option", name);
            return -1;
        }
    }
    if (o->exi_mem_cap && !o->schemas) {
        /* it bounds the decoding of content-filtered payloads: none without --schemas */
        snprintf(err, errlen, "--mem-cap needs --schemas");
        return -1;
    }
    for (size_t i = 0; i < N_OPTS; i++)
        if (given[i] && opts[i].val == 'X' && !o->schemas) {
            /* content filters bind to a schema of the registry: none compile without it */
            snprintf(err, errlen, "--xpath-apply needs --schemas");
            return -1;
        }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument \"%s\"", argv[optind]);
        return -1;
    }
    return 0;
}
