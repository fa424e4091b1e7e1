/* Internal: grammar run-time shared by the EXI decoder and encoder — the
 * element stack frame, learned built-in grammars (§8.4.3) and the lists of
 * undeclared productions a state offers (§8.5.4.4), so both directions agree
 * on every event code by construction. Not a public header. */
#ifndef WM_CODEC_EXI_RT_H
#define WM_CODEC_EXI_RT_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/exi_arena.h"
#include "codec/exi_grammar.h"
#include "codec/exi_header.h"
#include "codec/exi_strtab.h"

struct wm_exi_frame {
    uint32_t state;           /* schema-informed state, WM_EXI_NONE for built-in */
    uint32_t tgram;           /* schema-informed type grammar */
    uint32_t uri, lid;        /* element qname */
    uint32_t bi;              /* built-in grammar index */
    uint8_t bi_state;         /* 0 StartTagContent, 1 ElementContent */
    bool nillable;
    bool content2;            /* an undeclared SE/CH was seen: attributes are over */
};

typedef struct wm_exi_bi_prod {
    uint8_t term;             /* WM_EXI_T_SE, WM_EXI_T_AT, WM_EXI_T_EE, WM_EXI_T_CH */
    uint32_t uri, lid;
} wm_exi_bi_prod;

struct wm_exi_bi {
    wm_exi_bi_prod *stc, *ec; /* learned productions, oldest first (newest has code 0) */
    uint32_t n_stc, cap_stc, n_ec, cap_ec;
};

/* Undeclared / second-level productions. */
enum {
    WM_EXI_UD_EE, WM_EXI_UD_XSI_TYPE, WM_EXI_UD_XSI_NIL, WM_EXI_UD_AT_ANY, WM_EXI_UD_AT_INVALID,
    WM_EXI_UD_NS, WM_EXI_UD_SC, WM_EXI_UD_SE_ANY, WM_EXI_UD_CH, WM_EXI_UD_ER,
    WM_EXI_UD_CM, WM_EXI_UD_PI, WM_EXI_UD_DT, WM_EXI_UD_ED, WM_EXI_UD_SE_FRAG, WM_EXI_UD_AT_XSI_NIL_STRICT,
};

/* Second-level list of a schema-informed state in non-strict mode
 * (§8.5.4.4.1): [EE if the state has none], AT(xsi:type), AT(xsi:nil) in
 * Element_i,0, AT(*) and AT(*)[untyped] while attributes may come, NS/SC
 * when preserved, SE(*), CH[untyped], ER when preserved; CM/PI form the
 * third level. Returns the second-level count; *n3 the third-level count. */
static inline unsigned wm_exi_rt_schema_level2(const wm_exi_options *o, const wm_exi_state *s, bool content2,
                                               uint8_t *l2, uint8_t *l3, unsigned *n3)
{
    unsigned n = 0, k = 0;
    if (s->flags & (WM_EXI_S_EFRAG0 | WM_EXI_S_EFRAG)) {
        /* ElementFragment grammars (§8.5.3) already accept AT(*), SE(*), CH
         * and EE; only xsi:type/xsi:nil (first state) and the preserved
         * items remain undeclared */
        if (s->flags & WM_EXI_S_EFRAG0) {
            l2[n++] = WM_EXI_UD_XSI_TYPE;
            l2[n++] = WM_EXI_UD_XSI_NIL;
            if (o->preserve_prefixes) l2[n++] = WM_EXI_UD_NS;
        }
        if (o->preserve_dtd) l2[n++] = WM_EXI_UD_ER;
        if (o->preserve_comments) l3[k++] = WM_EXI_UD_CM;
        if (o->preserve_pis) l3[k++] = WM_EXI_UD_PI;
        *n3 = k;
        return n;
    }
    if (!(s->flags & WM_EXI_S_HAS_EE)) l2[n++] = WM_EXI_UD_EE;
    bool attrs = (s->flags & WM_EXI_S_ATTRS) && !content2;
    if ((s->flags & WM_EXI_S_START) && !content2) { l2[n++] = WM_EXI_UD_XSI_TYPE; l2[n++] = WM_EXI_UD_XSI_NIL; }
    if (attrs) { l2[n++] = WM_EXI_UD_AT_ANY; l2[n++] = WM_EXI_UD_AT_INVALID; }
    if ((s->flags & WM_EXI_S_START) && !content2 && o->preserve_prefixes) l2[n++] = WM_EXI_UD_NS;
    l2[n++] = WM_EXI_UD_SE_ANY;
    l2[n++] = WM_EXI_UD_CH;
    if (o->preserve_dtd) l2[n++] = WM_EXI_UD_ER;
    if (o->preserve_comments) l3[k++] = WM_EXI_UD_CM;
    if (o->preserve_pis) l3[k++] = WM_EXI_UD_PI;
    *n3 = k;
    return n;
}

/* Built-in StartTagContent second level (§8.4.3): EE, AT(*), NS, SC, SE(*),
 * CH, ER; CM/PI third level. ElementContent: SE(*), CH, ER; CM/PI. */
static inline unsigned wm_exi_rt_bi_level2(const wm_exi_options *o, bool stc, uint8_t *l2, uint8_t *l3, unsigned *n3)
{
    unsigned n = 0, k = 0;
    if (stc) {
        l2[n++] = WM_EXI_UD_EE;
        l2[n++] = WM_EXI_UD_AT_ANY;
        if (o->preserve_prefixes) l2[n++] = WM_EXI_UD_NS;
    }
    l2[n++] = WM_EXI_UD_SE_ANY;
    l2[n++] = WM_EXI_UD_CH;
    if (o->preserve_dtd) l2[n++] = WM_EXI_UD_ER;
    if (o->preserve_comments) l3[k++] = WM_EXI_UD_CM;
    if (o->preserve_pis) l3[k++] = WM_EXI_UD_PI;
    *n3 = k;
    return n;
}

/* Event codes offered by a schema-informed state for frame f: first-level
 * count n1 (the declared productions), then the second and third levels:
 * in strict mode only AT(xsi:type) and AT(xsi:nil) of the start state, which
 * §8.5.4.4.2 gives codes of length 2 (n.m, n.(m+1)); in non-strict mode the
 * undeclared productions. */
typedef struct wm_exi_codes {
    uint32_t n1;
    unsigned n2, n3;
    uint8_t l2[16], l3[4];
} wm_exi_codes;

/* Fills *c with the event codes of frame f's state (wm_exi_codes above). Pure:
 * reads g, o and f only. */
static inline void wm_exi_rt_codes(const wm_exi_grammar *g, const wm_exi_options *o, const struct wm_exi_frame *f,
                                   wm_exi_codes *c)
{
    const wm_exi_state *s = &g->states[f->state];
    c->n1 = s->n;
    c->n3 = 0;
    if (o->strict) {
        c->n2 = 0;
        if (s->flags & WM_EXI_S_START) {
            if (g->tgrams[f->tgram].xsi_type_strict) c->l2[c->n2++] = WM_EXI_UD_XSI_TYPE;
            if (f->nillable) c->l2[c->n2++] = WM_EXI_UD_XSI_NIL;
        }
    } else c->n2 = wm_exi_rt_schema_level2(o, s, f->content2, c->l2, c->l3, &c->n3);
}

/* Sets up frame f for element {uri}lid declared by elem (an element
 * declaration, WM_EXI_ELEM_FRAGMENT, or WM_EXI_NONE: the global declaration
 * of that name if any, else the element's built-in grammar, created on first
 * use in the document, §8.4.3). False when the arena's cap is reached. */
bool wm_exi_rt_frame_init(const wm_exi_grammar *g, wm_exi_arena *a, wm_exi_strtab *st, struct wm_exi_bi **bis,
                          uint32_t *n_bis, uint32_t *cap_bis, struct wm_exi_frame *f, uint32_t uri, uint32_t lid,
                          uint32_t elem);

/* Appends a learned production to a built-in grammar list (§8.4.3). */
bool wm_exi_rt_learn(wm_exi_arena *a, wm_exi_bi_prod **arr, uint32_t *n, uint32_t *cap, uint8_t term, uint32_t uri,
                     uint32_t lid);

#endif
