/* Test helper: builds MQTT v5 byte sequences field by field, independently
 * of the codec's encoder, so decoder tests state the wire bytes the spec
 * describes (a test that used the encoder to make its input could not catch
 * an encoder and decoder that agree on a mistake).
 *
 *     wm_tb b = {0};
 *     wm_tb_str(&b, "a/b");  wm_tb_u16(&b, 7);
 *     wm_tb_props(&b, &props); ...
 *     size_t n = wm_tb_packet(&out, 0x32, &b);   // fixed header + body
 *
 * Fixed-capacity buffers (no allocation); overflow aborts the test. */
#ifndef WM_TESTS_MQTT5_BUILD_H
#define WM_TESTS_MQTT5_BUILD_H

#include <stddef.h>
#include <stdint.h>

#define WM_TB_CAP 8192

typedef struct wm_tb {
    uint8_t b[WM_TB_CAP];
    size_t n;
} wm_tb;

void wm_tb_u8(wm_tb *t, uint8_t v);
void wm_tb_u16(wm_tb *t, uint16_t v);
void wm_tb_u32(wm_tb *t, uint32_t v);
void wm_tb_vbi(wm_tb *t, uint32_t v);           /* minimal encoding */
void wm_tb_raw(wm_tb *t, const void *p, size_t n);
void wm_tb_str(wm_tb *t, const char *s);         /* 2-byte length + bytes of s */
void wm_tb_strn(wm_tb *t, const void *s, size_t n);
/* Appends another builder's bytes prefixed with their length as a VBI: a
 * property block (§2.2.2.1). */
void wm_tb_props(wm_tb *t, const wm_tb *props);
/* Writes first byte + Remaining Length (minimal VBI) + body into out;
 * returns the packet length. */
size_t wm_tb_packet(wm_tb *out, uint8_t first_byte, const wm_tb *body);

/* The benchmark and test workhorse: a ~100-byte QoS 1 PUBLISH with two User
 * Properties ("peid"/"road/motorway/42", "schema"/"urn:wm:traffic:v1"),
 * a Message Expiry Interval and a 16-byte payload: 102 bytes. Returns its length. */
size_t wm_tb_typical_publish(uint8_t *out, size_t cap);

#endif
