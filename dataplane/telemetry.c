/* /wirematch/ telemetry commands; see telemetry.h. */
#include "dataplane/telemetry.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "control/load_error.h"
#include "control/mem_stats.h"
#include "dataplane/dp_stats.h"
#include "dataplane/flow_report.h"

static struct wm_worker *tel_workers;
static unsigned tel_n;

/* Every command answers data or {"error": REASON}: a callback that fails
 * (returns < 0) or answers nothing makes DPDK print null, which says
 * nothing about why. */
__attribute__((format(printf, 2, 3))) static int tel_error(struct rte_tel_data *d, const char *fmt, ...)
{
    char msg[RTE_TEL_MAX_STRING_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rte_tel_data_start_dict(d); /* drops whatever was added before */
    rte_tel_data_add_dict_string(d, "error", msg);
    return 0;
}

/* The refusals every command shares: parameters it does not take, and the
 * workers gone (after wm_telemetry_detach, at exit). */
static bool refuse_common(const char *params, bool takes_params, struct rte_tel_data *d)
{
    if (!takes_params && params && *params) {
        tel_error(d, "this command takes no parameters, got '%s'", params);
        return true;
    }
    if (!__atomic_load_n(&tel_n, __ATOMIC_SEQ_CST)) {
        tel_error(d, "wirematch is shutting down: the workers are gone");
        return true;
    }
    return false;
}

/* One nested dict per counter group (telemetry containers nest one level). */
struct tel_groups {
    struct rte_tel_data *top;
    struct rte_tel_data *cur;
    const char *cur_group;
    int failed;
};

static void flush_group(struct tel_groups *g)
{
    if (g->cur && rte_tel_data_add_dict_container(g->top, g->cur_group, g->cur, 0) != 0) {
        rte_tel_data_free(g->cur);
        g->failed = 1;
    }
    g->cur = NULL;
}

static void add_stat(void *ctx, const char *group, const char *name, uint64_t v)
{
    struct tel_groups *g = ctx;
    if (!g->cur_group || strcmp(g->cur_group, group) != 0) {
        flush_group(g);
        g->cur_group = group;
        g->cur = rte_tel_data_alloc();
        if (!g->cur) {
            g->failed = 1;
            return;
        }
        rte_tel_data_start_dict(g->cur);
    }
    if (g->cur) rte_tel_data_add_dict_u64(g->cur, name, v);
}

static int cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
    if (refuse_common(params, false, d)) return 0;
    struct wm_dp_totals t = {0};
    for (unsigned i = 0; i < tel_n; i++)
        if (tel_workers[i].path)
            wm_dp_totals_add(&t, tel_workers[i].path, tel_workers[i].mqtt, tel_workers[i].tx_packets, tel_workers[i].tx_dropped);
    rte_tel_data_start_dict(d);
    struct tel_groups g = {d, NULL, NULL, 0};
    wm_dp_totals_visit(&t, add_stat, &g);
    wm_mem_stats m;
    if (wm_mem_stats_read(&m)) { /* the heap outside DPDK's memory, as in the summary */
        add_stat(&g, "memory", "allocated", m.allocated);
        add_stat(&g, "memory", "active", m.active);
        add_stat(&g, "memory", "resident", m.resident);
        add_stat(&g, "memory", "mapped", m.mapped);
    }
    flush_group(&g);
    return g.failed ? tel_error(d, "out of memory building the answer") : 0;
}

static const char *flow_state_name(uint8_t s)
{
    switch (s) {
    case WM_FLOW_SYN_SENT: return "syn_sent";
    case WM_FLOW_ESTABLISHED: return "established";
    case WM_FLOW_MIDSTREAM: return "midstream";
    case WM_FLOW_CLOSED: return "closed";
    default: return "free";
    }
}

static void addr_str(const uint8_t a[16], char *buf, size_t len)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0) inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
    else inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

static int row_cmp(const void *a, const void *b)
{
    const struct wm_flow_row *x = *(const struct wm_flow_row *const *)a, *y = *(const struct wm_flow_row *const *)b;
    uint64_t bx = x->bytes[0] + x->bytes[1], by = y->bytes[0] + y->bytes[1];
    return bx > by ? -1 : bx < by;
}

/* The biggest connections of every worker (asked of each worker, see
 * flow_report.h), merged by bytes: "flow1", "flow2", ... (telemetry nests
 * one level, so each flow is a top-level dict of scalars). */
static void add_top_flows(struct rte_tel_data *d, unsigned want)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* one request per report at a time */
    pthread_mutex_lock(&mu);
    const struct wm_flow_row *rows[RTE_MAX_LCORE * 2];
    unsigned n = 0;
    for (unsigned i = 0; i < tel_n && n + WM_FLOW_REPORT_MAX <= RTE_DIM(rows); i++) {
        struct wm_worker *w = &tel_workers[i];
        if (!w->path || w->done || wm_flow_report_request(&w->flows_report, want, &w->done, 200) != 0) continue;
        for (uint32_t k = 0; k < w->flows_report.n; k++) {
            w->flows_report.rows[k].worker = i;
            rows[n++] = &w->flows_report.rows[k];
        }
    }
    qsort(rows, n, sizeof *rows, row_cmp);
    for (unsigned k = 0; k < n && k < want; k++) {
        const struct wm_flow_row *x = rows[k];
        struct rte_tel_data *c = rte_tel_data_alloc();
        if (!c) break;
        char a[INET6_ADDRSTRLEN], key[24];
        rte_tel_data_start_dict(c);
        rte_tel_data_add_dict_u64(c, "worker", x->worker);
        rte_tel_data_add_dict_u64(c, "id", x->id);
        rte_tel_data_add_dict_string(c, "client_id", x->client);
        addr_str(x->client_addr, a, sizeof a);
        rte_tel_data_add_dict_string(c, "client", a);
        rte_tel_data_add_dict_u64(c, "client_port", x->client_port);
        addr_str(x->server_addr, a, sizeof a);
        rte_tel_data_add_dict_string(c, "server", a);
        rte_tel_data_add_dict_u64(c, "server_port", x->server_port);
        rte_tel_data_add_dict_string(c, "state", flow_state_name(x->state));
        rte_tel_data_add_dict_u64(c, "c2s_packets", x->packets[WM_DIR_C2S]);
        rte_tel_data_add_dict_u64(c, "c2s_bytes", x->bytes[WM_DIR_C2S]);
        rte_tel_data_add_dict_u64(c, "s2c_packets", x->packets[WM_DIR_S2C]);
        rte_tel_data_add_dict_u64(c, "s2c_bytes", x->bytes[WM_DIR_S2C]);
        rte_tel_data_add_dict_u64(c, "idle_ms", x->idle_ns / 1000000);
        snprintf(key, sizeof key, "flow%u", k + 1);
        if (rte_tel_data_add_dict_container(d, key, c, 0) != 0) rte_tel_data_free(c);
    }
    pthread_mutex_unlock(&mu);
}

static int cmd_flows(const char *cmd, const char *params, struct rte_tel_data *d)
{
    unsigned want = 10;
    if (refuse_common(params, true, d)) return 0;
    if (params && *params) {
        char *end;
        unsigned long v = strtoul(params, &end, 10);
        if (*end || params[0] == '-' || v < 1 || v > WM_FLOW_REPORT_MAX)
            return tel_error(d, "N must be a number of connections from 1 to %u, got '%s'", WM_FLOW_REPORT_MAX, params);
        want = (unsigned)v;
    }
    rte_tel_data_start_dict(d);
    for (unsigned i = 0; i < tel_n; i++) {
        const struct wm_worker *w = &tel_workers[i];
        if (!w->path) continue;
        const volatile struct wm_flow_table *ft = &w->path->flows;
        struct rte_tel_data *c = rte_tel_data_alloc();
        if (!c) return tel_error(d, "out of memory building the answer");
        rte_tel_data_start_dict(c);
        rte_tel_data_add_dict_u64(c, "lcore", w->lcore_id);
        rte_tel_data_add_dict_u64(c, "queue", w->queue_id);
        rte_tel_data_add_dict_u64(c, "active", ft->active);
        rte_tel_data_add_dict_u64(c, "capacity", ft->cfg.max_flows);
        rte_tel_data_add_dict_u64(c, "ooo_blocks_used", ft->ooo.n_blocks - ft->ooo.n_free);
        rte_tel_data_add_dict_u64(c, "ooo_blocks", ft->ooo.n_blocks);
        rte_tel_data_add_dict_u64(c, "opened", ft->c.opened_syn + ft->c.opened_synack);
        rte_tel_data_add_dict_u64(c, "midstream", ft->c.midstream);
        uint64_t closed = 0;
        for (int r = 0; r < WM_FLOW_CLOSE_COUNT; r++) closed += ft->c.closed[r];
        rte_tel_data_add_dict_u64(c, "closed", closed);
        rte_tel_data_add_dict_u64(c, "evicted", ft->c.closed[WM_FLOW_CLOSE_EVICTED]);
        char key[32];
        snprintf(key, sizeof key, "worker%u", i);
        if (rte_tel_data_add_dict_container(d, key, c, 0) != 0) rte_tel_data_free(c);
    }
    add_top_flows(d, want);
    return 0;
}

/* Held by the table commands and by detach, so that the table is never
 * freed under a command (DPDK runs each telemetry client on its own thread). */
static pthread_mutex_t tel_match_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wm_match_table *tel_match;

/* Under tel_match_mu: the table, or NULL with the error answered. */
static struct wm_match_table *match_or_error(const char *params, struct rte_tel_data *d)
{
    if (refuse_common(params, false, d)) return NULL;
    if (!tel_match)
        tel_error(d, "no match tables: start wirematch with --resolution, --subs or --schemas to match and reload");
    return tel_match;
}

/* Adds key: value to the dict c, cut where DPDK would cut it (each string
 * at RTE_TEL_MAX_STRING_LEN - 1 bytes) but visibly: "..." at the end,
 * before a UTF-8 character rather than inside one. Returns whether it cut. */
static bool add_marked(struct rte_tel_data *c, const char *key, const char *value)
{
    size_t n = strlen(value);
    if (n < RTE_TEL_MAX_STRING_LEN) {
        rte_tel_data_add_dict_string(c, key, value);
        return false;
    }
    char cut[RTE_TEL_MAX_STRING_LEN];
    size_t keep = RTE_TEL_MAX_STRING_LEN - 4;
    while (keep > 0 && ((unsigned char)value[keep] & 0xC0) == 0x80) keep--;
    memcpy(cut, value, keep);
    memcpy(cut + keep, "...", 4);
    rte_tel_data_add_dict_string(c, key, cut);
    return true;
}

/* A reload's refusal as {"file", "line", "reason"} ({} for none): one
 * string of "FILE:LINE: reason" was cut at 127 bytes, where the reason's
 * own position ("at byte N") is; apart, each has the whole bound. A path
 * or a reason longer still (paths to PATH_MAX, reasons to
 * WM_LOAD_ERROR_REASON_MAX) ends in "..." and the dict says so under
 * "truncated"; /wirematch/last_error answers the whole line as one string,
 * whose bound is DPDK's single-string one (RTE_TEL_MAX_SINGLE_STRING_LEN). */
static void add_error(struct rte_tel_data *d, const char *key, const wm_load_error *e)
{
    struct rte_tel_data *c = rte_tel_data_alloc();
    if (!c) return;
    rte_tel_data_start_dict(c);
    if (wm_load_error_failed(e)) {
        bool file_cut = false;
        if (e->file[0]) file_cut = add_marked(c, "file", e->file);
        if (e->file[0] && e->line) rte_tel_data_add_dict_u64(c, "line", e->line);
        char reason[WM_LOAD_ERROR_REASON_MAX + 80];
        bool reason_cut = add_marked(c, "reason", wm_load_error_format_reason(e, reason, sizeof reason));
        if (file_cut || reason_cut)
            rte_tel_data_add_dict_string(c, "truncated",
                                         file_cut && reason_cut ? "file and reason: the whole text is /wirematch/last_error"
                                         : file_cut             ? "file: the whole text is /wirematch/last_error"
                                                                : "reason: the whole text is /wirematch/last_error");
    }
    if (rte_tel_data_add_dict_container(d, key, c, 0) != 0) rte_tel_data_free(c);
}

_Static_assert(WM_LOAD_ERROR_TEXT_MAX <= RTE_TEL_MAX_SINGLE_STRING_LEN,
               "/wirematch/last_error answers the whole refusal as one string");

/* The last refused reload's whole line (wm_load_error_format: "FILE:LINE:
 * reason"), "" for none, as one string. */
static int cmd_last_error(const char *cmd, const char *params, struct rte_tel_data *d)
{
    pthread_mutex_lock(&tel_match_mu);
    struct wm_match_table *t = match_or_error(params, d);
    if (t) {
        wm_load_error err;
        char *text = malloc(WM_LOAD_ERROR_TEXT_MAX);
        wm_match_table_last_error(t, &err);
        if (text) rte_tel_data_string(d, wm_load_error_format(&err, text, WM_LOAD_ERROR_TEXT_MAX));
        else tel_error(d, "out of memory building the answer");
        free(text);
    }
    pthread_mutex_unlock(&tel_match_mu);
    return 0;
}

static void add_reload_state(struct rte_tel_data *d, struct wm_match_table *t)
{
    struct wm_match_counters mc;
    wm_match_table_counters(t, &mc);
    rte_tel_data_add_dict_u64(d, "generation", mc.generation);
    rte_tel_data_add_dict_u64(d, "reloads", mc.reloads);
    rte_tel_data_add_dict_u64(d, "reload_failures", mc.reload_failures);
    rte_tel_data_add_dict_u64(d, "reload_subs_dropped", mc.reload_subs_dropped);
    rte_tel_data_add_dict_u64(d, "nbhds", mc.nbhds);
    rte_tel_data_add_dict_u64(d, "subs_preloaded", mc.subs_preloaded);
    wm_load_error err;
    wm_match_table_last_error(t, &err);
    add_error(d, "last_error", &err);
}

/* Telemetry dict keys may not contain '#' or '/': an array of "key filter" strings. */
static void add_sub(void *ctx, const char *key, const char *client, const char *filter)
{
    char line[RTE_TEL_MAX_STRING_LEN];
    snprintf(line, sizeof line, "%s %s", key, filter);
    rte_tel_data_add_array_string(ctx, line);
}

static int cmd_subs(const char *cmd, const char *params, struct rte_tel_data *d)
{
    pthread_mutex_lock(&tel_match_mu);
    struct wm_match_table *t = match_or_error(params, d);
    struct rte_tel_data *c = t ? rte_tel_data_alloc() : NULL;
    if (c) {
        rte_tel_data_start_dict(d);
        rte_tel_data_start_array(c, RTE_TEL_STRING_VAL);
        uint64_t live = wm_match_table_visit(t, 200, add_sub, c);
        rte_tel_data_add_dict_u64(d, "count", live);
        if (rte_tel_data_add_dict_container(d, "subscriptions", c, 0) != 0) rte_tel_data_free(c);
        add_reload_state(d, t);
    } else if (t) {
        tel_error(d, "out of memory building the answer");
    }
    pthread_mutex_unlock(&tel_match_mu);
    return 0;
}

/* Reloads synchronously: the answer says whether the new tables are live. */
static int cmd_reload(const char *cmd, const char *params, struct rte_tel_data *d)
{
    pthread_mutex_lock(&tel_match_mu);
    struct wm_match_table *t = match_or_error(params, d);
    if (t) {
        rte_tel_data_start_dict(d);
        wm_load_error err;
        int rc = wm_match_table_reload(t, &err);
        rte_tel_data_add_dict_string(d, "result", rc == 0 ? "ok" : "refused");
        if (rc != 0) add_error(d, "error", &err);
        add_reload_state(d, t);
    }
    pthread_mutex_unlock(&tel_match_mu);
    return 0;
}

int wm_telemetry_register(struct wm_worker *workers, unsigned n)
{
    tel_workers = workers;
    tel_n = n;
    int rc = rte_telemetry_register_cmd("/wirematch/stats", cmd_stats,
                                        "Returns every wirematch data-plane counter. Takes no parameters");
    if (rc == 0)
        rc = rte_telemetry_register_cmd("/wirematch/flows", cmd_flows,
                                        "Returns per-worker flow totals and the N biggest flows (flow1..). Parameter: N (1-32, default 10)");
    /* registered without tables too, so that they answer why they cannot */
    if (rc == 0)
        rc = rte_telemetry_register_cmd("/wirematch/subscriptions", cmd_subs,
                                        "Returns the subscriptions wirematch learned (key: filter, at most 200) "
                                        "and the table generation. Takes no parameters");
    if (rc == 0)
        rc = rte_telemetry_register_cmd("/wirematch/last_error", cmd_last_error,
                                        "Returns the last refused reload's whole reason, \"FILE:LINE: reason\" "
                                        "(\"\" for none). Takes no parameters");
    if (rc == 0)
        rc = rte_telemetry_register_cmd("/wirematch/reload", cmd_reload,
                                        "Re-reads the resolution and subscription files; a bad file is refused "
                                        "and the running tables stay. Takes no parameters");
    return rc;
}

void wm_telemetry_register_subs(struct wm_match_table *t)
{
    pthread_mutex_lock(&tel_match_mu);
    tel_match = t;
    pthread_mutex_unlock(&tel_match_mu);
}

void wm_telemetry_detach(void)
{
    pthread_mutex_lock(&tel_match_mu);
    tel_match = NULL;
    pthread_mutex_unlock(&tel_match_mu);
    __atomic_store_n(&tel_n, 0, __ATOMIC_SEQ_CST);
}
