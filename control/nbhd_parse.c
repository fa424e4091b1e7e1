/* The neighborhood language parser (grammar and semantics in control/nbhd.h).
 *
 * Hand-written recursive descent over one line at a time: a neighborhood never
 * spans lines, so a cursor bounded by the line end makes every look-ahead
 * safe, and columns are plain offsets from the line start. Lexing depends on
 * context ('.' inside a peid vs. between stages, '#' inside a category filter
 * vs. a comment), which is why the parser reads characters directly instead of
 * going through a separate tokenizer.
 */
#include "control/nbhd.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "codec/mqtt5_utf8.h"

typedef struct parser {
    const char *s;          /* the line */
    size_t len;             /* its length without LF (and without a CR before it) */
    size_t i;               /* cursor */
    uint32_t line;          /* 1-based */
    wm_nbhd_error *err;     /* never NULL inside the parser */
} parser;

/* ------------------------------------------------------------ errors */

static bool fail_at(parser *p, size_t at, wm_nbhd_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail_at(parser *p, size_t at, wm_nbhd_status st, const char *fmt, ...)
{
    if (p->err->status != WM_NBHD_OK) return false; /* keep the first error */
    p->err->status = st;
    p->err->pos.line = p->line;
    p->err->pos.col = (uint32_t)(at + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
    va_end(ap);
    return false;
}

/* Describes the character at the cursor for "expected X, found Y". */
static const char *found(const parser *p, size_t at, char *buf, size_t cap)
{
    if (at >= p->len) return "end of line";
    unsigned char c = (unsigned char)p->s[at];
    if (c >= 0x21 && c < 0x7f) snprintf(buf, cap, "'%c'", c);
    else if (c == ' ' || c == '\t') snprintf(buf, cap, "whitespace");
    else if (c == 0xe2 && at + 2 < p->len && (unsigned char)p->s[at + 1] == 0x80 &&
             (unsigned char)p->s[at + 2] == 0xa2) snprintf(buf, cap, "'\xe2\x80\xa2'");
    else snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static bool expected(parser *p, const char *what)
{
    char b[32];
    return fail_at(p, p->i, WM_NBHD_ERR_SYNTAX, "expected %s, found %s", what, found(p, p->i, b, sizeof b));
}

/* ------------------------------------------------------------ lexing */

static void skip_ws(parser *p)
{
    while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t')) p->i++;
}

static bool at_char(const parser *p, char c) { return p->i < p->len && p->s[p->i] == c; }

static bool eat(parser *p, char c, const char *what)
{
    skip_ws(p);
    if (!at_char(p, c)) return expected(p, what);
    p->i++;
    return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '.' || c == '-'; }
static bool is_peid_char(char c) { return is_name_char(c) || c == ':' || c == '/'; }
static bool is_cat_char(char c)
{
    unsigned char u = (unsigned char)c;
    return u > 0x20 && u != 0x7f && c != ',' && c != '{' && c != '}' && c != '(' && c != ')' && c != '"';
}

/* The stage separator: '.' or U+2022 BULLET. */
static bool eat_separator(parser *p)
{
    if (at_char(p, '.')) { p->i++; return true; }
    if (p->i + 3 <= p->len && (unsigned char)p->s[p->i] == 0xe2 &&
        (unsigned char)p->s[p->i + 1] == 0x80 && (unsigned char)p->s[p->i + 2] == 0xa2) {
        p->i += 3;
        return true;
    }
    return false;
}

/* A run of ASCII letters (keywords: Prev, Anc, visible, E, I, D, T, C, DW). */
static size_t word_len(const parser *p)
{
    size_t n = 0;
    while (p->i + n < p->len && is_alpha(p->s[p->i + n])) n++;
    return n;
}

static bool word_is(const parser *p, size_t n, const char *kw)
{
    return n == strlen(kw) && memcmp(p->s + p->i, kw, n) == 0;
}

/* A keyword that must not run into a following identifier ("Prev2"). */
static bool keyword_is(const parser *p, size_t n, const char *kw)
{
    return word_is(p, n, kw) && !(p->i + n < p->len && is_name_char(p->s[p->i + n]));
}

/* An unsigned decimal integer in [lo, hi]; `what` names it in errors. */
static bool parse_uint(parser *p, uint32_t lo, uint32_t hi, const char *what, uint32_t *out)
{
    size_t start = p->i;
    if (!(p->i < p->len && is_digit(p->s[p->i]))) return expected(p, what);
    uint64_t v = 0;
    while (p->i < p->len && is_digit(p->s[p->i])) {
        if (v <= 0xffffffffu) v = v * 10 + (uint64_t)(p->s[p->i] - '0');
        p->i++;
    }
    if (v < lo || v > hi)
        return fail_at(p, start, WM_NBHD_ERR_BAD_NUMBER, "%s %.*s out of range %u..%u", what,
                       (int)(p->i - start > 20 ? 20 : p->i - start), p->s + start, lo, hi);
    *out = (uint32_t)v;
    return true;
}

/* A double-quoted string at the cursor, decoded into a fresh NUL-terminated
 * buffer (\" and \\ are the only escapes). */
static bool parse_quoted(parser *p, char **out, size_t *out_len)
{
    size_t start = p->i++;
    char *buf = NULL;
    size_t n = 0;
    for (;;) {
        if (p->i >= p->len) {
            free(buf);
            return fail_at(p, start, WM_NBHD_ERR_BAD_STRING, "unterminated string");
        }
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') { p->i++; break; }
        if (c < 0x20 || c == 0x7f) {
            free(buf);
            return fail_at(p, p->i, WM_NBHD_ERR_BAD_STRING, "control byte 0x%02x in a string", c);
        }
        if (c == '\\') {
            if (p->i + 1 >= p->len || (p->s[p->i + 1] != '"' && p->s[p->i + 1] != '\\')) {
                free(buf);
                return fail_at(p, p->i, WM_NBHD_ERR_BAD_STRING, "bad escape (only \\\" and \\\\)");
            }
            p->i++;
            c = (unsigned char)p->s[p->i];
        }
        if (n >= WM_NBHD_MAX_TOKEN) {
            free(buf);
            return fail_at(p, start, WM_NBHD_ERR_LIMIT, "string longer than %u bytes", WM_NBHD_MAX_TOKEN);
        }
        if (!buf && !(buf = malloc(WM_NBHD_MAX_TOKEN + 1)))
            return fail_at(p, start, WM_NBHD_ERR_NOMEM, "out of memory");
        buf[n++] = (char)c;
        p->i++;
    }
    size_t bad;
    if (n && wm_utf8_validate((const uint8_t *)buf, n, &bad) != WM_UTF8_OK) {
        free(buf);
        return fail_at(p, start, WM_NBHD_ERR_BAD_STRING, "string is not valid UTF-8 (decoded byte %zu)", bad);
    }
    char *s = malloc(n + 1);
    if (!s) { free(buf); return fail_at(p, start, WM_NBHD_ERR_NOMEM, "out of memory"); }
    if (n) memcpy(s, buf, n);
    s[n] = 0;
    free(buf);
    *out = s;
    *out_len = n;
    return true;
}

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

/* ------------------------------------------------------------ stage parts */
/* A peid or category filter: a bare run of `is_char` bytes or a quoted string,
 * as a fresh NUL-terminated copy. `what` names it in errors. */
static bool parse_token(parser *p, bool (*is_char)(char), const char *what, char **out, size_t *out_len)
{
    size_t start = p->i;
    if (at_char(p, '"')) return parse_quoted(p, out, out_len);
    while (p->i < p->len && is_char(p->s[p->i])) p->i++;
    size_t n = p->i - start;
    if (n == 0) return expected(p, what);
    if (n > WM_NBHD_MAX_TOKEN)
        return fail_at(p, start, WM_NBHD_ERR_LIMIT, "%s longer than %u bytes", what + 2 /* skip "a " */, WM_NBHD_MAX_TOKEN);
    if (!(*out = dup_range(p->s + start, n))) return fail_at(p, start, WM_NBHD_ERR_NOMEM, "out of memory");
    *out_len = n;
    return true;
}


/* Growth helper: doubles *cap (from `first`) so that *n < *cap. */
static bool grow(parser *p, void **arr, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : first;
    void *na = realloc(*arr, nc * elem);
    if (!na) return fail_at(p, p->i, WM_NBHD_ERR_NOMEM, "out of memory");
    *arr = na;
    *cap = nc;
    return true;
}

/* '{' PEID { ',' PEID } '}' with the cursor on '{'. */
static bool parse_peid_set(parser *p, wm_nbhd_stage *st)
{
    size_t open = p->i++;
    size_t cap = 0;
    skip_ws(p);
    if (at_char(p, '}'))
        return fail_at(p, open, WM_NBHD_ERR_EMPTY_SET, "empty reference set: stage 1 needs at least one peid");
    for (;;) {
        skip_ws(p);
        size_t start = p->i;
        char *s = NULL;
        size_t n = 0;
        if (!parse_token(p, is_peid_char, "a peid", &s, &n)) return false;
        if (n == 0) { free(s); return fail_at(p, start, WM_NBHD_ERR_BAD_STRING, "empty peid"); }
        if (st->n_peids >= WM_NBHD_MAX_REFS) {
            free(s);
            return fail_at(p, start, WM_NBHD_ERR_LIMIT, "more than %u reference peids", WM_NBHD_MAX_REFS);
        }
        if (!grow(p, (void **)&st->peids, &cap, st->n_peids, sizeof *st->peids, 4)) { free(s); return false; }
        st->peids[st->n_peids++] = (wm_nbhd_peid){ s, n, { p->line, (uint32_t)(start + 1) } };
        skip_ws(p);
        if (at_char(p, ',')) { p->i++; continue; }
        if (at_char(p, '}')) { p->i++; return true; }
        return expected(p, "',' or '}' in the reference set");
    }
}

/* SET of stage numbers, each in 1..hi, with the cursor on '{'; `what` and
 * `status` tune the messages for reference sets vs. the visible set. */
static bool parse_stage_set(parser *p, uint32_t stage, uint32_t hi, bool visible, uint64_t *mask)
{
    size_t open = p->i++;
    *mask = 0;
    skip_ws(p);
    if (at_char(p, '}'))
        return fail_at(p, open, WM_NBHD_ERR_EMPTY_SET, visible ? "empty visible set" : "empty set of reference stages");
    for (;;) {
        skip_ws(p);
        size_t start = p->i;
        uint32_t v;
        if (!parse_uint(p, 0, 0xffffffffu, "a stage number", &v)) return false;
        if (visible && (v < 1 || v > hi))
            return fail_at(p, start, WM_NBHD_ERR_VISIBLE, "visible stage %u: the neighborhood has stages 1..%u", v, hi);
        if (!visible && v == 0)
            return fail_at(p, start, WM_NBHD_ERR_STAGE_REF,
                           "stage %u refers to stage 0; the references are stage 1's input, name stages 1..%u", stage, hi);
        if (!visible && v > hi)
            return fail_at(p, start, WM_NBHD_ERR_STAGE_REF,
                           "stage %u refers to stage %u, which is not an earlier stage", stage, v);
        *mask |= 1ull << (v - 1);
        skip_ws(p);
        if (at_char(p, ',')) { p->i++; continue; }
        if (at_char(p, '}')) { p->i++; return true; }
        return expected(p, "',' or '}' in the stage set");
    }
}

/* '{' CATFILTER { ',' CATFILTER } '}' */
static bool parse_cats(parser *p, wm_nbhd_stage *st)
{
    skip_ws(p);
    if (!at_char(p, '{')) return expected(p, "'{' opening the category filters");
    size_t open = p->i++;
    size_t cap = 0;
    skip_ws(p);
    if (at_char(p, '}')) return fail_at(p, open, WM_NBHD_ERR_EMPTY_SET, "empty category set");
    for (;;) {
        skip_ws(p);
        size_t start = p->i;
        bool quoted = at_char(p, '"');
        char *s = NULL;
        size_t n = 0;
        if (!parse_token(p, is_cat_char, "a category filter", &s, &n)) return false;
        size_t off = 0;
        wm_topic_status ts = wm_topic_filter_validate(s, n, &off);
        if (ts != WM_TOPIC_OK) {
            free(s);
            /* Offsets into a decoded quoted string do not map back to
             * columns after an escape: point at its opening quote. */
            size_t at = quoted ? start : start + off;
            return fail_at(p, at, WM_NBHD_ERR_BAD_CATFILTER, "bad category filter: %s [%s]",
                           wm_topic_status_message(ts), wm_topic_status_name(ts));
        }
        if (wm_topic_share_split(s, n, NULL)) {
            free(s);
            return fail_at(p, start, WM_NBHD_ERR_BAD_CATFILTER,
                           "bad category filter: a shared-subscription filter ($share/...) names no categories");
        }
        if (st->n_cats >= WM_NBHD_MAX_CATS) {
            free(s);
            return fail_at(p, start, WM_NBHD_ERR_LIMIT, "more than %u category filters in a stage", WM_NBHD_MAX_CATS);
        }
        size_t pcap = cap;
        if (!grow(p, (void **)&st->cats, &cap, st->n_cats, sizeof *st->cats, 4) ||
            !grow(p, (void **)&st->cat_pos, &pcap, st->n_cats, sizeof *st->cat_pos, 4)) {
            free(s);
            return false;
        }
        st->cat_pos[st->n_cats] = (wm_nbhd_pos){ p->line, (uint32_t)(start + 1) };
        st->cats[st->n_cats++] = s;
        skip_ws(p);
        if (at_char(p, ',')) { p->i++; continue; }
        if (at_char(p, '}')) { p->i++; return true; }
        return expected(p, "',' or '}' in the category filters");
    }
}

/* 'E' | 'I' | 'D' | 'T' | 'C' | 'DW' NUMBER */
static bool parse_cond(parser *p, wm_nbhd_stage *st)
{
    skip_ws(p);
    size_t start = p->i, n = word_len(p);
    static const struct { const char *kw; wm_nbhd_rel rel; } conds[] = {
        { "E", WM_REL_EQUALS }, { "I", WM_REL_INTERSECTS }, { "D", WM_REL_DISJOINT },
        { "T", WM_REL_TOUCHES }, { "C", WM_REL_CONTAINS }, { "DW", WM_REL_DWITHIN },
    };
    for (size_t k = 0; k < sizeof conds / sizeof conds[0]; k++) {
        if (!word_is(p, n, conds[k].kw)) continue;
        p->i += n;
        st->rel = conds[k].rel;
        if (st->rel != WM_REL_DWITHIN) return true;
        skip_ws(p);
        size_t ns = p->i;
        if (!(p->i < p->len && is_digit(p->s[p->i]))) return expected(p, "a distance in metres after DW");
        while (p->i < p->len && is_digit(p->s[p->i])) p->i++;
        if (at_char(p, '.')) {
            p->i++;
            if (!(p->i < p->len && is_digit(p->s[p->i]))) return expected(p, "digits after the decimal point");
            while (p->i < p->len && is_digit(p->s[p->i])) p->i++;
        }
        if (p->i < p->len && (p->s[p->i] == 'e' || p->s[p->i] == 'E'))
            return fail_at(p, p->i, WM_NBHD_ERR_BAD_NUMBER,
                           "DW's distance is metres as decimal digits [.digits], without an exponent");
        char num[64];
        if (p->i - ns >= sizeof num)
            return fail_at(p, ns, WM_NBHD_ERR_BAD_NUMBER, "distance has more than %zu characters", sizeof num - 1);
        memcpy(num, p->s + ns, p->i - ns);
        num[p->i - ns] = 0;
        double d = strtod(num, NULL);
        if (!(d <= WM_NBHD_MAX_DISTANCE_M))
            return fail_at(p, ns, WM_NBHD_ERR_BAD_NUMBER, "distance %s m above the bound %.0f m", num, WM_NBHD_MAX_DISTANCE_M);
        st->distance_m = d;
        return true;
    }
    /* "DWnan", "DWinf": a distance spelled as a word; name the form DW takes */
    if (n > 2 && p->s[start] == 'D' && p->s[start + 1] == 'W')
        return fail_at(p, start + 2, WM_NBHD_ERR_BAD_NUMBER,
                       "DW's distance is metres as decimal digits [.digits] (no nan, inf or exponent), found '%.*s'",
                       (int)(n - 2 > 16 ? 16 : n - 2), p->s + start + 2);
    p->i = start;
    return expected(p, "a condition (E, I, D, T, C or DW<metres>)");
}

/* ------------------------------------------------------------ freeing */

static void stage_free(wm_nbhd_stage *st)
{
    for (size_t k = 0; k < st->n_peids; k++) free(st->peids[k].peid);
    free(st->peids);
    for (size_t k = 0; k < st->n_cats; k++) free(st->cats[k]);
    free(st->cats);
    free(st->cat_pos);
    memset(st, 0, sizeof *st);
}

void wm_nbhd_free(wm_nbhd *n)
{
    if (!n) return;
    for (size_t k = 0; k < n->n_stages; k++) stage_free(&n->stages[k]);
    free(n->stages);
    free(n->name);
    memset(n, 0, sizeof *n);
}

void wm_nbhd_file_free(wm_nbhd_file *f)
{
    if (!f) return;
    for (size_t k = 0; k < f->n_nbhds; k++) wm_nbhd_free(&f->nbhds[k]);
    free(f->nbhds);
    memset(f, 0, sizeof *f);
}

/* A copy of a stage's category filters (COUNT expansion). */
static bool copy_cats(const wm_nbhd_stage *from, wm_nbhd_stage *to)
{
    to->cats = calloc(from->n_cats, sizeof *to->cats);
    to->cat_pos = malloc(from->n_cats * sizeof *to->cat_pos);
    if (!to->cats || !to->cat_pos) return false;
    memcpy(to->cat_pos, from->cat_pos, from->n_cats * sizeof *to->cat_pos);
    for (size_t k = 0; k < from->n_cats; k++) {
        if (!(to->cats[k] = strdup(from->cats[k]))) return false;
        to->n_cats = k + 1;
    }
    return true;
}

/* ------------------------------------------------------------ stages, lines */

/* One written stage (COUNT copies) appended to n->stages. */
static bool parse_stage(parser *p, wm_nbhd *n, size_t *stage_cap)
{
    skip_ws(p);
    size_t start = p->i;
    uint32_t count = 1;
    uint32_t first = (uint32_t)n->n_stages + 1; /* the stage number of the first copy */
    if (p->i < p->len && is_digit(p->s[p->i])) {
        if (!parse_uint(p, 1, WM_NBHD_MAX_STAGES, "COUNT", &count)) return false;
        skip_ws(p);
    }
    if (!at_char(p, '(')) return expected(p, "'(' opening a stage");
    p->i++;
    if (first - 1 + (uint64_t)count > WM_NBHD_MAX_STAGES)
        return fail_at(p, start, WM_NBHD_ERR_LIMIT, "more than %u stages", WM_NBHD_MAX_STAGES);

    wm_nbhd_stage st;
    memset(&st, 0, sizeof st);
    st.pos = (wm_nbhd_pos){ p->line, (uint32_t)(start + 1) };
    skip_ws(p);
    size_t refs_at = p->i, w = word_len(p);
    bool ok;
    if (at_char(p, '{')) {
        if (first == 1) {
            st.refkind = WM_REFS_PEIDS;
            ok = parse_peid_set(p, &st);
            if (ok && count > 1)
                ok = fail_at(p, start, WM_NBHD_ERR_STAGE_REF,
                             "COUNT %u on stage 1: only stage 1 takes reference peids, later stages take earlier stages", count);
        } else {
            st.refkind = WM_REFS_SET;
            ok = parse_stage_set(p, first, first - 1, false, &st.ref_stages);
        }
    } else if (keyword_is(p, w, "Prev") || keyword_is(p, w, "Anc")) {
        st.refkind = word_is(p, w, "Prev") ? WM_REFS_PREV : WM_REFS_ANC;
        p->i += w;
        ok = first > 1 || fail_at(p, refs_at, WM_NBHD_ERR_STAGE_REF,
                                  "%.*s on stage 1: stage 1 has no earlier stage; give reference peids in braces",
                                  (int)w, p->s + refs_at);
    } else {
        ok = expected(p, first == 1 ? "'{' opening the reference peids" : "'Prev', 'Anc' or '{' opening a set of stages");
    }
    ok = ok && eat(p, ',', "',' after the references") && parse_cats(p, &st) &&
         eat(p, ',', "',' after the category filters") && parse_cond(p, &st) &&
         eat(p, ')', "')' closing the stage");
    if (!ok) { stage_free(&st); return false; }

    for (uint32_t c = 0; c < count; c++) {
        uint32_t i = first + c;
        wm_nbhd_stage cp = st;
        if (c > 0) {
            cp.peids = NULL; cp.n_peids = 0; /* COUNT > 1 never has peids */
            cp.cats = NULL; cp.cat_pos = NULL; cp.n_cats = 0;
            if (!copy_cats(&st, &cp)) { /* the first copy already belongs to n */
                stage_free(&cp);
                return fail_at(p, start, WM_NBHD_ERR_NOMEM, "out of memory");
            }
        }
        if (cp.refkind == WM_REFS_PREV) cp.ref_stages = (i - 1 >= 64) ? ~0ull : ((1ull << (i - 1)) - 1);
        else if (cp.refkind == WM_REFS_ANC) cp.ref_stages = 1ull << (i - 2);
        if (!grow(p, (void **)&n->stages, stage_cap, n->n_stages, sizeof *n->stages, 4)) {
            if (c > 0) stage_free(&cp);
            else stage_free(&st);
            return false;
        }
        n->stages[n->n_stages++] = cp;
    }
    return true;
}

/* Skips trailing blanks and an optional comment; true at the end of the line. */
static bool at_line_end(parser *p)
{
    skip_ws(p);
    return p->i >= p->len || p->s[p->i] == '#';
}

/* NAME ':' stage { sep stage } [ 'visible' SET ] with the cursor on NAME. */
static bool parse_nbhd(parser *p, wm_nbhd *n)
{
    memset(n, 0, sizeof *n);
    size_t start = p->i;
    if (!(p->i < p->len && (is_alpha(p->s[p->i]) || is_digit(p->s[p->i]) || p->s[p->i] == '_')))
        return expected(p, "a neighborhood name");
    while (p->i < p->len && is_name_char(p->s[p->i])) p->i++;
    if (p->i - start > WM_NBHD_MAX_NAME)
        return fail_at(p, start, WM_NBHD_ERR_LIMIT, "name longer than %u bytes", WM_NBHD_MAX_NAME);
    if (!(n->name = dup_range(p->s + start, p->i - start)))
        return fail_at(p, start, WM_NBHD_ERR_NOMEM, "out of memory");
    n->pos = (wm_nbhd_pos){ p->line, (uint32_t)(start + 1) };
    if (!eat(p, ':', "':' after the neighborhood name")) return false;

    size_t stage_cap = 0;
    for (;;) {
        if (!parse_stage(p, n, &stage_cap)) return false;
        skip_ws(p);
        if (eat_separator(p)) continue;
        break;
    }
    n->visible = n->n_stages >= 64 ? ~0ull : ((1ull << n->n_stages) - 1);
    size_t w = word_len(p);
    if (keyword_is(p, w, "visible")) {
        p->i += w;
        skip_ws(p);
        if (!at_char(p, '{')) return expected(p, "'{' opening the visible stages");
        if (!parse_stage_set(p, 0, (uint32_t)n->n_stages, true, &n->visible)) return false;
    }
    if (!at_line_end(p)) return expected(p, "'.', '\xe2\x80\xa2', 'visible' or the end of the line");
    return true;
}

static int cmp_name_idx(const void *a, const void *b, void *arg)
{
    const wm_nbhd *ns = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(ns[x].name, ns[y].name);
    return c ? c : (x < y ? -1 : x > y);
}

/* Reports the earliest second use of a name. Sorting keeps this O(n log n)
 * for the largest files we accept. */
static bool check_dup_names(wm_nbhd_file *f, wm_nbhd_error *err)
{
    if (f->n_nbhds < 2) return true;
    size_t *idx = malloc(f->n_nbhds * sizeof *idx);
    if (!idx) {
        err->status = WM_NBHD_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return false;
    }
    for (size_t k = 0; k < f->n_nbhds; k++) idx[k] = k;
    qsort_r(idx, f->n_nbhds, sizeof *idx, cmp_name_idx, f->nbhds);
    /* Sorted by (name, index): the head of each run of equal names is its first use. */
    size_t dup = SIZE_MAX, orig = 0, head = 0;
    for (size_t k = 1; k < f->n_nbhds; k++) {
        if (strcmp(f->nbhds[idx[k]].name, f->nbhds[idx[head]].name)) { head = k; continue; }
        if (idx[k] < dup) { dup = idx[k]; orig = idx[head]; }
    }
    free(idx);
    if (dup == SIZE_MAX) return true;
    err->status = WM_NBHD_ERR_DUP_NAME;
    err->pos = f->nbhds[dup].pos;
    snprintf(err->message, sizeof err->message, "neighborhood name '%s' already used on line %u",
             f->nbhds[dup].name, f->nbhds[orig].pos.line);
    return false;
}

/* ------------------------------------------------------------ entry points */

wm_nbhd_status wm_nbhd_parse(const char *text, size_t len, wm_nbhd_file *out, wm_nbhd_error *err)
{
    wm_nbhd_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    memset(out, 0, sizeof *out);
    if (len > WM_NBHD_MAX_INPUT) {
        err->status = WM_NBHD_ERR_LIMIT;
        snprintf(err->message, sizeof err->message, "file of %zu bytes above the bound of %u bytes", len, WM_NBHD_MAX_INPUT);
        return err->status;
    }
    size_t cap = 0, at = 0;
    uint32_t line = 0;
    while (at < len) {
        line++;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t ll = end - at;
        if (ll && text[at + ll - 1] == '\r') ll--;
        parser p = { text + at, ll, 0, line, err };
        at = end + (nl ? 1 : 0);
        if (ll > WM_NBHD_MAX_LINE) {
            fail_at(&p, WM_NBHD_MAX_LINE, WM_NBHD_ERR_LIMIT, "line longer than %u bytes", WM_NBHD_MAX_LINE);
            break;
        }
        if (memchr(p.s, '\r', ll) || memchr(p.s, 0, ll)) {
            const char *bad = memchr(p.s, 0, ll);
            const char *cr = memchr(p.s, '\r', ll);
            if (!bad || (cr && cr < bad)) bad = cr;
            fail_at(&p, (size_t)(bad - p.s), WM_NBHD_ERR_SYNTAX, "byte 0x%02x not allowed in a neighborhood file",
                    (unsigned char)*bad);
            break;
        }
        if (at_line_end(&p)) continue;
        if (out->n_nbhds >= WM_NBHD_MAX_NBHDS) {
            fail_at(&p, p.i, WM_NBHD_ERR_LIMIT, "more than %u neighborhoods", WM_NBHD_MAX_NBHDS);
            break;
        }
        if (!grow(&p, (void **)&out->nbhds, &cap, out->n_nbhds, sizeof *out->nbhds, 16)) break;
        wm_nbhd *n = &out->nbhds[out->n_nbhds];
        bool ok = parse_nbhd(&p, n);
        out->n_nbhds++; /* owned by *out from here on, freed with it on failure */
        if (!ok) break;
    }
    if (err->status == WM_NBHD_OK) check_dup_names(out, err);
    if (err->status != WM_NBHD_OK) wm_nbhd_file_free(out);
    return err->status;
}

wm_nbhd_status wm_nbhd_parse_one(const char *line, size_t len, wm_nbhd *out, wm_nbhd_error *err)
{
    wm_nbhd_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    memset(out, 0, sizeof *out);
    parser p = { line, len, 0, 1, err };
    if (len > WM_NBHD_MAX_LINE) {
        fail_at(&p, 0, WM_NBHD_ERR_LIMIT, "line longer than %u bytes", WM_NBHD_MAX_LINE);
        return err->status;
    }
    for (size_t k = 0; k < len; k++)
        if (line[k] == '\n' || line[k] == '\r' || line[k] == 0) {
            fail_at(&p, k, WM_NBHD_ERR_SYNTAX, "byte 0x%02x not allowed in a neighborhood", (unsigned char)line[k]);
            return err->status;
        }
    skip_ws(&p);
    if (!parse_nbhd(&p, out)) {
        wm_nbhd_free(out);
        return err->status;
    }
    return WM_NBHD_OK;
}

const char *wm_nbhd_error_format(const wm_nbhd_error *err, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    if (err->pos.line)
        snprintf(buf, cap, "%u:%u: %s", err->pos.line, err->pos.col, err->message);
    else
        snprintf(buf, cap, "%s", err->message);
    return buf;
}

const char *wm_nbhd_status_name(wm_nbhd_status st)
{
    switch (st) {
    case WM_NBHD_OK: return "ok";
    case WM_NBHD_ERR_SYNTAX: return "syntax";
    case WM_NBHD_ERR_EMPTY_SET: return "empty_set";
    case WM_NBHD_ERR_BAD_STRING: return "bad_string";
    case WM_NBHD_ERR_BAD_NUMBER: return "bad_number";
    case WM_NBHD_ERR_BAD_CATFILTER: return "bad_catfilter";
    case WM_NBHD_ERR_STAGE_REF: return "stage_ref";
    case WM_NBHD_ERR_VISIBLE: return "visible";
    case WM_NBHD_ERR_DUP_NAME: return "dup_name";
    case WM_NBHD_ERR_LIMIT: return "limit";
    case WM_NBHD_ERR_UNKNOWN_PEID: return "unknown_peid";
    case WM_NBHD_ERR_UNKNOWN_CATEGORY: return "unknown_category";
    case WM_NBHD_ERR_GEOMETRY: return "geometry";
    case WM_NBHD_ERR_NOMEM: return "nomem";
    }
    return "unknown";
}

const char *wm_nbhd_rel_name(wm_nbhd_rel rel)
{
    static const char *const names[] = { "E", "I", "D", "T", "C", "DW" };
    return (unsigned)rel < sizeof names / sizeof names[0] ? names[rel] : "?";
}
