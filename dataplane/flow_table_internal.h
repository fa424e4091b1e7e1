/* Helpers shared by flow_table.c (index, LRU, life cycle) and tcp_track.c
 * (TCP state); not part of the public interface. Same thread rules as
 * flow_table.h: one worker per table. */
#ifndef WM_DATAPLANE_FLOW_TABLE_INTERNAL_H
#define WM_DATAPLANE_FLOW_TABLE_INTERNAL_H

#include "dataplane/flow_table.h"

/* Entry idx (< the table's capacity, unchecked) of t. */
static inline struct wm_flow *wm_flow_at(const struct wm_flow_table *t, uint32_t idx)
{
    return (struct wm_flow *)(t->entries + (size_t)idx * t->entry_stride);
}

/* Index of entry f, which must belong to t (inverse of wm_flow_at). */
static inline uint32_t wm_flow_index(const struct wm_flow_table *t, const struct wm_flow *f)
{
    return (uint32_t)(((const uint8_t *)f - t->entries) / t->entry_stride);
}

/* Lookup that counts (wm_flow_table_lookup does not). */
struct wm_flow *wm_flow_find(struct wm_flow_table *t, const struct wm_flow_key *key, uint32_t h);
/* A fresh entry for key, evicting the least recently used one if full. */
struct wm_flow *wm_flow_create(struct wm_flow_table *t, const struct wm_flow_key *key, uint32_t h,
                               uint64_t now_ns);
/* Marks f most recently used at now_ns. */
void wm_flow_touch(struct wm_flow_table *t, struct wm_flow *f, uint64_t now_ns);
/* Ends a reassembled connection (callbacks, buffers back); it becomes CLOSED. */
void wm_flow_end(struct wm_flow_table *t, struct wm_flow *f, enum wm_flow_close_reason why);
/* wm_flow_end, then the entry goes back to the free list. */
void wm_flow_remove(struct wm_flow_table *t, struct wm_flow *f, enum wm_flow_close_reason why);
/* True if f has been idle beyond the limit of its state. */
int wm_flow_expired(const struct wm_flow_table *t, const struct wm_flow *f, uint64_t now_ns);

#endif
