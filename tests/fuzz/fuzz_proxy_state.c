/* Fuzzes the parser of wirematch-proxy's --state file
 * (dataplane/proxy_state.h) into a real session registry (64 sessions of
 * at most 8 records, no --prefilter). Besides "no crash, no leak, nothing
 * read beyond the input", it checks what the format promises:
 *   - on failure the message names a position inside the input
 *     ("line L, column C: " with L <= lines + 1) and a reason;
 *   - on success what the registry then holds, taken by the saver's mirror
 *     (wm_proxy_state_sync) and written back (wm_proxy_state_format), parses again, and written once more gives the
 *     same text byte for byte: the file the proxy writes is the one it reads
 *     (a "live" session comes back as "never", one of a file not written at a
 *     clean stop as incomplete: the first rewrite settles both).
 * Seeds: tests/fuzz/corpus/proxy_state. */
#include <inttypes.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0;
    wm_proxy_state_info info;
    wm_proxy_state_mirror *m, *m2;
    wm_proxy_registry *g = parse((const char *)data, size, &info, false, &m);
    if (!g) return 0;
    char *t1, *t2;
    size_t n1, n2;
    if (wm_proxy_state_format(m, info.epoch, info.clean, NOW_RT, NOW_MONO, &t1, &n1)) abort();
    wm_proxy_state_info info2;
    wm_proxy_registry *g2 = parse(t1, n1, &info2, true, &m2);
    if (info2.sessions != info.sessions || info2.records != info.records || info2.epoch != info.epoch) abort();
    if (wm_proxy_state_format(m2, info2.epoch, info2.clean, NOW_RT, NOW_MONO, &t2, &n2)) abort();
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) abort();
    free(t1);
    free(t2);
    wm_proxy_state_mirror_free(m2);
    wm_proxy_state_mirror_free(m);
    wm_proxy_registry_free(g2);
    wm_proxy_registry_free(g);
    return 0;
}
