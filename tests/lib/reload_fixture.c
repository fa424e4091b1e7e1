/* Files for the hot-reload tests (see reload_fixture.h). */
#include "tests/lib/reload_fixture.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/resolution.h"
#include "tests/lib/world_fixture.h"

const char *wm_test_tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/wm-reload-XXXXXX");
    return mkdtemp(dir);
}

static char *join(const char *dir, const char *file)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, file);
    return p;
}

char *wm_test_write_text(const char *dir, const char *file, const char *text)
{
    char *p = join(dir, file);
    FILE *f = p ? fopen(p, "wb") : NULL;
    if (!f) { free(p); return NULL; }
    bool ok = fputs(text, f) >= 0;
    if (fclose(f) != 0 || !ok) { free(p); return NULL; }
    return p;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

char *wm_test_write_wmr(const char *dir, const char *file, const wm_test_nbhd *nb, size_t n)
{
    wm_world_error we;
    wm_world *w = wm_test_small_world(&we);
    if (!w) { fprintf(stderr, "small world: %s\n", we.message); return NULL; }
    wm_resolution_builder *b = wm_resolution_builder_new(w);
    char *path = NULL;
    void *buf = NULL;
    size_t len = 0;
    bool ok = b != NULL;
    for (size_t k = 0; k < n && ok; k++) {
        uint32_t set[64];
        size_t m = 0;
        for (const char *const *p = nb[k].peids; *p && m < 64 && ok; p++) {
            int64_t idx = wm_world_find(w, *p, strlen(*p));
            if (idx < 0) { fprintf(stderr, "no peid %s in the small world\n", *p); ok = false; }
            else set[m++] = (uint32_t)idx;
        }
        qsort(set, m, sizeof *set, cmp_u32);
        wm_nbhd_result r = { .n_stages = 1, .visible = 1, .result = set, .result_len = m };
        r.stage[0] = set;
        r.stage_len[0] = m;
        wm_resolution_error re;
        if (ok && wm_resolution_builder_add(b, nb[k].name, &r, &re) != WM_RESOLUTION_OK) {
            fprintf(stderr, "builder: %s\n", re.message);
            ok = false;
        }
    }
    wm_resolution_error re;
    if (ok && wm_resolution_builder_finish(b, &buf, &len, &re) != WM_RESOLUTION_OK) {
        fprintf(stderr, "finish: %s\n", re.message);
        ok = false;
    }
    if (ok && !(path = join(dir, file))) ok = false;
    if (ok && wm_resolution_write_file(path, buf, len, &re) != WM_RESOLUTION_OK) {
        fprintf(stderr, "write: %s\n", re.message);
        free(path);
        path = NULL;
    }
    free(buf);
    wm_resolution_builder_free(b);
    wm_world_free(w);
    return path;
}
