/* EXI codec status codes and error reports (W3C EXI 1.0 Second Edition).
 *
 * Every fallible function of codec/exi_* returns a wm_exi_status and, when it
 * fails, fills a caller-owned wm_exi_error with the reason and the position in
 * the stream (bit offset from the start of the buffer given to the decoder) so
 * a bad stream can be reported as "reason at bit N". Nothing here allocates.
 */
#ifndef WM_CODEC_EXI_ERROR_H
#define WM_CODEC_EXI_ERROR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* WM_EXI_QUOTE */

typedef enum wm_exi_status {
    WM_EXI_OK = 0,
    WM_EXI_E_TRUNCATED,      /* the stream ended inside an item */
    WM_EXI_E_HEADER,         /* bad cookie, distinguishing bits or version (§5) */
    WM_EXI_E_OPTIONS,        /* the EXI Options document is malformed or contradictory (§5.4, App. C) */
    WM_EXI_E_UNSUPPORTED,    /* valid EXI this codec refuses: compression, pre-compression,
                                datatype representation maps, self-contained elements,
                                integers beyond 64 bits */
    WM_EXI_E_EVENT_CODE,     /* an event code that no production of the current grammar has (§6.2) */
    WM_EXI_E_STRING_INDEX,   /* a string-table compact identifier out of range (§7.3) */
    WM_EXI_E_VALUE,          /* a content value out of its datatype's range (§7.1), or a string
                                no XML document can hold: a character outside XML 1.0 Char,
                                a local name or prefix that is not an NCName (decoder) */
    WM_EXI_E_LENGTH,         /* a length beyond the configured limits */
    WM_EXI_E_MEMORY,         /* the configured memory cap was reached */
    WM_EXI_E_DEPTH,          /* element nesting beyond the configured limit */
    WM_EXI_E_GRAMMAR,        /* the event is not allowed by the grammar (encoder), or the
                                schema cannot be turned into EXI grammars (compiler) */
    WM_EXI_E_SCHEMA,         /* an XML Schema document could not be read or is invalid */
    WM_EXI_E_INPUT,          /* encoder input (XML) is malformed or not a valid lexical value */
    WM_EXI_E_IO,             /* a file could not be read or written (tools only) */
    WM_EXI_E_TRAILING,       /* bytes after the end of the document (decoder, lim.whole_buffer) */
} wm_exi_status;

typedef struct wm_exi_error {
    wm_exi_status status;
    uint64_t bit_pos;        /* position in bits from the start of the stream (decoder) */
    char msg[320];           /* NUL-terminated human explanation with spec section; sized for the
                                longest reason with its quoted name or path, which messages bound
                                (names to 64 bytes, paths to 120); a message that would still not
                                fit ends in "..." instead of being cut mid-word */
} wm_exi_error;

/* Fills *err (if not NULL and not yet failed: the first, innermost reason
 * is kept) and returns st. printf-style message, cut with "..." if longer
 * than msg. */
wm_exi_status wm_exi_fail(wm_exi_error *err, wm_exi_status st, uint64_t bit_pos,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Quoting a user's name or path (NUL-terminated s) in a message: at most
 * max bytes of it, then "..." if it was longer, so that the reason and the
 * line after it always fit msg. Use as
 * wm_exi_fail(err, st, pos, "file " WM_EXI_QUOTE_FMT ": ...", WM_EXI_QUOTE(path, 120)). */
#define WM_EXI_QUOTE_FMT "%.*s%s"
#define WM_EXI_QUOTE(s, max) (int)(strlen(s) > (max) ? (max) : strlen(s)), (s), (strlen(s) > (max) ? "..." : "")

/* A short, stable, lower-case name for a status ("truncated", ...). */
const char *wm_exi_status_name(wm_exi_status st);

#endif
