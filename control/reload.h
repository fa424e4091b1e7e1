/* wm_reload: the control plane's current match tables (control/tables.h),
 * replaced as a whole under live lookups (issue 4, hot reload).
 *
 * wm_reload_load(rl, R.wmr, S.jsonl) compiles a complete new table set on
 * the calling (control) thread while readers keep using the current one;
 * only when every byte of both files has been validated and compiled is the
 * new set published with one release store of a pointer. A bad file
 * changes nothing: the running tables stay exactly as they were and the
 * reason comes back (see wm_tables_compile for the message shapes).
 *
 * Readers never see a mix: a reader attaches to ONE table set at
 * wm_reload_reader_acquire() and every lookup it makes until its next
 * acquire goes to that set. Readers must report quiescent states
 * (wm_reload_reader_quiescent) regularly, e.g. once per burst. Old sets are freed by the
 * writer (wm_reload_reclaim) once (a) a QSBR grace period has passed since
 * they were replaced (matcher/qsbr.h: no reader can still be attaching to
 * them) and (b) every reader attached to them has moved on (a count of
 * attached readers drops to 0 as readers acquire again or are freed). An
 * idle reader therefore keeps its old set alive: call acquire or go
 * offline/free it.
 *
 * Concurrency: one control (writer) thread calls wm_reload_new/_free/_load/
 * _reclaim/_current; any number of reader threads, each with its own
 * wm_reload_reader, call the reader functions concurrently with it.
 * Readers never lock and never wait; they allocate only when they attach
 * to a new table set (one wm_matcher_reader per reload, O(max_filters +
 * max_nbhds) words), never per lookup.
 */
#ifndef WM_CONTROL_RELOAD_H
#define WM_CONTROL_RELOAD_H

#include <stddef.h>
#include <stdint.h>

#include "control/tables.h"
#include "matcher/matcher.h"
#include "matcher/qsbr.h"

typedef struct wm_reload wm_reload;
typedef struct wm_reload_reader wm_reload_reader;

/* A holder with no tables yet (acquire returns NULL until the first
 * successful load). cfg (NULL = defaults) is copied and used for every
 * table set; its qsbr backend (NULL = wm_qsbr_urcu()) also provides the
 * grace periods of the swap. NULL on allocation failure. */
wm_reload *wm_reload_new(const wm_matcher_config *cfg);

/* Frees the current and every retired table set. Every reader must have
 * been freed. NULL is a no-op. */
void wm_reload_free(wm_reload *rl);

/* Writer: compiles resolution_path (may be NULL) and subs_path into a new
 * table set and, only if that fully succeeded, makes it current; the
 * previous set is retired. Returns 0, or -1 with *err filled (NULL: not
 * reported; the file and its line or byte offset, as wm_tables_compile)
 * and the current tables untouched. Also reclaims what it can without
 * waiting. */
int wm_reload_load(wm_reload *rl, const char *resolution_path, const char *subs_path, wm_load_error *err);

/* Writer: the same in two steps, for a holder that extends the new set
 * before anyone sees it (control/tables.h, "Extension by the holder"):
 * compile with wm_tables_compile(wm_reload_config(rl), ...), add to it,
 * then publish. wm_reload_publish takes ownership of t and makes it
 * current (the previous set is retired exactly as by wm_reload_load);
 * returns 0, or -1 on allocation failure (t is then still the caller's and
 * nothing changed). */
const wm_matcher_config *wm_reload_config(const wm_reload *rl);
int wm_reload_publish(wm_reload *rl, wm_tables *t);

/* Writer: the current tables (NULL before the first load) and the number of
 * successful loads so far (the generation: 0, 1, 2, ...). */
const wm_tables *wm_reload_current(const wm_reload *rl);
uint64_t wm_reload_generation(const wm_reload *rl);

/* Writer: frees retired table sets whose grace period has passed and that
 * no reader is attached to. wait=true blocks for one grace period (every
 * online reader must pass a quiescent state), never for readers to detach.
 * With the liburcu backend wait=false only sees grace periods an earlier
 * waiting call completed, so call this with wait=true after loads (e.g.
 * once per load, or from a housekeeping timer). Returns the number of
 * retired sets still waiting. */
size_t wm_reload_reclaim(wm_reload *rl, bool wait);

/* ---------------------------------------------------------------- readers */

/* Registers the calling thread as a reader (online). NULL on allocation
 * failure or a full QSBR backend. */
wm_reload_reader *wm_reload_reader_new(wm_reload *rl);
/* Detaches, unregisters and frees (from the reader's thread). */
void wm_reload_reader_free(wm_reload_reader *rd);

/* Attaches to the current table set (switching from the one attached before
 * if a load happened) and returns the matcher reader to look up with;
 * call it where the thread holds no pointer into any QSBR-protected
 * structure (e.g. at the start of a burst): switching frees the old
 * wm_matcher_reader, which with liburcu briefly takes the whole thread
 * offline.
 * *tables (optional) receives the set, for wm_tables_sub_id(). Both stay
 * valid, and stay the SAME set, until this reader's next acquire or free:
 * call acquire once per burst, not between lookups that must agree.
 * Returns NULL when no tables were ever loaded, or (the old set being kept
 * attached) when the matcher reader for the new set cannot be allocated. */
wm_matcher_reader *wm_reload_reader_acquire(wm_reload_reader *rd, const wm_tables **tables);

/* Reports a quiescent state: the reader holds no pointer obtained since
 * its last acquire. Cheap; call between bursts. */
void wm_reload_reader_quiescent(wm_reload_reader *rd);

/* A reader about to block (e.g. on a lock another writer holds while it
 * waits for a grace period) pauses: it stays attached to its set and
 * keeps its matcher reader, but holds grace periods back no more. It must
 * hold no pointer from a lookup while paused, and resume before its next
 * lookup. */
void wm_reload_reader_pause(wm_reload_reader *rd);
void wm_reload_reader_resume(wm_reload_reader *rd);

/* An idle reader goes offline: it detaches from its table set (which the
 * writer may then free) and stops holding grace periods back. It must not
 * acquire again before wm_reload_reader_online(). */
void wm_reload_reader_offline(wm_reload_reader *rd);
void wm_reload_reader_online(wm_reload_reader *rd);

#endif
