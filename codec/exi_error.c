/* EXI error reports: one helper so every failure carries a reason and a position. */
#include "codec/exi_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

wm_exi_status wm_exi_fail(wm_exi_error *err, wm_exi_status st, uint64_t bit_pos,
                          const char *fmt, ...)
{
    if (err && err->status == WM_EXI_OK) { /* keep the first (innermost) reason */
        err->status = st;
        err->bit_pos = bit_pos;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof err->msg) {
            /* visibly cut, and not inside a UTF-8 sequence */
            size_t k = sizeof err->msg - 4;
            while (k && ((unsigned char)err->msg[k] & 0xC0) == 0x80) k--;
            memcpy(err->msg + k, "...", 4);
        }
    }
    return st;
}

const char *wm_exi_status_name(wm_exi_status st)
{
    switch (st) {
    case WM_EXI_OK: return "ok";
    case WM_EXI_E_TRUNCATED: return "truncated";
    case WM_EXI_E_HEADER: return "header";
    case WM_EXI_E_OPTIONS: return "options";
    case WM_EXI_E_UNSUPPORTED: return "unsupported";
    case WM_EXI_E_EVENT_CODE: return "event_code";
    case WM_EXI_E_STRING_INDEX: return "string_index";
    case WM_EXI_E_VALUE: return "value";
    case WM_EXI_E_LENGTH: return "length";
    case WM_EXI_E_MEMORY: return "memory";
    case WM_EXI_E_DEPTH: return "depth";
    case WM_EXI_E_GRAMMAR: return "grammar";
    case WM_EXI_E_SCHEMA: return "schema";
    case WM_EXI_E_INPUT: return "input";
    case WM_EXI_E_IO: return "io";
    case WM_EXI_E_TRAILING: return "trailing";
    }
    return "unknown";
}
