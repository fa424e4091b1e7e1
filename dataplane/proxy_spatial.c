/* See proxy_spatial.h. */
#include "dataplane/proxy_spatial.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/resolution.h"
#include "control/resolution_compile.h"

struct wm_proxy_spatial {
    wm_resolution *res;
    wm_matcher *m;
    uint32_t subs;               /* what wm_proxy_spatial_open was asked to make room for */
    uint32_t n_nbhds;
    wm_resolution_nbhd *nbhds;   /* [n_nbhds], views into the loaded file (control/resolution.h: a copy of its own) */
};

void wm_proxy_spatial_close(wm_proxy_spatial *sp)
{
    if (!sp) return;
    wm_matcher_free(sp->m);
    wm_resolution_close(sp->res);
    free(sp->nbhds);
    free(sp);
}

wm_proxy_spatial *wm_proxy_spatial_open(const char *path, uint32_t subs, char *err, size_t errcap)
{
    if (subs > WM_PROXY_SPATIAL_SUBS_MAX) subs = WM_PROXY_SPATIAL_SUBS_MAX;
    wm_proxy_spatial *sp = calloc(1, sizeof *sp);
    if (!sp) { snprintf(err, errcap, "out of memory"); return NULL; }
    sp->subs = subs;
    wm_resolution_error re;
    sp->res = wm_resolution_open(path, &re);
    if (!sp->res) {
        wm_load_error le;
        wm_resolution_error_load(&re, path, &le);
        wm_load_error_format(&le, err, errcap);
        wm_proxy_spatial_close(sp);
        return NULL;
    }
    sp->n_nbhds = wm_resolution_count(sp->res);
    uint32_t n_peids = wm_resolution_peid_count(sp->res);
    /* No bound of the proxy's own: a neighborhood's subscriptions get the
     * session's next Subscription Identifier, not one derived from its index
     * (dataplane/proxy_filter.h), so only the matcher's 32-bit ids limit the
     * count (and a record's index UINT32_MAX means "not in the file"). */
    if (sp->n_nbhds > UINT32_MAX - 16 || n_peids > UINT32_MAX - 1024) {
        snprintf(err, errcap, "%s: %u neighborhoods and %u peids: more than the matcher's 32-bit ids hold", path,
                 sp->n_nbhds, n_peids);
        wm_proxy_spatial_close(sp);
        return NULL;
    }
    wm_matcher_config mc = { 0 };
    /* Room for the file's peids and neighborhoods, and for the --prefilter
     * registry's subscriptions: none without it (the matcher's tables are
     * arrays of their bound, allocated whole; with its default of 1 Mi
     * subscriptions a proxy without --prefilter reported 225 MB of heap for
     * tables it never used, REVIEW14 finding 6). Each subscription adds at
     * most one filter, one cell and one group, and at most max_levels trie
     * nodes (the registry widens a deeper filter to that), so subs bounds
     * them all; the trie within the cap. 0 is "the default" to the matcher,
     * hence 1 for none. */
    mc.max_peids = n_peids + 1024;
    mc.max_nbhds = sp->n_nbhds + 16;
    mc.max_subs = subs ? subs : 1;
    mc.max_groups = mc.max_subs < (1u << 16) ? mc.max_subs : 1u << 16;
    mc.max_levels = 64;
    uint64_t nodes = (uint64_t)mc.max_subs * mc.max_levels;
    mc.max_trie_nodes = nodes < WM_PROXY_SPATIAL_SUBS_MAX ? (uint32_t)nodes : WM_PROXY_SPATIAL_SUBS_MAX;
    if (mc.max_trie_nodes < mc.max_subs) mc.max_trie_nodes = mc.max_subs;
    /* Test hook (tests/integration/proxy_prefilter_deep.sh): fewer wildcard
     * trie nodes than sized above, so that a test fills them with a few
     * SUBSCRIBEs. Not for production use. */
    const char *tn = getenv("WM_PROXY_TEST_MATCHER_NODES");
    if (tn && atoi(tn) > 0) mc.max_trie_nodes = (uint32_t)atoi(tn);
    sp->m = wm_matcher_new(&mc);
    sp->nbhds = calloc(sp->n_nbhds ? sp->n_nbhds : 1, sizeof *sp->nbhds);
    if (!sp->m || !sp->nbhds) {
        snprintf(err, errcap, "out of memory");
        wm_proxy_spatial_close(sp);
        return NULL;
    }
    char why[400];
    if (wm_resolution_compile(sp->m, sp->res, why, sizeof why)) {
        snprintf(err, errcap, "%s: %s", path, why);
        wm_proxy_spatial_close(sp);
        return NULL;
    }
    for (uint32_t i = 0; i < sp->n_nbhds; i++) wm_resolution_get(sp->res, i, &sp->nbhds[i]);
    /* The membership test relies on interned id == dictionary index. */
    for (uint32_t i = 0; i < n_peids; i++) {
        const char *p = wm_resolution_peid(sp->res, i);
        if (wm_matcher_peid_find(sp->m, p, strlen(p)) != i) {
            snprintf(err, errcap, "%s: peid dictionary entry %u was interned out of order", path, i);
            wm_proxy_spatial_close(sp);
            return NULL;
        }
    }
    return sp;
}

uint32_t wm_proxy_spatial_nbhd_count(const wm_proxy_spatial *sp) { return sp->n_nbhds; }

int64_t wm_proxy_spatial_nbhd(const wm_proxy_spatial *sp, const uint8_t *name, uint32_t len)
{
    char buf[256];
    char *s = len < sizeof buf ? buf : malloc((size_t)len + 1);
    if (!s) return -1;
    memcpy(s, name, len);
    s[len] = 0;
    /* A name with a NUL inside can name nothing in the file. */
    int64_t i = strlen(s) == len ? wm_resolution_find(sp->res, s) : -1;
    if (s != buf) free(s);
    return i;
}

const char *wm_proxy_spatial_nbhd_name(const wm_proxy_spatial *sp, uint32_t i)
{
    return i < sp->n_nbhds ? sp->nbhds[i].name : NULL;
}

uint32_t wm_proxy_spatial_peid(const wm_proxy_spatial *sp, const uint8_t *peid, uint32_t len)
{
    return wm_matcher_peid_find(sp->m, (const char *)peid, len);
}

bool wm_proxy_spatial_contains(const wm_proxy_spatial *sp, uint32_t nbhd, uint32_t peid)
{
    if (nbhd >= sp->n_nbhds || peid == WM_PEID_NONE) return false;
    const uint32_t *a = sp->nbhds[nbhd].result;
    uint32_t lo = 0, hi = sp->nbhds[nbhd].result_len;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] == peid) return true;
        if (a[mid] < peid) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

wm_matcher *wm_proxy_spatial_matcher(const wm_proxy_spatial *sp) { return sp->m; }

uint32_t wm_proxy_spatial_subs(const wm_proxy_spatial *sp) { return sp->subs; }
