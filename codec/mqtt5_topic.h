/* MQTT v5 topic names, topic filters and shared subscriptions
 * (MQTT 5.0 §4.7 Topic Names and Topic Filters, §4.8.2 Shared Subscriptions).
 *
 * This file is the executable specification of topic matching: the matcher's
 * topic index is tested against wm_topic_match() on random workloads, so it
 * favours being obviously right over being clever.
 *
 * All functions take (pointer, length) views, never NUL-terminated strings:
 * topics come straight from packet buffers. They read exactly [s, s+len),
 * allocate nothing, keep no state and are thread safe.
 */
#ifndef WM_CODEC_MQTT5_TOPIC_H
#define WM_CODEC_MQTT5_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/mqtt5_utf8.h"

/* Longest topic a UTF-8 Encoded String can carry (§1.5.4): 65,535 bytes. */
#define WM_TOPIC_MAX_LEN 65535u

typedef enum wm_topic_status {
    WM_TOPIC_OK = 0,
    WM_TOPIC_EMPTY,             /* zero length (§4.7.3: at least one character) */
    WM_TOPIC_TOO_LONG,          /* longer than 65,535 bytes (§1.5.4) */
    WM_TOPIC_BAD_UTF8,          /* ill-formed, overlong or surrogate UTF-8 (§1.5.4) */
    WM_TOPIC_NUL,               /* contains U+0000 (§4.7.3) */
    WM_TOPIC_WILDCARD_IN_NAME,  /* '+' or '#' in a topic name (§4.7.1) */
    WM_TOPIC_HASH_NOT_LAST,     /* '#' is followed by more levels (§4.7.1.2) */
    WM_TOPIC_HASH_NOT_ALONE,    /* '#' shares its level with other characters (§4.7.1.2) */
    WM_TOPIC_PLUS_NOT_ALONE,    /* '+' shares its level with other characters (§4.7.1.3) */
    WM_TOPIC_SHARE_EMPTY_NAME,  /* "$share/" followed by an empty ShareName (§4.8.2) */
    WM_TOPIC_SHARE_BAD_NAME,    /* ShareName contains '+' or '#' (§4.8.2) */
    WM_TOPIC_SHARE_NO_FILTER,   /* ShareName not followed by "/" and a non-empty filter (§4.8.2) */
} wm_topic_status;

/* Validates a topic name as carried in PUBLISH (§4.7): non-empty, at most
 * 65,535 bytes, valid UTF-8 without U+0000, no '+' or '#'. On failure
 * *err_off (if not NULL) receives the byte offset of the first bad byte
 * (0 for EMPTY, len for TOO_LONG). */
wm_topic_status wm_topic_name_validate(const char *s, size_t len, size_t *err_off);

/* Fast path of wm_topic_name_validate() for the common case, inline for
 * packet decoders: true when the name is non-empty plain ASCII without
 * U+0000, '+' or '#', which makes it valid. False says nothing: call
 * wm_topic_name_validate() for the verdict and the error position. */
static inline uint64_t wm_topic_word_bad_in_name(uint64_t w)
{
    /* A byte of w ^ ('+' x 8) is 0 iff that byte of w is '+'; the bytes are
     * below 0x80 when this matters (a high byte is already a hit). */
    return (w | (w - WM_UTF8_LO) | ((w ^ 0x2B2B2B2B2B2B2B2Bull) - WM_UTF8_LO) |
            ((w ^ 0x2323232323232323ull) - WM_UTF8_LO)) & WM_UTF8_HI;
}
/* The fast path described above: true only for a non-empty plain-ASCII name
 * without U+0000, '+' or '#'. Reads [s, s+len) only; pure. */
static inline __attribute__((always_inline)) bool wm_topic_name_is_plain(const char *s, size_t len)
{
    bool ok;
    if (len == 0) return false;
    WM_UTF8_SWAR_SCAN((const uint8_t *)s, len, wm_topic_word_bad_in_name, ok);
    return ok;
}

/* Validates a topic filter as carried in SUBSCRIBE/UNSUBSCRIBE (§4.7, §4.8.2):
 * the rules of names plus: '#' only as the whole last level, '+' only as a
 * whole level; "$share/{ShareName}/{filter}" needs a non-empty ShareName
 * without '+'/'#' and a valid non-empty filter after it. Errors and *err_off
 * as for wm_topic_name_validate(). */
wm_topic_status wm_topic_filter_validate(const char *s, size_t len, size_t *err_off);

/* A shared-subscription filter split into its parts (views into the input). */
typedef struct wm_topic_share {
    const char *name;    /* ShareName, not NUL-terminated */
    size_t name_len;
    const char *filter;  /* the Topic Filter after "$share/{ShareName}/" */
    size_t filter_len;
} wm_topic_share;

/* True when `s` starts with "$share/" (the filter is a shared subscription);
 * then *out (if not NULL) receives the ShareName and the inner filter. The
 * split is purely syntactic: validate with wm_topic_filter_validate() first. */
bool wm_topic_share_split(const char *s, size_t len, wm_topic_share *out);

/* Reference matching (§4.7.1, §4.7.2): does topic name `t` match topic filter
 * `f`? `f` must be a valid, non-shared filter (pass the inner filter of a
 * shared subscription) and `t` a valid name; otherwise the result is
 * unspecified but still memory-safe. Semantics:
 *   '+' matches exactly one level, which may be empty ("sport/+" matches "sport/");
 *   '#' matches the parent level and any number of levels below it
 *       ("sport/#" matches "sport", "sport/", "sport/a/b");
 *   a filter starting with '+' or '#' never matches a name starting with '$'
 *       ("#" does not match "$SYS/x"; "$SYS/#" does). */
bool wm_topic_match(const char *f, size_t flen, const char *t, size_t tlen);

/* A short, stable, lower-case name for a status ("hash_not_last", ...). */
const char *wm_topic_status_name(wm_topic_status st);

/* A one-line human explanation of a status, with its spec section. */
const char *wm_topic_status_message(wm_topic_status st);

#endif
