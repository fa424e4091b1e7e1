/* The --state saver's thread (dataplane/proxy_saver.h). */
#include "dataplane/proxy_saver.h"

#include <errno.h>
#include <time.h>

static struct timespec after(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
    return (struct timespec){ (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
}

static void *saver_main(void *arg)
{
    wm_proxy_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        /* While a SUBSCRIBE waits, look again soon: the tick writes once the
         * last save is WM_PROXY_STATE_MIN_INTERVAL_NS old (as the main
         * loop's 5 ms wait did before). */
        bool urgent = wm_proxy_registry_sid_urgent(s->sv->g);
        if (!s->kicked) {
            struct timespec until = after(urgent ? WM_PROXY_SAVER_SOON_NS : WM_PROXY_SAVER_TICK_NS);
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
        }
        s->kicked = false;
        if (s->stop) break;
        pthread_mutex_unlock(&s->mu);
        (void)wm_proxy_state_tick(s->sv, false);   /* counted and reported in sv */
        bool wake = wm_proxy_registry_sid_wake(s->sv->g);
        pthread_mutex_lock(&s->mu);
        if (wake && !s->stop && s->wake) s->wake(s->ctx);
    }
    if (s->final) {
        pthread_mutex_unlock(&s->mu);
        int rc = wm_proxy_state_tick(s->sv, true);
        pthread_mutex_lock(&s->mu);
        s->final_rc = rc;
    }
    s->done = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int wm_proxy_saver_start(wm_proxy_saver *s, wm_proxy_state_saver *sv, void (*wake)(void *ctx), void *ctx)
{
    *s = (wm_proxy_saver){ .sv = sv, .wake = wake, .ctx = ctx };
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&s->th, NULL, saver_main, s);
    if (e) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        errno = e;
        return -1;
    }
    s->started = true;
    return 0;
}

void wm_proxy_saver_kick(void *ctx)
{
    wm_proxy_saver *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->kicked = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int wm_proxy_saver_stop(wm_proxy_saver *s, bool final, uint64_t bound_ns)
{
    if (!s->started) return final ? wm_proxy_state_tick(s->sv, true) : 0;
    struct timespec until = after(bound_ns);
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    s->final = final;
    pthread_cond_signal(&s->cv);
    while (!s->done && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT) {}
    bool done = s->done;
    int rc = s->final_rc;
    pthread_mutex_unlock(&s->mu);
    s->started = false;
    if (!done) {
        /* in a save the disk holds: it keeps s, which the caller must keep too */
        pthread_detach(s->th);
        return -2;
    }
    pthread_join(s->th, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    return rc < 0 ? -1 : 0;
}
