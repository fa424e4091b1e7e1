/* The XPath subset of wirematch's content filters: syntax tree and parser.
 *
 * A content filter is an XPath 1.0 location path (W3C XPath 1.0 §2, §3) over
 * the XML infoset an EXI stream carries (the approach of Käbisch et al.,
 * "Filter-enabled binary XML dissemination", WEBIST 2014: queries become
 * states of a filter grammar, see matcher/xpath_filter.h). The subset:
 *
 *   Query    := ('/' | '//') Step (('/' | '//') Step)* [('/' | '//') '@' QName Pred*]
 *   Step     := NameTest Pred*            NameTest := '*' | QName | Prefix ':*'
 *   Pred     := '[' Or ']'
 *   Or       := And ('or' And)*           And := Primary ('and' Primary)*
 *   Primary  := '(' Or ')' | 'not' '(' Or ')'
 *             | ('contains' | 'starts-with') '(' Operand ',' String ')'
 *             | 'matches' '(' Operand ',' String [',' String] ')'
 *             | Operand [CmpOp Literal] | Literal CmpOp Operand
 *   Operand  := '@' QName | 'text()' | '.'
 *   CmpOp    := '=' | '!=' | '<' | '<=' | '>' | '>='
 *   Literal  := String | ['-'] Number     (String: '...' or "...", no escapes)
 *
 * Semantics are XPath 1.0's: a literal Number makes the comparison numeric
 * (§3.4: the operand's string is converted with number(), or its schema-typed
 * value is used), a String literal with = / != compares strings, < <= > >=
 * always compare numbers; functions take the string of the operand's first
 * node ('' when there is none). matches() is XPath 2.0's fn:matches with the
 * pattern in Hyperscan's (PCRE) syntax and flags from "i", "s", "m".
 * A trailing attribute step is folded into the last element step:
 * /a/b/@c[. > 1] is /a/b[@c > 1]; a leading //@c selects any element with @c.
 *
 * Unprefixed names have no namespace (XPath 1.0 §2.3); a prefix must be
 * bound by the caller (PREFIX=URI), otherwise the query is refused.
 *
 * Bounds: queries up to WM_XP_MAX_LEN bytes, WM_XP_MAX_STEPS steps,
 * WM_XP_MAX_NODES predicate nodes, nesting WM_XP_MAX_DEPTH. The string
 * arguments of contains/starts-with/matches go into one Hyperscan database,
 * whose compile time and memory grow with what a pattern expands to, so they
 * are bounded before any compile: at most WM_XP_MAX_PATTERN bytes each; in
 * matches(), no bounded repetition ({m}, {m,}, {m,n}) above WM_XP_MAX_REPEAT
 * and at most WM_XP_MAX_WIDTH positions per query, counting every atom
 * (character, escape, class, '.') 1 — a Unicode property \p{..}, \P{..}, or a
 * class holding one, WM_XP_UNICODE_CLASS_WIDTH (UTF-8 mode expands it to
 * hundreds of byte sequences) —, a group the sum of its alternatives, a
 * bounded repetition its largest count times what it repeats (nested counts
 * multiply), '*', '+', '?' 1 — e.g. ".{255}" is 255, "(a|b){3}x" 7,
 * "(.{20}){20}" 400 (refused). Measured (Hyperscan 5.4, one pattern alone):
 * ".{255}" 0.06 s / 9 MB, ".{2000}" 2.2 s / 46 MB, ".{30000}" ~20 s /
 * ~430 MB before Hyperscan itself refuses it, "\p{L}{4}" 0.3 s / 23 MB,
 * "\p{L}{30}" 3.1 s / 107 MB; typical patterns ~1 ms.
 * Anything outside the subset or the bounds is refused with a reason and the
 * 1-based byte position where it was found (a repetition: its '{'; the
 * width: the pattern's opening quote). Pure; thread safe (no global state).
 */
#ifndef WM_MATCHER_XPATH_PARSE_H
#define WM_MATCHER_XPATH_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WM_XP_MAX_LEN 4096
#define WM_XP_MAX_STEPS 32
#define WM_XP_MAX_NODES 256
#define WM_XP_MAX_DEPTH 32
#define WM_XP_MAX_PATTERN 1024  /* bytes of a contains/starts-with/matches string argument */
#define WM_XP_MAX_REPEAT 255    /* largest count of a bounded repetition in matches() */
#define WM_XP_MAX_WIDTH 256     /* expanded width of a query's matches() patterns, summed */
#define WM_XP_UNICODE_CLASS_WIDTH 64 /* width of one \p{..}/\P{..} atom (or a class holding one) */
#define WM_XP_NONE UINT32_MAX

typedef enum wm_xp_axis { WM_XP_CHILD = 0, WM_XP_DESC } wm_xp_axis;
typedef enum wm_xp_op { WM_XP_EQ = 0, WM_XP_NE, WM_XP_LT, WM_XP_LE, WM_XP_GT, WM_XP_GE } wm_xp_op;
typedef enum wm_xp_operand { WM_XP_OPD_ATTR = 0, WM_XP_OPD_TEXT, WM_XP_OPD_DOT } wm_xp_operand;
typedef enum wm_xp_kind {
    WM_XP_N_OR = 0, WM_XP_N_AND, WM_XP_N_NOT,
    WM_XP_N_CMP,        /* operand op literal */
    WM_XP_N_CONTAINS,   /* contains(operand, s) */
    WM_XP_N_STARTS,     /* starts-with(operand, s) */
    WM_XP_N_MATCHES,    /* matches(operand, s [, flags]) */
    WM_XP_N_EXISTS,     /* the operand as a boolean: the node exists */
} wm_xp_kind;

/* An expanded name test: uri "" is no namespace; local NULL is '*' (any
 * name in uri, or any name at all when any_uri). */
typedef struct wm_xp_name {
    const char *uri;
    const char *local;
    bool any_uri;
} wm_xp_name;

typedef struct wm_xp_node {
    uint8_t kind;        /* wm_xp_kind */
    uint8_t op;          /* CMP: wm_xp_op */
    uint8_t opd;         /* CMP/functions/EXISTS: wm_xp_operand */
    bool num;            /* CMP: the literal is a number (x), else a string (s) */
    uint32_t a, b;       /* OR/AND: operands; NOT: a */
    wm_xp_name attr;     /* opd ATTR */
    double x;            /* number literal */
    const char *s;       /* string literal / pattern (NUL-terminated, slen bytes) */
    uint32_t slen;
    const char *flags;   /* MATCHES: flags string ("" if none) */
    uint32_t pos;        /* 1-based byte position in the query text */
} wm_xp_node;

typedef struct wm_xp_step {
    uint8_t axis;        /* wm_xp_axis from the previous step (or the root) */
    wm_xp_name name;
    uint32_t pred;       /* predicate root node, WM_XP_NONE if none */
    uint32_t pos;
} wm_xp_step;

/* A parsed query. Owns its strings; free with wm_xp_query_free. */
typedef struct wm_xp_query {
    uint32_t n_steps;
    wm_xp_step steps[WM_XP_MAX_STEPS];
    uint32_t n_nodes;
    wm_xp_node *nodes;   /* [WM_XP_MAX_NODES] */
    char **owned;        /* strings to free */
    uint32_t n_owned, cap_owned;
} wm_xp_query;

/* A namespace binding PREFIX=URI (strings owned by the caller). */
typedef struct wm_xp_ns {
    const char *prefix;
    const char *uri;
} wm_xp_ns;

typedef struct wm_xp_error {
    uint32_t pos;        /* 1-based byte position, 0 if not about a place in the text */
    char msg[160];
} wm_xp_error;

/* Parses query text q[0..len) with the n_ns bindings ns. On success returns
 * true and fills *out (free with wm_xp_query_free). On failure returns false,
 * *out holds nothing to free, and err (may be NULL) has the reason and
 * position: outside the subset (with what was found), unbound prefix,
 * unterminated string, bad number, bounds exceeded, out of memory (pos 0). */
bool wm_xp_parse(const char *q, size_t len, const wm_xp_ns *ns, size_t n_ns, wm_xp_query *out, wm_xp_error *err);

/* Is q[0..len) a query of the subset, whatever its prefixes stand for?
 * For a text kept without its bindings (the proxy's --state file: the
 * schema registry in force when the query is used binds its prefixes, and
 * reports one it does not bind then): every prefix counts as bound, and
 * everything else wm_xp_parse refuses is refused alike, err (may be NULL)
 * holding the reason and 1-based byte position. Allocates only while it
 * runs (out of memory: false, pos 0). Pure; thread safe. */
bool wm_xp_syntax_check(const char *q, size_t len, wm_xp_error *err);

/* Frees what wm_xp_parse put into *q and zeroes it (a zeroed query may be
 * freed again). */
void wm_xp_query_free(wm_xp_query *q);

/* Parses "PREFIX=URI" in place (the '=' becomes a NUL) into a binding
 * pointing into s. False (s untouched) if there is no '=', the prefix is not
 * an NCName or the URI is empty. */
bool wm_xp_ns_parse(char *s, wm_xp_ns *out);

/* The binding of ns[0..n) that gives b's prefix a different URI, or NULL.
 * A prefix bound to two URIs leaves a query's meaning to a guess (the later
 * binding would win in wm_xp_parse), so every list of bindings users write
 * (wmctl --ns, a schema-registry line) refuses it; the same binding twice is
 * harmless. With a clash and why != NULL, why[0..whylen) gets
 * "prefix 'P' bound twice, to 'A' and 'B'" (A the earlier URI).
 * The bindings Namespaces in XML 1.0 §3 fixes count as bound before ns: b
 * clashes with them (the result is then a static {"xml", XML URI} or
 * {"xmlns", xmlns URI}, why says which rule, ending "(Namespaces in XML 1.0
 * §3)") if it declares "xmlns" at all, binds "xml" to anything but
 * http://www.w3.org/XML/1998/namespace, or binds either URI to another
 * prefix: a rebound "xml" made @xml:lang select nothing. Pure. */
const wm_xp_ns *wm_xp_ns_conflict(const wm_xp_ns *ns, size_t n, const wm_xp_ns *b, char *why, size_t whylen);

#endif
