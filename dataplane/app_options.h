/* The application options of build/wirematch, the part of its command line
 * after EAL's "--" (DPDK convention: `wirematch [EAL options] -- [app options]`).
 *
 *   --resolution FILE     resolution (.wmr) to match against
 *   --subs FILE           subscriptions to preload (JSON lines)
 *   --schemas FILE        schema registry (control/schema_registry.h): the schemas
 *                         content filters (`xpath`) bind to through the Content Type
 *   --mqtt-port P[,P...]  broker TCP ports (default 1883), up to 16
 *   --match-log FILE      match log, one JSON line per PUBLISH
 *   --tx matched|all|none what to transmit back out of the receiving port (default none)
 *   --stats-interval SEC  a progress line on stderr every SEC seconds (0 = never, default)
 *   --max-flows N         connections tracked per worker (default 16384)
 *   --ooo-blocks N        out-of-order 2 KiB blocks per worker (default 2048)
 *   --max-subs N          subscriptions in the match table, preloaded + learned (default
 *                         65536, 1..16777216); a SUBSCRIBE beyond it is refused, counted
 *                         (match.subs_full, mqtt.subs_full); each worker keeps result
 *                         buffers of this size
 *   --summary FILE        write the exit summary (JSON) there instead of stdout
 *                         (wirematch_main opens it at the start: unwritable, exit 1)
 *   --idle-exit-ms MS     replay ports: stop when every queue has been empty this long (default 200)
 *   --frag-max N          IPv4 datagrams in reassembly per worker (default 256; 0: fragments
 *                         are counted and dropped, not reassembled; ip_reasm.h)
 *   --frag-timeout-ms MS  a datagram not complete within MS is freed (default 2000)
 *   --share-policy round-robin|hash  which member of a $share group the match
 *                         log reports (match_sink.h; default round-robin)
 *   --xpath-apply auto|async|wait  what a PUBLISH does with a subscription whose new
 *                         content filter is still being compiled (match_sink.h, "When a
 *                         new content filter applies"): async skips that subscription,
 *                         wait waits for the compile; auto (default) = wait on workers
 *                         that only replay captures, async on the others
 *   --mem-cap BYTES       memory for decoding one PUBLISH's EXI payload for content
 *                         filters (string table, values, element stack), 65536..68719476736
 *                         (control/exi_mem_cap.h, as `wmctl exi decode`); default 4 MiB; a
 *                         payload needing more is a decode error of its filters (counted)
 *   --mbufs N             size of the mbuf pool (default: enough for the rings; a net_pcap
 *                         infinite_rx replay holds its whole capture in mbufs, so give at
 *                         least its packet count plus 8192)
 *
 * Parsing is a pure function so it is tested without the EAL.
 * Thread safety: reentrant. */
#ifndef WM_DATAPLANE_APP_OPTIONS_H
#define WM_DATAPLANE_APP_OPTIONS_H

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
    unsigned stats_interval; /* seconds */
    uint32_t max_flows;
    uint32_t ooo_blocks;
    uint32_t max_subs;       /* match table bound (preloaded + learned) */
    uint32_t idle_exit_ms;
    uint32_t mbufs;          /* 0 = computed */
    enum wm_share_policy share_policy;
    uint32_t frag_max;       /* 0: no reassembly */
    uint32_t frag_timeout_ms;
    enum wm_xpath_apply xpath_apply;
    uint32_t idle_timeout_s; /* a connection whose MQTT Keep Alive is not known (600) */
    size_t exi_mem_cap;      /* --mem-cap bytes, 0 = the codec's default (4 MiB) */
};

/* Parses argv[0..argc) (argv[0] is the program name, as getopt expects).
 * Returns 0, or -1 with a message naming the option and the reason in
 * err[0..errlen) (exit code 2 for the caller). */
int wm_app_options_parse(int argc, char **argv, struct wm_app_options *o, char *err, size_t errlen);

/* The usage text (one paragraph per option), for --help and errors. */
const char *wm_app_options_usage(void);

#endif
