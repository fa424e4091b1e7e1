/* The proxy's --state file: the persistent-session table of the registry
 * (dataplane/proxy_registry.h) saved across a restart of the proxy.
 *
 * Why: the broker keeps a persistent session's subscriptions when the proxy
 * restarts (MQTT 5.0 §4.1, §3.1.2.4), but which Subscription Identifier
 * means which neighborhood or content filter is known to the proxy only.
 * Without the file a restarted proxy withholds every delivery of such a
 * session it cannot attribute until the client subscribes again; with it, a
 * connection resuming the session (CONNACK Session Present 1) gets its
 * records back, exactly as across reconnects to one process. The file also
 * keeps the process's identifier epoch (proxy_filter.h) and each session's
 * next free proxy identifier, so the restarted proxy numbers on where the old
 * one stopped and identifiers mean the same thing on both sides of the
 * restart.
 *
 * Format (text, one item per line, fields separated by one space, '\n' line
 * ends):
 *   wirematch-proxy-state 2  (version 1, written before 2026-12-02, is read too)
 *   epoch E                  E < WM_PROXY_SID_SPAN: identifiers' turn on the wire
 *   clean C                  1: written at a clean stop (every change is in it);
 *                            0: while running (a crash may have lost the last changes)
 *   session CID NEXT INC EXP a session entry: client identifier, next free proxy
 *                            identifier (WM_PROXY_SID_BASE..WM_PROXY_SID_PLAIN; clean 0:
 *                            a ceiling, no identifier handed out reached it), 1 if
 *                            incomplete, expiry: "never", "live:N" (in use when
 *                            written, N its Session Expiry Interval in s, 1..2^32-1:
 *                            loaded as detached at the load; "live" alone, N not
 *                            known, as never) or the Unix time in seconds (CLOCK_REALTIME),
 *                            at most WM_PROXY_STATE_MAX_EXPIRY_S after the loading
 *                            clock's now (later by up to WM_PROXY_STATE_CLOCK_SLACK_S
 *                            is taken as that; further is refused)
 *   sub FILTER SID NBHD XPATH  a record of the session above: topic filter,
 *                            Subscription Identifier (1..268,435,455), neighborhood
 *                            name and XPath text ("-" = none; none of the three empty)
 *   end S R                  S sessions and R records above (a truncated file is
 *                            refused)
 * Strings: bytes 0x21..0x7E as they are except '%', every other byte as %XX
 * (hex); "-" alone is "none" and "~" alone the empty string (a string that
 * is "-" or "~" is written %2D / %7E). Bounds: strings up to 65,535 bytes
 * (MQTT's), %00 refused; at most max_sessions sessions and max_subs records
 * each (the registry's). Loaded from a file written without a clean stop,
 * every session is taken as incomplete (its unknown identifiers withheld)
 * and its next identifier as the file's NEXT: while running, the registry
 * hands an identifier out only below the ceiling the file on disk holds
 * for the session (wm_proxy_registry_session_sid: reserved
 * WM_PROXY_SID_RESERVE ahead when needed, a SUBSCRIBE waiting for the save
 * that writes it if none is left), so nothing the killed process handed
 * out is at or past it, and a session that handed out nothing costs
 * nothing. A version 1 "clean 0" file (no such ceiling) moves it
 * WM_PROXY_STATE_SID_MARGIN further (at most WM_PROXY_SID_PLAIN: none
 * left), past those the killed process may have handed out after its last
 * save.
 *
 * Writes are atomic: FILE.tmp written, fsync'd, renamed over FILE, the
 * directory fsync'd; a crash leaves the old file or the new one. A symlink
 * FILE is followed: the file it names is the one replaced (and its
 * directory the one of FILE.tmp). Only the
 * thread that calls wm_proxy_state_tick writes, from its own copy of the
 * table (wm_proxy_state_mirror): the registry's lock is taken only to copy
 * what changed since the last sync, a bounded piece at a time, so a worker
 * waits for one such piece at most, however large the table.
 */
#ifndef WM_DATAPLANE_PROXY_STATE_H
#define WM_DATAPLANE_PROXY_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/proxy_registry.h"

/* The largest finite Session Expiry Interval, 0xFFFFFFFE s (MQTT 5.0
 * §3.1.2.11.2: 0xFFFFFFFF means never): no session the proxy writes expires
 * later than that after the moment it is written. */
#define WM_PROXY_STATE_MAX_EXPIRY_S 0xFFFFFFFEu
/* A file written before the clock was stepped back (NTP at boot) may hold an
 * expiry up to this much beyond that bound; it is taken as the bound. */
#define WM_PROXY_STATE_CLOCK_SLACK_S 86400u

/* How far a session's next identifier is moved on when loaded from a
 * version 1 file written while running (a kill; version 2 files hold
 * ceilings instead): more than a session's SUBSCRIBEs between two saves
 * could number (1,048,576), 1/16 of the session's 16,777,215 identifiers
 * per kill. */
#define WM_PROXY_STATE_SID_MARGIN (1u << 20)

/* What a load found. */
typedef struct wm_proxy_state_info {
    bool found;           /* the file existed */
    bool clean;           /* ... and was written at a clean stop */
    uint32_t epoch;       /* its epoch (found only) */
    uint32_t sessions;    /* sessions restored */
    uint32_t records;     /* records restored */
    uint32_t expired;     /* sessions whose expiry had passed: not restored */
    uint32_t skipped;     /* records with an invalid topic filter (§4.7, §4.8.2) or an xpath that does
                             not parse (wm_xp_syntax_check): not restored, each
                             reported on stderr with its position and reason, its session marked
                             incomplete (the broker may deliver for it: withheld, never guessed) */
} wm_proxy_state_info;

/* Parses buf[0..len) (the file's bytes; modified in place: strings are
 * decoded there) into g, which must have no worker running. now_rt_s /
 * now_mono_ns: the current CLOCK_REALTIME (s) and CLOCK_MONOTONIC (ns), to
 * turn expiries into the registry's deadlines. Fills *info. A record whose
 * topic filter is no valid filter (the proxy never writes one: a corrupt or
 * hand-edited file) is skipped (info->skipped) and reported on stderr
 * ("wirematch-proxy: --state: line L, column C: topic filter: REASON;
 * record skipped"), the rest loads: such a filter would otherwise turn
 * --prefilter off for the whole process (its registry refuses it). So is
 * a record whose xpath does not parse ("... column C: xpath: REASON (byte B
 * of the query); record skipped", C the field's column, B the byte of the
 * unescaped text): only its syntax is checked, any prefix counting as bound
 * (matcher/xpath_parse.h wm_xp_syntax_check), since the schema registry in
 * force when the session resumes binds them (and reports a query no schema
 * takes then, proxy_filter.c).
 * Returns 0, or -1 with "line L, column C: REASON" in err[0..errcap): the
 * first error stops the parse; sessions restored before it stay in g (the
 * caller discards g: a bad file is refused as a whole). No allocation but
 * the registry's and the syntax check's (freed before it returns); reads
 * nothing beyond len. */
int wm_proxy_state_parse(char *buf, size_t len, wm_proxy_registry *g, int64_t now_rt_s, uint64_t now_mono_ns,
                         wm_proxy_state_info *info, char *err, size_t errcap);

/* Reads the file at path (at most 1 GiB) and parses it into g as
 * wm_proxy_state_parse does. A missing file is no error (info->found false:
 * a first start). Returns 0, or -1 with "PATH: REASON" or "PATH:LINE:COL:
 * REASON" in err. */
int wm_proxy_state_load(const char *path, wm_proxy_registry *g, wm_proxy_state_info *info, char *err, size_t errcap);

/* ------------------------------------------------------------ writing */

/* The saver's copy of the session table, kept as the file's text (about
 * the file's size in memory): each entry is formatted once, when it is taken
 * from the registry after a change, outside the registry's lock. */
typedef struct wm_proxy_state_mirror wm_proxy_state_mirror;

/* What one take from the registry may copy in one hold of its lock
 * (wm_proxy_registry_sessions_take): a worker that changes a session waits
 * for at most one such copy (or one entry's, if larger). */
#define WM_PROXY_STATE_HOLD_ENTRIES 128u
#define WM_PROXY_STATE_HOLD_BYTES   (64u * 1024u)

/* A mirror of g, which it starts tracking (wm_proxy_registry_track: one
 * mirror per registry, made before the file is loaded so that its order is
 * kept; the same thread uses it afterwards, never a worker). Empty until
 * the first sync. NULL if memory ran out. */
wm_proxy_state_mirror *wm_proxy_state_mirror_new(wm_proxy_registry *g);
void wm_proxy_state_mirror_free(wm_proxy_state_mirror *m);

/* Brings m up to date with its registry: takes the drops and the entries
 * queued when it starts, WM_PROXY_STATE_HOLD_ENTRIES / _BYTES per hold of the
 * registry's lock (released in between), and formats them outside it.
 * Entries keep the order they were first taken in (a session dropped and
 * made again goes to the end). Returns 0, or -1 if memory ran out (what was
 * taken stays; the registry then hands every entry again at the next sync). */
int wm_proxy_state_sync(wm_proxy_state_mirror *m);

/* The bytes of m's entries' text (about the file's size). */
uint64_t wm_proxy_state_mirror_bytes(const wm_proxy_state_mirror *m);

/* The file's text for m's sessions as of its last sync, with epoch, clean as
 * the "clean" line; expiries turned into Unix seconds with now_rt_s /
 * now_mono_ns (CLOCK_REALTIME s, CLOCK_MONOTONIC ns). *text is malloc'ed
 * (the caller frees it), *len its bytes. No lock (m is the caller's).
 * Returns 0, or -1 if memory ran out. */
int wm_proxy_state_format(const wm_proxy_state_mirror *m, uint32_t epoch, bool clean, int64_t now_rt_s,
                          uint64_t now_mono_ns, char **text, size_t *len);

/* Writes m (as of its last sync) and epoch to path atomically (above),
 * clean as the "clean" line; no lock. A symlink at path is followed (every
 * time, at most 40 deep: control/out_path.h) and the file it names replaced
 * beside it, the link kept (before 2026-12-02 the rename put a regular file
 * in the link's place); a path that is or leads to a device, FIFO or socket
 * is refused (nothing could read the state back from it). Returns 0, or -1
 * with "PATH: STEP: REASON" (errno's text; PATH the temporary file beside
 * the target) or "PATH: REASON" (the lookup) in err; the previous file then
 * stays as it was. */
int wm_proxy_state_write(const char *path, const wm_proxy_state_mirror *m, uint32_t epoch, bool clean, char *err,
                         size_t errcap);

/* ------------------------------------------------------------ the saver */

/* While running, a save is at most every WM_PROXY_STATE_MIN_INTERVAL_NS and
 * at least WM_PROXY_STATE_SPACING times the last write's duration (text,
 * write, fsync, rename) after it: the whole file is rewritten each time, so a large
 * table is written less often (about 10% of the time and of the disk at
 * most), and a crash loses the changes of up to one interval (the file then
 * says clean 0 and is loaded with every session incomplete). The interval
 * never exceeds WM_PROXY_STATE_MAX_INTERVAL_NS: a write slowed by a busy disk
 * (an fsync of a few bytes can take a second there) must not leave the file
 * stale for ten times that (nor a SUBSCRIBE waiting for a reservation wait
 * longer). */
#define WM_PROXY_STATE_MIN_INTERVAL_NS 200000000ull
#define WM_PROXY_STATE_MAX_INTERVAL_NS 10000000000ull
#define WM_PROXY_STATE_SPACING 10u

/* Once saves have failed for this long (the first failed one's start to the
 * end of the last), the file is taken as unwritable until a save succeeds
 * (wm_proxy_registry_ceilings_unwritable): a SUBSCRIBE waiting for an
 * identifier reservation is refused rather than held for as long as the disk
 * fails, and so is the next one that would wait. About 10 retries (one per
 * WM_PROXY_STATE_MIN_INTERVAL_NS at most while failing): long enough to ride
 * out a passing error, short enough for a client to get its answer well
 * inside any keep-alive. */
#define WM_PROXY_STATE_UNWRITABLE_NS 2000000000ull

/* A failed save is retried WM_PROXY_STATE_MIN_INTERVAL_NS after it ended,
 * then after twice as long each time, at most WM_PROXY_STATE_RETRY_MAX_NS
 * (0.2, 0.4, 0.8, 1.6, 3.2, 5, 5... s): a disk that stays full or read-only
 * costs a try per 5 s, not five a second (each a rewrite of the whole file
 * and a line of work for the disk), and a repair is seen within 5 s. The
 * registry is told the file is unwritable by time, not by tries: saves
 * failing for WM_PROXY_STATE_UNWRITABLE_NS, whatever the tries meanwhile. */
#define WM_PROXY_STATE_RETRY_MAX_NS 5000000000ull

/* The saver: what a process with --state FILE keeps; used by the saver's
 * thread while it runs (dataplane/proxy_saver.h), by the main thread before
 * and after. */
typedef struct wm_proxy_state_saver {
    const char *path;        /* FILE */
    uint32_t epoch;          /* the process's identifier epoch, written with the sessions */
    wm_proxy_state_info loaded;   /* what the load at start found */
    wm_proxy_registry *g;
    wm_proxy_state_mirror *mirror;
    uint64_t saved_changes;  /* wm_proxy_registry_changes() at the last good save */
    uint64_t next_save_ns;   /* CLOCK_MONOTONIC: no save while running before this */
    uint64_t last_end_ns;    /* CLOCK_MONOTONIC: the last good save ended (a SUBSCRIBE waiting
                              * for a reservation is saved for WM_PROXY_STATE_MIN_INTERVAL_NS after) */
    uint64_t interval_ns;    /* the last one set (see above) */
    uint64_t bytes;          /* the entries' text at the last good save (about the file's size) */
    bool saved_once;
    bool failing;            /* the last save failed (reported once on stderr) */
    uint64_t fail_since_ns;  /* failing: CLOCK_MONOTONIC start of the first failed save */
    uint64_t try_end_ns;     /* failing: the last failed save ended (retried retry_ns after it) */
    uint64_t retry_ns;       /* failing: the backoff (WM_PROXY_STATE_RETRY_MAX_NS above) */
    bool unwritable;         /* failing for WM_PROXY_STATE_UNWRITABLE_NS: told to the registry */
    bool quiet;              /* (the first save reports through err) */
    char last_error[512];
    uint64_t saves, save_errors;
} wm_proxy_state_saver;

/* At start (main thread, before any worker runs): sets sv up for path and
 * g (a mirror tracking g), loads the file into g (its epoch replaces epoch
 * if it was found) and saves at once (clean 0), so that an unwritable path
 * is refused before relaying. Returns 0, or -1 with "PATH: REASON" or
 * "PATH:LINE:COL: REASON" in err; then the caller discards g and calls
 * wm_proxy_state_stop. */
int wm_proxy_state_start(wm_proxy_state_saver *sv, const char *path, uint32_t epoch, wm_proxy_registry *g, char *err,
                         size_t errcap);

/* The saver's thread (dataplane/proxy_saver.h; not a worker; one thread at
 * a time), periodically: if the table changed since the
 * last good save, syncs the mirror (bounded holds, above) and, once the
 * interval has passed (or WM_PROXY_STATE_MIN_INTERVAL_NS, when a hand-out
 * waits for a reservation: wm_proxy_registry_sid_urgent), writes it (clean
 * 0: written while running; its reservations then count as saved,
 * wm_proxy_registry_ceilings_saved); final
 * (after the workers stopped, every connection detached): syncs and writes
 * always (clean 1). A failed save is counted, reported on stderr when saves
 * start failing, and retried with the backoff above; once saves have failed
 * for WM_PROXY_STATE_UNWRITABLE_NS the registry is told
 * (wm_proxy_registry_ceilings_unwritable, once, reported on stderr) until
 * one succeeds. May block for as long as the disk does (write, fsync):
 * hence its own thread. Returns 0, or -1 if this call's sync or save
 * failed. */
int wm_proxy_state_tick(wm_proxy_state_saver *sv, bool final);

/* Frees what sv holds (the mirror); the file stays. */
void wm_proxy_state_stop(wm_proxy_state_saver *sv);

#endif
