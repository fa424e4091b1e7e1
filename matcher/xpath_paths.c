/* The path part of the filter automaton: every query's location steps form
 * one NFA over element names (state (q, i) = query q has matched i steps; a
 * '//' step keeps its state on any name), made deterministic by subset
 * construction over the alphabet of names the queries mention. The
 * deterministic states are the filter grammar's path states (Käbisch et al.,
 * WEBIST 2014, §2.2); the empty set is the dead state (nothing below can
 * match), the states where queries complete are accepting or predicate
 * states. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/intern.h"
#include "matcher/xpath_filter_int.h"

static bool test_matches(const wm_xp_name *t, const xpf_sym *s)
{
    if (t->any_uri) return true;
    if (!s->uri) return false;
    if (strcmp(s->uri, t->uri)) return false;
    if (!t->local) return true;
    return s->local && !strcmp(s->local, t->local);
}

static uint32_t find_sym(const wm_xpf *f, const char *uri, const char *local)
{
    for (uint32_t i = 1; i < f->n_syms; i++) {
        const xpf_sym *s = &f->syms[i];
        if (!strcmp(s->uri, uri) && (local ? s->local && !strcmp(s->local, local) : !s->local)) return i;
    }
    return XPF_NONE;
}

static bool add_sym(wm_xpf *f, uint32_t *cap, const char *uri, const char *local)
{
    if (find_sym(f, uri, local) != XPF_NONE) return true;
    if (f->n_syms == *cap) {
        uint32_t nc = *cap * 2;
        xpf_sym *ns = realloc(f->syms, nc * sizeof *ns);
        if (!ns) return false;
        f->syms = ns;
        *cap = nc;
    }
    f->syms[f->n_syms].uri = wm_xpf_keep(f, uri, strlen(uri));
    f->syms[f->n_syms].local = local ? wm_xpf_keep(f, local, strlen(local)) : NULL;
    if (!f->syms[f->n_syms].uri || (local && !f->syms[f->n_syms].local)) return false;
    f->n_syms++;
    return true;
}

uint32_t wm_xpf_symbol(const wm_xpf *f, uint32_t uri_id, uint32_t lid, const wm_exi_sview *uri, const wm_exi_sview *local)
{
    if (lid < f->g->n_lids && uri_id < f->g->n_uris) return f->sym_of_lid[lid];
    /* a name learned from the stream (non-strict or schema-less): by text */
    uint32_t other = 0;
    for (uint32_t i = 1; i < f->n_syms; i++) {
        const xpf_sym *s = &f->syms[i];
        if (!wm_xpf_sv_eq(s->uri, uri)) continue;
        if (!s->local) other = i;
        else if (wm_xpf_sv_eq(s->local, local)) return i;
    }
    return other;
}

typedef struct set_tab {
    uint32_t *ids;          /* all sets, concatenated */
    size_t n_ids, cap_ids;
    uint32_t *off, *len;    /* per state */
    uint32_t n, cap;
    uint32_t *hash;         /* open addressing: state + 1, 0 = empty */
    uint32_t mask;
} set_tab;

static uint64_t set_hash(const uint32_t *s, uint32_t n)
{
    static const uint32_t none = 0;
    return wm_hash_bytes(n, n ? s : &none, n * sizeof *s); /* the dead state's set is empty */
}

static bool grow_hash(set_tab *t)
{
    uint32_t nm = t->mask ? t->mask * 2 + 1 : 255;
    uint32_t *nh = calloc((size_t)nm + 1, sizeof *nh);
    if (!nh) return false;
    for (uint32_t st = 0; st < t->n; st++) {
        uint64_t h = set_hash(t->ids + t->off[st], t->len[st]);
        uint32_t k = (uint32_t)h & nm;
        while (nh[k]) k = (k + 1) & nm;
        nh[k] = st + 1;
    }
    free(t->hash);
    t->hash = nh;
    t->mask = nm;
    return true;
}

/* Finds or adds set s[0..n) (sorted); *added tells which. XPF_NONE on OOM/limit. */
static uint32_t set_intern(set_tab *t, const uint32_t *s, uint32_t n, bool *added)
{
    *added = false;
    if ((t->n + 1) * 2 > t->mask && !grow_hash(t)) return XPF_NONE;
    uint64_t h = set_hash(s, n);
    uint32_t k = (uint32_t)h & t->mask;
    while (t->hash[k]) {
        uint32_t st = t->hash[k] - 1;
        if (t->len[st] == n && !memcmp(t->ids + t->off[st], s, n * sizeof *s)) return st;
        k = (k + 1) & t->mask;
    }
    if (t->n >= WM_XPF_MAX_STATES) return XPF_NONE;
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 64;
        uint32_t *no = realloc(t->off, nc * sizeof *no), *nl;
        if (!no) return XPF_NONE;
        t->off = no;
        if (!(nl = realloc(t->len, nc * sizeof *nl))) return XPF_NONE;
        t->len = nl;
        t->cap = nc;
    }
    if (t->n_ids + n > t->cap_ids) {
        size_t nc = (t->cap_ids + n) * 2;
        uint32_t *ni = realloc(t->ids, nc * sizeof *ni);
        if (!ni) return XPF_NONE;
        t->ids = ni;
        t->cap_ids = nc;
    }
    if (n) memcpy(t->ids + t->n_ids, s, n * sizeof *s);
    t->off[t->n] = (uint32_t)t->n_ids;
    t->len[t->n] = n;
    t->n_ids += n;
    t->hash[k] = t->n + 1;
    *added = true;
    return t->n++;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static wm_xpf_status limit(wm_xpf_error *err, const char *msg)
{
    if (err) {
        err->query = UINT32_MAX;
        err->pos = 0;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return WM_XPF_E_LIMIT;
}

wm_xpf_status wm_xpf_build_paths(wm_xpf *f, const wm_xp_query *pq, wm_xpf_error *err)
{
    const wm_exi_grammar *g = f->g;
    wm_xpf_status rc = WM_XPF_E_MEMORY;
    /* alphabet */
    uint32_t cap = 16;
    if (!(f->syms = calloc(cap, sizeof *f->syms))) return WM_XPF_E_MEMORY;
    f->n_syms = 1;
    for (uint32_t q = 0; q < f->n_q; q++)
        for (uint32_t i = 0; i < pq[q].n_steps; i++) {
            const wm_xp_name *t = &pq[q].steps[i].name;
            if (!t->any_uri && !add_sym(f, &cap, t->uri, t->local)) return WM_XPF_E_MEMORY;
        }
    if (!(f->sym_of_lid = calloc(g->n_lids ? g->n_lids : 1, sizeof *f->sym_of_lid))) return WM_XPF_E_MEMORY;
    for (uint32_t lid = 0; lid < g->n_lids; lid++) {
        const char *uri = g->uris[g->lname_uri[lid]];
        uint32_t s = find_sym(f, uri, g->lnames[lid]);
        if (s == XPF_NONE) s = find_sym(f, uri, NULL);
        f->sym_of_lid[lid] = s == XPF_NONE ? 0 : s;
    }
    /* NFA ids */
    uint32_t n_nfa = 0;
    for (uint32_t q = 0; q < f->n_q; q++) {
        f->qs[q].nfa0 = n_nfa;
        f->qs[q].n_steps = pq[q].n_steps;
        n_nfa += pq[q].n_steps + 1;
    }
    uint32_t *nq = malloc((n_nfa + 1) * sizeof *nq), *tmp = malloc((n_nfa + 1) * sizeof *tmp);
    uint32_t *mark = calloc(n_nfa + 1, sizeof *mark);
    set_tab t = { 0 };
    uint32_t cap_trans = 0, cap_ds = 0;
    if (!nq || !tmp || !mark) goto out;
    for (uint32_t q = 0; q < f->n_q; q++)
        for (uint32_t i = 0; i <= pq[q].n_steps; i++) nq[f->qs[q].nfa0 + i] = q;
    bool added;
    if (set_intern(&t, NULL, 0, &added) != 0) goto out; /* dead */
    for (uint32_t q = 0; q < f->n_q; q++) tmp[q] = f->qs[q].nfa0;
    if (set_intern(&t, tmp, f->n_q, &added) != 1) goto out; /* start (query order = ascending ids) */
    uint32_t epoch = 0;
    for (uint32_t st = 0; st < t.n; st++) {
        if ((size_t)t.n * f->n_syms > (64u << 20)) {
            rc = limit(err, "path automaton too large (states x names > 64M)");
            goto out;
        }
        if ((size_t)(st + 1) * f->n_syms > cap_trans) {
            size_t nc = ((size_t)t.n * 2 + 16) * f->n_syms;
            uint32_t *ntr = realloc(f->trans, nc * sizeof *ntr);
            if (!ntr) goto out;
            f->trans = ntr;
            cap_trans = (uint32_t)nc;
        }
        for (uint32_t s = 0; s < f->n_syms; s++) {
            uint32_t n = 0;
            epoch++;
            for (uint32_t k = 0; k < t.len[st]; k++) {
                uint32_t id = t.ids[t.off[st] + k], q = nq[id], i = id - f->qs[q].nfa0;
                if (i >= pq[q].n_steps) continue;
                const wm_xp_step *step = &pq[q].steps[i];
                if (test_matches(&step->name, &f->syms[s]) && mark[id + 1] != epoch) {
                    mark[id + 1] = epoch;
                    tmp[n++] = id + 1;
                }
                if (step->axis == WM_XP_DESC && mark[id] != epoch) {
                    mark[id] = epoch;
                    tmp[n++] = id;
                }
            }
            qsort(tmp, n, sizeof *tmp, cmp_u32);
            uint32_t to = set_intern(&t, tmp, n, &added);
            if (to == XPF_NONE) {
                if (t.n >= WM_XPF_MAX_STATES) rc = limit(err, "path automaton has more than WM_XPF_MAX_STATES states");
                goto out;
            }
            f->trans[(size_t)st * f->n_syms + s] = to;
        }
    }
    f->n_dstates = t.n;
    if (!(f->dstates = calloc(t.n, sizeof *f->dstates))) goto out;
    (void)cap_ds;
    /* accepting and predicate states */
    uint32_t n_acc = 0, cap_acc = 0;
    for (uint32_t st = 0; st < t.n; st++) {
        xpf_dstate *d = &f->dstates[st];
        d->pstate = XPF_NONE;
        d->acc_off = n_acc;
        uint32_t np = 0;
        for (uint32_t k = 0; k < t.len[st]; k++) {
            uint32_t id = t.ids[t.off[st] + k], q = nq[id];
            if (id - f->qs[q].nfa0 != pq[q].n_steps) continue;
            if (f->qs[q].pred != XPF_NONE) {
                tmp[np++] = q;
                continue;
            }
            if (n_acc == cap_acc) {
                cap_acc = cap_acc ? cap_acc * 2 : 64;
                uint32_t *na = realloc(f->acc, cap_acc * sizeof *na);
                if (!na) goto out;
                f->acc = na;
            }
            f->acc[n_acc++] = q;
        }
        d->n_acc = n_acc - d->acc_off;
        if (np) {
            xpf_pstate *np2 = realloc(f->pstates, (f->n_pstates + 1) * sizeof *np2);
            if (!np2) goto out;
            f->pstates = np2;
            xpf_pstate *ps = &f->pstates[f->n_pstates];
            memset(ps, 0, sizeof *ps);
            if (!(ps->qs = malloc(np * sizeof *ps->qs))) goto out;
            memcpy(ps->qs, tmp, np * sizeof *tmp);
            ps->n_q = np;
            d->pstate = f->n_pstates++;
        }
    }
    rc = WM_XPF_OK;
out:
    free(nq);
    free(tmp);
    free(mark);
    free(t.ids);
    free(t.off);
    free(t.len);
    free(t.hash);
    return rc;
}

/* Marks in bits every path state reachable from d (d itself when self):
 * below a wildcard any name may come. Those states' queries are possible
 * (possible, when not NULL). */
static void reach_all(const wm_xpf *f, uint32_t d, bool self, uint8_t *bits, uint32_t *wstack, uint8_t *possible)
{
    size_t wsp = 0;
    if (self) {
        if (bits[d >> 3] >> (d & 7) & 1) return;
        bits[d >> 3] |= (uint8_t)(1u << (d & 7));
        wstack[wsp++] = d;
    } else
        for (uint32_t y = 0; y < f->n_syms; y++) {
            uint32_t to = f->trans[(size_t)d * f->n_syms + y];
            if (to && !(bits[to >> 3] >> (to & 7) & 1)) {
                bits[to >> 3] |= (uint8_t)(1u << (to & 7));
                wstack[wsp++] = to;
            }
        }
    while (wsp) {
        uint32_t x = wstack[--wsp];
        const xpf_dstate *xs = &f->dstates[x];
        if (possible) {
            for (uint32_t i = 0; i < xs->n_acc; i++) possible[f->acc[xs->acc_off + i]] = 1;
            if (xs->pstate != XPF_NONE)
                for (uint32_t i = 0; i < f->pstates[xs->pstate].n_q; i++) possible[f->pstates[xs->pstate].qs[i]] = 1;
        }
        for (uint32_t y = 0; y < f->n_syms; y++) {
            uint32_t to = f->trans[(size_t)x * f->n_syms + y];
            if (to && !(bits[to >> 3] >> (to & 7) & 1)) {
                bits[to >> 3] |= (uint8_t)(1u << (to & 7));
                wstack[wsp++] = to;
            }
        }
    }
}

/* The filter grammar (Käbisch et al. §2.2): the product of the path
 * automaton with the schema's element grammars, pairs (path state, element
 * declaration), keeping only pairs whose path state is alive. Two analyses
 * run it:
 *   impossible (tp NULL): from the document's global elements down through
 *     every SE(qname) production; queries accepted by no reachable pair
 *     cannot select anything in a strict stream. Below an element whose
 *     content has a wildcard, or whose type xsi:type may switch (a strict
 *     stream may name any type there), any name may come: every path state
 *     reachable from there counts as reached.
 *   typing (tp): which declarations a query's last step can name, for the
 *     types of its values (xpath_types.c). Any declaration may start (a
 *     fragment's elements, §8.5.2), an element's content is that of every
 *     type xsi:type may give it in a valid document (tp->derived: the types
 *     derived from its declared one), an SE of several same-named
 *     declarations (the relaxed ElementFragment grammar, §8.5.3) goes to all
 *     of them; below a wildcard the path states reached are marked
 *     (tp->wild), their declarations unknown.
 * Skipped for schema-less grammars. */
static wm_xpf_status product(wm_xpf *f, xpf_typing *tp)
{
    const wm_exi_grammar *g = f->g;
    if (g->schemaless || !g->n_elems) return WM_XPF_OK;
    size_t n_pairs = (size_t)f->n_dstates * g->n_elems;
    if (n_pairs > (256u << 20)) return WM_XPF_OK;
    wm_xpf_status rc = WM_XPF_E_MEMORY;
    uint8_t *seen = calloc((n_pairs + 7) / 8, 1), *possible = calloc(f->n_q ? f->n_q : 1, 1);
    uint32_t *first = calloc((size_t)g->n_tgrams + 1, sizeof *first), *order = malloc((g->n_states ? g->n_states : 1) * sizeof *order);
    uint64_t *stack = malloc(((n_pairs < 65536 ? n_pairs : 65536) + 1) * sizeof *stack);
    size_t sp = 0, cap = n_pairs < 65536 ? n_pairs : 65536;
    uint8_t *wild = calloc(f->n_dstates / 8 + 1, 1);       /* path states closed under "any name" */
    uint32_t *wstack = malloc((f->n_dstates + 1) * sizeof *wstack);
    if (!seen || !possible || !first || !order || !stack || !wild || !wstack) goto out;
    /* states grouped by type grammar (counting sort) */
    for (uint32_t s = 0; s < g->n_states; s++)
        if (g->states[s].type < g->n_tgrams) first[g->states[s].type + 1]++;
    for (uint32_t t = 0; t < g->n_tgrams; t++) first[t + 1] += first[t];
    {
        uint32_t *fill = calloc((size_t)g->n_tgrams + 1, sizeof *fill);
        if (!fill) goto out;
        for (uint32_t s = 0; s < g->n_states; s++) {
            uint32_t t = g->states[s].type;
            if (t < g->n_tgrams) order[first[t] + fill[t]++] = s;
        }
        free(fill);
    }
#define PUSH(d, e)                                                                              \
    do {                                                                                        \
        size_t k_ = (size_t)(d) * g->n_elems + (e);                                             \
        if ((d) && !(seen[k_ >> 3] >> (k_ & 7) & 1)) {                                          \
            seen[k_ >> 3] |= (uint8_t)(1u << (k_ & 7));                                          \
            if (sp == cap) {                                                                    \
                cap *= 2;                                                                       \
                uint64_t *ns_ = realloc(stack, (cap + 1) * sizeof *stack);                      \
                if (!ns_) goto out;                                                             \
                stack = ns_;                                                                    \
            }                                                                                   \
            stack[sp++] = (uint64_t)(d) << 32 | (e);                                            \
            if (!tp) f->product_pairs++;                                                        \
        }                                                                                       \
    } while (0)
    if (tp)
        for (uint32_t e = 0; e < g->n_elems; e++) PUSH(f->trans[(size_t)1 * f->n_syms + f->sym_of_lid[g->elems[e].lid]], e);
    else
        for (uint32_t i = 0; i < g->n_doc; i++) {
            uint32_t e = g->doc_elems[i];
            PUSH(f->trans[(size_t)1 * f->n_syms + f->sym_of_lid[g->elems[e].lid]], e);
        }
    while (sp) {
        uint64_t top = stack[--sp];
        uint32_t d = (uint32_t)(top >> 32), e = (uint32_t)top;
        const xpf_dstate *ds = &f->dstates[d];
        for (uint32_t i = 0; i < ds->n_acc; i++) possible[f->acc[ds->acc_off + i]] = 1;
        if (ds->pstate != XPF_NONE)
            for (uint32_t i = 0; i < f->pstates[ds->pstate].n_q; i++) possible[f->pstates[ds->pstate].qs[i]] = 1;
        uint32_t t0 = g->elems[e].type;
        bool open = t0 >= g->n_tgrams || (!tp && g->tgrams[t0].xsi_type_strict); /* the type may switch */
        /* the element's content: its type's, and (typing) every type xsi:type may give it */
        uint32_t nt = tp && t0 < g->n_tgrams ? tp->doff[t0 + 1] - tp->doff[t0] : 1;
        for (uint32_t i = 0; !open && i < nt; i++) {
            uint32_t t = tp ? tp->dlist[tp->doff[t0] + i] : t0;
            for (uint32_t k = first[t]; !open && k < first[t + 1]; k++) {
                const wm_exi_state *st = &g->states[order[k]];
                for (uint32_t j = 0; j < st->n; j++) {
                    const wm_exi_prod *p = &g->prods[st->first + j];
                    if (p->term == WM_EXI_T_SE_URI || p->term == WM_EXI_T_SE_ANY || (!tp && p->term == WM_EXI_T_SE && p->arg >= g->n_elems))
                        open = true; /* a wildcard: any names below */
                    else if (p->term == WM_EXI_T_SE && p->arg >= g->n_elems) {
                        /* several declarations of this name (relaxed grammar): any of them */
                        uint32_t to = f->trans[(size_t)d * f->n_syms + f->sym_of_lid[p->lid]];
                        for (uint32_t x = 0; x < g->n_elems; x++)
                            if (g->elems[x].lid == p->lid && g->elems[x].uri == p->uri) PUSH(to, x);
                    } else if (p->term == WM_EXI_T_SE)
                        PUSH(f->trans[(size_t)d * f->n_syms + f->sym_of_lid[g->elems[p->arg].lid]], p->arg);
                }
            }
        }
        if (!open) continue;
        if (tp) reach_all(f, d, false, tp->wild, wstack, NULL); /* the children and below: declarations unknown */
        else reach_all(f, d, true, wild, wstack, possible);     /* below here any name may come */
    }
#undef PUSH
    if (tp) {
        tp->seen = seen;
        seen = NULL;
        rc = WM_XPF_OK;
        goto out;
    }
    for (uint32_t q = 0; q < f->n_q; q++) f->n_impossible += !possible[q];
    if (!(f->impossible = malloc((f->n_impossible ? f->n_impossible : 1) * sizeof *f->impossible))) goto out;
    for (uint32_t q = 0, k = 0; q < f->n_q; q++)
        if (!possible[q]) f->impossible[k++] = q;
    f->product_done = true;
    rc = WM_XPF_OK;
out:
    free(wild);
    free(wstack);
    free(seen);
    free(possible);
    free(first);
    free(order);
    free(stack);
    return rc;
}

wm_xpf_status wm_xpf_build_product(wm_xpf *f) { return product(f, NULL); }

wm_xpf_status wm_xpf_build_reach(wm_xpf *f, xpf_typing *tp) { return product(f, tp); }
