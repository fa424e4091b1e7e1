/* QSBR backend on liburcu-qsbr and the writer's retire list (see qsbr.h). */
#include "matcher/qsbr.h"

#include <stdlib.h>

/* Out-of-line liburcu calls (no _LGPL_SOURCE): the library's own accesses
 * then stay invisible to TSan, and the annotations below state the
 * happens-before edge that its grace period provides. */
#include <urcu/urcu-qsbr.h>

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_grace_sync;
#define TSAN_RELEASE() __tsan_release(&tsan_grace_sync)
#define TSAN_ACQUIRE() __tsan_acquire(&tsan_grace_sync)
#else
#define TSAN_RELEASE() ((void)0)
#define TSAN_ACQUIRE() ((void)0)
#endif

/* ---------------------------------------------------------------- liburcu backend */

/* Grace periods completed by a blocking check; lets check(wait=false)
 * answer for tokens an earlier synchronize already covered. */
static uint64_t urcu_started, urcu_completed;

/* liburcu registers threads, not readers: a thread reading several
 * matchers registers once. */
static __thread unsigned urcu_thread_refs;

static int urcu_reader_register(void *ctx, unsigned *idx)
{
    (void)ctx;
    if (urcu_thread_refs++ == 0) urcu_qsbr_register_thread();
    *idx = 0; /* liburcu keys readers by thread, not by index */
    return 0;
}
static void urcu_reader_unregister(void *ctx, unsigned idx)
{
    (void)ctx; (void)idx;
    if (urcu_thread_refs && --urcu_thread_refs == 0) urcu_qsbr_unregister_thread();
}
static void urcu_reader_online(void *ctx, unsigned idx) { (void)ctx; (void)idx; urcu_qsbr_thread_online(); }
static void urcu_reader_offline(void *ctx, unsigned idx) { (void)ctx; (void)idx; urcu_qsbr_thread_offline(); }
static void urcu_reader_quiescent(void *ctx, unsigned idx) { (void)ctx; (void)idx; urcu_qsbr_quiescent_state(); }

static uint64_t urcu_start(void *ctx)
{
    (void)ctx;
    return __atomic_add_fetch(&urcu_started, 1, __ATOMIC_ACQ_REL);
}

static bool urcu_check(void *ctx, uint64_t token, bool wait)
{
    (void)ctx;
    if (__atomic_load_n(&urcu_completed, __ATOMIC_ACQUIRE) >= token) return true;
    if (!wait) return false;
    uint64_t covers = __atomic_load_n(&urcu_started, __ATOMIC_ACQUIRE);
    urcu_qsbr_synchronize_rcu();
    uint64_t done = __atomic_load_n(&urcu_completed, __ATOMIC_ACQUIRE);
    while (done < covers &&
           !__atomic_compare_exchange_n(&urcu_completed, &done, covers, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    return true;
}

static const wm_qsbr_ops urcu_ops = {
    .ctx = NULL,
    .reader_register = urcu_reader_register,
    .reader_unregister = urcu_reader_unregister,
    .reader_online = urcu_reader_online,
    .reader_offline = urcu_reader_offline,
    .reader_quiescent = urcu_reader_quiescent,
    .start = urcu_start,
    .check = urcu_check,
};

const wm_qsbr_ops *wm_qsbr_urcu(void) { return &urcu_ops; }

void wm_qsbr_reader_quiescent(const wm_qsbr_ops *ops, unsigned reader_idx)
{
    TSAN_RELEASE();
    ops->reader_quiescent(ops->ctx, reader_idx);
}

void wm_qsbr_reader_offline(const wm_qsbr_ops *ops, unsigned reader_idx)
{
    TSAN_RELEASE();
    ops->reader_offline(ops->ctx, reader_idx);
}

/* ---------------------------------------------------------------- retire list */

void wm_retire_init(wm_retire *r, const wm_qsbr_ops *ops)
{
    r->ops = ops;
    r->items = NULL;
    r->n = r->cap = 0;
}

static void run_items(wm_retire_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) items[i].fn(items[i].ctx, items[i].arg);
}

void wm_retire_fini(wm_retire *r)
{
    /* Callbacks may queue more; drain until empty. */
    while (r->n) {
        wm_retire_item *items = r->items;
        size_t n = r->n;
        r->items = NULL; r->n = r->cap = 0;
        run_items(items, n);
        free(items);
    }
    free(r->items);
    r->items = NULL;
}

static void free_cb(void *ctx, uint64_t arg) { (void)arg; free(ctx); }

bool wm_retire_call(wm_retire *r, wm_retire_fn fn, void *ctx, uint64_t arg)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 256;
        wm_retire_item *ni = realloc(r->items, ncap * sizeof *ni);
        if (!ni) {
            /* Out of memory: pay a blocking grace period now rather than leak. */
            r->ops->check(r->ops->ctx, r->ops->start(r->ops->ctx), true);
            TSAN_ACQUIRE();
            fn(ctx, arg);
            return false;
        }
        r->items = ni; r->cap = ncap;
    }
    r->items[r->n++] = (wm_retire_item){ fn, ctx, arg };
    return true;
}

bool wm_retire_free(wm_retire *r, void *p)
{
    if (!p) return true;
    return wm_retire_call(r, free_cb, p, 0);
}

size_t wm_retire_reclaim(wm_retire *r, bool wait)
{
    if (r->n == 0) return 0;
    uint64_t token = r->ops->start(r->ops->ctx);
    if (!r->ops->check(r->ops->ctx, token, wait)) return 0;
    TSAN_ACQUIRE();
    wm_retire_item *items = r->items;
    size_t n = r->n;
    r->items = NULL; r->n = r->cap = 0;
    run_items(items, n);
    free(items);
    return n;
}
