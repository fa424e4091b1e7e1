/* Fuzzes the parser of wirematch-proxy's --state file
 * (dataplane/proxy_state.h) into a real session registry (64 sessions of
 * at most 8 records, no --prefilter). Besides "no crash, no leak, nothing
 * read beyond the input", it checks what the format promises:
 *   - on failure the message names a position inside the input
 *     ("line L, column C: " with L <= lines + 1) and a reason;
 *   - on success what the registry then holds, taken by the saver's mirror
 *     (wm_proxy_state_sync) and written back (wm_proxy_state_format), parses
 *     again, and written once more gives the same text byte for byte: the
 *     file the proxy writes is the one it reads (a "live" session comes back
 *     as "never", a "live:N" one with the Unix time N s after now (never for
 *     0xFFFFFFFF), one of a file not written at a clean stop as incomplete
 *     with its next identifier moved on: the first rewrite settles them; the
 *     rewrites are written as at a clean stop, since each load of a clean 0
 *     file moves the identifiers on again);
 *   - every session restored with a Unix-time expiry is written back with
 *     that expiry, not another (one up to WM_PROXY_STATE_CLOCK_SLACK_S beyond
 *     WM_PROXY_STATE_MAX_EXPIRY_S after now as that bound; one further must
 *     have been refused): the sorted future expiries of the input's session
 *     lines and of the rewrite are equal.
 * Seeds: tests/fuzz/corpus/proxy_state. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int64_t NOW_RT = 1790000000;          /* seconds */
static const uint64_t NOW_MONO = 5000000000000ull;   /* ns */

/* Parses text[0..len) (a copy: the parser decodes in place) into a new
 * registry, tracked by a new mirror *m (as the saver's: made before the
 * load, synced after); returns it, or NULL after checking the error
 * message. */
static wm_proxy_registry *parse(const char *text, size_t len, wm_proxy_state_info *info, bool must_parse,
                                wm_proxy_state_mirror **m)
{
    wm_proxy_registry *g = wm_proxy_registry_new(NULL, 64, 8);
    if (!g || !(*m = wm_proxy_state_mirror_new(g))) abort();
    char *copy = malloc(len ? len : 1);
    if (!copy) abort();
    memcpy(copy, text, len);
    char err[512];
    err[0] = 0;
    int rc = wm_proxy_state_parse(copy, len, g, NOW_RT, NOW_MONO, info, err, sizeof err);
    free(copy);
    if (rc == 0) {
        if (wm_proxy_state_sync(*m)) abort();
        return g;
    }
    if (must_parse) {
        fprintf(stderr, "rewritten state refused: %s\n", err);
        abort();
    }
    uint64_t line, col, lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (sscanf(err, "line %" SCNu64 ", column %" SCNu64 ": ", &line, &col) != 2 || line < 1 || line > lines + 1 ||
        col < 1 || !strstr(err, ": ") || strlen(strstr(err, ": ")) < 3)
        abort();
    wm_proxy_state_mirror_free(*m);
    wm_proxy_registry_free(g);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The expiries after NOW_RT of the session lines of a text the parser
 * accepted ("session CID NEXT INC EXP", fields separated by one space),
 * sorted; returns how many (at most cap). An input's expiry within the clock
 * slack beyond the largest interval counts as that bound, as the loader takes
 * it; one beyond the slack, or a written one beyond the bound, aborts (the
 * loader must refuse the first, the writer never writes the second). */
static size_t future_expiries(const char *t, size_t len, int64_t *out, size_t cap, bool input)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && t[e] != '\n') e++;
        if (e - i > 8 && memcmp(t + i, "session ", 8) == 0) {
            size_t f = e;
            while (f > i && t[f - 1] != ' ') f--;
            int64_t x = 0;
            bool num = f < e;
            /* live:N (N < 0xFFFFFFFF): loaded as detached now, N s to go */
            size_t live = input && e - f > 5 && memcmp(t + f, "live:", 5) == 0 ? 5 : 0;
            f += live;
            for (size_t k = f; k < e; k++) {
                if (t[k] < '0' || t[k] > '9') num = false;
                else x = x * 10 + (t[k] - '0');
            }
            if (live) x = x >= 0xFFFFFFFF ? 0 : NOW_RT + x;
            if (num && x > NOW_RT && n < cap) {
                int64_t ahead = x - NOW_RT, max = (int64_t)WM_PROXY_STATE_MAX_EXPIRY_S;
                if (ahead > max + (input ? (int64_t)WM_PROXY_STATE_CLOCK_SLACK_S : 0)) abort();
                out[n++] = ahead > max ? NOW_RT + max : x;
            }
        }
        i = e + 1;
    }
    qsort(out, n, sizeof *out, cmp_i64);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0;
    wm_proxy_state_info info;
    wm_proxy_state_mirror *m, *m2;
    wm_proxy_registry *g = parse((const char *)data, size, &info, false, &m);
    if (!g) return 0;
    char *t1, *t2;
    size_t n1, n2;
    if (wm_proxy_state_format(m, info.epoch, true, NOW_RT, NOW_MONO, &t1, &n1)) abort();
    static int64_t e_in[64], e_out[64];
    size_t k_in = future_expiries((const char *)data, size, e_in, 64, true),
           k_out = future_expiries(t1, n1, e_out, 64, false);
    if (k_in != k_out || memcmp(e_in, e_out, k_in * sizeof *e_in) != 0) abort();
    wm_proxy_state_info info2;
    wm_proxy_registry *g2 = parse(t1, n1, &info2, true, &m2);
    if (info2.sessions != info.sessions || info2.records != info.records || info2.epoch != info.epoch) abort();
    if (!info2.clean) abort();
    if (wm_proxy_state_format(m2, info2.epoch, true, NOW_RT, NOW_MONO, &t2, &n2)) abort();
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) abort();
    free(t1);
    free(t2);
    wm_proxy_state_mirror_free(m2);
    wm_proxy_state_mirror_free(m);
    wm_proxy_registry_free(g2);
    wm_proxy_registry_free(g);
    return 0;
}
