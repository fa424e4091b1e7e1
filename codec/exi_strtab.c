/* EXI string table (§7.3). Growth of every array goes through the arena so
 * the decoder's memory cap covers the whole table. */
#include "codec/exi_strtab.h"

#include <stdlib.h>
#include <string.h>

static void *grow(wm_exi_arena *a, void *old, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap) return old;
    uint32_t nc = *cap ? *cap * 2 : 8;
    void *p = wm_exi_arena_alloc(a, (size_t)nc * elem);
    if (!p) return NULL;
    if (old && n) memcpy(p, old, (size_t)n * elem);
    *cap = nc;
    return p;
}

/* the common case, room left, without a call: this runs for every string added */
#define GROW(t, arr, n, cap) \
    ((n) < (cap) || ((arr) = grow((t)->arena, (arr), (n), &(cap), sizeof *(arr)), (arr) != NULL))

static uint32_t hash_str(const char *s, uint32_t len)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t hash_name(uint32_t uri, const char *s, uint32_t len) { return hash_str(s, len) ^ (uri * 0x9E3779B1u); }

/* Smallest power of two >= 2n (load factor at most 1/2), at least 16. */
static uint32_t hash_size(uint32_t n)
{
    uint32_t c = 16;
    while (c < 2 * (uint64_t)n && c < (1u << 31)) c *= 2;
    return c;
}

static void nhash_put(const wm_exi_strtab *t, uint32_t *h, uint32_t cap, uint32_t lid)
{
    const wm_exi_st_lname *l = &t->lnames[lid];
    uint32_t m = cap - 1;
    for (uint32_t i = hash_name(l->uri, l->s.p, l->s.len) & m;; i = (i + 1) & m)
        if (!h[i]) { h[i] = lid + 1; return; }
}

static uint32_t nhash_get(const wm_exi_strtab *t, const uint32_t *h, uint32_t cap, uint32_t uri, const char *s, uint32_t len)
{
    uint32_t m = cap - 1;
    for (uint32_t i = hash_name(uri, s, len) & m; h[i]; i = (i + 1) & m) {
        const wm_exi_st_lname *l = &t->lnames[h[i] - 1];
        if (l->uri == uri && l->s.len == len && !memcmp(l->s.p, s, len)) return h[i] - 1;
    }
    return WM_EXI_NONE;
}

static void uhash_put(wm_exi_strtab *t, uint32_t uri)
{
    uint32_t m = t->uhash_cap - 1;
    for (uint32_t i = hash_str(t->uris[uri].s.p, t->uris[uri].s.len) & m;; i = (i + 1) & m)
        if (!t->uhash[i]) { t->uhash[i] = uri + 1; return; }
}

/* (Re)builds the URI hash for n_uris + 1 entries; false at the memory cap. */
static bool uhash_rebuild(wm_exi_strtab *t)
{
    uint32_t cap = hash_size(t->n_uris + 1);
    if (t->uhash && cap <= t->uhash_cap) return true;
    uint32_t *h = wm_exi_arena_alloc(t->arena, cap * sizeof *h);
    if (!h) return false;
    memset(h, 0, cap * sizeof *h);
    t->uhash = h;
    t->uhash_cap = cap;
    for (uint32_t u = 0; u < t->n_uris; u++) uhash_put(t, u);
    return true;
}

/* Makes room in the document's name hash for one more name; false at the cap. */
static bool nhash_room(wm_exi_strtab *t)
{
    if (t->nhash && (t->nhash_n + 1) * 2 <= t->nhash_cap) return true;
    uint32_t cap = hash_size(t->nhash_n + 1);
    if (cap < 64) cap = 64;
    uint32_t *h = wm_exi_arena_alloc(t->arena, cap * sizeof *h);
    if (!h) return false;
    memset(h, 0, cap * sizeof *h);
    for (uint32_t lid = t->g->n_lids; lid < t->n_lnames; lid++) nhash_put(t, h, cap, lid);
    t->nhash = h;
    t->nhash_cap = cap;
    return true;
}

char *wm_exi_strtab_copy(wm_exi_strtab *t, const char *s, uint32_t len)
{
    char *p = wm_exi_arena_alloc(t->arena, len + 1);
    if (!p) return NULL;
    if (len) memcpy(p, s, len);
    p[len] = 0;
    return p;
}

wm_exi_status wm_exi_strtab_init(wm_exi_strtab *t, const wm_exi_grammar *g, wm_exi_arena *a, bool want_hash)
{
    memset(t, 0, sizeof *t);
    t->g = g;
    t->arena = a;
    t->want_hash = want_hash;
    /* the seed, with lengths, built once: a reset is then two memcpy */
    static wm_exi_sview pre[3] = { { "", 0 }, { "xml", 3 }, { "xsi", 3 } };
    t->tpl_uris = calloc(g->n_uris ? g->n_uris : 1, sizeof *t->tpl_uris);
    t->tpl_lnames = calloc(g->n_lids ? g->n_lids : 1, sizeof *t->tpl_lnames);
    if (!t->tpl_uris || !t->tpl_lnames) return WM_EXI_E_MEMORY;
    for (uint32_t i = 0; i < g->n_uris; i++) {
        wm_exi_st_uri *u = &t->tpl_uris[i];
        u->s.p = g->uris[i];
        u->s.len = (uint32_t)strlen(g->uris[i]);
        u->seed_first = g->uri_lid_first[i];
        u->seed_count = g->uri_lid_count[i];
        if (i < 3) { /* initial prefixes (Appendix D); grown copies go to the arena */
            u->prefixes = &pre[i];
            u->n_prefixes = u->cap_prefixes = 1;
        }
    }
    for (uint32_t i = 0; i < g->n_lids; i++) {
        wm_exi_st_lname *l = &t->tpl_lnames[i];
        l->s.p = g->lnames[i];
        l->s.len = (uint32_t)strlen(g->lnames[i]);
        l->uri = g->lname_uri[i];
        l->bi = WM_EXI_NONE;
    }
    t->base_cap = g->n_lids + 32;
    t->base_lnames = malloc(t->base_cap * sizeof *t->base_lnames);
    if (!t->base_lnames) return WM_EXI_E_MEMORY;
    memcpy(t->base_lnames, t->tpl_lnames, g->n_lids * sizeof *t->base_lnames);
    if (want_hash) { /* the seeded names never change: hashed once */
        t->seed_nhash_cap = hash_size(g->n_lids);
        t->seed_nhash = calloc(t->seed_nhash_cap, sizeof *t->seed_nhash);
        if (!t->seed_nhash) return WM_EXI_E_MEMORY;
        t->lnames = t->base_lnames; /* what nhash_put reads; reset sets it again */
        for (uint32_t i = 0; i < g->n_lids; i++) nhash_put(t, t->seed_nhash, t->seed_nhash_cap, i);
    }
    return WM_EXI_OK;
}

void wm_exi_strtab_free(wm_exi_strtab *t)
{
    free(t->tpl_uris);
    free(t->tpl_lnames);
    free(t->base_lnames);
    free(t->seed_nhash);
    t->seed_nhash = NULL;
    t->tpl_uris = NULL;
    t->tpl_lnames = NULL;
    t->base_lnames = NULL;
}


wm_exi_status wm_exi_strtab_reset(wm_exi_strtab *t, uint32_t value_max_length, uint32_t value_capacity)
{
    const wm_exi_grammar *g = t->g;
    t->value_max_length = value_max_length;
    t->value_capacity = value_capacity;
    /* local names: the seeds the previous document touched go back to the
     * template (its dirty list is still intact: the arena was reset but
     * nothing has been allocated from it yet); names it added are dropped */
    if (t->base_lnames)
        for (uint32_t i = 0; i < t->n_dirty; i++) t->base_lnames[t->dirty[i]] = t->tpl_lnames[t->dirty[i]];
    /* the arena was reset: every other array is rebuilt from the seed */
    t->cap_uris = 0;
    t->uris = NULL;
    t->n_uris = 0;
    t->cap_lnames = 0;
    t->lnames = NULL;
    t->cap_dirty = t->n_dirty = 0;
    t->dirty = NULL;
    t->values = NULL;
    t->n_values = t->next_gid = t->cap_values = 0;
    t->hash = NULL;
    t->hash_cap = 0;
    t->nhash = t->uhash = NULL;
    t->nhash_cap = t->nhash_n = t->uhash_cap = 0;
    uint32_t cu = g->n_uris + 8;
    t->uris = wm_exi_arena_alloc(t->arena, cu * sizeof *t->uris);
    t->lnames = t->base_lnames;
    if (!t->uris || !t->lnames || !t->tpl_uris) return WM_EXI_E_MEMORY;
    t->cap_uris = cu;
    t->cap_lnames = t->base_cap;
    t->n_uris = g->n_uris;
    memcpy(t->uris, t->tpl_uris, g->n_uris * sizeof *t->uris);
    t->n_lnames = g->n_lids;
    /* room for the values of a typical small document up front: growing the
     * arrays entry by entry showed up in decode profiles */
    t->values = wm_exi_arena_alloc(t->arena, 64 * sizeof *t->values);
    t->dirty = wm_exi_arena_alloc(t->arena, 32 * sizeof *t->dirty);
    if (!t->values || !t->dirty) return WM_EXI_E_MEMORY;
    t->cap_values = 64;
    t->cap_dirty = 32;
    if (t->want_hash) {
        t->hash_cap = 1024;
        t->hash = wm_exi_arena_alloc(t->arena, t->hash_cap * sizeof *t->hash);
        if (!t->hash) return WM_EXI_E_MEMORY;
        memset(t->hash, 0, t->hash_cap * sizeof *t->hash);
        if (!uhash_rebuild(t) || !nhash_room(t)) return WM_EXI_E_MEMORY;
    }
    return WM_EXI_OK;
}

uint32_t wm_exi_strtab_lname_index(const wm_exi_strtab *t, uint32_t lid)
{
    const wm_exi_st_uri *u = &t->uris[t->lnames[lid].uri];
    if (lid >= u->seed_first && lid < u->seed_first + u->seed_count) return lid - u->seed_first;
    for (uint32_t k = 0; k < u->n_extra; k++)
        if (u->extra[k] == lid) return u->seed_count + k;
    return WM_EXI_NONE;
}

uint32_t wm_exi_strtab_add_uri(wm_exi_strtab *t, const char *s, uint32_t len)
{
    if (!GROW(t, t->uris, t->n_uris, t->cap_uris)) return WM_EXI_NONE;
    char *p = wm_exi_strtab_copy(t, s, len);
    if (!p) return WM_EXI_NONE;
    wm_exi_st_uri *u = &t->uris[t->n_uris];
    memset(u, 0, sizeof *u);
    u->s.p = p;
    u->s.len = len;
    if (t->uhash) {
        if (!uhash_rebuild(t)) return WM_EXI_NONE;
        uhash_put(t, t->n_uris);
    }
    return t->n_uris++;
}

uint32_t wm_exi_strtab_add_lname(wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len)
{
    if (!GROW(t, t->lnames, t->n_lnames, t->cap_lnames)) return WM_EXI_NONE;
    wm_exi_st_uri *u = &t->uris[uri];
    if (!GROW(t, u->extra, u->n_extra, u->cap_extra)) return WM_EXI_NONE;
    char *p = wm_exi_strtab_copy(t, s, len);
    if (!p || (t->nhash && !nhash_room(t))) return WM_EXI_NONE;
    uint32_t lid = t->n_lnames++;
    wm_exi_st_lname *l = &t->lnames[lid];
    memset(l, 0, sizeof *l);
    l->s.p = p;
    l->s.len = len;
    l->uri = uri;
    l->bi = WM_EXI_NONE;
    u->extra[u->n_extra++] = lid;
    if (t->nhash) {
        nhash_put(t, t->nhash, t->nhash_cap, lid);
        t->nhash_n++;
    }
    return lid;
}

bool wm_exi_strtab_add_prefix(wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len)
{
    wm_exi_st_uri *u = &t->uris[uri];
    if (!GROW(t, u->prefixes, u->n_prefixes, u->cap_prefixes)) return false;
    char *p = wm_exi_strtab_copy(t, s, len);
    if (!p) return false;
    u->prefixes[u->n_prefixes].p = p;
    u->prefixes[u->n_prefixes].len = len;
    u->n_prefixes++;
    return true;
}

static bool hash_put(wm_exi_strtab *t, uint32_t gid);

static bool hash_rebuild(wm_exi_strtab *t, uint32_t cap)
{
    uint32_t *h = wm_exi_arena_alloc(t->arena, cap * sizeof *h);
    if (!h) return false;
    memset(h, 0, cap * sizeof *h);
    t->hash = h;
    t->hash_cap = cap;
    for (uint32_t i = 0; i < t->n_values; i++)
        if (!hash_put(t, i)) return false;
    return true;
}

static bool hash_put(wm_exi_strtab *t, uint32_t gid)
{
    uint32_t m = t->hash_cap - 1;
    for (uint32_t i = hash_str(t->values[gid].s.p, t->values[gid].s.len) & m;; i = (i + 1) & m)
        if (!t->hash[i]) { t->hash[i] = gid + 1; return true; }
}

static void hash_del(wm_exi_strtab *t, uint32_t gid)
{
    /* tombstone-free deletion: rebuild the cluster after the hole */
    uint32_t m = t->hash_cap - 1, i = hash_str(t->values[gid].s.p, t->values[gid].s.len) & m;
    while (t->hash[i] && t->hash[i] != gid + 1) i = (i + 1) & m;
    if (!t->hash[i]) return;
    t->hash[i] = 0;
    for (uint32_t j = (i + 1) & m; t->hash[j]; j = (j + 1) & m) {
        uint32_t g = t->hash[j] - 1;
        t->hash[j] = 0;
        hash_put(t, g);
    }
}

bool wm_exi_strtab_add_value_slow(wm_exi_strtab *t, uint32_t lid, const char *bytes, uint32_t len, uint32_t nchars)
{
    if (nchars == 0 || nchars > t->value_max_length || t->value_capacity == 0) return true;
    uint32_t gid = t->next_gid;
    if (gid >= t->n_values) {
        if (!GROW(t, t->values, t->n_values, t->cap_values)) return false;
        t->n_values++;
    } else {
        /* §7.3.3: the partition is full; the oldest entry is replaced and
         * "removed from its associated local value partition by rendering
         * its compact identifier permanently unassigned": that partition
         * keeps its size (and so its id width), the id resolves to nothing. */
        wm_exi_st_value *old = &t->values[gid];
        if (t->hash) hash_del(t, gid);
        t->lnames[old->lid].vals[old->local_idx] = WM_EXI_NONE;
    }
    wm_exi_st_lname *l = &t->lnames[lid];
    if (!GROW(t, l->vals, l->n_vals, l->cap_vals) || !wm_exi_strtab_touch(t, lid)) return false;
    wm_exi_strtab_put_value(t, l, gid, lid, bytes, len);
    t->next_gid = gid + 1;
    if (t->value_capacity != UINT32_MAX && t->next_gid >= t->value_capacity) t->next_gid = 0;
    if (t->hash) {
        if ((t->n_values + 1) * 2 > t->hash_cap) return hash_rebuild(t, t->hash_cap * 2);
        return hash_put(t, gid);
    }
    return true;
}

bool wm_exi_strtab_touch(wm_exi_strtab *t, uint32_t lid)
{
    wm_exi_st_lname *l = &t->lnames[lid];
    if (l->dirty || lid >= t->g->n_lids) return true;
    if (!GROW(t, t->dirty, t->n_dirty, t->cap_dirty)) return false;
    t->dirty[t->n_dirty++] = lid;
    l->dirty = true;
    return true;
}

uint32_t wm_exi_strtab_find_uri(const wm_exi_strtab *t, const char *s, uint32_t len)
{
    if (t->uhash) {
        uint32_t m = t->uhash_cap - 1;
        for (uint32_t i = hash_str(s, len) & m; t->uhash[i]; i = (i + 1) & m) {
            const wm_exi_st_uri *u = &t->uris[t->uhash[i] - 1];
            if (u->s.len == len && !memcmp(u->s.p, s, len)) return t->uhash[i] - 1;
        }
        return WM_EXI_NONE;
    }
    for (uint32_t i = 0; i < t->n_uris; i++)
        if (t->uris[i].s.len == len && !memcmp(t->uris[i].s.p, s, len)) return i;
    return WM_EXI_NONE;
}

uint32_t wm_exi_strtab_find_lname(const wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len)
{
    if (t->seed_nhash && t->nhash) {
        uint32_t lid = nhash_get(t, t->seed_nhash, t->seed_nhash_cap, uri, s, len);
        return lid != WM_EXI_NONE ? lid : nhash_get(t, t->nhash, t->nhash_cap, uri, s, len);
    }
    uint32_t n = wm_exi_strtab_lname_count(t, uri);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t lid = wm_exi_strtab_lname_at(t, uri, k);
        if (t->lnames[lid].s.len == len && !memcmp(t->lnames[lid].s.p, s, len)) return lid;
    }
    return WM_EXI_NONE;
}

uint32_t wm_exi_strtab_find_prefix(const wm_exi_strtab *t, uint32_t uri, const char *s, uint32_t len)
{
    const wm_exi_st_uri *u = &t->uris[uri];
    for (uint32_t k = 0; k < u->n_prefixes; k++)
        if (u->prefixes[k].len == len && !memcmp(u->prefixes[k].p, s, len)) return k;
    return WM_EXI_NONE;
}

uint32_t wm_exi_strtab_find_value(const wm_exi_strtab *t, const char *s, uint32_t len)
{
    if (!t->hash) return WM_EXI_NONE;
    uint32_t m = t->hash_cap - 1;
    for (uint32_t i = hash_str(s, len) & m; t->hash[i]; i = (i + 1) & m) {
        const wm_exi_st_value *v = &t->values[t->hash[i] - 1];
        if (v->s.len == len && !memcmp(v->s.p, s, len)) return t->hash[i] - 1;
    }
    return WM_EXI_NONE;
}
