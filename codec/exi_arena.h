/* Bounded bump allocator for EXI per-document state (string table entries,
 * learned built-in grammar productions, element stack).
 *
 * The decoder and encoder never call malloc per document once warm: the arena
 * keeps its blocks across wm_exi_arena_reset() and only grows (up to `cap`
 * bytes in total) when a document needs more than any before it. Exceeding
 * the cap makes wm_exi_arena_alloc() return NULL, which callers turn into
 * WM_EXI_E_MEMORY: this is the configurable memory cap of the codec.
 * Not thread safe; one arena per decoder/encoder.
 */
#ifndef WM_CODEC_EXI_ARENA_H
#define WM_CODEC_EXI_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct wm_exi_arena_block {
    struct wm_exi_arena_block *next;
    size_t size, used;
    uint8_t data[];
} wm_exi_arena_block;

typedef struct wm_exi_arena {
    wm_exi_arena_block *head;   /* current block */
    wm_exi_arena_block *first;  /* all blocks, in allocation order */
    size_t cap;                 /* total bytes of blocks allowed */
    size_t reserved;            /* bytes of blocks allocated so far */
} wm_exi_arena;

/* cap: memory cap in bytes (blocks included). */
void wm_exi_arena_init(wm_exi_arena *a, size_t cap);
/* 16-byte aligned storage of n bytes, or NULL when the cap would be exceeded. */
void *wm_exi_arena_alloc_slow(wm_exi_arena *a, size_t n);
/* wm_exi_arena_alloc_slow's result (16-byte aligned, NULL past the cap), inline
 * when the current block has room. The arena owns the storage. */
static inline void *wm_exi_arena_alloc(wm_exi_arena *a, size_t n)
{
    /* the common case, room in the current block, without a call: string
     * values and table growth allocate per event */
    wm_exi_arena_block *b = a->head;
    size_t m = (n + 15) & ~(size_t)15;
    if (__builtin_expect(b && b->size - b->used >= m, 1)) {
        void *p = b->data + b->used;
        b->used += m;
        return p;
    }
    return wm_exi_arena_alloc_slow(a, n);
}
/* Where wm_exi_arena_alloc(a, n) would place its storage if the current block
 * has room for it, without allocating (NULL otherwise: the caller takes its
 * general path, which may grow the arena). The storage is n rounded up to 16
 * bytes, all of it writable once reserved by wm_exi_arena_commit(a, n) with
 * the same n; nothing else may allocate in between. Lets a fast path write a
 * value in place and give up with the arena untouched. */
static inline void *wm_exi_arena_peek(const wm_exi_arena *a, size_t n)
{
    wm_exi_arena_block *b = a->head;
    size_t m = (n + 15) & ~(size_t)15;
    return __builtin_expect(b && b->size - b->used >= m, 1) ? b->data + b->used : NULL;
}
/* Reserves the storage wm_exi_arena_peek(a, n) returned (non-NULL, same n). */
static inline void wm_exi_arena_commit(wm_exi_arena *a, size_t n)
{
    a->head->used += (n + 15) & ~(size_t)15;
}
/* Forgets every allocation, keeps the blocks. */
void wm_exi_arena_reset(wm_exi_arena *a);
void wm_exi_arena_free(wm_exi_arena *a);

#endif
