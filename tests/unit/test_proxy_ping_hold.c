/* PINGREQs behind a SUBSCRIBE held for its content compile
 * (dataplane/proxy_frame.h, REVIEW8 finding 3), through the framing and a
 * real content table (SenML registry, compiles inline): the first PINGREQ
 * goes on to the broker in front of the held packets, the others, while its
 * PINGRESP has not come, are answered by the proxy; the held packets keep
 * their bytes and order; a PINGREQ with no room for its PINGRESP waits. And
 * the cost: memmove(3) is interposed and the bytes it moves while the pings
 * are framed are counted. Before the fix each PINGREQ moved every held byte
 * (here 1,000 PINGREQs behind ~6 KB held: 6 MB moved, against ~2 KB
 * received). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/mqtt5_decode.h"
#include "control/schema_registry.h"
#include "dataplane/proxy.h"
#include "dataplane/proxy_answers.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_frame.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/mqtt5_build.h"
#include "tests/lib/proxy_wire.h"
#include "tests/lib/reload_fixture.h"

static bool g_count;
static uint64_t g_moved;

/* Overrides libc's for this executable (the framing is linked in
 * statically): counts the bytes moved while g_count is set. */
void *memmove(void *dst, const void *src, size_t n)
{
    static void *(*real)(void *, const void *, size_t);
    if (!real) real = (void *(*)(void *, const void *, size_t))dlsym(RTLD_NEXT, "memmove");
    if (g_count) g_moved += n;
    return real(dst, src, n);
}

static wm_proxy_spatial *sp;
static wm_schema_reg *reg;
static wm_proxy_content ct;
static wm_proxy_filter_shared fsh;
static wm_proxy_counters ctr;
static wm_proxy_session ss;
static wm_proxy_filter flt;
static wm_proxy_queue q[2];
static uint8_t qmem[2][1 << 16], scratch[1 << 17];
static char fixdir[] = "/tmp/wm_ping_hold_XXXXXX", regpath[128];

static void setup(void)
{
    static const char *const n1[] = { "sq1", NULL };
    const wm_test_nbhd nb[] = { { "N1", n1 } };
    sp = wm_test_proxy_spatial("p.wmr", nb, 1);
    uint8_t pack[2][512];
    size_t pack_len[2];
    const char *why = wm_test_senml_fixture(fixdir, regpath, sizeof regpath, pack, pack_len);
    cr_assert_null(why, "%s", why);
    wm_load_error le;
    cr_assert_eq(wm_schema_reg_load(regpath, &reg, &le), 0, "%s", le.reason);
    memset(&ct, 0, sizeof ct);
    cr_assert_eq(wm_proxy_content_open(&ct, reg), 0);
    ct.req.wake_fd = -1;
    ct.cnt = &ctr;
    ct.max_awaiting = 64;
    wm_proxy_content_kick(&ct);   /* no compile thread: runs inline, the empty table's snapshot */
    fsh = (wm_proxy_filter_shared){ .sp = sp, .content = &ct, .max_records = 16, .max_texts = 8 };
    wm_test_proxy_wire(&ss, 1 << 15, &flt, &fsh, &ctr, q, qmem[0], sizeof qmem[0], scratch, sizeof scratch);
}

static void teardown(void)
{
    wm_proxy_filter_reset(&flt);
    wm_proxy_content_close(&ct);
    wm_schema_reg_free(reg);
    wm_proxy_spatial_close(sp);
    unlink(regpath);
    rmdir(fixdir);
}

TestSuite(proxy_ping_hold, .init = setup, .fini = teardown);

static wm_proxy_frame_result feed(int dir, const void *p, size_t n)
{
    cr_assert(wm_proxy_queue_append(&q[dir], p, (uint32_t)n));
    wm_proxy_frame_result r = wm_proxy_frame(&ss, dir, &q[dir]);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    return r;
}

/* Takes the next framed packet of queue d (what the proxy sends on): its type, 0 if none. */
static int next(int d, wm_mqtt5_packet *pkt)
{
    return wm_test_proxy_next(&q[d], d, pkt) ? pkt->type : 0;
}

/* How many packets of queue d are framed, all of type `type` (checked). */
static uint32_t take_all(int d, int type)
{
    wm_mqtt5_packet p;
    uint32_t n = 0;
    for (int t; (t = next(d, &p)); n++) cr_assert_eq(t, type, "packet %u of queue %d: type %d", n, d, t);
    return n;
}

/* CONNECT, the broker's CONNACK (Subscription Identifier Available), then a
 * SUBSCRIBE with a new xpath text (held: its compile has not run) and a
 * PUBLISH of `big` payload bytes behind it, in one chunk. */
static void held_subscribe(size_t big)
{
    /* MQTT 5, Clean Start, Keep Alive 60 s, no properties, client "c" */
    static const uint8_t connect[] = { 0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 60, 0, 0, 1, 'c' };
    /* success, Subscription Identifier Available 1 */
    static const uint8_t connack[] = { 0x20, 5, 0, 0, 2, 0x29, 1 };
    feed(WM_PROXY_C2U, connect, sizeof connect);
    feed(WM_PROXY_U2C, connack, sizeof connack);
    cr_assert_eq(take_all(WM_PROXY_C2U, WM_MQTT5_CONNECT), 1);
    cr_assert_eq(take_all(WM_PROXY_U2C, WM_MQTT5_CONNACK), 1);

    static uint8_t chunk[WM_TB_CAP * 2];
    wm_tb s = { 0 }, spr = { 0 }, sout = { 0 };
    wm_tb_u16(&s, 7);
    wm_tb_u8(&spr, 0x26); wm_tb_str(&spr, "xpath"); wm_tb_str(&spr, "//s:senml[@v > 41.5]");
    wm_tb_props(&s, &spr);
    wm_tb_str(&s, "ph/t"); wm_tb_u8(&s, 0);
    size_t n = wm_tb_packet(&sout, 0x82, &s);
    memcpy(chunk, sout.b, n);
    wm_tb p = { 0 }, ppr = { 0 }, pout = { 0 };
    wm_tb_str(&p, "ph/big"); wm_tb_props(&p, &ppr);
    static uint8_t pay[WM_TB_CAP];
    memset(pay, 'x', big);
    wm_tb_raw(&p, pay, big);
    size_t m = wm_tb_packet(&pout, 0x30, &p);
    memcpy(chunk + n, pout.b, m);
    wm_proxy_frame_result r = feed(WM_PROXY_C2U, chunk, n + m);
    cr_assert(r.held, "the SUBSCRIBE waits for its compile");
    cr_assert_eq(q[WM_PROXY_C2U].ready, q[WM_PROXY_C2U].head, "nothing of it framed");
}

/* The compile runs (inline): the held SUBSCRIBE and what was behind it go
 * on, in order, with no ping among them. */
static void release(void)
{
    wm_proxy_content_kick(&ct);
    wm_proxy_frame_result r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q[WM_PROXY_C2U]);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_assert_not(r.held);
    wm_mqtt5_packet p;
    cr_assert_eq(next(WM_PROXY_C2U, &p), WM_MQTT5_SUBSCRIBE);
    cr_assert_eq(p.packet_id, 7);
    cr_assert_eq(next(WM_PROXY_C2U, &p), WM_MQTT5_PUBLISH);
    cr_assert_eq(p.payload.len, 6000);
    cr_assert_eq(next(WM_PROXY_C2U, &p), 0, "nothing else");
    cr_assert_eq(q[WM_PROXY_C2U].tail, q[WM_PROXY_C2U].ready, "nothing left unframed");
}

static const uint8_t PINGREQ[2] = { 0xc0, 0x00 }, PINGRESP[2] = { 0xd0, 0x00 };

Test(proxy_ping_hold, one_pingreq_goes_on_the_others_are_answered_and_cost_the_bytes_received)
{
    held_subscribe(6000);
    uint32_t held = q[WM_PROXY_C2U].tail - q[WM_PROXY_C2U].ready;
    uint8_t ten[20];
    for (int i = 0; i < 10; i++) memcpy(ten + 2 * i, PINGREQ, 2);
    uint32_t answered = 0, framed = 0;
    g_moved = 0;
    g_count = true;
    for (int k = 0; k < 100; k++) {   /* 1,000 PINGREQs in 100 receives */
        wm_proxy_frame_result r = feed(WM_PROXY_C2U, ten, sizeof ten);
        cr_assert(r.held);
        answered += r.pings_answered;
        framed += r.packets;
    }
    g_count = false;
    /* O(bytes received): the 2,000 bytes received, plus the held bytes once
     * for the PINGREQ that went on. Before: each PINGREQ moved the held
     * bytes, 1,000 x 6 KB. */
    cr_assert_leq(g_moved, 2 * 2000 + 2 * (uint64_t)held, "%llu bytes moved for 2,000 received, %u held",
                  (unsigned long long)g_moved, held);
    cr_assert_eq(framed, 1, "one PINGREQ framed for the broker (its PINGRESP has not come): %u", framed);
    cr_assert_eq(answered, 999, "the others answered by the proxy: %u", answered);
    cr_assert_eq(take_all(WM_PROXY_C2U, WM_MQTT5_PINGREQ), 1);
    cr_assert_eq(take_all(WM_PROXY_U2C, WM_MQTT5_PINGRESP), 999);
    cr_assert_eq(q[WM_PROXY_C2U].tail - q[WM_PROXY_C2U].ready, held, "the held bytes, no ping among them");
    /* the broker answers the one that went: the next goes on too */
    feed(WM_PROXY_U2C, PINGRESP, 2);
    cr_assert_eq(take_all(WM_PROXY_U2C, WM_MQTT5_PINGRESP), 1);
    wm_proxy_frame_result r = feed(WM_PROXY_C2U, ten, 4);
    cr_assert_eq(r.packets, 1);
    cr_assert_eq(r.pings_answered, 1);
    cr_assert_eq(take_all(WM_PROXY_C2U, WM_MQTT5_PINGREQ), 1);
    cr_assert_eq(take_all(WM_PROXY_U2C, WM_MQTT5_PINGRESP), 1);
    release();
}

Test(proxy_ping_hold, a_pingreq_with_no_room_for_its_pingresp_waits_in_place)
{
    held_subscribe(6000);
    uint32_t held = q[WM_PROXY_C2U].tail - q[WM_PROXY_C2U].ready;
    feed(WM_PROXY_C2U, PINGREQ, 2);   /* goes on: the next ones are the proxy's to answer */
    cr_assert_eq(take_all(WM_PROXY_C2U, WM_MQTT5_PINGREQ), 1);
    /* the client reads nothing: WM_PROXY_ANSWERS_MAX bytes wait for it, in flight */
    wm_proxy_queue *u = &q[WM_PROXY_U2C];
    static uint8_t filler[WM_PROXY_ANSWERS_MAX];
    for (uint32_t i = 0; i < sizeof filler; i += 2) memcpy(filler + i, PINGRESP, 2);
    cr_assert(wm_proxy_queue_append(u, filler, sizeof filler - 6));
    u->ready = u->tail;
    const uint8_t *out;
    uint32_t len;
    cr_assert(wm_proxy_queue_next_send(u, &out, &len));
    uint8_t five[10];
    for (int i = 0; i < 5; i++) memcpy(five + 2 * i, PINGREQ, 2);
    wm_proxy_frame_result r = feed(WM_PROXY_C2U, five, sizeof five);
    cr_assert_eq(r.pings_answered, 3, "room for 3 PINGRESPs: %u", r.pings_answered);
    cr_assert(ss.pings_wait);
    cr_assert_eq(q[WM_PROXY_C2U].tail - q[WM_PROXY_C2U].ready, held + 4, "the 2 others wait where they were");
    /* the client read it all (and the 3 queued meanwhile): framed again, the 2 that waited are answered */
    wm_proxy_queue_sent(u, len);
    cr_assert(wm_proxy_queue_next_send(u, &out, &len));
    cr_assert_eq(len, 6);
    wm_proxy_queue_sent(u, len);
    r = wm_proxy_frame(&ss, WM_PROXY_C2U, &q[WM_PROXY_C2U]);
    cr_assert_eq(r.verdict, WM_PROXY_FRAME_OK);
    cr_assert(r.held);
    cr_assert_eq(r.pings_answered, 2);
    cr_assert_not(ss.pings_wait);
    cr_assert_eq(take_all(WM_PROXY_U2C, WM_MQTT5_PINGRESP), 2);
    cr_assert_eq(q[WM_PROXY_C2U].tail - q[WM_PROXY_C2U].ready, held);
    release();
}
