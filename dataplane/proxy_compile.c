/* See proxy_compile.h. */
#include "dataplane/proxy_compile.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct wm_proxy_compiler {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, ran;     /* a request came / a request ran */
    wm_proxy_compile_req *head, *tail;
    bool stop;
};

static void *compile_main(void *arg)
{
    wm_proxy_compiler *cc = arg;
    pthread_mutex_lock(&cc->mu);
    for (;;) {
        while (!cc->head && !cc->stop) pthread_cond_wait(&cc->work, &cc->mu);
        if (!cc->head) break;
        wm_proxy_compile_req *r = cc->head;
        if (!(cc->head = r->next)) cc->tail = NULL;
        pthread_mutex_unlock(&cc->mu);
        wm_content_job_run(r->job);
        int fd = r->wake_fd;
        pthread_mutex_lock(&cc->mu);
        /* r belongs to its worker again from this store on */
        atomic_store_explicit(&r->done, true, memory_order_release);
        pthread_cond_broadcast(&cc->ran);
        uint64_t one = 1;
        if (fd >= 0 && write(fd, &one, sizeof one) < 0) { /* the worker sees it at its next turn anyway */ }
    }
    pthread_mutex_unlock(&cc->mu);
    return NULL;
}

wm_proxy_compiler *wm_proxy_compiler_start(void)
{
    wm_proxy_compiler *cc = calloc(1, sizeof *cc);
    if (!cc) return NULL;
    pthread_mutex_init(&cc->mu, NULL);
    pthread_cond_init(&cc->work, NULL);
    pthread_cond_init(&cc->ran, NULL);
    if (pthread_create(&cc->th, NULL, compile_main, cc) != 0) {
        fprintf(stderr, "wirematch-proxy: cannot start the content-filter compile thread\n");
        pthread_cond_destroy(&cc->work);
        pthread_cond_destroy(&cc->ran);
        pthread_mutex_destroy(&cc->mu);
        free(cc);
        return NULL;
    }
    return cc;
}

void wm_proxy_compiler_stop(wm_proxy_compiler *cc)
{
    if (!cc) return;
    pthread_mutex_lock(&cc->mu);
    cc->stop = true;
    pthread_cond_signal(&cc->work);
    pthread_mutex_unlock(&cc->mu);
    pthread_join(cc->th, NULL);
    pthread_cond_destroy(&cc->work);
    pthread_cond_destroy(&cc->ran);
    pthread_mutex_destroy(&cc->mu);
    free(cc);
}

void wm_proxy_compiler_submit(wm_proxy_compiler *cc, wm_proxy_compile_req *r)
{
    atomic_store_explicit(&r->done, false, memory_order_relaxed);
    r->next = NULL;
    pthread_mutex_lock(&cc->mu);
    if (cc->tail) cc->tail->next = r;
    else cc->head = r;
    cc->tail = r;
    pthread_cond_signal(&cc->work);
    pthread_mutex_unlock(&cc->mu);
}

void wm_proxy_compiler_wait(wm_proxy_compiler *cc, wm_proxy_compile_req *r)
{
    pthread_mutex_lock(&cc->mu);
    while (!atomic_load_explicit(&r->done, memory_order_acquire)) pthread_cond_wait(&cc->ran, &cc->mu);
    pthread_mutex_unlock(&cc->mu);
}
