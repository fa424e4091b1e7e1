/* The workers' shared QoS 2 store (dataplane/qos2_store.h) between two
 * threads, as two workers use it: one detaches sessions (put), the other
 * resumes them (resume, or claim at a PUBREL) and reads the copies it now
 * owns without the lock, then releases them or detaches them again; a third
 * expires what waits too long. Every message ends exactly once: taken and
 * read whole (its bytes name its client and id), expired, or left at the
 * end; the store never hands one entry to two owners.
 *
 * Run under ThreadSanitizer by CI (`make test TSAN=1 TEST_FILTER=concurrent`;
 * own main() there, tests/lib/concurrent_check.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/qos2_store.h"
#include "tests/lib/concurrent_check.h"

#define SLOTS 64
#define CLIENTS 2000
#define BYTES 256

static struct wm_qos2_store *st;
static atomic_int put_done;          /* clients whose copy the detaching thread put (or gave up on) */
static atomic_int taken, expired, full;
static atomic_int owners[SLOTS];     /* 1 while a thread owns the entry */

static void client_name(int i, char *c, uint32_t *len) { *len = (uint32_t)snprintf(c, 32, "client-%d", i); }

static void *detacher(void *arg)
{
    (void)arg;
    uint8_t topic[16], pkt[BYTES];
    for (int i = 0; i < CLIENTS; i++) {
        char c[32];
        uint32_t cl;
        client_name(i, c, &cl);
        uint32_t tl = (uint32_t)snprintf((char *)topic, sizeof topic, "t/%d", i);
        memset(pkt, (uint8_t)i, sizeof pkt);
        /* far deadlines, and every 10th already past: the expirer takes those */
        uint64_t deadline = i % 10 == 0 ? 1 : UINT64_MAX - 1;
        int32_t e = -1;
        /* full: the other threads free entries as they go */
        for (long k = 0; k < 10000000 && e < 0; k++) {
            e = wm_qos2_store_put(st, c, cl, (uint16_t)i, deadline, topic, tl, pkt, sizeof pkt);
            if (e < 0) sched_yield();
        }
        if (e < 0) atomic_fetch_add(&full, 1);
        atomic_store(&put_done, i + 1);
    }
    return NULL;
}

/* Takes client i's copy, checks it is whole and its own, gives it back to
 * the store (detach) once in a while before releasing it for good. */
static bool take(int i, bool by_claim)
{
    char c[32];
    uint32_t cl;
    client_name(i, c, &cl);
    uint16_t id = (uint16_t)i;
    int32_t e;
    if (by_claim) {
        e = wm_qos2_store_claim(st, c, cl, id);
    } else {
        wm_qos2_store_resume(st, c, cl, &id, 1, &e);
    }
    if (e < 0) return false;
    CHECK(atomic_exchange(&owners[e], 1) == 0, "entry %d handed to two owners", e);
    uint32_t tl, pl;
    const uint8_t *b = wm_qos2_store_bytes(st, e, &tl, &pl);
    char want[16];
    int wl = snprintf(want, sizeof want, "t/%d", i);
    CHECK(tl == (uint32_t)wl && memcmp(b, want, tl) == 0 && pl == BYTES, "copy of client %d: topic or length", i);
    for (uint32_t k = 0; k < pl; k++) CHECK(b[tl + k] == (uint8_t)i, "copy of client %d: byte %u", i, k);
    atomic_store(&owners[e], 0);
    if (i % 7 == 0 && !by_claim) { /* the session detaches again; the claim below takes it back */
        wm_qos2_store_detach(st, e, UINT64_MAX - 1);
        return take(i, true);
    }
    wm_qos2_store_release(st, e);
    return true;
}

static void *resumer(void *arg)
{
    (void)arg;
    for (int i = 0; i < CLIENTS; i++) {
        if (i % 10 == 0) continue; /* the expirer's */
        while (atomic_load(&put_done) <= i) sched_yield();
        if (!take(i, i % 3 == 0)) {
            /* given up by the detacher (store full): nothing to take */
        } else {
            atomic_fetch_add(&taken, 1);
        }
    }
    return NULL;
}

static void *expirer(void *arg)
{
    (void)arg;
    while (atomic_load(&put_done) < CLIENTS || wm_qos2_store_next_deadline(st) <= 1) {
        if (wm_qos2_store_next_deadline(st) <= 2) atomic_fetch_add(&expired, (int)wm_qos2_store_expire(st, 2));
        sched_yield();
    }
    return NULL;
}

static void run(void)
{
    size_t n = wm_qos2_store_memsize(SLOTS, 64 + BYTES);
    void *mem = malloc(n);
    CHECK(mem, "memory");
    st = wm_qos2_store_init(mem, SLOTS, 64 + BYTES);
    CHECK(st, "init");
    pthread_t a, b, x;
    CHECK(pthread_create(&a, NULL, detacher, NULL) == 0, "thread");
    CHECK(pthread_create(&b, NULL, resumer, NULL) == 0, "thread");
    CHECK(pthread_create(&x, NULL, expirer, NULL) == 0, "thread");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(x, NULL);
    int left = (int)wm_qos2_store_finish(st);
    int t = atomic_load(&taken), e = atomic_load(&expired), f = atomic_load(&full);
    /* every client's message ends once: taken, expired, never stored, or left */
    CHECK(t + e + f + left == CLIENTS, "taken %d + expired %d + not stored %d + left %d != %d", t, e, f, left, CLIENTS);
    CHECK(f == 0 && e == CLIENTS / 10 && left == 0, "not stored %d, expired %d (want the %d past deadlines), left %d", f,
          e, CLIENTS / 10, left);
    CHECK(wm_qos2_store_detached(st) == 0, "detached after finish");
    LOG_INFO("qos2 store: %d copies taken across threads, %d expired", t, e);
    wm_qos2_store_fini(st);
    free(mem);
}

#if defined(__SANITIZE_THREAD__)
int main(void)
{
    run();
    fprintf(stderr, "[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\n");
    return 0;
}
#else
Test(qos2_store_concurrent, detach_and_resume_across_threads, .timeout = 600) { run(); }
#endif
