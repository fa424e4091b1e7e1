/* A table loader's refusal as a position and a reason: the one shape every
 * control/ loader of an offline file hands back (resolution files,
 * control/resolution.h; subscriptions and the table set that joins them,
 * control/tables.h and control/reload.h; the schema registry,
 * control/schema_registry.h), and that every output reads its fields from:
 * the data plane's telemetry gives them as {"file", "line", "reason"}, the
 * exit summary and the tools' messages as one line of text.
 *
 * Why a structure and not text: the outputs bound their strings (DPDK
 * telemetry cuts each at RTE_TEL_MAX_STRING_LEN, 128 bytes with its NUL),
 * so the file must travel apart from the reason, and a path may hold ':'
 * and digits, so "FILE:LINE: reason" cannot be taken apart again without
 * guessing where the name ends. The loader knows the position; it says so.
 *
 * The one-line text (wm_load_error_format) is what the loaders printed
 * before, exactly:
 *   FILE:LINE: [column C: ]REASON[ at byte N]    a text file's line
 *   FILE: REASON[ at byte N]                     the whole file, or a binary
 *                                                file's byte offset
 *   REASON                                       about no file ("out of memory")
 *
 * Thread safety: plain data; the functions are pure and allocate nothing. */
#ifndef WM_CONTROL_LOAD_ERROR_H
#define WM_CONTROL_LOAD_ERROR_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WM_LOAD_ERROR_FILE_MAX   PATH_MAX /* any path the loaders could open fits whole */
#define WM_LOAD_ERROR_REASON_MAX 512
/* room for wm_load_error_format's whole line: file, line, column, reason, offset */
#define WM_LOAD_ERROR_TEXT_MAX   (WM_LOAD_ERROR_FILE_MAX + WM_LOAD_ERROR_REASON_MAX + 80)

typedef struct wm_load_error {
    char file[WM_LOAD_ERROR_FILE_MAX];  /* the file at fault as the caller named it; "" when about no file */
    unsigned long line;                 /* 1-based line of a text file; 0: none */
    unsigned long column;               /* 1-based column in that line (bytes); 0: none */
    bool has_offset;                    /* offset is meaningful (a binary file's position) */
    uint64_t offset;                    /* byte offset from the start of the file */
    char reason[WM_LOAD_ERROR_REASON_MAX]; /* NUL-terminated; "" only in a cleared error (no failure) */
} wm_load_error;

/* Records a refusal in *e (NULL: nothing recorded): file (NULL or "": about
 * no file; cut at WM_LOAD_ERROR_FILE_MAX - 1 bytes), line (0: none), the
 * reason printf-formatted (cut at WM_LOAD_ERROR_REASON_MAX - 1 bytes); no
 * column, no offset (set those fields after, when the loader knows them).
 * Returns -1, the loaders' failure code, so a loader may return it. */
int wm_load_error_set(wm_load_error *e, const char *file, unsigned long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with a va_list (ap is consumed). */
int wm_load_error_vset(wm_load_error *e, const char *file, unsigned long line, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Makes *e say "no failure" (every field empty or 0). */
void wm_load_error_clear(wm_load_error *e);

/* True when *e records a failure (a non-empty reason). */
bool wm_load_error_failed(const wm_load_error *e);

/* The whole refusal as one line (see the header comment) into
 * buf[0..cap) (cut to fit, always NUL-terminated when cap > 0). Returns
 * buf. "" for a cleared error. */
char *wm_load_error_format(const wm_load_error *e, char *buf, size_t cap);

/* The refusal without its file and line ("[column C: ]REASON[ at byte N]"),
 * for outputs that give the file and line as fields of their own; same
 * buffer rules. Returns buf. */
char *wm_load_error_format_reason(const wm_load_error *e, char *buf, size_t cap);

#endif
