/* wmctl — the control-plane and inspection tool.
 *
 * Each command lives in its own file, control/wmctl_<command>.c, and exports
 * one entry point with main()'s shape. argv[0] is the command name itself
 * ("topic", "mqtt", ...), so a command parses its own sub-commands and options.
 * Exit codes shared by every command:
 *   0  success
 *   1  the input was read but is bad (e.g. a malformed packet in a capture)
 *   2  usage error or an invalid argument/file, with a message on stderr
 * Commands write results to stdout and diagnostics to stderr. Not thread safe.
 */
#ifndef WM_CONTROL_WMCTL_H
#define WM_CONTROL_WMCTL_H

#include <stddef.h>
#include <stdio.h>

#include "control/load_error.h"

/* `wmctl topic match FILTER TOPIC` / `wmctl topic check-filter|check-name S`. */
int wmctl_topic(int argc, char **argv);

/* `wmctl match --subs SUBS.jsonl [--filters FILTERS.json] --pubs PUBS.jsonl`
 * (control/match_input.h): which subscriptions each publication reaches. */
int wmctl_match(int argc, char **argv);

/* `wmctl exi decode|encode ...`: EXI <-> XML with an XML Schema (control/wmctl_exi.c). */
int wmctl_exi(int argc, char **argv);

/* `wmctl exi filter (--schema X.xsd | --grammar G.wmg) [--ns P=URI ...] --query Q ...
 * [--strict] [--byte-aligned] IN.exi`: the 1-based indexes of the matching
 * queries as a JSON list (control/wmctl_exi_filter.c, matcher/xpath_filter.h).
 * argv[0] is "filter". */
int wmctl_exi_filter(int argc, char **argv);

/* Loads a compiled EXI grammar file (`wmctl exi compile`,
 * codec/exi_grammar.h) for the `wmctl exi` sub-commands' --grammar. Returns
 * 0 with *g owned by the caller (wm_exi_grammar_free), or prints
 * "wmctl exi: PATH: reason" (unreadable file) or "wmctl exi: PATH: reason at
 * byte N" (a refused file: corrupt, truncated, another format version) and
 * returns 2. */
struct wm_exi_grammar;
int wmctl_exi_load_grammar(const char *path, struct wm_exi_grammar **g);

/* The out-of-band options a `wmctl exi` user gave (wmctl_exi_oob_check). */
enum {
    WMCTL_EXI_OOB_STRICT = 1u << 0, WMCTL_EXI_OOB_BYTE_ALIGNED = 1u << 1, WMCTL_EXI_OOB_FRAGMENT = 1u << 2,
    WMCTL_EXI_OOB_PREFIXES = 1u << 3, WMCTL_EXI_OOB_COMPRESSION = 1u << 4, WMCTL_EXI_OOB_PRE_COMPRESS = 1u << 5,
    WMCTL_EXI_OOB_ALL = (1u << 6) - 1,
};

/* The out-of-band option flags `wmctl exi decode`, `encode` and `filter`
 * share (--strict, --byte-aligned, --fragment, --preserve-prefixes,
 * --compression, --pre-compress; EXI 1.0 §5.4): sets the option arg names
 * in *o and returns its WMCTL_EXI_OOB_* bit, or 0 when arg is none of them
 * (*o untouched). One parser, so the sub-commands spell and apply them alike. */
struct wm_exi_options;
unsigned wmctl_exi_oob_option(const char *arg, struct wm_exi_options *o);

/* Out-of-band options are for streams without an options header: a stream
 * with one is decoded with its own (EXI 1.0 §5.4). So that an option is never
 * silently ignored, each option given (WMCTL_EXI_OOB_* bits) must agree with
 * the header's options of the stream data[0..len), if it has any. Returns 0
 * (agreement, no options header, or a header the decoder will refuse with
 * its position), else prints "wmctl exi: IN: --OPTION contradicts the
 * stream's options header (...)" and returns 2. */
int wmctl_exi_oob_check(const char *in, const unsigned char *data, size_t len, unsigned given);

/* `wmctl resolve --world W --nbhd F [--out R.wmr] [--json] [--crs EPSG:N]`:
 * resolves every neighborhood of F over world W (control/resolver.h). Exit 1
 * for a bad world or neighborhood file (message with feature number or
 * line:column), 2 for usage or unreadable files. */
int wmctl_resolve(int argc, char **argv);

/* `wmctl dump R.wmr`: prints a resolution file as JSON; exit 1 if it is
 * truncated, corrupted or of another version (message with byte offset). */
int wmctl_dump(int argc, char **argv);

/* `wmctl mqtt decode [--from client|server] [--max-packet-size N]
 * [--topic-alias-maximum N] [--check-payload-format] FILE|-`: MQTT v5 packets
 * as JSON lines. */
int wmctl_mqtt(int argc, char **argv);

/* Reads the whole of path ("-" = stdin) into a malloc'd buffer the caller
 * frees, NUL-terminated one byte past *len so text parsers may use it as a
 * string. Refuses directories and anything larger than max bytes. Returns
 * NULL with "PATH: reason" in msg[0..cap) (open/read errno text, "is a
 * directory", "larger than N bytes", "out of memory"). */
/* Opens path for reading ("-" = stdin, returned as is). Refuses
 * directories. NULL with "PATH: reason" in msg[0..cap). */
FILE *wmctl_open(const char *path, char *msg, size_t cap);

#define WMCTL_MAX_CAPTURE (1ull << 30)     /* wmctl mqtt decode input, bytes */
#define WMCTL_MAX_EXI_INPUT (256ull << 20) /* wmctl exi inputs and grammar files, bytes */
#define WMCTL_MAX_FILTERS (1ull << 30)   /* wmctl match --filters JSON, bytes */
unsigned char *wmctl_read_file(const char *path, size_t max, size_t *len, char *msg, size_t cap);

/* Finishes an output written with stdio: flushes f and checks its error
 * flag, and closes it unless it is stdout (a small file's write error, e.g.
 * ENOSPC or /dev/full, only shows at fflush/fclose). Returns 0, or prints
 * "wmctl <command>: cannot write <name>" and returns 2. */
int wmctl_close_output(const char *command, FILE *f, const char *name);

/* Prints "wmctl <command>: <formatted message>\n" to stderr and returns 2. */
int wmctl_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints a loader's refusal, "wmctl <command>: FILE:LINE: reason" (the
 * line of control/load_error.h), to stderr and returns code. */
int wmctl_load_error(const char *command, const wm_load_error *e, int code);

#endif
