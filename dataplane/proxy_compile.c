/* See proxy_compile.h. */
#include "dataplane/proxy_compile.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* One compile thread and the request it runs. A request abandoned while it
 * runs is forgotten (req NULL): the thread frees the job itself. */
typedef struct compile_thread {
    pthread_t th;
    wm_proxy_compiler *cc;
    wm_proxy_compile_req *req;    /* running, NULL = idle or abandoned */
    wm_content_job *job;          /* running (kept when req is abandoned) */
} compile_thread;

struct wm_proxy_compiler {
    pthread_mutex_t mu;
    pthread_cond_t work, ran;     /* a request came / a request ran */
    wm_proxy_compile_req *head, *tail;
    bool stop, detached;          /* detached: the last thread to return frees cc */
    unsigned n, cap, alive, idle; /* threads started (at most cap) / not yet returned / waiting for work */
    compile_thread *t;            /* [cap] */
};

static void compiler_free(wm_proxy_compiler *cc)
{
    pthread_cond_destroy(&cc->work);
    pthread_cond_destroy(&cc->ran);
    pthread_mutex_destroy(&cc->mu);
    free(cc->t);
    free(cc);
}

static void *compile_main(void *arg)
{
    compile_thread *me = arg;
    wm_proxy_compiler *cc = me->cc;
    pthread_mutex_lock(&cc->mu);
    for (;;) {
        cc->idle++;
        while (!cc->head && !cc->stop) pthread_cond_wait(&cc->work, &cc->mu);
        cc->idle--;
        if (cc->stop) break;   /* stop comes once every request is done or abandoned */
        wm_proxy_compile_req *r = cc->head;
        if (!(cc->head = r->next)) cc->tail = NULL;
        me->req = r;
        me->job = r->job;
        pthread_mutex_unlock(&cc->mu);
        wm_content_job_run(me->job);
        pthread_mutex_lock(&cc->mu);
        if (!me->req) {
            /* abandoned while it ran: nobody will end it */
            wm_content_job_free(me->job);
        } else {
            /* r belongs to its worker again from the store of done on, so
             * its fd is read before. The wake-up follows the store (a
             * worker it wakes must find done), under cc->mu: a worker that
             * saw done may close the fd once wm_proxy_compiler_sync says
             * the write is over (REVIEW7 finding 8: TSan saw the close race
             * with it at the stop). */
            int fd = r->wake_fd;
            atomic_store_explicit(&r->done, true, memory_order_release);
            pthread_cond_broadcast(&cc->ran);
            uint64_t one = 1;
            if (fd >= 0 && write(fd, &one, sizeof one) < 0) { /* the worker sees it at its next turn anyway */ }
        }
        me->req = NULL;
        me->job = NULL;
    }
    bool last = --cc->alive == 0, detached = cc->detached;
    pthread_mutex_unlock(&cc->mu);
    if (last && detached) compiler_free(cc);   /* stop left it to the last detached thread */
    return NULL;
}

/* One more thread (under cc->mu); false if it cannot be started. */
static bool spawn(wm_proxy_compiler *cc)
{
    cc->t[cc->n] = (compile_thread){ .cc = cc };
    if (pthread_create(&cc->t[cc->n].th, NULL, compile_main, &cc->t[cc->n]) != 0) return false;
    cc->n++;
    cc->alive++;
    return true;
}

wm_proxy_compiler *wm_proxy_compiler_start(unsigned threads)
{
    if (!threads) threads = 1;
    wm_proxy_compiler *cc = calloc(1, sizeof *cc);
    if (!cc || !(cc->t = calloc(2 * (size_t)threads, sizeof *cc->t))) {
        free(cc);
        fprintf(stderr, "wirematch-proxy: cannot start the content-filter compile threads: out of memory\n");
        return NULL;
    }
    pthread_mutex_init(&cc->mu, NULL);
    pthread_cond_init(&cc->work, NULL);
    pthread_cond_init(&cc->ran, NULL);
    cc->cap = 2 * threads;
    pthread_mutex_lock(&cc->mu);
    while (cc->n < threads && spawn(cc)) {}
    pthread_mutex_unlock(&cc->mu);
    if (!cc->n) {
        fprintf(stderr, "wirematch-proxy: cannot start the content-filter compile thread\n");
        compiler_free(cc);
        return NULL;
    }
    return cc;
}

bool wm_proxy_compiler_stop(wm_proxy_compiler *cc)
{
    if (!cc) return false;
    pthread_mutex_lock(&cc->mu);
    cc->stop = true;
    pthread_cond_broadcast(&cc->work);
    bool busy = false;
    for (unsigned i = 0; i < cc->n; i++) busy |= cc->t[i].job != NULL;
    if (!busy) {
        pthread_mutex_unlock(&cc->mu);
        for (unsigned i = 0; i < cc->n; i++) pthread_join(cc->t[i].th, NULL);
        compiler_free(cc);
        return false;
    }
    /* A thread is inside an abandoned set build: nobody waits for it. The
     * last thread to return frees cc (a thread touches its record only
     * before it counts itself out, under the lock). */
    for (unsigned i = 0; i < cc->n; i++) pthread_detach(cc->t[i].th);
    cc->detached = true;
    pthread_mutex_unlock(&cc->mu);
    return true;
}

void wm_proxy_compiler_submit(wm_proxy_compiler *cc, wm_proxy_compile_req *r)
{
    atomic_store_explicit(&r->done, false, memory_order_relaxed);
    r->next = NULL;
    pthread_mutex_lock(&cc->mu);
    if (cc->tail) cc->tail->next = r;
    else cc->head = r;
    cc->tail = r;
    /* every thread busy (some with abandoned set builds): one more, up to cap
     * (beyond it the request waits its turn) */
    if (cc->idle == 0 && cc->n < cc->cap) spawn(cc);
    pthread_cond_signal(&cc->work);
    pthread_mutex_unlock(&cc->mu);
}

void wm_proxy_compiler_wait(wm_proxy_compiler *cc, wm_proxy_compile_req *r)
{
    pthread_mutex_lock(&cc->mu);
    while (!atomic_load_explicit(&r->done, memory_order_acquire)) pthread_cond_wait(&cc->ran, &cc->mu);
    pthread_mutex_unlock(&cc->mu);
}

wm_content_job *wm_proxy_compiler_abandon(wm_proxy_compiler *cc, wm_proxy_compile_req *r)
{
    wm_content_job *j = r->job;
    pthread_mutex_lock(&cc->mu);
    if (!atomic_load_explicit(&r->done, memory_order_acquire)) {
        bool running = false;
        for (unsigned i = 0; i < cc->n; i++)
            if (cc->t[i].req == r) {
                cc->t[i].req = NULL;
                wm_content_job_cancel(j);
                running = true;
            }
        if (running) {
            j = NULL;
        } else {   /* still in the FIFO */
            wm_proxy_compile_req **p = &cc->head, *prev = NULL;
            while (*p && *p != r) prev = *p, p = &(*p)->next;
            if (*p) {
                *p = r->next;
                if (cc->tail == r) cc->tail = prev;
            }
        }
    }
    pthread_mutex_unlock(&cc->mu);
    r->job = NULL;
    return j;
}

void wm_proxy_compiler_sync(wm_proxy_compiler *cc)
{
    pthread_mutex_lock(&cc->mu);
    pthread_mutex_unlock(&cc->mu);
}

unsigned wm_proxy_compiler_busy(wm_proxy_compiler *cc)
{
    unsigned k = 0;
    pthread_mutex_lock(&cc->mu);
    for (unsigned i = 0; i < cc->n; i++) k += cc->t[i].job != NULL;
    pthread_mutex_unlock(&cc->mu);
    return k;
}
