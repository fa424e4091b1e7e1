/* Fuzzes topic validation and the reference matcher (MQTT 5.0 §4.7, §4.8.2).
 * Input: a filter and a name separated by the first 0xFF byte (0xFF never
 * occurs in UTF-8, so valid strings on both sides can be reached). Besides
 * "no crash", it checks laws the spec implies:
 *   - a valid name, used as a filter, is valid and matches itself;
 *   - "#" matches every valid name not starting with '$' (§4.7.2);
 *   - a filter matching a name also matches it with its last level replaced by
 *     "#" (when the name does not start with '$' or the filter has >1 level);
 *   - validation offsets lie within the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr(data, 0xFF, size);
    size_t flen = sep ? (size_t)(sep - data) : size;
    const char *f = (const char *)data;
    const char *t = sep ? (const char *)sep + 1 : (const char *)data;
    size_t tlen = sep ? size - flen - 1 : size;

    size_t off = 0;
    wm_topic_status fs = wm_topic_filter_validate(f, flen, &off);
    if (fs != WM_TOPIC_OK && off > flen) abort();
    wm_topic_status ns = wm_topic_name_validate(t, tlen, &off);
    if (ns != WM_TOPIC_OK && off > tlen) abort();

    if (ns == WM_TOPIC_OK) {
        if (wm_topic_filter_validate(t, tlen, NULL) != WM_TOPIC_OK && !wm_topic_share_split(t, tlen, NULL)) abort();
        if (!wm_topic_match(t, tlen, t, tlen)) abort();
        if (t[0] != '$' && !wm_topic_match("#", 1, t, tlen)) abort();
        if (t[0] == '$' && wm_topic_match("#", 1, t, tlen)) abort();
    }
    if (fs == WM_TOPIC_OK) {
        wm_topic_share sh;
        const char *inner = f; size_t ilen = flen;
        if (wm_topic_share_split(f, flen, &sh)) { inner = sh.filter; ilen = sh.filter_len; }
        bool m = wm_topic_match(inner, ilen, t, tlen);
        if (m && ns == WM_TOPIC_OK) {
            /* Replace the filter's last level by '#': the result must still match. */
            const char *slash = memrchr(inner, '/', ilen);
            if (slash) {
                size_t plen = (size_t)(slash - inner) + 1;
                char *g = malloc(plen + 1);
                memcpy(g, inner, plen);
                g[plen] = '#';
                if (!wm_topic_match(g, plen + 1, t, tlen)) { free(g); abort(); }
                free(g);
            }
        }
    }
    return 0;
}
