/* The JSON inputs of `wmctl match`, loaded into a matcher.
 *
 * Formats (one JSON value per line for the .jsonl files; blank lines are
 * skipped; unknown keys are errors so that typos do not pass silently):
 *   FILTERS  {"NAME": ["PEID", ...], ...}       one JSON object: each
 *            neighborhood name and its resolved peid set (spaPS §V-B1).
 *   SUBS     {"id": ID, "client": STR, "filter": STR,
 *             "nbhd"?: NAME, "qos"?: 0|1|2, "no_local"?: BOOL, "xpath"?: STR}
 *            ID is a string or an integer, unique in the file; filter is an
 *            MQTT topic filter, "$share/{group}/{filter}" included
 *            (MQTT 5.0 §4.7, §4.8.2); nbhd names a FILTERS entry; xpath is
 *            a content filter (control/content_filters.h), accepted only
 *            when a content table is attached (wm_match_input_set_content).
 *   PUBS     {"topic": STR, "peids": [STR, ...], "client"?: STR}
 *            topic is a topic name (§4.7); client is the publisher (No Local).
 * Output per publication: {"matched": [ID, ...]} with every matching
 * subscription (shared groups expanded to all their matching members),
 * integer ids first in numeric order, then string ids in byte order.
 *
 * Errors: every function returns 0 or -1 with a one-line reason in err
 * (without file or line: the caller adds them); a rejected line changes
 * nothing. Not thread safe: one wm_match_input per thread.
 */
#ifndef WM_CONTROL_MATCH_INPUT_H
#define WM_CONTROL_MATCH_INPUT_H

#include <stddef.h>

#include "matcher/matcher.h"

typedef struct wm_match_input wm_match_input;

/* A matcher (cfg may be NULL for defaults). wm_match_input_pub registers a
 * reader on its calling thread at its first call; free the input from that
 * thread (or, if pub was never called, from any one thread). */
wm_match_input *wm_match_input_new(const wm_matcher_config *cfg);
void wm_match_input_free(wm_match_input *in);
wm_matcher *wm_match_input_matcher(wm_match_input *in);
/* The id of the subscription whose matcher cookie is `cookie` (cookies are
 * 0, 1, ... in the order lines were accepted), as JSON text ("\"a\"" or
 * "7"), owned by the input; NULL if no such subscription. Any thread, once
 * the input is no longer being filled. */
const char *wm_match_input_sub_id(const wm_match_input *in, uint64_t cookie);
struct wm_content;
/* Attaches the content-filter table that "xpath" fields are interned in
 * (the caller owns it and commits it after the lines). Without one, a line
 * with "xpath" is refused. */
void wm_match_input_set_content(wm_match_input *in, struct wm_content *c);
/* Number of subscriptions accepted so far. */
size_t wm_match_input_sub_count(const wm_match_input *in);

/* Defines every neighborhood of a FILTERS document text[0..len). On error
 * err starts with "LINE:COLUMN: " (1-based; columns in characters, as
 * jansson counts them) of the JSON error, or of the value at fault: a
 * neighborhood's value that is no array, or its bad peid (named 1-based:
 * "peid 2 is not a non-empty string"). */
int wm_match_input_filters(wm_match_input *in, const char *text, size_t len, char *err, size_t errcap);
/* Adds the subscription of one SUBS line; lineno is remembered for
 * duplicate-id messages. A blank line is accepted and ignored. Invalid
 * JSON is "column C: invalid JSON: ..." (a trailing newline is not part of
 * the line: an object cut at the end is at its last column). */
int wm_match_input_sub(wm_match_input *in, const char *line, size_t len, long lineno, char *err, size_t errcap);
/* Matches the publication of one PUBS line; on success *out points to the
 * output line (without newline, valid until the next call; NULL for a
 * blank line). */
int wm_match_input_pub(wm_match_input *in, const char *line, size_t len, const char **out, char *err, size_t errcap);

#endif
