/* The data plane's match table and match log; see match_sink.h. */
#include "dataplane/match_sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_spinlock.h>

#include "control/resolution.h"
#include "dataplane/peid_cache.h"
#include "matcher/matcher.h"

/* One installed subscription: (client, filter) identifies it for
 * replacement and UNSUBSCRIBE; key is what the match log reports. Nodes are
 * the matcher cookies, so a removed node is freed only after a grace period. */
struct sub_node {
    struct sub_node *next;   /* bucket chain, or the pending-free list */
    uint32_t sub;            /* matcher subscription id */
    uint32_t hash;
    char *client, *filter, *key;
};

struct wm_match_table {
    wm_matcher *m;
    wm_resolution *res;
    rte_spinlock_t lock;     /* the one writer at a time */
    struct sub_node **buckets;
    uint32_t mask;
    struct sub_node *pending; /* removed, waiting for a grace period */
    uint32_t max_subs;
    struct wm_match_counters c;
};

struct wm_match_worker {
    struct wm_match_table *t;
    wm_matcher_reader *r;
    wm_match_result res;
    const char **keys;
    FILE *log;
    char *logbuf;
    uint64_t next_reclaim_ns;
    struct wm_match_counters c; /* lookups, errors, log lines */
    struct wm_peid_cache *peids; /* peid string -> id, hot peids in one line */
};

static uint32_t hash2(const char *a, size_t al, const char *b, size_t bl)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < al; i++) h = (h ^ (uint8_t)a[i]) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (size_t i = 0; i < bl; i++) h = (h ^ (uint8_t)b[i]) * 16777619u;
    return h;
}

static char *dupn(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n) memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

static void node_free(struct sub_node *n)
{
    free(n->client);
    free(n->filter);
    free(n->key);
    free(n);
}

struct wm_match_table *wm_match_table_new(const char *res_path, uint32_t max_subs, char *err, size_t errlen)
{
    struct wm_match_table *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rte_spinlock_init(&t->lock);
    t->max_subs = max_subs;
    uint32_t nb = 16;
    while (nb < max_subs) nb <<= 1;
    t->buckets = calloc(nb, sizeof *t->buckets);
    t->mask = nb - 1;
    wm_matcher_config cfg = {0};
    cfg.max_subs = max_subs;
    cfg.max_peids = 1u << 22;
    t->m = t->buckets ? wm_matcher_new(&cfg) : NULL;
    if (!t->m) {
        snprintf(err, errlen, "cannot create the matcher (out of memory)");
        wm_match_table_free(t);
        return NULL;
    }
    if (!res_path) return t;
    wm_resolution_error rerr;
    t->res = wm_resolution_open(res_path, &rerr);
    if (!t->res) {
        snprintf(err, errlen, "%s: %s (offset %llu)", res_path, rerr.message, (unsigned long long)rerr.offset);
        wm_match_table_free(t);
        return NULL;
    }
    uint32_t np = wm_resolution_peid_count(t->res);
    uint32_t *ids = malloc(sizeof *ids * (np ? np : 1));
    for (uint32_t i = 0; ids && i < np; i++) {
        const char *s = wm_resolution_peid(t->res, i);
        wm_matcher_status st = wm_matcher_peid_intern(t->m, s, strlen(s), &ids[i]);
        if (st != WM_MATCHER_OK) {
            snprintf(err, errlen, "%s: peid %u: %s", res_path, i, wm_matcher_status_message(st));
            free(ids);
            wm_match_table_free(t);
            return NULL;
        }
    }
    uint32_t *tmp = NULL;
    uint32_t tmp_cap = 0;
    for (uint32_t i = 0; ids && i < wm_resolution_count(t->res); i++) {
        wm_resolution_nbhd nb_;
        wm_resolution_get(t->res, i, &nb_);
        if (nb_.result_len > tmp_cap) {
            free(tmp);
            tmp_cap = nb_.result_len;
            tmp = malloc(sizeof *tmp * tmp_cap);
            if (!tmp) break;
        }
        for (uint32_t k = 0; k < nb_.result_len; k++) tmp[k] = ids[nb_.result[k]];
        uint32_t id;
        wm_matcher_status st = wm_matcher_nbhd_define_ids(t->m, nb_.name, strlen(nb_.name), tmp, nb_.result_len, &id);
        if (st != WM_MATCHER_OK) {
            snprintf(err, errlen, "%s: neighborhood %s: %s", res_path, nb_.name, wm_matcher_status_message(st));
            free(tmp);
            free(ids);
            wm_match_table_free(t);
            return NULL;
        }
        t->c.nbhds++;
    }
    free(tmp);
    if (!ids) {
        snprintf(err, errlen, "out of memory");
        wm_match_table_free(t);
        return NULL;
    }
    free(ids);
    return t;
}

void wm_match_table_free(struct wm_match_table *t)
{
    if (!t) return;
    for (uint32_t b = 0; t->buckets && b <= t->mask; b++)
        for (struct sub_node *n = t->buckets[b], *nx; n; n = nx) {
            nx = n->next;
            node_free(n);
        }
    for (struct sub_node *n = t->pending, *nx; n; n = nx) {
        nx = n->next;
        node_free(n);
    }
    free(t->buckets);
    if (t->m) wm_matcher_free(t->m);
    wm_resolution_close(t->res);
    free(t);
}

static struct sub_node **find_slot(struct wm_match_table *t, const char *client, size_t cl, const char *filter,
                                   size_t fl, uint32_t h)
{
    struct sub_node **pp = &t->buckets[h & t->mask];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && strlen((*pp)->client) == cl && memcmp((*pp)->client, client, cl) == 0 &&
            strlen((*pp)->filter) == fl && memcmp((*pp)->filter, filter, fl) == 0)
            return pp;
    return pp;
}

/* Writer, under the lock: unlinks a node and queues it for a grace period. */
static void remove_node(struct wm_match_table *t, struct sub_node **pp)
{
    struct sub_node *n = *pp;
    wm_matcher_sub_remove(t->m, n->sub);
    *pp = n->next;
    n->next = t->pending;
    t->pending = n;
    t->c.subs_live--;
    t->c.subs_removed++;
}

static enum wm_mqtt_sub_status install(struct wm_match_table *t, const struct wm_mqtt_subscribe *s)
{
    uint32_t nbhd = WM_NBHD_NONE;
    if (s->nbhd.len) {
        nbhd = wm_matcher_nbhd_find(t->m, (const char *)s->nbhd.p, s->nbhd.len);
        if (nbhd == WM_NBHD_NONE) return WM_MQTT_SUB_NBHD_UNKNOWN;
    }
    struct sub_node *n = calloc(1, sizeof *n);
    char keybuf[32];
    if (n) {
        n->client = dupn(s->client, s->client_len);
        n->filter = dupn(s->filter.p, s->filter.len);
        if (s->subscription_id) {
            snprintf(keybuf, sizeof keybuf, "#%u", s->subscription_id);
            n->key = malloc(s->client_len + strlen(keybuf) + 1);
            if (n->key) {
                memcpy(n->key, s->client, s->client_len);
                strcpy(n->key + s->client_len, keybuf);
            }
        } else {
            n->key = malloc(s->client_len + 1 + s->filter.len + 1);
            if (n->key) {
                memcpy(n->key, s->client, s->client_len);
                n->key[s->client_len] = '#';
                memcpy(n->key + s->client_len + 1, s->filter.p, s->filter.len);
                n->key[s->client_len + 1 + s->filter.len] = 0;
            }
        }
    }
    if (!n || !n->client || !n->filter || !n->key) {
        if (n) node_free(n);
        return WM_MQTT_SUB_REJECTED;
    }
    n->hash = hash2(s->client, s->client_len, (const char *)s->filter.p, s->filter.len);
    struct sub_node **pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, n->hash);
    if (*pp) { /* §3.8.4: the new subscription replaces the existing one */
        remove_node(t, pp);
        t->c.subs_removed--;
        t->c.subs_replaced++;
        pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, n->hash);
    }
    wm_sub_spec spec = {n->filter, s->filter.len, n->client, s->client_len, nbhd, s->qos, s->no_local, 0,
                        (uint64_t)(uintptr_t)n};
    if (wm_matcher_sub_add(t->m, &spec, &n->sub, NULL) != WM_MATCHER_OK) {
        node_free(n);
        return WM_MQTT_SUB_REJECTED;
    }
    n->next = NULL;
    *pp = n;
    t->c.subs_live++;
    return WM_MQTT_SUB_INSTALLED;
}

static void uninstall(struct wm_match_table *t, const struct wm_mqtt_subscribe *s)
{
    uint32_t h = hash2(s->client, s->client_len, (const char *)s->filter.p, s->filter.len);
    struct sub_node **pp = find_slot(t, s->client, s->client_len, (const char *)s->filter.p, s->filter.len, h);
    if (*pp) remove_node(t, pp);
    else t->c.unsub_unknown++;
}

long wm_match_table_preload(struct wm_match_table *t, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, installed = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == 0) continue;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        const char *client = NULL, *filter = NULL, *nbhd = NULL;
        json_int_t subid = 0, qos = 0;
        int no_local = 0;
        if (!o || json_unpack_ex(o, &je, JSON_STRICT, "{s:s, s:s, s?s, s?I, s?I, s?b}", "client", &client, "filter", &filter,
                                 "nbhd", &nbhd, "subid", &subid, "qos", &qos, "no_local", &no_local) != 0 ||
            subid < 0 || subid > 268435455 || qos < 0 || qos > 2) {
            snprintf(err, errlen, "%s:%ld: %s", path, lineno, o ? (je.text[0] ? je.text : "subid or qos out of range") : je.text);
            json_decref(o);
            free(line);
            fclose(f);
            return -1;
        }
        struct wm_mqtt_subscribe s = {client, (uint32_t)strlen(client), {(const uint8_t *)filter, (uint32_t)strlen(filter)},
                                      (uint32_t)subid, {(const uint8_t *)(nbhd ? nbhd : ""), nbhd ? (uint32_t)strlen(nbhd) : 0},
                                      (uint8_t)qos, no_local != 0};
        enum wm_mqtt_sub_status st = install(t, &s);
        json_decref(o);
        if (st != WM_MQTT_SUB_INSTALLED) {
            snprintf(err, errlen, "%s:%ld: %s", path, lineno,
                     st == WM_MQTT_SUB_NBHD_UNKNOWN ? "nbhd names no neighborhood of the resolution"
                                                    : "the matcher rejected the subscription (filter invalid or table full)");
            free(line);
            fclose(f);
            return -1;
        }
        installed++;
        t->c.subs_preloaded++;
    }
    free(line);
    fclose(f);
    return installed;
}

void wm_match_table_counters(struct wm_match_table *t, struct wm_match_counters *out) { *out = t->c; }

uint64_t wm_match_table_visit(struct wm_match_table *t, unsigned max,
                              void (*fn)(void *ctx, const char *key, const char *client, const char *filter),
                              void *ctx)
{
    unsigned n = 0;
    rte_spinlock_lock(&t->lock);
    for (uint32_t b = 0; b <= t->mask && n < max; b++)
        for (struct sub_node *x = t->buckets[b]; x && n < max; x = x->next, n++) fn(ctx, x->key, x->client, x->filter);
    uint64_t live = t->c.subs_live;
    rte_spinlock_unlock(&t->lock);
    return live;
}

/* ------------------------------------------------------------ worker side */

static enum wm_mqtt_sub_status w_subscribe(void *ctx, const struct wm_mqtt_subscribe *s)
{
    struct wm_match_worker *w = ctx;
    wm_matcher_reader_offline(w->r);
    rte_spinlock_lock(&w->t->lock);
    enum wm_mqtt_sub_status st = install(w->t, s);
    rte_spinlock_unlock(&w->t->lock);
    wm_matcher_reader_online(w->r);
    return st;
}

static void w_unsubscribe(void *ctx, const struct wm_mqtt_subscribe *s)
{
    struct wm_match_worker *w = ctx;
    wm_matcher_reader_offline(w->r);
    rte_spinlock_lock(&w->t->lock);
    uninstall(w->t, s);
    rte_spinlock_unlock(&w->t->lock);
    wm_matcher_reader_online(w->r);
}

static void json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fputc('\\', f), fputc(c, f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static enum wm_mqtt_pub_outcome w_publish(void *ctx, const struct wm_mqtt_publish *p)
{
    struct wm_match_worker *w = ctx;
    wm_match_str peids[WM_MQTT_MAX_PEIDS];
    for (uint32_t i = 0; i < p->n_peids; i++) {
        peids[i].s = (const char *)p->peids[i].p;
        peids[i].len = p->peids[i].len;
    }
    w->c.lookups++;
    /* wm_matcher_lookup_str's checks, then its peid lookups through the
     * worker's cache and the lookup by ids. */
    uint32_t ids[WM_MQTT_MAX_PEIDS];
    wm_matcher_status st = p->topic_len == 0 ? WM_MATCHER_E_INVALID_TOPIC : WM_MATCHER_OK;
    for (uint32_t i = 0; st == WM_MATCHER_OK && i < p->n_peids; i++) {
        if (peids[i].len == 0) st = WM_MATCHER_E_BAD_PEID;
        else ids[i] = wm_peid_cache_find(w->peids, w->t->m, peids[i].s, peids[i].len);
    }
    if (st == WM_MATCHER_OK) {
        wm_match_pub pub = {p->topic, p->topic_len, ids, p->n_peids, p->client, p->client_len};
        st = wm_matcher_lookup(w->r, &pub, &w->res);
    }
    if (st != WM_MATCHER_OK) {
        w->c.lookup_errors++;
        return WM_MQTT_PUB_MATCH_ERROR;
    }
    /* Without a log only the outcome is needed: any subscription or shared
     * group reached means matched, so the keys are not gathered or sorted. */
    if (!w->log) return w->res.n_subs || w->res.n_groups ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH;
    uint32_t nk = 0;
    for (uint32_t i = 0; i < w->res.n_subs; i++)
        w->keys[nk++] = ((const struct sub_node *)(uintptr_t)wm_matcher_sub_cookie(w->t->m, w->res.subs[i]))->key;
    /* A shared subscription group delivers to one member; the first stands for it. */
    for (uint32_t g = 0; g < w->res.n_groups; g++)
        w->keys[nk++] = ((const struct sub_node *)(uintptr_t)wm_matcher_sub_cookie(
                             w->t->m, w->res.members[w->res.groups[g].first]))->key;
    if (nk > 1) qsort(w->keys, nk, sizeof *w->keys, cmp_str);
    uint32_t u = 0;
    for (uint32_t i = 0; i < nk; i++)
        if (u == 0 || strcmp(w->keys[u - 1], w->keys[i]) != 0) w->keys[u++] = w->keys[i];
    if (w->log) {
        fprintf(w->log, "{\"seq\": %llu, \"client\": ", (unsigned long long)p->seq);
        json_str(w->log, p->client, p->client_len);
        fputs(", \"topic\": ", w->log);
        json_str(w->log, p->topic, p->topic_len);
        fputs(", \"peids\": [", w->log);
        for (uint32_t i = 0; i < p->n_peids; i++) {
            if (i) fputs(", ", w->log);
            json_str(w->log, peids[i].s, peids[i].len);
        }
        fputs("], \"matched\": [", w->log);
        for (uint32_t i = 0; i < u; i++) {
            if (i) fputs(", ", w->log);
            json_str(w->log, w->keys[i], strlen(w->keys[i]));
        }
        fputs("]}\n", w->log);
        w->c.log_lines++;
    }
    return u ? WM_MQTT_PUB_MATCHED : WM_MQTT_PUB_NO_MATCH;
}

struct wm_match_worker *wm_match_worker_new(struct wm_match_table *t, const char *log_path, char *err, size_t errlen)
{
    struct wm_match_worker *w = calloc(1, sizeof *w);
    if (!w) goto nomem;
    w->t = t;
    uint32_t cap = t->max_subs;
    w->res.subs = malloc(sizeof(uint32_t) * cap);
    w->res.subs_cap = cap;
    w->res.members = malloc(sizeof(uint32_t) * cap);
    w->res.members_cap = cap;
    w->res.groups = malloc(sizeof(wm_match_group) * cap);
    w->res.groups_cap = cap;
    w->keys = malloc(sizeof(char *) * 2 * (size_t)cap);
    w->peids = calloc(1, sizeof *w->peids);
    if (!w->res.subs || !w->res.members || !w->res.groups || !w->keys || !w->peids) goto nomem;
    w->r = wm_matcher_reader_new(t->m);
    if (!w->r) {
        snprintf(err, errlen, "cannot register a matcher reader");
        wm_match_worker_free(w);
        return NULL;
    }
    if (log_path) {
        w->log = fopen(log_path, "w");
        if (!w->log) {
            snprintf(err, errlen, "--match-log %s: %s", log_path, strerror(errno));
            wm_match_worker_free(w);
            return NULL;
        }
        w->logbuf = malloc(1 << 20);
        if (w->logbuf) setvbuf(w->log, w->logbuf, _IOFBF, 1 << 20);
    }
    return w;
nomem:
    snprintf(err, errlen, "out of memory");
    wm_match_worker_free(w);
    return NULL;
}

void wm_match_worker_free(struct wm_match_worker *w)
{
    if (!w) return;
    if (w->log) fclose(w->log);
    free(w->logbuf);
    if (w->r) {
        rte_spinlock_lock(&w->t->lock);
        w->t->c.lookups += w->c.lookups;
        w->t->c.lookup_errors += w->c.lookup_errors;
        w->t->c.log_lines += w->c.log_lines;
        rte_spinlock_unlock(&w->t->lock);
        wm_matcher_reader_free(w->r);
    }
    free(w->res.subs);
    free(w->res.members);
    free(w->res.groups);
    free(w->keys);
    free(w->peids);
    free(w);
}

struct wm_mqtt_sink wm_match_worker_sink(struct wm_match_worker *w)
{
    struct wm_mqtt_sink s = {w_subscribe, w_unsubscribe, w_publish, w};
    return s;
}

void wm_match_worker_quiescent(struct wm_match_worker *w, uint64_t now_ns)
{
    wm_matcher_quiescent(w->r);
    if (now_ns < w->next_reclaim_ns) return;
    w->next_reclaim_ns = now_ns + 100000000ull; /* every 100 ms */
    if (!w->t->pending || !rte_spinlock_trylock(&w->t->lock)) return;
    /* Offline while waiting, so this worker never holds back the grace
     * period it waits for. */
    wm_matcher_reader_offline(w->r);
    struct sub_node *p = w->t->pending;
    w->t->pending = NULL;
    wm_matcher_reclaim(w->t->m, true);
    rte_spinlock_unlock(&w->t->lock);
    wm_matcher_reader_online(w->r);
    while (p) {
        struct sub_node *nx = p->next;
        node_free(p);
        p = nx;
    }
}
