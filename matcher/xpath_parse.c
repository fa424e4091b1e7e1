/* Recursive-descent parser of the XPath subset (matcher/xpath_parse.h).
 * Every loop advances the cursor and recursion is capped by WM_XP_MAX_DEPTH,
 * so the parse is linear in the input and bounded in stack. */
#include "matcher/xpath_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_NS "http://www.w3.org/XML/1998/namespace"
#define XMLNS_NS "http://www.w3.org/2000/xmlns/"
#define ANY_PREFIX_URI "urn:x-wirematch:unbound-prefix"

typedef struct pctx {
    const char *q;
    size_t len, i;
    const wm_xp_ns *ns;
    size_t n_ns;
    wm_xp_query *out;
    wm_xp_error *err;
    unsigned depth;
    bool failed;
    bool any_prefix;     /* wm_xp_syntax_check: an unbound prefix is bound to ANY_PREFIX_URI */
    uint64_t width;      /* expanded width of the matches() patterns so far */
} pctx;

static bool fail(pctx *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(pctx *p, size_t at, const char *fmt, ...)
{
    if (p->failed) return false;
    p->failed = true;
    if (p->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
        va_end(ap);
        p->err->pos = (uint32_t)at + 1;
    }
    return false;
}

static bool oom(pctx *p)
{
    fail(p, 0, "out of memory");
    if (p->err) p->err->pos = 0;
    return false;
}

static void skip_ws(pctx *p)
{
    while (p->i < p->len && (p->q[p->i] == ' ' || p->q[p->i] == '\t' || p->q[p->i] == '\n' || p->q[p->i] == '\r'))
        p->i++;
}

static bool at_char(pctx *p, char c)
{
    skip_ws(p);
    return p->i < p->len && p->q[p->i] == c;
}

static bool eat(pctx *p, char c)
{
    if (!at_char(p, c)) return false;
    p->i++;
    return true;
}

static bool expect(pctx *p, char c, const char *what)
{
    if (eat(p, c)) return true;
    skip_ws(p);
    if (p->i >= p->len) return fail(p, p->i, "expected '%c' %s, found the end of the query", c, what);
    return fail(p, p->i, "expected '%c' %s, found '%c'", c, what, p->q[p->i]);
}

/* NCName characters: ASCII letters, digits, '_', '-', '.', and any non-ASCII
 * byte (names are UTF-8; their exact XML class is the schema's business). */
static bool name_start(unsigned char c) { return (c | 32) >= 'a' && (c | 32) <= 'z' ? true : c == '_' || c >= 0x80; }
static bool name_char(unsigned char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

static size_t ncname_len(pctx *p, size_t at)
{
    size_t k = at;
    if (k >= p->len || !name_start((unsigned char)p->q[k])) return 0;
    while (k < p->len && name_char((unsigned char)p->q[k])) k++;
    return k - at;
}

static char *keep(pctx *p, const char *s, size_t n)
{
    wm_xp_query *o = p->out;
    if (o->n_owned == o->cap_owned) {
        uint32_t nc = o->cap_owned ? o->cap_owned * 2 : 16;
        char **no = realloc(o->owned, nc * sizeof *no);
        if (!no) return NULL;
        o->owned = no;
        o->cap_owned = nc;
    }
    char *c = malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    o->owned[o->n_owned++] = c;
    return c;
}

static const char *ns_lookup(pctx *p, const char *pre, size_t n)
{
    for (size_t k = p->n_ns; k-- > 0;)
        if (strlen(p->ns[k].prefix) == n && !memcmp(p->ns[k].prefix, pre, n)) return p->ns[k].uri;
    if (n == 3 && !memcmp(pre, "xml", 3)) return XML_NS;
    return p->any_prefix ? ANY_PREFIX_URI : NULL;
}

/* QName or name test at the cursor. allow_wild: '*' and 'p:*'. */
static bool parse_name(pctx *p, wm_xp_name *nm, bool allow_wild, const char *what)
{
    skip_ws(p);
    size_t at = p->i;
    memset(nm, 0, sizeof *nm);
    nm->uri = "";
    if (allow_wild && p->i < p->len && p->q[p->i] == '*') {
        p->i++;
        nm->any_uri = true;
        return true;
    }
    size_t n1 = ncname_len(p, p->i);
    if (!n1) {
        if (p->i >= p->len) return fail(p, at, "expected %s, found the end of the query", what);
        return fail(p, at, "expected %s, found '%c'", what, p->q[p->i]);
    }
    size_t k = p->i + n1;
    if (k < p->len && p->q[k] == ':' && !(k + 1 < p->len && p->q[k + 1] == ':')) {
        const char *uri = ns_lookup(p, p->q + p->i, n1);
        if (!uri)
            return fail(p, at, "namespace prefix '%.*s' is not bound (bind it with --ns PREFIX=URI, or P=URI in the "
                        "schema registry)", (int)n1, p->q + p->i);
        if (!(nm->uri = keep(p, uri, strlen(uri)))) return oom(p);
        k++;
        if (allow_wild && k < p->len && p->q[k] == '*') {
            p->i = k + 1;
            return true;
        }
        size_t n2 = ncname_len(p, k);
        if (!n2) return fail(p, k, "expected a local name after '%.*s:'", (int)n1, p->q + p->i);
        if (!(nm->local = keep(p, p->q + k, n2))) return oom(p);
        p->i = k + n2;
        return true;
    }
    if (k + 1 < p->len && p->q[k] == ':' && p->q[k + 1] == ':')
        return fail(p, at, "axis '%.*s::' is outside the subset (use '/', '//' and '@')", (int)n1, p->q + p->i);
    if (!(nm->local = keep(p, p->q + p->i, n1))) return oom(p);
    p->i = k;
    return true;
}

static uint32_t new_node(pctx *p, uint8_t kind, size_t at)
{
    wm_xp_query *o = p->out;
    if (o->n_nodes >= WM_XP_MAX_NODES) {
        fail(p, at, "predicate too large (more than %d terms)", WM_XP_MAX_NODES);
        return WM_XP_NONE;
    }
    wm_xp_node *n = &o->nodes[o->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->a = n->b = WM_XP_NONE;
    n->pos = (uint32_t)at + 1;
    n->flags = "";
    return o->n_nodes++;
}

/* Is the keyword w (followed by a non-name character) at the cursor? */
static bool at_word(pctx *p, const char *w)
{
    skip_ws(p);
    size_t n = strlen(w);
    return p->i + n <= p->len && !memcmp(p->q + p->i, w, n) &&
           (p->i + n == p->len || !name_char((unsigned char)p->q[p->i + n]));
}

/* A function name w followed by '(' (whitespace allowed between). */
static bool at_call(pctx *p, const char *w)
{
    if (!at_word(p, w)) return false;
    size_t k = p->i + strlen(w);
    while (k < p->len && (p->q[k] == ' ' || p->q[k] == '\t' || p->q[k] == '\n' || p->q[k] == '\r')) k++;
    return k < p->len && p->q[k] == '(';
}

static bool parse_string(pctx *p, const char **s, uint32_t *slen)
{
    skip_ws(p);
    size_t at = p->i;
    if (p->i >= p->len || (p->q[p->i] != '\'' && p->q[p->i] != '"')) return fail(p, at, "expected a string literal");
    char qc = p->q[p->i];
    const char *e = memchr(p->q + p->i + 1, qc, p->len - p->i - 1);
    if (!e) return fail(p, at, "unterminated string literal");
    size_t n = (size_t)(e - (p->q + p->i + 1));
    if (memchr(p->q + p->i + 1, 0, n)) return fail(p, at, "NUL byte in a string literal");
    if (!(*s = keep(p, p->q + p->i + 1, n))) return oom(p);
    *slen = (uint32_t)n;
    p->i += n + 2;
    return true;
}

/* Expanded width of a matches() pattern (Hyperscan/PCRE syntax), a bound on
 * the positions Hyperscan's compiler builds: every atom (character, escape,
 * class, '.') counts 1, a group the sum of its alternatives, a bounded
 * repetition {m}, {m,}, {m,n} multiplies what it repeats by its largest
 * count, '*', '+', '?' by 1. Hyperscan unrolls bounded repetitions, so its
 * compile time and memory follow this width, not the pattern's length
 * (".{30000}": ~20 s and ~430 MB before it refuses; ".{255}": 0.06 s).
 * A Unicode property (\p{..}, \P{..}, alone or in a class) counts
 * WM_XP_UNICODE_CLASS_WIDTH: in UTF-8 mode it becomes hundreds of byte
 * sequences ("\p{L}{30}": 3.1 s and 107 MB alone). Over-counts escapes
 * like \x41 (3): the bound errs on the safe side.
 * at: position of the pattern's first byte in the query. */
static bool pattern_width(pctx *p, const char *s, uint32_t n, size_t at, uint64_t *width)
{
    uint64_t sum[WM_XP_MAX_DEPTH + 1] = { 0 }, last = 0;
    unsigned d = 0;
    const uint64_t sat = UINT64_C(1) << 32; /* saturate: the product of nested counts overflows */
    for (uint32_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t c_at = at + i;
        uint64_t w = 1; /* this atom's width */
        i++;
        if (c == '\\' && i < n && s[i] == 'Q') { /* \Q...\E: a literal run */
            const char *e = NULL;
            for (uint32_t k = i + 1; k + 1 < n && !e; k++)
                if (s[k] == '\\' && s[k + 1] == 'E') e = s + k;
            uint32_t k = e ? (uint32_t)(e - s) - (i + 1) : n - (i + 1);
            sum[d] += k;
            last = 1;
            i += 1 + k + (e ? 2 : 0);
            continue;
        }
        if (c == '\\') {
            if (i < n && (s[i] == 'p' || s[i] == 'P')) w = WM_XP_UNICODE_CLASS_WIDTH;
            if (i < n && strchr("xopPNgk", s[i]) && i + 1 < n && s[i + 1] == '{') {
                const char *e = memchr(s + i, '}', n - i);
                i = e ? (uint32_t)(e - s) + 1 : n;
            } else if (i < n && s[i] == 'c') i += 2 < n - i ? 2 : n - i;
            else if (i < n) i++;
        } else if (c == '[') {
            if (i < n && s[i] == '^') i++;
            if (i < n && s[i] == ']') i++;
            while (i < n && s[i] != ']') {
                if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'p' || s[i + 1] == 'P')) w = WM_XP_UNICODE_CLASS_WIDTH;
                if (s[i] == '\\') i += 2;
                else if (s[i] == '[' && i + 1 < n && s[i + 1] == ':') {
                    const char *e = memchr(s + i + 2, ']', n - i - 2);
                    i = e ? (uint32_t)(e - s) + 1 : n;
                } else i++;
            }
            i = i < n ? i + 1 : n;
        } else if (c == '(') {
            if (d == WM_XP_MAX_DEPTH) return fail(p, c_at, "matches() pattern nested deeper than %d groups", WM_XP_MAX_DEPTH);
            sum[++d] = 0;
            last = 0;
            continue;
        } else if (c == ')' && d) {
            last = sum[d--];
            sum[d] = sum[d] + last < sat ? sum[d] + last : sat;
            continue;
        } else if (c == '|' || c == '^' || c == '$') {
            last = 0;
            continue;
        } else if (c == '*' || c == '+' || c == '?') {
            continue;
        } else if (c == '{' && i < n && s[i] >= '0' && s[i] <= '9') {
            uint64_t m = 0, hi = 0;
            uint32_t k = i;
            bool has_hi = false;
            while (k < n && s[k] >= '0' && s[k] <= '9') {
                m = m < sat ? m * 10 + (uint64_t)(s[k] - '0') : sat;
                k++;
            }
            if (k < n && s[k] == ',') {
                k++;
                while (k < n && s[k] >= '0' && s[k] <= '9') {
                    hi = hi < sat ? hi * 10 + (uint64_t)(s[k] - '0') : sat;
                    k++;
                    has_hi = true;
                }
            }
            if (k < n && s[k] == '}') { /* a bounded repetition; otherwise '{' is a literal */
                uint64_t cnt = has_hi && hi > m ? hi : m;
                if (cnt > WM_XP_MAX_REPEAT)
                    return fail(p, c_at, "matches() repetition count %llu above %d (Hyperscan unrolls bounded repetitions)",
                                (unsigned long long)cnt, WM_XP_MAX_REPEAT);
                uint64_t grown = last * cnt < sat ? last * cnt : sat;
                sum[d] = sum[d] - last + grown < sat ? sum[d] - last + grown : sat;
                last = grown;
                i = k + 1;
                continue;
            }
        } else if (c >= 0x80) {
            while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++; /* one UTF-8 character */
        }
        sum[d] = sum[d] + w < sat ? sum[d] + w : sat;
        last = w;
    }
    while (d) {
        sum[d - 1] = sum[d - 1] + sum[d] < sat ? sum[d - 1] + sum[d] : sat;
        d--;
    }
    *width = sum[0];
    return true;
}

/* Bounds a string argument of contains/starts-with/matches (they go into
 * the Hyperscan database) before any compile: its length, and for a pattern
 * its width summed over the query (WM_XP_MAX_WIDTH). at: the literal's
 * opening quote. */
static bool bound_string_arg(pctx *p, uint8_t kind, const char *s, uint32_t n, size_t at)
{
    if (n > WM_XP_MAX_PATTERN)
        return fail(p, at, "%s() argument of %u bytes, more than %d", kind == WM_XP_N_MATCHES ? "matches" : kind == WM_XP_N_CONTAINS ? "contains" : "starts-with",
                    n, WM_XP_MAX_PATTERN);
    if (kind != WM_XP_N_MATCHES) return true;
    uint64_t w;
    if (!pattern_width(p, s, n, at + 1, &w)) return false;
    p->width = p->width + w < (UINT64_C(1) << 32) ? p->width + w : UINT64_C(1) << 32;
    if (p->width > WM_XP_MAX_WIDTH)
        return fail(p, at, "matches() patterns of this query expand to %llu positions, more than %d (a bounded repetition counts each copy)",
                    (unsigned long long)p->width, WM_XP_MAX_WIDTH);
    return true;
}

static bool at_number(pctx *p)
{
    skip_ws(p);
    size_t k = p->i;
    if (k < p->len && p->q[k] == '-') k++;
    while (k < p->len && p->q[k] == ' ') k++;
    if (k < p->len && p->q[k] >= '0' && p->q[k] <= '9') return true;
    return k + 1 < p->len && p->q[k] == '.' && p->q[k + 1] >= '0' && p->q[k + 1] <= '9';
}

/* XPath 1.0 Number: Digits ('.' Digits?)? | '.' Digits, with a leading '-'
 * (unary minus, §3.5). Converted with strtod: correctly rounded. */
static bool parse_number(pctx *p, double *x)
{
    skip_ws(p);
    size_t at = p->i;
    bool neg = false;
    if (p->q[p->i] == '-') {
        neg = true;
        p->i++;
        skip_ws(p);
    }
    size_t st = p->i, nd = 0;
    while (p->i < p->len && p->q[p->i] >= '0' && p->q[p->i] <= '9') p->i++, nd++;
    if (p->i < p->len && p->q[p->i] == '.') {
        p->i++;
        while (p->i < p->len && p->q[p->i] >= '0' && p->q[p->i] <= '9') p->i++, nd++;
    }
    if (!nd) return fail(p, at, "expected a number");
    if (p->i < p->len && ((p->q[p->i] | 32) == 'e' || name_start((unsigned char)p->q[p->i])))
        return fail(p, p->i, "exponents and suffixes are not part of XPath 1.0 numbers");
    if (p->i - st > 400) return fail(p, at, "number literal too long");
    char buf[512];
    memcpy(buf, p->q + st, p->i - st);
    buf[p->i - st] = 0;
    *x = strtod(buf, NULL);
    if (neg) *x = -*x;
    return true;
}

static bool parse_operand(pctx *p, wm_xp_node *n)
{
    skip_ws(p);
    size_t at = p->i;
    if (eat(p, '@')) {
        n->opd = WM_XP_OPD_ATTR;
        if (at_char(p, '*')) return fail(p, p->i, "attribute wildcard '@*' is outside the subset");
        return parse_name(p, &n->attr, false, "an attribute name after '@'");
    }
    if (at_call(p, "text")) {
        p->i += 4;
        expect(p, '(', "after text");
        expect(p, ')', "after text(");
        n->opd = WM_XP_OPD_TEXT;
        return !p->failed;
    }
    if (at_char(p, '.') && !(p->i + 1 < p->len && p->q[p->i + 1] >= '0' && p->q[p->i + 1] <= '9')) {
        if (p->i + 1 < p->len && p->q[p->i + 1] == '.') return fail(p, at, "'..' (parent) is outside the subset");
        p->i++;
        n->opd = WM_XP_OPD_DOT;
        return true;
    }
    if (p->i >= p->len) return fail(p, at, "expected '@name', 'text()' or '.', found the end of the query");
    if (ncname_len(p, p->i)) {
        size_t nl = ncname_len(p, p->i);
        size_t k = p->i + nl;
        while (k < p->len && p->q[k] == ' ') k++;
        if (k < p->len && p->q[k] == '(')
            return fail(p, at, "function '%.*s()' is outside the subset (contains, starts-with, matches, not, text)",
                        (int)nl, p->q + p->i);
        return fail(p, at, "child paths inside predicates ('%.*s') are outside the subset: compare '@name', 'text()' or '.'",
                    (int)nl, p->q + p->i);
    }
    return fail(p, at, "expected '@name', 'text()' or '.', found '%c'", p->q[p->i]);
}

static bool parse_cmp_op(pctx *p, uint8_t *op)
{
    skip_ws(p);
    if (p->i >= p->len) return false;
    char c = p->q[p->i], d = p->i + 1 < p->len ? p->q[p->i + 1] : 0;
    if (c == '=') { *op = WM_XP_EQ; p->i++; return true; }
    if (c == '!' && d == '=') { *op = WM_XP_NE; p->i += 2; return true; }
    if (c == '<') { *op = d == '=' ? WM_XP_LE : WM_XP_LT; p->i += d == '=' ? 2 : 1; return true; }
    if (c == '>') { *op = d == '=' ? WM_XP_GE : WM_XP_GT; p->i += d == '=' ? 2 : 1; return true; }
    return false;
}

/* Refuses what stands where a comparison's literal belongs. The subset
 * compares a node with a literal only, so the message names what was found
 * (a function call, a variable, an operator, the predicate's end, a path),
 * since "comparing two nodes" said of `true()` or `-` sends the user off on
 * the wrong fix. */
static bool fail_not_literal(pctx *p)
{
    static const char want[] = "expected a literal (string or number)";
    size_t at = p->i;
    if (at >= p->len) return fail(p, at, "%s, found the end of the query", want);
    char c = p->q[at], d = at + 1 < p->len ? p->q[at + 1] : 0;
    size_t nl = ncname_len(p, at);
    bool call = false;
    if (nl) {
        size_t k = at + nl;
        while (k < p->len && strchr(" \t\n\r", p->q[k]) && p->q[k]) k++;
        call = k < p->len && p->q[k] == '(';
        bool text = nl == 4 && !memcmp(p->q + at, "text", 4);
        if (call && !text)
            return fail(p, at, "%s, found a function call '%.*s()': functions are outside the subset here", want,
                        (int)nl, p->q + at);
        if (!call && ((nl == 2 && !memcmp(p->q + at, "or", 2)) ||
                      (nl == 3 && (!memcmp(p->q + at, "and", 3) || !memcmp(p->q + at, "div", 3) ||
                                   !memcmp(p->q + at, "mod", 3)))))
            return fail(p, at, "%s, found the operator '%.*s'", want, (int)nl, p->q + at);
    }
    if (nl || c == '@' || c == '.' || c == '/' || c == '*') {
        size_t k = at;   /* the path up to its first delimiter, for the message only */
        while (k < p->len && k - at < 40 && p->q[k] && !strchr(" \t\n\r[]()=!<>,|", p->q[k])) k++;
        return fail(p, at, "%s, found the path '%.*s%s': comparing two nodes is outside the subset", want,
                    (int)(k - at), p->q + at, call ? "()" : "");
    }
    if (c == '$')
        return fail(p, at, "%s, found the variable '$%.*s': variables are outside the subset", want,
                    (int)ncname_len(p, at + 1), p->q + at + 1);
    if (c == ']') return fail(p, at, "%s, found the end of the predicate ']'", want);
    if (c == '(') return fail(p, at, "%s, found '(': a parenthesised expression is outside the subset here", want);
    if ((c == '!' || c == '<' || c == '>') && d == '=') return fail(p, at, "%s, found the operator '%c='", want, c);
    if (c && strchr("+-=<>|,", c)) return fail(p, at, "%s, found the operator '%c'", want, c);
    return fail(p, at, "%s, found '%c'", want, c);
}

static bool parse_literal(pctx *p, wm_xp_node *n)
{
    if (at_char(p, '\'') || at_char(p, '"')) {
        n->num = false;
        return parse_string(p, &n->s, &n->slen);
    }
    if (at_number(p)) {
        n->num = true;
        return parse_number(p, &n->x);
    }
    skip_ws(p);
    return fail_not_literal(p);
}

static uint8_t swap_op(uint8_t op)
{
    switch (op) {
    case WM_XP_LT: return WM_XP_GT;
    case WM_XP_LE: return WM_XP_GE;
    case WM_XP_GT: return WM_XP_LT;
    case WM_XP_GE: return WM_XP_LE;
    default: return op;
    }
}

static uint32_t parse_or(pctx *p);

static uint32_t parse_primary(pctx *p)
{
    skip_ws(p);
    size_t at = p->i;
    if (++p->depth > WM_XP_MAX_DEPTH) {
        fail(p, at, "predicate nested deeper than %d", WM_XP_MAX_DEPTH);
        return WM_XP_NONE;
    }
    uint32_t r = WM_XP_NONE;
    if (eat(p, '(')) {
        r = parse_or(p);
        if (r != WM_XP_NONE && !expect(p, ')', "to close '('")) r = WM_XP_NONE;
    } else if (at_call(p, "not")) {
        p->i += 3;
        expect(p, '(', "after not");
        uint32_t a = p->failed ? WM_XP_NONE : parse_or(p);
        if (a != WM_XP_NONE && expect(p, ')', "to close not(")) {
            r = new_node(p, WM_XP_N_NOT, at);
            if (r != WM_XP_NONE) p->out->nodes[r].a = a;
        }
    } else if (at_call(p, "contains") || at_call(p, "starts-with") || at_call(p, "matches")) {
        uint8_t kind = at_word(p, "contains") ? WM_XP_N_CONTAINS : at_word(p, "matches") ? WM_XP_N_MATCHES : WM_XP_N_STARTS;
        p->i += kind == WM_XP_N_CONTAINS ? 8 : kind == WM_XP_N_MATCHES ? 7 : 11;
        expect(p, '(', "after the function name");
        uint32_t k = p->failed ? WM_XP_NONE : new_node(p, kind, at);
        if (k != WM_XP_NONE) {
            wm_xp_node *n = &p->out->nodes[k];
            if (parse_operand(p, n) && expect(p, ',', "between the function's arguments")) {
                if (!at_char(p, '\'') && !at_char(p, '"'))
                    fail(p, p->i, "the function's second argument must be a string literal");
                else if (parse_string(p, &n->s, &n->slen) && bound_string_arg(p, kind, n->s, n->slen, p->i - n->slen - 2) &&
                         kind == WM_XP_N_MATCHES && eat(p, ',')) {
                    uint32_t fl;
                    const char *f;
                    if (parse_string(p, &f, &fl)) {
                        for (uint32_t j = 0; j < fl; j++)
                            if (!strchr("ism", f[j])) {
                                fail(p, p->i, "matches() flag '%c' is outside the subset (i, s, m)", f[j]);
                                break;
                            }
                        n->flags = f;
                    }
                }
                if (!p->failed && expect(p, ')', "to close the function call")) r = k;
            }
        }
    } else if (at_char(p, '\'') || at_char(p, '"') || at_number(p)) {
        uint32_t k = new_node(p, WM_XP_N_CMP, at);
        if (k != WM_XP_NONE) {
            wm_xp_node *n = &p->out->nodes[k];
            uint8_t op;
            if (parse_literal(p, n)) {
                if (!parse_cmp_op(p, &op)) fail(p, p->i, "a literal alone is outside the subset: compare it with '@name', 'text()' or '.'");
                else if (parse_operand(p, n)) {
                    n->op = swap_op(op);
                    r = k;
                }
            }
        }
    } else {
        uint32_t k = new_node(p, WM_XP_N_EXISTS, at);
        if (k != WM_XP_NONE) {
            wm_xp_node *n = &p->out->nodes[k];
            if (parse_operand(p, n)) {
                uint8_t op;
                r = k;
                if (parse_cmp_op(p, &op)) {
                    n->kind = WM_XP_N_CMP;
                    n->op = op;
                    if (!parse_literal(p, n)) r = WM_XP_NONE;
                }
            }
        }
    }
    p->depth--;
    return p->failed ? WM_XP_NONE : r;
}

static uint32_t parse_and(pctx *p)
{
    uint32_t l = parse_primary(p);
    while (l != WM_XP_NONE && at_word(p, "and")) {
        size_t at = p->i;
        p->i += 3;
        uint32_t r = parse_primary(p);
        if (r == WM_XP_NONE) return WM_XP_NONE;
        uint32_t k = new_node(p, WM_XP_N_AND, at);
        if (k == WM_XP_NONE) return k;
        p->out->nodes[k].a = l;
        p->out->nodes[k].b = r;
        l = k;
    }
    return l;
}

static uint32_t parse_or(pctx *p)
{
    uint32_t l = parse_and(p);
    while (l != WM_XP_NONE && at_word(p, "or")) {
        size_t at = p->i;
        p->i += 2;
        uint32_t r = parse_and(p);
        if (r == WM_XP_NONE) return WM_XP_NONE;
        uint32_t k = new_node(p, WM_XP_N_OR, at);
        if (k == WM_XP_NONE) return k;
        p->out->nodes[k].a = l;
        p->out->nodes[k].b = r;
        l = k;
    }
    return l;
}

/* Zero or more '[...]': several predicates on a step are their conjunction
 * (the subset has no positional predicates, so order does not matter). */
static bool parse_preds(pctx *p, uint32_t *pred)
{
    *pred = WM_XP_NONE;
    while (at_char(p, '[')) {
        size_t at = p->i;
        p->i++;
        if (at_number(p)) {
            size_t k = p->i;
            double x;
            if (parse_number(p, &x) && at_char(p, ']')) return fail(p, k, "positional predicates are outside the subset");
            p->i = k;
            p->failed = false;
        }
        uint32_t e = parse_or(p);
        if (e == WM_XP_NONE || !expect(p, ']', "to close the predicate")) return false;
        if (*pred == WM_XP_NONE) *pred = e;
        else {
            uint32_t k = new_node(p, WM_XP_N_AND, at);
            if (k == WM_XP_NONE) return false;
            p->out->nodes[k].a = *pred;
            p->out->nodes[k].b = e;
            *pred = k;
        }
    }
    return true;
}

/* Rewrites '.' in an attribute step's predicate to that attribute. */
static bool dot_to_attr(pctx *p, uint32_t e, const wm_xp_name *attr)
{
    if (e == WM_XP_NONE) return true;
    wm_xp_node *n = &p->out->nodes[e];
    switch (n->kind) {
    case WM_XP_N_OR: case WM_XP_N_AND: return dot_to_attr(p, n->a, attr) && dot_to_attr(p, n->b, attr);
    case WM_XP_N_NOT: return dot_to_attr(p, n->a, attr);
    default:
        if (n->opd == WM_XP_OPD_DOT) {
            n->opd = WM_XP_OPD_ATTR;
            n->attr = *attr;
            return true;
        }
        return fail(p, n->pos - 1, "an attribute step's predicate may only test '.' (the attribute)");
    }
}

static bool parse_query(pctx *p)
{
    wm_xp_query *o = p->out;
    skip_ws(p);
    if (p->i >= p->len) return fail(p, 0, "empty query");
    if (p->q[p->i] != '/') return fail(p, p->i, "the query must be an absolute path starting with '/' or '//'");
    while (p->i < p->len && !p->failed) {
        skip_ws(p);
        if (p->i >= p->len) break;
        size_t at = p->i;
        if (p->q[p->i] != '/') return fail(p, p->i, "expected '/' or '//' or the end of the query, found '%c'", p->q[p->i]);
        uint8_t axis = WM_XP_CHILD;
        p->i++;
        if (p->i < p->len && p->q[p->i] == '/') {
            axis = WM_XP_DESC;
            p->i++;
        }
        if (at_char(p, '@')) {
            /* trailing attribute step: folded into the element step before it */
            size_t apos = p->i;
            wm_xp_node tmp = { 0 };
            if (!parse_operand(p, &tmp)) return false;
            uint32_t pr;
            if (!parse_preds(p, &pr) || !dot_to_attr(p, pr, &tmp.attr)) return false;
            skip_ws(p);
            if (p->i < p->len) return fail(p, p->i, "an attribute step must be the last step");
            if (axis == WM_XP_DESC && o->n_steps > 0)
                return fail(p, at, "'//@name' after a step is outside the subset (use '//*[@name]' or '/@name')");
            if (axis == WM_XP_DESC || o->n_steps == 0) {
                if (o->n_steps >= WM_XP_MAX_STEPS) return fail(p, at, "more than %d steps", WM_XP_MAX_STEPS);
                wm_xp_step *s = &o->steps[o->n_steps++];
                memset(s, 0, sizeof *s);
                s->axis = WM_XP_DESC;
                s->name.uri = "";
                s->name.any_uri = true;
                s->pred = WM_XP_NONE;
                s->pos = (uint32_t)at + 1;
            }
            wm_xp_step *last = &o->steps[o->n_steps - 1];
            uint32_t ex = pr;
            if (ex == WM_XP_NONE) {
                ex = new_node(p, WM_XP_N_EXISTS, apos);
                if (ex == WM_XP_NONE) return false;
                o->nodes[ex].opd = WM_XP_OPD_ATTR;
                o->nodes[ex].attr = tmp.attr;
            }
            if (last->pred == WM_XP_NONE) last->pred = ex;
            else {
                uint32_t k = new_node(p, WM_XP_N_AND, apos);
                if (k == WM_XP_NONE) return false;
                o->nodes[k].a = last->pred;
                o->nodes[k].b = ex;
                last->pred = k;
            }
            return true;
        }
        if (o->n_steps >= WM_XP_MAX_STEPS) return fail(p, at, "more than %d steps", WM_XP_MAX_STEPS);
        wm_xp_step *s = &o->steps[o->n_steps];
        memset(s, 0, sizeof *s);
        s->axis = axis;
        s->pos = (uint32_t)p->i + 1;
        skip_ws(p);
        if (at_char(p, '.')) return fail(p, p->i, "'.' and '..' steps are outside the subset");
        if (at_call(p, "text") || at_call(p, "node") || at_call(p, "comment") || at_call(p, "processing-instruction"))
            return fail(p, p->i, "node-type steps are outside the subset");
        if (!parse_name(p, &s->name, true, "an element name or '*'")) return false;
        o->n_steps++;
        if (!parse_preds(p, &s->pred)) return false;
    }
    if (!o->n_steps) return fail(p, p->len ? p->len - 1 : 0, "the query selects the document node: add a step");
    return !p->failed;
}

static bool parse_text(const char *q, size_t len, const wm_xp_ns *ns, size_t n_ns, bool any_prefix, wm_xp_query *out,
                       wm_xp_error *err)
{
    memset(out, 0, sizeof *out);
    if (err) memset(err, 0, sizeof *err);
    pctx p = { .q = q, .len = len, .ns = ns, .n_ns = n_ns, .out = out, .err = err, .any_prefix = any_prefix };
    if (len > WM_XP_MAX_LEN) {
        fail(&p, WM_XP_MAX_LEN, "query longer than %d bytes", WM_XP_MAX_LEN);
        return false;
    }
    if (memchr(q, 0, len)) {
        fail(&p, (size_t)((const char *)memchr(q, 0, len) - q), "NUL byte in the query");
        return false;
    }
    if (!(out->nodes = malloc(WM_XP_MAX_NODES * sizeof *out->nodes))) {
        oom(&p);
        return false;
    }
    if (!parse_query(&p)) {
        wm_xp_query_free(out);
        return false;
    }
    return true;
}

bool wm_xp_parse(const char *q, size_t len, const wm_xp_ns *ns, size_t n_ns, wm_xp_query *out, wm_xp_error *err)
{
    return parse_text(q, len, ns, n_ns, false, out, err);
}

bool wm_xp_syntax_check(const char *q, size_t len, wm_xp_error *err)
{
    wm_xp_query out;
    if (!parse_text(q, len, NULL, 0, true, &out, err)) return false;
    wm_xp_query_free(&out);
    return true;
}

void wm_xp_query_free(wm_xp_query *q)
{
    for (uint32_t i = 0; i < q->n_owned; i++) free(q->owned[i]);
    free(q->owned);
    free(q->nodes);
    memset(q, 0, sizeof *q);
}

bool wm_xp_ns_parse(char *s, wm_xp_ns *out)
{
    char *eq = strchr(s, '=');
    if (!eq || eq == s || !eq[1]) return false;
    if (!name_start((unsigned char)s[0])) return false;
    for (const char *c = s; c < eq; c++)
        if (!name_char((unsigned char)*c) || *c == ':') return false;
    *eq = 0;
    out->prefix = s;
    out->uri = eq + 1;
    return true;
}

/* Namespaces in XML 1.0 §3: "xml" is bound to XML_NS "by definition" and may
 * be declared only to it; "xmlns" is bound to XMLNS_NS and must not be
 * declared at all; neither URI may go to another prefix. */
static const wm_xp_ns reserved[] = { { "xml", XML_NS }, { "xmlns", XMLNS_NS } };

static const wm_xp_ns *reserved_conflict(const wm_xp_ns *b, char *why, size_t whylen)
{
    bool is_xml = !strcmp(b->prefix, "xml"), is_xmlns = !strcmp(b->prefix, "xmlns");
    const char *w = NULL;
    const wm_xp_ns *r = NULL;
    if (is_xmlns) w = "prefix 'xmlns' is reserved and must not be declared", r = &reserved[1];
    else if (is_xml && strcmp(b->uri, XML_NS)) w = "prefix 'xml' is bound to '" XML_NS "' and to no other URI", r = &reserved[0];
    else if (!is_xml && !strcmp(b->uri, XML_NS)) w = "'" XML_NS "' is bound to prefix 'xml' only", r = &reserved[0];
    else if (!strcmp(b->uri, XMLNS_NS)) w = "'" XMLNS_NS "' must not be bound to a prefix", r = &reserved[1];
    if (r && why && whylen) snprintf(why, whylen, "%s (Namespaces in XML 1.0 §3)", w);
    return r;
}

const wm_xp_ns *wm_xp_ns_conflict(const wm_xp_ns *ns, size_t n, const wm_xp_ns *b, char *why, size_t whylen)
{
    const wm_xp_ns *r = reserved_conflict(b, why, whylen);
    if (r) return r;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ns[i].prefix, b->prefix) && strcmp(ns[i].uri, b->uri)) {
            if (why && whylen) snprintf(why, whylen, "prefix '%s' bound twice, to '%s' and '%s'", b->prefix, ns[i].uri, b->uri);
            return &ns[i];
        }
    return NULL;
}
