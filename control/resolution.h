/* Resolution files (.wmr): every neighborhood of a file resolved into peid
 * sets, stage by stage, for the data plane to load (the spatial filters of
 * the spaPS paper §V-B2, computed offline). Binary, versioned, checksummed,
 * mmap-able; the format is specified in control/RESOLUTION_FORMAT.md and its
 * constants below.
 *
 * Use:
 *   writer  wm_resolution_builder_new(world) -> _add(name, result)... ->
 *           _finish(&buf, &len) -> wm_resolution_write_file(path, buf, len)
 *   reader  wm_resolution_open(path) (read into memory) or wm_resolution_view(buf, len)
 *           -> accessors -> wm_resolution_close
 *
 * Loading validates everything before returning (header, checksums, every
 * offset, count, index and ordering), so the accessors never read out of
 * bounds; a truncated, corrupted or wrong-version file fails with a precise
 * error (status, byte offset, message) and nothing is left open.
 *
 * Thread safety: a loaded wm_resolution is immutable; any number of threads
 * may read it concurrently. Builders are single-threaded.
 */
#ifndef WM_CONTROL_RESOLUTION_H
#define WM_CONTROL_RESOLUTION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "control/load_error.h"
#include "control/resolver.h"
#include "control/world.h"

#define WM_RESOLUTION_MAGIC       "\x89WMR\r\n\x1a\n"  /* 8 bytes */
#define WM_RESOLUTION_VERSION     1u
#define WM_RESOLUTION_HEADER_SIZE 64u
#define WM_RESOLUTION_MAX_BYTES   (1ull << 34)          /* 16 GiB */

typedef enum wm_resolution_status {
    WM_RESOLUTION_OK = 0,
    WM_RESOLUTION_ERR_IO,        /* open/stat/mmap/write failed (message has errno text) */
    WM_RESOLUTION_ERR_TRUNCATED, /* shorter than its header says (or than a header) */
    WM_RESOLUTION_ERR_MAGIC,     /* not a resolution file */
    WM_RESOLUTION_ERR_VERSION,   /* a version this build does not read */
    WM_RESOLUTION_ERR_CHECKSUM,  /* header or body CRC-32 mismatch */
    WM_RESOLUTION_ERR_CORRUPT,   /* checksums fine but the structure is inconsistent */
    WM_RESOLUTION_ERR_ALIGN,     /* wm_resolution_view on a buffer not 8-byte aligned */
    WM_RESOLUTION_ERR_DUP_NAME,  /* builder: a neighborhood name added twice */
    WM_RESOLUTION_ERR_LIMIT,     /* more than 2^32-1 peids/neighborhoods/sets, or too large */
    WM_RESOLUTION_ERR_NOMEM,
} wm_resolution_status;

typedef struct wm_resolution_error {
    wm_resolution_status status;
    uint64_t offset;             /* byte offset in the file the error is about (0 if none) */
    char message[256];           /* the reason; it never names the file (wm_resolution_error_load adds it) */
} wm_resolution_error;

/* ------------------------------------------------------------ writing */

typedef struct wm_resolution_builder wm_resolution_builder;

/* A builder for neighborhoods resolved over `world` (which must outlive it).
 * NULL on allocation failure. */
wm_resolution_builder *wm_resolution_builder_new(const wm_world *world);

/* Adds one resolved neighborhood (copied). Names must be unique and non-empty.
 * Returns OK, ERR_DUP_NAME, ERR_LIMIT or ERR_NOMEM. Neighborhoods keep the
 * order in which they are added. */
wm_resolution_status wm_resolution_builder_add(wm_resolution_builder *b, const char *name, const wm_nbhd_result *r,
                                               wm_resolution_error *err);

/* Serialises everything added into a malloc'd, 8-byte aligned buffer the
 * caller frees (*buf, *len). The builder stays usable (and must be freed). */
wm_resolution_status wm_resolution_builder_finish(wm_resolution_builder *b, void **buf, size_t *len,
                                                  wm_resolution_error *err);

/* Frees b and everything added to it (buffers handed out by
 * wm_resolution_builder_finish are the caller's); NULL is a no-op. */
void wm_resolution_builder_free(wm_resolution_builder *b);

/* Writes buf to path atomically (a temporary file in the same directory,
 * fsync, rename), so a reader never maps a half-written file. A symlink is
 * followed: the file it names is replaced, the link stays. An existing path
 * that is no regular file (a device, a FIFO, /dev/stdout) is opened and
 * written as it is, never replaced (control/out_path.h). Errors:
 * WM_RESOLUTION_ERR_IO with strerror's text (a directory, a full device, no
 * room for the temporary file; nothing is left behind), _ERR_NOMEM.
 * Thread safety: reentrant. */
wm_resolution_status wm_resolution_write_file(const char *path, const void *buf, size_t len, wm_resolution_error *err);

/* ------------------------------------------------------------ reading */

typedef struct wm_resolution wm_resolution;

/* Reads the whole file into memory of its own and validates it. A copy,
 * not a mapping: what is loaded never changes afterwards, even if the file
 * is overwritten in place (a reader sees a new file only by opening it
 * again). NULL with *err filled (WM_RESOLUTION_ERR_NOMEM for memory,
 * _IO for open/read errors, _TRUNCATED if the file shrank while read). */
wm_resolution *wm_resolution_open(const char *path, wm_resolution_error *err);

/* Validates a buffer the caller keeps alive and unchanged until close; it
 * must be 8-byte aligned (malloc'd memory is). NULL with *err filled. */
wm_resolution *wm_resolution_view(const void *buf, size_t len, wm_resolution_error *err);

/* Unmaps (open) or forgets (view) the file. NULL is a no-op. */
void wm_resolution_close(wm_resolution *r);

/* The peid dictionary: peids used by any set, strictly ascending byte order. */
uint32_t wm_resolution_peid_count(const wm_resolution *r);
const char *wm_resolution_peid(const wm_resolution *r, uint32_t i); /* NULL if i out of range */

/* Neighborhoods in the order they were added, 0..count-1. */
uint32_t wm_resolution_count(const wm_resolution *r);

typedef struct wm_resolution_nbhd {
    const char *name;            /* NUL-terminated, in the mapping */
    uint32_t n_stages;           /* k, 1..64 */
    uint64_t visible;            /* bit i-1 = stage i visible */
    const uint32_t *result;      /* peid dictionary indices, strictly ascending */
    uint32_t result_len;
} wm_resolution_nbhd;

/* Fills *out for neighborhood i; -1 if i is out of range, else 0. */
int wm_resolution_get(const wm_resolution *r, uint32_t i, wm_resolution_nbhd *out);

/* Stage `stage` (1..k) of neighborhood i: dictionary indices, strictly
 * ascending; NULL (and *len = 0) if out of range. */
const uint32_t *wm_resolution_stage(const wm_resolution *r, uint32_t i, uint32_t stage, uint32_t *len);

/* The index of the neighborhood with this name (binary search), or -1. */
int64_t wm_resolution_find(const wm_resolution *r, const char *name);

/* Prints every neighborhood as JSON, one per line, in file order:
 *   {"NAME": {"result": [peids], "stages": {"1": [peids], ...}}, ...}
 * with peids in byte order (the shape of monaco-examples.expected.json).
 * Returns 0, or -1 if writing failed. */
int wm_resolution_print_json(const wm_resolution *r, FILE *out);

/* Short stable name of a status ("io", "truncated", "checksum", ...). */
const char *wm_resolution_status_name(wm_resolution_status st);

/* The refusal e as a load error (control/load_error.h) into *out (NULL:
 * nothing): file = path (the file given to wm_resolution_open; NULL for a
 * buffer of wm_resolution_view), no line, reason "MESSAGE [STATUS]", and
 * e->offset as the byte position, except for I/O and out-of-memory errors,
 * which are about no byte. wm_load_error_format then prints the loader's
 * line, "R.wmr: MESSAGE [STATUS] at byte N". Returns -1 (a failure code
 * to pass on). Thread-safe. */
int wm_resolution_error_load(const wm_resolution_error *e, const char *path, wm_load_error *out);

#endif
