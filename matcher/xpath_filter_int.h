/* Internal: the compiled filter automaton shared by xpath_compile.c (builds
 * it), xpath_paths.c (path automaton), xpath_value.c (typed values) and
 * xpath_eval.c (runs it). Not part of the API: include
 * matcher/xpath_filter.h. */
#ifndef WM_MATCHER_XPATH_FILTER_INT_H
#define WM_MATCHER_XPATH_FILTER_INT_H

#include <hs/hs.h>
#include <string.h>

#include "matcher/intern.h"
#include "matcher/xpath_filter.h"

#define XPF_NONE UINT32_MAX
/* The namespace of xsi:type and xsi:nil (XML Schema Part 1 §2.6). */
#define WM_XPF_XSI_URI "http://www.w3.org/2001/XMLSchema-instance"
/* Query bit sets (matched, decided, cluster rows) are padded to a multiple
 * of this many 64-bit words, so they are OR-ed 512 bits at a time. */
#define XPF_QW 8

/* Literal (value test) kinds. */
enum { XPF_L_NUM = 0, XPF_L_STREQ, XPF_L_STRNE, XPF_L_PAT, XPF_L_EXISTS };

/* Slot value kinds at run time. */
enum { XPF_V_STR = 0, XPF_V_NUM, XPF_V_BOOL };

typedef struct xpf_lit {
    uint8_t kind;       /* XPF_L_* */
    uint8_t op;         /* NUM: wm_xp_op */
    uint8_t opd;        /* wm_xp_operand (decides the absent truth) */
    bool absent;        /* truth when the operand has no node */
    bool starts;        /* PAT: starts-with() of a non-empty string (s_off, s_len) */
    bool prefix;        /* starts, decided by the slot's prefix tables, not in the Hyperscan database */
    uint32_t slot;
    double x;           /* NUM literal */
    uint32_t s_off, s_len; /* STREQ/STRNE/starts: string in strpool */
} xpf_lit;

/* A slot whose starts-with() literals have at most this many distinct
 * lengths tests them by hashing the value's prefixes of those lengths
 * (xpf_pslot pre); with more, they stay in the Hyperscan database. */
#define XPF_MAX_PLENS 8

/* Predicate tree over literals. */
enum { XPF_P_LIT = 0, XPF_P_AND, XPF_P_OR, XPF_P_NOT, XPF_P_TRUE, XPF_P_FALSE };
typedef struct xpf_pnode {
    uint8_t kind;
    uint32_t a, b;      /* LIT: a = literal id; AND/OR: children; NOT: a */
} xpf_pnode;

/* A slot: an attribute (uri, local) or the element's text (is_text). */
typedef struct xpf_slot {
    bool is_text;
    const char *uri, *local;   /* attribute name (pool strings) */
    uint32_t guri, glid;       /* grammar ids, XPF_NONE if not in the initial string table */
} xpf_slot;

/* What a trigger literal being true does, in a predicate state:
 *   qlist[off..off+n)         generic queries: become candidates, evaluated at the element's end;
 *   qlist[eoff..eoff+ne)      exact queries (the predicate is the trigger alone): match now;
 *   clusters[coff..coff+nc)   queries "trigger and <value test on one slot>" grouped by
 *                             slot and op, sorted by literal: decided by binary search. */
typedef struct xpf_post {
    uint32_t off, n;
    uint32_t eoff, ne;
    uint32_t coff, nc;
    uint32_t roff;      /* with clusters: its runs, pstate runs[roff..], up to an XPF_RUN_END */
} xpf_post;

/* Queries "T and S op x" sharing trigger T. A range cluster (op < <= > >=)
 * keeps its entries in search order: x ascending for > >=, descending for
 * < <=, so the entries a value makes true are always a prefix, found by a
 * branch-free search of its keys (xpf_cluster koff); a per-document
 * watermark skips the ones already matched. An = cluster keeps x ascending
 * (the matching ones are a range). String clusters (str) hold "T and S =
 * 'lit'": entries sorted by the literal's hash, found by the hash of S's
 * value and checked by content. */
typedef struct xpf_cluster {
    uint32_t slot;
    uint8_t op;
    bool str;
    uint8_t lg;                 /* range cluster: 1 << lg keys (>= 64), NaN past the n entries */
    uint32_t koff;              /* range cluster: its keys in pstate ckeys */
    double sgn;                 /* range cluster: -1 for op < <= (keys -x, searched with -value), else 1 */
    uint32_t ninf;              /* range cluster of op >= <=: its leading entries x = -inf (>=) or +inf
                                 * (<=), true for every number but have no key doing so (xpf_key) */
    uint32_t off, n;            /* into pstate centries */
    uint32_t id;                /* filter-wide index (watermarks) */
    bool post_end;              /* the last of its post's clusters: an XPF_RUN_END follows its run */
    bool fast;                  /* a range cluster with rows or a bit range (qb) and no ninf: of lg 6, ranked
                                 * inline at every element that fires it (xpf_run BITS, ROWS), else past its
                                 * watermark (run_cluster) */
    bool sole;                  /* a numeric range cluster whose queries appear nowhere else in the
                                 * filter: with every query a candidate, the entries past its
                                 * watermark are undecided (no test needed before marking them) */
    uint32_t qb;                /* range cluster whose queries are the query bits [qb, qb + n), entry i bit
                                 * qb + i (renumber_queries): its row r is the bit range [qb, qb + r), made
                                 * on the fly (no pmask rows); XPF_NONE: none */
    uint32_t pm;                /* range cluster: the first of its n + 1 rows of wm_xpf.pmask (row r: the
                                 * queries of its first r entries), XPF_NONE: none (see XPF_PMASK_CAP);
                                 * a merged not() cluster has 1 + n_ul blocks of n + 1 rows: every
                                 * entry, then per literal ul[k] the entries whose L is another one */
    uint32_t ul_off, n_ul;      /* merged not() cluster with rows: its distinct L, pstate neglits */
    uint32_t toff, tmask;       /* string cluster with rows whose literals are all in its slot's equality
                                 * table: its table by literal (pstate strk, tmask + 1 entries); tmask 0:
                                 * none, the value's hash finds the literal's run */
} xpf_cluster;

/* A literal of a string cluster in the cluster's table by literal
 * (xpf_cluster toff): the value's probe of its slot's equality table names
 * the literal it equals (the first of that string there), so a fired
 * cluster finds the literal's run of entries by that id, without hashing
 * or comparing the string again: a conjunction of two equalities (e.g.
 * @vb = 'true' and @n = 'x') is decided by the pair of literals the two
 * probes found. */
typedef struct xpf_strkey {
    uint32_t lit;               /* the literal the probe names, XPF_NONE: empty */
    uint32_t r, n;              /* its run of the cluster's entries: the first (its row) and how many */
} xpf_strkey;

/* How the element decision runs a cluster (xpf_run kind): inline, a fast
 * cluster (xpf_cluster fast) of at most 63 entries (lg 6) by its bit range
 * (qb; BITS), by rows of two words where its queries' bits lie in two
 * consecutive words (PAIR: e.g. "@v < x or @v > y", whose queries are the
 * bit range of its other cluster), or by its rows (ROWS); any other one
 * out of line, through its xpf_cluster. END closes a post's runs. */
enum { XPF_RUN_BITS = 0, XPF_RUN_PAIR, XPF_RUN_ROWS, XPF_RUN_OTHER, XPF_RUN_END };

/* A cluster as the element decision runs it (xpf_pstate runs: each post's
 * clusters in order, then an END): what an inline one's rank and row OR
 * read side by side, so that the clusters of the posts fired at an element
 * are one tight loop over 32-byte records instead of a walk through
 * xpf_cluster and the pstate's key and row tables. */
typedef struct xpf_run {
    const double *K;            /* BITS, PAIR, ROWS: its keys (pstate ckeys + koff) */
    double sgn;                 /* BITS, PAIR, ROWS: xpf_cluster sgn */
    union {
        const uint64_t *rows;   /* ROWS: wm_xpf pmask + pm * n_qw; PAIR: its rows in wm_xpf prow (row r: words 2r, 2r + 1) */
        uint32_t cl;            /* OTHER: its index in pstate clusters */
    };
    uint32_t slot;              /* BITS, PAIR, ROWS: the numeric slot it reads */
    uint16_t qw;                /* BITS: qb / 64; PAIR: the first of the two words its rows cover */
    uint8_t qs;                 /* BITS: qb % 64 */
    uint8_t kind;               /* XPF_RUN_* */
} xpf_run;
_Static_assert((WM_XPF_MAX_QUERIES + 63) / 64 < 65535, "xpf_run qw: a word of a query bit set, and the one after it");

/* A merged not() cluster with rows (xpf_neggroup, xpf_cluster pm) as the
 * element decision runs it (xpf_pstate negruns): its group's slot S and
 * its own S' side by side, one flat loop per element over all groups. */
typedef struct xpf_negrun {
    double sgn;                 /* xpf_cluster sgn */
    uint32_t gslot;             /* S, whose value names the literal L whose entries are skipped */
    uint32_t slot;              /* S', the numeric slot its entries test */
    uint32_t id;                /* xpf_cluster id */
    uint32_t cl;                /* index in pstate negcl */
} xpf_negrun;

/* The search key of a range cluster's threshold x under op: entry "S op x"
 * holds for value v exactly when key < w, w = v (> >=) or -v (< <=), for
 * every v, NaN included (every comparison false), but for op >= and x =
 * -inf (<= and +inf), which no key makes true at v = -inf (xpf_cluster
 * ninf). -x turns < <= into > >=; y <= w is nextdown(y) < w, nextdown(y)
 * being the largest double below y. Keys past a cluster's entries are NaN
 * (never below w). */
static inline double xpf_key(uint8_t op, double x)
{
    double y = op == WM_XP_LT || op == WM_XP_LE ? -x : x;
    return op == WM_XP_GE || op == WM_XP_LE ? __builtin_nextafter(y, -__builtin_inf()) : y;
}

/* The bytes of cluster rows (wm_xpf.pmask) a filter may hold: a row is a
 * bit set over all queries, so their size grows with queries times cluster
 * entries; clusters beyond the cap mark their entries one by one. */
#define XPF_PMASK_CAP (8u << 20)

typedef struct xpf_centry {
    union {
        double x;               /* numeric cluster */
        uint64_t h;             /* string cluster: wm_xpf_str_hash(literal) */
    };
    uint32_t q;
    uint32_t lit;               /* string cluster: the STREQ literal */
} xpf_centry;

/* Queries "G and <cluster test>" whose guard G has no trigger literal (it
 * can hold with no value present, e.g. not(@u = 'x')): queries with the same
 * G share one guard, evaluated once per element, whose post fires their
 * clusters. */
typedef struct xpf_guard {
    uint32_t pred;              /* pnode root of G (of one of the queries) */
    bool neg;                   /* G = not(S = 'lit'): decided through pstate neg */
    xpf_post post;
} xpf_guard;

/* The guards not(S = 'lit') of a predicate state, sorted by slot: per slot,
 * one hash of S's value finds the one literal it equals; every other guard
 * of the slot holds. */
typedef struct xpf_negguard {
    uint32_t slot;
    uint32_t lit;               /* the STREQ literal */
    uint64_t h;                 /* wm_xpf_str_hash(literal) */
    uint32_t guard;             /* index in pstate guards */
} xpf_negguard;

/* The numeric clusters of the not(S = 'L') guards of one slot S, merged
 * across the guards by (slot, op): one cluster holds the entries of every
 * "not(S = 'L_i') and S' op x" query, sorted by x, each entry's lit being
 * its L_i (centries[].lit). At an element, the entries whose L_i is S's
 * value are skipped; all the others hold: one cluster run per (S', op)
 * instead of one per guard. The watermarks then mean "entries before lo
 * (after hi) are decided". */
typedef struct xpf_neggroup {
    uint32_t slot;              /* S */
    uint32_t goff, gn;          /* its guards' literals: pstate negm */
    uint32_t coff, cn;          /* its merged clusters: pstate negcl */
} xpf_neggroup;

typedef struct xpf_numtrig {
    double x;
    uint32_t lit;
    xpf_post post;
} xpf_numtrig;

/* What a string value equal to an equality literal still needs after its
 * probe in the evaluator's short handler (put_str_eq), decided when
 * compiling (xpf_eqtrig after). */
enum { XPF_EQ_DONE = 0, XPF_EQ_ROW, XPF_EQ_REPLAY, XPF_EQ_OTHER };

typedef struct xpf_eqtrig {
    uint64_t h;
    uint32_t lit;       /* XPF_NONE: empty */
    uint32_t s_len, s_off; /* the literal's string in strpool (a probe reads it without the literal) */
    const char *sp;     /* strpool + s_off, set once strpool no longer moves: a hit keeps it as the value */
    uint8_t after;      /* XPF_EQ_*: DONE, nothing more (the slot's only trigger is its table, or
                         * its scan's patterns that this literal matches fire nothing here and no
                         * predicate reads them); ROW, those patterns match exact queries only and
                         * no predicate reads them: the queries are one row (pq_row); REPLAY, its
                         * other trigger is the scan, whose patterns this literal's string is known
                         * to match (pat_n); OTHER, the slot's other triggers run (other_triggers) */
    bool pat_unread;    /* no predicate of the state reads the memo of those patterns (eq_rows) */
    xpf_post post;
    uint32_t pat_off, pat_n; /* the slot's Hyperscan patterns that the literal's string matches
                              * (pstate eqpat): a value equal to it needs no scan (pat_n
                              * XPF_NONE: not known, scan) */
    uint32_t pq_id;          /* with pq_off: filter-wide index of the list (a document's first value runs it) */
    uint32_t pq_off, pq_n;   /* when the triggers of those patterns here match exact queries only:
                              * all of those queries, in pstate qlist (no trigger lookup per
                              * pattern); pq_off XPF_NONE: the patterns are replayed one by one */
    const uint64_t *pq_row;  /* after ROW: those queries as a bit set (wm_xpf pqrows, n_qw words) */
} xpf_eqtrig;

/* A starts-with() literal in a slot's prefix table. */
typedef struct xpf_pretrig {
    uint64_t h;         /* wm_xpf_str_hash(literal) */
    uint32_t lit;       /* XPF_NONE: empty */
} xpf_pretrig;

typedef struct xpf_pattrig {
    uint32_t lit;
    xpf_post post;
} xpf_pattrig;

/* How a value of a slot is stored (xpf_pslot put), chosen when compiling
 * so that the evaluator's common cases take a short handler of their own
 * instead of the general one's chain of tests (any other value kind than
 * the one named falls back to the general handler):
 *   GENERIC  the general handler;
 *   NUM      no trigger on the slot: a typed number is converted and stored;
 *   STR_EQ   an equality table, no duplicate strings in it, no numeric test:
 *            a string is hashed and probed (the other triggers after it). */
enum { XPF_PUT_GENERIC = 0, XPF_PUT_NUM, XPF_PUT_STR_EQ };

/* Per predicate state and slot: the triggers of that slot. */
typedef struct xpf_pslot {
    uint32_t slot;
    bool need_str;      /* some literal reads the string: copy it */
    bool need_num;      /* some literal compares numbers */
    bool scan;          /* pattern literals on this slot: scan the value */
    bool num_trig;      /* numeric triggers other than != */
    bool any_trig;      /* any trigger at all (else a value is only stored) */
    bool eq_only;       /* the equality table is all: no other trigger to look at after it */
    bool scan_only;     /* the scan is the only other trigger than the equality table */
    bool pre_only;      /* the prefix tables are the only other trigger than the equality table */
    uint8_t put;        /* XPF_PUT_*: the evaluator's handler for a value of this slot */
    uint32_t eq_mask;   /* eq table size - 1 (0 with no table) */
    bool eq_dup;        /* two literals of the table have the same string (e.g. @a = 'x', . = 'x'): probe on after a hit */
    xpf_eqtrig *eq;
    const xpf_eqtrig *bool_eq[2]; /* the entries of 'false' and 'true' in eq (NULL: none): a boolean's probe */
    uint32_t n_num[6];
    xpf_numtrig *num[6];        /* per wm_xp_op, sorted by x ascending */
    xpf_post exists;
    uint32_t n_plens;   /* distinct lengths of the prefix literals, ascending */
    uint32_t plens[XPF_MAX_PLENS];
    uint32_t pre_mask;  /* pre table size - 1 */
    xpf_pretrig *pre;
} xpf_pslot;

typedef struct xpf_pstate {
    uint32_t n_q;
    uint32_t *qs;               /* queries with predicates accepting here */
    uint32_t n_always;
    uint32_t *always;           /* evaluated at every element */
    uint32_t n_pslots;
    xpf_pslot *pslots;
    uint16_t *slot_ix;          /* [n_slots]: pslot index + 1, 0 = not used here */
    const xpf_pslot **pslot_of_lid;        /* [g->n_lids]: the pslot of the attribute slot of a grammar
                                            * local-name id, NULL: none (a pointer: no index arithmetic
                                            * between the decoder's attribute and its handler) */
    uint32_t n_pat;
    xpf_pattrig *pat;           /* pattern triggers sorted by lit */
    uint32_t pat_mask;          /* pat_ix size - 1 */
    uint32_t *pat_ix;           /* open addressing by literal id: pat index + 1, 0 = empty (NULL without pat) */
    uint32_t *eqpat;            /* pattern literal ids of the equality literals (xpf_eqtrig pat_off) */
    uint32_t *qlist;            /* postings */
    uint32_t n_qlist;
    uint32_t n_clusters;
    xpf_cluster *clusters;
    uint32_t n_runs;            /* n_clusters + the posts with clusters (their ENDs) */
    xpf_run *runs;              /* [n_runs]: the clusters as the evaluator runs them (xpf_run) */
    xpf_centry *centries;
    uint32_t n_centries;
    double *ckeys;              /* the range clusters' search keys (xpf_cluster koff, xpf_key) */
    uint32_t n_ckeys;
    uint32_t n_nslots;
    uint32_t *nslots;           /* the slots range and = clusters read: their number is NaN at an element
                                 * until a value arrives, so a cluster reads it without testing presence */
    uint32_t n_guards;
    xpf_guard *guards;
    uint32_t n_plain;
    uint32_t *plain;            /* the guards evaluated as predicates (not neg) */
    uint32_t n_neg;
    xpf_negguard *neg;          /* the guards not merged into neggroups */
    uint32_t n_neggroups;
    xpf_neggroup *neggroups;
    xpf_negguard *negm;         /* the merged guards, by group */
    xpf_cluster *negcl;         /* the merged clusters, by group */
    uint32_t *neglits;          /* the distinct L of merged clusters with rows (xpf_cluster ul_off) */
    uint32_t n_negruns;
    xpf_negrun *negruns;        /* the merged clusters with rows (xpf_negrun) */
    bool neg_slow;              /* some merged cluster has no rows (run one by one) */
    uint32_t n_strk;
    xpf_strkey *strk;           /* the string clusters' tables by literal (xpf_cluster toff) */
    bool any_text;
} xpf_pstate;

typedef struct xpf_query {
    uint32_t pred;              /* pnode root, XPF_NONE: no predicate */
    uint32_t n_steps;
    uint32_t nfa0;              /* NFA id of (query, 0 steps matched) */
} xpf_query;

typedef struct xpf_dstate {
    uint32_t pstate;            /* XPF_NONE if no predicated query accepts */
    uint32_t acc_off, n_acc;    /* queries without predicates accepting here, in f->acc */
} xpf_dstate;

/* A symbol of the element-name alphabet: 0 = any other name; named symbols
 * (uri, local); "other name in uri" symbols (local NULL) for 'p:*' tests. */
typedef struct xpf_sym {
    const char *uri, *local;
} xpf_sym;

struct wm_xpf {
    const wm_exi_grammar *g;
    uint32_t n_q;
    /* [n_q]: the bit of query q (the caller's index) in every query bit set and list of the filter
     * (matched, decided, rows, postings, cluster entries, qs): the queries of a range cluster are
     * consecutive bits in its search order (renumber_queries, wm_xpf_bit_of) */
    uint32_t *bit_of;
    xpf_query *qs;              /* by bit */
    uint32_t n_pnodes;
    xpf_pnode *pnodes;
    uint32_t n_lits;
    xpf_lit *lits;
    char *strpool;
    uint32_t n_slots;
    xpf_slot *slots;
    uint32_t text_slot;         /* XPF_NONE if no query reads text */
    uint32_t *slot_of_lid;      /* [g->n_lids] attribute slot by grammar local-name id */
    /* path automaton */
    uint32_t n_syms;
    xpf_sym *syms;
    uint32_t *sym_of_lid;       /* [g->n_lids] */
    uint32_t n_dstates;         /* state 0 is dead, 1 is the start */
    uint32_t *trans;            /* [n_dstates * n_syms] */
    xpf_dstate *dstates;
    uint32_t *acc;
    uint32_t n_pstates;
    xpf_pstate *pstates;
    uint32_t n_always_total;
    /* queries that cannot select anything in a strict document of the schema
     * (the product of the path automaton with the grammar never reaches them):
     * decided "no" before decoding when the stream is strict */
    uint32_t n_impossible;
    uint32_t *impossible;
    bool product_done;          /* the analysis ran (no wildcards, no xsi:type switches) */
    uint32_t product_pairs;     /* reachable (path state, element declaration) pairs: the filter grammar */
    uint32_t n_clusters_total;
    uint32_t n_pq;              /* equality literals' pattern-query lists (xpf_eqtrig pq_id) */
    /* rows of the numeric range clusters (xpf_cluster.pm): row r of a cluster of op > or >= is the
     * bit set of its queries at entries [0, r), of op < or <= at entries [r, n): the entries a
     * value makes true are, with those already true, one row, OR-ed into the result in n_qw words */
    uint64_t *pmask;
    uint64_t *prow;             /* the rows of two words of the clusters run as PAIR (xpf_run) */
    /* the pattern-query lists of the equality literals whose hits OR them as a row (xpf_eqtrig pq_row) */
    uint64_t *pqrows;
    uint32_t n_qw;              /* words of a query bit set, a multiple of XPF_QW */
    /* Hyperscan: one database of every pattern literal (id = literal id) */
    hs_database_t *hs_db;
    hs_scratch_t *hs_proto;
    uint32_t n_patterns;
    /* every string the filter owns */
    char **owned;
    uint32_t n_owned, cap_owned;
};

/* xpath_value.c: XPath 1.0 number() of a string (§4.4): optional
 * whitespace, optional '-', digits with an optional '.', whitespace; NaN
 * otherwise. Correctly rounded. */
double wm_xpf_str_number(const char *s, size_t len);
/* The IEEE double an EXI float (§7.1.4: mantissa * 10^exponent) denotes,
 * correctly rounded; exponent -16384 gives INF/-INF/NaN. */
double wm_xpf_float_value(int64_t mantissa, int32_t exponent);
extern const double wm_xpf_p10[23];   /* 1e0 .. 1e22, exact */
/* wm_xpf_float_value with its common case inline: a mantissa of at most 53
 * bits and a small negative exponent (sensor readings: one division). */
static inline double wm_xpf_float(int64_t m, int32_t e)
{
    if (e <= 0 && e >= -22 && m > -(1ll << 53) && m < (1ll << 53)) return (double)m / wm_xpf_p10[-e];
    return wm_xpf_float_value(m, e);
}
/* The numeric comparison op of XPath 1.0 (§3.4) on doubles (NaN: all false but !=). */
bool wm_xpf_cmp(uint8_t op, double v, double x);

/* xpath_paths.c: builds syms, sym_of_lid, trans, dstates, acc, pstate
 * assignment (pstates[].qs) from the parsed queries. Returns WM_XPF_E_LIMIT or
 * _MEMORY with err filled. */
wm_xpf_status wm_xpf_build_paths(wm_xpf *f, const wm_xp_query *pq, wm_xpf_error *err);
/* xpath_paths.c: the product with the grammar (impossible queries). */
wm_xpf_status wm_xpf_build_product(wm_xpf *f);

/* What the types of value tests are computed from (xpath_types.c): the
 * types xsi:type may give an element of each type, and the typing product
 * of the path automaton with the grammar (xpath_paths.c), from which a
 * query's last step's declarations follow. */
typedef struct xpf_typing {
    const wm_exi_grammar *g;
    uint32_t *doff, *dlist;     /* [n_tgrams + 1]: type t and the types derived from it, dlist[doff[t]..doff[t+1]) */
    uint8_t *ulike;             /* [n_tgrams]: a union (xsi:type may name a member: any simple type here) */
    uint8_t *seen;              /* reachable (path state, declaration) pairs, bits [d * n_elems + e]; NULL: not built */
    uint8_t *wild;              /* path states below a wildcard (their declarations unknown), bits */
    uint32_t *qoff, *qd;        /* the path states where query q completes: qd[qoff[q]..qoff[q+1]) */
    uint32_t *first, *order;    /* the grammar's states grouped by type grammar */
    uint32_t cur;               /* the query decl/all describe, XPF_NONE: none yet */
    uint8_t *decl, *all;        /* [n_tgrams]: its declarations' types; with the types xsi:type may give them */
    uint32_t n_decl;            /* declarations its last step reaches */
    uint32_t *emark;            /* [n_elems]: cur + 1 once counted in n_decl */
    bool fallback;              /* some of them only by name (below a wildcard, or no product) */
} xpf_typing;
/* xpath_paths.c: the typing product (tp->doff/dlist set): fills tp->seen
 * and tp->wild (allocated by the caller, n_dstates bits). */
wm_xpf_status wm_xpf_build_reach(wm_xpf *f, xpf_typing *tp);
/* xpath_types.c: builds tp for f (paths built, queries parsed), NULL on
 * allocation failure; freed with wm_xpf_typing_free. */
xpf_typing *wm_xpf_typing_new(wm_xpf *f);
void wm_xpf_typing_free(xpf_typing *tp);
/* xpath_types.c: types value test n of query q, whose last step is
 * elem_test, against the schema: WM_XPF_OK with *use = n, or the test
 * rewritten into *bn (booleans compare as booleans) and *use = bn; else
 * WM_XPF_E_TYPE with the reason in err (query, position, message). */
wm_xpf_status wm_xpf_type_test(xpf_typing *tp, uint32_t q, const wm_xp_name *elem_test, const wm_xp_node *n, wm_xp_node *bn,
                               const wm_xp_node **use, wm_xpf_error *err);
/* Symbol of an element name seen at run time. */
uint32_t wm_xpf_symbol(const wm_xpf *f, uint32_t uri_id, uint32_t lid, const wm_exi_sview *uri, const wm_exi_sview *local);

char *wm_xpf_keep(wm_xpf *f, const char *s, size_t n);

/* The hash of string literals and string values in the filter's tables
 * (equality triggers, string clusters, not() guards, the scan memo, prefix
 * tables); the tables live in memory only, so any hash computed alike at
 * compile and run time will do. Strings of at most WM_XPF_EXACT bytes —
 * names, units, states, booleans — are read in two overlapping loads
 * (every byte once at least, so given n the loads determine the string)
 * and mixed by a bijection: for them equal hashes and lengths mean equal
 * strings, and a probe needs no byte comparison (test_xpath_filter
 * short_string_hash_is_exact). Longer ones take the interning tables'
 * short-key hash (two multiplies up to 16 bytes, wm_hash_bytes beyond). */
#define WM_XPF_EXACT 8
/* out of line: the short path, inlined, keeps its caller's registers free */
static __attribute__((noinline, unused)) uint64_t wm_xpf_str_hash_long(const char *s, uint32_t n) { return wm_hash_key(0, s, n); }
static inline __attribute__((always_inline)) uint64_t wm_xpf_str_hash(const char *s, uint32_t n)
{
    if (n > WM_XPF_EXACT) return wm_xpf_str_hash_long(s, n);
    uint64_t k;
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        k = (uint64_t)b << 32 | a;
    } else /* first, middle and last byte: all of them */
        k = n ? (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n >> 1] << 8 | (uint64_t)(unsigned char)s[n - 1] << 16 : 0;
    /* odd multiplies and xor-shifts are invertible: distinct k, distinct hashes */
    k *= 0x9E3779B97F4A7C15ull;
    k ^= k >> 32;
    k *= 0xD6E8FEB86659FD93ull;
    return k ^ (k >> 29);
}

/* Home position of literal id lit in an open-addressing table of mask + 1 entries. */
static inline uint32_t wm_xpf_lit_slot(uint32_t lit, uint32_t mask) { return (uint32_t)((lit * 0x9E3779B97F4A7C15ull) >> 32) & mask; }

/* Is NUL-terminated s equal to the view v (whose pointer may be NULL when empty)? */
static inline bool wm_xpf_sv_eq(const char *s, const wm_exi_sview *v)
{
    return strlen(s) == v->len && (v->len == 0 || !memcmp(s, v->p, v->len));
}

#endif
