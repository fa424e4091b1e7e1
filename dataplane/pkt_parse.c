/* L2-L4 parsing; see pkt_parse.h for the contract. Every read is preceded by
 * a bound check against the frame length: the fuzz target
 * tests/fuzz/fuzz_dataplane_packet.c holds it to that. */
#include "dataplane/pkt_parse.h"

#include <string.h>

#define ETH_HDR_LEN 14
#define VLAN_TAG_LEN 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define ETHERTYPE_QINQ_OLD 0x9100 /* pre-standard QinQ, still seen in the field */

#define IPPROTO_TCP_ 6
#define IP6_HOPOPTS 0
#define IP6_ROUTING 43
#define IP6_FRAGMENT 44
#define IP6_ESP 50
#define IP6_AH 51
#define IP6_NONE 59
#define IP6_DSTOPTS 60
#define IP6_MOBILITY 135
#define IP6_HIP 139
#define IP6_SHIM6 140

static const char *const verdict_names[] = {
#define WM_PKT_X_NAME(e, s) s,
    WM_PKT_VERDICTS(WM_PKT_X_NAME)
#undef WM_PKT_X_NAME
};

const char *wm_pkt_verdict_name(enum wm_pkt_verdict v)
{
    return (unsigned)v < WM_PKT_VERDICT_COUNT ? verdict_names[v] : "?";
}

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* RFC 791 §3.1 option format: EOL (0) ends the list, NOP (1) is one byte,
 * every other option is type, length (>= 2, including both bytes), data. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mapped4() builds the address words in little-endian order"
#endif
typedef uint64_t u64x2 __attribute__((vector_size(16)));

/* addr = the IPv4-mapped IPv6 address ::ffff:ip (RFC 4291 §2.5.5.2),
 * written with one 16-byte store: the flow key reads these bytes right
 * away, and a read spanning several narrower stores cannot be forwarded
 * from them and waits until they reach the cache. */
static inline void mapped4(uint8_t addr[16], const uint8_t *ip)
{
    uint32_t a;
    memcpy(&a, ip, 4);
    u64x2 v = {0, 0xffff0000ull | (uint64_t)a << 32};
    memcpy(addr, &v, 16);
}

/* RFC 1071: the one's complement sum of the header's 16-bit words, its
 * checksum field included, is 0xffff when the header is intact. Summed in
 * 32-bit native-order words and folded: the fold is byte-order independent
 * (RFC 1071 §2(B)), and an IHL of 15 words (60 bytes) cannot carry out of 64
 * bits. */
static int ip4_header_checksum_ok(const uint8_t *h, size_t ihl)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < ihl; i += 4) {
        uint32_t w;
        memcpy(&w, h + i, 4);
        sum += w;
    }
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff;
}

static int ip4_options_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t type = p[i];
        if (type == 0) return 1;
        if (type == 1) { i++; continue; }
        if (i + 1 >= n) return 0;
        uint8_t olen = p[i + 1];
        if (olen < 2 || i + olen > n) return 0;
        i += olen;
    }
    return 1;
}

/* RFC 9293 §3.1 / §3.2: same TLV rules; known options must have their fixed
 * length (MSS 4, window scale 3, SACK-permitted 2, timestamps 10, SACK 2+8k). */
static int tcp_options_parse(const uint8_t *p, size_t n, struct wm_pkt_info *out)
{
    size_t i = 0;
    while (i < n) {
        uint8_t kind = p[i];
        if (kind == 0) return 1;
        if (kind == 1) { i++; continue; }
        if (i + 1 >= n) return 0;
        uint8_t olen = p[i + 1];
        if (olen < 2 || i + olen > n) return 0;
        switch (kind) {
        case 2:
            if (olen != 4) return 0;
            out->tcp_opts |= WM_TCP_OPT_MSS;
            out->mss = rd16(p + i + 2);
            break;
        case 3:
            if (olen != 3) return 0;
            out->tcp_opts |= WM_TCP_OPT_WSCALE;
            out->wscale = p[i + 2];
            break;
        case 4:
            if (olen != 2) return 0;
            out->tcp_opts |= WM_TCP_OPT_SACK_PERM;
            break;
        case 5:
            if (olen < 10 || (olen - 2) % 8 != 0) return 0;
            out->tcp_opts |= WM_TCP_OPT_SACK;
            break;
        case 8:
            if (olen != 10) return 0;
            out->tcp_opts |= WM_TCP_OPT_TIMESTAMP;
            break;
        default:
            break; /* unknown kinds are skipped by their length, as RFC 9293 requires */
        }
        i += olen;
    }
    return 1;
}

static enum wm_pkt_verdict parse_tcp(const uint8_t *frame, size_t off, size_t end,
                                     struct wm_pkt_info *out)
{
    if (end - off < 20) return WM_PKT_TCP_TRUNCATED;
    const uint8_t *t = frame + off;
    size_t doff = (size_t)(t[12] >> 4) * 4;
    if (doff < 20) return WM_PKT_TCP_BAD_DATA_OFFSET;
    if (doff > end - off) return WM_PKT_TCP_TRUNCATED;
    out->sport = rd16(t);
    out->dport = rd16(t + 2);
    out->seq = rd32(t + 4);
    out->ack = rd32(t + 8);
    out->tcp_flags = t[13] & 0x3f;
    out->window = rd16(t + 14);
    if (out->sport == 0 || out->dport == 0) return WM_PKT_TCP_BAD_PORT;
    uint8_t f = out->tcp_flags;
    if ((f & WM_TCP_SYN) && (f & (WM_TCP_FIN | WM_TCP_RST))) return WM_PKT_TCP_BAD_FLAGS;
    if ((f & (WM_TCP_SYN | WM_TCP_FIN | WM_TCP_RST | WM_TCP_ACK)) == 0) return WM_PKT_TCP_BAD_FLAGS;
    if (!tcp_options_parse(t + 20, doff - 20, out)) return WM_PKT_TCP_BAD_OPTIONS;
    out->l4_offset = (uint16_t)off;
    out->l7_offset = (uint16_t)(off + doff);
    out->payload = t + doff;
    out->payload_len = (uint32_t)(end - off - doff);
    return WM_PKT_TCP;
}

static enum wm_pkt_verdict parse_ip4(const uint8_t *frame, size_t off, size_t len,
                                     struct wm_pkt_info *out)
{
    if (len - off < 20) return WM_PKT_IP4_TRUNCATED;
    const uint8_t *h = frame + off;
    if ((h[0] >> 4) != 4) return WM_PKT_IP4_BAD_VERSION;
    size_t ihl = (size_t)(h[0] & 0x0f) * 4;
    if (ihl < 20 || ihl > len - off) return WM_PKT_IP4_BAD_IHL;
    /* Before the fields it covers are believed (the order of Linux's ip_rcv). */
    if (!ip4_header_checksum_ok(h, ihl)) return WM_PKT_IP4_BAD_CHECKSUM;
    size_t total = rd16(h + 2);
    if (total < ihl || total > len - off) return WM_PKT_IP4_BAD_TOTAL_LENGTH;
    if (!ip4_options_valid(h + 20, ihl - 20)) return WM_PKT_IP4_BAD_OPTIONS;
    out->ip_version = 4;
    out->l3_offset = (uint16_t)off;
    mapped4(out->src, h + 12);
    mapped4(out->dst, h + 16);
    uint16_t frag = rd16(h + 6);
    if (h[9] != IPPROTO_TCP_) return WM_PKT_NOT_TCP;
    /* MF set or a non-zero offset: a fragment (RFC 791 §3.2). */
    if (frag & 0x3fff) return WM_PKT_IP_FRAGMENT;
    /* TCP never runs to multicast (224/4) or limited broadcast. */
    if ((h[16] & 0xf0) == 0xe0 || rd32(h + 16) == 0xffffffffu || (h[12] & 0xf0) == 0xe0)
        return WM_PKT_IP4_BAD_ADDRESS;
    return parse_tcp(frame, off + ihl, off + total, out);
}

static enum wm_pkt_verdict parse_ip6(const uint8_t *frame, size_t off, size_t len,
                                     struct wm_pkt_info *out)
{
    if (len - off < 40) return WM_PKT_IP6_TRUNCATED;
    const uint8_t *h = frame + off;
    if ((h[0] >> 4) != 6) return WM_PKT_IP6_BAD_VERSION;
    size_t plen = rd16(h + 4);
    if (plen == 0) return WM_PKT_IP6_JUMBOGRAM;
    if (plen > len - off - 40) return WM_PKT_IP6_BAD_PAYLOAD_LENGTH;
    out->ip_version = 6;
    out->l3_offset = (uint16_t)off;
    memcpy(out->src, h + 8, 16);
    memcpy(out->dst, h + 24, 16);
    size_t end = off + 40 + plen;
    size_t p = off + 40;
    uint8_t nh = h[6];
    for (unsigned n = 0;; n++) {
        switch (nh) {
        case IPPROTO_TCP_:
            if (h[24] == 0xff || out->src[0] == 0xff) return WM_PKT_IP6_BAD_ADDRESS;
            return parse_tcp(frame, p, end, out);
        case IP6_HOPOPTS:
        case IP6_ROUTING:
        case IP6_DSTOPTS:
        case IP6_MOBILITY:
        case IP6_HIP:
        case IP6_SHIM6:
        case IP6_FRAGMENT:
        case IP6_AH:
            break;
        default: /* ESP, No Next Header, UDP, ICMPv6, ... */
            return WM_PKT_NOT_TCP;
        }
        if (n >= WM_PKT_MAX_IP6_EXT) return WM_PKT_IP6_EXT_TOO_MANY;
        if (end - p < 8) return WM_PKT_IP6_EXT_TRUNCATED;
        const uint8_t *e = frame + p;
        size_t elen;
        if (nh == IP6_FRAGMENT) {
            /* RFC 8200 §4.5: offset 0 with M clear is an atomic fragment,
             * i.e. the whole packet; anything else is a real fragment. */
            if (rd16(e + 2) & 0xfff9) return WM_PKT_IP_FRAGMENT;
            elen = 8;
        } else if (nh == IP6_AH) {
            elen = ((size_t)e[1] + 2) * 4; /* RFC 4302 §2.2: 32-bit words minus 2 */
        } else {
            elen = ((size_t)e[1] + 1) * 8; /* RFC 8200 §4.3: 8-octet units minus 1 */
        }
        if (elen > end - p) return WM_PKT_IP6_EXT_TRUNCATED;
        nh = e[0];
        p += elen;
        out->ip6_ext_count = (uint8_t)(n + 1);
    }
}

enum wm_pkt_verdict wm_pkt_parse(const uint8_t *frame, size_t len, struct wm_pkt_info *out)
{
    memset(out, 0, sizeof *out);
    if (len < ETH_HDR_LEN) return WM_PKT_ETH_TRUNCATED;
    /* Offsets are stored in 16 bits; no frame we receive is larger. */
    if (len > 65535) len = 65535;
    size_t off = 12;
    uint16_t type = rd16(frame + off);
    while (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ || type == ETHERTYPE_QINQ_OLD) {
        if (out->vlan_count == WM_PKT_MAX_VLANS) return WM_PKT_VLAN_TOO_DEEP;
        if (len - off < 2 + VLAN_TAG_LEN) return WM_PKT_VLAN_TRUNCATED;
        out->vlan_id[out->vlan_count++] = rd16(frame + off + 2) & 0x0fff;
        off += VLAN_TAG_LEN;
        type = rd16(frame + off);
    }
    off += 2;
    if (type == ETHERTYPE_IPV4) return parse_ip4(frame, off, len, out);
    if (type == ETHERTYPE_IPV6) return parse_ip6(frame, off, len, out);
    return WM_PKT_NOT_IP;
}
