/* Application options of build/wirematch; see app_options.h. */
#include "dataplane/app_options.h"

#include "control/exi_mem_cap.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *wm_app_options_usage(void)
{
    return "usage: wirematch [EAL options] -- [--resolution R.wmr] [--subs S.jsonl] [--schemas REG]\n"
           "         [--mqtt-port PORT[,PORT...]] [--match-log FILE] [--tx matched|all|none]\n"
           "         [--stats-interval SEC] [--max-flows N] [--ooo-blocks N] [--max-subs N] [--summary FILE]\n"
           "         [--idle-exit-ms MS] [--mbufs N] [--share-policy round-robin|hash]\n"
           "         [--frag-max N] [--frag-timeout-ms MS] [--xpath-apply auto|async|wait]\n"
           "         [--idle-timeout SEC] [--mem-cap BYTES]\n";
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
    static const struct option longopts[] = {
        {"resolution", required_argument, NULL, 'r'},
        {"subs", required_argument, NULL, 's'},
        {"schemas", required_argument, NULL, 'x'},
        {"mqtt-port", required_argument, NULL, 'p'},
        {"match-log", required_argument, NULL, 'm'},
        {"tx", required_argument, NULL, 't'},
        {"stats-interval", required_argument, NULL, 'i'},
        {"max-flows", required_argument, NULL, 'f'},
        {"ooo-blocks", required_argument, NULL, 'o'},
        {"max-subs", required_argument, NULL, 'B'},
        {"summary", required_argument, NULL, 'S'},
        {"idle-exit-ms", required_argument, NULL, 'I'},
        {"mbufs", required_argument, NULL, 'M'},
        {"share-policy", required_argument, NULL, 'P'},
        {"frag-max", required_argument, NULL, 'F'},
        {"frag-timeout-ms", required_argument, NULL, 'T'},
        {"xpath-apply", required_argument, NULL, 'X'},
        {"idle-timeout", required_argument, NULL, 'D'},
        {"mem-cap", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->mqtt_ports[0] = 1883;
    o->n_ports = 1;
    o->max_flows = 16384;
    o->ooo_blocks = 2048;
    o->max_subs = 65536;
    o->idle_exit_ms = 200;
    o->frag_max = 256;
    o->frag_timeout_ms = 2000;
    o->idle_timeout_s = 600;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        switch (c) {
        case 'r': o->resolution = optarg; break;
        case 's': o->subs = optarg; break;
        case 'x': o->schemas = optarg; break;
        case 'm': o->match_log = optarg; break;
        case 'S': o->summary = optarg; break;
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
        case 'i':
            if (parse_u32(optarg, 0, 86400, &o->stats_interval)) {
                snprintf(err, errlen, "--stats-interval: \"%s\" is not a number of seconds in 0..86400", optarg);
                return -1;
            }
            break;
        case 'f':
            if (parse_u32(optarg, 1, 1u << 24, &o->max_flows)) {
                snprintf(err, errlen, "--max-flows: \"%s\" is not in 1..16777216", optarg);
                return -1;
            }
            break;
        case 'o':
            if (parse_u32(optarg, 0, 1u << 22, &o->ooo_blocks)) {
                snprintf(err, errlen, "--ooo-blocks: \"%s\" is not in 0..4194304", optarg);
                return -1;
            }
            break;
        case 'B':
            if (parse_u32(optarg, 1, 1u << 24, &o->max_subs)) {
                snprintf(err, errlen, "--max-subs: \"%s\" is not in 1..16777216", optarg);
                return -1;
            }
            break;
        case 'I':
            if (parse_u32(optarg, 1, 3600000, &o->idle_exit_ms)) {
                snprintf(err, errlen, "--idle-exit-ms: \"%s\" is not in 1..3600000", optarg);
                return -1;
            }
            break;
        case 'M':
            if (parse_u32(optarg, 1024, 1u << 26, &o->mbufs)) {
                snprintf(err, errlen, "--mbufs: \"%s\" is not in 1024..67108864", optarg);
                return -1;
            }
            break;
        case 'F':
            if (parse_u32(optarg, 0, 65536, &o->frag_max)) {
                snprintf(err, errlen, "--frag-max: \"%s\" is not in 0..65536", optarg);
                return -1;
            }
            break;
        case 'T':
            if (parse_u32(optarg, 1, 60000, &o->frag_timeout_ms)) {
                snprintf(err, errlen, "--frag-timeout-ms: \"%s\" is not in 1..60000", optarg);
                return -1;
            }
            break;
        case 'D':
            if (parse_u32(optarg, 1, 604800, &o->idle_timeout_s)) {
                snprintf(err, errlen, "--idle-timeout: \"%s\" is not a number of seconds in 1..604800", optarg);
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
            snprintf(err, errlen, "%s", wm_app_options_usage());
            return -1;
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
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument \"%s\"", argv[optind]);
        return -1;
    }
    return 0;
}
