/* wm_tables: one complete, immutable set of match tables compiled from a
 * resolution file (.wmr, control/resolution.h) and a subscriptions file
 * (SUBS JSON lines, control/match_input.h) — the unit that hot reload
 * (control/reload.h) swaps as a whole.
 *
 * Compile is all-or-nothing: the tables are built into a FRESH matcher that
 * no reader can see yet; the resolution is validated completely by
 * wm_resolution_open (header, checksums, every offset and index), every
 * neighborhood is defined, then every subscription line is checked and
 * added (JSON shape, topic filter per MQTT 5.0 §4.7, QoS, No Local on
 * shared, duplicate id, "nbhd" naming a neighborhood of THIS resolution).
 * The first error frees everything built so far and is reported as a
 * load error (control/load_error.h) that names the file and position:
 *   R.wmr, its byte offset: "R.wmr: REASON [status] at byte N"
 *   S.jsonl, its line:      "S.jsonl:LINE: REASON"
 * (as wm_load_error_format prints them), so a bad input can never leave a
 * half-compiled state anywhere.
 *
 * Subscription cookies in the matcher are 0, 1, ... in file order;
 * wm_tables_sub_id() turns a cookie from a lookup back into the file's id.
 *
 * Thread safety: wm_tables_compile and wm_tables_free run on one control
 * thread; once compiled, what the files defined is never modified, so any
 * number of readers may look up in its matcher (each with its own
 * wm_matcher_reader, see control/reload.h for how readers attach) and call
 * the accessors.
 *
 * Extension by the holder: the data plane keeps subscriptions it learns
 * from traffic in the same matcher, so that one lookup answers for both.
 * The holder may therefore add and remove subscriptions of its OWN, as the
 * matcher's one writer (matcher.h: each add/remove is atomic for readers),
 * provided their cookies have WM_TABLES_COOKIE_EXT set (they can then
 * never be mistaken for a file's subscription) and it never removes a
 * subscription the files defined. It may also attach one pointer of
 * per-set data (wm_tables_set_user), freed with the set.
 */
#ifndef WM_CONTROL_TABLES_H
#define WM_CONTROL_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "control/load_error.h"
#include "matcher/matcher.h"

typedef struct wm_tables wm_tables;

/* Cookie bit reserved for subscriptions the holder adds (see above). */
#define WM_TABLES_COOKIE_EXT (UINT64_C(1) << 63)

/* Compiles resolution_path (may be NULL: no neighborhoods, then any "nbhd"
 * is unknown) and subs_path (may be NULL: no subscriptions) into new tables with matcher configuration cfg
 * (NULL = defaults; copied). Returns the tables (caller owns; wm_tables_free)
 * or NULL with *err filled (NULL: not reported): the file, its line
 * (subscriptions) or byte offset (resolution), the reason; no file and
 * "out of memory" on allocation failure. */
wm_tables *wm_tables_compile(const wm_matcher_config *cfg, const char *resolution_path, const char *subs_path,
                             wm_load_error *err);

/* The same with a schema registry (control/schema_registry.h): the files
 * of one table set. schemas NULL: no registry, so every content filter
 * ("xpath") is refused. A bad registry line fails the compile with the
 * registry's file, line (and column) ("REG:LINE: reason"); a bad "xpath"
 * in the subscriptions file with its file and line ("S.jsonl:LINE:
 * \"xpath\": schema NAME: position P: reason"); filters that do not
 * compile together with the subscriptions file and no line. */
typedef struct wm_tables_paths {
    const char *resolution, *subs, *schemas;   /* each may be NULL */
} wm_tables_paths;
/* Compiles the files of p (above) with matcher bounds cfg (NULL: the
 * matcher's defaults) into a new table set, all or nothing; NULL with *err
 * filled (file, line or offset, reason) on refusal. The caller owns the
 * result (wm_tables_free). Any thread: it touches no shared state. */
wm_tables *wm_tables_compile_paths(const wm_matcher_config *cfg, const wm_tables_paths *p, wm_load_error *err);

/* Frees the tables and their matcher. No reader may be attached any more
 * (control/reload.h guarantees it for tables it retires). NULL is a no-op. */
void wm_tables_free(wm_tables *t);

/* The compiled matcher. Readers use it through their own wm_matcher_reader.
 * What the files defined is immutable: only the holder may call its writer
 * functions, as its one writer thread, and only for subscriptions of its
 * own ("Extension by the holder" above: cookies with WM_TABLES_COOKIE_EXT,
 * never removing a file's subscription). Any thread; never NULL. */
wm_matcher *wm_tables_matcher(const wm_tables *t);

/* The set's content filters (control/content_filters.h): the registry, the
 * preloaded subscriptions' filters (their matcher content slots), committed.
 * The holder extends it like the matcher (one writer; it retires the
 * snapshots wm_content_commit replaces after a grace period). */
struct wm_content *wm_tables_content(const wm_tables *t);

/* The subscription id (JSON text, e.g. "\"s1\"" or "7") of the subscription
 * with matcher cookie `cookie`, owned by t; NULL if out of range. */
const char *wm_tables_sub_id(const wm_tables *t, uint64_t cookie);

/* Holder's per-set data: user is freed with free_fn(user) (free_fn may be
 * NULL) by wm_tables_free, after every reader has left the set. Set it
 * before readers can see the set. A second call replaces (and frees) the
 * first. wm_tables_user returns it (NULL if none); any thread. */
void wm_tables_set_user(wm_tables *t, void *user, void (*free_fn)(void *user));
void *wm_tables_user(const wm_tables *t);

/* Number of subscriptions and of neighborhoods compiled. */
size_t wm_tables_sub_count(const wm_tables *t);
uint32_t wm_tables_nbhd_count(const wm_tables *t);

#endif
