/* Frame crafting for tests; see pkt_craft.h. */
#include "tests/lib/pkt_craft.h"

#include <arpa/inet.h>
#include <string.h>

static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }

void wm_craft_ip4_checksum(uint8_t *ip)
{
    size_t iph = (size_t)(ip[0] & 0x0f) * 4;
    uint32_t sum = 0;
    wr16(ip + 10, 0);
    for (size_t i = 0; i < iph; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    wr16(ip + 10, (uint16_t)~sum);
}

size_t wm_craft_frame(uint8_t *buf, size_t cap, const struct wm_craft *c, uint32_t seq,
                      uint32_t ack, uint8_t flags, const void *payload, size_t n)
{
    size_t l3 = 14 + 4 * (size_t)c->nvlan;
    size_t iph = c->v6 ? 40 + c->ip6_ext_len : 20 + c->ip4_opts_len;
    size_t tcph = 20 + c->tcp_opts_len;
    size_t total = l3 + iph + tcph + n;
    if (total > cap) return 0;
    memset(buf, 0, l3 + iph + tcph);
    static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02}, smac[6] = {0x02, 0, 0, 0, 0, 0x01};
    memcpy(buf, dmac, 6);
    memcpy(buf + 6, smac, 6);
    size_t off = 12;
    for (int i = 0; i < c->nvlan; i++) {
        wr16(buf + off, c->vlan_tpid[i] ? c->vlan_tpid[i] : 0x8100);
        wr16(buf + off + 2, c->vlan_id[i]);
        off += 4;
    }
    wr16(buf + off, c->v6 ? 0x86dd : 0x0800);
    uint8_t *ip = buf + l3;
    uint8_t proto = c->ip_proto ? c->ip_proto : 6;
    if (c->v6) {
        ip[0] = 0x60;
        wr16(ip + 4, (uint16_t)(c->ip6_ext_len + tcph + n));
        ip[6] = c->ip6_ext_len ? c->ip6_ext_nh : proto;
        ip[7] = 64;
        memcpy(ip + 8, c->src, 16);
        memcpy(ip + 24, c->dst, 16);
        if (c->ip6_ext_len) memcpy(ip + 40, c->ip6_ext, c->ip6_ext_len);
    } else {
        ip[0] = (uint8_t)(0x40 | (iph / 4));
        wr16(ip + 2, (uint16_t)(iph + tcph + n));
        wr16(ip + 6, c->ip4_frag);
        ip[8] = 64;
        ip[9] = proto;
        memcpy(ip + 12, c->src, 4);
        memcpy(ip + 16, c->dst, 4);
        if (c->ip4_opts_len) memcpy(ip + 20, c->ip4_opts, c->ip4_opts_len);
        wm_craft_ip4_checksum(ip);
    }
    uint8_t *tcp = ip + iph;
    wr16(tcp, c->sport);
    wr16(tcp + 2, c->dport);
    wr32(tcp + 4, seq);
    wr32(tcp + 8, ack);
    tcp[12] = (uint8_t)((c->tcp_doff_override ? c->tcp_doff_override : tcph / 4) << 4);
    tcp[13] = flags;
    wr16(tcp + 14, 65535);
    if (c->tcp_opts_len) memcpy(tcp + 20, c->tcp_opts, c->tcp_opts_len);
    if (n) memcpy(tcp + tcph, payload, n);
    return total;
}

void wm_craft_ip4(struct wm_craft *c, const char *client, uint16_t cport, const char *server,
                  uint16_t sport)
{
    memset(c, 0, sizeof *c);
    inet_pton(AF_INET, client, c->src);
    inet_pton(AF_INET, server, c->dst);
    c->sport = cport;
    c->dport = sport;
}

void wm_craft_ip6(struct wm_craft *c, const char *client, uint16_t cport, const char *server,
                  uint16_t sport)
{
    memset(c, 0, sizeof *c);
    c->v6 = 1;
    inet_pton(AF_INET6, client, c->src);
    inet_pton(AF_INET6, server, c->dst);
    c->sport = cport;
    c->dport = sport;
}

struct wm_craft wm_craft_reverse(const struct wm_craft *c)
{
    struct wm_craft r = *c;
    memcpy(r.src, c->dst, 16);
    memcpy(r.dst, c->src, 16);
    r.sport = c->dport;
    r.dport = c->sport;
    return r;
}
