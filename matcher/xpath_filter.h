/* Content filters: many XPath queries (matcher/xpath_parse.h) of one schema
 * compiled together into one filter automaton over the EXI events of
 * that schema's streams, evaluated in one pass while decoding.
 *
 * The model is the filter grammar of Käbisch et al. ("Filter-enabled binary
 * XML dissemination in embedded networks", WEBIST 2014, §2.2; see
 * ../shared/ARCHITECTURE.md §2):
 *   - location paths become states: all queries' steps form one NFA over
 *     element names, made deterministic (subset construction) over the
 *     alphabet of names the queries mention; a state no query can progress
 *     from is dead and its whole subtree is skipped by the filter (the
 *     decoder still has to read it: EXI has no skip pointers);
 *   - a state where queries with predicates accept is a *predicate state*:
 *     the element's attribute and text values are tested there, typed as the
 *     decoder delivers them (integers, decimals and floats compare as IEEE
 *     doubles, never through their text; strings through one Hyperscan
 *     database holding every contains/matches pattern of all queries, a
 *     hash for string equality, and per-slot prefix tables for starts-with
 *     (Hyperscan too where a slot's prefixes have more than 8 lengths));
 *   - a state where queries without predicates accept is an *accepting state*:
 *     those queries match when the element starts.
 * Each predicate is indexed by trigger literals (one literal per conjunct
 * chosen by selectivity: equality over patterns over ranges), so an element
 * only evaluates the queries one of whose triggers its values satisfy, plus
 * those that can be true with no attribute present (e.g. not(...)).
 * Matching stops decoding once every query is decided (at the next element
 * start or end: values are not followed by a test each). The product of
 * the path automaton with the schema's element grammars (the filter grammar
 * proper: pairs of path state and element declaration reachable from the
 * document element) finds the queries no strict document can satisfy; on a
 * strict stream they are decided "no" before the first event.
 *
 * Schema typing (compile time): a string test (=, !=, contains, starts-with,
 * matches with a string literal) on an attribute or text the schema types as
 * a number is refused, since EXI transmits the value, not its lexical form;
 * compare it with a number instead. The same holds, and string tests are
 * refused, for hexBinary / base64Binary, the date-time family and lists
 * (the decoder gives a canonical form: '0aff' as '0AFF'); presence and
 * order comparisons (numeric in XPath 1.0: NaN, false) stay. A value the schema types as a boolean
 * compares as a boolean: = and != with 1, '1', 'true' (true) or 0, '0',
 * 'false' (false); any other literal, < <= > >=, contains, starts-with and
 * matches on it are refused (WM_XPF_E_TYPE), as is a test on an attribute
 * that is boolean on some of the named elements and not on others.
 * "Types" here are those of the declarations the last step can reach by its
 * path (a second product from every declaration; below a wildcard, every
 * declaration of the step's name), each with every type xsi:type may give
 * it in a valid document: the types derived from the declared one (for
 * xs:anyType / xs:anySimpleType every type of that kind, for a union any
 * simple type). The refusal says where the type comes from (xsi:type names
 * Derived, derived from Base; N declarations this step names).
 * text() and '.' are accepted on elements the schema gives no child
 * elements (WM_XPF_E_TYPE otherwise). Where such an element has children
 * after all — content of an xs:any wildcard, or undeclared children in a
 * non-strict stream — they keep XPath 1.0's meaning: '.' is the
 * string-value (all descendant text), text() the text children (a
 * comparison holds if one does, a function reads the first); a typed chunk
 * in such text counts in its canonical form. Tests on @xsi:type and
 * @xsi:nil are refused (WM_XPF_E_QUERY): EXI carries them as grammar
 * events of their own (§8.5.4.4.2), not as attribute values.
 * Differences from XPath 1.0 on the decoded XML, by design: float
 * INF/-INF/NaN compare as the IEEE values they denote, "+5" as 5, a
 * subnormal as itself (libxml2's number(): NaN, NaN, 0); non-canonical lexical
 * forms are not seen (string tests on numbers are refused for this reason;
 * a boolean written "1" equals 'true' and 1, where untyped XPath 1.0 on the
 * source text says vb="1" = 'true' is false). An attribute a stream gives
 * twice in one element (EXI can, schema-less or non-strict; XML cannot):
 * the first value counts, the others are ignored.
 *
 * Thread safety: a compiled wm_xpf is immutable and shared by any number of
 * threads; each thread evaluates through its own wm_xpf_ctx (decoder state,
 * Hyperscan scratch cloned with hs_clone_scratch, per-document arrays).
 */
#ifndef WM_MATCHER_XPATH_FILTER_H
#define WM_MATCHER_XPATH_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_decode.h"
#include "codec/exi_grammar.h"
#include "matcher/xpath_parse.h"

typedef enum wm_xpf_status {
    WM_XPF_OK = 0,
    WM_XPF_E_QUERY,    /* a query is outside the subset, its bounds (also the pattern cost bounds of xpath_parse.h) or malformed (query, pos, msg) */
    WM_XPF_E_TYPE,     /* a test contradicts the schema's types (query, pos, msg) */
    WM_XPF_E_PATTERN,  /* Hyperscan refused a matches() pattern (query, pos, msg) */
    WM_XPF_E_LIMIT,    /* too many queries or automaton states (WM_XPF_MAX_*) */
    WM_XPF_E_MEMORY,
    WM_XPF_E_DECODE,   /* evaluation: the EXI stream is bad (exi error has reason and bit position) */
} wm_xpf_status;

#define WM_XPF_MAX_QUERIES 100000u
#define WM_XPF_MAX_STATES 65536u   /* deterministic path states */

typedef struct wm_xpf_error {
    uint32_t query;    /* 0-based index of the query at fault, UINT32_MAX if none */
    uint32_t pos;      /* 1-based byte position in that query, 0 if none */
    char msg[200];
} wm_xpf_error;

typedef struct wm_xpf wm_xpf;
typedef struct wm_xpf_ctx wm_xpf_ctx;

/* Figures of a compiled filter (for tools and tests). */
typedef struct wm_xpf_stats {
    uint32_t queries;
    uint32_t path_states;     /* deterministic path states, the dead one included */
    uint32_t symbols;         /* element-name classes of the alphabet */
    uint32_t predicate_states;
    uint32_t accepting_states;
    uint32_t literals;        /* distinct value tests */
    uint32_t patterns;        /* of which in the Hyperscan database */
    uint32_t always;          /* queries evaluated at every element of their state */
    uint32_t impossible_strict; /* queries no strict document of the schema can satisfy */
    uint32_t filter_grammar_pairs; /* reachable (path state, element declaration) pairs; 0 if not analysed */
} wm_xpf_stats;

/* Compiles queries[0..n) (NUL-terminated texts) for streams of grammar g,
 * with namespace bindings ns[0..n_ns). g must outlive the filter. On success
 * *out owns the filter (wm_xpf_free). Errors (err filled; may be NULL):
 * WM_XPF_E_QUERY / _TYPE / _PATTERN with the query index and position,
 * WM_XPF_E_LIMIT (n > WM_XPF_MAX_QUERIES, more than WM_XPF_MAX_STATES path
 * states), WM_XPF_E_MEMORY. Not thread safe while compiling only in that it
 * must not run concurrently with freeing g. */
wm_xpf_status wm_xpf_compile(const wm_exi_grammar *g, const char *const *queries, uint32_t n, const wm_xp_ns *ns,
                             size_t n_ns, wm_xpf **out, wm_xpf_error *err);
/* Frees a compiled filter (NULL: nothing); no context (wm_xpf_ctx) may use it any more. */
void wm_xpf_free(wm_xpf *f);
/* Copies the compiled filter's figures (wm_xpf_stats above: counts of
 * states, queries, clusters, fixed at compile time) into *st. Any thread:
 * the filter is immutable after wm_xpf_compile. */
void wm_xpf_stats_get(const wm_xpf *f, wm_xpf_stats *st);
/* The number of queries the filter was compiled with (the n of
 * wm_xpf_compile; query indices are 0..n-1). Any thread. */
uint32_t wm_xpf_n_queries(const wm_xpf *f);

/* The bit of wm_xpf_match's matched[] that reports query (0-based index
 * in the queries given to wm_xpf_compile): the filter numbers its queries
 * so that those of one numeric range cluster ("@n = 'x' and @v > 3", "...
 * @v > 7", ...) are consecutive bits in threshold order, which a value
 * marks as one bit range instead of a precomputed set read from memory.
 * A permutation of [0, n_queries), fixed when compiling (the same for
 * every context and document); UINT32_MAX when query >= n_queries. A
 * table look-up: a caller that reads results per document may keep the
 * bit with its query. Thread safe (f is immutable). */
uint32_t wm_xpf_bit_of(const wm_xpf *f, uint32_t query);

/* A per-thread evaluation context for f (which must outlive it): its own EXI
 * decoder with limits lim (NULL: defaults; typed_only is forced on) and
 * Hyperscan scratch. NULL on out of memory. */
wm_xpf_ctx *wm_xpf_ctx_new(const wm_xpf *f, const wm_exi_limits *lim);
void wm_xpf_ctx_free(wm_xpf_ctx *c);

/* Whole-stream validation (default off: early stop). Off, wm_xpf_match
 * stops decoding once every query is decided (at the next element start or
 * end after the deciding value), and WM_XPF_OK then guarantees only that
 * the bits read so far are a valid EXI prefix for the grammar which decides
 * every query: a stream damaged or truncated AFTER that point is not
 * read, so it is not reported and may come back as a match (use this where
 * the payload is not trusted any further, e.g. a benchmark of the filter
 * alone). On, the decoder always reads to the end
 * of the stream, the queries being evaluated only until they are decided:
 * WM_XPF_OK then means the whole stream is valid EXI for the grammar (what
 * wm_exi_decode accepts), and any damage is WM_XPF_E_DECODE with its
 * reason and bit position. The tool (`wmctl exi filter`) and the data plane
 * turn it on. Per context; not while a match runs on it. */
void wm_xpf_ctx_set_whole_stream(wm_xpf_ctx *c, bool on);

/* Evaluates the filter over one EXI stream buf[0..len) (header and body;
 * oob: the out-of-band options when the header has none, NULL = defaults).
 * matched[] has (n_queries + 63) / 64 words; bit wm_xpf_bit_of(f, q) (not
 * bit q) is set iff query q selects at least one node of the document
 * (the number of bits set is the number of queries that match). cand (may be NULL: all
 * queries) restricts the work to the n_cand query indexes listed: the others
 * are reported unmatched and, without whole-stream validation, decoding
 * stops once the listed ones are decided (see
 * wm_xpf_ctx_set_whole_stream for what an early stop does and does not
 * guarantee). *stopped_early (may be NULL) tells whether every query was
 * decided before the end of the stream (without whole-stream validation:
 * decoding stopped there, the rest was not read). Errors: WM_XPF_E_DECODE
 * (exi_err has the decoder's status, reason and bit position; matched[] is
 * then undefined), WM_XPF_E_MEMORY (a value too large for the context's
 * buffers). Uses only c's memory: no allocation after the first documents. */
wm_xpf_status wm_xpf_match(wm_xpf_ctx *c, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                           const uint32_t *cand, uint32_t n_cand, uint64_t *matched, bool *stopped_early,
                           wm_exi_error *exi_err);

#endif
