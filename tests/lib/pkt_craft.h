/* Crafted Ethernet frames for data-plane tests and fuzz seeds: Ethernet,
 * optional 802.1Q/802.1ad tags, IPv4 (optional options, fragment field) or
 * IPv6 (optional raw extension headers), TCP (optional raw options), payload.
 * Lengths and the IPv4 header checksum are filled in; TCP checksums are left
 * zero (the parser does not verify them, see dataplane/pkt_parse.h). */
#ifndef WM_TESTS_PKT_CRAFT_H
#define WM_TESTS_PKT_CRAFT_H

#include <stddef.h>
#include <stdint.h>

struct wm_craft {
    int v6;                      /* 0: IPv4, 1: IPv6 */
    uint8_t src[16], dst[16];    /* IPv4 uses the first 4 bytes */
    uint16_t sport, dport;
    int nvlan;                   /* 0..3 tags written as given */
    uint16_t vlan_tpid[3];       /* 0 means 0x8100 */
    uint16_t vlan_id[3];
    const uint8_t *ip4_opts;     /* multiple of 4 bytes */
    size_t ip4_opts_len;
    uint16_t ip4_frag;           /* flags+offset field, host order (0x4000 = DF) */
    uint8_t ip_proto;            /* 0 means TCP */
    const uint8_t *ip6_ext;      /* raw extension headers, first one is ip6_ext_nh */
    size_t ip6_ext_len;
    uint8_t ip6_ext_nh;          /* next header value that starts the chain */
    const uint8_t *tcp_opts;     /* multiple of 4 bytes */
    size_t tcp_opts_len;
    uint8_t tcp_doff_override;   /* if non-zero, written as the data offset (32-bit words) */
};

/* Refills the header checksum of the IPv4 header at ip (RFC 1071, over the
 * IHL in ip[0]): for tests that change a header field after crafting, so the
 * parser reaches the check they mean rather than the checksum's. */
void wm_craft_ip4_checksum(uint8_t *ip);

/* Writes one frame into buf (cap bytes); returns its length, or 0 if it does
 * not fit. IPv4 headers carry a correct checksum. */
size_t wm_craft_frame(uint8_t *buf, size_t cap, const struct wm_craft *c, uint32_t seq,
                      uint32_t ack, uint8_t flags, const void *payload, size_t n);

/* Endpoints of a test connection: c->src/sport is the client. */
void wm_craft_ip4(struct wm_craft *c, const char *client, uint16_t cport, const char *server,
                  uint16_t sport);
void wm_craft_ip6(struct wm_craft *c, const char *client, uint16_t cport, const char *server,
                  uint16_t sport);
/* The same connection seen from the other side (addresses and ports swapped). */
struct wm_craft wm_craft_reverse(const struct wm_craft *c);

#endif
