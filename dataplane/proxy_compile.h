/* The proxy's compile threads (finding 7 of the 2026-12-01 review; findings
 * 2 and 3 of REVIEW6): content filters are compiled away from the workers,
 * so a client subscribing with new XPath texts (Hyperscan compiles, up to
 * seconds for a large set) never stalls the other connections of its
 * worker.
 *
 * One thread per worker (wm_proxy_compiler_start(threads)), taking the jobs
 * (control/content_filters.h, wm_content_job_run) of every worker from one
 * FIFO. A worker has at most one job of its table in flight, so a job never
 * waits for another worker's; a job its worker abandoned (nobody waits for
 * its texts any more) may still occupy a thread, so one more is started
 * while every thread is busy, up to twice the workers. A burst of heavy texts on one worker delays
 * only that worker's compiles (before REVIEW6 finding 2, one thread served
 * the process and a burst delayed every worker's content SUBSCRIBEs for
 * minutes). A worker submits a request, goes on serving its connections, and
 * learns at its next loop turn that the job is done (the thread writes the
 * worker's eventfd to wake it, and the request's done flag is published with
 * release order, so the job's results are visible to the worker once it
 * reads the flag with acquire; the write follows that store, so a worker
 * closing its eventfd first waits for it, wm_proxy_compiler_sync).
 *
 * Nobody waits for a compile at the stop (REVIEW6 finding 3: SIGTERM took
 * 55 s): a worker that ends abandons its request (the job is cancelled and
 * freed by the thread, control/content_filters.h wm_content_job_cancel), and
 * wm_proxy_compiler_stop leaves a thread still inside a set build (one
 * Hyperscan compile, which cannot be interrupted) running, detached: the
 * process must then exit without freeing what that job reads (the schema
 * registry).
 *
 * Thread safety: submit/done/wait/abandon from the request's worker (one
 * thread per request); start/stop from the thread that owns the proxy, stop
 * once every request is done or abandoned. No error codes beyond start's
 * NULL. */
#ifndef WM_DATAPLANE_PROXY_COMPILE_H
#define WM_DATAPLANE_PROXY_COMPILE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "control/content_filters.h"

typedef struct wm_proxy_compiler wm_proxy_compiler;

/* One job handed over by a worker. The worker owns it (embedded in its
 * state); between submit and done (or abandon) it belongs to the compile
 * threads. */
typedef struct wm_proxy_compile_req {
    wm_content_job *job;
    int wake_fd;                  /* eventfd written (8 bytes, value 1) when done; -1 = none */
    atomic_bool done;
    struct wm_proxy_compile_req *next;
} wm_proxy_compile_req;

/* Starts `threads` (>= 1; 0 counts as 1) compile threads; a request that
 * finds every thread busy (some may still be inside the set build of a job
 * that was abandoned) starts one more, up to 2 x threads in all (then it
 * waits its turn in the FIFO). NULL (reason on stderr) if none can be
 * started; fewer than asked if some cannot. */
wm_proxy_compiler *wm_proxy_compiler_start(unsigned threads);
/* Stops cc (NULL: nothing): every idle thread is joined. A thread still
 * running an abandoned job is detached (it frees the job, and cc once it is
 * the last, when the job ends) and stop returns true: the caller must not
 * free what the job reads (the registry) and should leave the process with
 * _exit. Returns false when every thread was joined and cc freed. No
 * request may be queued or in flight that was not abandoned. */
bool wm_proxy_compiler_stop(wm_proxy_compiler *cc);

/* Queues r (r->job set, r->wake_fd set) behind the requests already there. */
void wm_proxy_compiler_submit(wm_proxy_compiler *cc, wm_proxy_compile_req *r);
/* Has r's job run? (acquire: its results are then visible) */
static inline bool wm_proxy_compile_done(const wm_proxy_compile_req *r)
{
    return atomic_load_explicit(&r->done, memory_order_acquire);
}
/* Blocks until r's job has run (a reload, which needs the old table's
 * compile over before the table goes). */
void wm_proxy_compiler_wait(wm_proxy_compiler *cc, wm_proxy_compile_req *r);
/* Nobody wants r's job any more (its worker ends). Not started yet: taken
 * out of the FIFO, and returned (the caller frees it). Running: cancelled
 * (wm_content_job_cancel), freed by its thread when it returns, r never
 * touched again (r and its wake_fd may go at once): returns NULL. Done:
 * returned. r is free for another submit after the call. */
wm_content_job *wm_proxy_compiler_abandon(wm_proxy_compiler *cc, wm_proxy_compile_req *r);

/* Returns once every wake-up of a request already seen done has been
 * written (the thread writes r->wake_fd just after publishing done): the
 * worker may then close that fd, its number is never written by a compile
 * thread after. Any thread. */
void wm_proxy_compiler_sync(wm_proxy_compiler *cc);

/* Threads inside a job now, abandoned ones included (a gauge: tests wait
 * for 0 before a stop that must join every thread). Any thread. */
unsigned wm_proxy_compiler_busy(wm_proxy_compiler *cc);

#endif
