/* The proxy's compile thread (finding 7 of the 2026-12-01 review): content
 * filters are compiled away from the workers, so a client subscribing with
 * new XPath texts (Hyperscan compiles, up to seconds for a large set) never
 * stalls the other connections of its worker.
 *
 * One thread for the process runs the jobs (control/content_filters.h,
 * wm_content_job_run) of every worker in the order they come, one at a
 * time (the machine's other cores keep relaying). A worker has at most one
 * job of its table in flight; it submits a request, goes on serving its
 * connections, and learns at its next loop turn that the job is done (the
 * thread writes the worker's eventfd to wake it, and the request's done
 * flag is published with release order, so the job's results are visible
 * to the worker once it reads the flag with acquire).
 *
 * Thread safety: submit/done/wait from the request's worker; start/stop from
 * the thread that owns the proxy, stop only once no request is in flight. */
#ifndef WM_DATAPLANE_PROXY_COMPILE_H
#define WM_DATAPLANE_PROXY_COMPILE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "control/content_filters.h"

typedef struct wm_proxy_compiler wm_proxy_compiler;

/* One job handed over by a worker. The worker owns it (embedded in its
 * state); between submit and done it belongs to the compile thread. */
typedef struct wm_proxy_compile_req {
    wm_content_job *job;
    int wake_fd;                  /* eventfd written (8 bytes, value 1) when done; -1 = none */
    atomic_bool done;
    struct wm_proxy_compile_req *next;
} wm_proxy_compile_req;

/* Starts the thread. NULL (reason on stderr) if it cannot. */
wm_proxy_compiler *wm_proxy_compiler_start(void);
/* Joins the thread and frees cc (NULL: nothing). No request may be in flight. */
void wm_proxy_compiler_stop(wm_proxy_compiler *cc);

/* Queues r (r->job set, r->wake_fd set) behind the requests already there. */
void wm_proxy_compiler_submit(wm_proxy_compiler *cc, wm_proxy_compile_req *r);
/* Has r's job run? (acquire: its results are then visible) */
static inline bool wm_proxy_compile_done(const wm_proxy_compile_req *r)
{
    return atomic_load_explicit(&r->done, memory_order_acquire);
}
/* Blocks until r's job has run (a reload, a resumed session or the end of
 * the worker, which need the table settled now). */
void wm_proxy_compiler_wait(wm_proxy_compiler *cc, wm_proxy_compile_req *r);

#endif
