/* Output paths: follow symlinks, keep device nodes (control/out_path.h). */
#include "control/out_path.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40

/* link's target, relative targets taken from link's directory */
static char *link_target(const char *link, int *e)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n < 0) { *e = errno; return NULL; }
    buf[n] = '\0';
    const char *slash = strrchr(link, '/');
    size_t dl = buf[0] == '/' || !slash ? 0 : (size_t)(slash - link) + 1;
    char *t = malloc(dl + (size_t)n + 1);
    if (!t) { *e = ENOMEM; return NULL; }
    memcpy(t, link, dl);
    memcpy(t + dl, buf, (size_t)n + 1);
    return t;
}

int wm_out_path_resolve(const char *path, char **target, bool *in_place)
{
    *target = NULL;
    *in_place = false;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return EISDIR;
        if (!S_ISREG(st.st_mode)) {
            /* opened by its own name: /dev/stdout's "pipe:[N]" end is no path */
            *in_place = true;
            *target = strdup(path);
            return *target ? 0 : ENOMEM;
        }
        *target = realpath(path, NULL);
        return *target ? 0 : errno;
    }
    if (errno != ENOENT) return errno;
    /* nothing there, or a dangling link: walk the links to the name to create */
    char *p = strdup(path);
    if (!p) return ENOMEM;
    for (int hops = 0; hops <= MAX_LINKS; hops++) {
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode)) {
            *target = p;
            return 0;
        }
        int e = 0;
        char *next = link_target(p, &e);
        free(p);
        if (!next) return e;
        p = next;
    }
    free(p);
    return ELOOP;
}
