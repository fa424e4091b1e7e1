/* Set of characters of an XML Schema regular expression (EXI Appendix E),
 * by recursive descent over the XML Schema 1.0 regex grammar (regExp, branch,
 * piece, atom, charClassExpr). Only the characters matter, so quantifiers are
 * skipped; everything that would make the set unbounded or depend on the
 * Unicode version ends the derivation with "no restricted set". */
#include "codec/exi_rcs.h"

#include <stdlib.h>
#include <string.h>

#include "codec/exi_utf8.h"

#define MAX_NEST 32 /* parentheses and nested class subtractions */

typedef struct rx {
    const uint32_t *c;
    size_t n, i;
    unsigned depth;
} rx;

/* a..b inclusive, b <= 0xFFFF; whole words at a time (a pattern may repeat
 * a full-plane range thousands of times) */
static void put_range(wm_exi_rcs_set *s, uint32_t a, uint32_t b)
{
    uint32_t cp = a;
    while (cp <= b) {
        if (!(cp & 63) && b - cp >= 63) { s->bits[cp >> 6] = ~0ull; cp += 64; continue; }
        s->bits[cp >> 6] |= 1ull << (cp & 63);
        cp++;
    }
}

static bool peek(const rx *x, uint32_t ch) { return x->i < x->n && x->c[x->i] == ch; }

/* After '\': a single-character escape gives *cp; \s adds its four characters
 * to s (when s) and gives *cp = UINT32_MAX; anything else has no restricted set. */
static bool escape(rx *x, wm_exi_rcs_set *s, uint32_t *cp)
{
    if (x->i >= x->n) return false;
    uint32_t e = x->c[x->i++];
    switch (e) {
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 't': *cp = '\t'; return true;
    case '\\': case '|': case '.': case '?': case '*': case '+': case '(': case ')': case '{': case '}':
    case '-': case '[': case ']': case '^':
        *cp = e;
        return true;
    case 's':
        if (!s) return false;
        put_range(s, ' ', ' ');
        put_range(s, '\t', '\n');
        put_range(s, '\r', '\r');
        *cp = UINT32_MAX;
        return true;
    default: return false; /* \p{..} \P{..} \S \i \I \c \C \d \D \w \W, or not an escape */
    }
}

static bool class_expr(rx *x, wm_exi_rcs_set *out);

/* charGroup up to and including its ']' (x->i just after '['). */
static bool char_group(rx *x, wm_exi_rcs_set *g)
{
    if (peek(x, '^')) return false; /* a negated group has no small set */
    bool any = false;
    while (x->i < x->n && !peek(x, ']')) {
        uint32_t a = x->c[x->i];
        if (a == '-' && x->i + 1 < x->n && x->c[x->i + 1] == '[') { /* subtraction: charClassSub */
            if (!any) return false;
            x->i++;
            wm_exi_rcs_set *sub = calloc(1, sizeof *sub);
            if (!sub) return false;
            bool ok = class_expr(x, sub);
            if (ok)
                for (size_t k = 0; k < sizeof g->bits / sizeof g->bits[0]; k++) g->bits[k] &= ~sub->bits[k];
            free(sub);
            if (!ok || !peek(x, ']')) return false;
            break;
        }
        if (a == '[') return false;
        x->i++;
        if (a == '\\' && !escape(x, g, &a)) return false;
        any = true;
        if (a == UINT32_MAX) continue; /* \s: already added, no range from it */
        uint32_t b = a;
        if (peek(x, '-') && x->i + 1 < x->n && x->c[x->i + 1] != ']' && x->c[x->i + 1] != '[') {
            x->i++;
            b = x->c[x->i++];
            if (b == '\\' && (!escape(x, NULL, &b))) return false;
            if (b == '[' || b < a) return false;
        }
        if (b > 0xffff) return false; /* outside the BMP */
        put_range(g, a, b);
    }
    if (!any || !peek(x, ']')) return false;
    x->i++;
    return true;
}

/* charClassExpr at '[' */
static bool class_expr(rx *x, wm_exi_rcs_set *out)
{
    if (!peek(x, '[') || ++x->depth > MAX_NEST) return false;
    x->i++;
    bool ok = char_group(x, out);
    x->depth--;
    return ok;
}

static bool reg_exp(rx *x, wm_exi_rcs_set *s);

static bool quantifier(rx *x)
{
    if (peek(x, '?') || peek(x, '*') || peek(x, '+')) { x->i++; return true; }
    if (!peek(x, '{')) return true;
    x->i++;
    size_t digits = 0;
    while (x->i < x->n && ((x->c[x->i] >= '0' && x->c[x->i] <= '9') || x->c[x->i] == ',')) { x->i++; digits++; }
    if (!digits || !peek(x, '}')) return false;
    x->i++;
    return true;
}

static bool atom(rx *x, wm_exi_rcs_set *s)
{
    uint32_t a = x->c[x->i];
    switch (a) {
    case '(': {
        if (++x->depth > MAX_NEST) return false;
        x->i++;
        if (!reg_exp(x, s) || !peek(x, ')')) return false;
        x->i++;
        x->depth--;
        return true;
    }
    case '[': {
        wm_exi_rcs_set *g = calloc(1, sizeof *g);
        if (!g) return false;
        bool ok = class_expr(x, g);
        if (ok)
            for (size_t k = 0; k < sizeof s->bits / sizeof s->bits[0]; k++) s->bits[k] |= g->bits[k];
        free(g);
        return ok;
    }
    case '\\':
        x->i++;
        if (!escape(x, s, &a)) return false;
        if (a != UINT32_MAX) put_range(s, a, a);
        return true;
    case '.': /* every character but CR and LF */
    case '?': case '*': case '+': case '{': case '}': case ')': case '|': case ']':
        return false;
    default:
        if (a > 0xffff) return false;
        x->i++;
        put_range(s, a, a);
        return true;
    }
}

static bool reg_exp(rx *x, wm_exi_rcs_set *s)
{
    for (;;) {
        while (x->i < x->n && !peek(x, '|') && !peek(x, ')'))
            if (!atom(x, s) || !quantifier(x)) return false;
        if (!peek(x, '|')) return true;
        x->i++;
    }
}

bool wm_exi_rcs_add_pattern(wm_exi_rcs_set *set, const char *re, size_t len)
{
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    if (!cps) return false;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        unsigned k = wm_exi_utf8_get(re + i, len - i, &cps[n]);
        if (!k) { free(cps); return false; }
        i += k;
        n++;
    }
    rx x = { .c = cps, .n = n };
    bool ok = reg_exp(&x, set) && x.i == n; /* a stray ')' stops reg_exp early */
    free(cps);
    return ok;
}

int wm_exi_rcs_list(const wm_exi_rcs_set *set, uint32_t out[255])
{
    int n = 0;
    for (uint32_t w = 0; w < sizeof set->bits / sizeof set->bits[0]; w++)
        for (uint64_t b = set->bits[w]; b; b &= b - 1) {
            if (n == 255) return -1;
            out[n++] = w * 64 + (uint32_t)__builtin_ctzll(b);
        }
    return n;
}
