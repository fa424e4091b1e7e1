/* EXI strict bit-packed decode loop (W3C EXI 1.0 Second Edition §8.5.4.4.2
 * strict grammars, §6.2 event codes, §7.1 values, §7.3.3 value hits).
 *
 * Sensor payloads are mostly declared attributes and end tags. The general
 * path (codec/exi_decode.c) pays per event for what strict streams never
 * have: second-level code lists, the reader struct in memory, a value
 * dispatch apart from the event dispatch. This loop keeps the bit position
 * in a local, reads the event code and the value from one 64-bit window,
 * and dispatches once on the production's fused kind (prod_op). Any event
 * it does not decode itself goes, from its first bit, through the general
 * step, so the two paths cannot disagree (tests/unit/test_exi_strict.c
 * checks it event by event).
 */
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode_int.h"
#include "codec/exi_rt.h"

struct wm_exi_strict_state *wm_exi_decode_strict_table(const wm_exi_grammar *g)
{
    struct wm_exi_strict_state *t = malloc((g->n_states ? g->n_states : 1) * sizeof *t);
    for (uint32_t i = 0; t && i < g->n_states; i++) {
        const wm_exi_state *s = &g->states[i];
        t[i] = (struct wm_exi_strict_state){
            .first = s->first, .n = s->n, .w = (uint8_t)wm_exi_code_width(s->n), .flags = s->flags };
    }
    return t;
}

/* 64 bits from bit `pos` on, first bit most significant; bytes past the
 * end of the stream read as zeros (whoever consumes them checks the end). */
static inline uint64_t window(const uint8_t *buf, uint64_t nbytes, uint64_t pos)
{
    uint64_t byte = pos >> 3, w = 0;
    if (__builtin_expect(byte + 8 <= nbytes, 1)) memcpy(&w, buf + byte, 8);
    else if (byte < nbytes) memcpy(&w, buf + byte, nbytes - byte);
    return __builtin_bswap64(w) << (pos & 7);
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

/* Fills the qname of ev from the string table, emits it at the current
 * depth; true when the callback asked to stop. */
static inline bool emit_named(wm_exi_dctx *c, wm_exi_event *ev, uint32_t uri, uint32_t lid)
{
    const wm_exi_strtab *t = &c->d->st;
    ev->uri_id = uri;
    ev->lid = lid;
    ev->uri = t->uris[uri].s;
    ev->local = t->lnames[lid].s;
    ev->depth = c->d->depth;
    if (!c->fn(c->user, ev)) return false;
    c->stop = true;
    return true;
}

/* A literal string value of nchars characters at bit *q (§7.3.3 miss,
 * §7.1.10), added to the string table like the general path does: ASCII
 * only, seven characters per window, up to LIT_MAX characters.
 * false: anything else (longer, non-ASCII or NUL, past the end, no memory
 * for the characters), for the general path to take from the value's first
 * bit with nothing changed. true: *st is WM_EXI_OK or the memory failure of
 * the string table. */
#define LIT_MAX 56
static bool literal(wm_exi_dctx *c, const uint8_t *buf, uint64_t nbytes, uint64_t len_bits, uint64_t *q, uint32_t lid,
                    uint64_t nchars, wm_exi_value *v, wm_exi_status *st)
{
    if (nchars > LIT_MAX || *q + 8 * nchars > len_bits) return false;
    char tmp[LIT_MAX + 8];
    uint64_t cq = *q;
    for (uint32_t i = 0; i < nchars; i += 7) {
        uint32_t k = nchars - i < 7 ? (uint32_t)(nchars - i) : 7;
        uint64_t w = window(buf, nbytes, cq), mask = ~0ull << (64 - 8 * k);
        uint64_t x = w | ~mask; /* bytes past the characters read as 0xff: neither NUL nor counted */
        const uint64_t hi = 0x8080808080808080ull, lo = 0x0101010101010101ull;
        if ((w & mask & hi) || ((x - lo) & ~x & hi)) return false;
        uint64_t le = __builtin_bswap64(w);
        memcpy(tmp + i, &le, 8);
        cq += 8 * k;
    }
    /* the general path's allocation, so both reach the memory cap alike */
    char *p = wm_exi_arena_alloc(&c->d->arena, (size_t)nchars * 4 + 1);
    if (!p) return false;
    memcpy(p, tmp, nchars);
    p[nchars] = 0;
    *q = cq;
    *st = WM_EXI_OK;
    if (!wm_exi_strtab_add_value(&c->d->st, lid, p, (uint32_t)nchars, (uint32_t)nchars)) {
        c->r.pos = cq;
        *st = wm_exi_dec_mem_fail(c);
        return true;
    }
    v->kind = WM_EXI_DT_STRING;
    v->text = p;
    v->len = (uint32_t)nchars;
    return true;
}

wm_exi_status wm_exi_decode_strict_run(wm_exi_dctx *c)
{
    wm_exi_decoder *d = c->d;
    const wm_exi_grammar *g = d->g;
    const struct wm_exi_strict_state *ss = d->strict_states;
    const uint8_t *ops = d->prod_op;
    const uint8_t *buf = c->r.buf;
    const wm_exi_strtab *t = &d->st;
    const uint64_t len_bits = c->r.len_bits, nbytes = len_bits >> 3;
    uint64_t pos = c->r.pos;
    wm_exi_status st;
    wm_exi_event ev;
    while (d->depth) {
        wm_exi_frame *f = &d->stack[d->depth - 1];
        uint32_t state = f->state;
        if (state == WM_EXI_NONE) goto general;
        const struct wm_exi_strict_state *s = &ss[state];
        unsigned w = s->w;
        if (s->flags & WM_EXI_S_START)
            w = wm_exi_code_width(s->n + (g->tgrams[f->tgram].xsi_type_strict ? 1 : 0) + (f->nillable ? 1 : 0));
        uint64_t win = window(buf, nbytes, pos);
        uint32_t v = w ? (uint32_t)(win >> (64 - w)) : 0;
        if (v >= s->n) goto general; /* xsi:type / xsi:nil, or a bad code */
        uint32_t pi = s->first + v;
        const wm_exi_prod *p = &g->prods[pi];
        uint64_t q = pos + w;
        if (q > len_bits) goto general;
        /* emit_named() fills the name and depth: only the rest is reset */
        ev.type = WM_EXI_EV_AT;
        ev.xsi = false;
        ev.value = (wm_exi_value){ 0 };
        switch (ops[pi]) {
        case WM_EXI_OP_EE:
            ev.type = WM_EXI_EV_EE;
            pos = q;
            bool stop = emit_named(c, &ev, f->uri, f->lid);
            d->depth--;
            if (stop) goto out;
            continue;
        case WM_EXI_OP_AT_FLOAT: {
            if (!c->typed_fast) goto attr_general;
            int64_t e;
            ev.value.kind = WM_EXI_DT_FLOAT;
            if (!int_at(buf, nbytes, &q, &ev.value.mantissa) || !int_at(buf, nbytes, &q, &e) || e < -16384 || e > 16383)
                goto general;
            ev.value.exponent = (int32_t)e;
            break;
        }
        case WM_EXI_OP_AT_INT:
            if (!c->typed_fast) goto attr_general;
            ev.value.kind = WM_EXI_DT_INTEGER;
            if (!int_at(buf, nbytes, &q, &ev.value.i)) goto general;
            break;
        case WM_EXI_OP_AT_BOOL:
            if (!c->typed_fast) goto attr_general;
            ev.value.kind = WM_EXI_DT_BOOLEAN;
            ev.value.b = (win >> (63 - w)) & 1;
            q++;
            break;
        case WM_EXI_OP_AT_STR: {
            /* string-table hits (§7.3.3) and ASCII literals */
            uint64_t x;
            uint64_t ww = window(buf, nbytes, q);
            unsigned len = wm_exi_uint_window(ww, &x);
            if (!len) goto attr_general;
            q += 8 * len;
            if (x > 1) {
                if (!literal(c, buf, nbytes, len_bits, &q, p->lid, x - 2, &ev.value, &st)) goto attr_general;
                if (st) return st;
                break;
            }
            uint32_t k, id;
            if (x == 0) {
                const wm_exi_st_lname *l = &t->lnames[p->lid];
                unsigned kw = wm_exi_code_width(l->n_vals);
                k = kw ? (uint32_t)(window(buf, nbytes, q) >> (64 - kw)) : 0;
                if (k >= l->n_vals) goto general;
                id = l->vals[k];
                q += kw;
            } else {
                unsigned kw = wm_exi_code_width(t->n_values);
                k = kw ? (uint32_t)(window(buf, nbytes, q) >> (64 - kw)) : 0;
                if (k >= t->n_values) goto general;
                id = k;
                q += kw;
            }
            ev.value.kind = WM_EXI_DT_STRING;
            ev.value.text = t->values[id].s.p;
            ev.value.len = t->values[id].s.len;
            break;
        }
        case WM_EXI_OP_SE: {
            /* declared element: the frame of wm_exi_rt_frame_init() */
            f->state = p->next;
            uint32_t elem = p->arg;
            if (elem >= g->n_elems || d->depth >= d->lim.max_depth) {
                c->r.pos = q;
                if ((st = wm_exi_dec_push(c, p->uri, p->lid, elem))) return st;
                goto resume;
            }
            const wm_exi_elem *e = &g->elems[elem];
            wm_exi_frame *nf = &d->stack[d->depth++];
            memset(nf, 0, sizeof *nf);
            nf->uri = p->uri;
            nf->lid = p->lid;
            nf->bi = WM_EXI_NONE;
            nf->tgram = e->type;
            nf->state = g->tgrams[e->type].start;
            nf->nillable = e->nillable;
            ev.type = WM_EXI_EV_SE;
            pos = q;
            if (emit_named(c, &ev, p->uri, p->lid)) goto out;
            continue;
        }
        default:
            goto general;
        }
        if (q > len_bits) goto attr_general; /* the value runs past the end */
        /* a declared attribute */
        f->state = p->next;
        pos = q;
        if (emit_named(c, &ev, p->uri, p->lid)) goto out;
        continue;
    attr_general:
        /* a declared attribute whose value the general path reads (§7) */
        f->state = p->next;
        c->r.pos = pos + w;
        if ((st = wm_exi_dec_attribute(c, p->uri, p->lid, p->arg, false, NULL))) return st;
        goto resume;
    general:
        c->r.pos = pos;
        if ((st = wm_exi_dec_step(c))) return st;
    resume:
        pos = c->r.pos;
        if (c->stop) goto out;
    }
out:
    c->r.pos = pos;
    return WM_EXI_OK;
}
