/* L2-L4 parsing of one received frame: Ethernet, 802.1Q / 802.1ad (QinQ),
 * IPv4 with options, IPv6 with extension headers, TCP with options.
 *
 * Why a pure function over (ptr, len): the same code runs on mbuf data in the
 * workers, on crafted frames in the unit tests and on fuzzer input, none of
 * which needs the DPDK EAL. The parser never reads outside [frame, frame+len),
 * never allocates and never writes outside *out.
 *
 * Every frame ends in exactly one verdict (enum wm_pkt_verdict): a TCP segment
 * the flow layer takes, a frame that is not ours (not IP, not TCP), an IP
 * fragment (IPv4 ones go on to reassembly in the worker, ip_reasm.h; IPv6
 * ones are dropped), or a malformed frame with the precise reason. Counting
 * each verdict in its own counter is what makes the worker's conservation
 * sums possible.
 *
 * The IPv4 header checksum (RFC 791 §3.1, RFC 1071) is verified: every host
 * fills it in software, and a frame every receiver drops for it must not
 * become stream bytes (reassembly keeps the first copy of a byte, so a
 * corrupt or injected segment would otherwise push out the true
 * retransmission). The TCP checksum is not: captures taken on the sending
 * host (and on loopback) carry offloaded, unfilled ones. The worker honours
 * a NIC's own verdict instead (mbuf RX checksum flags, wm_pkt_path_hw_bad).
 *
 * Standards: IEEE 802.1Q (tags 0x8100, 0x88a8, 0x9100), RFC 791 (IPv4 and its
 * option format), RFC 8200 (IPv6 and extension headers), RFC 4302 (AH length
 * unit), RFC 9293 (TCP header, option format §3.1).
 *
 * Thread safety: stateless, reentrant. */
#ifndef WM_DATAPLANE_PKT_PARSE_H
#define WM_DATAPLANE_PKT_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The verdicts, in counter order. X(enum suffix, counter name). */
#define WM_PKT_VERDICTS(X)                                                     \
    X(TCP, "tcp")                     /* a TCP segment: *out filled */         \
    X(NOT_IP, "not_ip")               /* ethertype neither IPv4 nor IPv6 */    \
    X(NOT_TCP, "not_tcp")             /* IP, another protocol (or ESP) */      \
    X(IP_FRAGMENT, "ip_fragment")     /* IPv4/IPv6 fragment: dropped */        \
    X(ETH_TRUNCATED, "eth_truncated") /* shorter than an Ethernet header */    \
    X(VLAN_TRUNCATED, "vlan_truncated")                                        \
    X(VLAN_TOO_DEEP, "vlan_too_deep") /* more than 2 tags */                   \
    X(IP4_TRUNCATED, "ip4_truncated")                                          \
    X(IP4_BAD_VERSION, "ip4_bad_version")                                      \
    X(IP4_BAD_IHL, "ip4_bad_ihl")     /* IHL < 5 or beyond the frame */       \
    X(IP4_BAD_TOTAL_LENGTH, "ip4_bad_total_length")                            \
    X(IP4_BAD_OPTIONS, "ip4_bad_options")                                      \
    X(IP4_BAD_CHECKSUM, "ip4_bad_checksum") /* header checksum (or the NIC's) */ \
    X(L4_BAD_CHECKSUM_HW, "l4_bad_checksum_hw") /* the NIC's TCP/UDP verdict */ \
    X(IP4_BAD_ADDRESS, "ip4_bad_address") /* multicast/broadcast over TCP */   \
    X(IP6_TRUNCATED, "ip6_truncated")                                          \
    X(IP6_BAD_VERSION, "ip6_bad_version")                                      \
    X(IP6_BAD_PAYLOAD_LENGTH, "ip6_bad_payload_length")                        \
    X(IP6_JUMBOGRAM, "ip6_jumbogram") /* payload length 0: not supported */    \
    X(IP6_EXT_TRUNCATED, "ip6_ext_truncated")                                  \
    X(IP6_EXT_TOO_MANY, "ip6_ext_too_many")                                    \
    X(IP6_BAD_ADDRESS, "ip6_bad_address") /* multicast over TCP */             \
    X(TCP_TRUNCATED, "tcp_truncated")                                          \
    X(TCP_BAD_DATA_OFFSET, "tcp_bad_data_offset")                              \
    X(TCP_BAD_OPTIONS, "tcp_bad_options")                                      \
    X(TCP_BAD_FLAGS, "tcp_bad_flags") /* SYN+FIN, SYN+RST, no flag at all */   \
    X(TCP_BAD_PORT, "tcp_bad_port")   /* port 0 */

enum wm_pkt_verdict {
#define WM_PKT_X_ENUM(e, s) WM_PKT_##e,
    WM_PKT_VERDICTS(WM_PKT_X_ENUM)
#undef WM_PKT_X_ENUM
    WM_PKT_VERDICT_COUNT
};

/* The counter name of a verdict ("tcp", "ip4_bad_ihl", ...); "?" if out of range. */
const char *wm_pkt_verdict_name(enum wm_pkt_verdict v);

/* TCP flag bits as on the wire (RFC 9293 §3.1). */
#define WM_TCP_FIN 0x01
#define WM_TCP_SYN 0x02
#define WM_TCP_RST 0x04
#define WM_TCP_PSH 0x08
#define WM_TCP_ACK 0x10
#define WM_TCP_URG 0x20

/* Which TCP options were present (wm_pkt_info.tcp_opts). */
#define WM_TCP_OPT_MSS       0x01
#define WM_TCP_OPT_WSCALE    0x02
#define WM_TCP_OPT_SACK_PERM 0x04
#define WM_TCP_OPT_SACK      0x08
#define WM_TCP_OPT_TIMESTAMP 0x10

#define WM_PKT_MAX_VLANS   2 /* 802.1ad outer + 802.1Q inner */
#define WM_PKT_MAX_IP6_EXT 8 /* extension headers followed before giving up */

/* One parsed TCP segment. Addresses are IPv6 or IPv4-mapped IPv6
 * (::ffff:a.b.c.d, RFC 4291 §2.5.5.2), so flow keys are uniform. payload
 * points into the caller's frame (no copy) and is trimmed to the IP length,
 * so Ethernet padding is never taken as TCP data. */
struct wm_pkt_info {
    const uint8_t *payload; /* TCP payload inside the frame (valid if len > 0) */
    uint32_t payload_len;   /* bytes */
    uint32_t seq, ack;      /* host order */
    uint16_t sport, dport;  /* host order */
    uint16_t window;        /* raw, unscaled */
    uint8_t tcp_flags;      /* WM_TCP_* */
    uint8_t tcp_opts;       /* WM_TCP_OPT_* present */
    uint16_t mss;           /* if WM_TCP_OPT_MSS */
    uint8_t wscale;         /* if WM_TCP_OPT_WSCALE */
    uint8_t ip_version;     /* 4 or 6 */
    uint8_t vlan_count;     /* 0..WM_PKT_MAX_VLANS */
    uint8_t ip6_ext_count;  /* extension headers skipped */
    uint16_t vlan_id[WM_PKT_MAX_VLANS]; /* 12-bit VIDs, outer first; 0 if absent */
    uint16_t l3_offset, l4_offset, l7_offset; /* from the frame start */
    uint8_t src[16], dst[16];
};

/* Parses frame[0..len). Returns WM_PKT_TCP and fills *out, or another
 * verdict (then *out is partially filled and must not be used). frame may be
 * NULL only when len is 0. */
enum wm_pkt_verdict wm_pkt_parse(const uint8_t *frame, size_t len, struct wm_pkt_info *out);

#endif
