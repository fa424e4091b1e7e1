/* Typed values of content filters as XPath 1.0 numbers (§3.4, §4.4):
 * string -> number(), EXI float -> double, and the comparison operators.
 * Pure functions; thread safe. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/xpath_filter_int.h"

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

double wm_xpf_str_number(const char *s, size_t len)
{
    size_t i = 0, e = len;
    while (i < e && is_ws(s[i])) i++;
    while (e > i && is_ws(s[e - 1])) e--;
    size_t st = i, nd = 0;
    if (i < e && s[i] == '-') i++;
    while (i < e && s[i] >= '0' && s[i] <= '9') i++, nd++;
    if (i < e && s[i] == '.') {
        i++;
        while (i < e && s[i] >= '0' && s[i] <= '9') i++, nd++;
    }
    if (!nd || i != e) return NAN;
    char buf[128];
    if (e - st < sizeof buf) {
        memcpy(buf, s + st, e - st);
        buf[e - st] = 0;
        return strtod(buf, NULL);
    }
    char *big = strndup(s + st, e - st);
    if (!big) return NAN;
    double v = strtod(big, NULL);
    free(big);
    return v;
}

const double wm_xpf_p10[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

double wm_xpf_float_value(int64_t m, int32_t e)
{
    if (e == -16384) return m == 1 ? INFINITY : m == -1 ? -INFINITY : NAN;
    /* Clinger's fast path: both operands exact, one rounding */
    if (m > -(1ll << 53) && m < (1ll << 53) && e >= -22 && e <= 22)
        return e >= 0 ? (double)m * wm_xpf_p10[e] : (double)m / wm_xpf_p10[-e];
    char buf[48];
    snprintf(buf, sizeof buf, "%lldE%d", (long long)m, (int)e);
    return strtod(buf, NULL);
}

bool wm_xpf_cmp(uint8_t op, double v, double x)
{
    switch (op) {
    case WM_XP_EQ: return v == x;
    case WM_XP_NE: return v != x;
    case WM_XP_LT: return v < x;
    case WM_XP_LE: return v <= x;
    case WM_XP_GT: return v > x;
    default: return v >= x;
    }
}
