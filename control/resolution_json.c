/* Resolution files as JSON (wmctl dump, wmctl resolve --json): one printer for
 * both, so the two outputs cannot drift apart. Strings are escaped by jansson. */
#include <jansson.h>
#include <stdlib.h>

#include "control/resolution.h"

static int put_string(FILE *out, const char *s)
{
    json_t *j = json_string(s);
    if (!j) return -1; /* not UTF-8: never the case for validated files */
    int rc = json_dumpf(j, out, JSON_ENCODE_ANY);
    json_decref(j);
    return rc;
}

static int put_set(const wm_resolution *r, FILE *out, const uint32_t *v, uint32_t n)
{
    if (fputc('[', out) == EOF) return -1;
    for (uint32_t m = 0; m < n; m++) {
        if (m && fputc(',', out) == EOF) return -1;
        if (put_string(out, wm_resolution_peid(r, v[m]))) return -1;
    }
    return fputc(']', out) == EOF ? -1 : 0;
}

int wm_resolution_print_json(const wm_resolution *r, FILE *out)
{
    uint32_t n = wm_resolution_count(r);
    if (fputs(n ? "{\n" : "{", out) == EOF) return -1;
    for (uint32_t i = 0; i < n; i++) {
        wm_resolution_nbhd nb;
        wm_resolution_get(r, i, &nb);
        fputc(' ', out);
        if (put_string(out, nb.name) || fputs(": {\"result\":", out) == EOF ||
            put_set(r, out, nb.result, nb.result_len) || fputs(",\"stages\":{", out) == EOF)
            return -1;
        for (uint32_t s = 1; s <= nb.n_stages; s++) {
            uint32_t len;
            const uint32_t *v = wm_resolution_stage(r, i, s, &len);
            if (fprintf(out, "%s\"%u\":", s > 1 ? "," : "", s) < 0 || put_set(r, out, v, len)) return -1;
        }
        if (fputs(i + 1 < n ? "}},\n" : "}}\n", out) == EOF) return -1;
    }
    if (fputs("}\n", out) == EOF) return -1;
    return ferror(out) ? -1 : 0;
}
