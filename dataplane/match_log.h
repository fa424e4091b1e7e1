/* A worker's match log file (--match-log): a stdio stream whose writes are
 * accounted line by line, so that a line the system refused to store (a
 * full disk, EIO, a FIFO whose reader went away) is counted as lost with
 * the reason, instead of vanishing inside stdio's buffer.
 *
 * Why a custom stream (fopencookie) and not fopen: stdio writes a whole
 * buffer (1 MiB, many lines) per write(2) and, when it fails, only sets the
 * stream's error flag: how many lines were stored is unknown, the flag is
 * easy never to look at, and the bytes of a line cut by a short write stay
 * in the file as a torn JSON line. Here the stream's write function does
 * the write(2)s itself and:
 *   - counts the lines stored (their '\n' reached the file; JSON lines
 *     escape every control character, so '\n' ends a line and nothing else);
 *   - on an error keeps the first errno, and in a regular file truncates
 *     the torn line's bytes away, so the file holds whole lines only, then
 *     drops the rest of that line; the following lines are tried again (a
 *     disk that frees up stores them: the seq numbers show the gap);
 *   - always answers stdio "all written", so stdio never enters its error
 *     state and the caller's fprintf/fputs need no checks on the hot path.
 * A FIFO whose reader closed gives EPIPE only if SIGPIPE is ignored (the
 * program's job: build/wirematch ignores it); otherwise the process dies.
 *
 * Lines lost = lines produced (the caller's count of '\n'-terminated
 * lines it formatted) - lines stored, known once the log is closed.
 *
 * Thread safety: one log per worker, used by one thread at a time. */
#ifndef WM_DATAPLANE_MATCH_LOG_H
#define WM_DATAPLANE_MATCH_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct wm_match_log;

/* What a closed log stored (wm_match_log_close). */
struct wm_match_log_result {
    uint64_t lines_written; /* lines whose every byte reached the file */
    int err;                /* the first write/close errno, 0 if none */
};

/* Creates (truncates) path for writing, with a stdio buffer of buf_bytes
 * (0: stdio's default). Returns the log, or NULL with "PATH: reason" in
 * err[0..errlen). */
struct wm_match_log *wm_match_log_open(const char *path, size_t buf_bytes, char *err, size_t errlen);

/* The stream to format lines into; every line must end with '\n'. Valid
 * until wm_match_log_close. Never enters stdio's error state. */
FILE *wm_match_log_stream(struct wm_match_log *l);

/* Flushes, closes and frees l (NULL: nothing), filling *out (may be NULL). */
void wm_match_log_close(struct wm_match_log *l, struct wm_match_log_result *out);

#endif
