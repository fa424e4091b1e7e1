/* Resolution files: writer and validating reader. The byte layout is
 * specified in control/RESOLUTION_FORMAT.md; the constants and field order
 * here must follow it.
 */
#include "control/resolution.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "codec/crc32.h"
#include "control/out_path.h"
#include "control/world_impl.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "resolution files are little-endian and mapped in place: port the reader first"
#endif

#define NBHD_REC 24u
#define SET_REC 16u

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static wm_resolution_status set_err(wm_resolution_error *err, wm_resolution_status st, uint64_t off,
                                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static wm_resolution_status set_err(wm_resolution_error *err, wm_resolution_status st, uint64_t off,
                                    const char *fmt, ...)
{
    if (!err) return st;
    err->status = st;
    err->offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return st;
}

/* ------------------------------------------------------------ builder */

typedef struct bnbhd {
    char *name;
    uint32_t k;
    uint64_t visible;
    uint32_t *sets[WM_NBHD_MAX_STAGES + 1]; /* [0] result, [i] stage i; world entity indices */
    uint32_t len[WM_NBHD_MAX_STAGES + 1];
} bnbhd;

struct wm_resolution_builder {
    const wm_world *w;
    bnbhd *n;
    size_t count, cap;
    uint64_t members;
};

wm_resolution_builder *wm_resolution_builder_new(const wm_world *world)
{
    wm_resolution_builder *b = calloc(1, sizeof *b);
    if (b) b->w = world;
    return b;
}

void wm_resolution_builder_free(wm_resolution_builder *b)
{
    if (!b) return;
    for (size_t j = 0; j < b->count; j++) {
        free(b->n[j].name);
        for (uint32_t s = 0; s <= b->n[j].k; s++) free(b->n[j].sets[s]);
    }
    free(b->n);
    free(b);
}

static uint32_t *dup_u32(const uint32_t *v, size_t n)
{
    uint32_t *d = malloc((n ? n : 1) * sizeof *d);
    if (d && n) memcpy(d, v, n * sizeof *d);
    return d;
}

wm_resolution_status wm_resolution_builder_add(wm_resolution_builder *b, const char *name, const wm_nbhd_result *r,
                                               wm_resolution_error *err)
{
    if (!name || !*name) return set_err(err, WM_RESOLUTION_ERR_CORRUPT, 0, "empty neighborhood name");
    if (r->n_stages < 1 || r->n_stages > WM_NBHD_MAX_STAGES)
        return set_err(err, WM_RESOLUTION_ERR_LIMIT, 0, "%s: %zu stages (1..%u)", name, r->n_stages, WM_NBHD_MAX_STAGES);
    if (b->count >= UINT32_MAX / (WM_NBHD_MAX_STAGES + 1))
        return set_err(err, WM_RESOLUTION_ERR_LIMIT, 0, "too many neighborhoods");
    /* Duplicate names are caught at finish (sorted); the parser already refuses them. */
    if (b->count == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        bnbhd *nn = realloc(b->n, nc * sizeof *nn);
        if (!nn) return set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
        b->n = nn;
        b->cap = nc;
    }
    bnbhd *n = &b->n[b->count];
    memset(n, 0, sizeof *n);
    n->k = (uint32_t)r->n_stages;
    n->visible = r->visible & (n->k >= 64 ? ~0ull : ((1ull << n->k) - 1));
    bool ok = (n->name = strdup(name)) != NULL;
    ok = ok && (n->sets[0] = dup_u32(r->result, r->result_len));
    n->len[0] = (uint32_t)r->result_len;
    for (uint32_t s = 1; s <= n->k && ok; s++) {
        ok = (n->sets[s] = dup_u32(r->stage[s - 1], r->stage_len[s - 1])) != NULL;
        n->len[s] = (uint32_t)r->stage_len[s - 1];
    }
    if (!ok) {
        free(n->name);
        for (uint32_t s = 0; s <= n->k; s++) free(n->sets[s]);
        return set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
    }
    for (uint32_t s = 0; s <= n->k; s++) b->members += n->len[s];
    b->count++;
    return WM_RESOLUTION_OK;
}

static const bnbhd *sort_base;
static int cmp_name(const void *a, const void *b)
{
    return strcmp(sort_base[*(const uint32_t *)a].name, sort_base[*(const uint32_t *)b].name);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

wm_resolution_status wm_resolution_builder_finish(wm_resolution_builder *b, void **out, size_t *out_len,
                                                  wm_resolution_error *err)
{
    *out = NULL;
    *out_len = 0;
    const wm_world *w = b->w;
    /* The dictionary: world entities used by any set. World indices are in
     * peid byte order, so ascending indices give a sorted dictionary. */
    uint32_t *remap = calloc(w->n ? w->n : 1, sizeof *remap); /* entity -> dict index + 1 */
    uint32_t *name_idx = malloc((b->count ? b->count : 1) * sizeof *name_idx);
    if (!remap || !name_idx) {
        free(remap); free(name_idx);
        return set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
    }
    uint64_t n_sets = 0;
    for (size_t j = 0; j < b->count; j++) {
        n_sets += b->n[j].k + 1;
        for (uint32_t s = 0; s <= b->n[j].k; s++)
            for (uint32_t m = 0; m < b->n[j].len[s]; m++) remap[b->n[j].sets[s][m]] = 1;
    }
    uint32_t n_peids = 0;
    uint64_t strings = 0;
    for (size_t e = 0; e < w->n; e++)
        if (remap[e]) { remap[e] = ++n_peids; strings += w->peid_len[e] + 1; }
    for (size_t j = 0; j < b->count; j++) { strings += strlen(b->n[j].name) + 1; name_idx[j] = (uint32_t)j; }
    sort_base = b->n;
    qsort(name_idx, b->count, sizeof *name_idx, cmp_name);
    for (size_t j = 1; j < b->count; j++)
        if (!strcmp(b->n[name_idx[j]].name, b->n[name_idx[j - 1]].name)) {
            set_err(err, WM_RESOLUTION_ERR_DUP_NAME, 0, "neighborhood name \"%.200s\" added twice",
                    b->n[name_idx[j]].name);
            free(remap);
            free(name_idx);
            return WM_RESOLUTION_ERR_DUP_NAME;
        }
    if (n_sets > UINT32_MAX || b->members > UINT32_MAX * 4ull) {
        free(remap); free(name_idx);
        return set_err(err, WM_RESOLUTION_ERR_LIMIT, 0, "too many sets or members");
    }
    uint64_t o_peids = WM_RESOLUTION_HEADER_SIZE;
    uint64_t o_nbhds = o_peids + pad8(4ull * n_peids);
    uint64_t o_names = o_nbhds + pad8((uint64_t)NBHD_REC * b->count);
    uint64_t o_sets = o_names + pad8(4ull * b->count);
    uint64_t o_members = o_sets + pad8(SET_REC * n_sets);
    uint64_t o_strings = o_members + pad8(4ull * b->members);
    uint64_t size = o_strings + pad8(strings);
    if (size > WM_RESOLUTION_MAX_BYTES) {
        free(remap); free(name_idx);
        return set_err(err, WM_RESOLUTION_ERR_LIMIT, 0, "file of %llu bytes too large", (unsigned long long)size);
    }
    uint8_t *f = calloc(1, size);
    if (!f) {
        free(remap); free(name_idx);
        return set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
    }
    uint64_t so = 0; /* next free byte in the string section */
    for (size_t e = 0; e < w->n; e++) {
        if (!remap[e]) continue;
        put32(f + o_peids + 4ull * (remap[e] - 1), (uint32_t)so);
        memcpy(f + o_strings + so, w->peid[e], w->peid_len[e] + 1);
        so += w->peid_len[e] + 1;
    }
    uint64_t set = 0, mem = 0;
    for (size_t j = 0; j < b->count; j++) {
        const bnbhd *n = &b->n[j];
        uint8_t *rec = f + o_nbhds + (uint64_t)NBHD_REC * j;
        size_t nl = strlen(n->name) + 1;
        put32(rec, (uint32_t)so);
        memcpy(f + o_strings + so, n->name, nl);
        so += nl;
        put32(rec + 4, n->k);
        put64(rec + 8, n->visible);
        put64(rec + 16, set);
        for (uint32_t s = 0; s <= n->k; s++, set++) {
            put64(f + o_sets + SET_REC * set, mem);
            put64(f + o_sets + SET_REC * set + 8, n->len[s]);
            for (uint32_t m = 0; m < n->len[s]; m++, mem++) put32(f + o_members + 4 * mem, remap[n->sets[s][m]] - 1);
        }
        put32(f + o_names + 4ull * j, name_idx[j]);
    }
    free(remap);
    free(name_idx);
    memcpy(f, WM_RESOLUTION_MAGIC, 8);
    put32(f + 8, WM_RESOLUTION_VERSION);
    put32(f + 12, WM_RESOLUTION_HEADER_SIZE);
    put64(f + 16, size);
    put32(f + 24, n_peids);
    put32(f + 28, (uint32_t)b->count);
    put64(f + 32, b->members);
    put64(f + 40, strings);
    put32(f + 48, (uint32_t)n_sets);
    put32(f + 52, wm_crc32(f + WM_RESOLUTION_HEADER_SIZE, size - WM_RESOLUTION_HEADER_SIZE));
    put32(f + 56, 0);
    put32(f + 60, wm_crc32(f, 60));
    *out = f;
    *out_len = (size_t)size;
    return WM_RESOLUTION_OK;
}

static bool write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) { errno = EIO; return false; }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* A device or FIFO has no directory entry to swap: written as it is. */
static wm_resolution_status write_in_place(const char *path, const void *buf, size_t len, wm_resolution_error *err)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return set_err(err, WM_RESOLUTION_ERR_IO, 0, "%s", strerror(errno));
    bool ok = write_all(fd, buf, len);
    int saved = errno;
    if (close(fd) != 0 && ok) ok = false, saved = errno;
    return ok ? WM_RESOLUTION_OK : set_err(err, WM_RESOLUTION_ERR_IO, 0, "%s", strerror(saved));
}

wm_resolution_status wm_resolution_write_file(const char *path, const void *buf, size_t len, wm_resolution_error *err)
{
    char *target;
    bool in_place;
    int e = wm_out_path_resolve(path, &target, &in_place);
    if (e) return set_err(err, WM_RESOLUTION_ERR_IO, 0, "%s", strerror(e));
    if (in_place) {
        wm_resolution_status st = write_in_place(target, buf, len, err);
        free(target);
        return st;
    }
    size_t pl = strlen(target);
    char *tmp = malloc(pl + 16);
    if (!tmp) {
        free(target);
        return set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
    }
    snprintf(tmp, pl + 16, "%s.tmpXXXXXX", target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, WM_RESOLUTION_ERR_IO, 0, "cannot create a temporary file beside it: %s", strerror(errno));
        free(tmp);
        free(target);
        return WM_RESOLUTION_ERR_IO;
    }
    bool ok = write_all(fd, buf, len) && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) ok = false, saved = errno;
    if (ok && rename(tmp, target) != 0) ok = false, saved = errno;
    if (!ok) {
        unlink(tmp);
        set_err(err, WM_RESOLUTION_ERR_IO, 0, "%s", strerror(saved));
        free(tmp);
        free(target);
        return WM_RESOLUTION_ERR_IO;
    }
    free(tmp);
    free(target);
    return WM_RESOLUTION_OK;
}

/* ------------------------------------------------------------ reader */

struct wm_resolution {
    const uint8_t *base;
    size_t size;
    bool owned;              /* base was read by wm_resolution_open: freed by _close */
    uint32_t n_peids, n_nbhds, n_sets;
    uint64_t n_members, strings_size;
    const uint32_t *peids;
    const uint8_t *nbhds;
    const uint32_t *names;
    const uint64_t *sets;   /* pairs (first, count) */
    const uint32_t *members;
    const char *strings;
};

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static const char *str_at(const wm_resolution *r, uint32_t off) { return r->strings + off; }

/* Everything after the checksums: returns OK or CORRUPT with the offset. */
static wm_resolution_status check_structure(wm_resolution *r, wm_resolution_error *err)
{
    const uint8_t *b = r->base;
    uint64_t o_strings = (uint64_t)((const uint8_t *)r->strings - b);
    if (r->strings_size && r->strings[r->strings_size - 1] != 0)
        return set_err(err, WM_RESOLUTION_ERR_CORRUPT, o_strings + r->strings_size - 1,
                       "string section does not end with NUL");
    if (!r->strings_size && (r->n_peids || r->n_nbhds))
        return set_err(err, WM_RESOLUTION_ERR_CORRUPT, o_strings, "empty string section");
    for (uint32_t i = 0; i < r->n_peids; i++) {
        uint64_t at = (uint64_t)((const uint8_t *)&r->peids[i] - b);
        if (r->peids[i] >= r->strings_size)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "peid %u: string offset %u outside the string section", i,
                           r->peids[i]);
        if (!str_at(r, r->peids[i])[0])
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "peid %u is empty", i);
        if (i && strcmp(str_at(r, r->peids[i - 1]), str_at(r, r->peids[i])) >= 0)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "peid %u not after peid %u in byte order", i, i - 1);
    }
    uint64_t next_set = 0;
    for (uint32_t j = 0; j < r->n_nbhds; j++) {
        const uint8_t *rec = r->nbhds + (uint64_t)NBHD_REC * j;
        uint64_t at = (uint64_t)(rec - b);
        uint32_t name = get32(rec), k = get32(rec + 4);
        uint64_t vis = get64(rec + 8), first = get64(rec + 16);
        if (name >= r->strings_size || !str_at(r, name)[0])
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "neighborhood %u: bad name offset %u", j, name);
        if (k < 1 || k > WM_NBHD_MAX_STAGES)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at + 4, "neighborhood %u: %u stages (1..%u)", j, k,
                           WM_NBHD_MAX_STAGES);
        if (!vis || (k < 64 && vis >> k))
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at + 8, "neighborhood %u: visible mask 0x%llx for %u stages", j,
                           (unsigned long long)vis, k);
        if (first != next_set || first + k + 1 > r->n_sets)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at + 16, "neighborhood %u: sets start at %llu, expected %llu", j,
                           (unsigned long long)first, (unsigned long long)next_set);
        next_set = first + k + 1;
    }
    if (next_set != r->n_sets)
        return set_err(err, WM_RESOLUTION_ERR_CORRUPT, 48, "%u set records, the neighborhoods use %llu", r->n_sets,
                       (unsigned long long)next_set);
    uint64_t next_member = 0;
    for (uint32_t s = 0; s < r->n_sets; s++) {
        uint64_t first = r->sets[2 * s], count = r->sets[2 * s + 1];
        uint64_t at = (uint64_t)((const uint8_t *)&r->sets[2 * s] - b);
        if (first != next_member || count > r->n_members - first)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "set %u: members [%llu, +%llu) not consecutive/inside %llu", s,
                           (unsigned long long)first, (unsigned long long)count, (unsigned long long)r->n_members);
        for (uint64_t m = first; m < first + count; m++) {
            uint32_t v = r->members[m];
            if (v >= r->n_peids || (m > first && v <= r->members[m - 1]))
                return set_err(err, WM_RESOLUTION_ERR_CORRUPT, (uint64_t)((const uint8_t *)&r->members[m] - b),
                               "set %u: member %u out of range or not ascending", s, v);
        }
        next_member = first + count;
    }
    if (next_member != r->n_members)
        return set_err(err, WM_RESOLUTION_ERR_CORRUPT, 32, "%llu members, the sets use %llu",
                       (unsigned long long)r->n_members, (unsigned long long)next_member);
    for (uint32_t j = 0; j < r->n_nbhds; j++) {
        uint64_t at = (uint64_t)((const uint8_t *)&r->names[j] - b);
        if (r->names[j] >= r->n_nbhds)
            return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "name index %u: neighborhood %u out of range", j, r->names[j]);
        if (j) {
            const char *a = str_at(r, get32(r->nbhds + (uint64_t)NBHD_REC * r->names[j - 1]));
            const char *c = str_at(r, get32(r->nbhds + (uint64_t)NBHD_REC * r->names[j]));
            if (strcmp(a, c) >= 0)
                return set_err(err, WM_RESOLUTION_ERR_CORRUPT, at, "name index %u: names not strictly ascending", j);
        }
    }
    return WM_RESOLUTION_OK;
}

wm_resolution *wm_resolution_view(const void *buf, size_t len, wm_resolution_error *err)
{
    wm_resolution_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    const uint8_t *b = buf;
    if ((uintptr_t)b % 8) {
        set_err(err, WM_RESOLUTION_ERR_ALIGN, 0, "buffer not 8-byte aligned");
        return NULL;
    }
    if (len < WM_RESOLUTION_HEADER_SIZE) {
        if (len >= 8 && memcmp(b, WM_RESOLUTION_MAGIC, 8))
            set_err(err, WM_RESOLUTION_ERR_MAGIC, 0, "not a resolution file (bad magic)");
        else
            set_err(err, WM_RESOLUTION_ERR_TRUNCATED, len, "truncated: %zu bytes, the header alone is %u", len,
                    WM_RESOLUTION_HEADER_SIZE);
        return NULL;
    }
    if (memcmp(b, WM_RESOLUTION_MAGIC, 8)) {
        set_err(err, WM_RESOLUTION_ERR_MAGIC, 0, "not a resolution file (bad magic)");
        return NULL;
    }
    uint32_t version = get32(b + 8);
    if (version != WM_RESOLUTION_VERSION) {
        set_err(err, WM_RESOLUTION_ERR_VERSION, 8, "version %u, this build reads version %u", version,
                WM_RESOLUTION_VERSION);
        return NULL;
    }
    if (wm_crc32(b, 60) != get32(b + 60)) {
        set_err(err, WM_RESOLUTION_ERR_CHECKSUM, 60, "header checksum mismatch");
        return NULL;
    }
    if (get32(b + 12) != WM_RESOLUTION_HEADER_SIZE || get32(b + 56) != 0) {
        set_err(err, WM_RESOLUTION_ERR_CORRUPT, 12, "header size %u or flags 0x%x unknown", get32(b + 12), get32(b + 56));
        return NULL;
    }
    uint64_t size = get64(b + 16);
    if (size > len) {
        set_err(err, WM_RESOLUTION_ERR_TRUNCATED, len, "truncated: %zu bytes of %llu", len, (unsigned long long)size);
        return NULL;
    }
    if (size < len) {
        set_err(err, WM_RESOLUTION_ERR_CORRUPT, size, "%zu bytes, the header says %llu", len, (unsigned long long)size);
        return NULL;
    }
    wm_resolution r = { .base = b, .size = len };
    r.n_peids = get32(b + 24);
    r.n_nbhds = get32(b + 28);
    r.n_members = get64(b + 32);
    r.strings_size = get64(b + 40);
    r.n_sets = get32(b + 48);
    /* Section sizes from 32-bit counts (and two 64-bit ones bounded first)
     * cannot overflow 64 bits. */
    if (r.n_members > WM_RESOLUTION_MAX_BYTES || r.strings_size > WM_RESOLUTION_MAX_BYTES) {
        set_err(err, WM_RESOLUTION_ERR_CORRUPT, 32, "member or string count beyond any file size");
        return NULL;
    }
    uint64_t o_peids = WM_RESOLUTION_HEADER_SIZE;
    uint64_t o_nbhds = o_peids + pad8(4ull * r.n_peids);
    uint64_t o_names = o_nbhds + pad8((uint64_t)NBHD_REC * r.n_nbhds);
    uint64_t o_sets = o_names + pad8(4ull * r.n_nbhds);
    uint64_t o_members = o_sets + pad8((uint64_t)SET_REC * r.n_sets);
    uint64_t o_strings = o_members + pad8(4ull * r.n_members);
    uint64_t end = o_strings + pad8(r.strings_size);
    if (end != size) {
        set_err(err, WM_RESOLUTION_ERR_CORRUPT, 24, "counts give %llu bytes, the file has %llu", (unsigned long long)end,
                (unsigned long long)size);
        return NULL;
    }
    if (wm_crc32(b + WM_RESOLUTION_HEADER_SIZE, size - WM_RESOLUTION_HEADER_SIZE) != get32(b + 52)) {
        set_err(err, WM_RESOLUTION_ERR_CHECKSUM, 52, "body checksum mismatch");
        return NULL;
    }
    r.peids = (const uint32_t *)(b + o_peids);
    r.nbhds = b + o_nbhds;
    r.names = (const uint32_t *)(b + o_names);
    r.sets = (const uint64_t *)(b + o_sets);
    r.members = (const uint32_t *)(b + o_members);
    r.strings = (const char *)(b + o_strings);
    if (check_structure(&r, err) != WM_RESOLUTION_OK) return NULL;
    wm_resolution *out = malloc(sizeof *out);
    if (!out) {
        set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    *out = r;
    return out;
}

wm_resolution *wm_resolution_open(const char *path, wm_resolution_error *err)
{
    wm_resolution_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        set_err(err, WM_RESOLUTION_ERR_IO, 0, "%s", strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > WM_RESOLUTION_MAX_BYTES) {
        close(fd);
        set_err(err, WM_RESOLUTION_ERR_IO, 0, "not a regular file of at most %llu bytes",
                (unsigned long long)WM_RESOLUTION_MAX_BYTES);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) {
        close(fd);
        set_err(err, WM_RESOLUTION_ERR_TRUNCATED, 0, "empty file");
        return NULL;
    }
    /* Read into memory the process owns, not mapped: a MAP_PRIVATE page
     * still shows later in-place writes to the file until it is copied, so
     * a file overwritten under a running reader would change its tables
     * with no validation (and a truncated one would SIGBUS). malloc is
     * aligned for the 8-byte sections. */
    void *m = malloc(len);
    int saved = errno;
    size_t got = 0;
    while (m && got < len) {
        ssize_t k = pread(fd, (uint8_t *)m + got, len - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { saved = k < 0 ? errno : 0; break; }
        got += (size_t)k;
    }
    close(fd);
    if (!m || got < len) {
        free(m);
        if (!m) set_err(err, WM_RESOLUTION_ERR_NOMEM, 0, "out of memory for %zu bytes", len);
        else if (saved) set_err(err, WM_RESOLUTION_ERR_IO, 0, "read: %s", strerror(saved));
        else set_err(err, WM_RESOLUTION_ERR_TRUNCATED, got, "file shrank while being read");
        return NULL;
    }
    wm_resolution *r = wm_resolution_view(m, len, err);
    if (!r) {
        free(m);
        return NULL;
    }
    r->owned = true;
    return r;
}

void wm_resolution_close(wm_resolution *r)
{
    if (!r) return;
    if (r->owned) free((void *)r->base);
    free(r);
}

uint32_t wm_resolution_peid_count(const wm_resolution *r) { return r->n_peids; }
uint32_t wm_resolution_count(const wm_resolution *r) { return r->n_nbhds; }

const char *wm_resolution_peid(const wm_resolution *r, uint32_t i)
{
    return i < r->n_peids ? str_at(r, r->peids[i]) : NULL;
}

int wm_resolution_get(const wm_resolution *r, uint32_t i, wm_resolution_nbhd *out)
{
    if (i >= r->n_nbhds) return -1;
    const uint8_t *rec = r->nbhds + (uint64_t)NBHD_REC * i;
    uint64_t set = get64(rec + 16);
    out->name = str_at(r, get32(rec));
    out->n_stages = get32(rec + 4);
    out->visible = get64(rec + 8);
    out->result = r->members + r->sets[2 * set];
    out->result_len = (uint32_t)r->sets[2 * set + 1];
    return 0;
}

const uint32_t *wm_resolution_stage(const wm_resolution *r, uint32_t i, uint32_t stage, uint32_t *len)
{
    *len = 0;
    if (i >= r->n_nbhds) return NULL;
    const uint8_t *rec = r->nbhds + (uint64_t)NBHD_REC * i;
    if (stage < 1 || stage > get32(rec + 4)) return NULL;
    uint64_t set = get64(rec + 16) + stage;
    *len = (uint32_t)r->sets[2 * set + 1];
    return r->members + r->sets[2 * set];
}

int64_t wm_resolution_find(const wm_resolution *r, const char *name)
{
    uint32_t lo = 0, hi = r->n_nbhds;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(str_at(r, get32(r->nbhds + (uint64_t)NBHD_REC * r->names[mid])), name);
        if (c == 0) return r->names[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

int wm_resolution_error_load(const wm_resolution_error *e, const char *path, wm_load_error *out)
{
    wm_load_error_set(out, path, 0, "%s [%s]", e->message, wm_resolution_status_name(e->status));
    /* I/O and memory failures are about no byte of the file */
    if (out && e->status != WM_RESOLUTION_ERR_IO && e->status != WM_RESOLUTION_ERR_NOMEM) {
        out->has_offset = true;
        out->offset = e->offset;
    }
    return -1;
}

const char *wm_resolution_status_name(wm_resolution_status st)
{
    switch (st) {
    case WM_RESOLUTION_OK: return "ok";
    case WM_RESOLUTION_ERR_IO: return "io";
    case WM_RESOLUTION_ERR_TRUNCATED: return "truncated";
    case WM_RESOLUTION_ERR_MAGIC: return "magic";
    case WM_RESOLUTION_ERR_VERSION: return "version";
    case WM_RESOLUTION_ERR_CHECKSUM: return "checksum";
    case WM_RESOLUTION_ERR_CORRUPT: return "corrupt";
    case WM_RESOLUTION_ERR_ALIGN: return "align";
    case WM_RESOLUTION_ERR_DUP_NAME: return "dup_name";
    case WM_RESOLUTION_ERR_LIMIT: return "limit";
    case WM_RESOLUTION_ERR_NOMEM: return "nomem";
    }
    return "unknown";
}
