/* Bounded arena: blocks chained, reused after reset (see exi_arena.h). */
#include "codec/exi_arena.h"

#include <stdlib.h>

void wm_exi_arena_init(wm_exi_arena *a, size_t cap)
{
    a->head = a->first = NULL;
    a->cap = cap;
    a->reserved = 0;
}

void *wm_exi_arena_alloc_slow(wm_exi_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    for (wm_exi_arena_block *b = a->head; b; b = b->next) {
        if (b->size - b->used >= n) {
            void *p = b->data + b->used;
            b->used += n;
            a->head = b;
            return p;
        }
        if (b->next) b->next->used = 0; /* blocks after the current one are free */
    }
    size_t size = 64 * 1024;
    while (size < n) size *= 2;
    if (a->reserved + size + sizeof(wm_exi_arena_block) > a->cap) {
        size = n; /* last resort: exactly what is needed */
        if (a->reserved + size + sizeof(wm_exi_arena_block) > a->cap) return NULL;
    }
    wm_exi_arena_block *nb = malloc(sizeof *nb + size);
    if (!nb) return NULL;
    nb->size = size;
    nb->used = n;
    nb->next = NULL;
    a->reserved += size + sizeof *nb;
    if (!a->first) a->first = nb;
    else {
        wm_exi_arena_block *t = a->first;
        while (t->next) t = t->next;
        t->next = nb;
    }
    a->head = nb;
    return nb->data;
}

void wm_exi_arena_reset(wm_exi_arena *a)
{
    a->head = a->first;
    if (a->first) a->first->used = 0;
}

void wm_exi_arena_free(wm_exi_arena *a)
{
    wm_exi_arena_block *b = a->first;
    while (b) {
        wm_exi_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = a->first = NULL;
    a->reserved = 0;
}
