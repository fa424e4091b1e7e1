/* EXI encoder: the decoder's decisions in reverse (see exi_decode.c). */
#include "codec/exi_encode.h"

#include <string.h>

#include "codec/exi_rt.h"
#include "codec/exi_utf8.h"
#include "codec/exi_xmlchar.h"

static wm_exi_status mem_fail(wm_exi_encoder *e)
{
    return wm_exi_fail(e->err, WM_EXI_E_MEMORY, e->w.pos, "memory cap of %zu bytes reached", e->lim.mem_cap);
}

static wm_exi_status put_code(wm_exi_encoder *e, uint32_t n, uint32_t v)
{
    return wm_exi_write_nbit(&e->w, wm_exi_code_width(n), v);
}

static wm_exi_status put_chars(wm_exi_encoder *e, const char *s, size_t len, const wm_exi_datatype *rcs)
{
    unsigned w = rcs ? wm_exi_code_width(rcs->n_rcs + 1) : 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        unsigned k = wm_exi_utf8_get(s + i, len - i, &cp);
        if (!k) return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "text is not valid UTF-8");
        i += k;
        wm_exi_status st;
        if (rcs) {
            uint32_t lo = 0, hi = rcs->n_rcs, idx = rcs->n_rcs;
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (rcs->rcs[mid] == cp) { idx = mid; break; }
                if (rcs->rcs[mid] < cp) lo = mid + 1; else hi = mid;
            }
            if ((st = wm_exi_write_nbit(&e->w, w, idx))) return st;
            if (idx == rcs->n_rcs && (st = wm_exi_write_uint(&e->w, cp))) return st;
        } else if ((st = wm_exi_write_uint(&e->w, cp))) return st;
    }
    return WM_EXI_OK;
}

static wm_exi_status put_literal(wm_exi_encoder *e, uint64_t bias, const char *s, size_t len)
{
    wm_exi_status st = wm_exi_write_uint(&e->w, wm_exi_utf8_count(s, len) + bias);
    return st ? st : put_chars(e, s, len, NULL);
}

/* URI and local name of a qname (§7.1.7), adding misses to the table. */
static wm_exi_status put_qname(wm_exi_encoder *e, bool uri_known, uint32_t *uri, const char *u, size_t ul,
                               uint32_t *lid, const char *l, size_t ll)
{
    wm_exi_strtab *t = &e->st;
    wm_exi_status st;
    if (!uri_known) {
        uint32_t id = wm_exi_strtab_find_uri(t, u, (uint32_t)ul);
        uint32_t width = wm_exi_code_width(t->n_uris + 1);
        if (id != WM_EXI_NONE) {
            if ((st = wm_exi_write_nbit(&e->w, width, id + 1))) return st;
        } else {
            if ((st = wm_exi_write_nbit(&e->w, width, 0)) || (st = put_literal(e, 0, u, ul))) return st;
            if ((id = wm_exi_strtab_add_uri(t, u, (uint32_t)ul)) == WM_EXI_NONE) return mem_fail(e);
        }
        *uri = id;
    }
    uint32_t lidf = wm_exi_strtab_find_lname(t, *uri, l, (uint32_t)ll);
    if (lidf != WM_EXI_NONE) {
        if ((st = wm_exi_write_uint(&e->w, 0))) return st;
        st = wm_exi_write_nbit(&e->w, wm_exi_code_width(wm_exi_strtab_lname_count(t, *uri)), wm_exi_strtab_lname_index(t, lidf));
        if (st) return st;
    } else {
        if ((st = put_literal(e, 1, l, ll))) return st;
        if ((lidf = wm_exi_strtab_add_lname(t, *uri, l, (uint32_t)ll)) == WM_EXI_NONE) return mem_fail(e);
    }
    *lid = lidf;
    return WM_EXI_OK;
}

/* Preserve.prefixes: a qname's prefix p (NULL: none known) as its index in
 * uri's prefix partition, in ceil(log2(m)) bits (§7.1.7); 0 when it is not
 * there (an SE whose NS event with local-element-ns follows). */
static wm_exi_status put_prefix(wm_exi_encoder *e, uint32_t uri, const char *p, size_t pl)
{
    if (!e->opts.preserve_prefixes) return WM_EXI_OK;
    uint32_t m = e->st.uris[uri].n_prefixes;
    uint32_t k = p ? wm_exi_strtab_find_prefix(&e->st, uri, p, (uint32_t)pl) : WM_EXI_NONE;
    return wm_exi_write_nbit(&e->w, wm_exi_code_width(m), k == WM_EXI_NONE ? 0 : k);
}

/* the prefix of the AT being written (wm_exi_encode_prefixes), used up */
static wm_exi_status at_prefix(wm_exi_encoder *e, uint32_t uri)
{
    const char *p = e->pfx;
    e->pfx = NULL;
    return put_prefix(e, uri, p, e->pfx_len);
}

static wm_exi_status put_string_value(wm_exi_encoder *e, uint32_t lid, const char *s, size_t len, const wm_exi_datatype *dt)
{
    wm_exi_strtab *t = &e->st;
    wm_exi_status st;
    uint32_t gid = wm_exi_strtab_find_value(t, s, (uint32_t)len);
    if (gid != WM_EXI_NONE) {
        const wm_exi_st_value *v = &t->values[gid];
        if (v->lid == lid) {
            if ((st = wm_exi_write_uint(&e->w, 0))) return st;
            return wm_exi_write_nbit(&e->w, wm_exi_code_width(t->lnames[lid].n_vals), v->local_idx);
        }
        if ((st = wm_exi_write_uint(&e->w, 1))) return st;
        return wm_exi_write_nbit(&e->w, wm_exi_code_width(t->n_values), gid);
    }
    size_t nchars = wm_exi_utf8_count(s, len);
    if ((st = wm_exi_write_uint(&e->w, nchars + 2))) return st;
    if ((st = put_chars(e, s, len, dt && dt->kind == WM_EXI_DT_RCS_STRING ? dt : NULL))) return st;
    char *copy = wm_exi_strtab_copy(t, s, (uint32_t)len);
    if (!copy || !wm_exi_strtab_add_value(t, lid, copy, (uint32_t)len, (uint32_t)nchars)) return mem_fail(e);
    return WM_EXI_OK;
}

static bool typed_ok(wm_exi_encoder *e, uint32_t dt, const char *s, size_t len)
{
    if (dt == WM_EXI_NONE) return true;
    const wm_exi_datatype *t = &e->g->types[dt];
    if (t->kind == WM_EXI_DT_STRING || t->kind == WM_EXI_DT_RCS_STRING) return true;
    return wm_exi_value_valid(e->g->types, t, s, len);
}

/* Strict mode has no untyped fallback: a declared value that is valid but
 * beyond the codec's 64-bit limits is WM_EXI_E_UNSUPPORTED with that reason
 * (what names the item: "attribute v", "text"); WM_EXI_OK otherwise, so the
 * caller reports the value as not valid / not allowed. */
static wm_exi_status strict_unsupported(wm_exi_encoder *e, uint32_t dt, const char *s, size_t len, const char *what,
                                        const char *name, size_t nlen)
{
    wm_exi_error why = { 0 };
    if (dt == WM_EXI_NONE || wm_exi_value_check(e->g->types, &e->g->types[dt], s, len, &why) != WM_EXI_E_UNSUPPORTED)
        return WM_EXI_OK;
    return wm_exi_fail(e->err, WM_EXI_E_UNSUPPORTED, e->w.pos, "%s%.*s: %s (strict)", what, (int)(nlen > 64 ? 64 : nlen), name,
                       why.msg);
}

static wm_exi_status put_value(wm_exi_encoder *e, uint32_t lid, uint32_t dt, const char *s, size_t len)
{
    if (dt == WM_EXI_NONE) return put_string_value(e, lid, s, len, NULL);
    const wm_exi_datatype *t = &e->g->types[dt];
    if (t->kind == WM_EXI_DT_STRING || t->kind == WM_EXI_DT_RCS_STRING) return put_string_value(e, lid, s, len, t);
    return wm_exi_value_write(&e->w, e->g->types, t, s, len);
}

/* Writes the escape to the second level, then the second/third-level code. */
static wm_exi_status put_level2(wm_exi_encoder *e, uint32_t n1, const uint8_t *l2, unsigned n2, const uint8_t *l3,
                                unsigned n3, unsigned ud)
{
    wm_exi_status st;
    for (unsigned k = 0; k < n2; k++)
        if (l2[k] == ud) {
            if ((st = put_code(e, n1 + 1, n1))) return st;
            return put_code(e, n2 + (n3 ? 1 : 0), k);
        }
    for (unsigned k = 0; k < n3; k++)
        if (l3[k] == ud) {
            if ((st = put_code(e, n1 + 1, n1)) || (st = put_code(e, n2 + 1, n2))) return st;
            return put_code(e, n3, k);
        }
    return WM_EXI_E_GRAMMAR;
}

static wm_exi_status no_prod(wm_exi_encoder *e, const char *what, const char *name, size_t nlen)
{
    return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "%s %.*s is not allowed here by the grammar%s", what,
                       (int)(nlen > 60 ? 60 : nlen), name, e->opts.strict ? " (strict)" : "");
}

/* --------------------------------------------------------- element stack */

static wm_exi_status push(wm_exi_encoder *e, uint32_t uri, uint32_t lid, uint32_t elem)
{
    if (e->depth >= e->lim.max_depth)
        return wm_exi_fail(e->err, WM_EXI_E_DEPTH, e->w.pos, "element nesting deeper than %u", e->lim.max_depth);
    wm_exi_status st = at_prefix(e, uri); /* right after the SE's qname, as the decoder reads it */
    if (st) return st;
    wm_exi_frame *f = &e->stack[e->depth++];
    if (!wm_exi_rt_frame_init(e->g, &e->arena, &e->st, &e->bis, &e->n_bis, &e->cap_bis, f, uri, lid, elem))
        return mem_fail(e);
    return WM_EXI_OK;
}

static bool learn(wm_exi_encoder *e, wm_exi_bi_prod **arr, uint32_t *n, uint32_t *cap, uint8_t term, uint32_t uri, uint32_t lid)
{
    return wm_exi_rt_learn(&e->arena, arr, n, cap, term, uri, lid);
}

void wm_exi_encoder_init(wm_exi_encoder *e, const wm_exi_grammar *g, const wm_exi_options *opts, bool cookie,
                         bool header_options, const wm_exi_limits *lim)
{
    memset(e, 0, sizeof *e);
    e->g = g;
    e->opts = *opts;
    e->cookie = cookie;
    e->header_options = header_options;
    e->lim = wm_exi_limits_resolve(lim);
    wm_exi_arena_init(&e->arena, e->lim.mem_cap);
    wm_exi_strtab_init(&e->st, g, &e->arena, true);
}

void wm_exi_encoder_free(wm_exi_encoder *e)
{
    wm_exi_strtab_free(&e->st);
    wm_exi_arena_free(&e->arena);
}

wm_exi_status wm_exi_encode_start(wm_exi_encoder *e, uint8_t *out, size_t cap, wm_exi_error *err)
{
    e->err = err;
    if (err) memset(err, 0, sizeof *err);
    wm_exi_writer_init(&e->w, out, cap, err);
    wm_exi_arena_reset(&e->arena);
    if (e->opts.preserve_lexical_values || e->opts.preserve_dtd)
        return wm_exi_fail(err, WM_EXI_E_UNSUPPORTED, 0, "the encoder does not preserve lexical values or DTDs");
    if ((e->opts.preserve_prefixes || e->opts.preserve_comments || e->opts.preserve_pis) && e->opts.strict)
        return wm_exi_fail(err, WM_EXI_E_UNSUPPORTED, 0,
                           "strict streams preserve no prefixes, comments or PIs (EXI 1.0 §5.4: strict needs those options false)");
    e->pfx = e->vpfx = NULL;
    wm_exi_status st = wm_exi_header_write(&e->w, e->cookie, e->header_options, &e->opts);
    if (st) return st;
    if (wm_exi_strtab_reset(&e->st, e->opts.value_max_length, e->opts.value_partition_capacity)) return mem_fail(e);
    e->stack = wm_exi_arena_alloc(&e->arena, e->lim.max_depth * sizeof *e->stack);
    if (!e->stack) return mem_fail(e);
    e->bis = NULL;
    e->n_bis = e->cap_bis = 0;
    e->depth = 0;
    e->doc_state = 0;
    return WM_EXI_OK;
}

static void ids_of(wm_exi_encoder *e, const char *u, size_t ul, const char *l, size_t ll, uint32_t *uri, uint32_t *lid)
{
    *uri = wm_exi_strtab_find_uri(&e->st, u, (uint32_t)ul);
    *lid = *uri == WM_EXI_NONE ? WM_EXI_NONE : wm_exi_strtab_find_lname(&e->st, *uri, l, (uint32_t)ll);
}

wm_exi_status wm_exi_encode_se(wm_exi_encoder *e, const char *u, size_t ul, const char *l, size_t ll)
{
    const wm_exi_grammar *g = e->g;
    wm_exi_status st;
    uint32_t uri, lid;
    ids_of(e, u, ul, l, ll, &uri, &lid);
    if (e->depth == 0) {
        if (e->doc_state == 1) return no_prod(e, "a second root element", l, ll);
        bool frag = e->opts.fragment;
        const wm_exi_options *o = &e->opts;
        bool cmpi = o->preserve_comments || o->preserve_pis;
        uint32_t n_se = g->schemaless ? 0 : (frag ? g->n_frag : g->n_doc);
        uint32_t n1 = n_se + 1 + (frag ? 1 : 0);
        bool second = frag ? cmpi : (cmpi || o->preserve_dtd);
        uint32_t width_n = n1 + (second ? 1 : 0);
        if (lid != WM_EXI_NONE)
            for (uint32_t i = 0; i < n_se; i++) {
                uint32_t eu = frag ? g->frag[i].uri : g->elems[g->doc_elems[i]].uri;
                uint32_t el = frag ? g->frag[i].lid : g->elems[g->doc_elems[i]].lid;
                if (eu != uri || el != lid) continue;
                uint32_t elem = frag ? g->frag[i].elem : g->doc_elems[i];
                if (elem == WM_EXI_NONE) elem = WM_EXI_ELEM_FRAGMENT;
                if ((st = put_code(e, width_n, i))) return st;
                if (!frag) e->doc_state = 1;
                return push(e, uri, lid, elem);
            }
        if ((st = put_code(e, width_n, n_se))) return st;
        if ((st = put_qname(e, false, &uri, u, ul, &lid, l, ll))) return st;
        if (!frag) e->doc_state = 1;
        return push(e, uri, lid, WM_EXI_NONE);
    }
    wm_exi_frame *f = &e->stack[e->depth - 1];
    if (f->state == WM_EXI_NONE) {
        wm_exi_bi *bi = &e->bis[f->bi];
        bool stc = f->bi_state == 0;
        uint32_t nl = stc ? bi->n_stc : bi->n_ec;
        uint32_t n1 = nl + (stc ? 0 : 1);
        for (uint32_t k = 0; k < nl && lid != WM_EXI_NONE; k++) {
            const wm_exi_bi_prod *p = stc ? &bi->stc[nl - 1 - k] : &bi->ec[nl - 1 - k];
            if (p->term == WM_EXI_T_SE && p->uri == uri && p->lid == lid) {
                if ((st = put_code(e, n1 + 1, k))) return st;
                f->bi_state = 1;
                return push(e, uri, lid, WM_EXI_NONE);
            }
        }
        uint8_t l2[16], l3[4];
        unsigned n3, n2 = wm_exi_rt_bi_level2(&e->opts, stc, l2, l3, &n3);
        if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_SE_ANY))) return st;
        if ((st = put_qname(e, false, &uri, u, ul, &lid, l, ll))) return st;
        bi = &e->bis[f->bi];
        if (stc ? !learn(e, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_SE, uri, lid)
                : !learn(e, &bi->ec, &bi->n_ec, &bi->cap_ec, WM_EXI_T_SE, uri, lid))
            return mem_fail(e);
        f->bi_state = 1;
        return push(e, uri, lid, WM_EXI_NONE);
    }
    const wm_exi_state *s = &g->states[f->state];
    bool strict = e->opts.strict;
    wm_exi_codes cc;
    wm_exi_rt_codes(g, &e->opts, f, &cc);
    uint32_t n1 = cc.n1;
    unsigned n2 = cc.n2, n3 = cc.n3;
    const uint8_t *l2 = cc.l2, *l3 = cc.l3;
    uint32_t wn = n1 + (n2 ? 1 : 0);
    int best = -1;
    for (uint32_t i = 0; i < s->n && best < 0; i++) {
        const wm_exi_prod *p = &g->prods[s->first + i];
        if (p->term == WM_EXI_T_SE && lid != WM_EXI_NONE && p->uri == uri && p->lid == lid) best = (int)i;
    }
    for (uint32_t i = 0; i < s->n && best < 0; i++) {
        const wm_exi_prod *p = &g->prods[s->first + i];
        if (p->term == WM_EXI_T_SE_URI && uri != WM_EXI_NONE && p->uri == uri) best = (int)i;
    }
    for (uint32_t i = 0; i < s->n && best < 0; i++)
        if (g->prods[s->first + i].term == WM_EXI_T_SE_ANY) best = (int)i;
    if (best >= 0) {
        const wm_exi_prod *p = &g->prods[s->first + (uint32_t)best];
        if ((st = put_code(e, wn, (uint32_t)best))) return st;
        f->state = p->next;
        if (p->term == WM_EXI_T_SE) return push(e, uri, lid, p->arg);
        if ((st = put_qname(e, p->term == WM_EXI_T_SE_URI, &uri, u, ul, &lid, l, ll))) return st;
        return push(e, uri, lid, WM_EXI_NONE);
    }
    if (strict) return no_prod(e, "element", l, ll);
    if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_SE_ANY))) return no_prod(e, "element", l, ll);
    if ((st = put_qname(e, false, &uri, u, ul, &lid, l, ll))) return st;
    if (s->flags & WM_EXI_S_ATTRS) { f->state = g->tgrams[f->tgram].content; f->content2 = true; }
    return push(e, uri, lid, WM_EXI_NONE);
}

static bool is_xsi(const char *u, size_t ul, const char *l, size_t ll, const char *name)
{
    return ul == 41 && !memcmp(u, "http://www.w3.org/2001/XMLSchema-instance", 41) && ll == strlen(name) && !memcmp(l, name, ll);
}

static wm_exi_status put_xsi_type_value(wm_exi_encoder *e, wm_exi_frame *f, const char *v, size_t vl)
{
    const char *tu = "", *tl = v;
    size_t tul = 0, tll = vl;
    if (vl && v[0] == '{') {
        const char *close = memrchr(v, '}', vl); /* the local name has none */
        if (!close) return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "xsi:type value must be {uri}local");
        tu = v + 1;
        tul = (size_t)(close - v - 1);
        tl = close + 1;
        tll = vl - (size_t)(close - v) - 1;
    }
    /* a QName's local part is an NCName: the decoder refuses anything else */
    if (!wm_exi_ncname(tl, tll))
        return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "xsi:type value \"%.*s\" is not a QName", (int)(vl > 40 ? 40 : vl), v);
    uint32_t uri, lid;
    const char *vp = e->vpfx;
    e->vpfx = NULL;
    wm_exi_status st = at_prefix(e, WM_EXI_URI_XSI);
    if (st || (st = put_qname(e, false, &uri, tu, tul, &lid, tl, tll)) || (st = put_prefix(e, uri, vp, e->vpfx_len)))
        return st;
    const wm_exi_grammar *g = e->g;
    if (!g->schemaless && lid < g->n_lids) {
        uint32_t tg = wm_exi_grammar_type_by_name(g, uri, lid);
        if (tg != WM_EXI_NONE) { f->tgram = tg; f->state = g->tgrams[tg].start; f->content2 = false; }
    }
    return WM_EXI_OK;
}

static bool parse_bool(const char *v, size_t vl, bool *b)
{
    while (vl && (*v == ' ' || *v == '\n' || *v == '\t' || *v == '\r')) { v++; vl--; }
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\n' || v[vl - 1] == '\t' || v[vl - 1] == '\r')) vl--;
    if ((vl == 4 && !memcmp(v, "true", 4)) || (vl == 1 && v[0] == '1')) { *b = true; return true; }
    if ((vl == 5 && !memcmp(v, "false", 5)) || (vl == 1 && v[0] == '0')) { *b = false; return true; }
    return false;
}

wm_exi_status wm_exi_encode_at(wm_exi_encoder *e, const char *u, size_t ul, const char *l, size_t ll, const char *v,
                               size_t vl)
{
    if (e->depth == 0) return no_prod(e, "attribute outside an element:", l, ll);
    const wm_exi_grammar *g = e->g;
    wm_exi_frame *f = &e->stack[e->depth - 1];
    wm_exi_status st;
    uint32_t uri, lid;
    ids_of(e, u, ul, l, ll, &uri, &lid);
    bool xtype = is_xsi(u, ul, l, ll, "type"), xnil = is_xsi(u, ul, l, ll, "nil");
    if (f->state == WM_EXI_NONE) {
        wm_exi_bi *bi = &e->bis[f->bi];
        if (f->bi_state != 0) return no_prod(e, "attribute after content:", l, ll);
        uint32_t nl = bi->n_stc;
        for (uint32_t k = 0; k < nl && lid != WM_EXI_NONE && !xtype; k++) {
            const wm_exi_bi_prod *p = &bi->stc[nl - 1 - k];
            if (p->term == WM_EXI_T_AT && p->uri == uri && p->lid == lid) {
                if ((st = put_code(e, nl + 1, k)) || (st = at_prefix(e, uri))) return st;
                if (xnil) {
                    bool b;
                    if (!parse_bool(v, vl, &b)) return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "xsi:nil is not a boolean");
                    return wm_exi_write_bool(&e->w, b);
                }
                return put_string_value(e, lid, v, vl, NULL);
            }
        }
        uint8_t l2[16], l3[4];
        unsigned n3, n2 = wm_exi_rt_bi_level2(&e->opts, true, l2, l3, &n3);
        if ((st = put_level2(e, nl, l2, n2, l3, n3, WM_EXI_UD_AT_ANY))) return st;
        if ((st = put_qname(e, false, &uri, u, ul, &lid, l, ll))) return st;
        if (xtype) return put_xsi_type_value(e, f, v, vl);
        bi = &e->bis[f->bi];
        if (!learn(e, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_AT, uri, lid)) return mem_fail(e);
        if ((st = at_prefix(e, uri))) return st;
        if (xnil) {
            bool b;
            if (!parse_bool(v, vl, &b)) return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "xsi:nil is not a boolean");
            return wm_exi_write_bool(&e->w, b);
        }
        return put_string_value(e, lid, v, vl, NULL);
    }
    const wm_exi_state *s = &g->states[f->state];
    bool strict = e->opts.strict;
    wm_exi_codes cc;
    wm_exi_rt_codes(g, &e->opts, f, &cc);
    uint32_t n1 = cc.n1;
    unsigned n2 = cc.n2, n3 = cc.n3;
    const uint8_t *l2 = cc.l2, *l3 = cc.l3;
    uint32_t wn = n1 + (n2 ? 1 : 0);
    if (xtype || xnil) {
        if ((st = put_level2(e, n1, l2, n2, l3, n3, xtype ? WM_EXI_UD_XSI_TYPE : WM_EXI_UD_XSI_NIL)))
            return no_prod(e, "attribute", l, ll);
        if (xtype) return put_xsi_type_value(e, f, v, vl);
        bool b;
        if (!parse_bool(v, vl, &b)) return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "xsi:nil is not a boolean");
        if ((st = at_prefix(e, WM_EXI_URI_XSI)) || (st = wm_exi_write_bool(&e->w, b))) return st;
        if (b) f->state = g->tgrams[f->tgram].empty_start;
        return WM_EXI_OK;
    }
    bool declared_invalid = false;
    uint32_t nat = 0, inv_k = 0; /* AT(qname) productions of s; the invalid one's index among them */
    const wm_exi_prod *inv = NULL;
    for (uint32_t i = 0; i < s->n; i++) nat += g->prods[s->first + i].term == WM_EXI_T_AT;
    for (uint32_t i = 0, k = 0; i < s->n && lid != WM_EXI_NONE; i++) {
        const wm_exi_prod *p = &g->prods[s->first + i];
        if (p->term != WM_EXI_T_AT) continue;
        if (p->uri != uri || p->lid != lid) { k++; continue; }
        if (!typed_ok(e, p->arg, v, vl)) { declared_invalid = true; inv = p; inv_k = k; break; }
        if ((st = put_code(e, wn, i)) || (st = at_prefix(e, uri))) return st;
        f->state = p->next;
        return put_value(e, lid, p->arg, v, vl);
    }
    for (uint32_t i = 0; i < s->n && !declared_invalid; i++) {
        const wm_exi_prod *p = &g->prods[s->first + i];
        if ((p->term == WM_EXI_T_AT_URI && uri != WM_EXI_NONE && p->uri == uri) || p->term == WM_EXI_T_AT_ANY) {
            uint32_t gdt = lid != WM_EXI_NONE && lid < g->n_lids ? wm_exi_grammar_global_attr_dt(g, uri, lid) : WM_EXI_NONE;
            if (!typed_ok(e, gdt, v, vl)) continue;
            if ((st = put_code(e, wn, i))) return st;
            if ((st = put_qname(e, p->term == WM_EXI_T_AT_URI, &uri, u, ul, &lid, l, ll)) || (st = at_prefix(e, uri))) return st;
            f->state = p->next;
            return put_value(e, lid, gdt, v, vl);
        }
    }
    if (strict && declared_invalid && (st = strict_unsupported(e, inv->arg, v, vl, "attribute ", l, ll))) return st;
    if (strict) return declared_invalid ? wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "attribute %.*s: value \"%.*s\" is not valid for its type (strict)", (int)ll, l, (int)(vl > 40 ? 40 : vl), v)
                                        : no_prod(e, "attribute", l, ll);
    if (declared_invalid) {
        /* AT(qname_x) [untyped value] at n.(m+1).x (§8.5.4.4.1): no qname */
        if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_AT_INVALID))) return no_prod(e, "attribute", l, ll);
        if ((st = put_code(e, nat + 1, inv_k)) || (st = at_prefix(e, uri))) return st;
        f->state = inv->next;
        return put_value(e, lid, WM_EXI_NONE, v, vl);
    }
    /* AT(*): typed by a global declaration of the name if the value fits it,
     * else AT(*) [untyped value] at n.(m+1).x, x = the declared attributes */
    uint32_t dt = lid != WM_EXI_NONE && lid < g->n_lids ? wm_exi_grammar_global_attr_dt(g, uri, lid) : WM_EXI_NONE;
    if (dt != WM_EXI_NONE && !typed_ok(e, dt, v, vl)) {
        if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_AT_INVALID))) return no_prod(e, "attribute", l, ll);
        if ((st = put_code(e, nat + 1, nat))) return st;
        dt = WM_EXI_NONE;
    } else if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_AT_ANY)))
        return no_prod(e, "attribute", l, ll);
    if ((st = put_qname(e, false, &uri, u, ul, &lid, l, ll)) || (st = at_prefix(e, uri))) return st;
    return put_value(e, lid, dt, v, vl);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return false;
    return true;
}

wm_exi_status wm_exi_encode_ch(wm_exi_encoder *e, const char *s, size_t n)
{
    if (e->depth == 0) {
        if (blank(s, n)) return WM_EXI_OK;
        return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "text outside the root element");
    }
    const wm_exi_grammar *g = e->g;
    wm_exi_frame *f = &e->stack[e->depth - 1];
    wm_exi_status st;
    if (f->state == WM_EXI_NONE) {
        if (blank(s, n)) return WM_EXI_OK;
        wm_exi_bi *bi = &e->bis[f->bi];
        bool stc = f->bi_state == 0;
        uint32_t nl = stc ? bi->n_stc : bi->n_ec, n1 = nl + (stc ? 0 : 1);
        for (uint32_t k = 0; k < nl; k++) {
            const wm_exi_bi_prod *p = stc ? &bi->stc[nl - 1 - k] : &bi->ec[nl - 1 - k];
            if (p->term == WM_EXI_T_CH) {
                if ((st = put_code(e, n1 + 1, k))) return st;
                f->bi_state = 1;
                return put_string_value(e, f->lid, s, n, NULL);
            }
        }
        uint8_t l2[16], l3[4];
        unsigned n3, n2 = wm_exi_rt_bi_level2(&e->opts, stc, l2, l3, &n3);
        if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_CH))) return st;
        if (stc ? !learn(e, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_CH, 0, 0)
                : !learn(e, &bi->ec, &bi->n_ec, &bi->cap_ec, WM_EXI_T_CH, 0, 0))
            return mem_fail(e);
        f->bi_state = 1;
        return put_string_value(e, f->lid, s, n, NULL);
    }
    const wm_exi_state *st_ = &g->states[f->state];
    bool strict = e->opts.strict;
    wm_exi_codes cc;
    wm_exi_rt_codes(g, &e->opts, f, &cc);
    uint32_t n1 = cc.n1;
    unsigned n2 = cc.n2, n3 = cc.n3;
    const uint8_t *l2 = cc.l2, *l3 = cc.l3;
    uint32_t wn = n1 + (n2 ? 1 : 0);
    uint32_t invalid_dt = WM_EXI_NONE;
    for (uint32_t i = 0; i < st_->n; i++) {
        const wm_exi_prod *p = &g->prods[st_->first + i];
        if (p->term != WM_EXI_T_CH) continue;
        if (!typed_ok(e, p->arg, s, n)) { invalid_dt = p->arg; break; }
        if ((st = put_code(e, wn, i))) return st;
        f->state = p->next;
        return put_value(e, f->lid, p->arg, s, n);
    }
    if (blank(s, n) && !(st_->flags & WM_EXI_S_CH)) return WM_EXI_OK;
    if (strict && (st = strict_unsupported(e, invalid_dt, s, n, "text", "", 0))) return st;
    if (strict && invalid_dt != WM_EXI_NONE) {
        /* no untyped fallback in strict: say why the value is not one of its type */
        wm_exi_error why = { 0 };
        wm_exi_value_check(g->types, &g->types[invalid_dt], s, n, &why);
        return wm_exi_fail(e->err, WM_EXI_E_INPUT, e->w.pos, "text: %s (strict)", why.msg);
    }
    if (strict) return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "text \"%.*s\" not allowed here (strict)", (int)(n > 30 ? 30 : n), s);
    if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_CH))) return no_prod(e, "text", s, n);
    if (st_->flags & WM_EXI_S_ATTRS) { f->state = g->tgrams[f->tgram].content; f->content2 = true; }
    return put_string_value(e, f->lid, s, n, NULL);
}

wm_exi_status wm_exi_encode_ee(wm_exi_encoder *e)
{
    if (e->depth == 0) return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "end tag without an open element");
    const wm_exi_grammar *g = e->g;
    wm_exi_frame *f = &e->stack[e->depth - 1];
    wm_exi_status st;
    if (f->state == WM_EXI_NONE) {
        wm_exi_bi *bi = &e->bis[f->bi];
        bool stc = f->bi_state == 0;
        uint32_t nl = stc ? bi->n_stc : bi->n_ec;
        if (!stc) {
            if ((st = put_code(e, nl + 2, nl))) return st;
            e->depth--;
            return WM_EXI_OK;
        }
        for (uint32_t k = 0; k < nl; k++)
            if (bi->stc[nl - 1 - k].term == WM_EXI_T_EE) {
                if ((st = put_code(e, nl + 1, k))) return st;
                e->depth--;
                return WM_EXI_OK;
            }
        uint8_t l2[16], l3[4];
        unsigned n3, n2 = wm_exi_rt_bi_level2(&e->opts, true, l2, l3, &n3);
        if ((st = put_level2(e, nl, l2, n2, l3, n3, WM_EXI_UD_EE))) return st;
        if (!learn(e, &bi->stc, &bi->n_stc, &bi->cap_stc, WM_EXI_T_EE, 0, 0)) return mem_fail(e);
        e->depth--;
        return WM_EXI_OK;
    }
    const wm_exi_state *s = &g->states[f->state];
    bool strict = e->opts.strict;
    wm_exi_codes cc;
    wm_exi_rt_codes(g, &e->opts, f, &cc);
    uint32_t n1 = cc.n1;
    unsigned n2 = cc.n2, n3 = cc.n3;
    const uint8_t *l2 = cc.l2, *l3 = cc.l3;
    for (uint32_t i = 0; i < s->n; i++)
        if (g->prods[s->first + i].term == WM_EXI_T_EE) {
            if ((st = put_code(e, n1 + (n2 ? 1 : 0), i))) return st;
            e->depth--;
            return WM_EXI_OK;
        }
    /* an empty element of a simple type: its grammar wants CH first, so the
     * empty value is written as CH "" (what deployed encoders do too) */
    for (uint32_t i = 0; i < s->n; i++) {
        const wm_exi_prod *p = &g->prods[s->first + i];
        if (p->term != WM_EXI_T_CH || !typed_ok(e, p->arg, "", 0)) continue;
        if ((st = put_code(e, n1 + (n2 ? 1 : 0), i)) || (st = put_value(e, f->lid, p->arg, "", 0))) return st;
        f->state = p->next;
        return wm_exi_encode_ee(e);
    }
    if (strict) return no_prod(e, "end of element", e->st.lnames[f->lid].s.p, e->st.lnames[f->lid].s.len);
    if ((st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_EE))) return st;
    e->depth--;
    return WM_EXI_OK;
}

wm_exi_status wm_exi_encode_end(wm_exi_encoder *e, size_t *out_len)
{
    if (e->depth) return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "document ends with %u open elements", e->depth);
    const wm_exi_grammar *g = e->g;
    const wm_exi_options *o = &e->opts;
    bool cmpi = o->preserve_comments || o->preserve_pis;
    wm_exi_status st;
    if (o->fragment) {
        uint32_t n_se = g->schemaless ? 0 : g->n_frag;
        if ((st = put_code(e, n_se + 2 + (cmpi ? 1 : 0), n_se + 1))) return st;
    } else {
        if (e->doc_state != 1) return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "document without a root element");
        if ((st = put_code(e, 1 + (cmpi ? 1 : 0), 0))) return st;
    }
    *out_len = wm_exi_writer_bytes(&e->w);
    return WM_EXI_OK;
}

void wm_exi_encode_prefixes(wm_exi_encoder *e, const char *qp, size_t ql, const char *vp, size_t vl)
{
    e->pfx = qp;
    e->pfx_len = ql;
    e->vpfx = vp;
    e->vpfx_len = vl;
}

wm_exi_status wm_exi_encode_ns(wm_exi_encoder *e, const char *u, size_t ul, const char *p, size_t pl, bool local_element_ns)
{
    if (!e->opts.preserve_prefixes || e->depth == 0)
        return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "namespace declaration (NS) %s",
                           e->depth ? "without Preserve.prefixes" : "outside an element");
    wm_exi_frame *f = &e->stack[e->depth - 1];
    wm_exi_status st;
    uint8_t l2[16], l3[4];
    unsigned n2, n3;
    uint32_t n1;
    if (f->state == WM_EXI_NONE) {
        if (f->bi_state != 0) return no_prod(e, "namespace declaration after content:", p, pl);
        n1 = e->bis[f->bi].n_stc;
        n2 = wm_exi_rt_bi_level2(&e->opts, true, l2, l3, &n3);
        st = put_level2(e, n1, l2, n2, l3, n3, WM_EXI_UD_NS);
    } else {
        wm_exi_codes cc;
        wm_exi_rt_codes(e->g, &e->opts, f, &cc);
        st = put_level2(e, cc.n1, cc.l2, cc.n2, cc.l3, cc.n3, WM_EXI_UD_NS);
    }
    if (st) return no_prod(e, "namespace declaration for prefix", p, pl);
    /* the URI as in a qname (§7.1.7), then the prefix: a hit is id + 1, a
     * miss 0 and the literal, which joins the partition (§7.3.2) */
    wm_exi_strtab *t = &e->st;
    uint32_t uri = wm_exi_strtab_find_uri(t, u, (uint32_t)ul), w = wm_exi_code_width(t->n_uris + 1);
    if (uri != WM_EXI_NONE) st = wm_exi_write_nbit(&e->w, w, uri + 1);
    else if (!(st = wm_exi_write_nbit(&e->w, w, 0)) && !(st = put_literal(e, 0, u, ul)) &&
             (uri = wm_exi_strtab_add_uri(t, u, (uint32_t)ul)) == WM_EXI_NONE)
        return mem_fail(e);
    if (st) return st;
    uint32_t k = wm_exi_strtab_find_prefix(t, uri, p, (uint32_t)pl);
    w = wm_exi_code_width(t->uris[uri].n_prefixes + 1);
    if (k != WM_EXI_NONE) st = wm_exi_write_nbit(&e->w, w, k + 1);
    else if (!(st = wm_exi_write_nbit(&e->w, w, 0)) && !(st = put_literal(e, 0, p, pl)) &&
             !wm_exi_strtab_add_prefix(t, uri, p, (uint32_t)pl))
        return mem_fail(e);
    if (st) return st;
    return wm_exi_write_bool(&e->w, local_element_ns);
}

/* CM or PI (kind WM_EXI_UD_CM / _PI), its event code only: the document's
 * or fragment's content (§8.4.1/§8.4.2: DocContent CM n.1.0 behind DT n.0,
 * DocEnd CM 1.0, FragmentContent CM n.0), or the element's (built-in
 * StartTagContent ends, §8.4.3; a schema-informed state stays, §8.5.4.4.1). */
static wm_exi_status cmpi_code(wm_exi_encoder *e, unsigned kind)
{
    const wm_exi_options *o = &e->opts;
    bool on = kind == WM_EXI_UD_CM ? o->preserve_comments : o->preserve_pis;
    if (!on || o->strict)
        return wm_exi_fail(e->err, WM_EXI_E_GRAMMAR, e->w.pos, "%s without Preserve.%s", kind == WM_EXI_UD_CM ? "comment" : "processing instruction",
                           kind == WM_EXI_UD_CM ? "comments" : "pis");
    unsigned n3 = (o->preserve_comments ? 1 : 0) + (o->preserve_pis ? 1 : 0), k3 = kind == WM_EXI_UD_PI && o->preserve_comments;
    wm_exi_status st;
    if (e->depth == 0) {
        const wm_exi_grammar *g = e->g;
        if (e->doc_state == 1 && !o->fragment) { /* DocEnd: ED 0, CM 1.0, PI 1.1 */
            if ((st = put_code(e, 2, 1))) return st;
            return put_code(e, n3, k3);
        }
        uint32_t n_se = g->schemaless ? 0 : (o->fragment ? g->n_frag : g->n_doc);
        uint32_t n1 = n_se + 1 + (o->fragment ? 1 : 0);
        if ((st = put_code(e, n1 + 1, n1))) return st;
        if (!o->fragment && (st = put_code(e, (o->preserve_dtd ? 1 : 0) + 1, o->preserve_dtd ? 1 : 0))) return st;
        return put_code(e, n3, k3);
    }
    wm_exi_frame *f = &e->stack[e->depth - 1];
    uint8_t l2[16], l3[4];
    unsigned n2;
    if (f->state == WM_EXI_NONE) {
        wm_exi_bi *bi = &e->bis[f->bi];
        bool stc = f->bi_state == 0;
        n2 = wm_exi_rt_bi_level2(o, stc, l2, l3, &n3);
        if ((st = put_level2(e, (stc ? bi->n_stc : bi->n_ec + 1), l2, n2, l3, n3, kind))) return st;
        f->bi_state = 1;
        return WM_EXI_OK;
    }
    wm_exi_codes cc;
    wm_exi_rt_codes(e->g, o, f, &cc);
    return put_level2(e, cc.n1, cc.l2, cc.n2, cc.l3, cc.n3, kind);
}

wm_exi_status wm_exi_encode_cm(wm_exi_encoder *e, const char *text, size_t len)
{
    wm_exi_status st = cmpi_code(e, WM_EXI_UD_CM);
    return st ? st : put_literal(e, 0, text, len);
}

wm_exi_status wm_exi_encode_pi(wm_exi_encoder *e, const char *target, size_t tl, const char *data, size_t dl)
{
    wm_exi_status st = cmpi_code(e, WM_EXI_UD_PI);
    if (!st) st = put_literal(e, 0, target, tl);
    return st ? st : put_literal(e, 0, data, dl);
}
