/* Internal template: the EXI strict bit-packed decode loop (W3C EXI 1.0
 * Second Edition §8.5.4.4.2 strict grammars, §6.2 event codes, §7.1 values,
 * §7.3.3 value hits), for codec/exi_decode_strict.c (why it is built this
 * way, the tables it runs on) and for consumers that want the events it
 * decodes without a call through a function pointer per event.
 *
 * Why a template: a consumer that acts on a few events per element (the
 * content filter, matcher/xpath_eval.c) pays, per declared SE, EE and
 * attribute, an indirect call, its callee's prologue and the reload of its
 * own state from memory; with its handlers expanded into a copy of the loop
 * they are straight-line code between the dispatches, and what they keep
 * between events may stay in registers. The loop is written once, here:
 * each inclusion defines one function over it, with the consumer's handlers
 * in place of the callback. The decoder runs an instance through
 * wm_exi_decoder strict_loop (codec/exi_decode.h); codec/exi_decode_strict.c
 * holds the one for the event callback (wm_exi_decode_strict_run), the
 * default.
 *
 * Define before including (every one is #undef-ed at the end):
 *   WM_SL_FN          the function's name; it has the type of
 *                     wm_exi_decode_strict_run (codec/exi_decode_int.h) and
 *                     the same contract, but for where events go
 *   WM_SL_LINKAGE     its storage class (e.g. static), may be empty
 *   WM_SL_TYPED_ONLY  1: the instance serves typed-value decoding only
 *                     (wm_exi_dctx typed_fast; the formatting of number
 *                     text is left out); called otherwise, it runs
 *                     wm_exi_decode_strict_run, the callback's instance
 *   WM_SL_LOCALS      declarations at the top of the function (c is the
 *                     wm_exi_dctx *, d its decoder): the consumer's state
 *   WM_SL_ON_SE(pe)   a declared start element, its frame pushed: the
 *                     event *pe (depth set), pos after it
 *   WM_SL_ON_EE(pe)   an end element, its frame popped: the event *pe
 *                     (depth: the closed element's), pos after it
 *   WM_SL_ON_AT(p, pe, kind) a declared attribute with its value:
 *                     production *p (p->lid its local-name id, < g->n_lids),
 *                     event *pe (qname, value; depth not set), kind the
 *                     value's (pe->value.kind; a constant wm_exi_dt: each
 *                     kind has its own copy of the handler), the frame's
 *                     state already advanced, pos after it
 * Each handler is a statement that ends the loop with `goto stop` (as a
 * callback's non-zero answer: decoding stops after this event) or falls
 * through to the next event. It may read the locals depth and user (the
 * callback's user pointer); it must not change the decoder. Every event the
 * loop does not decode itself still goes through the general path to the
 * callback (wm_exi_dctx fn), so a consumer handles those there as before.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode_int.h"
#include "codec/exi_rt.h"

#ifndef WM_CODEC_EXI_DECODE_STRICT_LOOP_H
#define WM_CODEC_EXI_DECODE_STRICT_LOOP_H

/* The last bytes of the stream as a window, past its end zeros: the
 * stream's last eight bytes moved up (no call for a variable-length copy;
 * this runs for the last few events of every document). */
static inline uint64_t window_tail(const uint8_t *buf, uint64_t nbytes, uint64_t pos)
{
    uint64_t byte = pos >> 3, w = 0;
    if (byte >= nbytes) return 0;
    if (nbytes >= 8) {
        memcpy(&w, buf + nbytes - 8, 8);
        w = __builtin_bswap64(w) << (8 * (byte - (nbytes - 8))); /* byte > nbytes - 8: shift 8..56 */
    } else
        for (uint64_t i = byte; i < nbytes; i++) w |= (uint64_t)buf[i] << (56 - 8 * (i - byte));
    return w << (pos & 7);
}

/* 64 bits from bit `pos` on, first bit most significant; bytes past the
 * end of the stream read as zeros (whoever consumes them checks the end).
 * At least 57 of them are the stream's (or those zeros). */
static inline uint64_t window(const uint8_t *buf, uint64_t nbytes, uint64_t pos)
{
    uint64_t byte = pos >> 3, w;
    if (__builtin_expect(byte + 8 > nbytes, 0)) return window_tail(buf, nbytes, pos);
    memcpy(&w, buf + byte, 8);
    return __builtin_bswap64(w) << (pos & 7);
}

/* The first w bits (0 <= w <= 32) of a window, without a branch on w == 0. */
static inline uint32_t top(uint64_t win, unsigned w)
{
    return (uint32_t)((win >> 1) >> (63 - w));
}

/* Integer (§7.1.5) at bit *q: false when it is longer than one window
 * (the general path then takes the event). */
static inline bool int_at(const uint8_t *buf, uint64_t nbytes, uint64_t *q, int64_t *out)
{
    uint64_t w = window(buf, nbytes, *q), v;
    unsigned len = wm_exi_uint_window(w << 1, &v);
    if (!len) return false;
    *q += 1 + 8 * len;
    *out = (w >> 63) ? -(int64_t)v - 1 : (int64_t)v;
    return true;
}

/* Float (§7.1.4: mantissa and exponent, two integers) at bit *q, whose
 * first bits are w (`avail` of them sure: the rest of the event code's
 * window): both integers from it when they fit in those bits (sensor
 * readings: a few octets each), else from fresh windows; false as int_at().
 * Bits past the sure ones are zeros, which would look like a last octet:
 * whatever ends beyond them is read again. */
static inline bool float_at(const uint8_t *buf, uint64_t nbytes, uint64_t *q, uint64_t w, unsigned avail, int64_t *m,
                            int64_t *e)
{
    uint64_t v;
    unsigned len = wm_exi_uint_window(w << 1, &v);
    if (!len || 1 + 8 * len > avail) {
        w = window(buf, nbytes, *q);
        avail = 57;
        if (!(len = wm_exi_uint_window(w << 1, &v))) return false;
    }
    *m = (w >> 63) ? -(int64_t)v - 1 : (int64_t)v;
    unsigned used = 1 + 8 * len; /* <= avail <= 57 */
    uint64_t w2 = w << used;
    unsigned len2 = wm_exi_uint_window(w2 << 1, &v);
    if (!len2 || used + 1 + 8 * len2 > avail) {
        *q += used;
        return int_at(buf, nbytes, q, e);
    }
    *e = (w2 >> 63) ? -(int64_t)v - 1 : (int64_t)v;
    *q += used + 1 + 8 * len2;
    return true;
}

/* A literal string value of nchars characters at bit *q (§7.3.3 miss,
 * §7.1.10), written in place in the arena and added to `lid`'s partitions
 * like the general path does (the same allocations, in the same order):
 * printable ASCII only (what read_chars() takes in one step: no control
 * character, XML 1.0 Char), seven characters per window, up to LIT_MAX
 * characters, and only when the arena's current block has room for them.
 * false: anything else, with nothing changed, for the general path to take
 * from the value's first bit. true: *st is WM_EXI_OK (the value in *v, *q
 * after it) or the memory failure of the string table, at the general
 * path's position (after the characters). */
#define LIT_MAX 56
static inline bool literal(wm_exi_dctx *c, const uint8_t *buf, uint64_t nbytes, uint64_t len_bits, uint64_t *q,
                           uint32_t lid, uint64_t nchars, wm_exi_value *v, wm_exi_status *st)
{
    wm_exi_decoder *d = c->d;
    if (nchars > LIT_MAX || *q + 8 * nchars > len_bits) return false;
    size_t bytes = (size_t)nchars * 4 + 1; /* read_chars()'s reservation */
    char *p = wm_exi_arena_peek(&d->arena, bytes);
    if (!p) return false;
    uint64_t cq = *q;
    for (uint32_t i = 0; i < nchars; i += 7) {
        uint32_t k = nchars - i < 7 ? (uint32_t)(nchars - i) : 7;
        /* le: the characters from its low byte up, what is stored */
        uint64_t le = __builtin_bswap64(window(buf, nbytes, cq)), mask = ~0ull >> (64 - 8 * k);
        /* each character in 0x20..0x7f (XML Char, one octet): + 0x60 sets
         * its high bit, which it has not itself. A byte >= 0xa0 carries into
         * the next, higher one, but fails itself; carries leave upwards, past
         * the characters, so what follows them never matters */
        const uint64_t hi = 0x8080808080808080ull, k60 = 0x6060606060606060ull;
        if ((((le + k60) & ~le & hi) ^ hi) & mask) return false;
        /* 8 bytes at p + i: within the 16-byte rounded reservation of 4n + 1 */
        memcpy(p + i, &le, 8);
        cq += 8 * k;
    }
    p[nchars] = 0;
    wm_exi_arena_commit(&d->arena, bytes);
    *q = cq;
    *st = WM_EXI_OK;
    if (!wm_exi_strtab_add_value(&d->st, lid, p, (uint32_t)nchars, (uint32_t)nchars)) {
        c->r.pos = cq;
        *st = wm_exi_dec_mem_fail(c);
        return true;
    }
    v->kind = WM_EXI_DT_STRING;
    v->text = p;
    v->len = (uint32_t)nchars;
    return true;
}

#endif /* the helpers, once per translation unit */

/* Threaded dispatch: every handler ends in its own copy of the dispatch,
 * the fetch of the next event's code and production and the jump on its
 * kind, so the indirect-branch predictor learns what follows what per kind
 * (the attribute sequence of sensor records is data: with one shared
 * dispatch it was the loop's most expensive instruction).
 * DISPATCH(first, n, w): the next event in a state with those productions
 * and code width; sets w, win, p and q (the bit after the code: handlers
 * check it against the end with what follows). NEXT_FRAME(): the state of
 * the innermost frame f (after EE and the general path). NEXT_AFTER(): the
 * next state of the production just decoded, in the same frame. */
#define DISPATCH(first_, n_, w_)                                                                            \
    do {                                                                                                    \
        w = (w_);                                                                                           \
        win = window(buf, nbytes, pos);                                                                     \
        uint32_t v_ = top(win, w);                                                                          \
        if (v_ >= (n_)) goto general; /* xsi:type / xsi:nil, or a bad code */                              \
        p = &fp[(first_) + v_];                                                                             \
        q = pos + w;                                                                                        \
        goto *handler[p->op];                                                                               \
    } while (0)
#define NEXT_FRAME()                                                                                        \
    do {                                                                                                    \
        if (!depth) goto out;                                                                               \
        f = &stack[depth - 1];                                                                              \
        if (f->state >= n_states) goto general; /* built-in grammar */                                      \
        s = &ss[f->state];                                                                                  \
        unsigned w_ = s->w;                                                                                 \
        if (s->flags & WM_EXI_S_START)                                                                      \
            w_ = wm_exi_code_width(s->n + (g->tgrams[f->tgram].xsi_type_strict || f->nillable)); \
        DISPATCH(s->first, s->n, w_);                                                                       \
    } while (0)
#define NEXT_AFTER()                                                                                        \
    do {                                                                                                    \
        if (p->nstart) NEXT_FRAME();                                                                        \
        DISPATCH(p->nfirst, p->nn, p->nw);                                                                  \
    } while (0)
/* EMIT(kind): a declared attribute, its value (of that kind, a constant)
 * in *pe and checked against the end, to the consumer; a copy per value
 * kind, so that what the consumer does by kind is decided when compiling
 * and its branches are predicted per kind, as the dispatch is. */
#define EMIT(kind_)                                                                                         \
    do {                                                                                                    \
        f->state = p->next;                                                                                 \
        pos = q;                                                                                            \
        WM_SL_ON_AT(p, pe, kind_);                                                                          \
        NEXT_AFTER();                                                                                       \
    } while (0)

WM_SL_LINKAGE wm_exi_status WM_SL_FN(wm_exi_dctx *c)
{
#if WM_SL_TYPED_ONLY
    if (!c->typed_fast) return wm_exi_decode_strict_run(c);
#endif
    /* typed values (limits.typed_only) or their text from the general path */
    static const void *const typed_handler[] = {
        [WM_EXI_OP_TERM] = &&general,       [WM_EXI_OP_AT] = &&general,         [WM_EXI_OP_AT_FLOAT] = &&at_float,
        [WM_EXI_OP_AT_INT] = &&at_int,      [WM_EXI_OP_AT_BOOL] = &&at_bool,    [WM_EXI_OP_SE] = &&se,
        [WM_EXI_OP_EE] = &&ee,              [WM_EXI_OP_AT_STR] = &&at_str,
    };
    /* with every value's text: numbers and booleans written into the
     * scratch as wm_exi_value_read() does (the same formatters), when the
     * scratch holds the longest such text; else from the general path */
    static const void *const lexical_handler[] = {
        [WM_EXI_OP_TERM] = &&general,       [WM_EXI_OP_AT] = &&general,         [WM_EXI_OP_AT_FLOAT] = &&at_float,
        [WM_EXI_OP_AT_INT] = &&at_int,      [WM_EXI_OP_AT_BOOL] = &&at_bool,    [WM_EXI_OP_SE] = &&se,
        [WM_EXI_OP_EE] = &&ee,              [WM_EXI_OP_AT_STR] = &&at_str,
    };
    static const void *const lexical_general_handler[] = {
        [WM_EXI_OP_TERM] = &&general,       [WM_EXI_OP_AT] = &&general,         [WM_EXI_OP_AT_FLOAT] = &&attr_general,
        [WM_EXI_OP_AT_INT] = &&attr_general, [WM_EXI_OP_AT_BOOL] = &&attr_general, [WM_EXI_OP_SE] = &&se,
        [WM_EXI_OP_EE] = &&ee,              [WM_EXI_OP_AT_STR] = &&at_str,
    };
    _Static_assert(sizeof typed_handler / sizeof *typed_handler == WM_EXI_OP_AT_STR + 1 &&
                       sizeof lexical_handler / sizeof *lexical_handler == WM_EXI_OP_AT_STR + 1 &&
                       sizeof lexical_general_handler / sizeof *lexical_general_handler == WM_EXI_OP_AT_STR + 1,
                   "a handler per prod_op kind");
    _Static_assert(WM_EXI_FLOAT_TEXT_MAX >= WM_EXI_INT_TEXT_MAX && WM_EXI_FLOAT_TEXT_MAX >= 5, "the longest number text");
    wm_exi_decoder *const d = c->d;
    const wm_exi_grammar *const g = d->g;
    const struct wm_exi_strict_tables *const tb = d->strict;
    const struct wm_exi_strict_state *const ss = tb->states;
    struct wm_exi_strict_prod *const fp = tb->prods; /* ev written (see wm_exi_strict_tables) */
    const struct wm_exi_strict_elem *const elems = tb->elems;
    wm_exi_event *const names = tb->names;
    const uint32_t n_names = tb->n_names, n_states = tb->n_states;
    const uint8_t *const buf = c->r.buf;
    const uint64_t len_bits = c->r.len_bits, nbytes = len_bits >> 3;
    void *const user = c->user;
    const wm_exi_strtab *const t = &d->st;
    wm_exi_frame *const stack = d->stack;
    const uint32_t max_depth = d->lim.max_depth;
#if WM_SL_TYPED_ONLY
    const bool lexical = false;
    const void *const *const handler = typed_handler;
    (void)lexical_handler, (void)lexical_general_handler;
#else
    const bool lexical = !c->typed_fast;
    const void *const *const handler = !lexical                                         ? typed_handler
                                       : d->lim.max_value_bytes >= WM_EXI_FLOAT_TEXT_MAX ? lexical_handler
                                                                                         : lexical_general_handler;
#endif
    char *const scratch = d->scratch;
    WM_SL_LOCALS
    uint32_t depth = d->depth;
    uint64_t pos = c->r.pos, q, win;
    wm_exi_status st;
    wm_exi_event *pe = NULL; /* set by each handler before its emit (the compiler cannot follow the computed goto) */
    wm_exi_frame *f;
    const struct wm_exi_strict_state *s;
    struct wm_exi_strict_prod *p;
    unsigned w;
    NEXT_FRAME();

ee:
    if (q > len_bits || f->lid >= n_names || names[f->lid].uri_id != f->uri) goto general;
    pe = &names[f->lid];
    pe->depth = depth;
    pos = q;
    depth--;
    WM_SL_ON_EE(pe);
    NEXT_FRAME();

se: {
    /* declared element: the frame of wm_exi_rt_frame_init() */
    if (q > len_bits || depth >= max_depth) goto general;
    const struct wm_exi_strict_elem *e = &elems[p->arg];
    pe = &p->ev;
    f->state = p->next;
    f = &stack[depth++];
    *f = (wm_exi_frame){ .state = e->state, .tgram = e->tgram, .uri = pe->uri_id, .lid = p->lid,
                         .bi = WM_EXI_NONE, .nillable = e->nillable };
    pe->depth = depth;
    pos = q;
    WM_SL_ON_SE(pe);
    DISPATCH(e->first, e->n, e->w);
}

at_float: {
    int64_t m, e;
    if (!float_at(buf, nbytes, &q, win << w, 57 - w, &m, &e) || e < -16384 || e > 16383 || q > len_bits) goto general;
    pe = &p->ev;
    pe->value.mantissa = m;
    pe->value.exponent = (int32_t)e;
    if (lexical) {
        pe->value.text = scratch;
        pe->value.len = wm_exi_float_text(m, (int32_t)e, scratch);
    }
    EMIT(WM_EXI_DT_FLOAT);
}

at_int: {
    int64_t i;
    if (!int_at(buf, nbytes, &q, &i) || q > len_bits) goto general;
    pe = &p->ev;
    pe->value.i = i;
    if (lexical) {
        pe->value.text = scratch;
        pe->value.len = wm_exi_int_text(i, scratch);
    }
    EMIT(WM_EXI_DT_INTEGER);
}

at_bool:
    if (++q > len_bits) goto general;
    pe = &p->ev;
    pe->value.b = (win >> (63 - w)) & 1;
    if (lexical) {
        memcpy(scratch, pe->value.b ? "true" : "false", 5);
        pe->value.text = scratch;
        pe->value.len = pe->value.b ? 4 : 5;
    }
    EMIT(WM_EXI_DT_BOOLEAN);

at_str: {
    /* string-table hits (§7.3.3) and ASCII literals; the length or hit
     * kind from the rest of the code's window when it ends within its sure
     * bits (see float_at()) */
    uint64_t x, ww = win << w;
    unsigned avail = 57 - w, len = wm_exi_uint_window(ww, &x);
    if (!len || 8 * len > avail) {
        ww = window(buf, nbytes, q);
        avail = 57;
        if (!(len = wm_exi_uint_window(ww, &x))) goto attr_general;
    }
    q += 8 * len;
    pe = &p->ev;
    if (x > 1) {
        if (!literal(c, buf, nbytes, len_bits, &q, p->lid, x - 2, &pe->value, &st)) goto attr_general;
        if (st) return st;
        goto emit_str;
    }
    /* the compact id follows x, from the same window when it ends within
     * the sure bits */
    ww <<= 8 * len;
    avail -= 8 * len;
    uint32_t id;
    if (x == 0) {
        const wm_exi_st_lname *l = &t->lnames[p->lid];
        unsigned kw = wm_exi_code_width(l->n_vals);
        if (kw > avail) ww = window(buf, nbytes, q);
        uint32_t k = top(ww, kw);
        if (k >= l->n_vals) goto general;
        id = l->vals[k];
        if (id == WM_EXI_NONE) goto general; /* replaced (§7.3.3): the general path reports it */
        q += kw;
    } else {
        unsigned kw = wm_exi_code_width(t->n_values);
        if (kw > avail) ww = window(buf, nbytes, q);
        uint32_t k = top(ww, kw);
        if (k >= t->n_values) goto general;
        id = k;
        q += kw;
    }
    if (q > len_bits) goto general;
    pe->value.text = t->values[id].s.p;
    pe->value.len = t->values[id].s.len;
    goto emit_str;
}

emit_str:
    EMIT(WM_EXI_DT_STRING);

attr_general: {
    /* a declared attribute whose value the general path reads (§7) */
    if (pos + w > len_bits) goto general; /* the code runs past the end */
    const wm_exi_prod *gp = &g->prods[p - fp];
    f->state = gp->next;
    d->depth = depth;
    c->r.pos = pos + w;
    if ((st = wm_exi_dec_attribute(c, gp->uri, gp->lid, gp->arg, false, NULL))) return st;
    goto resume;
}

general:
    d->depth = depth;
    c->r.pos = pos;
    if ((st = wm_exi_dec_step(c))) return st;
resume:
    pos = c->r.pos;
    depth = d->depth;
    if (c->stop) goto out;
    NEXT_FRAME();

stop:
    c->stop = true;
    d->stop_bit_pos = pos;
out:
    d->depth = depth;
    c->r.pos = pos;
    return WM_EXI_OK;
}

#undef DISPATCH
#undef NEXT_FRAME
#undef NEXT_AFTER
#undef EMIT
#undef WM_SL_FN
#undef WM_SL_LINKAGE
#undef WM_SL_TYPED_ONLY
#undef WM_SL_LOCALS
#undef WM_SL_ON_SE
#undef WM_SL_ON_EE
#undef WM_SL_ON_AT
