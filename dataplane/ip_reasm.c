/* IPv4 reassembly for a worker; see ip_reasm.h.
 *
 * rte_ip_frag_table_del_expired_entries is still marked experimental in DPDK
 * 22.11; without it a datagram that never completes would only be freed
 * when a later fragment hashes to its bucket, so timeouts would not bound
 * the mbufs held. */
#define ALLOW_EXPERIMENTAL_API 1
#include "dataplane/ip_reasm.h"

#include <stdio.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_malloc.h>

/* Entries per hash bucket (librte_ip_frag's bound and the value of DPDK's
 * examples/ip_reassembly). */
#define WM_IP_REASM_BUCKET_ENTRIES 16

static uint32_t bucket_count(uint32_t max_datagrams)
{
    uint32_t buckets = 1;
    while (buckets * WM_IP_REASM_BUCKET_ENTRIES < max_datagrams) buckets <<= 1;
    return buckets;
}

size_t wm_ip_reasm_memsize(uint32_t max_datagrams)
{
    return sizeof(struct wm_ip_reasm) + 128 + (size_t)512 * bucket_count(max_datagrams) * WM_IP_REASM_BUCKET_ENTRIES;
}

struct wm_ip_reasm *wm_ip_reasm_new(uint32_t max_datagrams, uint32_t timeout_ms, int socket)
{
    if (max_datagrams < 1 || max_datagrams > 65536 || timeout_ms < 1 || timeout_ms > 60000) {
        fprintf(stderr, "wirematch: IPv4 reassembly: bad bounds (%u datagrams, %u ms)\n", max_datagrams, timeout_ms);
        return NULL;
    }
    struct wm_ip_reasm *r = rte_zmalloc_socket("wm_ip_reasm", sizeof *r, RTE_CACHE_LINE_SIZE, socket);
    if (!r) return NULL;
    uint32_t buckets = bucket_count(max_datagrams);
    uint64_t cycles = (rte_get_tsc_hz() + 999) / 1000 * timeout_ms;
    r->tbl = rte_ip_frag_table_create(buckets, WM_IP_REASM_BUCKET_ENTRIES, max_datagrams, cycles, socket);
    if (!r->tbl) {
        fprintf(stderr, "wirematch: IPv4 reassembly: no memory for a table of %u datagrams\n", max_datagrams);
        rte_free(r);
        return NULL;
    }
    return r;
}

static void free_death_row(struct wm_ip_reasm *r)
{
    if (!r->dr.cnt) return;
    r->c.freed += r->dr.cnt;
    rte_ip_frag_free_death_row(&r->dr, 3);
}

struct rte_mbuf *wm_ip_reasm_take(struct wm_ip_reasm *r, struct rte_mbuf *m, uint16_t l3_offset, uint64_t now_tsc)
{
    r->c.fragments++;
    if ((uint32_t)l3_offset + sizeof(struct rte_ipv4_hdr) > rte_pktmbuf_data_len(m)) {
        r->c.unusable++;
        rte_pktmbuf_free(m);
        return NULL;
    }
    struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3_offset);
    m->l2_len = l3_offset;
    m->l3_len = rte_ipv4_hdr_len(ip);
    /* The death row holds 32 datagrams' worth; keep room for this one. */
    if (r->dr.cnt + RTE_LIBRTE_IP_FRAG_MAX_FRAG + 1 > RTE_IP_FRAG_DEATH_ROW_MBUF_LEN) free_death_row(r);
    struct rte_mbuf *d = rte_ipv4_frag_reassemble_packet(r->tbl, &r->dr, m, now_tsc, ip);
    if (d) {
        /* DPDK rewrites the datagram's Total Length and fragment field,
         * which the header checksum covers; refill it, so the datagram
         * passes the parser's checksum test as its fragments did. */
        struct rte_ipv4_hdr *dh = rte_pktmbuf_mtod_offset(d, struct rte_ipv4_hdr *, d->l2_len);
        dh->hdr_checksum = 0;
        dh->hdr_checksum = rte_ipv4_cksum(dh);
        r->c.reassembled++;
    }
    return d;
}

void wm_ip_reasm_burst_end(struct wm_ip_reasm *r, uint64_t now_tsc)
{
    rte_ip_frag_table_del_expired_entries(r->tbl, &r->dr, now_tsc);
    free_death_row(r);
}

void wm_ip_reasm_flush(struct wm_ip_reasm *r)
{
    /* Expire everything (the death row takes at most 32 datagrams a round). */
    free_death_row(r);
    for (int i = 0; i < 65536 / 32 + 1; i++) {
        rte_ip_frag_table_del_expired_entries(r->tbl, &r->dr, UINT64_MAX);
        if (!r->dr.cnt) break;
        free_death_row(r);
    }
}

void wm_ip_reasm_free(struct wm_ip_reasm *r)
{
    if (!r) return;
    wm_ip_reasm_flush(r);
    rte_ip_frag_table_destroy(r->tbl);
    rte_free(r);
}

void wm_ip_reasm_counters_add(struct wm_ip_reasm_counters *sum, const struct wm_ip_reasm *r)
{
    const volatile struct wm_ip_reasm_counters *c = &r->c;
#define WM_IP_REASM_X_ADD(n) sum->n += c->n;
    WM_IP_REASM_COUNTERS(WM_IP_REASM_X_ADD)
#undef WM_IP_REASM_X_ADD
}
