/* Detached sessions' QoS 2 copies shared by the workers; see qos2_store.h. */
#include "dataplane/qos2_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define CLIENT_MAX 128 /* = WM_MQTT_CLIENT_ID_MAX: longer client ids are not followed at all */

enum { E_FREE = 0, E_DETACHED, E_OWNED };

struct entry {
    uint32_t next_free;
    uint8_t state;
    uint8_t client_len;
    uint16_t id;
    char client[CLIENT_MAX];
    uint64_t deadline_ns;
    uint32_t topic_len, pkt_len;
};

struct wm_qos2_store {
    pthread_mutex_t mu;
    uint32_t slots, slot_bytes;
    uint32_t free;                 /* first free entry, UINT32_MAX none */
    uint32_t detached;
    atomic_uint_fast64_t next_ns;  /* earliest DETACHED deadline, UINT64_MAX none */
    struct entry *e;
    uint8_t *data;                 /* slots * slot_bytes */
};

static size_t al8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t wm_qos2_store_memsize(uint32_t slots, uint32_t slot_bytes)
{
    return al8(sizeof(struct wm_qos2_store)) + al8((size_t)slots * sizeof(struct entry)) +
           al8((size_t)slots * slot_bytes);
}

struct wm_qos2_store *wm_qos2_store_init(void *mem, uint32_t slots, uint32_t slot_bytes)
{
    if (slots > INT32_MAX) return NULL;
    struct wm_qos2_store *st = mem;
    memset(st, 0, sizeof *st);
    if (pthread_mutex_init(&st->mu, NULL) != 0) return NULL;
    st->slots = slots;
    st->slot_bytes = slot_bytes;
    st->e = (struct entry *)((uint8_t *)mem + al8(sizeof *st));
    st->data = (uint8_t *)st->e + al8((size_t)slots * sizeof(struct entry));
    memset(st->e, 0, (size_t)slots * sizeof(struct entry));
    for (uint32_t i = 0; i < slots; i++) st->e[i].next_free = i + 1 < slots ? i + 1 : UINT32_MAX;
    st->free = slots ? 0 : UINT32_MAX;
    atomic_init(&st->next_ns, UINT64_MAX);
    return st;
}

void wm_qos2_store_fini(struct wm_qos2_store *st)
{
    if (st) pthread_mutex_destroy(&st->mu);
}

static uint8_t *entry_bytes(const struct wm_qos2_store *st, uint32_t i)
{
    return st->data + (size_t)i * st->slot_bytes;
}

static bool is_client(const struct entry *x, const char *client, uint32_t client_len)
{
    return x->client_len == client_len && memcmp(x->client, client, client_len) == 0;
}

/* Under mu. */
static void entry_free(struct wm_qos2_store *st, uint32_t i)
{
    if (st->e[i].state == E_DETACHED) st->detached--;
    st->e[i].state = E_FREE;
    st->e[i].next_free = st->free;
    st->free = i;
}

/* Under mu: a deadline joins the DETACHED ones. */
static void deadline_add(struct wm_qos2_store *st, uint64_t deadline_ns)
{
    if (deadline_ns < atomic_load_explicit(&st->next_ns, memory_order_relaxed))
        atomic_store_explicit(&st->next_ns, deadline_ns, memory_order_relaxed);
}

int32_t wm_qos2_store_put(struct wm_qos2_store *st, const char *client, uint32_t client_len, uint16_t id,
                          uint64_t deadline_ns, const uint8_t *topic, uint32_t topic_len, const uint8_t *pkt,
                          uint32_t pkt_len)
{
    if (client_len > CLIENT_MAX || (uint64_t)topic_len + pkt_len > st->slot_bytes) return -1;
    pthread_mutex_lock(&st->mu);
    uint32_t i = st->free;
    if (i != UINT32_MAX) {
        struct entry *x = &st->e[i];
        st->free = x->next_free;
        x->state = E_DETACHED;
        x->client_len = (uint8_t)client_len;
        memcpy(x->client, client, client_len);
        x->id = id;
        x->deadline_ns = deadline_ns;
        x->topic_len = topic_len;
        x->pkt_len = pkt_len;
        uint8_t *b = entry_bytes(st, i);
        if (topic_len) memcpy(b, topic, topic_len);
        memcpy(b + topic_len, pkt, pkt_len);
        st->detached++;
        deadline_add(st, deadline_ns);
    }
    pthread_mutex_unlock(&st->mu);
    return i == UINT32_MAX ? -1 : (int32_t)i;
}

void wm_qos2_store_detach(struct wm_qos2_store *st, int32_t slot, uint64_t deadline_ns)
{
    pthread_mutex_lock(&st->mu);
    struct entry *x = &st->e[slot];
    x->state = E_DETACHED;
    x->deadline_ns = deadline_ns;
    st->detached++;
    deadline_add(st, deadline_ns);
    pthread_mutex_unlock(&st->mu);
}

uint32_t wm_qos2_store_resume(struct wm_qos2_store *st, const char *client, uint32_t client_len, const uint16_t *ids,
                              uint32_t n, int32_t *slots)
{
    for (uint32_t k = 0; k < n; k++) slots[k] = -1;
    uint32_t freed = 0;
    pthread_mutex_lock(&st->mu);
    for (uint32_t i = 0; st->detached && i < st->slots; i++) {
        struct entry *x = &st->e[i];
        if (x->state != E_DETACHED || !is_client(x, client, client_len)) continue;
        uint32_t k = 0;
        while (k < n && (ids[k] != x->id || slots[k] != -1)) k++;
        if (k == n) { /* a new session, or an identifier the session no longer holds */
            entry_free(st, i);
            freed++;
            continue;
        }
        x->state = E_OWNED;
        st->detached--;
        slots[k] = (int32_t)i;
    }
    pthread_mutex_unlock(&st->mu);
    return freed;
}

int32_t wm_qos2_store_claim(struct wm_qos2_store *st, const char *client, uint32_t client_len, uint16_t id)
{
    int32_t got = -1;
    pthread_mutex_lock(&st->mu);
    for (uint32_t i = 0; st->detached && i < st->slots; i++) {
        struct entry *x = &st->e[i];
        if (x->state != E_DETACHED || x->id != id || !is_client(x, client, client_len)) continue;
        x->state = E_OWNED;
        st->detached--;
        got = (int32_t)i;
        break;
    }
    pthread_mutex_unlock(&st->mu);
    return got;
}

const uint8_t *wm_qos2_store_bytes(const struct wm_qos2_store *st, int32_t slot, uint32_t *topic_len,
                                   uint32_t *pkt_len)
{
    const struct entry *x = &st->e[slot];
    *topic_len = x->topic_len;
    *pkt_len = x->pkt_len;
    return entry_bytes(st, (uint32_t)slot);
}

void wm_qos2_store_release(struct wm_qos2_store *st, int32_t slot)
{
    pthread_mutex_lock(&st->mu);
    entry_free(st, (uint32_t)slot);
    pthread_mutex_unlock(&st->mu);
}

uint64_t wm_qos2_store_next_deadline(const struct wm_qos2_store *st)
{
    return atomic_load_explicit(&st->next_ns, memory_order_relaxed);
}

/* Under mu: frees the DETACHED entries due at now_ns (all with UINT64_MAX
 * as "the end") and recomputes the earliest deadline. */
static uint32_t sweep(struct wm_qos2_store *st, uint64_t now_ns, bool all)
{
    uint32_t freed = 0;
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; st->detached && i < st->slots; i++) {
        struct entry *x = &st->e[i];
        if (x->state != E_DETACHED) continue;
        if (all || x->deadline_ns <= now_ns) {
            entry_free(st, i);
            freed++;
        } else if (x->deadline_ns < next) {
            next = x->deadline_ns;
        }
    }
    atomic_store_explicit(&st->next_ns, next, memory_order_relaxed);
    return freed;
}

uint32_t wm_qos2_store_expire(struct wm_qos2_store *st, uint64_t now_ns)
{
    pthread_mutex_lock(&st->mu);
    uint32_t freed = sweep(st, now_ns, false);
    pthread_mutex_unlock(&st->mu);
    return freed;
}

uint32_t wm_qos2_store_finish(struct wm_qos2_store *st)
{
    pthread_mutex_lock(&st->mu);
    uint32_t freed = sweep(st, 0, true);
    pthread_mutex_unlock(&st->mu);
    return freed;
}

uint32_t wm_qos2_store_detached(struct wm_qos2_store *st)
{
    pthread_mutex_lock(&st->mu);
    uint32_t n = st->detached;
    pthread_mutex_unlock(&st->mu);
    return n;
}
