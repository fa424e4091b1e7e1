/* EXI string table (W3C EXI 1.0 Second Edition §7.3): URI, prefix and
 * local-name partitions (§7.3.2, compact identifiers) and the global and
 * local value partitions (§7.3.3) with valueMaxLength and
 * valuePartitionCapacity.
 *
 * Seeded from a compiled grammar's initial entries (§7.3.1, Appendix D);
 * wm_exi_strtab_reset() returns to that state in time proportional to what
 * the previous document added, not to the schema size. Everything added
 * lives in the caller's arena, so the memory cap bounds the table. Lookups
 * by compact identifier are O(1) (decoder); lookups by string (encoder,
 * want_hash) use hashes for URIs, local names and values (a decoder builds
 * none of them). One table per decoder/encoder; not thread safe.
 */
#ifndef WM_CODEC_EXI_STRTAB_H
#define WM_CODEC_EXI_STRTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/exi_arena.h"
#include "codec/exi_error.h"
#include "codec/exi_grammar.h"

typedef struct wm_exi_sview {
    const char *p;
    uint32_t len;
} wm_exi_sview;

typedef struct wm_exi_st_uri {
    wm_exi_sview s;
    uint32_t seed_first, seed_count;  /* initial local names: lids seed_first.. */
    uint32_t *extra;                  /* lids added by the document */
    uint32_t n_extra, cap_extra;
    wm_exi_sview *prefixes;           /* prefix partition (§7.3.2) */
    uint32_t n_prefixes, cap_prefixes;
} wm_exi_st_uri;

typedef struct wm_exi_st_lname {
    wm_exi_sview s;
    uint32_t uri;
    uint32_t *vals;                   /* local value partition: global value ids; WM_EXI_NONE
                                         for an id left permanently unassigned when its value was
                                         replaced in the global partition (§7.3.3) */
    uint32_t n_vals, cap_vals;
    uint32_t bi;                      /* built-in element grammar (index), WM_EXI_NONE */
    bool dirty;
} wm_exi_st_lname;

typedef struct wm_exi_st_value {
    wm_exi_sview s;
    uint32_t lid;                     /* owner qname's local-name id */
    uint32_t local_idx;               /* its compact id in that local partition */
} wm_exi_st_value;

typedef struct wm_exi_strtab {
    const wm_exi_grammar *g;
    wm_exi_arena *arena;
    uint32_t value_max_length, value_capacity;
    wm_exi_st_uri *uris;
    uint32_t n_uris, cap_uris;
    wm_exi_st_lname *lnames;
    uint32_t n_lnames, cap_lnames;
    uint32_t *dirty;                  /* seed lids touched by the document */
    uint32_t n_dirty, cap_dirty;
    wm_exi_st_value *values;
    uint32_t n_values;                /* entries in the global partition (<= capacity) */
    uint32_t next_gid;                /* where the next value goes (wraps at capacity) */
    uint32_t cap_values;
    wm_exi_st_uri *tpl_uris;          /* seeded entries, copied at every reset (malloc) */
    wm_exi_st_lname *tpl_lnames;
    wm_exi_st_lname *base_lnames;     /* the lnames array between documents (malloc, seed + 32):
                                         a reset restores only the seeds in `dirty` */
    uint32_t base_cap;
    uint32_t *hash;                   /* encoder only: open addressing, gid+1 (0 = empty) */
    uint32_t hash_cap;
    /* encoder only, open addressing like hash: (uri, local name) -> lid+1 */
    uint32_t *seed_nhash;             /* the seeded names (malloc, built once at init) */
    uint32_t seed_nhash_cap;
    uint32_t *nhash;                  /* names the document added (arena) */
    uint32_t nhash_cap, nhash_n;
    uint32_t *uhash;                  /* every URI -> uri+1 (arena) */
    uint32_t uhash_cap;
    bool want_hash;
} wm_exi_strtab;

/* Seeds the table from g (kept by pointer). The arena provides all storage
 * and must outlive the table; want_hash enables value lookup by string.
 * Returns WM_EXI_E_MEMORY when the arena's cap is too small for the seed. */
wm_exi_status wm_exi_strtab_init(wm_exi_strtab *t, const wm_exi_grammar *g, wm_exi_arena *a, bool want_hash);
void wm_exi_strtab_free(wm_exi_strtab *t);
/* Back to the seeded state with the given options (value partition limits).
 * Must be called after the arena has been reset. */
wm_exi_status wm_exi_strtab_reset(wm_exi_strtab *t, uint32_t value_max_length, uint32_t value_capacity);

/* Partition sizes and lookups by compact identifier (§7.3.2). */
static inline uint32_t wm_exi_strtab_lname_count(const wm_exi_strtab *t, uint32_t uri)
{
    return t->uris[uri].seed_count + t->uris[uri].n_extra;
}
/* Local-name id of compact identifier k (< wm_exi_strtab_lname_count) of uri. */
static inline uint32_t wm_exi_strtab_lname_at(const wm_exi_strtab *t, uint32_t uri, uint32_t k)
{
    const wm_exi_st_uri *u = &t->uris[uri];
    return k < u->seed_count ? u->seed_first + k : u->extra[k - u->seed_count];
}
/* Compact id of lid within its URI partition. */
uint32_t wm_exi_strtab_lname_index(const wm_exi_strtab *t, uint32_t lid);

/* Adds entries (copies of the bytes into the arena). Return the new id, or
 * WM_EXI_NONE when the memory cap is reached. */
uint32_t wm_exi_strtab_add_uri(wm_exi_strtab *t, const char *s, uint32_t len);
uint32_t wm_exi_strtab_add_lname(wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len);
bool wm_exi_strtab_add_prefix(wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len);
/* Adds a value to the global and `lid`'s local partition if its length in
 * characters is within valueMaxLength and the capacity is not 0 (§7.3.3).
 * `bytes` points at storage the caller already placed in the arena. Returns
 * false only when memory runs out. */
bool wm_exi_strtab_add_value_slow(wm_exi_strtab *t, uint32_t lid, const char *bytes, uint32_t len, uint32_t nchars);
/* Internal to both: value gid of the global partition, the next entry of
 * lid's local one (room checked by the caller). */
static inline void wm_exi_strtab_put_value(wm_exi_strtab *t, wm_exi_st_lname *l, uint32_t gid, uint32_t lid,
                                           const char *bytes, uint32_t len)
{
    wm_exi_st_value *v = &t->values[gid];
    v->s.p = bytes;
    v->s.len = len;
    v->lid = lid;
    v->local_idx = l->n_vals;
    l->vals[l->n_vals++] = gid;
}
/* Adds a value (§7.3.3: nchars characters; bytes already in the arena, not
 * copied) to the global and lid's local partition; false only when memory
 * runs out. The common case inline, the rest in wm_exi_strtab_add_value_slow. */
static inline bool wm_exi_strtab_add_value(wm_exi_strtab *t, uint32_t lid, const char *bytes, uint32_t len, uint32_t nchars)
{
    /* the common case inline (a decoder adds one per literal value): room in
     * both partitions, no capacity wrap, the name already touched, no hash */
    wm_exi_st_lname *l = &t->lnames[lid];
    uint32_t gid = t->next_gid;
    if (__builtin_expect(nchars != 0 && nchars <= t->value_max_length && t->value_capacity == UINT32_MAX &&
                             gid == t->n_values && gid < t->cap_values && !t->hash,
                         1)) {
        if (__builtin_expect(!(l->n_vals < l->cap_vals && l->dirty), 0)) {
            /* the first value of a seeded name: what the slow path does for
             * it (a local partition of 8, the name on the dirty list) */
            if (l->dirty || l->cap_vals || lid >= t->g->n_lids || t->n_dirty >= t->cap_dirty) goto slow;
            uint32_t *vals = (uint32_t *)wm_exi_arena_alloc(t->arena, 8 * sizeof *vals);
            if (!vals) goto slow;
            l->vals = vals;
            l->cap_vals = 8;
            l->dirty = true;
            t->dirty[t->n_dirty++] = lid;
        }
        wm_exi_strtab_put_value(t, l, gid, lid, bytes, len);
        t->n_values = t->next_gid = gid + 1;
        return true;
    }
slow:
    return wm_exi_strtab_add_value_slow(t, lid, bytes, len, nchars);
}

/* Records that the document changed seeded local name `lid` (other than
 * through wm_exi_strtab_add_value, which does this itself), so the next reset
 * restores it. False when the memory cap is reached. */
bool wm_exi_strtab_touch(wm_exi_strtab *t, uint32_t lid);

/* Encoder lookups by string; WM_EXI_NONE when absent. With want_hash the
 * URI and local-name lookups are hashed (expected O(1)); without, linear. */
uint32_t wm_exi_strtab_find_uri(const wm_exi_strtab *t, const char *s, uint32_t len);
uint32_t wm_exi_strtab_find_lname(const wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len);
uint32_t wm_exi_strtab_find_prefix(const wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len);
uint32_t wm_exi_strtab_find_value(const wm_exi_strtab *t, const char *s, uint32_t len);

/* Copies bytes into the arena; NULL when the cap is reached. */
char *wm_exi_strtab_copy(wm_exi_strtab *t, const char *s, uint32_t len);

#endif
