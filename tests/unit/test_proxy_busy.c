/* Reading a refused client's CONNECT (dataplane/proxy_busy.h): counted
 * through in pieces of any size, answered only once whole, anything else
 * refused at its first byte. */
#include <criterion/criterion.h>
#include <string.h>

#include "dataplane/proxy_busy.h"

/* CONNECT, MQTT v5, clean start, keep alive 60, no properties, client "c" + pad */
static uint32_t make_connect(uint8_t *out, uint32_t id_len)
{
    uint32_t body = 10 + 1 + 2 + id_len, n = 0;
    out[n++] = 0x10;
    do { uint8_t b = body & 0x7F; body >>= 7; out[n++] = (uint8_t)(b | (body ? 0x80 : 0)); } while (body);
    const uint8_t head[] = { 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 60, 0 };
    memcpy(out + n, head, sizeof head);
    n += sizeof head;
    out[n++] = (uint8_t)(id_len >> 8);
    out[n++] = (uint8_t)id_len;
    memset(out + n, 'c', id_len);
    return n + id_len;
}

Test(proxy_busy, whole_connect_in_any_split)
{
    static uint8_t c[400];
    uint32_t n = make_connect(c, 300);   /* Remaining Length on two bytes */
    for (uint32_t cut = 0; cut <= n; cut++) {
        wm_proxy_busy b;
        wm_proxy_busy_init(&b);
        wm_proxy_busy_status s1 = wm_proxy_busy_feed(&b, 4096, c, cut);
        cr_assert_eq(s1, cut == n ? WM_PROXY_BUSY_CONNECT : WM_PROXY_BUSY_MORE, "cut %u", cut);
        wm_proxy_busy_status s2 = wm_proxy_busy_feed(&b, 4096, c + cut, n - cut);
        cr_assert_eq(s2, WM_PROXY_BUSY_CONNECT, "cut %u", cut);
    }
}

Test(proxy_busy, byte_by_byte_and_after)
{
    uint8_t c[64];
    uint32_t n = make_connect(c, 5);
    wm_proxy_busy b;
    wm_proxy_busy_init(&b);
    for (uint32_t i = 0; i + 1 < n; i++) cr_assert_eq(wm_proxy_busy_feed(&b, 0, c + i, 1), WM_PROXY_BUSY_MORE);
    cr_assert_eq(wm_proxy_busy_feed(&b, 0, c + n - 1, 1), WM_PROXY_BUSY_CONNECT);
    cr_expect_eq(wm_proxy_busy_feed(&b, 0, (const uint8_t *)"\xc0\x00", 2), WM_PROXY_BUSY_CONNECT,
                 "what follows the CONNECT is not looked at");
}

Test(proxy_busy, refused_unanswered)
{
    const struct { const char *what; uint8_t bytes[6]; uint32_t n; uint32_t max; } cases[] = {
        { "PINGREQ first", { 0xC0, 0x00 }, 2, 0 },
        { "PUBLISH first", { 0x30, 0x05 }, 2, 0 },
        { "CONNECT with flags (§2.1.3)", { 0x11, 0x10 }, 2, 0 },
        { "empty CONNECT", { 0x10, 0x00 }, 2, 0 },
        { "Remaining Length not minimal (§1.5.5)", { 0x10, 0x80, 0x00 }, 3, 0 },
        { "Remaining Length of 5 bytes", { 0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F }, 6, 0 },
        { "over max_packet", { 0x10, 0xE8, 0x07 }, 3, 1000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wm_proxy_busy b;
        wm_proxy_busy_init(&b);
        cr_expect_eq(wm_proxy_busy_feed(&b, cases[i].max, cases[i].bytes, cases[i].n), WM_PROXY_BUSY_BAD, "%s",
                     cases[i].what);
        cr_expect_eq(wm_proxy_busy_feed(&b, cases[i].max, (const uint8_t *)"\x10", 1), WM_PROXY_BUSY_BAD,
                     "%s: stays refused", cases[i].what);
    }
}

Test(proxy_busy, first_byte_decides)
{
    wm_proxy_busy b;
    wm_proxy_busy_init(&b);
    cr_expect_eq(wm_proxy_busy_feed(&b, 0, (const uint8_t *)"\x20", 1), WM_PROXY_BUSY_BAD,
                 "a CONNACK from a client is refused at its first byte");
    wm_proxy_busy_init(&b);
    cr_expect_eq(wm_proxy_busy_feed(&b, 0, (const uint8_t *)"\x10", 1), WM_PROXY_BUSY_MORE);
    cr_expect_eq(wm_proxy_busy_feed(&b, 0, (const uint8_t *)"", 0), WM_PROXY_BUSY_MORE, "nothing fed, nothing decided");
}
