/* libFuzzer target for the proxy's filter path: frames from clients and
 * broker through framing (dataplane/proxy_frame.h) into
 * wm_proxy_filter_packet (dataplane/proxy_filter.h) and the process-wide
 * registry of sessions and, optionally, --prefilter subscriptions
 * (dataplane/proxy_registry.h), over a two-neighborhood resolution of the
 * small test world, and hot reloads of the resolution between packets
 * (dataplane/proxy_reload.h: the worker's side, wm_proxy_filter_reload_*,
 * and the --prefilter registry's rebind) alternating with a second file
 * that redefines N1 and replaces N2 by N3. Content filters (`xpath`
 * SUBSCRIBEs, deliveries with an EXI payload) go through a real content
 * table over the SenML schema (tests/lib/exi_fixture.h; $WM_SHARED, default
 * ../shared): a SUBSCRIBE whose text is new is held (WM_PROXY_HOLD), and
 * after each step the table compiles inline and held streams are framed
 * again, as the proxy's loop does when its compile thread is done
 * (wm_proxy_content_kick / resume_held). A reload also builds a new content
 * table over the same registry.
 *
 * Input: byte 0 = configuration (bit 0: --prefilter; bits 1..3: records per
 * connection - 1; bits 4..5: sessions in the table - 1; bit 6: reloads
 * allowed; bit 7: the process's identifier epoch is the last one, so the
 * session's first proxy identifier goes on the wire as 0x0FFFFFFE and the
 * next ones wrap to 0x0F000000), then steps, each
 * a header byte (bit 0: connection A or B, which share the registry and can
 * resume each other's sessions; bit 1: direction, 0 client -> broker;
 * bit 2: close that connection first, as the proxy does on EOF or error;
 * bit 3, with reloads allowed: reload the resolution first, as a SIGHUP
 * does) and a 1-byte
 * length, then that many stream bytes.
 *
 * Laws (any break aborts):
 *  - everything released towards a peer (framed bytes and the proxy's own
 *    packets) decodes as MQTT v5 packets of the right side;
 *  - no PUBLISH released towards a client carries a Subscription Identifier
 *    of the proxy's (>= WM_PROXY_SID_BASE), which it must always strip;
 *  - a reload over the same schema registry loses no content filter (every
 *    recorded text compiles again);
 *  - no crash, leak or undefined behaviour (ASan/UBSan), and the registry
 *    is left empty once every connection is closed and every session has
 *    expired. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_decode.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_frame.h"
#include "dataplane/proxy_registry.h"
#include "control/schema_registry.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/reload_fixture.h"

#define QCAP 65536
#define MAX_PACKET 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct conn {
    wm_proxy_session ss;
    wm_proxy_filter flt;
    wm_proxy_queue q[2];
    uint8_t mem[2][QCAP];
    bool held;   /* its client stream waits at a SUBSCRIBE for a compile */
} conn;

static char *paths[2];   /* the two resolution files a reload alternates between */
static wm_proxy_spatial *fixed; /* the first one, for runs without reloads */
static uint8_t scratch[MAX_PACKET + 65546];
static conn conns[2];
static wm_schema_reg *schemas;

static void setup(void)
{
    static const char *const n1[] = { "sq1", "p_in", NULL };
    static const char *const n2[] = { "far", NULL };
    static const char *const m1[] = { "far", NULL };
    static const char *const m3[] = { "sq1", NULL };
    const wm_test_nbhd nb[] = { { "N1", n1 }, { "N2", n2 } }, nb2[] = { { "N1", m1 }, { "N3", m3 } };
    const char *dir = wm_test_tmpdir();
    paths[0] = dir ? wm_test_write_wmr(dir, "f.wmr", nb, 2) : NULL;
    paths[1] = dir ? wm_test_write_wmr(dir, "g.wmr", nb2, 2) : NULL;
    if (!paths[0] || !paths[1]) abort();
    char err[256];
    if (!(fixed = wm_proxy_spatial_open(paths[0], WM_PROXY_SPATIAL_SUBS_MAX, err, sizeof err))) abort();
    static char fixdir[] = "/tmp/wm_fuzz_pf_XXXXXX";
    char regpath[256];
    uint8_t pack[2][512];
    size_t pack_len[2];
    const char *why = wm_test_senml_fixture(fixdir, regpath, sizeof regpath, pack, pack_len);
    if (why || wm_schema_reg_load(regpath, &schemas, NULL)) abort();
}

static void content_open(wm_proxy_content *ct, wm_proxy_counters *c)
{
    memset(ct, 0, sizeof *ct);
    if (wm_proxy_content_open(ct, schemas)) abort();
    ct->req.wake_fd = -1;   /* no compile thread: kicks compile inline */
    ct->cnt = c;
    ct->max_awaiting = 4;
    wm_proxy_content_kick(ct);
}

/* A fresh matcher for a run with reloads: a rebind leaves registrations in
 * the replaced one, which the proxy closes (as here) once no worker reads
 * it. (Runs without reloads share `fixed`: opening a matcher costs far more
 * than a run.) */
static wm_proxy_spatial *open_file(int i)
{
    char err[256];
    wm_proxy_spatial *s = wm_proxy_spatial_open(paths[i], WM_PROXY_SPATIAL_SUBS_MAX, err, sizeof err);
    if (!s) abort();
    return s;
}

static void conn_open(conn *k, const wm_proxy_filter_shared *sh, wm_proxy_counters *c)
{
    wm_proxy_session_init(&k->ss, MAX_PACKET);
    for (int d = 0; d < 2; d++) wm_proxy_queue_init(&k->q[d], k->mem[d], QCAP);
    wm_proxy_filter_init(&k->flt, sh, c);
    k->ss.filter = &k->flt;
    k->ss.queues = k->q;
    k->ss.scratch = scratch;
    k->ss.scratch_cap = sizeof scratch;
    k->held = false;
}

/* Frames side dir of k as the proxy's loop does: client packets held behind
 * the CONNACK go on after it. */
static void frame(conn *k, int dir)
{
    wm_proxy_frame_result r = wm_proxy_frame(&k->ss, dir, &k->q[dir]);
    if (dir == WM_PROXY_C2U) k->held = r.held;
    if (r.connack && !k->ss.connack_refused) k->held = wm_proxy_frame(&k->ss, WM_PROXY_C2U, &k->q[WM_PROXY_C2U]).held;
}

/* Checks and consumes what queue d released: packets sent by side d (and the
 * proxy's answers to side 1 - d) towards side 1 - d. */
static void check_released(wm_proxy_queue *q, int d)
{
    wm_mqtt5_config c = { .from = d == WM_PROXY_C2U ? WM_MQTT5_FROM_CLIENT : WM_MQTT5_FROM_SERVER,
                          .topic_alias_maximum = 65535 };
    const uint8_t *b;
    uint32_t n;
    if (!wm_proxy_queue_next_send(q, &b, &n)) return;
    for (uint32_t off = 0; off < n;) {
        wm_mqtt5_packet p;
        wm_mqtt5_result r;
        if (wm_mqtt5_decode(&c, b + off, n - off, &p, &r) != WM_MQTT5_DONE) abort();
        if (d == WM_PROXY_U2C && p.type == WM_MQTT5_PUBLISH) {
            size_t pos = 0;
            uint32_t sid;
            while (wm_mqtt5_subid_next(&p.props, &pos, &sid))
                if (sid >= WM_PROXY_SID_BASE) abort();
        }
        off += (uint32_t)r.length;
    }
    wm_proxy_queue_sent(q, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 16384) return 0;
    if (!paths[0]) setup();
    int file = 0;
    bool reloads = data[0] & 0x40;
    wm_proxy_spatial *sp = reloads ? open_file(file) : fixed;
    bool prefilter = data[0] & 1;
    wm_proxy_registry *reg = wm_proxy_registry_new(prefilter ? wm_proxy_spatial_matcher(sp) : NULL,
                                                   ((data[0] >> 4) & 3) + 1, ((data[0] >> 1) & 7) + 1);
    if (!reg) abort();
    wm_proxy_filter_shared sh = { .sp = sp, .max_records = ((data[0] >> 1) & 7) + 1, .reg = reg,
                                  .sid_epoch = data[0] & 0x80 ? WM_PROXY_SID_SPAN - 1 : 0 };
    if (prefilter && !(sh.rd = wm_proxy_registry_reader(reg, &sh.rd_gen))) abort();
    wm_proxy_counters c;
    memset(&c, 0, sizeof c);
    wm_proxy_content ct;
    content_open(&ct, &c);
    sh.content = &ct;
    sh.max_texts = 4;
    for (int i = 0; i < 2; i++) conn_open(&conns[i], &sh, &c);

    size_t off = 1;
    while (off + 2 <= size) {
        uint8_t h = data[off];
        size_t n = data[off + 1];
        off += 2;
        if (n > size - off) n = size - off;
        conn *k = &conns[h & 1];
        int dir = (h >> 1) & 1;
        if (h & 4) {
            wm_proxy_filter_reset(&k->flt);
            conn_open(k, &sh, &c);
        }
        if (reloads && (h & 8)) {
            file ^= 1;
            wm_proxy_spatial *nsp = open_file(file);
            uint32_t gone = 0, nb_gone = 0, xp_gone = 0;
            char err[256];
            if (wm_proxy_registry_rebind(reg, wm_proxy_spatial_matcher(nsp), &gone, err, sizeof err)) abort();
            wm_proxy_content old;
            wm_proxy_filter_reload_begin(&sh, nsp, schemas, &old);
            if (prefilter && !sh.rd) abort();
            for (int i = 0; i < 2; i++) wm_proxy_filter_retable(&conns[i].flt, &nb_gone, &xp_gone);
            wm_proxy_filter_reload_end(&sh, &old);
            if (xp_gone) abort();   /* the same registry: every text compiles again */
            wm_proxy_spatial_close(sp);   /* no reader of its matcher is left */
            sp = nsp;
        }
        if (wm_proxy_queue_append(&k->q[dir], data + off, (uint32_t)n)) frame(k, dir);
        /* the compile thread's turn: what this step changed, then held streams go on */
        wm_proxy_content_kick(&ct);
        for (int i = 0; i < 2; i++) {
            if (conns[i].held) frame(&conns[i], WM_PROXY_C2U);
            check_released(&conns[i].q[WM_PROXY_C2U], WM_PROXY_C2U);
            check_released(&conns[i].q[WM_PROXY_U2C], WM_PROXY_U2C);
        }
        off += n;
    }

    for (int i = 0; i < 2; i++) wm_proxy_filter_reset(&conns[i].flt);
    wm_proxy_content_close(&ct);
    /* Readers must be gone (or offline) before the grace period is waited for. */
    if (sh.rd) wm_matcher_reader_free(sh.rd);
    wm_proxy_registry_reclaim(reg, UINT64_MAX);
    wm_proxy_registry_stats st;
    wm_proxy_registry_stats_get(reg, &st);
    if (st.sessions_live != 0 || st.deferred_live != 0 || st.added != st.removed) abort();
    wm_proxy_registry_free(reg);
    if (sp != fixed) wm_proxy_spatial_close(sp);
    return 0;
}
