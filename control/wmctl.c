/* Helpers shared by the wmctl commands (see control/wmctl.h). They live in the
 * control library, not in wmctl_main.c, so commands link into tests and fuzz
 * targets without the entry point. */
#include "control/wmctl.h"

#include <stdbool.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

FILE *wmctl_open(const char *path, char *msg, size_t cap)
{
    if (strcmp(path, "-") == 0) return stdin;
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(msg, cap, "%s: %s", path, strerror(errno)); return NULL; }
    struct stat st;
    /* fopen succeeds on a directory and reading then fails with EISDIR or
     * returns 0 bytes, depending on the system: say what it is. */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, cap, "%s: is a directory", path);
        fclose(f);
        return NULL;
    }
    return f;
}

unsigned char *wmctl_read_file(const char *path, size_t max, size_t *len, char *msg, size_t cap)
{
    FILE *f = wmctl_open(path, msg, cap);
    if (!f) return NULL;
    bool is_stdin = f == stdin;
    unsigned char *buf = NULL;
    size_t n = 0, c = 0;
    for (;;) {
        if (n + 1 >= c) {
            size_t nc = c ? c * 2 : 65536;
            if (nc > max + 2) nc = max + 2;
            unsigned char *nb = realloc(buf, nc);
            if (!nb) { snprintf(msg, cap, "%s: out of memory", path); goto fail; }
            buf = nb;
            c = nc;
        }
        size_t r = fread(buf + n, 1, c - 1 - n, f);
        n += r;
        if (n > max) { snprintf(msg, cap, "%s: larger than %zu bytes", path, max); goto fail; }
        if (r == 0) break;
    }
    if (ferror(f)) { snprintf(msg, cap, "%s: read error: %s", path, strerror(errno)); goto fail; }
    if (!is_stdin) fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
fail:
    free(buf);
    if (!is_stdin) fclose(f);
    return NULL;
}

int wmctl_close_output(const char *command, FILE *f, const char *name)
{
    bool bad = fflush(f) != 0 || ferror(f);
    if (f != stdout) bad = fclose(f) != 0 || bad;
    return bad ? wmctl_usage_error(command, "cannot write %s", name) : 0;
}

int wmctl_load_error(const char *command, const wm_load_error *e, int code)
{
    char text[WM_LOAD_ERROR_TEXT_MAX];
    fprintf(stderr, "wmctl %s: %s\n", command, wm_load_error_format(e, text, sizeof text));
    return code;
}

int wmctl_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "wmctl %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

