/* Topic names and filters (MQTT 5.0 §4.7, §4.8.2). See mqtt5_topic.h. */
#include "codec/mqtt5_topic.h"

#include <string.h>

#include "codec/mqtt5_utf8.h"

static const char SHARE_PREFIX[] = "$share/";
#define SHARE_PREFIX_LEN (sizeof SHARE_PREFIX - 1)

/* Checks length and UTF-8, the rules names and filters share. */
static wm_topic_status check_string(const char *s, size_t len, size_t *err_off)
{
    if (len == 0) { if (err_off) *err_off = 0; return WM_TOPIC_EMPTY; }
    if (len > WM_TOPIC_MAX_LEN) { if (err_off) *err_off = len; return WM_TOPIC_TOO_LONG; }
    switch (wm_utf8_validate((const uint8_t *)s, len, err_off)) {
    case WM_UTF8_OK: return WM_TOPIC_OK;
    case WM_UTF8_NUL: return WM_TOPIC_NUL;
    default: return WM_TOPIC_BAD_UTF8;
    }
}

wm_topic_status wm_topic_name_validate(const char *s, size_t len, size_t *err_off)
{
    wm_topic_status st = check_string(s, len, err_off);
    if (st != WM_TOPIC_OK) return st;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '+' || s[i] == '#') { if (err_off) *err_off = i; return WM_TOPIC_WILDCARD_IN_NAME; }
    return WM_TOPIC_OK;
}

/* Wildcard placement in a (non-shared) filter; offsets relative to s. */
static wm_topic_status check_wildcards(const char *s, size_t len, size_t *err_off)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '+' && s[i] != '#') continue;
        int starts_level = (i == 0 || s[i - 1] == '/');
        int ends_level = (i + 1 == len || s[i + 1] == '/');
        if (s[i] == '+') {
            if (!starts_level || !ends_level) { if (err_off) *err_off = i; return WM_TOPIC_PLUS_NOT_ALONE; }
        } else {
            if (!starts_level || (i + 1 < len && s[i + 1] != '/')) {
                if (err_off) *err_off = i;
                return WM_TOPIC_HASH_NOT_ALONE;
            }
            if (i + 1 != len) { if (err_off) *err_off = i; return WM_TOPIC_HASH_NOT_LAST; }
        }
    }
    return WM_TOPIC_OK;
}

bool wm_topic_share_split(const char *s, size_t len, wm_topic_share *out)
{
    if (len < SHARE_PREFIX_LEN || memcmp(s, SHARE_PREFIX, SHARE_PREFIX_LEN) != 0) return false;
    if (out) {
        const char *name = s + SHARE_PREFIX_LEN;
        size_t rest = len - SHARE_PREFIX_LEN;
        const char *slash = memchr(name, '/', rest);
        out->name = name;
        out->name_len = slash ? (size_t)(slash - name) : rest;
        out->filter = slash ? slash + 1 : name + rest;
        out->filter_len = slash ? rest - out->name_len - 1 : 0;
    }
    return true;
}

wm_topic_status wm_topic_filter_validate(const char *s, size_t len, size_t *err_off)
{
    wm_topic_status st = check_string(s, len, err_off);
    if (st != WM_TOPIC_OK) return st;
    wm_topic_share sh;
    if (!wm_topic_share_split(s, len, &sh)) return check_wildcards(s, len, err_off);

    size_t name_off = SHARE_PREFIX_LEN;
    if (sh.name_len == 0) { if (err_off) *err_off = name_off; return WM_TOPIC_SHARE_EMPTY_NAME; }
    for (size_t i = 0; i < sh.name_len; i++)
        if (sh.name[i] == '+' || sh.name[i] == '#') {
            if (err_off) *err_off = name_off + i;
            return WM_TOPIC_SHARE_BAD_NAME;
        }
    size_t filter_off = name_off + sh.name_len + 1;
    if (sh.name_len == len - name_off || sh.filter_len == 0) {
        if (err_off) *err_off = len;
        return WM_TOPIC_SHARE_NO_FILTER;
    }
    size_t inner_off = 0;
    st = check_wildcards(sh.filter, sh.filter_len, &inner_off);
    if (st != WM_TOPIC_OK && err_off) *err_off = filter_off + inner_off;
    return st;
}

bool wm_topic_match(const char *f, size_t flen, const char *t, size_t tlen)
{
    /* §4.7.2: wildcards at the first level do not reach names starting with '$'. */
    if (tlen > 0 && t[0] == '$' && flen > 0 && (f[0] == '+' || f[0] == '#')) return false;
    size_t i = 0, j = 0;
    for (;;) {
        /* Here i and j both stand at the start of a level. */
        if (i < flen && f[i] == '#') return true;
        if (i < flen && f[i] == '+') {
            i++;
            while (j < tlen && t[j] != '/') j++;
        } else {
            while (i < flen && f[i] != '/') {
                if (j >= tlen || t[j] != f[i]) return false;
                i++, j++;
            }
            if (j < tlen && t[j] != '/') return false;
        }
        if (i == flen) return j == tlen;
        /* f[i] == '/': the filter goes on. If the name has ended, only a final
         * "/#" still matches, because '#' also matches its parent level. */
        if (j == tlen) return flen - i == 2 && f[i + 1] == '#';
        i++, j++;
    }
}

const char *wm_topic_status_name(wm_topic_status st)
{
    switch (st) {
    case WM_TOPIC_OK: return "ok";
    case WM_TOPIC_EMPTY: return "empty";
    case WM_TOPIC_TOO_LONG: return "too_long";
    case WM_TOPIC_BAD_UTF8: return "bad_utf8";
    case WM_TOPIC_NUL: return "nul";
    case WM_TOPIC_WILDCARD_IN_NAME: return "wildcard_in_name";
    case WM_TOPIC_HASH_NOT_LAST: return "hash_not_last";
    case WM_TOPIC_HASH_NOT_ALONE: return "hash_not_alone";
    case WM_TOPIC_PLUS_NOT_ALONE: return "plus_not_alone";
    case WM_TOPIC_SHARE_EMPTY_NAME: return "share_empty_name";
    case WM_TOPIC_SHARE_BAD_NAME: return "share_bad_name";
    case WM_TOPIC_SHARE_NO_FILTER: return "share_no_filter";
    }
    return "unknown";
}

const char *wm_topic_status_message(wm_topic_status st)
{
    switch (st) {
    case WM_TOPIC_OK: return "valid";
    case WM_TOPIC_EMPTY: return "topic must be at least one character long (MQTT 5.0 4.7.3)";
    case WM_TOPIC_TOO_LONG: return "topic longer than 65535 bytes (MQTT 5.0 1.5.4)";
    case WM_TOPIC_BAD_UTF8: return "topic is not well-formed UTF-8 (MQTT 5.0 1.5.4)";
    case WM_TOPIC_NUL: return "topic contains U+0000 (MQTT 5.0 4.7.3)";
    case WM_TOPIC_WILDCARD_IN_NAME: return "wildcard '+' or '#' in a topic name (MQTT 5.0 4.7.1)";
    case WM_TOPIC_HASH_NOT_LAST: return "'#' must be the last level of a filter (MQTT 5.0 4.7.1.2)";
    case WM_TOPIC_HASH_NOT_ALONE: return "'#' must occupy a whole level (MQTT 5.0 4.7.1.2)";
    case WM_TOPIC_PLUS_NOT_ALONE: return "'+' must occupy a whole level (MQTT 5.0 4.7.1.3)";
    case WM_TOPIC_SHARE_EMPTY_NAME: return "$share needs a non-empty ShareName (MQTT 5.0 4.8.2)";
    case WM_TOPIC_SHARE_BAD_NAME: return "ShareName must not contain '+' or '#' (MQTT 5.0 4.8.2)";
    case WM_TOPIC_SHARE_NO_FILTER: return "ShareName must be followed by '/' and a topic filter (MQTT 5.0 4.8.2)";
    }
    return "unknown status";
}
