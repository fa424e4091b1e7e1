/* EXI body decoder: event codes (§6.2) against the current grammar state,
 * content through datatypes (§7.1) and the string table (§7.3). */
#include "codec/exi_decode.h"
#include "codec/exi_decode_int.h"

#include <stdlib.h>
#include <string.h>

#include "codec/exi_rt.h"
#include "codec/exi_utf8.h"
#include "codec/exi_xmlchar.h"

typedef wm_exi_dctx dctx;

static uint8_t prod_op(const wm_exi_grammar *g, const wm_exi_prod *p)
{
    switch (p->term) {
    case WM_EXI_T_AT:
        if (p->arg < g->n_types && !g->types[p->arg].pattern_bool) {
            switch (g->types[p->arg].kind) {
            case WM_EXI_DT_FLOAT: return WM_EXI_OP_AT_FLOAT;
            case WM_EXI_DT_INTEGER: return WM_EXI_OP_AT_INT;
            case WM_EXI_DT_BOOLEAN: return WM_EXI_OP_AT_BOOL;
            }
        }
        if (p->arg == WM_EXI_NONE || p->arg >= g->n_types || g->types[p->arg].kind == WM_EXI_DT_STRING)
            return WM_EXI_OP_AT_STR; /* read_value()'s string cases, restricted sets aside */
        return WM_EXI_OP_AT;
    case WM_EXI_T_SE: return WM_EXI_OP_SE;
    case WM_EXI_T_EE: return WM_EXI_OP_EE;
    default: return WM_EXI_OP_TERM;
    }
}

wm_exi_status wm_exi_dec_mem_fail(dctx *c)
{
    return wm_exi_fail(c->err, WM_EXI_E_MEMORY, c->r.pos, "memory cap of %zu bytes reached", c->d->lim.mem_cap);
}

static inline wm_exi_status code(dctx *c, uint32_t n, uint32_t *v)
{
    uint64_t at = c->r.pos;
    wm_exi_status st = wm_exi_read_nbit(&c->r, wm_exi_code_width(n), v);
    if (__builtin_expect(st != WM_EXI_OK, 0)) return st;
    if (__builtin_expect(*v >= n, 0))
        return wm_exi_fail(c->err, WM_EXI_E_EVENT_CODE, at, "event code %u where only %u exist (§6.2)", *v, n);
    return WM_EXI_OK;
}

/* Reads nchars characters (§7.1.10, restricted set when rcs) into the arena. */
static wm_exi_status read_chars(dctx *c, uint64_t nchars, const wm_exi_datatype *rcs, wm_exi_sview *out)
{
    uint64_t left = c->r.len_bits - c->r.pos;
    unsigned w = rcs ? wm_exi_code_width(rcs->n_rcs + 1) : 8;
    if (nchars > (1u << 28) || nchars * (w ? w : 1) > left) /* no division: this runs per string */
        return wm_exi_fail(c->err, WM_EXI_E_LENGTH, c->r.pos, "string of %llu characters beyond the stream",
                           (unsigned long long)nchars);
    char *p = wm_exi_arena_alloc(&c->d->arena, (size_t)nchars * 4 + 1);
    if (!p) return wm_exi_dec_mem_fail(c);
    size_t n = 0;
    uint64_t i = 0;
    if (!rcs && !c->r.byte_aligned) {
        /* fast path for ASCII: each character is one octet < 0x80, taken
         * seven at a time from a 64-bit window */
        const uint8_t *buf = c->r.buf;
        uint64_t nbytes = c->r.len_bits >> 3;
        /* seven characters per step when all seven are in 0x20..0x7f (XML
         * Char, one octet): + 0x60 sets the high bit of each, which none has
         * itself (a byte >= 0xa0 carries into the one before it, but fails
         * itself); the low byte is not looked at. p has room for the 8-byte
         * store: 4 bytes per character were reserved */
        while (i + 7 <= nchars) {
            uint64_t byte = c->r.pos >> 3;
            if (byte + 8 > nbytes) break;
            uint64_t win;
            memcpy(&win, buf + byte, 8);
            win = __builtin_bswap64(win) << (c->r.pos & 7);
            const uint64_t hi = 0x8080808080808000ull, k60 = 0x6060606060606000ull;
            if (((win + k60) & ~win & hi) ^ hi) break;
            uint64_t le = __builtin_bswap64(win);
            memcpy(p + n, &le, 8);
            n += 7;
            i += 7;
            c->r.pos += 56;
        }
        while (i < nchars) {
            uint64_t byte = c->r.pos >> 3;
            if (byte + 8 > nbytes) break;
            uint64_t win;
            memcpy(&win, buf + byte, 8);
            win = __builtin_bswap64(win) << (c->r.pos & 7);
            unsigned k = 0;
            for (; k < 7 && i < nchars; k++, i++) {
                uint32_t b = (uint32_t)(win >> 56);
                if (b - 0x20 >= 0x60) break; /* multi-octet code point, or a control character: slow path */
                p[n++] = (char)b;
                win <<= 8;
                c->r.pos += 8;
            }
            if (k < 7 && i < nchars) break;
        }
    }
    for (; i < nchars; i++) {
        uint64_t cp;
        wm_exi_status st;
        if (rcs) {
            uint32_t k;
            if ((st = wm_exi_read_nbit(&c->r, w, &k))) return st;
            if (k < rcs->n_rcs) cp = rcs->rcs[k];
            else if (k == rcs->n_rcs) { if ((st = wm_exi_read_uint(&c->r, &cp))) return st; }
            else return wm_exi_fail(c->err, WM_EXI_E_VALUE, c->r.pos, "restricted character index %u (§7.1.10.1)", k);
        } else if ((st = wm_exi_read_uint(&c->r, &cp))) return st;
        if (!wm_exi_xml_char(cp))
            return wm_exi_fail(c->err, WM_EXI_E_VALUE, c->r.pos, "code point U+%04llX is not an XML 1.0 character",
                               (unsigned long long)cp);
        n += wm_exi_utf8_put((uint32_t)cp, p + n);
    }
    p[n] = 0;
    out->p = p;
    out->len = (uint32_t)n;
    return WM_EXI_OK;
}

static wm_exi_status read_uri(dctx *c, uint32_t *uri)
{
    wm_exi_strtab *t = &c->d->st;
    uint32_t v;
    uint64_t at = c->r.pos;
    wm_exi_status st = wm_exi_read_nbit(&c->r, wm_exi_code_width(t->n_uris + 1), &v);
    if (st) return st;
    if (v == 0) {
        uint64_t n;
        wm_exi_sview s;
        if ((st = wm_exi_read_uint(&c->r, &n)) || (st = read_chars(c, n, NULL, &s))) return st;
        if ((*uri = wm_exi_strtab_add_uri(t, s.p, s.len)) == WM_EXI_NONE) return wm_exi_dec_mem_fail(c);
        return WM_EXI_OK;
    }
    if (v - 1 >= t->n_uris)
        return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "URI compact id %u of %u (§7.3.2)", v - 1, t->n_uris);
    *uri = v - 1;
    return WM_EXI_OK;
}

static wm_exi_status read_lname(dctx *c, uint32_t uri, uint32_t *lid)
{
    wm_exi_strtab *t = &c->d->st;
    uint64_t v;
    uint64_t at = c->r.pos;
    wm_exi_status st = wm_exi_read_uint(&c->r, &v);
    if (st) return st;
    if (v == 0) {
        uint32_t n = wm_exi_strtab_lname_count(t, uri), k;
        if ((st = wm_exi_read_nbit(&c->r, wm_exi_code_width(n), &k))) return st;
        if (k >= n)
            return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "local-name compact id %u of %u (§7.3.2)", k, n);
        *lid = wm_exi_strtab_lname_at(t, uri, k);
        return WM_EXI_OK;
    }
    wm_exi_sview s;
    if ((st = read_chars(c, v - 1, NULL, &s))) return st;
    /* only misses are checked: the table's other names are schema names or
     * were checked when they were added */
    if (!wm_exi_ncname(s.p, s.len))
        return wm_exi_fail(c->err, WM_EXI_E_VALUE, at, "local name \"%.*s\" is not an XML NCName", (int)(s.len > 40 ? 40 : s.len), s.p);
    if ((*lid = wm_exi_strtab_add_lname(t, uri, s.p, s.len)) == WM_EXI_NONE) return wm_exi_dec_mem_fail(c);
    return WM_EXI_OK;
}

/* Preserve.prefixes: the prefix of a SE/AT qname or QName value (§7.1.7),
 * an index into the URI's prefix partition (0 bits when it has <= 1 entry),
 * to *pfx with *has set (false with no prefixes or an empty partition);
 * pfx may be NULL. */
static wm_exi_status read_qname_prefix(dctx *c, uint32_t uri, wm_exi_sview *pfx, bool *has)
{
    if (!c->d->opts.preserve_prefixes) return WM_EXI_OK;
    const wm_exi_st_uri *u = &c->d->st.uris[uri];
    uint32_t m = u->n_prefixes, k;
    uint64_t at = c->r.pos;
    wm_exi_status st = wm_exi_read_nbit(&c->r, wm_exi_code_width(m), &k);
    if (st) return st;
    if (m && k >= m) return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "prefix compact id %u of %u (§7.3.2)", k, m);
    if (pfx && m) {
        *pfx = u->prefixes[k];
        *has = true;
    }
    return WM_EXI_OK;
}

static wm_exi_status emit(dctx *c, wm_exi_event *ev);

/* NS event (§4): URI, prefix (hit or literal), local-element-ns flag. */
static wm_exi_status namespace_decl(dctx *c)
{
    uint32_t uri, k;
    wm_exi_status st = read_uri(c, &uri);
    if (st) return st;
    wm_exi_st_uri *u = &c->d->st.uris[uri];
    uint64_t at = c->r.pos;
    if ((st = wm_exi_read_nbit(&c->r, wm_exi_code_width(u->n_prefixes + 1), &k))) return st;
    if (k == 0) {
        uint64_t n;
        wm_exi_sview s;
        if ((st = wm_exi_read_uint(&c->r, &n)) || (st = read_chars(c, n, NULL, &s))) return st;
        if (s.len && !wm_exi_ncname(s.p, s.len)) /* "" declares the default namespace */
            return wm_exi_fail(c->err, WM_EXI_E_VALUE, at, "prefix \"%.*s\" is not an XML NCName", (int)(s.len > 40 ? 40 : s.len), s.p);
        if (!wm_exi_strtab_add_prefix(&c->d->st, uri, s.p, s.len)) return wm_exi_dec_mem_fail(c);
    } else if (k - 1 >= u->n_prefixes)
        return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "prefix compact id %u of %u (§7.3.2)", k - 1, u->n_prefixes);
    wm_exi_event ev = { .type = WM_EXI_EV_NS, .pfx = true, .has_prefix = true };
    u = &c->d->st.uris[uri]; /* the partition may have moved */
    ev.prefix = u->prefixes[k ? k - 1 : u->n_prefixes - 1];
    ev.uri_id = uri;
    ev.uri = u->s;
    if ((st = wm_exi_read_bool(&c->r, &ev.local_ns))) return st;
    return emit(c, &ev);
}

/* A string value through the string table (§7.3.3) for qname `lid`. */
static wm_exi_status read_string_value(dctx *c, uint32_t lid, const wm_exi_datatype *dt, wm_exi_value *v)
{
    wm_exi_strtab *t = &c->d->st;
    uint64_t x;
    uint64_t at = c->r.pos;
    wm_exi_status st = wm_exi_read_uint(&c->r, &x);
    if (st) return st;
    v->kind = WM_EXI_DT_STRING;
    if (x == 0) {
        wm_exi_st_lname *l = &t->lnames[lid];
        uint32_t k;
        if ((st = wm_exi_read_nbit(&c->r, wm_exi_code_width(l->n_vals), &k))) return st;
        if (k >= l->n_vals)
            return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "local value compact id %u of %u (§7.3.3)", k, l->n_vals);
        uint32_t gid = l->vals[k];
        if (gid == WM_EXI_NONE)
            return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at,
                               "local value compact id %u was unassigned when valuePartitionCapacity replaced its value (§7.3.3)", k);
        v->text = t->values[gid].s.p;
        v->len = t->values[gid].s.len;
        return WM_EXI_OK;
    }
    if (x == 1) {
        uint32_t k;
        if ((st = wm_exi_read_nbit(&c->r, wm_exi_code_width(t->n_values), &k))) return st;
        if (k >= t->n_values)
            return wm_exi_fail(c->err, WM_EXI_E_STRING_INDEX, at, "global value compact id %u of %u (§7.3.3)", k, t->n_values);
        v->text = t->values[k].s.p;
        v->len = t->values[k].s.len;
        return WM_EXI_OK;
    }
    wm_exi_sview s;
    if ((st = read_chars(c, x - 2, dt && dt->kind == WM_EXI_DT_RCS_STRING ? dt : NULL, &s))) return st;
    if (x - 2 > UINT32_MAX || !wm_exi_strtab_add_value(t, lid, s.p, s.len, (uint32_t)(x - 2))) return wm_exi_dec_mem_fail(c);
    v->text = s.p;
    v->len = s.len;
    return WM_EXI_OK;
}

/* A content value of datatype index dt (WM_EXI_NONE = untyped). */
static wm_exi_status read_value(dctx *c, uint32_t lid, uint32_t dt, wm_exi_value *v)
{
    const wm_exi_grammar *g = c->d->g;
    if (dt == WM_EXI_NONE || dt >= g->n_types) return read_string_value(c, lid, NULL, v);
    const wm_exi_datatype *t = &g->types[dt];
    if (t->kind == WM_EXI_DT_STRING || t->kind == WM_EXI_DT_RCS_STRING) return read_string_value(c, lid, t, v);
    wm_exi_text tx = { c->d->scratch, 0, c->d->lim.max_value_bytes };
    if (c->d->lim.typed_only && t->kind != WM_EXI_DT_LIST && t->kind != WM_EXI_DT_DATETIME && t->kind != WM_EXI_DT_DECIMAL &&
        t->kind != WM_EXI_DT_BASE64 && t->kind != WM_EXI_DT_HEX)
        tx.cap = 0;
    return wm_exi_value_read(&c->r, g->types, t, &tx, v);
}

static wm_exi_status emit(dctx *c, wm_exi_event *ev)
{
    ev->depth = c->d->depth;
    if (!c->stop && c->fn(c->user, ev)) {
        c->stop = true;
        c->d->stop_bit_pos = c->r.pos;
    }
    return WM_EXI_OK;
}

static void qname_view(dctx *c, wm_exi_event *ev, uint32_t uri, uint32_t lid)
{
    ev->uri_id = uri;
    ev->lid = lid;
    ev->uri = c->d->st.uris[uri].s;
    ev->local = c->d->st.lnames[lid].s;
}

/* --------------------------------------------------------- element stack */

wm_exi_status wm_exi_dec_push(dctx *c, uint32_t uri, uint32_t lid, uint32_t elem)
{
    wm_exi_decoder *d = c->d;
    if (d->depth >= d->lim.max_depth)
        return wm_exi_fail(c->err, WM_EXI_E_DEPTH, c->r.pos, "element nesting deeper than %u", d->lim.max_depth);
    wm_exi_event ev = { .type = WM_EXI_EV_SE, .pfx = d->opts.preserve_prefixes };
    wm_exi_status pst = read_qname_prefix(c, uri, &ev.prefix, &ev.has_prefix);
    if (pst) return pst;
    wm_exi_frame *f = &d->stack[d->depth++];
    if (!wm_exi_rt_frame_init(d->g, &d->arena, &d->st, &d->bis, &d->n_bis, &d->cap_bis, f, uri, lid, elem))
        return wm_exi_dec_mem_fail(c);
    qname_view(c, &ev, uri, lid);
    return emit(c, &ev);
}

static wm_exi_status pop(dctx *c)
{
    wm_exi_decoder *d = c->d;
    wm_exi_frame *f = &d->stack[d->depth - 1];
    wm_exi_event ev = { .type = WM_EXI_EV_EE };
    qname_view(c, &ev, f->uri, f->lid);
    emit(c, &ev);
    d->depth--;
    return WM_EXI_OK;
}

static bool learn(dctx *c, wm_exi_bi_prod **arr, uint32_t *n, uint32_t *cap, uint8_t term, uint32_t uri, uint32_t lid)
{
    return wm_exi_rt_learn(&c->d->arena, arr, n, cap, term, uri, lid);
}

/* SE(*) / SE(uri:*) content: the qname follows the code (§7.1.7). */
static wm_exi_status se_wild(dctx *c, bool have_uri, uint32_t uri, uint32_t *out_uri, uint32_t *out_lid)
{
    wm_exi_status st;
    if (!have_uri && (st = read_uri(c, &uri))) return st;
    uint32_t lid;
    if ((st = read_lname(c, uri, &lid))) return st;
    *out_uri = uri;
    *out_lid = lid;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_dec_attribute(dctx *c, uint32_t uri, uint32_t lid, uint32_t dt, bool xsi_nil_typed, bool *nil_true)
{
    wm_exi_event ev = { .type = WM_EXI_EV_AT, .pfx = c->d->opts.preserve_prefixes };
    qname_view(c, &ev, uri, lid);
    wm_exi_status st = read_qname_prefix(c, uri, &ev.prefix, &ev.has_prefix);
    if (st) return st;
    if (uri == WM_EXI_URI_XSI && lid < c->d->g->n_lids && xsi_nil_typed) {
        /* xsi:nil [boolean] */
        const wm_exi_datatype bt = { .kind = WM_EXI_DT_BOOLEAN };
        wm_exi_text tx = { c->d->scratch, 0, c->d->lim.max_value_bytes };
        if ((st = wm_exi_value_read(&c->r, &bt, &bt, &tx, &ev.value))) return st;
        ev.xsi = true;
        if (nil_true) *nil_true = ev.value.b;
        return emit(c, &ev);
    }
    if ((st = read_value(c, lid, dt, &ev.value))) return st;
    return emit(c, &ev);
}

/* A declared attribute whose value comes typed only (limits.typed_only,
 * no prefixes preserved): the value is read straight into the event, the
 * common case of sensor payloads (numbers and booleans, §7.1.2, §7.1.4,
 * §7.1.5). Same checks as wm_exi_value_read(). */
static wm_exi_status typed_attribute(dctx *c, const wm_exi_prod *p, unsigned op)
{
    wm_exi_event ev;
    ev.type = WM_EXI_EV_AT;
    ev.xsi = false;
    ev.pfx = false; /* typed_fast: no prefixes (the other prefix fields are read only under pfx) */
    qname_view(c, &ev, p->uri, p->lid);
    wm_exi_status st;
    if (op == WM_EXI_OP_AT_FLOAT) {
        int64_t e;
        ev.value = (wm_exi_value){ .kind = WM_EXI_DT_FLOAT };
        if ((st = wm_exi_read_int(&c->r, &ev.value.mantissa)) || (st = wm_exi_read_int(&c->r, &e))) return st;
        if (e < -16384 || e > 16383)
            return wm_exi_fail(c->err, WM_EXI_E_VALUE, c->r.pos, "float exponent %lld out of 14-bit range (§7.1.4)", (long long)e);
        ev.value.exponent = (int32_t)e;
    } else if (op == WM_EXI_OP_AT_INT) {
        ev.value = (wm_exi_value){ .kind = WM_EXI_DT_INTEGER };
        if ((st = wm_exi_read_int(&c->r, &ev.value.i))) return st;
    } else {
        ev.value = (wm_exi_value){ .kind = WM_EXI_DT_BOOLEAN };
        if ((st = wm_exi_read_bool(&c->r, &ev.value.b))) return st;
    }
    return emit(c, &ev);
}

/* xsi:type: value is a QName (§7.1.7); switches the element's grammar. */
static wm_exi_status xsi_type(dctx *c, wm_exi_frame *f)
{
    uint32_t uri, lid;
    wm_exi_status st;
    wm_exi_event ev = { .type = WM_EXI_EV_AT, .xsi = true, .pfx = c->d->opts.preserve_prefixes };
    if ((st = read_qname_prefix(c, WM_EXI_URI_XSI, &ev.prefix, &ev.has_prefix))) return st;
    if ((st = read_uri(c, &uri)) || (st = read_lname(c, uri, &lid)) ||
        (st = read_qname_prefix(c, uri, &ev.vprefix, &ev.has_vprefix)))
        return st;
    qname_view(c, &ev, WM_EXI_URI_XSI, c->d->g->schemaless ? 5 : c->d->g->uri_lid_first[WM_EXI_URI_XSI] + 1);
    /* lexical value "{uri}local" is given as uri + local; the XML writer picks a prefix */
    const wm_exi_st_uri *u = &c->d->st.uris[uri];
    const wm_exi_st_lname *l = &c->d->st.lnames[lid];
    size_t need = (size_t)u->s.len + l->s.len + 3;
    if (need > c->d->lim.max_value_bytes)
        return wm_exi_fail(c->err, WM_EXI_E_LENGTH, c->r.pos, "xsi:type value too long");
    char *p = c->d->scratch;
    size_t n = 0;
    p[n++] = '{';
    memcpy(p + n, u->s.p, u->s.len); n += u->s.len;
    p[n++] = '}';
    memcpy(p + n, l->s.p, l->s.len); n += l->s.len;
    ev.value.text = p;
    ev.value.len = (uint32_t)n;
    ev.value.kind = WM_EXI_DT_QNAME;
    emit(c, &ev);
    const wm_exi_grammar *g = c->d->g;
    if (!g->schemaless && lid < g->n_lids) {
        uint32_t tg = wm_exi_grammar_type_by_name(g, uri, lid);
        if (tg != WM_EXI_NONE) { /* also from a built-in grammar (§8.4.3: xsi:type switches) */
            f->tgram = tg;
            f->state = g->tgrams[tg].start;
            f->content2 = false;
        }
    }
    return WM_EXI_OK;
}

static wm_exi_status characters(dctx *c, uint32_t lid, uint32_t dt)
{
    wm_exi_event ev = { .type = WM_EXI_EV_CH };
    wm_exi_status st = read_value(c, lid, dt, &ev.value);
    if (st) return st;
    return emit(c, &ev);
}

/* A String (§7.1.10) outside the string table: CM text, PI target and data
 * (§4: their content is not a value, so no partition holds it). */
static wm_exi_status plain_string(dctx *c, wm_exi_sview *out)
{
    uint64_t n;
    wm_exi_status st = wm_exi_read_uint(&c->r, &n);
    return st ? st : read_chars(c, n, NULL, out);
}

/* CM (text) or PI (target, data) with Preserve.comments / Preserve.pis
 * (§4, §6.3): the event carries the text in value (and a PI's target in
 * local); the grammar's state is the caller's (§8.4.3, §8.5.4.4.1). Other
 * kinds (DT, ER, SC) are refused. */
static wm_exi_status comment_or_pi(dctx *c, unsigned kind)
{
    if (kind != WM_EXI_UD_CM && kind != WM_EXI_UD_PI)
        return wm_exi_fail(c->err, WM_EXI_E_UNSUPPORTED, c->r.pos, "DTD/ER/SC events are not supported");
    wm_exi_event ev = { .type = kind == WM_EXI_UD_CM ? WM_EXI_EV_CM : WM_EXI_EV_PI };
    wm_exi_sview text;
    wm_exi_status st;
    if (kind == WM_EXI_UD_PI) {
        uint64_t at = c->r.pos;
        if ((st = plain_string(c, &ev.local))) return st;
        /* a PITarget is a Name other than xml (XML 1.0 §2.6); NCName is what the writer can check */
        if (!wm_exi_ncname(ev.local.p, ev.local.len) ||
            (ev.local.len == 3 && (ev.local.p[0] | 32) == 'x' && (ev.local.p[1] | 32) == 'm' && (ev.local.p[2] | 32) == 'l'))
            return wm_exi_fail(c->err, WM_EXI_E_VALUE, at, "processing-instruction target \"%.*s\" is not a PITarget",
                               (int)(ev.local.len > 40 ? 40 : ev.local.len), ev.local.p);
    }
    if ((st = plain_string(c, &text))) return st;
    ev.value = (wm_exi_value){ .text = text.p, .len = text.len, .kind = WM_EXI_DT_STRING };
    return emit(c, &ev);
}

/* One event inside a built-in element grammar (§8.4.3). */
static wm_exi_status step_builtin(dctx *c, wm_exi_frame *f)
{
    wm_exi_decoder *d = c->d;
    wm_exi_bi *bi = &d->bis[f->bi];
    bool stc = f->bi_state == 0;
    uint32_t nl = stc ? bi->n_stc : bi->n_ec;
    uint8_t l2[16], l3[4];
    unsigned n3, n2 = wm_exi_rt_bi_level2(&d->opts, stc, l2, l3, &n3);
    /* ElementContent has EE at the first level after the learned ones */
    uint32_t n1 = nl + (stc ? 0 : 1) + 1;
    uint32_t v;
    wm_exi_status st = code(c, n1, &v);
    if (st) return st;
    if (v < nl) {
        const wm_exi_bi_prod *p = stc ? &bi->stc[nl - 1 - v] : &bi->ec[nl - 1 - v];
        switch (p->term) {
        case WM_EXI_T_EE: return pop(c);
        case WM_EXI_T_AT: return wm_exi_dec_attribute(c, p->uri, p->lid, WM_EXI_NONE, p->uri == WM_EXI_URI_XSI && d->st.lnames[p->lid].s.len == 3 && !memcmp(d->st.lnames[p->lid].s.p, "nil", 3), NULL);
        case WM_EXI_T_CH: f->bi_state = 1; return characters(c, f->lid, WM_EXI_NONE);
        default: f->bi_state = 1; return wm_exi_dec_push(c, p->uri, p->lid, WM_EXI_NONE);
        }
    }
    if (!stc && v == nl) return pop(c);
    uint32_t k;
    if ((st = code(c, n2 + (n3 ? 1 : 0), &k))) return st;
    unsigned ud;
    if (k < n2) ud = l2[k];
    else {
        uint32_t k3;
        if ((st = code(c, n3, &k3))) return st;
        ud = l3[k3];
    }
    switch (ud) {
    case WM_EXI_UD_EE:
        if (!learn(c, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_EE, 0, 0)) return wm_exi_dec_mem_fail(c);
        return pop(c);
    case WM_EXI_UD_AT_ANY: {
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        bool is_nil = uri == WM_EXI_URI_XSI && d->st.lnames[lid].s.len == 3 && !memcmp(d->st.lnames[lid].s.p, "nil", 3);
        bool is_type = uri == WM_EXI_URI_XSI && d->st.lnames[lid].s.len == 4 && !memcmp(d->st.lnames[lid].s.p, "type", 4);
        if (is_type) return xsi_type(c, f);
        if (!learn(c, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_AT, uri, lid)) return wm_exi_dec_mem_fail(c);
        bi = &d->bis[f->bi];
        return wm_exi_dec_attribute(c, uri, lid, WM_EXI_NONE, is_nil, NULL);
    }
    case WM_EXI_UD_SE_ANY: {
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        bi = &d->bis[f->bi];
        if (stc) { if (!learn(c, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_SE, uri, lid)) return wm_exi_dec_mem_fail(c); }
        else if (!learn(c, &bi->ec, &bi->n_ec, &bi->cap_ec, WM_EXI_T_SE, uri, lid)) return wm_exi_dec_mem_fail(c);
        f->bi_state = 1;
        return wm_exi_dec_push(c, uri, lid, WM_EXI_NONE);
    }
    case WM_EXI_UD_CH:
        if (stc) { if (!learn(c, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_CH, 0, 0)) return wm_exi_dec_mem_fail(c); }
        else if (!learn(c, &bi->ec, &bi->n_ec, &bi->cap_ec, WM_EXI_T_CH, 0, 0)) return wm_exi_dec_mem_fail(c);
        f->bi_state = 1;
        return characters(c, f->lid, WM_EXI_NONE);
    case WM_EXI_UD_NS:
        return namespace_decl(c);
    default:
        if (ud == WM_EXI_UD_CM || ud == WM_EXI_UD_PI) f->bi_state = 1; /* StartTagContent: CM/PI ElementContent (§8.4.3) */
        return comment_or_pi(c, ud);
    }
}

/* One event inside a schema-informed element grammar (§8.5.4). */
static wm_exi_status step_schema(dctx *c, wm_exi_frame *f)
{
    wm_exi_decoder *d = c->d;
    const wm_exi_grammar *g = d->g;
    const wm_exi_state *s = &g->states[f->state];
    wm_exi_codes cc;
    wm_exi_rt_codes(g, &d->opts, f, &cc);
    uint32_t n1 = cc.n1;
    unsigned n2 = cc.n2, n3 = cc.n3;
    const uint8_t *l2 = cc.l2, *l3 = cc.l3;
    uint32_t v;
    wm_exi_status st = code(c, n1 + (n2 ? 1 : 0), &v);
    if (st) return st;
    if (v < s->n) {
        const wm_exi_prod *p = &g->prods[s->first + v];
        /* one dispatch on event and value kind together (prod_op): the
         * attribute sequence of sensor records is data, so every separate
         * branch on it was a misprediction */
        unsigned op = d->prod_op ? d->prod_op[s->first + v] : WM_EXI_OP_TERM;
        switch (op) {
        case WM_EXI_OP_AT_FLOAT: case WM_EXI_OP_AT_INT: case WM_EXI_OP_AT_BOOL:
            f->state = p->next;
            if (c->typed_fast) return typed_attribute(c, p, op);
            return wm_exi_dec_attribute(c, p->uri, p->lid, p->arg, false, NULL);
        case WM_EXI_OP_AT: case WM_EXI_OP_AT_STR:
            f->state = p->next;
            return wm_exi_dec_attribute(c, p->uri, p->lid, p->arg, false, NULL);
        case WM_EXI_OP_SE:
            f->state = p->next;
            return wm_exi_dec_push(c, p->uri, p->lid, p->arg);
        case WM_EXI_OP_EE:
            return pop(c);
        default:
            break;
        }
        switch (p->term) {
        case WM_EXI_T_AT:
            f->state = p->next;
            return wm_exi_dec_attribute(c, p->uri, p->lid, p->arg, false, NULL);
        case WM_EXI_T_AT_URI: case WM_EXI_T_AT_ANY: {
            uint32_t uri = p->uri, lid;
            if (p->term == WM_EXI_T_AT_ANY && (st = read_uri(c, &uri))) return st;
            if ((st = read_lname(c, uri, &lid))) return st;
            f->state = p->next;
            return wm_exi_dec_attribute(c, uri, lid, lid < g->n_lids ? wm_exi_grammar_global_attr_dt(g, uri, lid) : WM_EXI_NONE, false, NULL);
        }
        case WM_EXI_T_SE:
            f->state = p->next;
            return wm_exi_dec_push(c, p->uri, p->lid, p->arg);
        case WM_EXI_T_SE_URI: case WM_EXI_T_SE_ANY: {
            uint32_t uri, lid;
            if ((st = se_wild(c, p->term == WM_EXI_T_SE_URI, p->uri, &uri, &lid))) return st;
            f->state = p->next;
            return wm_exi_dec_push(c, uri, lid, WM_EXI_NONE);
        }
        case WM_EXI_T_EE:
            return pop(c);
        case WM_EXI_T_CH:
            f->state = p->next;
            return characters(c, f->lid, p->arg);
        }
        return wm_exi_fail(c->err, WM_EXI_E_GRAMMAR, c->r.pos, "corrupt grammar production");
    }
    unsigned ud;
    uint32_t k2;
    if ((st = code(c, n2 + (n3 ? 1 : 0), &k2))) return st;
    if (k2 < n2) ud = l2[k2];
    else {
        uint32_t k3;
        if ((st = code(c, n3, &k3))) return st;
        ud = l3[k3];
    }
    bool to_content = (s->flags & WM_EXI_S_ATTRS) != 0;
    switch (ud) {
    case WM_EXI_UD_EE: return pop(c);
    case WM_EXI_UD_XSI_TYPE: return xsi_type(c, f);
    case WM_EXI_UD_XSI_NIL: {
        bool nil = false;
        uint32_t nil_lid = g->uri_lid_first[WM_EXI_URI_XSI];
        if ((st = wm_exi_dec_attribute(c, WM_EXI_URI_XSI, nil_lid, WM_EXI_NONE, true, &nil))) return st;
        if (nil) f->state = g->tgrams[f->tgram].empty_start;
        return WM_EXI_OK;
    }
    case WM_EXI_UD_AT_INVALID: {
        /* n.(m+1).x (§8.5.4.4.1): AT(qname_x) [untyped value] for the x-th
         * attribute the state declares (no qname in the stream), then
         * AT(*) [untyped value] */
        uint32_t nat = 0, k;
        for (uint32_t i = 0; i < s->n; i++) nat += g->prods[s->first + i].term == WM_EXI_T_AT;
        if ((st = code(c, nat + 1, &k))) return st;
        for (uint32_t i = 0; k < nat && i < s->n; i++) {
            const wm_exi_prod *p = &g->prods[s->first + i];
            if (p->term != WM_EXI_T_AT || k--) continue;
            f->state = p->next;
            return wm_exi_dec_attribute(c, p->uri, p->lid, WM_EXI_NONE, false, NULL);
        }
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        return wm_exi_dec_attribute(c, uri, lid, WM_EXI_NONE, false, NULL);
    }
    case WM_EXI_UD_AT_ANY: {
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        /* an AT(*) for a declared attribute of this state keeps its type */
        uint32_t dt = WM_EXI_NONE;
        for (uint32_t i = 0; i < s->n; i++)
            if (g->prods[s->first + i].term == WM_EXI_T_AT && g->prods[s->first + i].uri == uri &&
                g->prods[s->first + i].lid == lid)
                dt = g->prods[s->first + i].arg;
        if (dt == WM_EXI_NONE && lid < g->n_lids) dt = wm_exi_grammar_global_attr_dt(g, uri, lid);
        return wm_exi_dec_attribute(c, uri, lid, dt, false, NULL);
    }
    case WM_EXI_UD_SE_ANY: {
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        if (to_content) { f->state = g->tgrams[f->tgram].content; f->content2 = true; }
        return wm_exi_dec_push(c, uri, lid, WM_EXI_NONE);
    }
    case WM_EXI_UD_CH:
        if (to_content) { f->state = g->tgrams[f->tgram].content; f->content2 = true; }
        return characters(c, f->lid, WM_EXI_NONE);
    case WM_EXI_UD_NS:
        return namespace_decl(c);
    default:
        return comment_or_pi(c, ud);
    }
}

wm_exi_status wm_exi_dec_step(dctx *c)
{
    wm_exi_frame *f = &c->d->stack[c->d->depth - 1];
    return f->state == WM_EXI_NONE ? step_builtin(c, f) : step_schema(c, f);
}

/* ------------------------------------------------------------------ main */

wm_exi_limits wm_exi_limits_resolve(const wm_exi_limits *lim)
{
    wm_exi_limits r = { .mem_cap = 4u << 20, .max_depth = 256, .max_value_bytes = 64u << 10 };
    if (lim) {
        if (lim->mem_cap) r.mem_cap = lim->mem_cap;
        if (lim->max_depth) r.max_depth = lim->max_depth;
        if (lim->max_value_bytes) r.max_value_bytes = lim->max_value_bytes;
        r.typed_only = lim->typed_only;
        r.whole_buffer = lim->whole_buffer;
    }
    return r;
}

void wm_exi_decoder_init(wm_exi_decoder *d, const wm_exi_grammar *g, const wm_exi_limits *lim)
{
    memset(d, 0, sizeof *d);
    d->g = g;
    d->lim = wm_exi_limits_resolve(lim);
    wm_exi_arena_init(&d->arena, d->lim.mem_cap);
    wm_exi_strtab_init(&d->st, g, &d->arena, false);
    d->prod_op = malloc(g->n_prods ? g->n_prods : 1);
    for (uint32_t i = 0; d->prod_op && i < g->n_prods; i++) d->prod_op[i] = prod_op(g, &g->prods[i]);
    d->strict = wm_exi_decode_strict_tables(g, d->prod_op);
    d->strict_loop = wm_exi_decode_strict_run;
}

void wm_exi_decoder_free(wm_exi_decoder *d)
{
    free(d->prod_op);
    d->prod_op = NULL;
    wm_exi_decode_strict_tables_free(d->strict);
    d->strict = NULL;
    wm_exi_strtab_free(&d->st);
    wm_exi_arena_free(&d->arena);
}

/* Document / fragment level: returns true in *done after ED. */
static wm_exi_status step_doc(dctx *c, int *doc_state, bool *done)
{
    wm_exi_decoder *d = c->d;
    const wm_exi_grammar *g = d->g;
    const wm_exi_options *o = &d->opts;
    bool cmpi = o->preserve_comments || o->preserve_pis;
    uint32_t n_se = g->schemaless ? 0 : (o->fragment ? g->n_frag : g->n_doc);
    uint32_t v;
    wm_exi_status st;
    /* CM and PI as the preserved ones are offered (§8.4.1, §8.4.2, §8.5.1, §8.5.2) */
    unsigned n_cmpi = (o->preserve_comments ? 1 : 0) + (o->preserve_pis ? 1 : 0);
    if (*doc_state == 1) { /* DocEnd: ED 0, CM 1.0, PI 1.1 */
        if ((st = code(c, 1 + (cmpi ? 1 : 0), &v))) return st;
        if (v == 0) { *done = true; return WM_EXI_OK; }
        if ((st = code(c, n_cmpi, &v))) return st;
        return comment_or_pi(c, v == 0 && o->preserve_comments ? WM_EXI_UD_CM : WM_EXI_UD_PI);
    }
    bool frag = o->fragment;
    uint32_t n1 = n_se + 1 + (frag ? 1 : 0);
    bool second = frag ? cmpi : (cmpi || o->preserve_dtd);
    if ((st = code(c, n1 + (second ? 1 : 0), &v))) return st;
    if (v < n_se) {
        uint32_t elem;
        uint32_t uri, lid;
        if (frag) {
            const wm_exi_frag_elem *fe = &g->frag[v];
            elem = fe->elem == WM_EXI_NONE ? WM_EXI_ELEM_FRAGMENT : fe->elem;
            uri = fe->uri; lid = fe->lid;
        } else {
            elem = g->doc_elems[v]; uri = g->elems[elem].uri; lid = g->elems[elem].lid;
        }
        if (!frag) *doc_state = 1;
        return wm_exi_dec_push(c, uri, lid, elem);
    }
    if (v == n_se) {
        uint32_t uri, lid;
        if ((st = se_wild(c, false, 0, &uri, &lid))) return st;
        if (!frag) *doc_state = 1;
        return wm_exi_dec_push(c, uri, lid, WM_EXI_NONE);
    }
    if (frag && v == n_se + 1) { *done = true; return WM_EXI_OK; }
    /* the second level: a fragment's CM n.0, PI n.1; a document's DT n.0
     * (refused: Preserve.dtd streams are), then CM n.1.0, PI n.1.1 (§8.4.1) */
    if (!frag) {
        uint32_t k2;
        unsigned n2 = (o->preserve_dtd ? 1 : 0) + (cmpi ? 1 : 0);
        if ((st = code(c, n2, &k2))) return st;
        if (o->preserve_dtd && k2 == 0) return comment_or_pi(c, WM_EXI_UD_DT);
    }
    if ((st = code(c, n_cmpi, &v))) return st;
    return comment_or_pi(c, v == 0 && o->preserve_comments ? WM_EXI_UD_CM : WM_EXI_UD_PI);
}

/* The per-document state every stream needs before its body, from the
 * (reset) arena: the string table seeded from the grammar, the value
 * scratch and the element stack. False when the memory cap is reached. */
static bool fixed_state(wm_exi_decoder *d)
{
    if (wm_exi_strtab_reset(&d->st, d->opts.value_max_length, d->opts.value_partition_capacity)) return false;
    /* the scratch first: it fills a block of its own, so the stack and
     * what the body adds share the next one (the strict loop writes values
     * in place only within the current block) */
    d->scratch = wm_exi_arena_alloc(&d->arena, d->lim.max_value_bytes);
    d->stack = wm_exi_arena_alloc(&d->arena, d->lim.max_depth * sizeof *d->stack);
    return d->stack && d->scratch;
}

static bool fixed_state_fits(const wm_exi_grammar *g, wm_exi_limits lim, const wm_exi_options *opts, size_t cap)
{
    wm_exi_decoder d;
    lim.mem_cap = cap;
    wm_exi_decoder_init(&d, g, &lim);
    if (opts) d.opts = *opts;
    else wm_exi_options_default(&d.opts);
    wm_exi_arena_reset(&d.arena);
    bool ok = fixed_state(&d);
    wm_exi_decoder_free(&d);
    return ok;
}

size_t wm_exi_decoder_min_mem_cap(const wm_exi_grammar *g, const wm_exi_limits *lim, const wm_exi_options *opts)
{
    wm_exi_limits l = wm_exi_limits_resolve(lim);
    /* the arena's block policy (a 64 KiB first block, exact blocks near the
     * cap) makes the bound easier to find than to predict: the smallest cap
     * at which the setup succeeds, by bisection (about 20 setups) */
    size_t hi = 64u << 10;
    while (!fixed_state_fits(g, l, opts, hi)) {
        if (hi > ((size_t)1 << 40)) return 0;
        hi *= 2;
    }
    size_t lo = 0; /* never fits */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (fixed_state_fits(g, l, opts, mid)) hi = mid;
        else lo = mid;
    }
    return hi;
}

/* Do buf[0..len) start with the bits of the memoised header? */
static bool header_memo_hit(const wm_exi_decoder *d, const uint8_t *buf, size_t len)
{
    uint64_t bits = d->hdr_memo.bits, whole = bits >> 3;
    if (!bits || len * 8 < bits || memcmp(buf, d->hdr_memo.raw, whole)) return false;
    unsigned rest = bits & 7;
    return !rest || ((buf[whole] ^ d->hdr_memo.raw[whole]) >> (8 - rest)) == 0;
}

static void header_memo_put(wm_exi_decoder *d, const uint8_t *buf, uint64_t bits, bool byte_aligned)
{
    d->hdr_memo.bits = 0;
    if (!bits || bits > 8 * sizeof d->hdr_memo.raw) return;
    memcpy(d->hdr_memo.raw, buf, (bits + 7) >> 3);
    d->hdr_memo.byte_aligned = byte_aligned;
    d->hdr_memo.header = d->header;
    d->hdr_memo.opts = d->opts;
    d->hdr_memo.bits = bits;
}

wm_exi_status wm_exi_decode(wm_exi_decoder *d, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                            wm_exi_event_fn fn, void *user, bool *stopped, wm_exi_error *err)
{
    dctx c = { .d = d, .err = err, .fn = fn, .user = user };
    if (err) memset(err, 0, sizeof *err);
    if (stopped) *stopped = false;
    wm_exi_reader_init(&c.r, buf, len, err);
    wm_exi_arena_reset(&d->arena);
    wm_exi_status st;
    if (!oob && header_memo_hit(d, buf, len)) {
        /* the header is a pure function of its bits (and the defaults) */
        d->header = d->hdr_memo.header;
        d->opts = d->hdr_memo.opts;
        c.r.pos = d->hdr_memo.bits;
        c.r.byte_aligned = d->hdr_memo.byte_aligned;
    } else {
        if (oob) d->opts = *oob;
        else wm_exi_options_default(&d->opts);
        if ((st = wm_exi_header_read(&c.r, &d->header, &d->opts))) return st;
        if (!oob) header_memo_put(d, buf, c.r.pos, c.r.byte_aligned);
    }
    if (d->opts.preserve_lexical_values || d->opts.preserve_dtd)
        return wm_exi_fail(err, WM_EXI_E_UNSUPPORTED, c.r.pos,
                           "Preserve.lexicalValues / Preserve.dtd streams are not supported by this decoder");
    if (d->opts.has_schema_id && d->opts.schema_id_nil && !d->g->schemaless)
        return wm_exi_fail(err, WM_EXI_E_OPTIONS, c.r.pos, "stream declares schemaId nil (schema-less) but a schema was given");
    if (!fixed_state(d)) return wm_exi_dec_mem_fail(&c);
    d->bis = NULL;
    d->n_bis = d->cap_bis = 0;
    d->depth = 0;
    c.typed_fast = d->lim.typed_only && !d->opts.preserve_prefixes;
    /* the strict loop covers bit-packed strict schema-informed streams
     * without prefixes (Preserve.dtd/lexicalValues are refused above,
     * compression by the header reader); it falls back to
     * wm_exi_dec_step() for every event it does not decode itself */
    bool fast = d->opts.strict && !c.r.byte_aligned && d->opts.alignment == WM_EXI_BIT_PACKED && !d->opts.compression && !d->opts.preserve_prefixes && !d->g->schemaless &&
                !d->general_only && d->strict;
    wm_exi_event ev = { .type = WM_EXI_EV_SD };
    emit(&c, &ev);
    int doc_state = 0;
    bool done = false;
    while (!done && !c.stop) {
        if (d->depth == 0) st = step_doc(&c, &doc_state, &done);
        else if (fast) st = d->strict_loop(&c);
        else st = wm_exi_dec_step(&c);
        if (st) return st;
    }
    if (c.stop) { if (stopped) *stopped = true; return WM_EXI_OK; }
    size_t used = (size_t)((c.r.pos + 7) / 8); /* ED's last byte, with its padding */
    if (d->lim.whole_buffer && used < len)
        return wm_exi_fail(err, WM_EXI_E_TRAILING, (uint64_t)used * 8,
                           "%zu byte%s after the end of the document (EndDocument ends at bit %llu; EXI 1.0 §5, §6)",
                           len - used, len - used == 1 ? "" : "s", (unsigned long long)c.r.pos);
    ev = (wm_exi_event){ .type = WM_EXI_EV_ED };
    emit(&c, &ev);
    return WM_EXI_OK;
}
