/* The --state saver's thread (README "--state FILE"): runs
 * wm_proxy_state_tick (dataplane/proxy_state.h) every
 * WM_PROXY_SAVER_TICK_NS, or at once when a worker's SUBSCRIBE waits for an
 * identifier reservation (wm_proxy_saver_kick, the registry's on_urgent
 * function), and wakes the workers when a save that carried reservations
 * landed (wm_proxy_registry_sid_wake). A save writes the whole file and
 * fsyncs it and its directory, which blocks for as long as the disk does (an
 * NFS server that stopped answering: minutes): on the main thread, before
 * 2026-12-02, that held SIGHUP reloads, the sessions' expiry and the stop
 * too. Here only this thread waits; the guarantees stay the tick's: a
 * reservation is handed out only once a completed save holds it, so a
 * SUBSCRIBE that needs one waits for the disk (or is refused once saves
 * fail, WM_PROXY_STATE_UNWRITABLE_NS).
 *
 * Threads: start, stop from one thread (the main one); kick from any
 * (workers), lock-free for the caller but a mutex and a condition signal. */
#ifndef WM_DATAPLANE_PROXY_SAVER_H
#define WM_DATAPLANE_PROXY_SAVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataplane/proxy_state.h"

/* The tick, and the retry of a waiting SUBSCRIBE's save (the tick writes
 * only once WM_PROXY_STATE_MIN_INTERVAL_NS has passed since the last). */
#define WM_PROXY_SAVER_TICK_NS 200000000ull
#define WM_PROXY_SAVER_SOON_NS 5000000ull

typedef struct wm_proxy_saver {
    wm_proxy_state_saver *sv;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC */
    bool kicked, stop, done;
    bool final;               /* stop: the clean save (wm_proxy_state_tick final) before leaving */
    int final_rc;
    bool started;
    /* called on the saver's thread, under mu (so never after stop returned),
     * when workers must try their held SUBSCRIBEs again */
    void (*wake)(void *ctx);
    void *ctx;
} wm_proxy_saver;

/* Starts the thread for sv (set up by wm_proxy_state_start; the thread is
 * its only user until stopped) with signals as the caller blocks them. wake(
 * ctx): see above; cheap (an eventfd write per worker). Returns 0, or -1
 * (errno from pthread_create) with nothing started. */
int wm_proxy_saver_start(wm_proxy_saver *s, wm_proxy_state_saver *sv, void (*wake)(void *ctx), void *ctx);

/* Any thread: a save is wanted now (a hand-out waits for a reservation).
 * For wm_proxy_registry_on_urgent: ctx is the wm_proxy_saver. */
void wm_proxy_saver_kick(void *ctx);

/* How long the stop waits for the saver's last save (wm_proxy_saver_stop):
 * about the longest a healthy disk takes to write a large table under load
 * (WM_PROXY_STATE_MAX_INTERVAL_NS bounds the spacing for the same reason). */
#define WM_PROXY_SAVER_STOP_NS 10000000000ull

/* Stops the thread: its current tick ends, no further one starts, wake is
 * not called any more; with final, the thread then makes the clean save
 * (wm_proxy_state_tick(sv, true): call it once every connection detached).
 * Waits at most bound_ns for all that (a save may hang on the disk).
 * Returns 0 (ended, final save good or not asked), -1 (ended, final save
 * failed: counted and reported in sv), or -2: still in a save after
 * bound_ns: the thread is detached and still uses s, sv and the registry,
 * so the caller must free none of them (the process should _exit; the file
 * on disk is then the last good save, written while running: clean 0,
 * loaded with every session incomplete, which is safe). */
int wm_proxy_saver_stop(wm_proxy_saver *s, bool final, uint64_t bound_ns);

#endif
