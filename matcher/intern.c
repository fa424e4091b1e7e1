/* Lock-free-read string interning (see intern.h). */
#include "matcher/intern.h"

#include <stdlib.h>

#define SLOT_EMPTY 0ull
#define SLOT_TOMB  1ull
#define SLOT_MAKE(h, id) ((((h) >> 32) << 32) | (uint64_t)((id) + 2u))
#define SLOT_ID(s) ((uint32_t)(s) - 2u)
#define SLOT_TAG(s) ((s) >> 32)

static wm_intern_tab *tab_new(uint32_t nslots)
{
    wm_intern_tab *tb = calloc(1, sizeof *tb + (size_t)nslots * sizeof(uint64_t));
    if (tb) tb->mask = nslots - 1;
    return tb;
}

bool wm_intern_init(wm_intern *t, uint32_t max_ids, wm_retire *retire)
{
    memset(t, 0, sizeof *t);
    if (max_ids == 0 || max_ids > (UINT32_MAX >> 2)) return false;
    t->max_ids = max_ids;
    t->retire = retire;
    t->tab = tab_new(16);
    t->key = calloc(max_ids, sizeof *t->key);
    t->len = calloc(max_ids, sizeof *t->len);
    t->aux = calloc(max_ids, sizeof *t->aux);
    t->refs = calloc(max_ids, sizeof *t->refs);
    t->free_ids = calloc(max_ids, sizeof *t->free_ids);
    if (!t->tab || !t->key || !t->len || !t->aux || !t->refs || !t->free_ids) {
        wm_intern_fini(t);
        return false;
    }
    return true;
}

void wm_intern_fini(wm_intern *t)
{
    if (t->key)
        for (uint32_t i = 0; i < t->high; i++) free(t->key[i]);
    free(t->tab); free(t->key); free(t->len); free(t->aux); free(t->refs); free(t->free_ids);
    memset(t, 0, sizeof *t);
}

/* memcmp(a, b, n) == 0 without a library call for the short keys of the
 * hot path (topic names, trie levels): two overlapping 8-byte or 4-byte
 * compares cover 4..16 bytes. */
static inline bool key_eq(const char *a, const char *b, size_t n)
{
    uint64_t x, y, u, v;
    if (n >= 8 && n <= 16) {
        memcpy(&x, a, 8); memcpy(&y, b, 8);
        memcpy(&u, a + n - 8, 8); memcpy(&v, b + n - 8, 8);
        return ((x ^ y) | (u ^ v)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t x4, y4, u4, v4;
        memcpy(&x4, a, 4); memcpy(&y4, b, 4);
        memcpy(&u4, a + n - 4, 4); memcpy(&v4, b + n - 4, 4);
        return ((x4 ^ y4) | (u4 ^ v4)) == 0;
    }
    return memcmp(a, b, n) == 0;
}

uint32_t wm_intern_find_h(const wm_intern *t, uint64_t h, uint32_t aux, const char *key, size_t n)
{
    const wm_intern_tab *tb = __atomic_load_n(&t->tab, __ATOMIC_ACQUIRE);
    uint32_t i = (uint32_t)h & tb->mask;
    for (;;) {
        uint64_t s = __atomic_load_n(&tb->slot[i], __ATOMIC_ACQUIRE);
        if (s == SLOT_EMPTY) return WM_INTERN_NONE;
        if (s != SLOT_TOMB && SLOT_TAG(s) == (h >> 32)) {
            uint32_t id = SLOT_ID(s);
            if (t->len[id] == n && t->aux[id] == aux && key_eq(t->key[id], key, n)) return id;
        }
        i = (i + 1) & tb->mask;
    }
}

uint32_t wm_intern_find(const wm_intern *t, uint32_t aux, const char *key, size_t n)
{
    return wm_intern_find_h(t, wm_hash_key(aux, key, n), aux, key, n);
}

static void tab_put(wm_intern_tab *tb, uint64_t h, uint32_t id)
{
    uint32_t i = (uint32_t)h & tb->mask;
    while (tb->slot[i] != SLOT_EMPTY && tb->slot[i] != SLOT_TOMB) i = (i + 1) & tb->mask;
    if (tb->slot[i] == SLOT_TOMB) tb->tombs--;
    __atomic_store_n(&tb->slot[i], SLOT_MAKE(h, id), __ATOMIC_RELEASE);
    tb->used++;
}

/* Makes room for one more key: a new table when live + tombstones would
 * pass half the slots (sized for 4x the live keys, so tombstones vanish). */
static bool tab_reserve(wm_intern *t)
{
    wm_intern_tab *tb = t->tab;
    uint32_t nslots = tb->mask + 1;
    if ((uint64_t)(tb->used + tb->tombs + 1) * 2 <= nslots) return true;
    uint64_t want = 16;
    while (want < (uint64_t)(tb->used + 1) * 4) want *= 2;
    if (want > (1ull << 31)) return false;
    wm_intern_tab *nt = tab_new((uint32_t)want);
    if (!nt) return false;
    for (uint32_t i = 0; i < nslots; i++) {
        uint64_t s = tb->slot[i];
        if (s == SLOT_EMPTY || s == SLOT_TOMB) continue;
        uint32_t id = SLOT_ID(s);
        tab_put(nt, wm_hash_key(t->aux[id], t->key[id], t->len[id]), id);
    }
    __atomic_store_n(&t->tab, nt, __ATOMIC_RELEASE);
    wm_retire_free(t->retire, tb);
    return true;
}

uint32_t wm_intern_get(wm_intern *t, uint32_t aux, const char *key, size_t n, bool *created,
                       wm_intern_init_fn init, void *ctx)
{
    if (created) *created = false;
    if (n > 65535) return WM_INTERN_NONE;
    uint64_t h = wm_hash_key(aux, key, n);
    uint32_t id = wm_intern_find_h(t, h, aux, key, n);
    if (id != WM_INTERN_NONE) {
        t->refs[id]++;
        return id;
    }
    if (t->live >= t->max_ids) return WM_INTERN_NONE;
    /* Below the bound with every free id still in its grace period (keys
     * released since the last reclaim): wait for it rather than refuse. */
    if (t->n_free == 0 && t->high >= t->max_ids) {
        t->grace_waits++;
        wm_retire_reclaim(t->retire, true);
    }
    if (!tab_reserve(t)) return WM_INTERN_NONE;
    char *copy = malloc(n + 1);
    if (!copy) return WM_INTERN_NONE;
    memcpy(copy, key, n);
    copy[n] = '\0';
    if (t->n_free) id = t->free_ids[--t->n_free];
    else if (t->high < t->max_ids) id = t->high++;
    else { free(copy); return WM_INTERN_NONE; } /* not reached: the reclaim above gave ids back */
    t->key[id] = copy;
    t->len[id] = (uint32_t)n;
    t->aux[id] = aux;
    t->refs[id] = 1;
    t->live++;
    if (init) init(ctx, id, key, n);
    tab_put(t->tab, h, id);
    if (created) *created = true;
    return id;
}

void wm_intern_ref(wm_intern *t, uint32_t id) { t->refs[id]++; }

/* After the grace period: nobody can read the key any more. */
static void release_id(void *ctx, uint64_t arg)
{
    wm_intern *t = ctx;
    uint32_t id = (uint32_t)arg;
    free(t->key[id]);
    t->key[id] = NULL;
    t->free_ids[t->n_free++] = id;
}

bool wm_intern_put(wm_intern *t, uint32_t id)
{
    if (--t->refs[id] != 0) return false;
    wm_intern_tab *tb = t->tab;
    uint64_t h = wm_hash_key(t->aux[id], t->key[id], t->len[id]);
    uint32_t i = (uint32_t)h & tb->mask;
    while (tb->slot[i] == SLOT_TOMB || tb->slot[i] == SLOT_EMPTY || SLOT_ID(tb->slot[i]) != id) {
        if (tb->slot[i] == SLOT_EMPTY) return false; /* not reachable: id is live */
        i = (i + 1) & tb->mask;
    }
    __atomic_store_n(&tb->slot[i], SLOT_TOMB, __ATOMIC_RELEASE);
    tb->used--; tb->tombs++;
    t->live--;
    wm_retire_call(t->retire, release_id, t, id);
    return true;
}
