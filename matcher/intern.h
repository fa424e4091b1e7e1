/* wm_intern: strings interned into dense integer ids, readable without locks
 * while one writer adds and releases them.
 *
 * Why: the hot path works on small integers (peids, client ids, topic
 * filters, topic-trie edges) so that per-id data lives in flat arrays
 * indexed by id, and a publication's peids are looked up once and then
 * carried as integers. A key is (aux, bytes): aux is a 32-bit namespace
 * (the topic trie uses the parent node id) so a two-part key needs no copy.
 *
 * Table: open addressing with linear probing; a slot is one 64-bit word
 * (32-bit hash tag | id + 2), 0 = empty, 1 = tombstone, so insert and delete
 * are single atomic stores. The load factor (live + tombstones) stays below
 * 1/2; growth or cleanup builds a new table, publishes it with one pointer
 * store and retires the old one (qsbr.h). Ids of released keys are reused
 * only after a grace period, so a reader holding an id never sees it
 * re-bound under its feet.
 *
 * Bounds: at most `max_ids` keys are live at once (creation parameter);
 * keys up to 65,535 bytes (MQTT 5.0 §1.5.4). Released keys do not count:
 * a new key below the bound whose only free ids are still in their grace
 * period waits for it (wm_intern_get) instead of being refused.
 *
 * Thread safety: wm_intern_find and the id accessors from any reader
 * thread inside a QSBR read side; everything else from the one writer.
 */
#ifndef WM_MATCHER_INTERN_H
#define WM_MATCHER_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "matcher/qsbr.h"

#define WM_INTERN_NONE UINT32_MAX

/* 64-bit hash of (aux, bytes): multiply-fold mixing, 8 bytes per step.
 * Not a cryptographic or DoS-resistant hash: keys are bounded and the table
 * stays at most half full. Its values are relied on outside this file
 * (share_pick's rendezvous hash, reimplemented by the dataplane_share
 * integration test), so they must not change. */
static inline uint64_t wm_hash_mix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}
/* The hash described above of [p, p+n) seeded with aux. Pure, thread-safe;
 * its values must not change. */
static inline uint64_t wm_hash_bytes(uint32_t aux, const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = wm_hash_mix(0x9E3779B97F4A7C15ull ^ n, 0xA0761D6478BD642Full ^ aux);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = wm_hash_mix(h ^ v, 0xE7037ED1A0B428DBull);
        s += 8; n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, s, n);
    h = wm_hash_mix(h ^ v ^ ((uint64_t)n << 56), 0x8EBC6AF09C88C6E3ull);
    return wm_hash_mix(h, 0x589965CC75374CC3ull);
}

/* The interning tables' own hash (never stored outside them): keys up to
 * 16 bytes — topic names and levels on the lookup path, peids, client ids
 * — take two dependent multiplies on two overlapping loads (as wyhash
 * does) instead of wm_hash_bytes' four; longer keys use wm_hash_bytes. */
static inline uint64_t wm_hash_key(uint32_t aux, const void *p, size_t n)
{
    if (n > 16) return wm_hash_bytes(aux, p, n);
    const unsigned char *s = p;
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ ((uint64_t)aux << 32) ^ n;
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        a = x; b = y;
    } else if (n > 0) {
        a = (uint64_t)s[0] << 16 | (uint64_t)s[n >> 1] << 8 | s[n - 1];
    }
    uint64_t h = wm_hash_mix(a ^ 0xA0761D6478BD642Full, b ^ seed);
    return wm_hash_mix(h ^ 0xE7037ED1A0B428DBull, seed ^ 0x8EBC6AF09C88C6E3ull);
}

typedef struct wm_intern_tab {
    uint32_t mask;
    uint32_t used;   /* live slots */
    uint32_t tombs;  /* tombstone slots */
    uint32_t pad;
    uint64_t slot[]; /* atomic */
} wm_intern_tab;

typedef struct wm_intern {
    wm_intern_tab *tab;   /* atomic */
    char **key;           /* [max_ids] owned copies (NUL-terminated for printing) */
    uint32_t *len;        /* [max_ids] */
    uint32_t *aux;        /* [max_ids] */
    uint32_t *refs;       /* [max_ids] writer only */
    uint32_t max_ids;
    uint32_t high;        /* ids [0, high) have been handed out at some time */
    uint32_t live;
    uint32_t *free_ids;   /* reusable ids (grace period over) */
    uint32_t n_free;
    uint64_t grace_waits; /* new keys that waited for freed ids' grace period */
    wm_retire *retire;
} wm_intern;

/* Creates an empty table for at most max_ids live keys (>= 1). Returns false
 * on allocation failure. The arrays are sized at once but only the pages
 * touched count in RSS. */
bool wm_intern_init(wm_intern *t, uint32_t max_ids, wm_retire *retire);
/* Frees everything at once (no readers left). */
void wm_intern_fini(wm_intern *t);

/* Reader or writer: the id of (aux, key[0..n)) or WM_INTERN_NONE. Never
 * allocates, never blocks. */
uint32_t wm_intern_find(const wm_intern *t, uint32_t aux, const char *key, size_t n);
/* Same with the hash precomputed by wm_hash_key(aux, key, n). */
uint32_t wm_intern_find_h(const wm_intern *t, uint64_t h, uint32_t aux, const char *key, size_t n);

/* Initialises the per-id data of a new id before readers can find it. */
typedef void (*wm_intern_init_fn)(void *ctx, uint32_t id, const char *key, size_t n);

/* Writer: the id of the key, interning it if new; takes one reference.
 * For a new id, init (if not NULL) runs before the id is published in the
 * table, so a reader that finds the key sees its per-id data; *created
 * (if not NULL) tells whether the id is new. Returns WM_INTERN_NONE when
 * max_ids keys are live or on allocation failure. A new key below max_ids
 * when every free id is still in its grace period first runs the retire
 * list with a blocking grace period (wm_retire_reclaim(retire, true)): the
 * writer then waits for every online reader's quiescent state. */
uint32_t wm_intern_get(wm_intern *t, uint32_t aux, const char *key, size_t n, bool *created,
                       wm_intern_init_fn init, void *ctx);
/* Writer: takes one more reference on a live id. */
void wm_intern_ref(wm_intern *t, uint32_t id);
/* Writer: drops a reference; at zero the key is unlinked at once (readers
 * stop finding it) and its id becomes reusable after a grace period.
 * Returns true when this released the key. */
bool wm_intern_put(wm_intern *t, uint32_t id);

/* The key of a live id (NUL-terminated copy) and its length. */
static inline const char *wm_intern_key(const wm_intern *t, uint32_t id, size_t *n)
{
    if (n) *n = t->len[id];
    return t->key[id];
}

#endif
