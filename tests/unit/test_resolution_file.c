/* Resolution files (control/resolution.h, control/RESOLUTION_FORMAT.md):
 * round trip through memory and through an mmap-ed file, and a precise
 * failure (never a crash, never acceptance) for every truncation, every
 * flipped byte, wrong magic/version, and structural corruption behind valid
 * checksums. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "control/resolution.h"
#include "control/resolver.h"
#include "tests/lib/world_fixture.h"

static wm_world *w;
static uint8_t *file;   /* a valid resolution of NBHDS */
static size_t file_len;

static const char *const NBHDS[] = {
    "B: ({sq1}, {zone}, T) . (Anc, {zone}, T)",
    "A: ({sq1}, {shop/#}, C) . (Anc, {zone}, I) . (Anc, {#}, T) visible {1,3}",
    "C: ({far}, {road/#}, I)",
};
#define N_NBHDS (sizeof NBHDS / sizeof NBHDS[0])

static void setup(void)
{
    wm_world_error we;
    w = wm_test_small_world(&we);
    cr_assert(w, "%s", we.message);
    wm_resolution_builder *b = wm_resolution_builder_new(w);
    for (size_t k = 0; k < N_NBHDS; k++) {
        wm_nbhd n;
        wm_nbhd_result r;
        cr_assert_eq(wm_nbhd_parse_one(NBHDS[k], strlen(NBHDS[k]), &n, NULL), WM_NBHD_OK);
        cr_assert_eq(wm_resolve(w, &n, &r, NULL), WM_NBHD_OK);
        cr_assert_eq(wm_resolution_builder_add(b, n.name, &r, NULL), WM_RESOLUTION_OK);
        wm_nbhd_result_free(&r);
        wm_nbhd_free(&n);
    }
    void *buf;
    cr_assert_eq(wm_resolution_builder_finish(b, &buf, &file_len, NULL), WM_RESOLUTION_OK);
    file = buf;
    wm_resolution_builder_free(b);
}

static void teardown(void)
{
    free(file);
    wm_world_free(w);
}

TestSuite(resolution_file, .init = setup, .fini = teardown);

static uint8_t *copy(size_t len)
{
    uint8_t *c = malloc(len ? len : 1);
    memcpy(c, file, len < file_len ? len : file_len);
    return c;
}

static void fix_crcs(uint8_t *b, size_t len)
{
    uint32_t c = (uint32_t)crc32(0, b + 64, (uInt)(len - 64));
    memcpy(b + 52, &c, 4);
    c = (uint32_t)crc32(0, b, 60);
    memcpy(b + 60, &c, 4);
}

static wm_resolution_status load_status(const uint8_t *b, size_t len, wm_resolution_error *err)
{
    wm_resolution *r = wm_resolution_view(b, len, err);
    if (r) { wm_resolution_close(r); return WM_RESOLUTION_OK; }
    cr_assert_neq(err->status, WM_RESOLUTION_OK);
    cr_assert(err->message[0]);
    return err->status;
}

static char *render(const wm_resolution *r, uint32_t i, uint32_t stage)
{
    static char out[256];
    uint32_t len;
    const uint32_t *v;
    wm_resolution_nbhd nb;
    wm_resolution_get(r, i, &nb);
    if (stage) v = wm_resolution_stage(r, i, stage, &len);
    else { v = nb.result; len = nb.result_len; }
    out[0] = 0;
    for (uint32_t k = 0; k < len; k++) {
        strcat(out, k ? " " : "");
        strcat(out, wm_resolution_peid(r, v[k]));
    }
    return out;
}

static void check_content(const wm_resolution *r)
{
    cr_assert_eq(wm_resolution_count(r), 3);
    wm_resolution_nbhd nb;
    cr_assert_eq(wm_resolution_get(r, 0, &nb), 0);
    cr_expect_str_eq(nb.name, "B", "file order is source order");
    cr_expect_eq(nb.n_stages, 2);
    cr_expect_str_eq(render(r, 0, 1), "sq2");
    cr_expect_str_eq(render(r, 0, 2), "dup sq1");
    cr_expect_str_eq(render(r, 0, 0), "dup sq1 sq2");
    cr_assert_eq(wm_resolution_get(r, 1, &nb), 0);
    cr_expect_eq(nb.visible, 0x5);
    cr_expect_str_eq(render(r, 1, 0), "l1 p_edge p_in sq2");
    cr_expect_str_eq(render(r, 1, 2), "dup sq1");
    cr_expect_str_eq(render(r, 2, 0), "");
    cr_expect_eq(wm_resolution_find(r, "A"), 1);
    cr_expect_eq(wm_resolution_find(r, "C"), 2);
    cr_expect_eq(wm_resolution_find(r, "D"), -1);
    uint32_t len;
    cr_expect_null(wm_resolution_stage(r, 0, 3, &len));
    cr_expect_null(wm_resolution_stage(r, 0, 0, &len));
    cr_expect_eq(wm_resolution_get(r, 3, &nb), -1);
    /* The dictionary holds only the peids used, in byte order. */
    cr_expect_eq(wm_resolution_peid_count(r), 6);
    for (uint32_t i = 1; i < wm_resolution_peid_count(r); i++)
        cr_expect_lt(strcmp(wm_resolution_peid(r, i - 1), wm_resolution_peid(r, i)), 0);
}

Test(resolution_file, round_trip_in_memory_and_mmap)
{
    wm_resolution_error err;
    wm_resolution *r = wm_resolution_view(file, file_len, &err);
    cr_assert(r, "%s", err.message);
    check_content(r);
    wm_resolution_close(r);

    char path[] = "/tmp/wm_test_resolution_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(wm_resolution_write_file(path, file, file_len, &err), WM_RESOLUTION_OK, "%s", err.message);
    r = wm_resolution_open(path, &err);
    cr_assert(r, "%s", err.message);
    check_content(r);
    wm_resolution_close(r);
    unlink(path);
    cr_expect_null(wm_resolution_open(path, &err));
    cr_expect_eq(err.status, WM_RESOLUTION_ERR_IO);
}

Test(resolution_file, every_truncation_fails)
{
    for (size_t len = 0; len < file_len; len++) {
        uint8_t *b = copy(len);
        wm_resolution_error err;
        wm_resolution_status st = load_status(b, len, &err);
        cr_expect(st == WM_RESOLUTION_ERR_TRUNCATED, "length %zu: %s (%s)", len, wm_resolution_status_name(st), err.message);
        free(b);
    }
}

Test(resolution_file, every_flipped_byte_fails)
{
    for (size_t at = 0; at < file_len; at++) {
        for (int bit = 0; bit < 8; bit += 7) {
            uint8_t *b = copy(file_len);
            b[at] ^= (uint8_t)(1u << bit);
            wm_resolution_error err;
            wm_resolution_status st = load_status(b, file_len, &err);
            cr_expect_neq(st, WM_RESOLUTION_OK, "byte %zu bit %d accepted", at, bit);
            if (at >= 64) cr_expect_eq(st, WM_RESOLUTION_ERR_CHECKSUM, "byte %zu: %s", at, err.message);
            free(b);
        }
    }
}

Test(resolution_file, magic_version_alignment_and_trailing_bytes)
{
    wm_resolution_error err;
    uint8_t *b = copy(file_len);
    b[1] = 'X';
    cr_expect_eq(load_status(b, file_len, &err), WM_RESOLUTION_ERR_MAGIC);
    free(b);

    b = copy(file_len);
    b[8] = 2;
    fix_crcs(b, file_len);
    cr_expect_eq(load_status(b, file_len, &err), WM_RESOLUTION_ERR_VERSION);
    cr_expect(strstr(err.message, "version 2"), "%s", err.message);
    cr_expect_eq(err.offset, 8);
    free(b);

    b = malloc(file_len + 8);
    memcpy(b + 4, file, file_len);
    cr_expect_eq(load_status(b + 4, file_len, &err), WM_RESOLUTION_ERR_ALIGN);
    free(b);

    b = calloc(1, file_len + 8);
    memcpy(b, file, file_len);
    cr_expect_eq(load_status(b, file_len + 8, &err), WM_RESOLUTION_ERR_CORRUPT, "trailing bytes: %s", err.message);
    free(b);

    static _Alignas(8) const char hello[] = "hello", text[] = "hello world, not a resolution";
    cr_expect_eq(load_status((const uint8_t *)hello, 5, &err), WM_RESOLUTION_ERR_TRUNCATED);
    cr_expect_eq(load_status((const uint8_t *)text, 29, &err), WM_RESOLUTION_ERR_MAGIC);
}

/* Structure checks behind valid checksums: each edit, with CRCs fixed, is
 * refused as corrupt at the edited field's offset. */
Test(resolution_file, structural_corruption_behind_valid_checksums)
{
    uint32_t n_peids, n_nbhds, n_sets;
    uint64_t n_members;
    memcpy(&n_peids, file + 24, 4);
    memcpy(&n_nbhds, file + 28, 4);
    memcpy(&n_members, file + 32, 8);
    memcpy(&n_sets, file + 48, 4);
    size_t o_nbhds = 64 + ((4 * n_peids + 7) & ~7u);
    size_t o_names = o_nbhds + 24 * n_nbhds;
    size_t o_sets = o_names + ((4 * n_nbhds + 7) & ~7u);
    size_t o_members = o_sets + 16 * n_sets;
    struct { size_t at; uint32_t value; const char *what; } edits[] = {
        { 64, 0xffffff, "peid string offset out of range" },
        { 68, 0, "peids out of order (second = first)" },
        { o_nbhds + 4, 0, "zero stages" },
        { o_nbhds + 4, 65, "65 stages" },
        { o_nbhds + 8, 0x8, "visible bit beyond k" },
        { o_nbhds + 8, 0, "nothing visible" },
        { o_nbhds + 16, 1, "sets not consecutive" },
        { o_names, 2, "name index not sorted" },
        { o_names, 7, "name index out of range" },
        { o_sets + 8, 1000, "set past the members" },
        { o_members, 1000, "member index beyond the dictionary" },
    };
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        uint8_t *b = copy(file_len);
        memcpy(b + edits[k].at, &edits[k].value, 4);
        fix_crcs(b, file_len);
        wm_resolution_error err;
        cr_expect_eq(load_status(b, file_len, &err), WM_RESOLUTION_ERR_CORRUPT, "%s: %s", edits[k].what, err.message);
        free(b);
    }
    /* Counts that do not add up to the file size. */
    uint8_t *b = copy(file_len);
    uint32_t more = n_sets + 1;
    memcpy(b + 48, &more, 4);
    fix_crcs(b, file_len);
    wm_resolution_error err;
    cr_expect_eq(load_status(b, file_len, &err), WM_RESOLUTION_ERR_CORRUPT, "%s", err.message);
    free(b);
}

Test(resolution_file, builder_refuses_duplicate_names)
{
    wm_resolution_builder *b = wm_resolution_builder_new(w);
    wm_nbhd_result r;
    cr_assert_eq(wm_resolve_text(w, "X: ({sq1}, {zone}, T)", 21, &r, NULL), WM_NBHD_OK);
    cr_assert_eq(wm_resolution_builder_add(b, "X", &r, NULL), WM_RESOLUTION_OK);
    cr_assert_eq(wm_resolution_builder_add(b, "X", &r, NULL), WM_RESOLUTION_OK);
    void *buf;
    size_t len;
    wm_resolution_error err;
    cr_expect_eq(wm_resolution_builder_finish(b, &buf, &len, &err), WM_RESOLUTION_ERR_DUP_NAME);
    cr_expect_null(buf);
    wm_nbhd_result_free(&r);
    wm_resolution_builder_free(b);
}
