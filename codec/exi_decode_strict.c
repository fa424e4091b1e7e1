/* EXI strict bit-packed decode loop (W3C EXI 1.0 Second Edition §8.5.4.4.2
 * strict grammars, §6.2 event codes, §7.1 values, §7.3.3 value hits).
 *
 * Sensor payloads are mostly declared attributes and end tags. The general
 * path (codec/exi_decode.c) pays per event for what strict streams never
 * have: second-level code lists, the reader struct in memory, a value
 * dispatch apart from the event dispatch, the event built field by field.
 * This loop is specialised by tables built once per grammar: per state its
 * productions and code width, per production its fused event and value kind
 * (prod_op) and next state, per local name the event with that qname already
 * filled in. An event then costs a table lookup, a bit peek from a 64-bit
 * window and its value written into the event prepared for its production
 * (no event is built or copied); the bit position, the depth and the
 * callback stay in locals. With every value's text (no limits.typed_only)
 * numbers and booleans are formatted by the general path's own formatters
 * (codec/exi_types.h), so decoding to XML stays in the loop too.
 * The loop itself is codec/exi_decode_strict_loop.h, a template: this file
 * holds the tables and the loop's instance for the event callback, the
 * default of every decoder; a consumer may run an instance of its own
 * (wm_exi_decoder strict_loop). Any event it does not decode itself goes,
 * from its first bit (or, for a declared attribute, from its value), through
 * the general step, and the loop changes nothing before it knows it can
 * finish an event, so the two paths cannot disagree
 * (tests/unit/test_exi_strict.c checks it event by event).
 */
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode_int.h"
#include "codec/exi_rt.h"

struct wm_exi_strict_tables *wm_exi_decode_strict_tables(const wm_exi_grammar *g, const uint8_t *prod_op)
{
    struct wm_exi_strict_tables *t = calloc(1, sizeof *t);
    if (!t || !prod_op) goto fail;
    t->states = malloc((g->n_states ? g->n_states : 1) * sizeof *t->states);
    t->prods = malloc((g->n_prods ? g->n_prods : 1) * sizeof *t->prods);
    t->elems = calloc(g->n_elems ? g->n_elems : 1, sizeof *t->elems);
    t->names = calloc(g->n_lids ? g->n_lids : 1, sizeof *t->names);
    if (!t->states || !t->prods || !t->elems || !t->names) goto fail;
    t->n_states = g->n_states;
    t->n_names = g->n_lids;
    for (uint32_t i = 0; i < g->n_states; i++) {
        const wm_exi_state *s = &g->states[i];
        t->states[i] = (struct wm_exi_strict_state){
            .first = s->first, .n = s->n, .w = (uint8_t)wm_exi_code_width(s->n), .flags = s->flags };
    }
    /* the qname views are the string table's seeded ones (the same pointers) */
    for (uint32_t lid = 0; lid < g->n_lids; lid++) {
        uint32_t uri = g->lname_uri[lid];
        wm_exi_event *e = &t->names[lid];
        e->type = WM_EXI_EV_EE;
        e->uri_id = uri;
        e->lid = lid;
        e->uri = (wm_exi_sview){ g->uris[uri], (uint32_t)strlen(g->uris[uri]) };
        e->local = (wm_exi_sview){ g->lnames[lid], (uint32_t)strlen(g->lnames[lid]) };
    }
    /* an element whose start state is out of range keeps n = 0: its SE is
     * left to the general path (below) */
    for (uint32_t i = 0; i < g->n_elems; i++) {
        const wm_exi_elem *e = &g->elems[i];
        if (e->type >= g->n_tgrams || g->tgrams[e->type].start >= g->n_states) continue;
        const wm_exi_state *s = &g->states[g->tgrams[e->type].start];
        /* the frame-dependent width of the loop, fixed by the declaration */
        unsigned w = (s->flags & WM_EXI_S_START) ? wm_exi_code_width(s->n + (g->tgrams[e->type].xsi_type_strict || e->nillable))
                                                 : wm_exi_code_width(s->n);
        t->elems[i] = (struct wm_exi_strict_elem){ .state = g->tgrams[e->type].start, .tgram = e->type, .first = s->first,
                                                   .n = s->n, .w = (uint8_t)w, .nillable = e->nillable };
    }
    for (uint32_t i = 0; i < g->n_prods; i++) {
        const wm_exi_prod *p = &g->prods[i];
        uint8_t op = prod_op[i];
        /* a qname the name table does not give exactly, a next state out of
         * range, an element the table above does not have: the general path */
        if (op != WM_EXI_OP_EE && op != WM_EXI_OP_TERM &&
            (p->lid >= g->n_lids || g->lname_uri[p->lid] != p->uri || p->next >= g->n_states))
            op = WM_EXI_OP_TERM;
        if (op == WM_EXI_OP_SE && (p->arg >= g->n_elems || !t->elems[p->arg].n)) op = WM_EXI_OP_TERM;
        struct wm_exi_strict_prod *fp = &t->prods[i];
        *fp = (struct wm_exi_strict_prod){ .op = op, .next = p->next, .lid = p->lid, .arg = p->arg, .ev = { 0 } };
        if (op != WM_EXI_OP_TERM && op != WM_EXI_OP_EE) {
            fp->nfirst = t->states[p->next].first;
            fp->nn = t->states[p->next].n;
            fp->nw = t->states[p->next].w;
            fp->nstart = (t->states[p->next].flags & WM_EXI_S_START) != 0;
            static const uint8_t kind[] = { [WM_EXI_OP_AT_FLOAT] = WM_EXI_DT_FLOAT, [WM_EXI_OP_AT_INT] = WM_EXI_DT_INTEGER,
                                            [WM_EXI_OP_AT_BOOL] = WM_EXI_DT_BOOLEAN, [WM_EXI_OP_AT_STR] = WM_EXI_DT_STRING,
                                            [WM_EXI_OP_SE] = 0, [WM_EXI_OP_AT] = 0 };
            _Static_assert(sizeof kind == WM_EXI_OP_AT_STR + 1, "a value kind per prod_op kind");
            wm_exi_event *e = &fp->ev;
            *e = t->names[p->lid];
            e->type = op == WM_EXI_OP_SE ? WM_EXI_EV_SE : WM_EXI_EV_AT;
            e->value.kind = kind[op];
        }
    }
    return t;
fail:
    wm_exi_decode_strict_tables_free(t);
    return NULL;
}

void wm_exi_decode_strict_tables_free(struct wm_exi_strict_tables *t)
{
    if (!t) return;
    free(t->states);
    free(t->prods);
    free(t->elems);
    free(t->names);
    free(t);
}

/* The callback's instance: every event to fn(user, event). */
#define WM_SL_FN wm_exi_decode_strict_run
#define WM_SL_LINKAGE
#define WM_SL_TYPED_ONLY 0
#define WM_SL_LOCALS const wm_exi_event_fn fn = c->fn;
#define WM_SL_ON_SE(pe)                                                                                     \
    do {                                                                                                    \
        if (fn(user, (pe))) goto stop;                                                                      \
    } while (0)
#define WM_SL_ON_EE(pe) WM_SL_ON_SE(pe)
#define WM_SL_ON_AT(p, pe, kind)                                                                                  \
    do {                                                                                                    \
        (pe)->depth = depth;                                                                                \
        WM_SL_ON_SE(pe);                                                                                    \
    } while (0)
#include "codec/exi_decode_strict_loop.h"
