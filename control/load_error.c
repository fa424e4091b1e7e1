/* Loader refusals taken apart (control/load_error.h). */
#include "control/load_error.h"

#include <string.h>

bool wm_load_error_split(const char *msg, const char *const *files, size_t n, wm_load_error_at *out)
{
    *out = (wm_load_error_at){ .reason = msg };
    for (size_t i = 0; i < n; i++) {
        if (!files[i]) continue;
        size_t fl = strlen(files[i]);
        if (!fl || (out->file && fl <= out->file_len) || strncmp(msg, files[i], fl) || msg[fl] != ':') continue;
        const char *p = msg + fl + 1;
        unsigned long line = 0;
        const char *d = p;
        /* a line number is digits, then ": "; anything else belongs to the reason */
        while (*d >= '0' && *d <= '9' && d - p < 10) line = line * 10 + (unsigned long)(*d++ - '0');
        if (d > p && d[0] == ':' && d[1] == ' ') {
            p = d + 2;
        } else if (p[0] == ' ') {
            line = 0;
            p++;
        } else {
            continue;
        }
        *out = (wm_load_error_at){ .file = msg, .file_len = fl, .line = line, .reason = p };
    }
    return out->file != NULL;
}
