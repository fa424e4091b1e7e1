/* See proxy_share.h. A chained hash table of groups, grown by doubling. */
#include "dataplane/proxy_share.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct group {
    struct group *next;
    char *filter;          /* "$share/G/F", not NUL-terminated */
    uint32_t len;
    char *nbhd, *xpath;    /* the members' spec, NULL = none */
    uint64_t refs;
} group;

struct wm_proxy_shares {
    pthread_mutex_t mu;
    group **b;
    uint32_t nb, n;        /* buckets (a power of 2), groups */
};

static uint32_t hash(const char *p, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 16777619u;
    return h;
}

wm_proxy_shares *wm_proxy_shares_new(void)
{
    wm_proxy_shares *t = calloc(1, sizeof *t);
    if (!t || !(t->b = calloc(64, sizeof *t->b))) {
        free(t);
        return NULL;
    }
    t->nb = 64;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

static void group_free(group *g)
{
    free(g->filter);
    free(g->nbhd);
    free(g->xpath);
    free(g);
}

void wm_proxy_shares_free(wm_proxy_shares *t)
{
    if (!t) return;
    for (uint32_t i = 0; i < t->nb; i++)
        for (group *g = t->b[i], *nx; g; g = nx) { nx = g->next; group_free(g); }
    free(t->b);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static group **link_of(wm_proxy_shares *t, const char *filter, uint32_t len)
{
    group **l = &t->b[hash(filter, len) & (t->nb - 1)];
    while (*l && !((*l)->len == len && memcmp((*l)->filter, filter, len) == 0)) l = &(*l)->next;
    return l;
}

/* Doubles the buckets when groups outnumber them (out of memory: stays). */
static void grow(wm_proxy_shares *t)
{
    if (t->n < t->nb || t->nb >= (1u << 24)) return;
    group **nb = calloc((size_t)t->nb * 2, sizeof *nb);
    if (!nb) return;
    for (uint32_t i = 0; i < t->nb; i++)
        for (group *g = t->b[i], *nx; g; g = nx) {
            nx = g->next;
            uint32_t k = hash(g->filter, g->len) & (t->nb * 2 - 1);
            g->next = nb[k];
            nb[k] = g;
        }
    free(t->b);
    t->b = nb;
    t->nb *= 2;
}

static bool same(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static char *dup_or_null(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *oom = true;
    return d;
}

/* The group's spec becomes (nbhd, xpath); -1 (unchanged) on out of memory. */
static int set_spec(group *g, const char *nbhd, const char *xpath)
{
    bool oom = false;
    char *n = dup_or_null(nbhd, &oom), *x = dup_or_null(xpath, &oom);
    if (oom) {
        free(n);
        free(x);
        return -1;
    }
    free(g->nbhd);
    free(g->xpath);
    g->nbhd = n;
    g->xpath = x;
    return 0;
}

int wm_proxy_shares_ref(wm_proxy_shares *t, const char *filter, uint32_t len, const char *nbhd, const char *xpath,
                        uint64_t own, bool force, char *why, size_t whylen)
{
    int rc = 0;
    pthread_mutex_lock(&t->mu);
    group **l = link_of(t, filter, len), *g = *l;
    if (g) {
        if ((!same(g->nbhd, nbhd) || !same(g->xpath, xpath)) && g->refs <= own) {
            /* only the caller's records, which this one replaces */
            if (set_spec(g, nbhd, xpath)) rc = -1;
            else g->refs++;
            goto out;
        }
        if (!same(g->nbhd, nbhd) || !same(g->xpath, xpath)) {
            snprintf(why, whylen, "its members through this proxy use %s%s%s and %s%.200s%s", g->nbhd ? "neighborhood \"" : "no neighborhood",
                     g->nbhd ? g->nbhd : "", g->nbhd ? "\"" : "", g->xpath ? "xpath \"" : "no xpath",
                     g->xpath ? g->xpath : "", g->xpath ? "\"" : "");
            rc = 1;
            if (!force) goto out;
        }
        g->refs++;
        goto out;
    }
    bool oom = false;
    if (!(g = calloc(1, sizeof *g)) || !(g->filter = malloc(len ? len : 1))) {
        free(g);
        rc = -1;
        goto out;
    }
    memcpy(g->filter, filter, len);
    g->len = len;
    g->nbhd = dup_or_null(nbhd, &oom);
    g->xpath = dup_or_null(xpath, &oom);
    if (oom) {
        group_free(g);
        rc = -1;
        goto out;
    }
    g->refs = 1;
    g->next = NULL;
    *l = g;
    t->n++;
    grow(t);
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void wm_proxy_shares_unref(wm_proxy_shares *t, const char *filter, uint32_t len)
{
    pthread_mutex_lock(&t->mu);
    group **l = link_of(t, filter, len), *g = *l;
    if (g && --g->refs == 0) {
        *l = g->next;
        group_free(g);
        t->n--;
    }
    pthread_mutex_unlock(&t->mu);
}

void wm_proxy_shares_respec(wm_proxy_shares *t, const char *filter, uint32_t len, const char *nbhd, const char *xpath,
                            uint64_t own)
{
    pthread_mutex_lock(&t->mu);
    group *g = *link_of(t, filter, len);
    if (g && g->refs <= own && (!same(g->nbhd, nbhd) || !same(g->xpath, xpath))) set_spec(g, nbhd, xpath);
    pthread_mutex_unlock(&t->mu);
}
