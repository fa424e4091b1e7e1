/* The order of the proxy's own answers (dataplane/proxy_answers.h) alone:
 * what waits, what goes when, and the bound. Answers are 5-byte PUBACKs
 * whose packet id tells them apart; the queue is a real wm_proxy_queue. */
#include <criterion/criterion.h>
#include <string.h>

#include "dataplane/proxy_answers.h"

static wm_proxy_answers a;
static wm_proxy_queue q;
static uint8_t qmem[1 << 20];

static void setup(void)
{
    memset(&a, 0, sizeof a);
    wm_proxy_queue_init(&q, qmem, sizeof qmem);
}

static void teardown(void) { wm_proxy_answers_reset(&a); }

TestSuite(proxy_answers, .init = setup, .fini = teardown);

static wm_proxy_answers_put_result put(uint16_t id)
{
    const uint8_t p[5] = { 0x40, 0x03, (uint8_t)(id >> 8), (uint8_t)id, 0x10 };
    return wm_proxy_answers_put(&a, &q, p, sizeof p);
}

/* A peer's answer relayed into q (as the framer does), then what is due. */
static void peer_answer(uint16_t id)
{
    const uint8_t p[4] = { 0x40, 0x02, (uint8_t)(id >> 8), (uint8_t)id };
    cr_assert(wm_proxy_queue_append(&q, p, sizeof p));
    q.ready = q.tail;
    wm_proxy_answers_relayed(&a);
    cr_assert(wm_proxy_answers_release(&a, &q));
}

/* The packet ids in q's framed bytes, in order; returns their count. */
static uint32_t ids(uint16_t *out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t at = q.head; at < q.ready && n < max; at += 2u + q.buf[at + 1])
        out[n++] = (uint16_t)(q.buf[at + 2] << 8 | q.buf[at + 3]);
    return n;
}

Test(proxy_answers, nothing_outstanding_goes_at_once)
{
    cr_assert_eq(put(1), WM_PROXY_ANSWERS_SENT);
    a.asked++;
    peer_answer(2);
    cr_assert_eq(put(3), WM_PROXY_ANSWERS_SENT);
    uint16_t got[8];
    cr_assert_eq(ids(got, 8), 3);
    cr_assert(got[0] == 1 && got[1] == 2 && got[2] == 3);
}

Test(proxy_answers, waits_for_the_peers_answers_to_earlier_packets)
{
    a.asked = 2;                                       /* packets 1 and 2 went to the peer */
    cr_assert_eq(put(3), WM_PROXY_ANSWERS_WAITS);
    cr_assert_eq(put(4), WM_PROXY_ANSWERS_WAITS);      /* behind 3, whatever the counters */
    a.asked++;                                         /* packet 5 went to the peer */
    cr_assert_eq(put(6), WM_PROXY_ANSWERS_WAITS);
    cr_assert_eq(q.ready, 0);
    peer_answer(1);
    cr_assert_eq(q.ready, 4, "nothing of the proxy's may follow the first of two outstanding answers");
    peer_answer(2);
    peer_answer(5);
    uint16_t got[8], want[] = { 1, 2, 3, 4, 5, 6 };
    cr_assert_eq(ids(got, 8), 6);
    cr_assert_arr_eq(got, want, sizeof want);
    cr_assert_not(wm_proxy_answers_due(&a));
    cr_assert_eq(put(7), WM_PROXY_ANSWERS_SENT, "all answered, nothing waits: at once again");
}

Test(proxy_answers, a_spurious_peer_answer_is_not_counted_ahead)
{
    peer_answer(9);                                    /* nothing was asked */
    a.asked = 1;
    cr_assert_eq(put(2), WM_PROXY_ANSWERS_WAITS);
    peer_answer(1);
    uint16_t got[8], want[] = { 9, 1, 2 };
    cr_assert_eq(ids(got, 8), 3);
    cr_assert_arr_eq(got, want, sizeof want);
}

Test(proxy_answers, over_the_bound_they_go_early_in_their_order)
{
    a.asked = 1;
    uint32_t rec = 8 + 4 + 5, fit = WM_PROXY_ANSWERS_MAX / rec;
    for (uint32_t i = 0; i < fit; i++) cr_assert_eq(put((uint16_t)(i + 2)), WM_PROXY_ANSWERS_WAITS);
    cr_assert_eq(q.ready, 0);
    cr_assert_eq(put((uint16_t)(fit + 2)), WM_PROXY_ANSWERS_OVERFLOW);
    static uint16_t got[8192];
    cr_assert_eq(ids(got, 8192), fit + 1);
    for (uint32_t i = 0; i <= fit; i++) cr_assert_eq(got[i], i + 2);
    cr_assert_not(wm_proxy_answers_due(&a));
    cr_assert_eq(a.answered, 0, "the peer's answer is still outstanding");
    cr_assert_eq(put(9000), WM_PROXY_ANSWERS_WAITS);
}

Test(proxy_answers, no_room_in_the_queue_fails_and_keeps_them)
{
    wm_proxy_queue_init(&q, qmem, 7);
    a.asked = 1;
    cr_assert_eq(put(2), WM_PROXY_ANSWERS_WAITS);
    cr_assert_eq(put(3), WM_PROXY_ANSWERS_WAITS);
    const uint8_t p[4] = { 0x40, 0x02, 0, 1 };
    cr_assert(wm_proxy_queue_append(&q, p, sizeof p));
    q.ready = q.tail;
    wm_proxy_answers_relayed(&a);
    cr_assert_not(wm_proxy_answers_release(&a, &q), "5 bytes after 4 do not fit in 7");
    cr_assert(wm_proxy_answers_due(&a), "what did not fit still waits");
}
