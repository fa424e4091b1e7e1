/* Helpers shared by the wmctl commands (see control/wmctl.h). They live in the
 * control library, not in wmctl_main.c, so commands link into tests and fuzz
 * targets without the entry point. */
#include "control/wmctl.h"

#include <stdarg.h>

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

