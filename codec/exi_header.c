/* EXI header and the Appendix C options document, read and written by hand
 * from the schema's strict grammars (§5.4 says the options document is encoded
 * with <strict/>). Each complex element of the options schema is a sequence of
 * optional children, so each grammar state offers "the remaining children, then
 * EE" and its event code has ceil(log2(remaining + 1)) bits (§6.2, §8.5.4.2). */
#include "codec/exi_header.h"

#include <string.h>

#include "codec/exi_utf8.h"

void wm_exi_options_default(wm_exi_options *o)
{
    memset(o, 0, sizeof *o);
    o->alignment = WM_EXI_BIT_PACKED;
    o->block_size = 1000000;
    o->value_max_length = WM_EXI_UNBOUNDED;
    o->value_partition_capacity = WM_EXI_UNBOUNDED;
}

bool wm_exi_options_from_suffix(const char *s, wm_exi_options *o)
{
    if (!strcmp(s, "bitPacked")) o->alignment = WM_EXI_BIT_PACKED;
    else if (!strcmp(s, "byteAligned")) o->alignment = WM_EXI_BYTE_ALIGNED;
    else if (!strcmp(s, "preCompress")) o->alignment = WM_EXI_PRE_COMPRESSION;
    else if (!strcmp(s, "compress")) o->compression = true;
    else return false;
    return true;
}

/* Picks one of `n` choices (event code of width ceil(log2 n)). */
static wm_exi_status pick(wm_exi_reader *r, uint32_t n, uint32_t *c)
{
    wm_exi_status st = wm_exi_read_raw(r, wm_exi_code_width(n), c);
    if (st) return st;
    if (*c >= n)
        return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options document: event code %u of %u (App. C)", *c, n);
    return WM_EXI_OK;
}

static wm_exi_status unsupported(wm_exi_reader *r, const char *what)
{
    return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, r->pos, "EXI option %s is not supported by this codec (§5.4)", what);
}

static wm_exi_status read_u32(wm_exi_reader *r, uint32_t *v, const char *what)
{
    uint64_t x;
    wm_exi_status st = wm_exi_read_uint(r, &x);
    if (st) return st;
    if (x > UINT32_MAX)
        return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options document: %s %llu exceeds unsignedInt", what,
                           (unsigned long long)x);
    *v = (uint32_t)x;
    return WM_EXI_OK;
}

/* <uncommon>: (##other)*, alignment?, selfContained?, valueMaxLength?,
 * valuePartitionCapacity?, datatypeRepresentationMap*. SE(*) for the wildcard
 * sorts after the named elements (§8.5.4.2.2 event-code order). */
static wm_exi_status read_uncommon(wm_exi_reader *r, wm_exi_options *o)
{
    enum { ALIGN, SC, VML, VPC, DTRM, N_NAMED };
    unsigned next = ALIGN;          /* first named child still allowed */
    for (;;) {
        bool wildcard_ok = next == ALIGN;
        uint32_t n = (N_NAMED - next) + (wildcard_ok ? 1 : 0) + 1, c;
        wm_exi_status st = pick(r, n, &c);
        if (st) return st;
        uint32_t named = N_NAMED - next;
        if (c == n - 1) return WM_EXI_OK; /* EE */
        if (c >= named) return unsupported(r, "user-defined meta-data (SE(*) in uncommon)");
        unsigned child = next + c;
        switch (child) {
        case ALIGN: {
            uint32_t a;
            if ((st = pick(r, 2, &a))) return st;
            o->alignment = a == 0 ? WM_EXI_BYTE_ALIGNED : WM_EXI_PRE_COMPRESSION;
            break;
        }
        case SC: o->self_contained = true; break;
        case VML: if ((st = read_u32(r, &o->value_max_length, "valueMaxLength"))) return st; break;
        case VPC: if ((st = read_u32(r, &o->value_partition_capacity, "valuePartitionCapacity"))) return st; break;
        case DTRM: return unsupported(r, "datatypeRepresentationMap");
        }
        next = child + 1;
    }
}

static wm_exi_status read_preserve(wm_exi_reader *r, wm_exi_options *o)
{
    bool *flags[5] = { &o->preserve_dtd, &o->preserve_prefixes, &o->preserve_lexical_values,
                       &o->preserve_comments, &o->preserve_pis };
    for (unsigned next = 0;;) {
        uint32_t c;
        wm_exi_status st = pick(r, 5 - next + 1, &c);
        if (st) return st;
        if (c == 5 - next) return WM_EXI_OK;
        *flags[next + c] = true;
        next = next + c + 1;
    }
}

static wm_exi_status read_lesscommon(wm_exi_reader *r, wm_exi_options *o)
{
    for (unsigned next = 0;;) {
        uint32_t c;
        wm_exi_status st = pick(r, 3 - next + 1, &c);
        if (st) return st;
        if (c == 3 - next) return WM_EXI_OK;
        unsigned child = next + c;
        if (child == 0) st = read_uncommon(r, o);
        else if (child == 1) st = read_preserve(r, o);
        else {
            st = read_u32(r, &o->block_size, "blockSize");
            if (!st && o->block_size == 0)
                st = wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options document: blockSize 0 (minInclusive 1)");
        }
        if (st) return st;
        next = child + 1;
    }
}

/* schemaId: nillable xs:string. Strict grammar of its first state: CH (0),
 * AT(xsi:nil) (1), the latter appended after the declared productions
 * (§8.5.4.4.2). The value is the first string of the options document, so
 * it can only be a string-table miss (§7.3.3). */
static wm_exi_status read_schema_id(wm_exi_reader *r, wm_exi_options *o)
{
    uint32_t c;
    wm_exi_status st = pick(r, 2, &c);
    if (st) return st;
    o->has_schema_id = true;
    if (c == 1) {
        bool nil;
        if ((st = wm_exi_read_bool(r, &nil))) return st;
        if (nil) { o->schema_id_nil = true; return WM_EXI_OK; }
        if ((st = pick(r, 2, &c))) return st; /* back in the first state: CH must follow */
        if (c != 0)
            return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options document: xsi:nil twice on schemaId");
    }
    uint64_t v;
    if ((st = wm_exi_read_uint(r, &v))) return st;
    if (v < 2)
        return wm_exi_fail(r->err, WM_EXI_E_STRING_INDEX, r->pos, "options document: schemaId string-table hit in an empty table");
    uint64_t nchars = v - 2;
    size_t out = 0;
    for (uint64_t i = 0; i < nchars; i++) {
        uint64_t cp;
        if ((st = wm_exi_read_uint(r, &cp))) return st;
        if (cp > 0x10ffff)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "options document: code point %llu", (unsigned long long)cp);
        if (out + 4 > WM_EXI_SCHEMA_ID_MAX)
            return wm_exi_fail(r->err, WM_EXI_E_LENGTH, r->pos, "schemaId longer than %d bytes", WM_EXI_SCHEMA_ID_MAX);
        out += wm_exi_utf8_put((uint32_t)cp, o->schema_id + out);
    }
    o->schema_id[out] = 0;
    return WM_EXI_OK;
}

static wm_exi_status read_common(wm_exi_reader *r, wm_exi_options *o)
{
    for (unsigned next = 0;;) {
        uint32_t c;
        wm_exi_status st = pick(r, 3 - next + 1, &c);
        if (st) return st;
        if (c == 3 - next) return WM_EXI_OK;
        unsigned child = next + c;
        if (child == 0) o->compression = true;
        else if (child == 1) o->fragment = true;
        else if ((st = read_schema_id(r, o))) return st;
        next = child + 1;
    }
}

static wm_exi_status read_options(wm_exi_reader *r, wm_exi_options *o)
{
    wm_exi_options_default(o);
    uint32_t c;
    /* DocContent: SE(header), SE(*) (§8.5.1); DT/CM/PI are pruned. */
    wm_exi_status st = pick(r, 2, &c);
    if (st) return st;
    if (c != 0)
        return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options document root is not <header> (App. C)");
    for (unsigned next = 0;;) {
        if ((st = pick(r, 3 - next + 1, &c))) return st;
        if (c == 3 - next) break;
        unsigned child = next + c;
        if (child == 0) st = read_lesscommon(r, o);
        else if (child == 1) st = read_common(r, o);
        else o->strict = true;
        if (st) return st;
        next = child + 1;
    }
    /* §5.4 constraints between options. */
    if (o->compression && o->alignment != WM_EXI_BIT_PACKED)
        return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options: alignment together with compression (§5.4)");
    if (o->strict && (o->preserve_dtd || o->preserve_prefixes || o->preserve_comments || o->preserve_pis ||
                      o->self_contained))
        return wm_exi_fail(r->err, WM_EXI_E_OPTIONS, r->pos, "options: strict together with dtd/prefixes/comments/pis/selfContained (§5.4)");
    return WM_EXI_OK;
}

wm_exi_status wm_exi_header_read(wm_exi_reader *r, wm_exi_header *h, wm_exi_options *opts)
{
    memset(h, 0, sizeof *h);
    wm_exi_status st;
    uint32_t v;
    if (r->len_bits - r->pos >= 32 && r->pos % 8 == 0 && !memcmp(r->buf + r->pos / 8, "$EXI", 4)) {
        h->cookie = true;
        r->pos += 32;
    } else if (r->len_bits - r->pos >= 8 && r->buf[r->pos / 8] == '$') {
        return wm_exi_fail(r->err, WM_EXI_E_HEADER, r->pos, "stream starts with '$' but not the \"$EXI\" cookie (§5.1)");
    }
    if ((st = wm_exi_read_raw(r, 2, &v))) return st;
    if (v != 2)
        return wm_exi_fail(r->err, WM_EXI_E_HEADER, r->pos - 2, "distinguishing bits are not 10 (§5.2): not an EXI stream");
    if ((st = wm_exi_read_raw(r, 1, &v))) return st;
    h->options_present = v;
    if ((st = wm_exi_read_raw(r, 1, &v))) return st;
    h->preview = v;
    uint32_t version = 1;
    for (;;) {
        if ((st = wm_exi_read_raw(r, 4, &v))) return st;
        version += v;
        if (v != 15) break;
        if (version > 1000)
            return wm_exi_fail(r->err, WM_EXI_E_HEADER, r->pos, "format version field too long (§5.3)");
    }
    h->version = version;
    if (version != 1)
        return wm_exi_fail(r->err, WM_EXI_E_HEADER, r->pos, "EXI format version %u%s; only version 1 is known (§5.3)",
                           version, h->preview ? " (preview)" : "");
    if (h->options_present && (st = read_options(r, opts))) return st;
    if (opts->compression)
        return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, r->pos, "EXI compression (§9) is not supported: stream refused");
    if (opts->alignment == WM_EXI_PRE_COMPRESSION)
        return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, r->pos, "EXI pre-compression alignment (§9) is not supported: stream refused");
    if (opts->self_contained)
        return wm_exi_fail(r->err, WM_EXI_E_UNSUPPORTED, r->pos, "selfContained elements are not supported (§5.4)");
    r->byte_aligned = opts->alignment == WM_EXI_BYTE_ALIGNED;
    if (r->byte_aligned) wm_exi_reader_align(r);
    return WM_EXI_OK;
}

/* ------------------------------------------------------------ writing */

static wm_exi_status put(wm_exi_writer *w, uint32_t n, uint32_t c) { return wm_exi_write_raw(w, wm_exi_code_width(n), c); }

static wm_exi_status write_options(wm_exi_writer *w, const wm_exi_options *o)
{
    wm_exi_status st;
    bool uncommon = o->alignment != WM_EXI_BIT_PACKED || o->value_max_length != WM_EXI_UNBOUNDED ||
                    o->value_partition_capacity != WM_EXI_UNBOUNDED;
    bool preserve = o->preserve_dtd || o->preserve_prefixes || o->preserve_lexical_values ||
                    o->preserve_comments || o->preserve_pis;
    bool block = o->block_size != 1000000;
    bool lesscommon = uncommon || preserve || block;
    bool common = o->compression || o->fragment || o->has_schema_id;
    if ((st = put(w, 2, 0))) return st; /* SE(header) */
    unsigned next = 0;
#define CHILD(k, n) do { if ((st = put(w, (n) - next + 1, (k) - next))) return st; next = (k) + 1; } while (0)
#define END(n) do { if ((st = put(w, (n) - next + 1, (n) - next))) return st; } while (0)
    if (lesscommon) {
        CHILD(0, 3);
        unsigned saved = next;
        next = 0;
        if (uncommon) {
            CHILD(0, 3);
            unsigned n2 = 0; /* uncommon: 5 named children, SE(*) only before alignment */
            struct { bool on; unsigned k; } kids[4] = {
                { o->alignment != WM_EXI_BIT_PACKED, 0 }, { false, 1 },
                { o->value_max_length != WM_EXI_UNBOUNDED, 2 }, { o->value_partition_capacity != WM_EXI_UNBOUNDED, 3 } };
            for (unsigned i = 0; i < 4; i++) {
                if (!kids[i].on) continue;
                uint32_t n = (5 - n2) + (n2 == 0 ? 1 : 0) + 1;
                if ((st = put(w, n, kids[i].k - n2))) return st;
                n2 = kids[i].k + 1;
                if (kids[i].k == 0) st = put(w, 2, o->alignment == WM_EXI_BYTE_ALIGNED ? 0 : 1);
                else if (kids[i].k == 2) st = wm_exi_write_uint(w, o->value_max_length);
                else if (kids[i].k == 3) st = wm_exi_write_uint(w, o->value_partition_capacity);
                if (st) return st;
            }
            uint32_t n = (5 - n2) + (n2 == 0 ? 1 : 0) + 1;
            if ((st = put(w, n, n - 1))) return st;
        }
        if (preserve) {
            CHILD(1, 3);
            bool f[5] = { o->preserve_dtd, o->preserve_prefixes, o->preserve_lexical_values, o->preserve_comments, o->preserve_pis };
            unsigned s2 = next;
            next = 0;
            for (unsigned i = 0; i < 5; i++) if (f[i]) CHILD(i, 5);
            END(5);
            next = s2;
        }
        if (block) {
            CHILD(2, 3);
            if ((st = wm_exi_write_uint(w, o->block_size))) return st;
        }
        END(3);
        next = saved;
    }
    if (common) {
        CHILD(1, 3);
        unsigned saved = next;
        next = 0;
        if (o->compression) CHILD(0, 3);
        if (o->fragment) CHILD(1, 3);
        if (o->has_schema_id) {
            CHILD(2, 3);
            if (o->schema_id_nil) {
                if ((st = put(w, 2, 1)) || (st = wm_exi_write_bool(w, true))) return st;
            } else {
                size_t len = strlen(o->schema_id);
                if ((st = put(w, 2, 0)) || (st = wm_exi_write_uint(w, wm_exi_utf8_count(o->schema_id, len) + 2))) return st;
                for (size_t i = 0; i < len;) {
                    uint32_t cp;
                    unsigned k = wm_exi_utf8_get(o->schema_id + i, len - i, &cp);
                    if (!k) return wm_exi_fail(w->err, WM_EXI_E_INPUT, w->pos, "schemaId is not valid UTF-8");
                    if ((st = wm_exi_write_uint(w, cp))) return st;
                    i += k;
                }
            }
        }
        END(3);
        next = saved;
    }
    if (o->strict) CHILD(2, 3);
    END(3);
#undef CHILD
#undef END
    return WM_EXI_OK;
}

wm_exi_status wm_exi_header_write(wm_exi_writer *w, bool cookie, bool include_options, const wm_exi_options *o)
{
    wm_exi_status st;
    if (o->compression || o->alignment == WM_EXI_PRE_COMPRESSION || o->self_contained)
        return wm_exi_fail(w->err, WM_EXI_E_UNSUPPORTED, w->pos, "cannot write compressed, pre-compressed or self-contained streams");
    if (cookie)
        for (const char *c = "$EXI"; *c; c++)
            if ((st = wm_exi_write_raw(w, 8, (uint8_t)*c))) return st;
    if ((st = wm_exi_write_raw(w, 2, 2)) || (st = wm_exi_write_raw(w, 1, include_options)) ||
        (st = wm_exi_write_raw(w, 1, 0)) || (st = wm_exi_write_raw(w, 4, 0)))
        return st;
    if (include_options && (st = write_options(w, o))) return st;
    w->byte_aligned = o->alignment == WM_EXI_BYTE_ALIGNED;
    if (w->byte_aligned && (st = wm_exi_writer_align(w))) return st;
    return WM_EXI_OK;
}
