/* Runs the filter automaton (matcher/xpath_filter.h) over the decoder's
 * events in one pass: the path state of every open element on a stack, the
 * values of the element in a predicate state collected into slots (typed:
 * numbers as doubles, strings copied only where a test reads them), trigger
 * literals marking candidate queries as values arrive, and the candidates'
 * predicates evaluated once the element's values are complete (at its first
 * child, or its end). Literal results are memoised per element (epochs, no
 * clearing), so a test shared by many queries is computed once. An element
 * whose queries read its text ('.', text()) is decided at its end instead,
 * exactly (XPath 1.0 string-value and text nodes) also where it has child
 * elements or several text nodes: see "Text" below. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX__) || defined(__BMI2__)
#include <immintrin.h>
#endif

#include "codec/exi_decode_int.h"
#include "matcher/intern.h"
#include "matcher/xpath_filter_int.h"

typedef struct xframe {
    uint32_t dstate;
} xframe;

/* A Hyperscan result: the pattern ids matching text[0..len), at most
 * SCAN_MEMO_IDS of them (longer texts or more ids are scanned every time). */
#define SCAN_MEMO 256           /* entries: 128 sets of 2 (LRU) */
#define SCAN_MEMO_TEXT 40
#define SCAN_MEMO_IDS 8
typedef struct scan_memo {
    uint64_t h;
    uint32_t used;              /* scan counter at the last use */
    uint8_t len;                /* 0: empty entry (empty texts are not memoised) */
    uint8_t n_ids;              /* SCAN_MEMO_IDS + 1: overflowed while recording */
    char text[SCAN_MEMO_TEXT];
    uint32_t ids[SCAN_MEMO_IDS];
} scan_memo;

/* Per merged not() cluster and document (doc): the watermark, entries
 * [0, lo) decided. With rows (run_neg_rows) doc is unused: a cluster whose
 * m1 left NaN in a document is put back (CSTATE_ROWS0) when the next one
 * starts (wm_xpf_ctx ntouch). */
typedef struct cstate {
    uint32_t doc, lo, hi;
    uint32_t u1;                /* merged not() clusters with rows: run_neg_rows */
    double m1, m2;              /* negated for ops < <= (run_neg_rows) */
    bool pend;                  /* in the pending list (flush_pending) */
} cstate;

#define CSTATE_ROWS0 ((cstate){ .u1 = XPF_NONE, .m1 = NAN, .m2 = NAN })

/* A merged not() cluster whose marking waits (flush_pending), with its
 * predicate state (its entries are the state's). */
typedef struct pending {
    const xpf_pstate *ps;
    const xpf_cluster *cl;
} pending;

/* A text node of the element being collected or of a frame (xtframe): its
 * chunks' text is c->dt[off, off + len); val is its first chunk's value
 * (typed; its text pointer is stale, dt holds the text), joined: several
 * adjacent chunks, one string. */
typedef struct xtnode {
    uint32_t off, len;
    bool joined;
    wm_exi_value val;
} xtnode;

/* An element whose state reads the text and that has a child element: its
 * decision waits for its end (go_complex, close_frame). */
typedef struct xtframe {
    const xpf_pstate *ps;
    uint32_t sp;                /* c->sp with the element on the stack */
    uint32_t dstart;            /* its string value: dt[dstart, dt_len at its end) */
    uint32_t tn0;               /* its text nodes: tn[tn0, n_tn) at its end */
    uint32_t xa0, xl0;          /* its saved attribute values xa[xa0..), literal marks xl[xl0..) */
    size_t ab0;                 /* their strings: ab[ab0..) */
} xtframe;

typedef struct slotv {
    uint32_t epoch;             /* element serial when set */
    uint8_t kind;               /* XPF_V_* */
    bool b;
    bool hashed;                /* h is wm_xpf_str_hash(the value's string) */
    uint32_t eqlit;             /* the first literal of the slot's equality table the string equals, XPF_NONE:
                                 * none (the tables hold every literal of the slot's merged not() guards, and of
                                 * its string clusters with a table by literal) */
    uint64_t h;
    double num;                 /* NUM, or number() of a STR when the slot compares numbers */
    const char *sp;             /* STR (when a test reads it): its string, the equality literal it
                                 * equals (in the filter's strpool) or a copy in sbuf */
    uint32_t len;
    uint32_t pad_[5];           /* to 64 bytes: a slot's offset is its index shifted (one instruction less per cluster) */
} slotv;
_Static_assert(sizeof(slotv) == 64, "slotv pads to 64 bytes");

/* A saved attribute value of a frame (its string at ab[soff], SIZE_MAX: none kept). */
typedef struct xtattr {
    uint32_t slot;
    size_t soff;
    slotv v;
} xtattr;

/* A saved pattern-literal mark of a frame (what the scan found in its attributes). */
typedef struct xtmark {
    uint32_t lit;
    bool val;
} xtmark;

struct wm_xpf_ctx {
    const wm_xpf *f;
    wm_exi_decoder dec;
    hs_scratch_t *scratch;
    uint32_t max_depth;
    xframe *stack;
    uint32_t sp;
    /* per document */
    uint64_t *matched;
    uint64_t *decided;          /* bitset [n_q]: decided (a bitset, not bytes: byte stores alias everything);
                                 * a query matched by cluster rows (or_rows) or a sole cluster has its matched bit only */
    int64_t undecided;          /* at most the undecided queries (lose()): <= 0 means "count them" */
    bool any_no;                /* a query was decided without a match (not a candidate, impossible):
                                 * cluster rows, which mark entries without testing them, are masked by open */
    uint64_t *open;             /* [n_qw] with any_no: the queries not decided without a match */
    /* the element being collected */
    union {
        struct {
            bool collecting;
            uint8_t more;       /* XT_*: frames are open, text of the collected element waits */
        };
        uint16_t busy;          /* both: one test at element events, 1 the common case (collecting only) */
    };
    /* text (see "Text"): chunks of the elements it is kept for, their text nodes, the frames */
    char *dt;
    size_t dt_len, dt_cap;
    xtnode *tn;
    uint32_t n_tn, cap_tn;
    uint32_t t_serial;          /* the serial of the collected element once its first text came */
    uint32_t tn0;               /* the collected element's first text node (with t_serial) */
    bool t_split;               /* the next chunk starts a text node (an element event or comment came) */
    uint8_t xscan_opd;          /* scan_text: the literals marked (wm_xp_operand) */
    xtframe *xf;                /* [max_depth + 2] */
    uint32_t n_xf;
    xtattr *xa;
    uint32_t n_xa, cap_xa;
    xtmark *xl;
    uint32_t n_xl, cap_xl;
    char *ab;
    size_t ab_len, ab_cap;
    size_t text_cap;            /* bytes dt and ab may take each (the decoder's memory cap) */
    const xpf_pstate *ps;
    uint32_t serial;
    slotv *sv;                  /* [n_slots] */
    char *sbuf;
    size_t sbuf_len, sbuf_cap;
    uint32_t *lit_epoch;        /* [n_lits] */
    uint32_t *pq_doc;           /* [n_pq]: the document whose value equal to the literal ran the
                                 * literal's pattern-query list (xpf_eqtrig pq_id) already */
    bool *lit_val;
    uint32_t *cand;             /* candidate queries of the element */
    uint32_t n_cand;
    uint32_t *cand_epoch;       /* [n_q] */
    uint32_t scan_slot;         /* slot being scanned (Hyperscan callback) */
    /* clusters: the posts with clusters fired in the current element (a
     * post fires at most once per element, each cluster is in one post, so
     * at most n_clusters_total); watermarks per document */
    const xpf_post **fired;
    uint32_t n_fired;
    uint32_t n_qw;              /* wm_xpf n_qw */
    uint32_t n_lids, n_uris;    /* of the grammar: names with ids in its tables */
    cstate *cs;                 /* [n_clusters_total] */
    uint32_t *ntouch;           /* the merged clusters with rows whose cstate moved in this document */
    uint32_t n_ntouch;
    uint64_t *wm;               /* [n_clusters_total]: a range cluster's watermark, doc << 32 | entries
                                 * [0, lo) matched (another doc: none), read without a branch */
    pending *pend;              /* [n_clusters_total]: clusters whose marking waits */
    uint32_t n_pend;
    uint32_t pend_n;            /* their entries, summed: at most the queries the wait holds back */
    uint32_t doc;
    bool failed;                /* a value did not fit sbuf */
    /* what the Hyperscan database reports for a string is a function of the
     * string alone: sensor names, units and states repeat across documents */
    scan_memo *memo;            /* [SCAN_MEMO] direct-mapped by hash */
    scan_memo *rec;             /* entry being recorded by scan_cb, or NULL */
    uint32_t scans;             /* LRU clock of memo */
    bool whole_stream;          /* decode to the end even once every query is decided */
    bool all_cand;              /* this document decides every query (no candidate list) */
    bool decided_early;         /* every query was decided before the last event */
};

/* wm_xpf_ctx more: work at the next element event beyond finish() (see "Text"). */
enum { XT_FRAMES = 1, XT_TPEND = 2 };

/* The filter's instance of the strict loop (below, after its handlers). */
static wm_exi_status xpf_strict_loop(wm_exi_dctx *c);

wm_xpf_ctx *wm_xpf_ctx_new(const wm_xpf *f, const wm_exi_limits *lim)
{
    wm_xpf_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->f = f;
    wm_exi_limits l = wm_exi_limits_resolve(lim);
    l.typed_only = true;
    wm_exi_decoder_init(&c->dec, f->g, &l);
    c->dec.strict_loop = xpf_strict_loop; /* the filter's handlers in the loop */
    c->max_depth = l.max_depth;
    uint32_t nq = f->n_q ? f->n_q : 1;
    c->stack = malloc((c->max_depth + 2) * sizeof *c->stack);
    /* n_qw >= (nq + 63) / 64, padded for or_rows; one word more (0 in open) for or_bits */
    c->matched = calloc(f->n_qw + 1, sizeof *c->matched);
    c->decided = calloc(f->n_qw, sizeof *c->decided);
    c->open = calloc(f->n_qw + 1, sizeof *c->open);
    c->sv = calloc(f->n_slots ? f->n_slots : 1, sizeof *c->sv);
    c->lit_epoch = calloc(f->n_lits ? f->n_lits : 1, sizeof *c->lit_epoch);
    c->lit_val = calloc(f->n_lits ? f->n_lits : 1, sizeof *c->lit_val);
    c->pq_doc = calloc(f->n_pq ? f->n_pq : 1, sizeof *c->pq_doc);
    c->cand = malloc(nq * sizeof *c->cand);
    c->cand_epoch = calloc(nq, sizeof *c->cand_epoch);
    uint32_t ncl = f->n_clusters_total ? f->n_clusters_total : 1;
    c->fired = malloc((ncl + 1) * sizeof *c->fired); /* + 1: add_post stores before it counts */
    c->n_qw = f->n_qw;
    c->n_lids = f->g->n_lids;
    c->n_uris = f->g->n_uris;
    c->cs = malloc(ncl * sizeof *c->cs);
    if (c->cs)
        for (uint32_t i = 0; i < ncl; i++) c->cs[i] = CSTATE_ROWS0;
    c->ntouch = malloc(ncl * sizeof *c->ntouch);
    c->wm = calloc(ncl, sizeof *c->wm);
    c->pend = malloc(ncl * sizeof *c->pend);
    c->sbuf_cap = 1u << 16;
    c->sbuf = malloc(c->sbuf_cap);
    c->xf = malloc((c->max_depth + 2) * sizeof *c->xf);
    c->text_cap = l.mem_cap < UINT32_MAX / 2 ? l.mem_cap : UINT32_MAX / 2;
    c->memo = calloc(SCAN_MEMO, sizeof *c->memo);
    if (!c->memo || !c->xf || !c->open || !c->stack || !c->matched || !c->decided || !c->sv || !c->lit_epoch || !c->lit_val || !c->pq_doc || !c->cand || !c->cand_epoch ||
        !c->sbuf || !c->fired || !c->cs || !c->ntouch || !c->wm || !c->pend || (f->hs_proto && hs_clone_scratch(f->hs_proto, &c->scratch) != HS_SUCCESS)) {
        wm_xpf_ctx_free(c);
        return NULL;
    }
    return c;
}

void wm_xpf_ctx_free(wm_xpf_ctx *c)
{
    if (!c) return;
    wm_exi_decoder_free(&c->dec);
    if (c->scratch) hs_free_scratch(c->scratch);
    free(c->stack);
    free(c->matched);
    free(c->decided);
    free(c->open);
    free(c->sv);
    free(c->lit_epoch);
    free(c->lit_val);
    free(c->pq_doc);
    free(c->cand);
    free(c->cand_epoch);
    free(c->sbuf);
    free(c->memo);
    free(c->dt);
    free(c->tn);
    free(c->xf);
    free(c->xa);
    free(c->xl);
    free(c->ab);
    free(c->fired);
    free(c->cs);
    free(c->ntouch);
    free(c->wm);
    free(c->pend);
    free(c);
}

static inline bool is_decided(const wm_xpf_ctx *c, uint32_t q) { return c->decided[q >> 6] >> (q & 63) & 1; }

/* The undecided queries, counted: neither decided nor matched. */
static __attribute__((noinline)) uint32_t count_undecided(const wm_xpf_ctx *c)
{
    uint32_t n = 0, nq = c->f->n_q;
    for (uint32_t w = 0; w < (nq + 63) / 64; w++) {
        uint64_t open = ~(c->decided[w] | c->matched[w]);
        if (w == nq / 64) open &= (1ull << (nq % 64)) - 1;
        n += (uint32_t)__builtin_popcountll(open);
    }
    return n;
}

/* k queries were decided, or at most k (rows OR-ed into the bit sets do not
 * say how many of their queries were open): c->undecided stays a lower
 * bound, counted exactly (none_undecided) only once it reaches 0, at an
 * element event: no test per value. */
static inline void lose(wm_xpf_ctx *c, uint32_t k) { c->undecided -= k; }

/* Is every query decided? Exact: a lower bound at or below 0 is replaced by
 * the count. Asked at element events (start, end), where decoding may stop:
 * stopping is an optimisation, and the few values between the deciding one
 * and the element's next event cost less than a test after every value
 * (at 1,000 queries a pack never stops early). */
static inline bool none_undecided(wm_xpf_ctx *c)
{
    if (__builtin_expect(c->undecided > 0, 1)) return false;
    if (c->failed) return false; /* undecided stays 0 for stop_now */
    c->undecided = count_undecided(c);
    return !c->undecided;
}

/* Decides q without a match (impossible, not a candidate). */
static inline void decide_no(wm_xpf_ctx *c, uint32_t q)
{
    if (is_decided(c, q)) return;
    c->decided[q >> 6] |= 1ull << (q & 63);
    if (!c->any_no) { /* the first: every query was open */
        uint32_t nq = c->f->n_q;
        memset(c->open, 0, c->f->n_qw * sizeof *c->open);
        memset(c->open, 0xff, nq / 64 * sizeof *c->open);
        if (nq % 64) c->open[nq / 64] = (1ull << (nq % 64)) - 1;
        c->any_no = true;
    }
    c->open[q >> 6] &= ~(1ull << (q & 63));
    lose(c, 1);
}

/* Matches the undecided ones of q[0..n) (stride: uint32_t words between
 * ids): decided, matched and the count stay in registers. */
static inline void match_queries(wm_xpf_ctx *c, const uint32_t *q, uint32_t n, uint32_t stride)
{
    uint64_t *dec = c->decided, *mat = c->matched;
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = q[(size_t)i * stride];
        uint64_t b = 1ull << (x & 63);
        if (dec[x >> 6] & b) continue;
        dec[x >> 6] |= b;
        mat[x >> 6] |= b;
        nd++;
    }
    lose(c, nd);
}

static inline void match_query(wm_xpf_ctx *c, uint32_t q) { match_queries(c, &q, 1, 1); }

static inline __attribute__((always_inline)) void add_post(wm_xpf_ctx *c, const xpf_post *p)
{
    const xpf_pstate *ps = c->ps;
    uint32_t serial = c->serial;
    /* the common post (a name's, a unit's) has clusters only: one test for the others */
    if (__builtin_expect(p->n | p->ne, 0)) {
        if (p->n) {
            const uint32_t *ql = ps->qlist + p->off;
            uint32_t nc = c->n_cand;
            for (uint32_t i = 0; i < p->n; i++) {
                uint32_t q = ql[i];
                if (c->cand_epoch[q] == serial || is_decided(c, q)) continue;
                c->cand_epoch[q] = serial;
                c->cand[nc++] = q;
            }
            c->n_cand = nc;
        }
        if (p->ne) match_queries(c, ps->qlist + p->eoff, p->ne, 1);
    }
    /* one store and no branch: the value handlers stay lean, finish finds the runs */
    uint32_t nf = c->n_fired;
    c->fired[nf] = p;
    c->n_fired = nf + (p->nc != 0);
}

/* First entry with x > v (upper) or x >= v (!upper) in e[lo..hi), else hi
 * (= clusters). One loop per comparison, so the test is not chosen again at
 * every step. */
static inline __attribute__((always_inline)) uint32_t bound(const xpf_centry *e, uint32_t lo, uint32_t hi, double v, bool upper)
{
    if (upper)
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (e[mid].x <= v) lo = mid + 1;
            else hi = mid;
        }
    else
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (e[mid].x < v) lo = mid + 1;
            else hi = mid;
        }
    return lo;
}

/* x when `keep`, else 0, without a branch (GCC turns a ?: of this kind into one). */
static inline uint32_t keep_if(bool keep, uint32_t x) { return -(uint32_t)keep & x; }

/* How many of p[0..8) are below w (NaN never is). */
static inline __attribute__((always_inline)) uint32_t below8(const double *p, double w)
{
#if defined(__AVX__)
    /* w > key, not key < w: the key is the operand that may come from memory */
    __m256d W = _mm256_set1_pd(w), a = _mm256_cmp_pd(W, _mm256_loadu_pd(p), _CMP_GT_OQ),
            b = _mm256_cmp_pd(W, _mm256_loadu_pd(p + 4), _CMP_GT_OQ);
#if defined(__AVX2__)
    /* the two masks' 64-bit lanes packed to 32-bit ones: one movemask */
    __m256i ab = _mm256_packs_epi32(_mm256_castpd_si256(a), _mm256_castpd_si256(b));
    return (uint32_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ab)));
#else
    return (uint32_t)__builtin_popcount((unsigned)(_mm256_movemask_pd(a) | _mm256_movemask_pd(b) << 4));
#endif
#else
    uint32_t k = 0;
    for (int j = 0; j < 8; j++) k += p[j] < w;
    return k;
#endif
}

/* How many of the keys K[0 .. 1 << lg) (sorted, lg >= 6, NaN past the
 * entries: never below w) are below w. No branch depends on the value,
 * whose place among the thresholds is as good as random (a binary search
 * mispredicts about every other step): up to 64 keys (lg 6), the 8 block
 * maxima K[-8..0) (K[8j + 7]) give the block, its 8 keys the place in it;
 * more keys take fixed binary steps. */
static inline __attribute__((always_inline)) uint32_t key_rank(const double *K, uint32_t lg, double w)
{
    if (__builtin_expect(lg == 6, 1)) {
        uint32_t b = below8(K - 8, w) * 8; /* < 64: K[63] is NaN (n <= 63) */
        return b + below8(K + b, w);
    }
    uint32_t i = 0;
    for (uint32_t s = 1u << lg >> 1; s; s >>= 1) i += keep_if(K[i + s - 1] < w, s);
    return i;
}

/* The search value of a range cluster: keys of op < <= are -x (xpf_key). */
static inline double key_value(const xpf_cluster *cl, double x) { return x * cl->sgn; }

/* The entries of range cluster cl (keys K) that w = key_value(x) makes true: a prefix. */
static inline uint32_t range_rank(const xpf_cluster *cl, const double *K, double w)
{
    uint32_t r = key_rank(K, cl->lg, w);
    if (__builtin_expect(cl->ninf != 0, 0) && w == w && r < cl->ninf) r = cl->ninf; /* v = -inf, x = -inf */
    return r;
}

static const char *slot_str(const wm_xpf_ctx *c, const slotv *v, uint32_t *len);

/* d[0..nw) |= row (row = (r1 | r2) & mk, r2 and mk may be NULL); nw a
 * multiple of XPF_QW: 512 bits a step, in 256-bit vectors (wider ones,
 * split by the compiler where the CPU has none, went through the stack),
 * one loop per case. Rows set match bits only, never decided ones: a
 * query they match stays "open" to the other paths, which may match it
 * again (idempotent; the count of undecided queries is a lower bound,
 * recounted before it reaches 0, so a second count is harmless), and one
 * destination instead of two halves the stores. */
typedef uint64_t xpf_v4 __attribute__((vector_size(32)));
/* Vectors stay locals (macros, not functions taking or returning them: a
 * 256-bit vector in a call changes the ABI where the CPU has no AVX, which
 * GCC warns about in the portable build). */
#define LD4(v, p) memcpy(&(v), (p), sizeof(v))
#define OR4(d, v)                                                                                                  \
    do {                                                                                                           \
        xpf_v4 t4_;                                                                                                \
        LD4(t4_, d);                                                                                               \
        t4_ |= (v);                                                                                                \
        memcpy((d), &t4_, sizeof t4_);                                                                             \
    } while (0)
static __attribute__((noinline)) void or_rows_masked(uint64_t *d, const uint64_t *r1, const uint64_t *r2, const uint64_t *mk,
                                                     uint32_t nw)
{
    for (uint32_t w = 0; w < nw; w += 4) {
        xpf_v4 b, m, x;
        LD4(b, r1 + w);
        LD4(m, mk + w);
        if (r2) {
            LD4(x, r2 + w);
            b |= x;
        }
        b &= m;
        OR4(d + w, b);
    }
}
static inline void or_rows(uint64_t *d, const uint64_t *r1, const uint64_t *r2, const uint64_t *mk, uint32_t nw)
{
    _Static_assert(XPF_QW == 8, "or_rows steps 8 words");
    const uint64_t *end = r1 + nw;
    xpf_v4 a, b, x, y;
    if (mk) /* a document with queries decided "no": rows would mark them, too */
        or_rows_masked(d, r1, r2, mk, nw);
    else if (!r2)
        for (; r1 < end; r1 += 8, d += 8) {
            LD4(a, r1), LD4(b, r1 + 4);
            OR4(d, a);
            OR4(d + 4, b);
        }
    else
        for (; r1 < end; r1 += 8, r2 += 8, d += 8) {
            LD4(a, r1), LD4(b, r1 + 4), LD4(x, r2), LD4(y, r2 + 4);
            a |= x, b |= y;
            OR4(d, a);
            OR4(d + 4, b);
        }
}

/* d |= the bits [a, b) & mk (mk may be NULL), a < b: the words between
 * the two ends are filled (a fast cluster of more than 63 entries, run_cluster). */
static void or_range(uint64_t *d, const uint64_t *mk, uint32_t a, uint32_t b)
{
    uint32_t w0 = a >> 6, w1 = (b - 1) >> 6;
    uint64_t x0 = ~0ull << (a & 63), x1 = ~0ull >> (~(b - 1) & 63);
    if (w0 == w1) x0 &= x1, x1 = x0;
    for (uint32_t w = w0 + 1; w < w1; w++) d[w] |= mk ? mk[w] : ~0ull;
    if (mk) x0 &= mk[w0], x1 &= mk[w1];
    d[w0] |= x0;
    d[w1] |= x1;
}

/* a[0..n) == b[0..n): names, units and states are short, and a call to
 * memcmp costs more than comparing them in two loads. */
static inline bool bytes_eq(const char *a, const char *b, uint32_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8), memcpy(&a1, a + n - 8, 8);
        memcpy(&b0, b, 8), memcpy(&b1, b + n - 8, 8);
        return !((a0 ^ b0) | (a1 ^ b1));
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, a1, b0, b1;
        memcpy(&a0, a, 4), memcpy(&a1, a + n - 4, 4);
        memcpy(&b0, b, 4), memcpy(&b1, b + n - 4, 4);
        return !((a0 ^ b0) | (a1 ^ b1));
    }
    if (n < 4) /* first, middle and last byte: all of them */
        return !n || (a[0] == b[0] && a[n >> 1] == b[n >> 1] && a[n - 1] == b[n - 1]);
    return !memcmp(a, b, n);
}

/* Given equal hashes (wm_xpf_str_hash) and equal lengths n: are a[0..n)
 * and b[0..n) equal? Up to WM_XPF_EXACT bytes the hash says so alone. */
static inline bool str_same(const char *a, const char *b, uint32_t n) { return n <= WM_XPF_EXACT || bytes_eq(a, b, n); }

/* The hash of v's string s[0..n), computed once per value: the equality
 * triggers, the scan memo, string clusters and not() guards share it. */
static inline uint64_t slot_hash(slotv *v, const char *s, uint32_t n)
{
    if (!v->hashed) {
        v->h = wm_xpf_str_hash(s, n);
        v->hashed = true;
    }
    return v->h;
}

/* A fired string cluster: the entries whose literal equals the slot's
 * string, a run of its entries (sorted by hash, then literal). With rows
 * (xpf_cluster pm: no two literals of the cluster share a hash), the run's
 * first entry is found without a branch on the value and its row holds
 * the run's queries. */
static void run_str_cluster(wm_xpf_ctx *c, const xpf_cluster *cl, slotv *v)
{
    const wm_xpf *f = c->f;
    if (cl->tmask) { /* the value's probe named the literal it equals (xpf_strkey) */
        const xpf_strkey *t = c->ps->strk + cl->toff;
        uint32_t u = v->eqlit;
        for (uint32_t k = wm_xpf_lit_slot(u, cl->tmask); t[k].lit != XPF_NONE; k = (k + 1) & cl->tmask)
            if (t[k].lit == u) {
                or_rows(c->matched, f->pmask + (size_t)(cl->pm + t[k].r) * f->n_qw, NULL, c->any_no ? c->open : NULL, f->n_qw);
                lose(c, t[k].n);
                return;
            }
        return;
    }
    uint32_t n;
    const char *s = slot_str(c, v, &n);
    if (!s) return;
    uint64_t h = slot_hash(v, s, n);
    const xpf_centry *e = c->ps->centries + cl->off;
    if (cl->pm != XPF_NONE) {
        uint32_t lo = 0, len = cl->n; /* n >= 1; the first entry whose hash is not below h */
        while (len > 1) {
            uint32_t half = len / 2;
            lo += keep_if(e[lo + half - 1].h < h, half);
            len -= half;
        }
        lo += e[lo].h < h;
        if (lo == cl->n || e[lo].h != h) return;
        const xpf_lit *l = &f->lits[e[lo].lit];
        if (l->s_len != n || !str_same(f->strpool + l->s_off, s, n)) return;
        uint32_t end = lo + 1;
        while (end < cl->n && e[end].h == h) end++;
        or_rows(c->matched, f->pmask + (size_t)(cl->pm + lo) * f->n_qw, NULL, c->any_no ? c->open : NULL, f->n_qw);
        lose(c, end - lo);
        return;
    }
    uint32_t lo = 0, hi = cl->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (e[mid].h < h) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < cl->n && e[lo].h == h; lo++) {
        const xpf_lit *l = &f->lits[e[lo].lit];
        if (l->s_len == n && str_same(f->strpool + l->s_off, s, n)) match_query(c, e[lo].q);
    }
}

/* The value of numeric cluster slot `slot` (xpf_pstate nslots) as a
 * number for the element being collected: NaN when absent (start_element),
 * for a boolean or a string that is no number. */
static inline double slot_num(const wm_xpf_ctx *c, uint32_t slot) { return c->sv[slot].num; }

/* The entries of merged not() cluster cl that the value of its slot may
 * make true, [*a, *b): a range cluster's past its watermark (entries
 * before lo are decided), an = cluster's equal to it. False: nothing to do. */
static inline __attribute__((always_inline)) bool cluster_range(wm_xpf_ctx *c, const xpf_cluster *cl, uint32_t *a, uint32_t *b)
{
    double x = slot_num(c, cl->slot); /* a boolean's is NaN */
    if (x != x) return false;
    if (cl->op == WM_XP_EQ) {
        const xpf_centry *e = c->ps->centries + cl->off;
        *a = bound(e, 0, cl->n, x, false);
        *b = bound(e, *a, cl->n, x, true);
        return *a < *b;
    }
    cstate *st = &c->cs[cl->id];
    if (st->doc != c->doc) {
        st->doc = c->doc;
        st->lo = 0;
    }
    *a = st->lo;
    *b = range_rank(cl, c->ps->ckeys + cl->koff, key_value(cl, x));
    return *b > *a;
}

/* Matches entries [a, b) of cluster cl, whose entries before a are matched already. */
static inline void mark_entries(wm_xpf_ctx *c, const xpf_cluster *cl, uint32_t a, uint32_t b)
{
    const xpf_centry *e = c->ps->centries + cl->off;
    if (cl->qb != XPF_NONE) { /* a fast cluster of more than 63 entries: its bits [qb + a, qb + b) */
        or_range(c->matched, c->any_no ? c->open : NULL, cl->qb + a, cl->qb + b);
        lose(c, b - a);
        return;
    }
    if (cl->pm != XPF_NONE) {
        /* one row holds them and the ones before (the open ones) */
        const wm_xpf *f = c->f;
        or_rows(c->matched, f->pmask + (size_t)(cl->pm + b) * f->n_qw, NULL, c->any_no ? c->open : NULL, f->n_qw);
        lose(c, b - a);
        return;
    }
    bool sole = cl->sole && c->all_cand;
    if (!sole) {
        match_queries(c, &e[a].q, b - a, sizeof *e / sizeof(uint32_t));
        return;
    }
    /* entries past a sole cluster's watermark are undecided, and nothing
     * else reads the decided bit of its queries (they are in no posting, no
     * other cluster, no candidate list): the match bit alone */
    uint64_t *mat = c->matched;
    for (uint32_t i = a; i < b; i++) mat[e[i].q >> 6] |= 1ull << (e[i].q & 63);
    lose(c, b - a);
}

/* How many of the 64 keys K[0..64) of a cluster of at most 63 entries
 * (xpf_cluster lg 6: K[63] is NaN) are below w: the 8 block maxima K[-8..0)
 * (K[8j + 7]) give the block, its 8 keys the place in it. */
static inline __attribute__((always_inline)) uint32_t rank64(const double *K, double w)
{
    uint32_t b = below8(K - 8, w) * 8;
    return b + below8(K + b, w);
}

/* A fired fast cluster of at most 63 entries (xpf_run BITS; PAIR, ROWS:
 * run_pair, run_rows), the common case, inline in finish: its trigger is true, so its queries match
 * exactly where their own test on the cluster's slot holds, a prefix of its
 * entries, whose row (the prefix's queries) is OR-ed into mat (masked by
 * mk, see or_rows). The slot's number is NaN when absent, for a boolean or
 * a string that is no number, which makes every comparison false, as XPath
 * wants: rank 0, an empty row. No state per document and no branch on the
 * value: a prefix matched at an earlier element of the document is OR-ed
 * again (idempotent) and counted again (the count of undecided queries
 * stays a lower bound), which costs less than a test whether the value
 * makes anything new (as good as random: a mispredict at about every other
 * cluster) and the put-back of the clusters a document moved. Returns the
 * rank (for lose()). */
static inline __attribute__((always_inline)) uint32_t run_bits(const slotv *sv, const xpf_run *r, uint64_t *mat, const uint64_t *mk)
{
    uint32_t k = rank64(r->K, sv[r->slot].num * r->sgn);
    /* the bits [64 qw + qs, + k), k <= 63: a mask of k bits across two words, no branch on k */
#if defined(__BMI2__)
    uint64_t m = _bzhi_u64(~0ull, k);
#else
    uint64_t m = ~0ull >> 1 >> (63 - k);
#endif
    size_t qw = r->qw;
    uint64_t lo = m << r->qs, hi = m >> 1 >> (63 - r->qs);
    if (mk) lo &= mk[qw], hi &= mk[qw + 1];
    mat[qw] |= lo;
    mat[qw + 1] |= hi;
    return k;
}

/* run_bits for a cluster whose queries' bits lie in two words (xpf_run
 * PAIR): its row of rank k is those two words, read. */
static inline __attribute__((always_inline)) uint32_t run_pair(const slotv *sv, const xpf_run *r, uint64_t *mat, const uint64_t *mk)
{
    uint32_t k = rank64(r->K, sv[r->slot].num * r->sgn);
    size_t qw = r->qw;
    uint64_t lo = r->rows[2 * k], hi = r->rows[2 * k + 1];
    if (mk) lo &= mk[qw], hi &= mk[qw + 1];
    mat[qw] |= lo;
    mat[qw + 1] |= hi;
    return k;
}

/* run_bits for a cluster with rows (xpf_run ROWS). */
static inline __attribute__((always_inline)) uint32_t run_rows(const slotv *sv, const xpf_run *r, uint64_t *mat, const uint64_t *mk,
                                                               uint32_t nw)
{
    uint32_t k = rank64(r->K, sv[r->slot].num * r->sgn);
    or_rows(mat, r->rows + (size_t)k * nw, NULL, mk, nw);
    return k;
}

/* A fired cluster other than run_bits', run_pair's and run_rows': a string cluster, an =
 * cluster, a range cluster without rows or with x = -inf entries, a fast
 * one of more than 63 entries. */
static __attribute__((noinline)) void run_cluster(wm_xpf_ctx *c, const xpf_cluster *cl)
{
    slotv *v = &c->sv[cl->slot];
    if (v->epoch != c->serial) return; /* absent: every test false */
    if (cl->str) {
        run_str_cluster(c, cl, v);
        return;
    }
    double x = v->num;
    uint32_t a, b;
    if (cl->op == WM_XP_EQ) {
        if (x != x) return;
        const xpf_centry *e = c->ps->centries + cl->off;
        a = bound(e, 0, cl->n, x, false);
        b = bound(e, a, cl->n, x, true);
        if (a == b) return;
        /* rows are built for range clusters only */
        match_queries(c, &e[a].q, b - a, sizeof *e / sizeof(uint32_t));
        return;
    }
    uint64_t s = c->wm[cl->id];
    a = (uint32_t)(s >> 32) == c->doc ? (uint32_t)s : 0;
    b = range_rank(cl, c->ps->ckeys + cl->koff, key_value(cl, x));
    if (b <= a) return;
    c->wm[cl->id] = (uint64_t)c->doc << 32 | b;
    mark_entries(c, cl, a, b);
}

static inline void push_pending(wm_xpf_ctx *c, const xpf_cluster *cl, cstate *st)
{
    if (st->pend) return;
    st->pend = true;
    c->pend[c->n_pend++] = (pending){ .ps = c->ps, .cl = cl };
    c->pend_n += cl->n;
}

/* A merged cluster with rows (xpf_cluster pm) at an element whose S names
 * the literal u (XPF_NONE: none of them) and whose S' holds y (not NaN),
 * searched as key_value(y) (larger: more entries true, for every op).
 * Over a document, an entry (L, x) of op > holds iff some element has an S
 * other than L and a y above x. So the largest y so far (m1, at an element
 * naming u1) and the largest y at an element naming another literal than
 * u1 (m2) decide every entry: x < m2, or x < m1 and L != u1. Both only
 * grow: the entries they make true are the r2 smallest (cstate hi) and, of
 * the r1 smallest (lo), those whose L is not u1: two rows, OR-ed in. An
 * element that moves neither costs two comparisons. Ops < <= alike with
 * the smallest y. */
static inline __attribute__((always_inline)) void run_neg_rows(wm_xpf_ctx *c, const xpf_negrun *r, uint32_t u, double y)
{
    cstate *st = &c->cs[r->id];
    /* m1, m2 are key values, so "y makes more entries true than m" is one
     * test, !(y <= m), for every op (and true while m is NaN: no value yet) */
    if (!(y <= st->m1)) {
        if (st->m1 != st->m1) c->ntouch[c->n_ntouch++] = r->id; /* put back when the next document starts */
        if (u != st->u1) { /* the largest so far is now the largest at another literal */
            st->m2 = st->m1;
            st->u1 = u;
        }
        st->m1 = y;
    } else if (u != st->u1 && !(y <= st->m2))
        st->m2 = y;
    else
        return;
    push_pending(c, &c->ps->negcl[r->cl], st);
}

/* The rows of a merged cluster that its (m1, u1, m2) make true (run_neg_rows). */
static void resolve_neg(wm_xpf_ctx *c, const xpf_pstate *ps, const xpf_cluster *cl, cstate *st)
{
    const double *K = ps->ckeys + cl->koff;
    /* NaN (no value yet): none */
    uint32_t n = cl->n, r1 = range_rank(cl, K, st->m1), r2 = range_rank(cl, K, st->m2), j = 0;
    if (r1 == st->lo && r2 == st->hi) return;
    const uint32_t *ul = ps->neglits + cl->ul_off;
    while (j < cl->n_ul && ul[j] != st->u1) j++;
    j = j < cl->n_ul ? j + 1 : 0; /* block 0: every entry (u1 is none of the L) */
    const wm_xpf *f = c->f;
    const uint64_t *ra = f->pmask + ((size_t)cl->pm + r2) * f->n_qw;
    const uint64_t *rb = f->pmask + ((size_t)cl->pm + (size_t)j * (n + 1) + r1) * f->n_qw;
    or_rows(c->matched, ra, rb, c->any_no ? c->open : NULL, f->n_qw);
    lose(c, r1 - st->hi); /* at most the entries of rank [old r2, r1) */
    st->lo = r1;
    st->hi = r2;
}

/* A merged cluster of not(S = 'L') guards (xpf_neggroup) without rows
 * (with rows: run_neg_rows): the entries whose test holds, except those
 * whose L is `excl` (S's value; XPF_NONE: none). A skipped entry holds the
 * watermark back until a later element decides it. Out of line: the common
 * path, with rows, stays lean in run_neg_groups. */
static __attribute__((noinline)) void run_neg_cluster(wm_xpf_ctx *c, const xpf_cluster *cl, uint32_t excl)
{
    uint32_t a, b;
    if (!cluster_range(c, cl, &a, &b)) return;
    const xpf_centry *e = c->ps->centries + cl->off;
    uint64_t *dec = c->decided, *mat = c->matched;
    uint32_t nd = 0, first = XPF_NONE;
    for (uint32_t i = a; i < b; i++) {
        uint32_t q = e[i].q;
        uint64_t bit = 1ull << (q & 63);
        if (dec[q >> 6] & bit) continue;
        if (e[i].lit == excl) {
            if (first == XPF_NONE) first = i;
            continue;
        }
        dec[q >> 6] |= bit;
        mat[q >> 6] |= bit;
        nd++;
    }
    lose(c, nd);
    if (cl->op != WM_XP_EQ) c->cs[cl->id].lo = first != XPF_NONE ? first : b;
}

/* The literal of a merged group's slot S that S's value names (XPF_NONE:
 * none, or absent): the value's probe of the slot's equality table, which
 * holds the group's literals, found it. */
static inline uint32_t neg_excl(const wm_xpf_ctx *c, uint32_t slot)
{
    const slotv *v = &c->sv[slot];
    return v->epoch == c->serial ? v->eqlit : XPF_NONE;
}

/* The merged not(S = 'L') guards of the element's state: S's value names
 * the one L whose entries are skipped. */
static void run_neg_groups(wm_xpf_ctx *c)
{
    const xpf_pstate *ps = c->ps;
    for (uint32_t i = 0; i < ps->n_negruns; i++) { /* negruns is NULL when there are none */
        const xpf_negrun *r = &ps->negruns[i];
        double y = slot_num(c, r->slot) * r->sgn;
        if (y == y) run_neg_rows(c, r, neg_excl(c, r->gslot), y); /* absent, NaN: all false */
    }
    if (__builtin_expect(ps->neg_slow, 0))
        for (uint32_t i = 0; i < ps->n_neggroups; i++) {
            const xpf_neggroup *g = &ps->neggroups[i];
            for (const xpf_cluster *cl = ps->negcl + g->coff, *end = cl + g->cn; cl < end; cl++)
                if (cl->pm == XPF_NONE) run_neg_cluster(c, cl, neg_excl(c, g->slot));
        }
}

/* Marks what the waiting clusters' extremes make true. They wait while the
 * queries they might decide are fewer than the undecided ones (a lower
 * bound), so the early stop, which needs every query decided, is never
 * later than without the wait; at the end of the document they are done
 * anyway. */
static __attribute__((noinline)) void flush_pending(wm_xpf_ctx *c)
{
    for (uint32_t i = 0; i < c->n_pend; i++) {
        const pending *p = &c->pend[i];
        cstate *st = &c->cs[p->cl->id];
        st->pend = false;
        resolve_neg(c, p->ps, p->cl, st);
    }
    c->n_pend = 0;
    c->pend_n = 0;
}

static void set_lit(wm_xpf_ctx *c, uint32_t lit, bool v)
{
    c->lit_epoch[lit] = c->serial;
    c->lit_val[lit] = v;
}

/* Pattern literal id holds for the value being collected. */
static void pattern_true(wm_xpf_ctx *c, uint32_t id)
{
    set_lit(c, id, true);
    /* a trigger of this state? */
    const xpf_pstate *ps = c->ps;
    if (!ps->pat_ix) return;
    for (uint32_t k = wm_xpf_lit_slot(id, ps->pat_mask); ps->pat_ix[k]; k = (k + 1) & ps->pat_mask)
        if (ps->pat[ps->pat_ix[k] - 1].lit == id) {
            add_post(c, &ps->pat[ps->pat_ix[k] - 1].post);
            return;
        }
}

/* Pattern literal id matched the value of slot c->scan_slot. */
static void pattern_hit(wm_xpf_ctx *c, unsigned id)
{
    if (c->f->lits[id].slot == c->scan_slot) pattern_true(c, id);
}

/* The starts-with() literals of pslot s that text[0..len) starts with:
 * one hash and probe per distinct literal length. */
static void prefix_scan(wm_xpf_ctx *c, const xpf_pslot *s, const char *text, uint32_t len)
{
    const wm_xpf *f = c->f;
    for (uint32_t i = 0; i < s->n_plens && s->plens[i] <= len; i++) {
        uint32_t n = s->plens[i];
        uint64_t h = wm_xpf_str_hash(text, n);
        for (uint32_t k = (uint32_t)h & s->pre_mask; s->pre[k].lit != XPF_NONE; k = (k + 1) & s->pre_mask) {
            const xpf_lit *l = &f->lits[s->pre[k].lit];
            if (s->pre[k].h == h && l->s_len == n && str_same(f->strpool + l->s_off, text, n)) pattern_true(c, s->pre[k].lit);
        }
    }
}

static int scan_cb(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
    wm_xpf_ctx *c = ctx;
    scan_memo *m = c->rec;
    if (m && m->n_ids <= SCAN_MEMO_IDS) {
        uint32_t i = 0;
        while (i < m->n_ids && m->ids[i] != id) i++;
        if (i == m->n_ids) {
            if (m->n_ids < SCAN_MEMO_IDS) m->ids[i] = id;
            m->n_ids++;
        }
    }
    pattern_hit(c, id);
    (void)from, (void)to, (void)flags;
    return 0;
}

/* Every pattern of the database on text[0..len) (slot c->scan_slot): from
 * the memo when this text was scanned before, else by Hyperscan (and
 * memoised). Replaying the ids is the same as the callbacks: pattern_hit is
 * idempotent and the database is SINGLEMATCH. */
static void scan_value(wm_xpf_ctx *c, slotv *v, const char *text, uint32_t len)
{
    const wm_xpf *f = c->f;
    scan_memo *m = NULL;
    if (len && len <= SCAN_MEMO_TEXT) {
        uint64_t h = slot_hash(v, text, len);
        scan_memo *set = &c->memo[(h & (SCAN_MEMO / 2 - 1)) * 2];
        c->scans++;
        for (int w = 0; w < 2; w++) {
            m = &set[w];
            if (m->len == len && m->h == h && str_same(m->text, text, len) && m->n_ids <= SCAN_MEMO_IDS) {
                m->used = c->scans;
                for (uint32_t i = 0; i < m->n_ids; i++) pattern_hit(c, m->ids[i]);
                return;
            }
        }
        m = set[0].used <= set[1].used ? &set[0] : &set[1];
        m->used = c->scans;
        m->h = h;
        m->len = (uint8_t)len;
        m->n_ids = 0;
        memcpy(m->text, text, len);
    }
    c->rec = m;
    if (hs_scan(f->hs_db, text, len, 0, c->scratch, scan_cb, c) != HS_SUCCESS && m) m->len = 0;
    c->rec = NULL;
}

/* Strings of a slot value as XPath sees them (booleans: canonical text). */
static const char *slot_str(const wm_xpf_ctx *c, const slotv *v, uint32_t *len)
{
    if (v->kind == XPF_V_BOOL) {
        *len = v->b ? 4 : 5;
        return v->b ? "true" : "false";
    }
    if (v->kind == XPF_V_STR) {
        *len = v->len;
        return v->sp;
    }
    *len = 0;
    return NULL; /* numbers: string tests are refused at compile time */
}

/* The number of a typed numeric value; false if val is not a number. */
static inline bool typed_number(const wm_exi_value *val, double *x)
{
    switch (val->kind) {
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: *x = (double)val->i; return true;
    case WM_EXI_DT_FLOAT: *x = wm_xpf_float(val->mantissa, val->exponent); return true;
    case WM_EXI_DT_DECIMAL: *x = wm_xpf_str_number(val->text, val->len); return true;
    default: return false;
    }
}

/* dst[0..n) = src[0..n): names, units and states are short, and a call to
 * memcpy costs more than two overlapping loads and stores. */
static inline __attribute__((always_inline)) void copy_short(char *dst, const char *src, uint32_t n)
{
    uint64_t a, b;
    uint32_t x, y;
    if (n >= 8 && n <= 16) {
        memcpy(&a, src, 8), memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8), memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(&x, src, 4), memcpy(&y, src + n - 4, 4);
        memcpy(dst, &x, 4), memcpy(dst + n - 4, &y, 4);
    } else if (n < 4) { /* first, middle and last byte: all of them */
        if (n) dst[0] = src[0], dst[n >> 1] = src[n >> 1], dst[n - 1] = src[n - 1];
    } else
        memcpy(dst, src, n);
}

static inline __attribute__((always_inline)) void value_triggers(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v, const char *text, uint32_t tlen);

/* v's string is text[0..tlen): copied (the decoder's view ends with the
 * event). False when sbuf is full (c->failed). */
static inline __attribute__((always_inline)) bool keep_str(wm_xpf_ctx *c, slotv *v, const char *text, uint32_t tlen)
{
    if (c->sbuf_len + tlen > c->sbuf_cap) {
        c->failed = true;
        c->undecided = 0; /* the next element event's stop_now looks (one test there for both) */
        return false;
    }
    char *d = c->sbuf + c->sbuf_len;
    copy_short(d, text, tlen);
    v->sp = d;
    c->sbuf_len += tlen;
    return true;
}

/* A number (v->num) where the compiler typed the slot a string: a value
 * typed by an xsi:type the schema could not foresee (an element no
 * declaration covers, below a lax wildcard; a type not derived from the
 * declared one in a non-strict stream). String tests read its canonical
 * form (what `wmctl exi decode` writes: EXI carries the value, not the
 * text), number tests the typed value. Out of line: declared slots never
 * come here. */
static __attribute__((noinline)) void number_as_string(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v, const wm_exi_value *val)
{
    char buf[WM_EXI_FLOAT_TEXT_MAX];
    const char *text = val->text;
    uint32_t tlen = val->len;
    if (!text) {
        text = buf;
        tlen = val->kind == WM_EXI_DT_FLOAT ? wm_exi_float_text(val->mantissa, val->exponent, buf) : wm_exi_int_text(val->i, buf);
    }
    v->kind = XPF_V_STR;
    v->len = tlen;
    if (s->need_str && !s->eq_mask && !keep_str(c, v, text, tlen)) return;
    if (s->any_trig) value_triggers(c, s, v, text, tlen);
}

/* One value of slot s for the element being collected: stored typed (a
 * string copied where a test reads it), then its triggers. The common
 * number no trigger reads costs a conversion and a store. */
static inline __attribute__((always_inline)) void put_value(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val)
{
    slotv *v = &c->sv[s->slot];
    /* a second value of the slot (an attribute twice, which a non-strict or
     * schema-less stream can carry and XML cannot) is ignored: each trigger
     * then fires at most once per element, which bounds c->fired */
    if (v->epoch == c->serial) return;
    v->epoch = c->serial;
    v->hashed = false;
    v->eqlit = XPF_NONE;
    const char *text = val->text;
    uint32_t tlen = val->len;
    if (typed_number(val, &v->num)) {
        v->kind = XPF_V_NUM;
        if (__builtin_expect(s->need_str | s->scan | (s->eq_mask != 0) | (s->n_plens != 0), 0)) {
            number_as_string(c, s, v, val);
            return;
        }
    } else if (val->kind == WM_EXI_DT_BOOLEAN) {
        v->kind = XPF_V_BOOL;
        v->b = val->b;
        v->num = NAN;
        text = val->b ? "true" : "false";
        tlen = val->b ? 4 : 5;
    } else {
        v->kind = XPF_V_STR;
        if (!text) text = "", tlen = 0;
        if (s->need_num) v->num = wm_xpf_str_number(text, tlen);
        if (s->need_str) {
            v->len = tlen;
            /* with an equality table, value_triggers keeps the literal it equals instead of a copy */
            if (!s->eq_mask && !keep_str(c, v, text, tlen)) return;
        }
    }
    if (s->any_trig) value_triggers(c, s, v, text, tlen); /* else read by predicates or clusters only */
}

/* The equality trigger of slot s (which has a table) that string value v,
 * text[0..tlen), equals: its literal set, its post added, v->eqlit named
 * (with eq_dup every equal literal, the first one returned); NULL: none. */
static inline __attribute__((always_inline)) const xpf_eqtrig *eq_probe(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v,
                                                                        const char *text, uint32_t tlen)
{
    const wm_xpf *f = c->f;
    const xpf_eqtrig *hit = NULL;
    uint64_t h = slot_hash(v, text, tlen);
    for (uint32_t k = (uint32_t)h & s->eq_mask; s->eq[k].lit != XPF_NONE; k = (k + 1) & s->eq_mask) {
        const xpf_eqtrig *e = &s->eq[k];
        if (e->h == h && e->s_len == tlen && str_same(f->strpool + e->s_off, text, tlen)) {
            if (!hit) hit = e, v->eqlit = e->lit;
            set_lit(c, e->lit, true);
            add_post(c, &e->post);
            if (!s->eq_dup) break;
        }
    }
    return hit;
}

static void other_triggers(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v, const char *text, uint32_t tlen,
                           const xpf_eqtrig *hit);

/* The patterns of a scanned slot that a value equal to equality literal
 * hit matches, known since compiling (hit->pat_n not XPF_NONE): no scan. */
static inline __attribute__((always_inline)) void replay_eq_patterns(wm_xpf_ctx *c, const xpf_eqtrig *hit)
{
    const uint32_t *ids = c->ps->eqpat + hit->pat_off;
    if (hit->pq_off == XPF_NONE)
        for (uint32_t i = 0; i < hit->pat_n; i++) pattern_true(c, ids[i]);
    else { /* their triggers' exact queries, in one list */
        for (uint32_t i = 0; i < hit->pat_n; i++) set_lit(c, ids[i], true);
        /* the first such value of a document decides every query of the list: later ones skip it */
        if (hit->pq_n && c->pq_doc[hit->pq_id] != c->doc) {
            c->pq_doc[hit->pq_id] = c->doc;
            match_queries(c, c->ps->qlist + hit->pq_off, hit->pq_n, 1);
        }
    }
}

/* A value equal to an equality literal whose patterns match exact queries
 * only, read by no predicate (xpf_eqtrig after ROW): their queries, one
 * row. The first such value of a document decides them; a later one ORs
 * the row again rather than branch on which it is (the row is idempotent;
 * the undecided count, a lower bound, loses them once). */
static inline __attribute__((always_inline)) void replay_row(wm_xpf_ctx *c, const xpf_eqtrig *hit)
{
    uint32_t *pd = &c->pq_doc[hit->pq_id];
    bool fresh = *pd != c->doc;
    *pd = c->doc;
    or_rows(c->matched, hit->pq_row, NULL, c->any_no ? c->open : NULL, c->n_qw);
    lose(c, keep_if(fresh, hit->pq_n));
}

/* The triggers of slot s that value v (text[0..tlen) unless a number) makes true. */
static inline __attribute__((always_inline)) void value_triggers(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v, const char *text, uint32_t tlen)
{
    const xpf_eqtrig *hit = NULL;
    if (s->eq_mask && v->kind != XPF_V_NUM) {
        hit = eq_probe(c, s, v, text, tlen);
        if (v->kind == XPF_V_STR && s->need_str) {
            if (hit) v->sp = c->f->strpool + hit->s_off; /* equal to it: no copy */
            else if (!keep_str(c, v, text, tlen)) return;
        }
        if (s->eq_only) return;
    }
    other_triggers(c, s, v, text, tlen, hit);
}

/* The triggers after the equality table's (value_triggers); hit: the
 * equality trigger the value met. Out of line: the common slots have none. */
static __attribute__((noinline)) void other_triggers(wm_xpf_ctx *c, const xpf_pslot *s, slotv *v, const char *text,
                                                     uint32_t tlen, const xpf_eqtrig *hit)
{
    const wm_xpf *f = c->f;
    bool is_str = v->kind != XPF_V_NUM;
    double x = v->kind == XPF_V_BOOL ? NAN : v->num;
    if (s->num_trig && (v->kind != XPF_V_STR || s->need_num)) {
        const xpf_numtrig *a;
        uint32_t n;
        if ((n = s->n_num[WM_XP_GT])) /* x > lit: the lits below x */
            for (a = s->num[WM_XP_GT]; n && a->x < x; a++, n--) add_post(c, &a->post);
        if ((n = s->n_num[WM_XP_GE]))
            for (a = s->num[WM_XP_GE]; n && a->x <= x; a++, n--) add_post(c, &a->post);
        if ((n = s->n_num[WM_XP_LT]))
            for (a = s->num[WM_XP_LT] + n - 1; n && a->x > x; a--, n--) add_post(c, &a->post);
        if ((n = s->n_num[WM_XP_LE]))
            for (a = s->num[WM_XP_LE] + n - 1; n && a->x >= x; a--, n--) add_post(c, &a->post);
        if ((n = s->n_num[WM_XP_EQ]) && x == x) {
            uint32_t lo = 0, hi = n;
            a = s->num[WM_XP_EQ];
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (a[mid].x < x) lo = mid + 1;
                else hi = mid;
            }
            for (; lo < n && a[lo].x == x; lo++) add_post(c, &a[lo].post);
        }
    }
    for (uint32_t i = 0; i < s->n_num[WM_XP_NE]; i++) {
        const xpf_numtrig *a = &s->num[WM_XP_NE][i];
        const xpf_lit *l = &f->lits[a->lit];
        bool t;
        if (l->kind == XPF_L_NUM) t = x != l->x;
        else t = is_str && (l->s_len != tlen || memcmp(f->strpool + l->s_off, text, tlen));
        if (t) set_lit(c, a->lit, true), add_post(c, &a->post);
    }
    if (s->n_plens && is_str) prefix_scan(c, s, text, tlen);
    if (s->scan && is_str && f->hs_db) {
        if (hit && hit->pat_n != XPF_NONE) /* the literal it equals was scanned when compiling */
            replay_eq_patterns(c, hit);
        else {
            c->scan_slot = s->slot;
            scan_value(c, v, text, tlen);
        }
    }
    if (s->exists.off != XPF_NONE) add_post(c, &s->exists);
}

static bool eval_lit(wm_xpf_ctx *c, uint32_t id)
{
    if (c->lit_epoch[id] == c->serial) return c->lit_val[id];
    const wm_xpf *f = c->f;
    const xpf_lit *l = &f->lits[id];
    const slotv *v = &c->sv[l->slot];
    bool r;
    if (v->epoch != c->serial) r = l->absent;
    else
        switch (l->kind) {
        case XPF_L_NUM: r = wm_xpf_cmp(l->op, v->kind == XPF_V_BOOL ? NAN : v->num, l->x); break;
        case XPF_L_STREQ: case XPF_L_STRNE: {
            uint32_t n;
            const char *s = slot_str(c, v, &n);
            bool eq = s && n == l->s_len && !memcmp(s, f->strpool + l->s_off, n);
            r = s && (l->kind == XPF_L_STREQ ? eq : !eq);
            break;
        }
        case XPF_L_PAT: r = false; break; /* the scan marked the matching ones */
        default: r = true; break;
        }
    set_lit(c, id, r);
    return r;
}

static bool eval_pred(wm_xpf_ctx *c, uint32_t p)
{
    const xpf_pnode *n = &c->f->pnodes[p];
    switch (n->kind) {
    case XPF_P_LIT: return eval_lit(c, n->a);
    case XPF_P_AND: return eval_pred(c, n->a) && eval_pred(c, n->b);
    case XPF_P_OR: return eval_pred(c, n->a) || eval_pred(c, n->b);
    case XPF_P_NOT: return !eval_pred(c, n->a);
    case XPF_P_TRUE: return true;
    default: return false;
    }
}

/* The guards of the element's state that are not merged (xpf_guard):
 * not(S = 'lit') ones by one hash of S's value, the others evaluated; a
 * guard that holds fires its post. Out of line: most states have none. */
static __attribute__((noinline)) void run_guards(wm_xpf_ctx *c)
{
    const xpf_pstate *ps = c->ps;
    for (uint32_t i = 0; i < ps->n_neg;) {
        /* not(S = 'lit') guards of one slot: true unless S's string is lit */
        uint32_t slot = ps->neg[i].slot, n = 0;
        slotv *v = &c->sv[slot];
        const char *s = v->epoch == c->serial ? slot_str(c, v, &n) : NULL;
        uint64_t h = s ? slot_hash(v, s, n) : 0;
        for (; i < ps->n_neg && ps->neg[i].slot == slot; i++) {
            const xpf_negguard *g = &ps->neg[i];
            const xpf_lit *l = &c->f->lits[g->lit];
            bool t = v->epoch != c->serial ? !l->absent
                   : !s || g->h != h || l->s_len != n || !str_same(c->f->strpool + l->s_off, s, n);
            if (t) add_post(c, &ps->guards[g->guard].post);
        }
    }
    for (uint32_t i = 0; i < ps->n_plain; i++) {
        const xpf_guard *g = &ps->guards[ps->plain[i]];
        if (eval_pred(c, g->pred)) add_post(c, &g->post);
    }
}

/* The element's candidate queries and its state's always-evaluated ones,
 * by their predicates. Out of line: clusters decide the common queries. */
static __attribute__((noinline)) void run_candidates(wm_xpf_ctx *c)
{
    const xpf_pstate *ps = c->ps;
    for (uint32_t i = 0; i < c->n_cand; i++) {
        uint32_t q = c->cand[i];
        if (!is_decided(c, q) && eval_pred(c, c->f->qs[q].pred)) match_query(c, q);
    }
    for (uint32_t i = 0; i < ps->n_always; i++) {
        uint32_t q = ps->always[i];
        if (!is_decided(c, q) && eval_pred(c, c->f->qs[q].pred)) match_query(c, q);
    }
}

/* The element's values are complete: decide its candidate queries. */
static void finish(wm_xpf_ctx *c)
{
    c->collecting = false;
    const xpf_pstate *ps = c->ps;
    if (__builtin_expect(ps->n_neg | ps->n_plain, 0)) run_guards(c);
    if (ps->n_negruns | ps->neg_slow) run_neg_groups(c);
    /* the fired posts' runs: the bases stay in registers (the stores below could alias the context) */
    const slotv *sv = c->sv;
    const xpf_run *runs = ps->runs;
    uint64_t *mat = c->matched;
    const uint64_t *mk = c->any_no ? c->open : NULL;
    uint32_t nw = c->n_qw, lost = 0;
    const xpf_post *const *fp = c->fired, *const *fe = fp + c->n_fired;
    if (fp < fe)
        /* one loop over the fired posts' runs, each post's closed by an END */
        for (const xpf_run *r = runs + (*fp)->roff;; r++) {
            uint8_t kind = r->kind;
            /* END second: every post has one, more often than PAIR or ROWS (-0.07 k per pack) */
            if (__builtin_expect(kind == XPF_RUN_BITS, 1)) lost += run_bits(sv, r, mat, mk);
            else if (kind == XPF_RUN_END) {
                if (++fp == fe) break;
                r = runs + (*fp)->roff - 1;
            } else if (kind == XPF_RUN_PAIR) lost += run_pair(sv, r, mat, mk);
            else if (kind == XPF_RUN_ROWS) lost += run_rows(sv, r, mat, mk, nw);
            else
                run_cluster(c, &ps->clusters[r->cl]);
        }
    lose(c, lost);
    if (__builtin_expect(c->n_cand | ps->n_always, 0)) run_candidates(c);
    if (c->n_pend && c->undecided <= (int64_t)c->pend_n) flush_pending(c);
}

/* The element serial wrapped: clear the epochs (once every 4G elements). */
static __attribute__((noinline, cold)) void serial_wrapped(wm_xpf_ctx *c)
{
    memset(c->sv, 0, (c->f->n_slots ? c->f->n_slots : 1) * sizeof *c->sv);
    memset(c->lit_epoch, 0, (c->f->n_lits ? c->f->n_lits : 1) * sizeof *c->lit_epoch);
    memset(c->cand_epoch, 0, (c->f->n_q ? c->f->n_q : 1) * sizeof *c->cand_epoch);
    c->serial = 1;
    c->t_serial = 0;
}

/* Inline: a call in start_element spilled the loop's registers around it. */
static inline void next_serial(wm_xpf_ctx *c)
{
    if (__builtin_expect(++c->serial == 0, 0)) serial_wrapped(c);
}

/* The queries without predicates that accept at path state d (out of
 * line: start_element keeps few registers). */
static __attribute__((noinline)) void match_acc(wm_xpf_ctx *c, const xpf_dstate *d)
{
    match_queries(c, c->f->acc + d->acc_off, d->n_acc, 1);
}

static void start_busy(wm_xpf_ctx *c);
static void end_busy(wm_xpf_ctx *c);

/* A start element: its path state, and its predicate state's collection
 * begun. Inline: in the filter's loop (xpf_strict_loop) it is the SE
 * handler's body (-0.14 k instructions per pack at 1,000 queries against
 * a call; callgrind, perf/bench_exi_filter.c). */
static inline __attribute__((always_inline)) void start_element(wm_xpf_ctx *c, const wm_exi_event *ev)
{
    const wm_xpf *f = c->f;
    if (__builtin_expect(c->busy != 0, 0)) start_busy(c); /* out of line: in a pack of leaf records an element is rarely open here */
    uint32_t from = c->sp ? c->stack[c->sp - 1].dstate : 1;
    uint32_t to = 0;
    if (from) {
        uint32_t sym = ev->lid < c->n_lids && ev->uri_id < c->n_uris ? f->sym_of_lid[ev->lid]
                     : wm_xpf_symbol(f, ev->uri_id, ev->lid, &ev->uri, &ev->local);
        to = f->trans[(size_t)from * f->n_syms + sym];
    }
    if (c->sp <= c->max_depth) c->stack[c->sp++].dstate = to;
    const xpf_dstate *d = &f->dstates[to];
    if (d->n_acc) match_acc(c, d);
    if (d->pstate != XPF_NONE) {
        c->collecting = true;
        c->ps = &f->pstates[d->pstate];
        next_serial(c);
        c->n_cand = 0;
        c->n_fired = 0;
        c->sbuf_len = 0;
        slotv *sv = c->sv;
        const uint32_t *ns = c->ps->nslots; /* NULL when none: indexed, no pointer arithmetic on it */
        for (uint32_t i = 0, n = c->ps->n_nslots; i < n; i++) sv[ns[i]].num = NAN;
    }
}

/* The slot of an attribute whose name is not in the grammar's tables. */
static __attribute__((noinline)) uint32_t slot_by_name(const wm_xpf *f, const wm_exi_event *ev)
{
    for (uint32_t i = 0; i < f->n_slots; i++) {
        const xpf_slot *s = &f->slots[i];
        if (!s->is_text && wm_xpf_sv_eq(s->uri, &ev->uri) && wm_xpf_sv_eq(s->local, &ev->local)) return i;
    }
    return XPF_NONE;
}

/* Decoding stops here: every query is decided (without whole-stream
 * validation), or a value did not fit. */
static inline int stop_now(wm_xpf_ctx *c)
{
    if (__builtin_expect(c->undecided > 0, 1)) return 0; /* a failure sets it to 0 (keep_str) */
    return c->failed || (!c->whole_stream && none_undecided(c));
}

/* The handlers of an attribute's value by its slot's kind (xpf_pslot
 * put), for the filter's strict loop and attribute(): each takes any value
 * kind its fast path does not serve through the general one. None answers
 * whether to stop: that is asked at the next element event (stop_now). */
static __attribute__((noinline)) void put_generic(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val)
{
    put_value(c, s, val);
}

/* No trigger reads the slot: a number is stored.
 * kind: val->kind, a constant in the filter's loop (one handler per kind). */
static inline __attribute__((always_inline)) void put_num(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val,
                                                         uint8_t kind)
{
    double x;
    switch (kind) {
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: x = (double)val->i; break;
    case WM_EXI_DT_FLOAT: x = wm_xpf_float(val->mantissa, val->exponent); break;
    default: put_generic(c, s, val); return;
    }
    slotv *v = &c->sv[s->slot];
    if (v->epoch == c->serial) return; /* a second value: ignored (put_value) */
    /* hashed and eqlit are left as they were: a number is hashed by no one (slot_str gives no
     * string), and eqlit is read only of slots with an equality table, which this one has not */
    v->epoch = c->serial;
    v->kind = XPF_V_NUM;
    v->num = x;
}

/* A boolean of a slot with an equality table (@vb = 'true'): its text is
 * 'true' or 'false', whose entries the compiler found (xpf_pslot bool_eq),
 * so there is neither hash nor probe (the general handler's chain of kind
 * tests left out). Like put_str_eq, the literal's memo is left unset. */
static __attribute__((noinline)) void put_bool_eq(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val)
{
    slotv *v = &c->sv[s->slot];
    if (v->epoch == c->serial) return;
    bool b = val->b;
    const xpf_eqtrig *hit = s->bool_eq[b];
    v->epoch = c->serial;
    v->kind = XPF_V_BOOL;
    v->b = b;
    v->num = NAN;
    v->h = b ? wm_xpf_str_hash("true", 4) : wm_xpf_str_hash("false", 5); /* folded when compiling */
    v->hashed = true;
    v->eqlit = hit ? hit->lit : XPF_NONE;
    if (hit) add_post(c, &hit->post);
    if (!s->eq_only) other_triggers(c, s, v, b ? "true" : "false", b ? 4 : 5, hit);
}

/* A string of a slot whose only trigger is the pattern scan (contains(@vs,
 * 'x'), matches()), no number read: stored where a test reads it, then
 * scanned (put_value and other_triggers without their other cases). */
static __attribute__((noinline)) void put_str_scan(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val)
{
    slotv *v = &c->sv[s->slot];
    if (v->epoch == c->serial) return;
    v->epoch = c->serial;
    v->hashed = false;
    v->eqlit = XPF_NONE;
    v->kind = XPF_V_STR;
    const char *text = val->text ? val->text : "";
    uint32_t tlen = val->text ? val->len : 0;
    v->len = tlen;
    if (s->need_str && !keep_str(c, v, text, tlen)) return;
    c->scan_slot = s->slot;
    scan_value(c, v, text, tlen);
}

/* The entry of slot s's equality table (which has one, without duplicate
 * strings) that text[0..tlen), of hash h, equals; NULL: none. A lookup
 * only: what a hit does is its caller's. */
static inline __attribute__((always_inline)) const xpf_eqtrig *eq_find(const xpf_pslot *s, uint64_t h, const char *text,
                                                                       uint32_t tlen)
{
    const xpf_eqtrig *eq = s->eq;
    uint32_t mask = s->eq_mask;
    for (uint32_t k = (uint32_t)h & mask; eq[k].lit != XPF_NONE; k = (k + 1) & mask)
        if (eq[k].h == h && eq[k].s_len == tlen && str_same(eq[k].sp, text, tlen)) return &eq[k];
    return NULL;
}

/* A string probed in the slot's equality table (put_value and
 * value_triggers, without their tests for other kinds and triggers). A hit
 * names its literal (eqlit), keeps the literal as the value's string and
 * adds the literal's post; what else the slot's triggers need, the entry
 * says (xpf_eqtrig after). The literal's memo (set_lit) is left unset: a
 * predicate that reads the literal computes it from the kept string. */
static inline __attribute__((always_inline)) void put_str_eq(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val,
                                                             uint8_t kind)
{
    if (kind == WM_EXI_DT_BOOLEAN) {
        put_bool_eq(c, s, val);
        return;
    }
    if (kind != WM_EXI_DT_STRING) {
        put_generic(c, s, val);
        return;
    }
    slotv *v = &c->sv[s->slot];
    if (v->epoch == c->serial) return;
    const char *text = val->text ? val->text : "";
    uint32_t tlen = val->text ? val->len : 0;
    /* the hash first: fewer values live across it */
    uint64_t h = wm_xpf_str_hash(text, tlen);
    const xpf_eqtrig *hit = eq_find(s, h, text, tlen);
    v->h = h;
    v->hashed = true;
    v->epoch = c->serial;
    v->kind = XPF_V_STR;
    v->len = tlen;
    if (__builtin_expect(hit != NULL, 1)) {
        v->eqlit = hit->lit;
        v->sp = hit->sp; /* equal to it: no copy */
        add_post(c, &hit->post);
        if (hit->after == XPF_EQ_DONE) return;
        /* a name tested by patterns too: the literal's patterns are replayed (other_triggers' scan) */
        if (hit->after == XPF_EQ_ROW) replay_row(c, hit);
        else if (hit->after == XPF_EQ_REPLAY) replay_eq_patterns(c, hit);
        else other_triggers(c, s, v, text, tlen, hit);
        return;
    }
    v->eqlit = XPF_NONE;
    if (s->need_str && !keep_str(c, v, text, tlen)) return;
    if (s->eq_only) return;
    /* a device name (@bn) tested by equality and starts-with(): its prefixes, without other_triggers' other cases */
    if (s->pre_only) prefix_scan(c, s, text, tlen);
    else other_triggers(c, s, v, text, tlen, NULL);
}

/* The value of an attribute of the element being collected to its pslot
 * s (kind: val->kind, see put_num). */
static inline __attribute__((always_inline)) void put_attr(wm_xpf_ctx *c, const xpf_pslot *s, const wm_exi_value *val,
                                                           uint8_t kind)
{
    switch (s->put) {
    case XPF_PUT_NUM: put_num(c, s, val, kind); break;
    case XPF_PUT_STR_EQ: put_str_eq(c, s, val, kind); break;
    default:
        if (kind == WM_EXI_DT_STRING && s->scan_only && !s->eq_mask && !s->need_num && c->f->hs_db) put_str_scan(c, s, val);
        else put_generic(c, s, val);
        break;
    }
}

/* An attribute of the element being collected that came as an event (the
 * general path): its slot's value; returns on_event's answer (a tail call
 * from there). */
static __attribute__((noinline)) int attribute(wm_xpf_ctx *c, const wm_exi_event *ev)
{
    const xpf_pstate *ps = c->ps;
    const xpf_pslot *s;
    if (ev->lid < c->n_lids && ev->uri_id < c->n_uris) s = ps->pslot_of_lid[ev->lid];
    else {
        uint32_t slot = slot_by_name(c->f, ev);
        s = slot == XPF_NONE || !ps->slot_ix[slot] ? NULL : &ps->pslots[ps->slot_ix[slot] - 1];
    }
    if (s) put_attr(c, s, &ev->value, ev->value.kind);
    return stop_now(c);
}

/* ------------------------------------------------------------------ Text
 *
 * XPath 1.0: the string-value of an element ('.') is the concatenation of
 * all its descendant text nodes (§5.2), text() the node-set of its text
 * children, of which a comparison holds if it holds for any one (§3.4) and
 * a function reads the first (§4.2 string()). The schema gives an element
 * of simple content one text node and no child element, but content that a
 * wildcard admits (xs:any: built-in grammars, EXI 1.0 §8.4.3), mixed
 * content, and in a non-strict stream any element (undeclared children,
 * §8.5.4.4.1) may have several text nodes and children. So an element whose
 * state reads the text (xpf_pstate any_text) keeps its chunks (text_value:
 * their text in dt, adjacent chunks one text node in tn) and is decided at
 * its end: with one text node and no child element as before, from that
 * value (end_text); with several (a comment between) or with a child
 * element it is evaluated exactly (exact_eval). A child makes it a frame
 * (go_complex): its attribute values and pattern marks are saved, its
 * children are collected as usual, all text below it goes on to dt, and at
 * its end (close_frame) its values are restored under a new serial and every
 * query of its state is evaluated from them, its text nodes and its string
 * value. Typed chunks (a non-strict stream's declared int before an
 * undeclared child) enter the text in their canonical form. Elements that
 * do not read the text cost nothing of this (one test of busy at element
 * events). */

static __attribute__((noinline, cold)) void text_failed(wm_xpf_ctx *c)
{
    c->failed = true;
    c->undecided = 0; /* the next element event's stop_now looks */
}

/* Room for need bytes in *p (capacity *cap), at most c->text_cap. */
static bool text_room(wm_xpf_ctx *c, char **p, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap : 4096;
    while (nc < need) nc *= 2;
    if (nc > c->text_cap) nc = need;
    char *np = need <= c->text_cap ? realloc(*p, nc) : NULL;
    if (!np) {
        text_failed(c);
        return false;
    }
    *p = np;
    *cap = nc;
    return true;
}

/* Room for one more of *n elements of size sz in *p (capacity *cap). */
static bool vec_room(wm_xpf_ctx *c, void **p, uint32_t n, uint32_t *cap, size_t sz)
{
    if (n < *cap) return true;
    uint32_t nc = *cap ? *cap * 2 : 64;
    void *np = (size_t)nc * sz <= c->text_cap ? realloc(*p, (size_t)nc * sz) : NULL;
    if (!np) {
        text_failed(c);
        return false;
    }
    *p = np;
    *cap = nc;
    return true;
}

/* The text of a chunk: its lexical text, or a typed value's canonical form
 * (buf: WM_EXI_FLOAT_TEXT_MAX bytes). */
static uint32_t chunk_text(const wm_exi_value *v, char *buf, const char **out)
{
    switch (v->kind) {
    case WM_EXI_DT_BOOLEAN: *out = v->b ? "true" : "false"; return v->b ? 4 : 5;
    case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT:
        if (v->text) break;
        *out = buf;
        return wm_exi_int_text(v->i, buf);
    case WM_EXI_DT_FLOAT:
        if (v->text) break;
        *out = buf;
        return wm_exi_float_text(v->mantissa, v->exponent, buf);
    default: break;
    }
    *out = v->text ? v->text : "";
    return v->text ? v->len : 0;
}

/* A character chunk (CH) of the element being collected (state reading the
 * text), or anywhere below a frame. */
static __attribute__((noinline)) void text_value(wm_xpf_ctx *c, const wm_exi_event *ev)
{
    const wm_exi_value *val = &ev->value;
    /* XML has no empty text nodes */
    if ((val->kind == WM_EXI_DT_STRING || val->kind == WM_EXI_DT_RCS_STRING) && val->len == 0) return;
    uint32_t base; /* the first text node of the element the chunk is a child of; XPF_NONE: not kept */
    if (c->collecting && c->ps->any_text) {
        c->more |= XT_TPEND; /* end_text at its end */
        if (c->t_serial != c->serial) { /* the element's first text */
            if (!(c->more & XT_FRAMES)) c->dt_len = 0, c->n_tn = 0;
            c->t_serial = c->serial;
            c->tn0 = c->n_tn;
            c->t_split = true;
        }
        base = c->tn0;
    } else if ((c->more & XT_FRAMES) && !c->collecting && c->xf[c->n_xf - 1].sp == c->sp)
        base = c->xf[c->n_xf - 1].tn0;
    else
        base = XPF_NONE; /* below a frame: its string value only */
    char buf[WM_EXI_FLOAT_TEXT_MAX];
    const char *s;
    uint32_t n = chunk_text(val, buf, &s);
    size_t off = c->dt_len;
    if (!text_room(c, &c->dt, &c->dt_cap, off + n)) return;
    if (n) memcpy(c->dt + off, s, n);
    c->dt_len = off + n;
    if (base == XPF_NONE) return;
    if (!c->t_split && c->n_tn > base) { /* right after the last chunk: the same text node */
        xtnode *t = &c->tn[c->n_tn - 1];
        t->len += n;
        t->joined = true;
        return;
    }
    c->t_split = false;
    if (!vec_room(c, (void **)&c->tn, c->n_tn, &c->cap_tn, sizeof *c->tn)) return;
    c->tn[c->n_tn++] = (xtnode){ .off = (uint32_t)off, .len = n, .val = *val };
}

/* The text nodes and string value of an element decided exactly. */
typedef struct xtext {
    const xtnode *t;
    uint32_t n;
    const char *dt;             /* the nodes' text */
    const char *s;              /* the string value s[0..slen) */
    uint32_t slen;
    double snum;                /* number(string value) */
} xtext;

/* number() of text node i: a typed number as it came, a boolean NaN (as
 * put_value), a string by XPath 1.0 §4.4. */
static double node_num(const xtext *x, uint32_t i)
{
    const xtnode *t = &x->t[i];
    if (!t->joined) switch (t->val.kind) {
        case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: return (double)t->val.i;
        case WM_EXI_DT_FLOAT: return wm_xpf_float(t->val.mantissa, t->val.exponent);
        case WM_EXI_DT_BOOLEAN: return NAN;
        default: break;
        }
    return wm_xpf_str_number(x->dt + t->off, t->len);
}

static bool str_is(const char *s, uint32_t n, const char *lit, uint32_t ln) { return n == ln && (!n || !memcmp(s, lit, n)); }

/* A literal on the text ('.' or text()) at an element decided exactly; a
 * pattern other than a starts-with() holds only where scan_text marked it. */
static bool text_lit(const wm_xpf_ctx *c, const xtext *x, const xpf_lit *l)
{
    const char *lit = c->f->strpool + l->s_off;
    if (l->opd == WM_XP_OPD_DOT) /* the string value (never absent: '' at worst) */
        switch (l->kind) {
        case XPF_L_NUM: return wm_xpf_cmp(l->op, x->snum, l->x);
        case XPF_L_STREQ: return str_is(x->s, x->slen, lit, l->s_len);
        case XPF_L_STRNE: return !str_is(x->s, x->slen, lit, l->s_len);
        case XPF_L_PAT: return !x->slen ? l->absent : l->starts && x->slen >= l->s_len && !memcmp(x->s, lit, l->s_len);
        default: return true;
        }
    if (!x->n) return l->absent;
    switch (l->kind) { /* text(): a comparison holds for some node, a function reads the first */
    case XPF_L_NUM:
        for (uint32_t i = 0; i < x->n; i++)
            if (wm_xpf_cmp(l->op, node_num(x, i), l->x)) return true;
        return false;
    case XPF_L_STREQ: case XPF_L_STRNE:
        for (uint32_t i = 0; i < x->n; i++)
            if (str_is(x->dt + x->t[i].off, x->t[i].len, lit, l->s_len) == (l->kind == XPF_L_STREQ)) return true;
        return false;
    case XPF_L_PAT: return l->starts && x->t[0].len >= l->s_len && !memcmp(x->dt + x->t[0].off, lit, l->s_len);
    default: return true;
    }
}

static int xscan_cb(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
    wm_xpf_ctx *c = ctx;
    const xpf_lit *l = &c->f->lits[id];
    if (l->slot == c->f->text_slot && l->opd == c->xscan_opd) set_lit(c, id, true);
    (void)from, (void)to, (void)flags;
    return 0;
}

/* Marks the pattern literals of operand opd on the text that s[0..n) matches. */
static void scan_text(wm_xpf_ctx *c, uint8_t opd, const char *s, uint32_t n)
{
    c->xscan_opd = opd;
    hs_scan(c->f->hs_db, n ? s : "", n, 0, c->scratch, xscan_cb, c);
}

/* Sets the literals on the text in predicate p (text_lit). */
static void mark_text(wm_xpf_ctx *c, const xtext *x, uint32_t p)
{
    const xpf_pnode *n = &c->f->pnodes[p];
    switch (n->kind) {
    case XPF_P_AND: case XPF_P_OR: mark_text(c, x, n->a); mark_text(c, x, n->b); return;
    case XPF_P_NOT: mark_text(c, x, n->a); return;
    case XPF_P_LIT: break;
    default: return;
    }
    const xpf_lit *l = &c->f->lits[n->a];
    if (!c->f->slots[l->slot].is_text || c->lit_epoch[n->a] == c->serial) return;
    set_lit(c, n->a, text_lit(c, x, l));
}

/* Decides every query of state ps at an element whose attribute values are
 * those of the current serial, whose text nodes are t[0..n) (text in dt) and
 * whose string value is s[0..slen). Out of the fast path's structures
 * (triggers, clusters): each query by its predicate. */
static void exact_eval(wm_xpf_ctx *c, const xpf_pstate *ps, const xtnode *t, uint32_t n, const char *s, uint32_t slen)
{
    const wm_xpf *f = c->f;
    xtext x = { .t = t, .n = n, .dt = c->dt, .s = s, .slen = slen };
    /* one typed chunk is the whole text: its number as it came (as end_text would put it) */
    x.snum = n == 1 && !t[0].joined && t[0].len == slen ? node_num(&x, 0) : wm_xpf_str_number(s, slen);
    uint16_t ix = ps->slot_ix[f->text_slot];
    if (ix && ps->pslots[ix - 1].scan && f->hs_db) {
        scan_text(c, WM_XP_OPD_DOT, s, slen);
        if (n) scan_text(c, WM_XP_OPD_TEXT, c->dt + t[0].off, t[0].len);
    }
    for (uint32_t i = 0; i < ps->n_q; i++) mark_text(c, &x, f->qs[ps->qs[i]].pred);
    for (uint32_t i = 0; i < ps->n_q; i++) {
        uint32_t q = ps->qs[i];
        if (!is_decided(c, q) && eval_pred(c, f->qs[q].pred)) match_query(c, q);
    }
}

/* The end of the element being collected whose state reads the text. */
static void end_text(wm_xpf_ctx *c)
{
    uint32_t n = c->t_serial == c->serial ? c->n_tn - c->tn0 : 0;
    if (n <= 1) { /* simple content: the one text node is the string value too */
        if (n) {
            const xtnode *t = &c->tn[c->tn0];
            wm_exi_value v = t->joined ? (wm_exi_value){ .kind = WM_EXI_DT_STRING } : t->val;
            v.text = c->dt + t->off;
            v.len = t->len;
            uint16_t ix = c->ps->slot_ix[c->f->text_slot];
            if (ix) put_value(c, &c->ps->pslots[ix - 1], &v);
        }
        finish(c);
    } else { /* text nodes with comments between them */
        const xtnode *t = &c->tn[c->tn0];
        exact_eval(c, c->ps, t, n, c->dt + t->off, (uint32_t)(c->dt_len - t->off));
        c->collecting = false;
    }
    if (n) c->n_tn = c->tn0; /* its nodes are no ancestor's; its text stays in dt for them */
}

/* Saves the pattern marks on attributes in predicate p (go_complex); a
 * saved mark's epoch is moved off the serial, so it is saved once. */
static void save_marks(wm_xpf_ctx *c, uint32_t p)
{
    const xpf_pnode *n = &c->f->pnodes[p];
    switch (n->kind) {
    case XPF_P_AND: case XPF_P_OR: save_marks(c, n->a); save_marks(c, n->b); return;
    case XPF_P_NOT: save_marks(c, n->a); return;
    case XPF_P_LIT: break;
    default: return;
    }
    uint32_t id = n->a;
    const xpf_lit *l = &c->f->lits[id];
    if (l->kind != XPF_L_PAT || c->f->slots[l->slot].is_text || c->lit_epoch[id] != c->serial) return;
    if (!vec_room(c, (void **)&c->xl, c->n_xl, &c->cap_xl, sizeof *c->xl)) return;
    c->xl[c->n_xl++] = (xtmark){ id, c->lit_val[id] };
    c->lit_epoch[id] = c->serial - 1; /* an element already decided: this serial is given up */
}

/* A child element of the element being collected, whose state reads the
 * text: the element becomes a frame, decided at its end (close_frame). */
static __attribute__((noinline)) void go_complex(wm_xpf_ctx *c)
{
    const xpf_pstate *ps = c->ps;
    const wm_xpf *f = c->f;
    bool text = c->t_serial == c->serial;
    if (!(c->more & XT_FRAMES)) { /* the first frame: what a document left (it may end in the middle of one) goes */
        c->n_xf = c->n_xa = c->n_xl = 0;
        c->ab_len = 0;
        if (!text) c->dt_len = 0, c->n_tn = 0;
    }
    xtframe x = { .ps = ps, .sp = c->sp, .tn0 = text ? c->tn0 : c->n_tn,
                  .dstart = text ? c->tn[c->tn0].off : (uint32_t)c->dt_len, .xa0 = c->n_xa, .xl0 = c->n_xl, .ab0 = c->ab_len };
    for (uint32_t i = 0; i < ps->n_pslots; i++) {
        const xpf_pslot *s = &ps->pslots[i];
        const slotv *v = &c->sv[s->slot];
        if (f->slots[s->slot].is_text || v->epoch != c->serial) continue;
        if (!vec_room(c, (void **)&c->xa, c->n_xa, &c->cap_xa, sizeof *c->xa)) return;
        xtattr *a = &c->xa[c->n_xa++];
        *a = (xtattr){ .slot = s->slot, .soff = SIZE_MAX, .v = *v };
        if (v->kind == XPF_V_STR && s->need_str) { /* the string a literal reads (put_value keeps it) */
            if (!text_room(c, &c->ab, &c->ab_cap, c->ab_len + v->len)) return;
            if (v->len) memcpy(c->ab + c->ab_len, v->sp, v->len);
            a->soff = c->ab_len;
            c->ab_len += v->len;
        }
    }
    for (uint32_t i = 0; i < ps->n_q; i++) save_marks(c, f->qs[ps->qs[i]].pred);
    c->xf[c->n_xf++] = x;
    c->more |= XT_FRAMES;
    c->collecting = false;
}

/* The end of a frame's element: its queries decided from its saved values,
 * text nodes and string value. */
static __attribute__((noinline)) void close_frame(wm_xpf_ctx *c)
{
    const xtframe x = c->xf[c->n_xf - 1];
    next_serial(c);
    c->ps = x.ps;
    c->n_cand = 0;
    c->n_fired = 0;
    c->sbuf_len = 0;
    for (uint32_t i = x.xa0; i < c->n_xa; i++) {
        const xtattr *a = &c->xa[i];
        slotv *v = &c->sv[a->slot];
        *v = a->v;
        v->epoch = c->serial;
        if (a->soff != SIZE_MAX) v->sp = c->ab + a->soff;
    }
    for (uint32_t i = x.xl0; i < c->n_xl; i++) set_lit(c, c->xl[i].lit, c->xl[i].val);
    exact_eval(c, x.ps, c->tn + x.tn0, c->n_tn - x.tn0, c->dt + x.dstart, (uint32_t)(c->dt_len - x.dstart));
    c->n_tn = x.tn0;
    c->n_xa = x.xa0;
    c->n_xl = x.xl0;
    c->ab_len = x.ab0;
    if (--c->n_xf == 0) c->more &= (uint8_t)~XT_FRAMES;
}

/* A start element while an element is collected or frames are open. */
static __attribute__((noinline)) void start_busy(wm_xpf_ctx *c)
{
    if (c->busy == 1 && !c->ps->any_text) {
        finish(c);
        return;
    }
    if (c->collecting) {
        if (c->ps->any_text) go_complex(c);
        else finish(c);
    }
    c->more &= (uint8_t)~XT_TPEND;
    c->t_split = true; /* text on both sides of a child: two text nodes */
}

/* An end element while the collected element has text waiting or frames
 * are open. */
static __attribute__((noinline)) void end_busy(wm_xpf_ctx *c)
{
    if (c->collecting) {
        if (c->ps->any_text) end_text(c);
        else finish(c);
    } else if ((c->more & XT_FRAMES) && c->xf[c->n_xf - 1].sp == c->sp)
        close_frame(c);
    c->more &= (uint8_t)~XT_TPEND;
    c->t_split = true;
}

static __attribute__((noinline)) void start_document(wm_xpf_ctx *c)
{
    /* the header is read: on a strict document, what the schema rules out is decided */
    if (c->dec.opts.strict && !c->dec.opts.fragment)
        for (uint32_t i = 0; i < c->f->n_impossible; i++) decide_no(c, c->f->impossible[i]);
}

/* Every query is decided: events change nothing (with whole_stream the
 * decoder goes on to validate the rest, else decoding stops here). The
 * element being collected is dropped, so that its later values are not
 * (the attribute handlers test collecting only). */
static inline bool settled(wm_xpf_ctx *c)
{
    if (!none_undecided(c)) return false;
    c->decided_early = true;
    c->collecting = false;
    return true;
}

static inline void end_element(wm_xpf_ctx *c)
{
    if (__builtin_expect(c->busy == 1, 1)) finish(c); /* with text waiting or frames open, more is set */
    else if (__builtin_expect(c->busy != 0, 0)) end_busy(c);
    if (c->sp) c->sp--;
}

/* The events of the general path, and the loop's through their callback
 * when it is the event callback's (xpf_strict_loop). */
static int on_event(void *user, const wm_exi_event *ev)
{
    wm_xpf_ctx *c = user;
    if (settled(c)) return stop_now(c);
    if (ev->type == WM_EXI_EV_AT) { /* most events: before the switch */
        if (c->collecting && !ev->xsi) return attribute(c, ev);
        return stop_now(c);
    }
    switch (ev->type) {
    case WM_EXI_EV_SE: start_element(c, ev); break;
    case WM_EXI_EV_EE: end_element(c); break;
    case WM_EXI_EV_CH:
        if ((c->collecting && c->ps->any_text) || (c->more & XT_FRAMES)) text_value(c, ev);
        break;
    case WM_EXI_EV_CM: case WM_EXI_EV_PI: c->t_split = true; break; /* text on either side: two text nodes */
    case WM_EXI_EV_SD: start_document(c); break;
    default:
        break;
    }
    return stop_now(c);
}

/* The filter's own instance of the strict bit-packed loop (the template
 * codec/exi_decode_strict_loop.h; wm_exi_decoder strict_loop): the SE, EE
 * and declared attributes that loop decodes reach on_event's handlers
 * without an event callback, and an attribute goes straight to its slot's
 * handler by its local-name id (p->lid < n_lids: the grammar's, whose
 * pslot_of_lid is exact; the loop never decodes xsi:*). What it leaves to
 * the general path still comes through on_event. Element events answer
 * as on_event does; attributes never stop decoding (the element's next
 * event asks, stop_now). */
#define WM_SL_FN xpf_strict_loop
#define WM_SL_LINKAGE static
#define WM_SL_TYPED_ONLY 1 /* wm_xpf_ctx_new: typed_only */
#define WM_SL_LOCALS wm_xpf_ctx *const xc = user;
#define WM_SL_ON_SE(pe)                                                                                     \
    do {                                                                                                    \
        if (!settled(xc)) start_element(xc, (pe));                                                          \
        if (stop_now(xc)) goto stop;                                                                        \
    } while (0)
#define WM_SL_ON_EE(pe)                                                                                     \
    do {                                                                                                    \
        if (!settled(xc)) end_element(xc);                                                                  \
        if (stop_now(xc)) goto stop;                                                                        \
    } while (0)
/* no stop test: the element's next event asks (stop_now) */
#define WM_SL_ON_AT(p, pe, kind)                                                                            \
    do {                                                                                                    \
        if (xc->collecting) {                                                                               \
            const xpf_pslot *s_ = xc->ps->pslot_of_lid[(p)->lid];                                           \
            if (s_) put_attr(xc, s_, &(pe)->value, (kind));                                                 \
        }                                                                                                   \
    } while (0)
#include "codec/exi_decode_strict_loop.h"

void wm_xpf_ctx_set_whole_stream(wm_xpf_ctx *c, bool on) { c->whole_stream = on; }

wm_xpf_status wm_xpf_match(wm_xpf_ctx *c, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                           const uint32_t *cand, uint32_t n_cand, uint64_t *matched, bool *stopped_early,
                           wm_exi_error *exi_err)
{
    const wm_xpf *f = c->f;
    uint32_t nw = (f->n_q + 63) / 64;
    memset(c->matched, 0, (nw ? nw : 1) * sizeof *c->matched);
    c->all_cand = !cand;
    c->any_no = cand != NULL;
    if (cand) {
        memset(c->decided, 0xff, nw * sizeof *c->decided);
        c->undecided = 0;
        for (uint32_t i = 0; i < n_cand; i++) {
            uint32_t b = cand[i] < f->n_q ? f->bit_of[cand[i]] : 0;
            if (cand[i] < f->n_q && is_decided(c, b)) {
                c->decided[b >> 6] &= ~(1ull << (b & 63));
                c->undecided++;
            }
        }
        for (uint32_t w = 0; w < nw; w++) c->open[w] = ~c->decided[w];
    } else {
        memset(c->decided, 0, nw * sizeof *c->decided);
        c->undecided = f->n_q;
    }
    c->sp = 0;
    c->busy = 0; /* no frames: the text buffers start again with the next one (go_complex, text_value) */
    if (++c->doc == 0) {
        for (uint32_t i = 0; i < f->n_clusters_total; i++) c->cs[i].doc = 0, c->wm[i] = 0;
        memset(c->pq_doc, 0, (f->n_pq ? f->n_pq : 1) * sizeof *c->pq_doc);
        c->doc = 1;
    }
    for (uint32_t i = 0; i < c->n_ntouch; i++) c->cs[c->ntouch[i]] = CSTATE_ROWS0;
    c->n_ntouch = 0;
    c->failed = false;
    c->n_pend = 0;
    c->pend_n = 0;
    c->decided_early = !c->undecided;
    bool stopped = false;
    wm_exi_status st = WM_EXI_OK;
    if (c->undecided || c->whole_stream)
        st = wm_exi_decode(&c->dec, buf, len, oob, on_event, c, &stopped, exi_err);
    if (c->n_pend) flush_pending(c);
    if (stopped_early) *stopped_early = c->whole_stream ? c->decided_early : stopped || none_undecided(c);
    if (st) return WM_XPF_E_DECODE;
    if (c->failed) return WM_XPF_E_MEMORY;
    memcpy(matched, c->matched, nw * sizeof *matched);
    return WM_XPF_OK;
}
