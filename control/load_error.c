/* Loader refusals: position + reason (control/load_error.h). */
#include "control/load_error.h"

#include <stdio.h>
#include <string.h>

int wm_load_error_vset(wm_load_error *e, const char *file, unsigned long line, const char *fmt, va_list ap)
{
    if (!e) return -1;
    wm_load_error_clear(e);
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    e->line = line;
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    return -1;
}

int wm_load_error_set(wm_load_error *e, const char *file, unsigned long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wm_load_error_vset(e, file, line, fmt, ap);
    va_end(ap);
    return -1;
}

void wm_load_error_clear(wm_load_error *e)
{
    e->file[0] = '\0';
    e->reason[0] = '\0';
    e->line = e->column = 0;
    e->has_offset = false;
    e->offset = 0;
}

bool wm_load_error_failed(const wm_load_error *e) { return e->reason[0] != '\0'; }

char *wm_load_error_format_reason(const wm_load_error *e, char *buf, size_t cap)
{
    if (!cap) return buf;
    char col[32] = "", off[40] = "";
    if (e->column) snprintf(col, sizeof col, "column %lu: ", e->column);
    if (e->has_offset) snprintf(off, sizeof off, " at byte %llu", (unsigned long long)e->offset);
    snprintf(buf, cap, "%s%s%s", col, e->reason, off);
    return buf;
}

char *wm_load_error_format(const wm_load_error *e, char *buf, size_t cap)
{
    if (!cap) return buf;
    int k = 0;
    if (e->file[0] && e->line) k = snprintf(buf, cap, "%s:%lu: ", e->file, e->line);
    else if (e->file[0]) k = snprintf(buf, cap, "%s: ", e->file);
    if (k < 0 || (size_t)k >= cap) {
        if (k < 0) buf[0] = '\0';
        return buf;
    }
    wm_load_error_format_reason(e, buf + k, cap - (size_t)k);
    return buf;
}
