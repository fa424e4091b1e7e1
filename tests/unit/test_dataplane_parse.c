/* L2-L4 parsing of crafted frames: every header the data plane accepts and
 * every malformation counted with its own verdict. */
#include <criterion/criterion.h>
#include <string.h>

#include "dataplane/pkt_parse.h"
#include "tests/lib/pkt_craft.h"

static uint8_t frame[2048];
static struct wm_pkt_info pi;

static enum wm_pkt_verdict parse_crafted(const struct wm_craft *c, uint8_t flags, const char *payload,
                                         size_t *len_out)
{
    size_t n = payload ? strlen(payload) : 0;
    size_t len = wm_craft_frame(frame, sizeof frame, c, 1000, 2000, flags, payload, n);
    cr_assert(len > 0);
    if (len_out) *len_out = len;
    return wm_pkt_parse(frame, len, &pi);
}

Test(parse, ipv4_tcp_fields)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    size_t len;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK | WM_TCP_PSH, "hello", &len), WM_PKT_TCP);
    cr_assert_eq(pi.ip_version, 4);
    cr_assert_eq(pi.sport, 40000);
    cr_assert_eq(pi.dport, 1883);
    cr_assert_eq(pi.seq, 1000);
    cr_assert_eq(pi.ack, 2000);
    cr_assert_eq(pi.tcp_flags, WM_TCP_ACK | WM_TCP_PSH);
    cr_assert_eq(pi.payload_len, 5);
    cr_assert_eq(memcmp(pi.payload, "hello", 5), 0);
    cr_assert_eq(pi.payload, frame + 14 + 20 + 20, "payload points into the frame (zero copy)");
    static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    cr_assert_eq(memcmp(pi.src, mapped, 16), 0, "IPv4 is IPv4-mapped IPv6");
    cr_assert_eq(pi.l3_offset, 14);
    cr_assert_eq(pi.l4_offset, 34);
    cr_assert_eq(pi.l7_offset, 54);
}

Test(parse, ethernet_padding_is_not_payload)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    size_t len = wm_craft_frame(frame, sizeof frame, &c, 1, 2, WM_TCP_ACK, NULL, 0);
    cr_assert_eq(len, 54);
    memset(frame + len, 0xee, 6); /* minimum Ethernet frame is 60 bytes without FCS */
    cr_assert_eq(wm_pkt_parse(frame, 60, &pi), WM_PKT_TCP);
    cr_assert_eq(pi.payload_len, 0);
}

Test(parse, vlan_and_qinq)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    c.nvlan = 1;
    c.vlan_id[0] = 100;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP);
    cr_assert_eq(pi.vlan_count, 1);
    cr_assert_eq(pi.vlan_id[0], 100);
    cr_assert_eq(pi.l3_offset, 18);

    c.nvlan = 2;
    c.vlan_tpid[0] = 0x88a8;
    c.vlan_id[0] = 0x2000 | 7; /* PCP bits must be masked off */
    c.vlan_id[1] = 42;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP);
    cr_assert_eq(pi.vlan_count, 2);
    cr_assert_eq(pi.vlan_id[0], 7);
    cr_assert_eq(pi.vlan_id[1], 42);
    cr_assert_eq(pi.payload_len, 1);

    c.vlan_tpid[0] = 0x9100;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP);

    c.nvlan = 3;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_VLAN_TOO_DEEP);
}

Test(parse, vlan_truncated)
{
    static const uint8_t f[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0x00, 0x01};
    cr_assert_eq(wm_pkt_parse(f, sizeof f, &pi), WM_PKT_VLAN_TRUNCATED);
    cr_assert_eq(wm_pkt_parse(f, 13, &pi), WM_PKT_ETH_TRUNCATED);
    cr_assert_eq(wm_pkt_parse(NULL, 0, &pi), WM_PKT_ETH_TRUNCATED);
}

Test(parse, ipv4_options)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    /* NOP, NOP, Router Alert (type 148, length 4), record route (type 7,
     * length 3, pointer 4, no slot), then EOL padding. */
    static const uint8_t opts[12] = {1, 1, 148, 4, 0, 0, 7, 3, 4, 0, 0, 0};
    c.ip4_opts = opts;
    c.ip4_opts_len = sizeof opts;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_TCP);
    cr_assert_eq(pi.l4_offset, 14 + 32);
    cr_assert_eq(pi.payload_len, 3);
    cr_assert_eq(memcmp(pi.payload, "abc", 3), 0);

    static const uint8_t bad_len[4] = {7, 1, 0, 0}; /* option length 1 < 2 */
    c.ip4_opts = bad_len;
    c.ip4_opts_len = 4;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_IP4_BAD_OPTIONS);
    static const uint8_t overrun[4] = {1, 1, 7, 9}; /* runs past the header */
    c.ip4_opts = overrun;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_IP4_BAD_OPTIONS);
    static const uint8_t eol_then_junk[4] = {0, 0xff, 0xff, 0xff}; /* EOL ends the list */
    c.ip4_opts = eol_then_junk;
    enum wm_pkt_verdict v = parse_crafted(&c, WM_TCP_ACK, "abc", NULL);
    cr_assert_eq(v, WM_PKT_TCP, "%s", wm_pkt_verdict_name(v));
}

/* A crafted IPv4 TCP frame with 4 payload bytes into frame[0..*len) (c
 * keeps its endpoints); returns its IPv4 header. */
static uint8_t *crafted_ip4(struct wm_craft *c, size_t *len)
{
    wm_craft_ip4(c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    cr_assert_eq(parse_crafted(c, WM_TCP_ACK, "abcd", len), WM_PKT_TCP);
    return frame + 14;
}

Test(parse, ipv4_header_errors)
{
    struct wm_craft c;
    size_t len;
    uint8_t *ip = crafted_ip4(&c, &len);

    /* Each change refills the header checksum, so the check meant is reached. */
    ip[0] = 0x44; /* IHL 4 */
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_IHL);
    ip[0] = 0x46; /* IHL 6 = 24 bytes: TCP ports read as an option, still inside the frame */
    ip[2] = 0; ip[3] = 22; /* total length below IHL */
    wm_craft_ip4_checksum(ip);
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_TOTAL_LENGTH);
    ip[0] = 0x45;
    ip[3] = 200; /* total length beyond the frame */
    wm_craft_ip4_checksum(ip);
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_TOTAL_LENGTH);
    ip[3] = 44;
    ip[0] = 0x55;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_VERSION);
    ip[0] = 0x45;
    cr_assert_eq(wm_pkt_parse(frame, 14 + 19, &pi), WM_PKT_IP4_TRUNCATED);
    ip[16] = 239; /* multicast destination */
    wm_craft_ip4_checksum(ip);
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_ADDRESS);
    ip[16] = 10;
    wm_craft_ip4_checksum(ip);
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_TCP);
    /* IP total length shorter than the TCP header it claims. */
    ip[3] = 30;
    wm_craft_ip4_checksum(ip);
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_TCP_TRUNCATED);
}

/* RFC 791 §3.1 / RFC 1071: a header whose checksum does not add up is
 * dropped as ip4_bad_checksum (any flipped bit of the header, the checksum
 * field included, with or without options), before the fields it covers
 * are believed; a correct one passes. The payload is not covered. */
Test(parse, ipv4_header_checksum)
{
    struct wm_craft c;
    size_t len;
    uint8_t *ip = crafted_ip4(&c, &len);
    for (size_t bit = 0; bit < 20 * 8; bit++) {
        ip[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        enum wm_pkt_verdict v = wm_pkt_parse(frame, len, &pi);
        ip[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        /* Version and IHL are read before the sum they decide the extent of. */
        if (bit < 8) cr_expect_neq(v, WM_PKT_TCP, "bit %zu", bit);
        else cr_expect_eq(v, WM_PKT_IP4_BAD_CHECKSUM, "bit %zu: %s", bit, wm_pkt_verdict_name(v));
    }
    frame[len - 1] ^= 0xff; /* TCP payload: not the IPv4 header's business */
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_TCP);
    static const uint8_t opts[8] = {1, 1, 1, 1, 0x44, 4, 5, 0}; /* NOPs, a timestamp option */
    c.ip4_opts = opts;
    c.ip4_opts_len = 8;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abcd", &len), WM_PKT_TCP);
    ip[20 + 6] ^= 0x10; /* a bit of an option */
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP4_BAD_CHECKSUM);
    cr_assert_str_eq(wm_pkt_verdict_name(WM_PKT_IP4_BAD_CHECKSUM), "ip4_bad_checksum");
}

Test(parse, ipv4_fragments_are_counted_not_parsed)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    c.ip4_frag = 0x4000; /* DF only: not a fragment */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_TCP);
    c.ip4_frag = 0x2000; /* MF: first fragment */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_IP_FRAGMENT);
    c.ip4_frag = 0x0010; /* last fragment at offset 128 */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_IP_FRAGMENT);
}

Test(parse, not_ip_and_not_tcp)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    c.ip_proto = 17;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "abc", NULL), WM_PKT_NOT_TCP);
    size_t len;
    c.ip_proto = 0;
    parse_crafted(&c, WM_TCP_ACK, "abc", &len);
    frame[12] = 0x08; frame[13] = 0x06; /* ARP */
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_NOT_IP);
}

Test(parse, ipv6_with_extension_headers)
{
    struct wm_craft c;
    wm_craft_ip6(&c, "2001:db8::1", 40000, "2001:db8::2", 1883);
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_TCP);
    cr_assert_eq(pi.ip_version, 6);
    cr_assert_eq(pi.l4_offset, 14 + 40);
    cr_assert_eq(pi.payload_len, 2);

    /* Hop-by-hop (8 bytes, PadN), destination options (16 bytes), atomic
     * fragment header (offset 0, M clear), then TCP. */
    uint8_t ext[32] = {0};
    ext[0] = 60; ext[1] = 0; ext[2] = 1; ext[3] = 4;      /* HBH -> DSTOPTS, PadN 4 */
    ext[8] = 44; ext[9] = 1; ext[10] = 1; ext[11] = 12;   /* DSTOPTS(16) -> FRAG, PadN 12 */
    ext[24] = 6; ext[26] = 0; ext[27] = 0;                /* FRAG -> TCP, atomic */
    c.ip6_ext = ext;
    c.ip6_ext_len = sizeof ext;
    c.ip6_ext_nh = 0;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_TCP);
    cr_assert_eq(pi.ip6_ext_count, 3);
    cr_assert_eq(pi.l4_offset, 14 + 40 + 32);
    cr_assert_eq(memcmp(pi.payload, "v6", 2), 0);

    ext[27] = 1; /* M set: a real fragment */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_IP_FRAGMENT);
    ext[27] = 0;
    ext[26] = 0x08; /* offset 1 */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_IP_FRAGMENT);
    ext[26] = 0;
    ext[9] = 9; /* DSTOPTS claims 80 bytes: beyond the packet */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_IP6_EXT_TRUNCATED);
    ext[9] = 1;
    ext[24] = 50; /* ESP: payload opaque */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "v6", NULL), WM_PKT_NOT_TCP);
}

Test(parse, ipv6_extension_chain_is_bounded)
{
    struct wm_craft c;
    wm_craft_ip6(&c, "2001:db8::1", 40000, "2001:db8::2", 1883);
    uint8_t ext[8 * (WM_PKT_MAX_IP6_EXT + 1)] = {0};
    for (int i = 0; i <= WM_PKT_MAX_IP6_EXT; i++) ext[8 * i] = 60; /* DSTOPTS forever */
    c.ip6_ext = ext;
    c.ip6_ext_len = sizeof ext;
    c.ip6_ext_nh = 60;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_IP6_EXT_TOO_MANY);
    ext[8 * (WM_PKT_MAX_IP6_EXT - 1)] = 6; /* the 8th header leads to TCP */
    c.ip6_ext_len = 8 * WM_PKT_MAX_IP6_EXT;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP);
}

Test(parse, ipv6_header_errors)
{
    struct wm_craft c;
    wm_craft_ip6(&c, "2001:db8::1", 40000, "2001:db8::2", 1883);
    size_t len;
    parse_crafted(&c, WM_TCP_ACK, "abc", &len);
    uint8_t *ip = frame + 14;
    ip[4] = 0; ip[5] = 0;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP6_JUMBOGRAM);
    ip[5] = 200;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP6_BAD_PAYLOAD_LENGTH);
    ip[5] = 23;
    ip[0] = 0x40;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP6_BAD_VERSION);
    ip[0] = 0x60;
    ip[24] = 0xff; /* multicast destination */
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_IP6_BAD_ADDRESS);
    ip[24] = 0x20;
    cr_assert_eq(wm_pkt_parse(frame, len, &pi), WM_PKT_TCP);
    cr_assert_eq(wm_pkt_parse(frame, 14 + 39, &pi), WM_PKT_IP6_TRUNCATED);
}

Test(parse, tcp_options)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    /* MSS 1460, SACK-permitted, timestamps, NOP, window scale 7 (Linux SYN). */
    static const uint8_t syn_opts[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
    c.tcp_opts = syn_opts;
    c.tcp_opts_len = sizeof syn_opts;
    cr_assert_eq(parse_crafted(&c, WM_TCP_SYN, NULL, NULL), WM_PKT_TCP);
    cr_assert_eq(pi.mss, 1460);
    cr_assert_eq(pi.wscale, 7);
    cr_assert_eq(pi.tcp_opts, WM_TCP_OPT_MSS | WM_TCP_OPT_SACK_PERM | WM_TCP_OPT_TIMESTAMP | WM_TCP_OPT_WSCALE);
    cr_assert_eq(pi.l7_offset, 14 + 20 + 40);

    static const uint8_t bad_mss[4] = {2, 3, 5, 1};
    c.tcp_opts = bad_mss;
    c.tcp_opts_len = 4;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_BAD_OPTIONS);
    static const uint8_t zero_len[4] = {30, 0, 1, 1};
    c.tcp_opts = zero_len;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_BAD_OPTIONS);
    static const uint8_t unknown_ok[4] = {30, 4, 9, 9};
    c.tcp_opts = unknown_ok;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP);
    static const uint8_t sack_bad[12] = {1, 1, 5, 6, 0, 0, 0, 1, 0, 0, 0, 2};
    c.tcp_opts = sack_bad;
    c.tcp_opts_len = 12;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_BAD_OPTIONS);
}

Test(parse, tcp_header_errors)
{
    struct wm_craft c;
    wm_craft_ip4(&c, "10.0.0.1", 40000, "10.0.0.2", 1883);
    c.tcp_doff_override = 4;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_BAD_DATA_OFFSET);
    c.tcp_doff_override = 15; /* 60 bytes: more than the segment */
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_TRUNCATED);
    c.tcp_doff_override = 0;
    cr_assert_eq(parse_crafted(&c, WM_TCP_SYN | WM_TCP_FIN, NULL, NULL), WM_PKT_TCP_BAD_FLAGS);
    cr_assert_eq(parse_crafted(&c, WM_TCP_SYN | WM_TCP_RST, NULL, NULL), WM_PKT_TCP_BAD_FLAGS);
    cr_assert_eq(parse_crafted(&c, WM_TCP_PSH, "x", NULL), WM_PKT_TCP_BAD_FLAGS);
    c.sport = 0;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "x", NULL), WM_PKT_TCP_BAD_PORT);
}

/* Every prefix of a valid frame parses to a verdict without reading past it
 * (ASan watches the exact-size copy), and only full-header prefixes are TCP. */
Test(parse, every_prefix_of_a_frame)
{
    struct wm_craft c;
    wm_craft_ip6(&c, "2001:db8::1", 40000, "2001:db8::2", 1883);
    c.nvlan = 2;
    c.vlan_tpid[0] = 0x88a8;
    uint8_t ext[8] = {6, 0, 1, 4, 0, 0, 0, 0};
    c.ip6_ext = ext;
    c.ip6_ext_len = 8;
    c.ip6_ext_nh = 0;
    size_t len;
    cr_assert_eq(parse_crafted(&c, WM_TCP_ACK, "payload", &len), WM_PKT_TCP);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, frame, n);
        enum wm_pkt_verdict v = wm_pkt_parse(copy, n, &pi);
        /* The IPv6 payload length is the claim: any cut is caught by it. */
        cr_assert_neq(v, WM_PKT_TCP, "prefix %zu parsed as TCP", n);
        free(copy);
    }
}

Test(parse, verdict_names)
{
    cr_assert_str_eq(wm_pkt_verdict_name(WM_PKT_TCP), "tcp");
    cr_assert_str_eq(wm_pkt_verdict_name(WM_PKT_IP4_BAD_OPTIONS), "ip4_bad_options");
    cr_assert_str_eq(wm_pkt_verdict_name(WM_PKT_VERDICT_COUNT), "?");
    for (int v = 0; v < WM_PKT_VERDICT_COUNT; v++)
        for (int w = v + 1; w < WM_PKT_VERDICT_COUNT; w++)
            cr_assert_str_neq(wm_pkt_verdict_name(v), wm_pkt_verdict_name(w));
}
