/* Internal layout of wm_matcher, shared by matcher.c (subscriptions and
 * lookups), topic_index.c (the wildcard trie) and nbhd.c (neighborhoods and
 * the spatial filter mapping). Not a public header.
 *
 * Everything is struct-of-arrays indexed by dense ids so that the lookup
 * touches flat arrays, never hash-chained nodes:
 *   fid   - distinct inner topic filter (interned in `filters`)
 *   node  - wildcard-trie node (0 = root, edge id + 1 otherwise)
 *   cell  - (fid, nbhd) pair holding the spatial subscriptions of that pair
 *   nbhd  - neighborhood (peid set, stored once, reference counted)
 *   peid  - interned physical-entity id (permanent)
 *   sub, client, group - subscription, subscriber client id, $share group
 * Fields a reader touches are written before the id is published (release)
 * and rewritten only after the id was unlinked and a grace period passed.
 */
#ifndef WM_MATCHER_MATCHER_INT_H
#define WM_MATCHER_MATCHER_INT_H

#include "matcher/intern.h"
#include "matcher/matcher.h"
#include "matcher/nbf.h"
#include "matcher/peid_set.h"
#include "matcher/posting.h"
#include "matcher/rvec.h"

#define WM_NONE UINT32_MAX
#define WM_NB_NO_CELL UINT64_MAX
#define WM_NB_MANY_CELLS (UINT64_MAX - 1)
/* nb_tag: one byte per neighborhood that the peid walk tests instead of
 * the 8-byte summary — a hash of the fid of its only cell, or one of: */
#define WM_NB_TAG_NONE 0xFFu  /* no cell: nothing to find */
#define WM_NB_TAG_MANY 0xFEu  /* several cells: always followed */
static inline uint8_t wm_nb_tag(uint32_t fid) { return (uint8_t)(((fid * 0x9E3779B1u) >> 24) % 0xFEu); }

/* In the low half of an nb_one summary: the value is not a cell but the one
 * subscription of the neighborhood's only cell (ids stay below 2^28). */
#define WM_NB_ONE_SUB (1u << 31)

/* Dense ids reused only after a grace period. */
typedef struct wm_idpool {
    uint32_t *free;
    uint32_t n_free, high, max, live;
    uint64_t grace_waits; /* allocations that waited for freed ids' grace period */
} wm_idpool;

bool wm_idpool_init(wm_idpool *p, uint32_t max);
void wm_idpool_fini(wm_idpool *p);
/* WM_NONE when max ids are live; below that, when every free id is still
 * in its grace period, waits for it (wm_retire_reclaim(r, true)) first. */
uint32_t wm_idpool_alloc(wm_idpool *p, wm_retire *r);
void wm_idpool_release(wm_idpool *p, wm_retire *r, uint32_t id); /* after a grace period */

/* What a reader needs of a subscription, in 24 bytes. */
typedef struct wm_sub_hot {
    uint64_t client_key; /* wm_hash_bytes of the client id string (No Local) */
    uint32_t group;      /* $share group or WM_NONE */
    uint32_t content;
    uint32_t client;     /* interned client id: its string confirms a key match */
    uint8_t no_local;
    uint8_t qos;
    uint8_t live;        /* writer bookkeeping */
    uint8_t pad;
} wm_sub_hot;

typedef struct wm_sub_cold {
    uint64_t cookie;
    uint32_t fid;
    uint32_t cell;     /* WM_NONE for a plain (non-spatial) subscription */
    uint32_t nbhd;
    uint32_t pos;      /* position in its list (f_plain[fid] or c_subs[cell]) */
} wm_sub_cold;

struct wm_matcher {
    wm_matcher_config cfg;
    wm_retire retire;

    /* topic index */
    wm_intern filters;       /* inner filter string -> fid */
    wm_rvec *f_plain;        /* [fid] non-spatial subscriptions */
    wm_rvec *f_cells;        /* [fid] cells of spatial subscriptions */
    uint8_t *f_wild;         /* [fid] filter has '+' or '#' (lives in the trie) */
    wm_nbf **f_nbf;          /* [fid] neighborhood filter of its cells, NULL below WM_NBF_MIN_CELLS (atomic) */
    wm_intern edges;         /* (parent node, level) -> edge id; node = id + 1 */
    uint32_t *n_plus;        /* [node] '+' child node or WM_NONE (atomic) */
    uint32_t *n_hash_fid;    /* [node] fid of "<path>/#" or WM_NONE (atomic) */
    uint32_t *n_end_fid;     /* [node] fid of "<path>" or WM_NONE (atomic) */
    uint32_t n_wild;         /* live wildcard filters (atomic; 0 = skip the trie) */

    /* cells: (fid, nbhd) -> subscriptions */
    wm_intern cellkeys;      /* aux = fid, key = 4-byte nbhd id -> cell id */
    uint32_t *c_fid;         /* [cell] */
    uint32_t *c_nbhd;        /* [cell] */
    wm_rvec *c_subs;         /* [cell] */
    uint32_t *c_pos_f;       /* [cell] position in f_cells[fid] (writer) */
    uint32_t *c_pos_n;       /* [cell] position in nb_cells[nbhd] (writer) */

    /* neighborhoods and the spatial filter mapping */
    wm_idpool nbhd_ids;
    wm_peid_set **nb_set;      /* [nbhd] its peids, to withdraw its postings (writer) */
    wm_rvec *nb_cells;         /* [nbhd] cells using it */
    uint64_t *nb_one;          /* [nbhd] atomic summary of nb_cells: WM_NB_NO_CELL, WM_NB_MANY_CELLS,
                                  (fid << 32 | cell) of its only cell, or (fid << 32 | WM_NB_ONE_SUB | sub)
                                  when that cell holds exactly one subscription without group or No Local.
                                  Most neighborhoods serve one topic filter, often one subscription: this
                                  spares the peid-side walk the dependent loads of cell and subscription */
    uint8_t *nb_tag;           /* [nbhd] atomic hint derived from nb_one (written after it): WM_NB_TAG_NONE,
                                  WM_NB_TAG_MANY or wm_nb_tag(fid) — 1 KB per 1,000 neighborhoods, so the
                                  walk's per-neighborhood test stays in L1; nb_one confirms every hit */
    uint32_t *nb_refs;         /* [nbhd] definition + subscriptions (writer) */
    uint32_t *nb_name;         /* [nbhd] name id or WM_NONE once released (writer) */
    uint32_t *nb_size;         /* [nbhd] peid count */
    wm_intern nbhd_names;      /* name -> name id */
    uint32_t *name_nbhd;       /* [name id] nbhd */
    wm_intern peids;           /* peid string -> peid (never released) */
    wm_posting *p_nbhds;       /* [peid] neighborhoods containing it (huge-page mapping) */
    wm_rvec *p_over;           /* [peid] those that did not fit in its slot (rare) */
    void *p_nbhds_map;         /* the mapping behind p_nbhds, and its length */
    size_t p_nbhds_maplen;
    uint64_t nbhd_peids;       /* sum of live sizes (writer) */
    uint64_t spilled_postings; /* entries in p_over vectors (writer) */
    uint32_t *sort_tmp;        /* writer scratch for defining sets */
    uint32_t sort_cap;
    uint64_t *dedup_bits;      /* writer scratch: wm_peid_unique's bitset (kept zeroed) */

    /* subscriptions */
    wm_idpool sub_ids;
    wm_sub_hot *s_hot;       /* [sub] */
    wm_sub_cold *s_cold;     /* [sub] */
    wm_intern clients;       /* client id string -> client */
    wm_intern groups;        /* aux = fid, key = ShareName -> group */
};

struct wm_matcher_reader {
    wm_matcher *m;
    unsigned qidx;
    uint32_t epoch;
    uint32_t *fmark;   /* [fid] == epoch: fid matched the current topic */
    uint32_t *nmark;   /* [nbhd] == epoch: nbhd already visited */
    uint32_t *fids;    /* matched fids of the current topic */
    uint32_t *stack;   /* trie walk: (node, byte offset) pairs */
    uint32_t stack_cap;
    uint32_t peids[WM_MATCH_MAX_PUB_PEIDS];
    uint32_t ent_mask[WM_MATCH_MAX_PUB_PEIDS]; /* occupied entries of each peid's slot (wm_posting_read) */
    uint32_t *ent;     /* [WM_POSTING_READ_ROOM per peid] the publication's posting slots, read once */
};

/* topic_index.c */
wm_matcher_status wm_topic_index_attach(wm_matcher *m, uint32_t fid, const char *f, size_t len);
void wm_topic_index_detach(wm_matcher *m, uint32_t fid, const char *f, size_t len);
/* Trie nodes (edges) attaching wildcard filter f would create now: its
 * levels below the deepest prefix already in the trie ('#' makes none). */
uint32_t wm_topic_index_cost(const wm_matcher *m, const char *f, size_t len);
/* Appends to r->fids every fid whose filter matches topic t; returns the count. */
uint32_t wm_topic_index_match(wm_matcher_reader *r, const char *t, size_t len, uint32_t nf);

/* matcher.c */
void wm_matcher_nbhd_summarize(wm_matcher *m, uint32_t nb);

/* nbf.c: cell (fid, nb) is about to be linked / was unlinked. */
void wm_nbf_cell_add(wm_matcher *m, uint32_t fid, uint32_t nb);
void wm_nbf_cell_removed(wm_matcher *m, uint32_t fid);

/* nbhd.c */
void wm_matcher_nbhd_unref(wm_matcher *m, uint32_t nbhd);

#endif
