/* A worker's match log file; see match_log.h. */
#include "dataplane/match_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

struct wm_match_log {
    FILE *f;
    char *buf;
    int fd;
    bool regular;       /* a regular file: a torn line can be truncated away */
    bool torn;          /* the line being written lost its start: drop it up to its '\n' */
    off_t pos;          /* bytes stored so far (the file offset) */
    off_t committed;    /* ... up to the end of the last whole line */
    uint64_t written;   /* lines stored */
    int err;            /* the first errno */
};

static uint64_t count_nl(const char *p, size_t n)
{
    uint64_t k = 0;
    for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) k++;
    return k;
}

static ssize_t log_write(void *cookie, const char *buf, size_t size)
{
    struct wm_match_log *l = cookie;
    const char *p = buf;
    size_t n = size;
    if (l->torn) {
        const char *nl = memchr(p, '\n', n);
        if (!nl) return (ssize_t)size;
        l->torn = false;
        n -= (size_t)(nl + 1 - p);
        p = nl + 1;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(l->fd, p + done, n - done);
        if (k > 0) {
            done += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (!l->err) l->err = k < 0 ? errno : EIO;
        break;
    }
    l->written += count_nl(p, done);
    const char *last = done ? memrchr(p, '\n', done) : NULL;
    if (last) l->committed = l->pos + (off_t)(last + 1 - p);
    l->pos += (off_t)done;
    if (done == n) return (ssize_t)size;
    /* A line cut by the failure: its stored head goes (regular files; a
     * pipe's reader has it already), its unwritten tail too, up to its '\n'
     * (in this chunk, or the next one when this chunk ends inside it). */
    if (l->regular && l->pos != l->committed && ftruncate(l->fd, l->committed) == 0 &&
        lseek(l->fd, l->committed, SEEK_SET) == l->committed)
        l->pos = l->committed;
    l->torn = p[n - 1] != '\n';
    /* stdio is told everything was written: the accounting is ours */
    return (ssize_t)size;
}

static int log_close(void *cookie)
{
    struct wm_match_log *l = cookie;
    if (close(l->fd) != 0 && !l->err) l->err = errno;
    return 0;
}

struct wm_match_log *wm_match_log_open(const char *path, size_t buf_bytes, char *err, size_t errlen)
{
    struct wm_match_log *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (l->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(l);
        return NULL;
    }
    struct stat st;
    l->regular = fstat(l->fd, &st) == 0 && S_ISREG(st.st_mode);
    cookie_io_functions_t io = {.read = NULL, .write = log_write, .seek = NULL, .close = log_close};
    l->f = fopencookie(l, "w", io);
    if (!l->f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(l->fd);
        free(l);
        return NULL;
    }
    if (buf_bytes && (l->buf = malloc(buf_bytes)) != NULL) setvbuf(l->f, l->buf, _IOFBF, buf_bytes);
    return l;
}

FILE *wm_match_log_stream(struct wm_match_log *l) { return l->f; }

void wm_match_log_close(struct wm_match_log *l, struct wm_match_log_result *out)
{
    if (!l) return;
    fclose(l->f); /* the last write and log_close: their errors are in l->err */
    if (out) {
        out->lines_written = l->written;
        out->err = l->err;
    }
    free(l->buf);
    free(l);
}
