/* wm_content: the content filters of one table set (issue 6, "Integration";
 * ARCHITECTURE.md §3: the EXI filter automaton runs only for publications
 * that survived topic and spatial matching).
 *
 * A subscription's content filter is the XPath text of its SUBSCRIBE `xpath`
 * user property (or the "xpath" field of a --subs line). It is bound to a
 * schema only per publication: the PUBLISH's Content Type
 * "application/exi; schema=NAME" names an entry of the schema registry
 * (control/schema_registry.h), and the filter is evaluated with that
 * schema's grammar and namespace bindings.
 *
 * Slots. Distinct XPath texts are interned once and reference counted; a
 * text's slot (1, 2, ...; 0 = no content filter) is what the matcher keeps
 * in the subscription (wm_sub_spec.content) and returns from a lookup.
 * A slot whose last reference is dropped is reused for another text only
 * when no reader can still map it to the old one: after a commit that
 * published a snapshot without it AND a QSBR grace period after that
 * (wm_content_reuse_slots; the same rule as the matcher's subscription ids,
 * matcher/qsbr.h). Until then a reader on an older snapshot, given a
 * subscription that carries the slot, evaluates either the old text for a
 * subscription being removed or nothing, never another subscriber's query.
 * Adding a text validates it against EVERY registered schema by compiling it
 * alone (matcher/xpath_filter.h: the subset, prefixes bound by the registry
 * line, typing by the schema). It is accepted if it compiles for at least
 * one schema; for a schema where it does not compile (e.g. its prefix is not
 * bound there) the filter never matches that schema's publications. A text
 * that compiles for no schema is refused with the first schema's reason
 * ("schema NAME: position P: REASON"); without a registry every text is
 * refused. A refused filter is never installed, so a subscriber with a bad
 * query never receives everything.
 *
 * Compile once, scan per core. wm_content_commit compiles all live texts,
 * per schema, into ONE automaton (matcher/xpath_set.h) and publishes it as
 * an immutable snapshot; that happens on subscription change (a new text, or
 * the last reference to one dropped), never per packet. Readers (workers)
 * hold a snapshot and their own wm_content_reader (decoders, Hyperscan
 * scratch); one decode of a payload decides every candidate slot of its
 * schema, with whole-stream validation (a truncated or damaged payload is an
 * error, never a match).
 *
 * Compiling away from the writer. A writer that must not stall (a proxy
 * worker serving other connections) splits the work: wm_content_want takes
 * a reference to a text WITHOUT validating it (the slot is PENDING);
 * wm_content_job_begin captures every live and pending text into a job;
 * wm_content_job_run, on any thread, validates the pending texts and
 * compiles the set; wm_content_job_end, back on the writer, makes each
 * pending text READY or REFUSED (with its reason) and publishes the
 * snapshot. Meanwhile the writer goes on: what it changes after _begin is
 * the next job's (texts wanted while a compile is in flight are compiled
 * together by the next one). wm_content_state tells a holder of a
 * reference when its text is usable: READY only once a published snapshot
 * has it, so a subscription made then never misses a publication for want
 * of a compiled filter. wm_content_commit is the three steps in a row.
 *
 * No room. Texts valid alone may not compile together (the set's path
 * automaton is bounded by WM_XPF_MAX_STATES, matcher/xpath_filter.h). A
 * job whose set does not compile keeps the published texts and adds its
 * new ones (PENDING, or LIVE by wm_content_ref but not published yet) in
 * slot order, a run at a time, halving a run that does not fit: a text is
 * refused (REFUSED, wm_content_no_room, reason "it compiles alone, but not
 * together with the content filters accepted before it (N): ...") only for
 * the texts accepted before it, never for one that came with it, and the
 * others of the job are accepted. Texts already accepted are never
 * dropped for a new one. Each failing set build runs the automaton up to
 * its bound, so the isolation costs about one build per refused text (n
 * texts that all fail: n + log2(n)) and stops after
 * WM_CONTENT_JOB_MAX_BUILDS builds: the texts not tried by then are refused
 * too ("not compiled: ... try again later", wm_content_no_room). A text
 * proved not to fit is refused again without a compile (wanted, referenced,
 * or wanted anew after its last reference went: the table remembers up to
 * WM_CONTENT_ROOM_CACHE such texts) until a text that was live or pending
 * has gone: until then the set it failed against only grew. Its reason is
 * the one its job gave. wm_content_commit keeps all or nothing (below):
 * its callers refuse what they just added (an offline --subs file whole).
 * The data plane's SUBSCRIBEs and the proxy's go through jobs.
 *
 * Thread safety: ONE writer (wm_content_ref/want/unref/commit/job_begin/
 * job_end, the holder's writer lock); wm_content_job_run on any thread,
 * touching only its job and the registry; any number of readers call wm_content_current (acquire) and
 * use a snapshot until the writer retires it: commit hands the replaced
 * snapshot back, and the holder frees it (wm_content_snap_free) once no
 * reader can hold it (a QSBR grace period). wm_content_free frees the
 * current snapshot too. A reader context never touches its snapshot when it
 * is freed, so it may be freed after the snapshot.
 */
#ifndef WM_CONTROL_CONTENT_FILTERS_H
#define WM_CONTROL_CONTENT_FILTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_error.h"
#include "control/schema_registry.h"
#include "matcher/qsbr.h"

#define WM_CONTENT_MAX_SLOTS (1u << 22)
#define WM_CONTENT_MAX_TEXT 4096u   /* bytes of one XPath text */
#define WM_CONTENT_JOB_MAX_BUILDS 24u /* set builds of one job ("No room") */
#define WM_CONTENT_ROOM_CACHE 256u    /* texts proved not to fit, remembered ("No room") */

typedef struct wm_content wm_content;
typedef struct wm_content_snap wm_content_snap;
typedef struct wm_content_reader wm_content_reader;

/* Why a publication did not reach its content-filtered candidates, or OK. */
#define WM_CONTENT_OUTCOMES(X)                                                              \
    X(OK, "decoded")                      /* decoded: each candidate passed or not */      \
    X(NO_CONTENT_TYPE, "no_content_type") /* the PUBLISH has no Content Type */            \
    X(NOT_EXI, "not_exi")                 /* not "application/exi; schema=NAME" */         \
    X(BAD_CONTENT_TYPE, "bad_content_type") /* application/exi, bad or unknown parameter */ \
    X(UNKNOWN_SCHEMA, "unknown_schema")   /* NAME is not in the registry */                \
    X(NOT_APPLICABLE, "no_filter_for_schema") /* no candidate's filter compiles for it */  \
    X(DECODE_ERROR, "decode_error")       /* the payload is not valid EXI for the schema */\
    X(TOO_LARGE, "value_too_large")       /* a value exceeded the evaluator's buffers */

enum wm_content_outcome {
#define WM_CONTENT_X_ENUM(e, s) WM_CONTENT_##e,
    WM_CONTENT_OUTCOMES(WM_CONTENT_X_ENUM)
#undef WM_CONTENT_X_ENUM
    WM_CONTENT_OUTCOME_COUNT
};
/* The counter name of outcome o (the strings of WM_CONTENT_OUTCOMES, as
 * telemetry and the summary print them), "?" out of range. Static
 * storage; thread safe. */
const char *wm_content_outcome_name(enum wm_content_outcome o);

/* Takes ownership of reg (may be NULL: no registry, every filter refused).
 * NULL on out of memory (reg is then freed). */
wm_content *wm_content_new(wm_schema_reg *reg);
/* The same over a registry the caller keeps (it must outlive the table):
 * e.g. one table per proxy worker over the process's registry. */
wm_content *wm_content_new_borrowed(const wm_schema_reg *reg);
/* Frees the table, its registry (if owned) and its current snapshot (readers gone). */
void wm_content_free(wm_content *c);
#ifdef WM_TEST_HOOKS
/* Test builds only (WM_TEST_HOOKS: the unit tests and their own copy of
 * this file's object, never the programs): the next n calls of
 * wm_content_new / wm_content_new_borrowed fail as out of memory does, so
 * that callers' error paths can be run under ASan. Not thread safe. */
void wm_content_fail_news(unsigned n);
#endif

/* The schema registry the table binds filters to (owned by the table or
 * borrowed, as created; never NULL for a table). The registry is immutable,
 * so any thread may read it while the table lives. */
const wm_schema_reg *wm_content_registry(const wm_content *c);

/* Writer: makes dropped slots reusable, for a holder whose readers report
 * quiescent states to ops (the grace periods of its match tables) and
 * attach the current snapshot at each of them. max_slots (at most
 * WM_CONTENT_MAX_SLOTS, never below the slots already used) bounds the
 * slots live or waiting for their grace period. Without this call a dropped
 * slot is never reused and at most WM_CONTENT_MAX_SLOTS distinct texts are
 * ever accepted by the table (fine for a single-threaded holder's bounded
 * life or a one-shot compile; not for a long-running data plane). Before
 * readers exist; once. */
void wm_content_reuse_slots(wm_content *c, const wm_qsbr_ops *ops, uint32_t max_slots);
/* Writer: returns the slots whose grace period has passed to the free list
 * (wait=true blocks for one grace period: call where no reader of ops is
 * online on this thread). Returns how many came back. No-op without reuse. */
size_t wm_content_reclaim(wm_content *c, bool wait);
/* Writer: slots used so far (the high-water mark: live, dead, waiting, free);
 * the size of every snapshot's slot map. */
uint32_t wm_content_slots(const wm_content *c);

/* Writer: a reference to the filter xpath[0..len). Returns 0 and its slot
 * (>= 1), or -1 with the reason in err (not installed; nothing changed), or
 * -2 when every slot is live or waiting for its grace period (reason in err;
 * wm_content_reclaim(c, true) and a retry may succeed). A new text takes a
 * free slot (wm_content_reuse_slots) or the next unused one.
 * Takes effect for readers at the next wm_content_commit: a reader still on
 * an older snapshot does not know the slot (or knows it as unused), and its
 * subscriptions do not match there (never "everything"). */
int wm_content_ref(wm_content *c, const char *xpath, size_t len, uint32_t *slot, char *err, size_t errlen);
/* Writer: a reference to the filter xpath[0..len) without validating it
 * (cheap: no compile). A known text is shared whatever its state; a new one
 * takes a slot PENDING, validated by the next job (wm_content_state).
 * Returns 0 and its slot, -1 (no registry, empty or longer than
 * WM_CONTENT_MAX_TEXT, out of memory; reason in err) or -2 as
 * wm_content_ref. */
int wm_content_want(wm_content *c, const char *xpath, size_t len, uint32_t *slot, char *err, size_t errlen);
/* Writer: the slot of text xpath[0..len) (any state), 0 if none. No reference taken. */
uint32_t wm_content_find(const wm_content *c, const char *xpath, size_t len);
enum wm_content_state {
    WM_CONTENT_S_NONE = 0,   /* no text in that slot */
    WM_CONTENT_S_PENDING,    /* not validated yet, or not in the published snapshot yet */
    WM_CONTENT_S_READY,      /* validated, and the published snapshot has it */
    WM_CONTENT_S_REFUSED,    /* compiles for no schema (or the set did not compile with it): *why */
};
/* Writer: where slot's text stands; *why (REFUSED: the reason, valid while
 * the slot is referenced) else NULL. */
enum wm_content_state wm_content_state(const wm_content *c, uint32_t slot, const char **why);
/* Writer: is slot's text REFUSED for want of room: it compiles alone, but
 * not together with the texts accepted before it, or its job spent its
 * builds before trying it (see "No room")? Such a text is tried again when
 * it is wanted or referenced again (wm_content_want, wm_content_ref:
 * PENDING / validated) once texts have gone since its job began (or it was
 * not tried); otherwise it stays REFUSED (wm_content_want: with the new
 * reference; wm_content_ref: -1). */
bool wm_content_no_room(const wm_content *c, uint32_t slot);
/* Writer: drops a reference taken by wm_content_ref or wm_content_want. A
 * slot whose last reference goes is DEAD until a job made after this call
 * has been published (and its grace period over). */
void wm_content_unref(wm_content *c, uint32_t slot);
/* The text of a referenced slot (NUL-terminated), NULL otherwise. Writer. */
const char *wm_content_text(const wm_content *c, uint32_t slot);
/* Number of live distinct filters. Writer. */
uint32_t wm_content_count(const wm_content *c);

/* Writer: if filters were added or dropped since the last commit, compiles
 * every live filter (one automaton per schema) and publishes the snapshot;
 * the slots dropped since start their grace period (wm_content_reuse_slots).
 * *old receives the replaced snapshot (to free after a grace period), NULL
 * if none was replaced. Returns 0, or -1 with the reason in err (the
 * compiled set hit a bound, out of memory, a job is in flight): the
 * published snapshot stays, the caller should drop the references it just
 * took and commit again. = job_begin, job_run and job_end in a row, except
 * that a set that does not compile fails whole (no "No room" isolation). */
int wm_content_commit(wm_content *c, wm_content_snap **old, char *err, size_t errlen);
/* A compile of the table's texts (see "Compiling away from the writer"). */
typedef struct wm_content_job wm_content_job;
/* Writer: a job over every live and pending text (copied: the table may
 * change meanwhile), or NULL: nothing changed since the last job (*rc 0),
 * or a job is in flight / out of memory (*rc -1). At most one job per table
 * is in flight. */
wm_content_job *wm_content_job_begin(wm_content *c, int *rc);
/* Any thread, once: validates the job's pending texts against every schema
 * and compiles the set (the heavy part: Hyperscan). Reads the registry,
 * which must outlive the job; touches nothing else of the table. */
void wm_content_job_run(wm_content_job *j);
/* Writer, after _run: the job's pending texts still referenced become LIVE
 * (READY) or REFUSED; the snapshot is published (*old: the replaced one, to
 * free after a grace period, as commit); the slots DEAD at _begin start
 * their grace period. Frees j. Returns 0 (also when some new texts were
 * refused for want of room, see "No room"), or -1 with the reason in err
 * (the published texts alone did not compile again, out of memory: the
 * published snapshot stays and the job's pending texts are REFUSED with
 * that reason). */
int wm_content_job_end(wm_content *c, wm_content_job *j, wm_content_snap **old, char *err, size_t errlen);
/* Any thread, at any time before or during _run: asks _run to stop. It
 * stops before the next text it validates and before each set it builds; a
 * set build already started (one Hyperscan compile) runs to its end. A job
 * that stopped for it ends (_end) with -1 "the compile was cancelled",
 * publishes nothing and refuses nothing: its pending texts stay PENDING for
 * the next job. Used when nobody waits for the result any more (the texts'
 * clients left, the process stops). */
void wm_content_job_cancel(wm_content_job *j);
/* Writer: the job in flight will never end (_end is not called: whoever
 * holds it frees it, wm_content_job_free, once _run is over, if it runs):
 * the table forgets it. Its pending texts stay PENDING and its dead slots
 * DEAD, for the next job, which is made even if nothing else changes. */
void wm_content_job_drop(wm_content *c);
/* Writer: is the job in flight useless: every text it validates has no
 * reference left (or was validated meanwhile)? False without a job, or for
 * one that validates nothing (a set with texts dropped must still be
 * published). */
bool wm_content_job_stale(const wm_content *c);
/* Frees a job that was begun but will never end (its table is being freed). */
void wm_content_job_free(wm_content_job *j);

/* What the table's jobs cost and refused for want of room (see "No room"),
 * since it was made. */
typedef struct wm_content_stats {
    uint64_t jobs;         /* jobs ended (wm_content_job_end, commits included) */
    uint64_t builds;       /* set builds they tried: 1 per job unless texts did not fit together */
    uint32_t builds_max;   /* most set builds of one job (at most WM_CONTENT_JOB_MAX_BUILDS) */
    uint64_t room_refused; /* texts refused, proved not to fit */
    uint64_t room_untried; /* texts refused untried: their job had spent its set builds */
    uint64_t room_cached;  /* wants and refs of a text proved not to fit, refused without a compile */
} wm_content_stats;
/* Writer: the table's stats. */
void wm_content_get_stats(const wm_content *c, wm_content_stats *out);

/* Frees a snapshot that commit replaced. */
void wm_content_snap_free(wm_content_snap *s);

/* Readers: the published snapshot (acquire), NULL before the first commit. */
const wm_content_snap *wm_content_current(const wm_content *c);
/* The snapshot's identity: a number no other snapshot of the process has
 * had or will have (0 for NULL). A reader that let go of a snapshot (a
 * quiescent state, or offline) and finds the current one at the same
 * address tells a new snapshot there from the one it had by this, not by
 * the pointer. Any thread, on a snapshot it may use. */
uint64_t wm_content_snap_id(const wm_content_snap *s);

/* Does snapshot s decide slot's text: was the text in s when it was
 * published, compiled for at least one schema? False for s NULL, slot 0, a
 * slot s does not know, or a text that was pending, refused or dropped
 * when s was made. A reader that finds a slot in a lookup result asks this
 * before deciding it with s: a holder's subscription installed with a
 * PENDING text (wm_content_want) is then pending exactly for the readers
 * whose snapshot lacks it, whatever the writer has settled since in a
 * newer snapshot or another table (a state kept outside the snapshot would
 * not know which snapshot its reader holds). Any thread, on a snapshot it
 * may use; O(schemas). */
bool wm_content_snap_has(const wm_content_snap *s, uint32_t slot);

/* A reader context over snapshot s (which must outlive its use, not its
 * free). NULL on out of memory. */
wm_content_reader *wm_content_reader_new(const wm_content_snap *s, const wm_exi_limits *lim);
void wm_content_reader_free(wm_content_reader *r);

/* Reader: decides the candidate slots slots[0..n) (each >= 1, repeats
 * allowed) for a publication with Content Type ct[0..ct_len) (ct NULL: none)
 * and payload[0..len). pass[i] = slots[i] passes. The schema and the
 * out-of-band EXI options (for a payload without an options header) come
 * from wm_schema_reg_bind (control/schema_registry.h: the registry line's
 * options, then the Content Type's option parameters). Decodes the payload
 * once (whole stream) only if some candidate applies to the named schema.
 * On any outcome but OK every pass[i] is false; for DECODE_ERROR / TOO_LARGE
 * *exi_err has the reason and bit position, for NOT_EXI / BAD_CONTENT_TYPE /
 * UNKNOWN_SCHEMA the reason (status WM_EXI_E_OPTIONS, bit position 0; for
 * BAD_CONTENT_TYPE with the byte position in the Content Type). No
 * allocation. */
enum wm_content_outcome wm_content_match(wm_content_reader *r, const char *ct, size_t ct_len, const uint8_t *payload,
                                         size_t len, const uint32_t *slots, uint32_t n, bool *pass,
                                         wm_exi_error *exi_err);

/* Reader, after wm_content_match: NULL, or, if that match decoded a payload
 * whose options header contradicts an option its Content Type gave
 * (wm_exi_oob_header_conflict: the header was used, as §5.4 says), the
 * reason ("strict=true contradicts the payload's options header
 * (strict=false)"), valid until the reader's next match. The data plane
 * and the proxy count it and report it with the publication's client and
 * topic: a publisher whose Content Type and encoder disagree is
 * mis-configured, and is decoded by its header only. */
const char *wm_content_reader_conflict(const wm_content_reader *r);

#endif
