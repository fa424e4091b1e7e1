/* Resolution files (control/resolution.h, control/RESOLUTION_FORMAT.md):
 * round trip through memory and through an mmap-ed file, and a precise
 * failure (never a crash, never acceptance) for every truncation, every
 * flipped byte, wrong magic/version, and structural corruption behind valid
 * checksums. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* REVIEW12 #31: the atomic replace renamed its temporary file over whatever
 * the path was. A symlink is followed (its target replaced, the link kept);
 * a FIFO or device is written as it is, never replaced by a regular file. */
static char *tmpdir_with(const char *name, char *out, size_t cap)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/wm_test_out_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(out, cap, "%s/%s", dir, name);
    return dir;
}

static void rm_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

Test(resolution_file, write_follows_a_symlink_to_its_target)
{
    char link[128], target[160], dangling[160];
    char *dir = tmpdir_with("link.wmr", link, sizeof link);
    snprintf(target, sizeof target, "%s/data/target.wmr", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.wmr", dir);
    char sub[96];
    snprintf(sub, sizeof sub, "%s/data", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    FILE *f = fopen(target, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(symlink("data/target.wmr", link), 0);
    cr_assert_eq(symlink("data/new.wmr", dangling), 0);
    wm_resolution_error err;
    cr_assert_eq(wm_resolution_write_file(link, file, file_len, &err), WM_RESOLUTION_OK, "%s", err.message);
    cr_assert_eq(wm_resolution_write_file(dangling, file, file_len, &err), WM_RESOLUTION_OK, "%s", err.message);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link is kept");
    cr_assert_eq(lstat(dangling, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "a dangling link is kept and its target created");
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq((size_t)st.st_size, file_len, "the link's target holds the file");
    snprintf(target, sizeof target, "%s/data/new.wmr", dir);
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq((size_t)st.st_size, file_len);
    wm_resolution *r = wm_resolution_open(link, &err);
    cr_assert(r, "%s", err.message);
    check_content(r);
    wm_resolution_close(r);
    rm_dir(dir);
}

Test(resolution_file, write_to_a_fifo_writes_it_in_place)
{
    char fifo[128];
    char *dir = tmpdir_with("out.fifo", fifo, sizeof fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);   /* the reader, so the writer's open does not wait */
    cr_assert_geq(rd, 0);
    wm_resolution_error err;
    cr_assert_lt(file_len, 65536, "fits the pipe's buffer");
    cr_assert_eq(wm_resolution_write_file(fifo, file, file_len, &err), WM_RESOLUTION_OK, "%s", err.message);
    uint8_t *got = malloc(file_len + 1);
    cr_assert_eq(read(rd, got, file_len + 1), (ssize_t)file_len);
    cr_expect_eq(memcmp(got, file, file_len), 0);
    free(got);
    close(rd);
    struct stat st;
    cr_assert_eq(lstat(fifo, &st), 0);
    cr_expect(S_ISFIFO(st.st_mode), "still a FIFO, not a regular file");
    rm_dir(dir);
}

/* A private copy of /dev/full as root: the write fails with ENOSPC and the
 * node stays a character device. Without the right to mknod, the machine's
 * own /dev/full, which such a user cannot replace either: the same checks. */
Test(resolution_file, write_to_a_full_device_fails_and_keeps_the_node)
{
    char node[128];
    char *dir = tmpdir_with("full", node, sizeof node);
    if (mknod(node, S_IFCHR | 0600, makedev(1, 7)) != 0) {
        cr_assert(geteuid() != 0, "mknod failed as root: %s", strerror(errno));
        snprintf(node, sizeof node, "/dev/full");
    }
    wm_resolution_error err;
    cr_expect_eq(wm_resolution_write_file(node, file, file_len, &err), WM_RESOLUTION_ERR_IO);
    cr_expect(strstr(err.message, strerror(ENOSPC)), "%s", err.message);
    struct stat st;
    cr_assert_eq(lstat(node, &st), 0);
    cr_expect(S_ISCHR(st.st_mode), "still a character device");
    cr_expect_eq(wm_resolution_write_file(dir, file, file_len, &err), WM_RESOLUTION_ERR_IO, "a directory is refused");
    cr_expect(strstr(err.message, strerror(EISDIR)), "%s", err.message);
    rm_dir(dir);
}
