/* libFuzzer target: the `wmctl match` input path (control/match_input.h)
 * down to the matcher's subscription add and lookup.
 *
 * Input: lines; the first byte of each picks the parser for the rest:
 *   'F' a FILTERS document, 'S' a SUBS line, 'P' a PUBS line,
 *   'R' removes the subscription added N-th (N = next byte) and reclaims.
 * Every call must either succeed or fail with a message; nothing may
 * crash, leak or read out of bounds, and a rejected line must leave the
 * matcher usable (the P lines after it keep running). */
#include <stdint.h>
#include <string.h>

#include "control/match_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wm_matcher_config cfg = { .max_subs = 64, .max_nbhds = 16, .max_peids = 256, .max_groups = 16, .max_levels = 16 };
    wm_match_input *in = wm_match_input_new(&cfg);
    if (!in) return 0;
    char err[256];
    const char *p = (const char *)data, *end = p + size;
    long lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        lineno++;
        if (e > p) {
            const char *body = p + 1;
            size_t len = (size_t)(e - body);
            const char *out;
            switch (*p) {
            case 'F': wm_match_input_filters(in, body, len, err, sizeof err); break;
            case 'S': wm_match_input_sub(in, body, len, lineno, err, sizeof err); break;
            case 'P':
                if (wm_match_input_pub(in, body, len, &out, err, sizeof err) == 0 && out && strncmp(out, "{\"matched\": [", 13) != 0)
                    __builtin_trap();
                break;
            case 'R':
                if (len) wm_matcher_sub_remove(wm_match_input_matcher(in), (uint8_t)body[0]);
                wm_matcher_reclaim(wm_match_input_matcher(in), true);
                break;
            default: break;
            }
        }
        p = e + 1;
    }
    wm_match_input_free(in);
    return 0;
}
