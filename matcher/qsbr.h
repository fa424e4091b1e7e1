/* Quiescent-state-based reclamation (QSBR) for the matcher's one writer and
 * many readers.
 *
 * Why QSBR: readers of the match tables must never wait and never write to
 * shared memory, so they cannot take reference counts. Instead each reader
 * periodically reports a *quiescent state* — a point where it holds no
 * pointer into the tables (between bursts, in the data plane) — and the
 * writer frees what it unlinked only after every online reader has reported
 * one since the unlink (a *grace period*). See ARCHITECTURE.md §4.
 *
 * The grace-period machinery is pluggable so that the matcher itself never
 * depends on DPDK: wm_qsbr_ops is a small vtable whose shape mirrors DPDK's
 * rte_rcu_qsbr (thread register/online/offline/quiescent, start + check).
 * wm_qsbr_urcu() is the default backend on liburcu-qsbr; the data plane will
 * supply one over rte_rcu_qsbr.
 *
 * The retire list (wm_retire) is the writer's queue of deferred frees and
 * deferred callbacks; it is owned by one writer and is not thread safe.
 *
 * ThreadSanitizer: liburcu is a prebuilt, uninstrumented library whose
 * barriers TSan cannot see, so a reader's load of an unlinked block and the
 * writer's free() after the grace period would be reported as a race. The
 * grace period is a real happens-before edge; wm_qsbr_reader_quiescent() and
 * wm_retire_reclaim() state it to TSan with __tsan_release/__tsan_acquire on
 * one sync object (compiled only under -fsanitize=thread). No suppression.
 */
#ifndef WM_MATCHER_QSBR_H
#define WM_MATCHER_QSBR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A grace-period backend. Every function pointer is required. Reader
 * functions are called from reader threads, start/check from the writer.
 * reader_register returns 0 and a dense reader index, or -1 when the backend
 * has no room for another reader. */
typedef struct wm_qsbr_ops {
    void *ctx;
    int (*reader_register)(void *ctx, unsigned *reader_idx);
    void (*reader_unregister)(void *ctx, unsigned reader_idx);
    void (*reader_online)(void *ctx, unsigned reader_idx);
    void (*reader_offline)(void *ctx, unsigned reader_idx);
    void (*reader_quiescent)(void *ctx, unsigned reader_idx);
    /* Writer: a token for "now"; everything unlinked before the call is safe
     * to free once check(token) is true. */
    uint64_t (*start)(void *ctx);
    /* Writer: true when every online reader has reported a quiescent state
     * since start() returned token. wait=true blocks until it has. */
    bool (*check)(void *ctx, uint64_t token, bool wait);
} wm_qsbr_ops;

/* The default backend on liburcu-qsbr (process-wide; readers call
 * rcu_register_thread underneath, so a reader thread may serve several
 * matchers). check(wait=false) only reports grace periods some earlier
 * check(wait=true) has completed: liburcu 0.13 has no polling API. */
const wm_qsbr_ops *wm_qsbr_urcu(void);

/* Reader-side helpers that add the TSan happens-before annotation. */
void wm_qsbr_reader_quiescent(const wm_qsbr_ops *ops, unsigned reader_idx);
void wm_qsbr_reader_offline(const wm_qsbr_ops *ops, unsigned reader_idx);

/* ---------------------------------------------------------------- retire list */

typedef void (*wm_retire_fn)(void *ctx, uint64_t arg);

typedef struct wm_retire_item {
    wm_retire_fn fn;
    void *ctx;
    uint64_t arg;
} wm_retire_item;

typedef struct wm_retire {
    const wm_qsbr_ops *ops;
    wm_retire_item *items;
    size_t n, cap;
} wm_retire;

/* An empty retire list whose grace periods go through ops (borrowed, must
 * outlive r); no allocation until the first item. Single writer: the
 * list belongs to the thread that retires into it. */
void wm_retire_init(wm_retire *r, const wm_qsbr_ops *ops);
/* Frees everything still queued WITHOUT a grace period: only when no reader
 * can hold a reference any more (teardown). */
void wm_retire_fini(wm_retire *r);
/* Queue free(p) after the next grace period. p may be NULL (ignored).
 * Returns false only if the queue could not grow (the item is then freed
 * at once after a blocking grace period, so it is never leaked). */
bool wm_retire_free(wm_retire *r, void *p);
/* Queue fn(ctx, arg) after the next grace period. Same failure behaviour. */
bool wm_retire_call(wm_retire *r, wm_retire_fn fn, void *ctx, uint64_t arg);
/* Runs a grace period over everything queued so far and runs the items.
 * wait=false returns 0 without freeing if the backend reports the grace
 * period as not yet elapsed. Returns the number of items run. Callbacks may
 * queue new items; those wait for the next call. */
size_t wm_retire_reclaim(wm_retire *r, bool wait);

#endif
