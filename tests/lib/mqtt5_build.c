/* See tests/lib/mqtt5_build.h. */
#include "tests/lib/mqtt5_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void room(wm_tb *t, size_t n)
{
    if (t->n + n > WM_TB_CAP) { fprintf(stderr, "wm_tb overflow\n"); abort(); }
}

void wm_tb_u8(wm_tb *t, uint8_t v) { room(t, 1); t->b[t->n++] = v; }
void wm_tb_u16(wm_tb *t, uint16_t v) { wm_tb_u8(t, (uint8_t)(v >> 8)); wm_tb_u8(t, (uint8_t)v); }
void wm_tb_u32(wm_tb *t, uint32_t v) { wm_tb_u16(t, (uint16_t)(v >> 16)); wm_tb_u16(t, (uint16_t)v); }

void wm_tb_vbi(wm_tb *t, uint32_t v)
{
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        wm_tb_u8(t, b | (v ? 0x80 : 0));
    } while (v);
}

void wm_tb_raw(wm_tb *t, const void *p, size_t n)
{
    room(t, n);
    if (n) memcpy(t->b + t->n, p, n);
    t->n += n;
}

void wm_tb_strn(wm_tb *t, const void *s, size_t n) { wm_tb_u16(t, (uint16_t)n); wm_tb_raw(t, s, n); }
void wm_tb_str(wm_tb *t, const char *s) { wm_tb_strn(t, s, strlen(s)); }
void wm_tb_props(wm_tb *t, const wm_tb *props) { wm_tb_vbi(t, (uint32_t)props->n); wm_tb_raw(t, props->b, props->n); }

size_t wm_tb_packet(wm_tb *out, uint8_t first_byte, const wm_tb *body)
{
    out->n = 0;
    wm_tb_u8(out, first_byte);
    wm_tb_vbi(out, (uint32_t)body->n);
    wm_tb_raw(out, body->b, body->n);
    return out->n;
}

size_t wm_tb_typical_publish(uint8_t *out, size_t cap)
{
    wm_tb body = {0}, props = {0}, pkt = {0};
    wm_tb_str(&body, "monaco/traffic/road42");   /* Topic Name */
    wm_tb_u16(&body, 0x1234);                         /* Packet Identifier (QoS 1) */
    wm_tb_u8(&props, 0x02); wm_tb_u32(&props, 60);    /* Message Expiry Interval */
    wm_tb_u8(&props, 0x26); wm_tb_str(&props, "peid"); wm_tb_str(&props, "road/motorway/42");
    wm_tb_u8(&props, 0x26); wm_tb_str(&props, "schema"); wm_tb_str(&props, "urn:wm:traffic:v1");
    wm_tb_props(&body, &props);
    wm_tb_raw(&body, "0123456789abcdef", 16);
    size_t n = wm_tb_packet(&pkt, 0x32, &body);
    if (n > cap) abort();
    memcpy(out, pkt.b, n);
    return n;
}
