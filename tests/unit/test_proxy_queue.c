/* The proxy's per-direction queue (dataplane/proxy_queue.h) and its address
 * parsing: the invariants the relay loop relies on. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "dataplane/proxy.h"
#include "dataplane/proxy_queue.h"

static uint8_t mem[64];

Test(proxy_queue, append_send_complete)
{
    wm_proxy_queue q;
    wm_proxy_queue_init(&q, mem, sizeof mem);
    cr_assert(wm_proxy_queue_append(&q, "hello", 5));
    cr_expect_eq(wm_proxy_queue_pending(&q), 0, "unframed bytes are not pending");
    cr_expect_eq(wm_proxy_queue_held(&q), 5);
    const uint8_t *p;
    uint32_t len;
    cr_expect_not(wm_proxy_queue_next_send(&q, &p, &len), "nothing framed yet");
    q.ready = q.tail;
    cr_assert(wm_proxy_queue_next_send(&q, &p, &len));
    cr_expect_eq(len, 5);
    cr_expect(memcmp(p, "hello", 5) == 0);
    cr_expect_not(wm_proxy_queue_next_send(&q, &p, &len), "one send in flight at a time");
    wm_proxy_queue_sent(&q, 5);
    cr_expect_eq(wm_proxy_queue_held(&q), 0);
    cr_expect_eq(q.head, 0);
    cr_expect_eq(q.tail, 0);
}

Test(proxy_queue, short_write_keeps_rest_in_order)
{
    wm_proxy_queue q;
    wm_proxy_queue_init(&q, mem, sizeof mem);
    cr_assert(wm_proxy_queue_append(&q, "abcdefgh", 8));
    q.ready = q.tail;
    const uint8_t *p;
    uint32_t len;
    cr_assert(wm_proxy_queue_next_send(&q, &p, &len));
    cr_assert(wm_proxy_queue_append(&q, "XY", 2));   /* arrives during the send, unframed */
    wm_proxy_queue_sent(&q, 3);
    cr_expect_eq(q.head, 0, "compacted after the send");
    cr_expect_eq(wm_proxy_queue_pending(&q), 5);
    cr_expect_eq(wm_proxy_queue_held(&q), 7);
    cr_assert(wm_proxy_queue_next_send(&q, &p, &len));
    cr_expect_eq(len, 5);
    cr_expect(memcmp(p, "defgh", 5) == 0);
    cr_expect(memcmp(p + 5, "XY", 2) == 0, "unframed bytes follow, untouched");
}

Test(proxy_queue, full_refuses_without_change_and_never_moves_under_a_send)
{
    wm_proxy_queue q;
    uint8_t big[60];
    memset(big, 'z', sizeof big);
    wm_proxy_queue_init(&q, mem, sizeof mem);
    cr_assert(wm_proxy_queue_append(&q, big, 60));
    q.ready = q.tail;
    const uint8_t *p;
    uint32_t len;
    cr_assert(wm_proxy_queue_next_send(&q, &p, &len));
    cr_expect_not(wm_proxy_queue_append(&q, big, 5), "4 bytes free");
    cr_expect_eq(q.tail, 60);
    wm_proxy_queue_sent(&q, 30);                   /* head moves to 30, compaction */
    cr_expect_eq(q.head, 0);
    cr_expect(wm_proxy_queue_append(&q, "12345", 5));
    cr_assert(wm_proxy_queue_next_send(&q, &p, &len));
    /* With a send in flight from head, a full queue must not compact. */
    uint8_t fill[29];
    memset(fill, 'f', sizeof fill);
    cr_expect(wm_proxy_queue_append(&q, fill, 29));
    cr_expect_not(wm_proxy_queue_append(&q, "x", 1));
    cr_expect_eq(p, mem, "the in-flight bytes did not move");
}

Test(proxy_addr, forms_and_errors)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char err[128];
    cr_assert_eq(wm_proxy_parse_addr("127.0.0.1:1883", &ss, &len, err, sizeof err), 0, "%s", err);
    cr_expect_eq(ss.ss_family, AF_INET);
    cr_expect_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 1883);
    cr_assert_eq(wm_proxy_parse_addr("[::1]:8883", &ss, &len, err, sizeof err), 0, "%s", err);
    cr_expect_eq(ss.ss_family, AF_INET6);
    cr_expect_eq(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 8883);
    cr_expect_eq(wm_proxy_parse_addr("127.0.0.1", &ss, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "ADDR:PORT") != NULL, "%s", err);
    cr_expect_eq(wm_proxy_parse_addr("127.0.0.1:0", &ss, &len, err, sizeof err), -1);
    cr_expect_eq(wm_proxy_parse_addr("127.0.0.1:65536", &ss, &len, err, sizeof err), -1);
    cr_expect_eq(wm_proxy_parse_addr("::1:1883", &ss, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "[ADDR]:PORT") != NULL, "%s", err);
    cr_expect_eq(wm_proxy_parse_addr("[::1:1883", &ss, &len, err, sizeof err), -1);
    cr_expect_eq(wm_proxy_parse_addr("999.1.1.1:1883", &ss, &len, err, sizeof err), -1);
}
