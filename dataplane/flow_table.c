/* The connection table: key, index, LRU, expiry. TCP state lives in
 * tcp_track.c; both work on struct wm_flow_table (flow_table.h). */
#include "dataplane/flow_table.h"
#include "dataplane/flow_table_internal.h"

#include <stddef.h>
#include <string.h>

#include <rte_hash_crc.h>

static const char *const close_names[] = {
#define WM_FC_X_NAME(e, s) s,
    WM_FLOW_CLOSE_REASONS(WM_FC_X_NAME)
#undef WM_FC_X_NAME
};
static const char *const disp_names[] = {
#define WM_SD_X_NAME(e, s) s,
    WM_SEG_DISPOSITIONS(WM_SD_X_NAME)
#undef WM_SD_X_NAME
};

const char *wm_flow_close_reason_name(enum wm_flow_close_reason r)
{
    return (unsigned)r < WM_FLOW_CLOSE_COUNT ? close_names[r] : "?";
}

const char *wm_seg_disposition_name(enum wm_seg_disposition d)
{
    return (unsigned)d < WM_SD_COUNT ? disp_names[d] : "?";
}

/* Byte-wise (memcmp) order of two 16-byte addresses, as two big-endian
 * 64-bit compares: inline, no call on the per-packet path. */
static inline int addr_cmp(const uint8_t *a, const uint8_t *b)
{
    uint64_t x, y;
    for (int i = 0; i < 16; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    return 0;
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "wm_flow_key_make stores the ports and VLANs as one little-endian word"
#endif
_Static_assert(offsetof(struct wm_flow_key, port) == 32 && offsetof(struct wm_flow_key, vlan) == 36,
               "flow key layout: ports then VLANs in the last 8 bytes");

int wm_flow_key_make(const struct wm_pkt_info *pi, struct wm_flow_key *key)
{
    int c = addr_cmp(pi->src, pi->dst);
    if (c == 0) c = (int)pi->sport - (int)pi->dport;
    int src_side = c <= 0 ? 0 : 1;
    memcpy(key->addr[src_side], pi->src, 16);
    memcpy(key->addr[!src_side], pi->dst, 16);
    /* Ports and VLANs as one 8-byte store (port[0], port[1], vlan[0],
     * vlan[1] in memory order): the hash and the compare read this word at
     * once, and four 2-byte stores could not be forwarded to that read. */
    uint16_t p0 = src_side ? pi->dport : pi->sport, p1 = src_side ? pi->sport : pi->dport;
    uint64_t tail = (uint64_t)p0 | (uint64_t)p1 << 16 | (uint64_t)pi->vlan_id[0] << 32 | (uint64_t)pi->vlan_id[1] << 48;
    memcpy(key->port, &tail, 8);
    return src_side;
}

uint32_t wm_flow_key_hash(const struct wm_flow_key *key)
{
    return rte_hash_crc(key, sizeof *key, 0x9e3779b9u);
}

void wm_flow_table_config_default(struct wm_flow_table_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_flows = 65536;
    cfg->user_size = 0;
    cfg->ooo_pool_blocks = 8192;
    cfg->ooo_blocks_per_dir = 32;
    cfg->syn_timeout_ns = 30ull * 1000000000ull;
    cfg->idle_timeout_ns = 600ull * 1000000000ull;
    cfg->closed_timeout_ns = 5ull * 1000000000ull;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static uint32_t slot_count(uint32_t max_flows)
{
    uint32_t n = 16;
    while (n < 2 * max_flows) n <<= 1;
    return n;
}

static size_t stride_of(const struct wm_flow_table_config *cfg)
{
    return align64(sizeof(struct wm_flow)) + align64(cfg->user_size);
}

size_t wm_flow_table_memsize(const struct wm_flow_table_config *cfg)
{
    if (cfg->max_flows == 0 || cfg->max_flows > (1u << 30)) return 0;
    uint32_t ns = slot_count(cfg->max_flows);
    return stride_of(cfg) * cfg->max_flows + 2 * align64((size_t)ns * 4) +
           align64(wm_ooo_pool_memsize(cfg->ooo_pool_blocks));
}

int wm_flow_table_init(struct wm_flow_table *t, void *mem, const struct wm_flow_table_config *cfg,
                       const struct wm_stream_ops *ops, void *ops_ctx)
{
    if (cfg->max_flows == 0 || cfg->max_flows > (1u << 30)) return -1;
    if (cfg->ooo_pool_blocks && cfg->ooo_blocks_per_dir == 0) return -1;
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    if (ops) t->ops = *ops;
    t->ops_ctx = ops_ctx;
    t->entry_stride = stride_of(cfg);
    uint32_t ns = slot_count(cfg->max_flows);
    uint8_t *m = mem;
    t->entries = m;
    m += t->entry_stride * cfg->max_flows;
    t->slot_entry = (uint32_t *)m;
    m += align64((size_t)ns * 4);
    t->slot_hash = (uint32_t *)m;
    m += align64((size_t)ns * 4);
    memset(t->entries, 0, t->entry_stride * cfg->max_flows);
    memset(t->slot_entry, 0, (size_t)ns * 4);
    t->slot_mask = ns - 1;
    wm_ooo_pool_init(&t->ooo, m, cfg->ooo_pool_blocks);
    for (uint32_t i = 0; i < cfg->max_flows; i++)
        wm_flow_at(t, i)->lru_next = i + 1 < cfg->max_flows ? i + 1 : WM_FLOW_NIL;
    t->free_head = 0;
    t->lru_head = t->lru_tail = t->expire_at = WM_FLOW_NIL;
    uint64_t young = WM_FLOW_IDLE_MIN_NS;
    if (cfg->syn_timeout_ns < young) young = cfg->syn_timeout_ns;
    if (cfg->idle_timeout_ns < young) young = cfg->idle_timeout_ns;
    if (cfg->closed_timeout_ns < young) young = cfg->closed_timeout_ns;
    t->young_ns = young;
    t->next_id = 1;
    return 0;
}

/* ---------------------------------------------------------------- index */

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Key equality as five 64-bit words (the key is 40 bytes without padding),
 * loaded straight from both keys: copying them into word arrays first made
 * the compiler spill them through the stack, where each reload waited on a
 * wider store (a failed store-to-load forward) on every lookup. */
static inline int key_eq(const struct wm_flow_key *a, const struct wm_flow_key *b)
{
    _Static_assert(sizeof(struct wm_flow_key) == 40, "flow key layout");
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    return ((ld64(x) ^ ld64(y)) | (ld64(x + 8) ^ ld64(y + 8)) | (ld64(x + 16) ^ ld64(y + 16)) |
            (ld64(x + 24) ^ ld64(y + 24)) | (ld64(x + 32) ^ ld64(y + 32))) == 0;
}

static struct wm_flow *find(struct wm_flow_table *t, const struct wm_flow_key *key, uint32_t h)
{
    uint32_t i = h & t->slot_mask;
    for (;;) {
        uint32_t e = t->slot_entry[i];
        if (e == 0) return NULL;
        if (t->slot_hash[i] == h) {
            struct wm_flow *f = wm_flow_at(t, e - 1);
            if (key_eq(&f->key, key)) return f;
        }
        i = (i + 1) & t->slot_mask;
        t->c.probe_steps++;
    }
}

struct wm_flow *wm_flow_table_lookup(struct wm_flow_table *t, const struct wm_flow_key *key)
{
    uint64_t steps = t->c.probe_steps;
    struct wm_flow *f = find(t, key, wm_flow_key_hash(key));
    t->c.probe_steps = steps;
    return f;
}

static void index_insert(struct wm_flow_table *t, uint32_t idx, uint32_t h)
{
    uint32_t i = h & t->slot_mask;
    while (t->slot_entry[i]) i = (i + 1) & t->slot_mask;
    t->slot_entry[i] = idx + 1;
    t->slot_hash[i] = h;
}

/* Backward-shift deletion (Knuth 6.4 algorithm R): later entries of the
 * cluster move up unless their home slot lies cyclically in (hole, j]. */
static void index_remove(struct wm_flow_table *t, uint32_t idx, uint32_t h)
{
    uint32_t i = h & t->slot_mask;
    while (t->slot_entry[i] != idx + 1) i = (i + 1) & t->slot_mask;
    t->slot_entry[i] = 0;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & t->slot_mask;
        if (t->slot_entry[j] == 0) return;
        uint32_t k = t->slot_hash[j] & t->slot_mask;
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays) continue;
        t->slot_entry[i] = t->slot_entry[j];
        t->slot_hash[i] = t->slot_hash[j];
        t->slot_entry[j] = 0;
        i = j;
    }
}

/* ---------------------------------------------------------------- LRU */

static void lru_unlink(struct wm_flow_table *t, struct wm_flow *f)
{
    if (f->lru_prev != WM_FLOW_NIL) wm_flow_at(t, f->lru_prev)->lru_next = f->lru_next;
    else t->lru_head = f->lru_next;
    if (f->lru_next != WM_FLOW_NIL) wm_flow_at(t, f->lru_next)->lru_prev = f->lru_prev;
    else t->lru_tail = f->lru_prev;
}

static void lru_push_head(struct wm_flow_table *t, struct wm_flow *f, uint32_t idx)
{
    f->lru_prev = WM_FLOW_NIL;
    f->lru_next = t->lru_head;
    if (t->lru_head != WM_FLOW_NIL) wm_flow_at(t, t->lru_head)->lru_prev = idx;
    else t->lru_tail = idx;
    t->lru_head = idx;
}

void wm_flow_touch(struct wm_flow_table *t, struct wm_flow *f, uint64_t now_ns)
{
    f->last_ns = now_ns;
    /* The usual case (the flow of the previous packet) is told by a
     * multiply: the entry's index would take a 64-bit division. f is in the
     * list, so the list is not empty. */
    if (wm_flow_at(t, t->lru_head) == f) return;
    uint32_t idx = wm_flow_index(t, f);
    if (idx == t->expire_at) t->expire_at = f->lru_prev; /* the sweep goes on with the next one */
    lru_unlink(t, f);
    lru_push_head(t, f, idx);
}

/* ---------------------------------------------------------------- life cycle */

/* Runs the consumer's end-of-connection callbacks and returns the buffers. A
 * hole still open now can never be filled: that direction is lost. */
void wm_flow_end(struct wm_flow_table *t, struct wm_flow *f, enum wm_flow_close_reason why)
{
    if (f->state != WM_FLOW_SYN_SENT && f->state != WM_FLOW_ESTABLISHED) return;
    for (int d = 0; d < 2; d++) {
        struct wm_tcp_dir *dir = &f->dir[d];
        if (dir->state == WM_DIR_OPEN && wm_tcp_dir_has_hole(dir)) {
            wm_tcp_dir_lose(dir, &t->ooo, &t->c.stream);
            t->c.dir_lost_at_close++;
            if (t->ops.on_dir_end) t->ops.on_dir_end(t->ops_ctx, f, d, WM_DIR_END_LOST);
        }
        wm_tcp_dir_release(dir, &t->ooo, &t->c.stream);
    }
    t->c.closed[why]++;
    if (t->ops.on_close) t->ops.on_close(t->ops_ctx, f, why);
    f->state = WM_FLOW_CLOSED;
}

void wm_flow_remove(struct wm_flow_table *t, struct wm_flow *f, enum wm_flow_close_reason why)
{
    wm_flow_end(t, f, why);
    uint32_t idx = wm_flow_index(t, f);
    index_remove(t, idx, f->hash);
    if (idx == t->expire_at) t->expire_at = f->lru_prev;
    lru_unlink(t, f);
    f->state = WM_FLOW_FREE;
    f->lru_next = t->free_head;
    t->free_head = idx;
    t->active--;
}

struct wm_flow *wm_flow_create(struct wm_flow_table *t, const struct wm_flow_key *key, uint32_t h,
                               uint64_t now_ns)
{
    if (t->free_head == WM_FLOW_NIL)
        wm_flow_remove(t, wm_flow_at(t, t->lru_tail), WM_FLOW_CLOSE_EVICTED);
    uint32_t idx = t->free_head;
    struct wm_flow *f = wm_flow_at(t, idx);
    t->free_head = f->lru_next;
    memset(f, 0, sizeof *f);
    f->key = *key;
    f->hash = h;
    f->last_ns = now_ns;
    f->id = t->next_id++;
    f->dir[0].ooo_head = f->dir[1].ooo_head = WM_OOO_NIL;
    index_insert(t, idx, h);
    lru_push_head(t, f, idx);
    t->active++;
    return f;
}

int wm_flow_expired(const struct wm_flow_table *t, const struct wm_flow *f, uint64_t now_ns)
{
    uint64_t limit;
    switch (f->state) {
    case WM_FLOW_SYN_SENT: limit = t->cfg.syn_timeout_ns; break;
    case WM_FLOW_CLOSED: limit = t->cfg.closed_timeout_ns; break;
    default:
        limit = f->idle_ns ? f->idle_ns : t->cfg.idle_timeout_ns;
        if (limit == WM_FLOW_IDLE_NEVER) return 0;
        if (limit < WM_FLOW_IDLE_MIN_NS) limit = WM_FLOW_IDLE_MIN_NS;
        break;
    }
    return now_ns > f->last_ns && now_ns - f->last_ns > limit;
}

unsigned wm_flow_table_expire(struct wm_flow_table *t, uint64_t now_ns, unsigned max)
{
    unsigned n = 0;
    uint32_t i = t->expire_at != WM_FLOW_NIL ? t->expire_at : t->lru_tail;
    for (unsigned looked = 0; i != WM_FLOW_NIL && looked < max; looked++) {
        struct wm_flow *f = wm_flow_at(t, i);
        /* every entry after it is as young or younger: none expired */
        if (now_ns <= f->last_ns || now_ns - f->last_ns < t->young_ns) {
            i = WM_FLOW_NIL;
            break;
        }
        uint32_t next = f->lru_prev;
        if (wm_flow_expired(t, f, now_ns)) {
            wm_flow_remove(t, f, WM_FLOW_CLOSE_TIMEOUT);
            n++;
        }
        i = next;
    }
    t->expire_at = i;
    return n;
}

void wm_flow_table_flush(struct wm_flow_table *t)
{
    while (t->lru_tail != WM_FLOW_NIL) wm_flow_remove(t, wm_flow_at(t, t->lru_tail), WM_FLOW_CLOSE_SHUTDOWN);
}

struct wm_flow *wm_flow_find(struct wm_flow_table *t, const struct wm_flow_key *key, uint32_t h)
{
    t->c.lookups++;
    return find(t, key, h);
}
