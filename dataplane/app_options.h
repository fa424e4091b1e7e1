/* The application options of build/wirematch, the part of its command line
 * after EAL's "--" (DPDK convention: `wirematch [EAL options] -- [app options]`).
 *
 * Every option, its units, range and default are in one table in
 * app_options.c, from which both the parser and the usage text
 * (wm_app_options_usage, `wirematch -- --help`) are built; README's option
 * list is that text (tests/integration/dataplane_help.sh).
 *
 * Parsing is a pure function so it is tested without the EAL.
 * Thread safety: reentrant. */
#ifndef WM_DATAPLANE_APP_OPTIONS_H
#define WM_DATAPLANE_APP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/match_sink.h"
#include "dataplane/pkt_path.h"

enum wm_tx_mode { WM_TX_NONE = 0, WM_TX_MATCHED, WM_TX_ALL };
enum wm_xpath_apply { WM_XPATH_APPLY_AUTO = 0, WM_XPATH_APPLY_ASYNC, WM_XPATH_APPLY_WAIT };

struct wm_app_options {
    const char *resolution;  /* NULL if absent; strings point into argv */
    const char *subs;
    const char *schemas;
    const char *match_log;
    const char *summary;
    uint16_t mqtt_ports[WM_PKT_PATH_MAX_PORTS];
    unsigned n_ports;
    enum wm_tx_mode tx;
    uint32_t stats_interval; /* seconds */
    uint32_t max_flows;
    uint32_t ooo_blocks;
    uint32_t max_subs;       /* match table bound (preloaded + learned) */
    uint32_t max_trie_nodes; /* its wildcard trie's bound (0 = default, wm_match_bounds) */
    uint32_t client_trie_nodes; /* one client's share of it (0 = default) */
    uint32_t idle_exit_ms;
    uint32_t mbufs;          /* 0 = computed */
    enum wm_share_policy share_policy;
    uint32_t frag_max;       /* 0: no reassembly */
    uint32_t frag_timeout_ms;
    enum wm_xpath_apply xpath_apply;
    uint32_t idle_timeout_s; /* a connection whose MQTT Keep Alive is not known (600) */
    size_t exi_mem_cap;      /* --mem-cap bytes, 0 = the codec's default (4 MiB) */
    bool help;               /* --help / -h: print wm_app_options_usage, exit 0 */
};

/* Parses argv[0..argc) (argv[0] is the program name, as getopt expects;
 * getopt may reorder argv[1..]). Returns 0 (o->help set for --help/-h,
 * the rest then unparsed), or -1 with a message naming the option and the
 * reason in err[0..errlen) (exit code 2 for the caller). */
int wm_app_options_parse(int argc, char **argv, struct wm_app_options *o, char *err, size_t errlen);

/* The usage text: one line per app option with its value's form, units,
 * range and default; a static string, built on the first call (not thread
 * safe before it returned once). */
const char *wm_app_options_usage(void);

#endif
