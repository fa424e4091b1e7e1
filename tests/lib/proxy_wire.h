/* A filtering proxy session for the framing's unit tests (Criterion only):
 * wired as the proxy's loop wires one (dataplane/proxy_loop.c), and what it
 * framed read back packet by packet. */
#ifndef WM_TESTS_LIB_PROXY_WIRE_H
#define WM_TESTS_LIB_PROXY_WIRE_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "codec/mqtt5_decode.h"
#include "dataplane/proxy_filter.h"
#include "dataplane/proxy_frame.h"
#include "dataplane/proxy_spatial.h"
#include "tests/lib/reload_fixture.h"

/* The resolution of neighborhoods nb[0..n) over the small test world,
 * written to file in the test directory and opened (asserted); close with
 * wm_proxy_spatial_close. */
static inline wm_proxy_spatial *wm_test_proxy_spatial(const char *file, const wm_test_nbhd *nb, size_t n)
{
    char *path = wm_test_write_wmr(wm_test_tmpdir(), file, nb, n);
    cr_assert(path);
    char err[256];
    wm_proxy_spatial *sp = wm_proxy_spatial_open(path, WM_PROXY_SPATIAL_SUBS_MAX, err, sizeof err);
    cr_assert(sp, "%s", err);
    free(path);
    return sp;
}

/* Starts ss (Maximum Packet Size max_packet) filtering with flt over fsh,
 * counting in ctr (zeroed); q[d] over qmem + d * qcap (qcap bytes each), the
 * rewrites in scratch[scratch_cap]. All memory is the caller's. */
static inline void wm_test_proxy_wire(wm_proxy_session *ss, uint32_t max_packet, wm_proxy_filter *flt,
                                      const wm_proxy_filter_shared *fsh, wm_proxy_counters *ctr, wm_proxy_queue q[2],
                                      uint8_t *qmem, uint32_t qcap, uint8_t *scratch, uint32_t scratch_cap)
{
    memset(ctr, 0, sizeof *ctr);
    wm_proxy_session_init(ss, max_packet);
    wm_proxy_filter_init(flt, fsh, ctr);
    for (int d = 0; d < 2; d++) wm_proxy_queue_init(&q[d], qmem + (size_t)d * qcap, qcap);
    ss->filter = flt;
    ss->queues = q;
    ss->scratch = scratch;
    ss->scratch_cap = scratch_cap;
}

/* Takes the next framed packet of q (direction d: what the proxy sends on),
 * decoded into pkt (asserted well-formed; any Topic Alias accepted). Returns
 * false if nothing is framed. */
static inline bool wm_test_proxy_next(wm_proxy_queue *q, int d, wm_mqtt5_packet *pkt)
{
    if (q->head == q->ready) return false;
    wm_mqtt5_config c = { .from = d == WM_PROXY_C2U ? WM_MQTT5_FROM_CLIENT : WM_MQTT5_FROM_SERVER,
                          .topic_alias_maximum = 65535 };
    wm_mqtt5_result r;
    cr_assert_eq(wm_mqtt5_decode(&c, q->buf + q->head, q->ready - q->head, pkt, &r), WM_MQTT5_DONE);
    q->head += (uint32_t)r.length;
    return true;
}

#endif
