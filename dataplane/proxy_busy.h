/* A client beyond --max-conns is told why (issue 7): its CONNECT is read,
 * not kept, and answered with CONNACK 0x89 Server busy (MQTT 5.0 §3.2.2.2)
 * before the connection closes. Before, it was closed at accept and its
 * client saw a bare close (mosquitto_pub: "Error: The connection was lost").
 *
 * This is the reading half: a CONNECT is counted through as it arrives, in
 * pieces of any size, keeping only its fixed header (at most 5 bytes), so a
 * refused client costs a few bytes of state whatever its CONNECT holds (a
 * Will Payload up to the Maximum Packet Size). The worker (proxy_loop.c)
 * holds at most WM_PROXY_BUSY_SLOTS such clients at once, each for at most
 * --connect-packet-timeout; one more is closed at accept as before.
 *
 * Pure, no allocation, no I/O; one connection, one thread.
 */
#ifndef WM_DATAPLANE_PROXY_BUSY_H
#define WM_DATAPLANE_PROXY_BUSY_H

#include <stdbool.h>
#include <stdint.h>

/* Refused clients a worker answers at once (each: a socket and this state). */
#define WM_PROXY_BUSY_SLOTS 16

typedef struct wm_proxy_busy {
    uint8_t hdr[5];   /* the CONNECT's fixed header so far (type byte + Remaining Length, §2.1) */
    uint8_t nhdr;
    bool framed;      /* hdr is whole: left counts the rest */
    uint32_t left;    /* bytes of the CONNECT still to come */
} wm_proxy_busy;

typedef enum wm_proxy_busy_status {
    WM_PROXY_BUSY_MORE = 0,   /* the CONNECT is not complete yet */
    WM_PROXY_BUSY_CONNECT,    /* it is: answer it (bytes after it are the caller's to drop) */
    WM_PROXY_BUSY_BAD,        /* the first packet is no CONNECT, or its fixed header breaks §2.1.3
                                 / §1.5.5 or announces more than max_packet bytes: close unanswered */
} wm_proxy_busy_status;

/* Starts counting a new connection's first packet. */
static inline void wm_proxy_busy_init(wm_proxy_busy *b)
{
    b->nhdr = 0;
    b->framed = false;
    b->left = 0;
}

/* Feeds the n bytes at p the client sent after those of earlier calls (any
 * split). Reads nothing past p + n; once it returned CONNECT or BAD it
 * returns the same again without looking at p. max_packet: bytes, the
 * largest CONNECT read (the proxy's --max-packet; 0 = the protocol's). */
wm_proxy_busy_status wm_proxy_busy_feed(wm_proxy_busy *b, uint32_t max_packet, const uint8_t *p, uint32_t n);

#endif
