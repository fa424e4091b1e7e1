/* A table loader's refusal, "FILE:LINE: reason" or "FILE: reason" (the form
 * every control/ loader writes: tables.h, schema_registry.h, resolution.h),
 * taken apart again for outputs that bound each string: DPDK telemetry
 * cuts a string at RTE_TEL_MAX_STRING_LEN (128 bytes with its NUL), and a
 * long path followed by the reason used to lose the reason's tail, which is
 * where its own position ("at byte N") is. Given apart, the file and line
 * are fields of their own and the reason gets the whole bound.
 *
 * Only the files the caller names are recognised (a path may hold ':' or
 * digits, so the text alone cannot say where a file name ends). Pure,
 * thread safe, no allocation.
 */
#ifndef WM_CONTROL_LOAD_ERROR_H
#define WM_CONTROL_LOAD_ERROR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct wm_load_error_at {
    const char *file;   /* into msg: the file's name, file_len bytes; NULL if none was recognised */
    size_t file_len;
    unsigned long line; /* 1-based; 0 when the text gives none ("FILE: reason") */
    const char *reason; /* into msg, NUL-terminated: the rest (msg itself when no file was recognised) */
} wm_load_error_at;

/* Splits msg (NUL-terminated) when it starts with one of files[0..n)
 * (NULL entries skipped; the longest that matches wins) followed by ": "
 * or ":LINE: ". Returns true and fills *out; false with out->file NULL,
 * out->line 0 and out->reason = msg otherwise (a reason that names no
 * file, such as "out of memory"). */
bool wm_load_error_split(const char *msg, const char *const *files, size_t n, wm_load_error_at *out);

#endif
