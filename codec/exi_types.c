/* EXI datatype representations (§7.1, §7.2): bits <-> lexical text. */
#include "codec/exi_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_utf8.h"
#include "codec/exi_xmlchar.h"

/* Largest time zone offset, +-14:00 (XML Schema), as hours*64 + minutes
 * (§7.1.8): the one bound of the writer and the reader. */
#define TZ_MAX (14 * 64)

/* ------------------------------------------------------------ text helpers */

static wm_exi_status tx_put(wm_exi_reader *r, wm_exi_text *tx, const char *s, size_t n)
{
    if (tx->cap - tx->len < n)
        return wm_exi_fail(r->err, WM_EXI_E_LENGTH, r->pos, "value text longer than the %zu-byte scratch", tx->cap);
    memcpy(tx->p + tx->len, s, n);
    tx->len += n;
    return WM_EXI_OK;
}

static const uint64_t pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
    10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull, 100000000000000ull, 1000000000000000ull,
    10000000000000000ull, 100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/* the number of decimal digits of v (1..20) */
static unsigned ndigits(uint64_t v)
{
    unsigned n = ((64 - (unsigned)__builtin_clzll(v | 1)) * 1233) >> 12; /* ~log10(2) * bits */
    return n + (n < 20 && (v | 1) >= pow10_u64[n]); /* v | 1: 0 has one digit */
}

/* v's nd decimal digits at out, two per step from the end (numbers are
 * written for every value of a document decoded to text) */
static unsigned fmt_digits(char *out, uint64_t v, unsigned nd)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                   "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                   "8081828384858687888990919293949596979899";
    char *o = out + nd;
    while (o - out >= 2) {
        o -= 2;
        memcpy(o, pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (o > out) *--o = (char)('0' + v);
    return nd;
}

/* v's decimal digits at out (at most 20) */
static unsigned fmt_u64(char *out, uint64_t v) { return fmt_digits(out, v, ndigits(v)); }

static unsigned fmt_i64(char *out, int64_t v)
{
    if (v >= 0) return fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + fmt_u64(out + 1, (uint64_t)(-(v + 1)) + 1);
}

static unsigned fmt_pad(char *out, uint64_t v, unsigned width)
{
    char tmp[24];
    unsigned n = fmt_u64(tmp, v), k = 0;
    while (n + k < width) out[k++] = '0';
    memcpy(out + k, tmp, n);
    return n + k;
}

/* Reverses the decimal digits of v (fractional parts are stored reversed, §7.1.3). */
static unsigned fmt_reversed(char *out, uint64_t v)
{
    unsigned n = 0;
    do { out[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    return n;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ------------------------------------------------------------ date-time value space */

static const char *const month_name[13] = { "", "January", "February", "March", "April", "May", "June", "July",
                                            "August", "September", "October", "November", "December" };

/* XML Schema 1.0's daysInMonth (Appendix E of Part 2; the proleptic
 * Gregorian leap rule on the year as written, as libxml2 applies it). */
static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned d[13] = { 0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (m != 2) return d[m];
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28;
}

/* Whether date-time fields in their lexical ranges (month <= 12, day <= 31,
 * hour <= 24, minute <= 59, second <= 60) are a value of the variant's XML
 * Schema 1.0 type, whose value space EXI 1.0 §7.1.8 carries: no year 0000,
 * a day that exists in its month (in its year where there is one; --02-29
 * is a gMonthDay), no leap second (23:59:60 is in no value space), and hour
 * 24 only as 24:00:00 (end of day). Else writes why to why[0..cap). The one
 * rule of the encoder (lexical text in) and the decoder (fields read from
 * the stream), so every stream the encoder writes decodes, and a stream
 * that carries an impossible value is refused, not turned into text. */
static bool dt_value_ok(unsigned variant, int64_t year, unsigned month, unsigned day, unsigned hh, unsigned mi,
                        unsigned ss, bool frac, char *why, size_t cap)
{
    bool has_year = variant <= WM_EXI_DATETIME_V;
    bool has_month = variant != WM_EXI_GYEAR && variant != WM_EXI_GDAY && variant != WM_EXI_TIME;
    bool has_day = variant == WM_EXI_DATE || variant == WM_EXI_DATETIME_V || variant == WM_EXI_GMONTHDAY || variant == WM_EXI_GDAY;
    bool has_time = variant == WM_EXI_DATETIME_V || variant == WM_EXI_TIME;
    if (has_year && year == 0) {
        snprintf(why, cap, "year 0000 is not a year in XML Schema 1.0 (§3.2.7)");
        return false;
    }
    if (has_month && (month < 1 || month > 12)) {
        snprintf(why, cap, "month %02u is not 01..12", month);
        return false;
    }
    if (has_day && (day < 1 || day > 31)) {
        snprintf(why, cap, "day %02u is not 01..31", day);
        return false;
    }
    if (has_day && has_month) {
        unsigned dim = has_year ? days_in_month(year, month) : month == 2 ? 29 : days_in_month(2000, month);
        if (day > dim) {
            if (has_year && month == 2 && day == 29)
                snprintf(why, cap, "day 29 of February %s%04lld, not a leap year (February has 28 days)", year < 0 ? "-" : "",
                         (long long)(year < 0 ? -year : year));
            else
                snprintf(why, cap, "day %02u of %s, which has %u days", day, month_name[month], dim);
            return false;
        }
    }
    if (!has_time) return true;
    if (mi > 59) {
        snprintf(why, cap, "minute %02u is not 00..59", mi);
        return false;
    }
    if (ss > 59) {
        snprintf(why, cap, "second %02u: leap seconds are not in the value space (seconds are 00..59)", ss);
        return false;
    }
    if (hh > 24 || (hh == 24 && (mi || ss || frac))) {
        snprintf(why, cap, "hour %02u: 24 is allowed only as 24:00:00, the end of the day", hh);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ reading */

static wm_exi_status read_integer(wm_exi_reader *r, int64_t *out) { return wm_exi_read_int(r, out); }

static wm_exi_status read_datetime(wm_exi_reader *r, unsigned variant, wm_exi_text *tx)
{
    char buf[96];
    unsigned n = 0;
    wm_exi_status st;
    int64_t year = 0;
    uint32_t md = 0, tm = 0;
    bool has_year = variant <= WM_EXI_DATETIME_V;
    bool has_md = variant != WM_EXI_GYEAR && variant != WM_EXI_TIME;
    bool has_time = variant == WM_EXI_DATETIME_V || variant == WM_EXI_TIME;
    bool frac = false;
    uint64_t bit0 = r->pos; /* refusals of the value as a whole name its first bit */
    if (has_year) {
        if ((st = read_integer(r, &year))) return st;
        if (year > INT64_MAX - 2000 || year < -1000000000)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "year out of range (§7.1.8)");
        year += 2000;
    }
    if (has_md && (st = wm_exi_read_nbit(r, 9, &md))) return st;
    if (has_time && (st = wm_exi_read_nbit(r, 17, &tm))) return st;
    if (md > 511 || tm > 131071) return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "date-time field beyond its width (§7.1.8)");
    unsigned month = md >> 5, day = md & 31;
    if (has_md && (month > 12 || (variant != WM_EXI_GDAY && month == 0) ||
                   (variant != WM_EXI_GMONTH && variant != WM_EXI_GYEARMONTH && day == 0)))
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "month/day %u/%u out of range (§7.1.8)", month, day);
    unsigned hh = tm >> 12, mi = (tm >> 6) & 63, ss = tm & 63;
    if (has_time && (hh > 24 || mi > 59 || ss > 60))
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "time %u:%u:%u out of range (§7.1.8)", hh, mi, ss);
    if (has_year) {
        int64_t y = year;
        if (y < 0) { buf[n++] = '-'; y = -y; }
        n += fmt_pad(buf + n, (uint64_t)y, 4);
    }
    switch (variant) {
    case WM_EXI_GYEARMONTH: buf[n++] = '-'; n += fmt_pad(buf + n, month, 2); break;
    case WM_EXI_DATE: case WM_EXI_DATETIME_V:
        buf[n++] = '-'; n += fmt_pad(buf + n, month, 2); buf[n++] = '-'; n += fmt_pad(buf + n, day, 2); break;
    case WM_EXI_GMONTH: buf[n++] = '-'; buf[n++] = '-'; n += fmt_pad(buf + n, month, 2); break;
    case WM_EXI_GMONTHDAY:
        buf[n++] = '-'; buf[n++] = '-'; n += fmt_pad(buf + n, month, 2); buf[n++] = '-'; n += fmt_pad(buf + n, day, 2); break;
    case WM_EXI_GDAY: buf[n++] = '-'; buf[n++] = '-'; buf[n++] = '-'; n += fmt_pad(buf + n, day, 2); break;
    default: break;
    }
    if (has_time) {
        if (variant == WM_EXI_DATETIME_V) buf[n++] = 'T';
        n += fmt_pad(buf + n, hh, 2); buf[n++] = ':';
        n += fmt_pad(buf + n, mi, 2); buf[n++] = ':';
        n += fmt_pad(buf + n, ss, 2);
        bool fs;
        if ((st = wm_exi_read_bool(r, &fs))) return st;
        if (fs) {
            uint64_t f;
            if ((st = wm_exi_read_uint(r, &f))) return st;
            buf[n++] = '.';
            n += fmt_reversed(buf + n, f);
            frac = f != 0;
        }
    }
    char why[128];
    if (!dt_value_ok(variant, year, month, day, hh, mi, ss, frac, why, sizeof why))
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, bit0, "date/time value %.*s is impossible: %s (XML Schema value space, §7.1.8)",
                           (int)n, buf, why);
    bool tz;
    if ((st = wm_exi_read_bool(r, &tz))) return st;
    if (tz) {
        uint32_t z;
        if ((st = wm_exi_read_nbit(r, 11, &z))) return st;
        if (z > 2047) return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "time zone field %u (§7.1.8)", z);
        int off = (int)z - 896;
        if (off < -TZ_MAX || off > TZ_MAX)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "time zone out of range (§7.1.8)");
        if (off == 0) buf[n++] = 'Z';
        else {
            buf[n++] = off < 0 ? '-' : '+';
            int a = off < 0 ? -off : off;
            int h = a / 64, m = a % 64;
            if (m > 59) return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "time zone minutes %d (§7.1.8)", m);
            n += fmt_pad(buf + n, (uint64_t)h, 2); buf[n++] = ':'; n += fmt_pad(buf + n, (uint64_t)m, 2);
        }
    }
    return tx_put(r, tx, buf, n);
}

static wm_exi_status read_float(wm_exi_reader *r, wm_exi_text *tx, wm_exi_value *v)
{
    int64_t m, e;
    wm_exi_status st = read_integer(r, &m);
    if (st || (st = read_integer(r, &e))) return st;
    if (e < -16384 || e > 16383)
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "float exponent %lld out of 14-bit range (§7.1.4)", (long long)e);
    v->mantissa = m;
    v->exponent = (int32_t)e;
    if (!tx->cap) return WM_EXI_OK; /* typed value only */
    char buf[WM_EXI_FLOAT_TEXT_MAX];
    return tx_put(r, tx, buf, wm_exi_float_text(m, (int32_t)e, buf));
}

unsigned wm_exi_float_text(int64_t m, int32_t e, char *buf)
{
    unsigned n = 0;
    if (e == -16384) {
        const char *s = m == 1 ? "INF" : m == -1 ? "-INF" : "NaN";
        n = (unsigned)strlen(s);
        memcpy(buf, s, n);
        return n;
    }
    uint64_t a = m < 0 ? (uint64_t)(-(m + 1)) + 1 : (uint64_t)m;
    if (m < 0) buf[n++] = '-';
    unsigned nd = ndigits(a);
    if (e >= 0 && e <= 6) {
        n += fmt_digits(buf + n, a, nd);
        for (int32_t k = 0; k < e && a != 0; k++) buf[n++] = '0';
    } else if (e > 6 || e < -30) {
        n += fmt_digits(buf + n, a, nd);
        buf[n++] = 'E';
        n += fmt_i64(buf + n, e);
    } else {
        unsigned frac = (unsigned)(-e);
        if (nd > frac) {
            /* the digits with '.' before the last frac of them */
            char *o = buf + n + nd + 1;
            for (unsigned i = 0; i < frac; i++) { *--o = (char)('0' + a % 10); a /= 10; }
            *--o = '.';
            fmt_digits(buf + n, a, nd - frac);
            n += nd + 1;
        } else {
            buf[n++] = '0';
            buf[n++] = '.';
            for (unsigned k = nd; k < frac; k++) buf[n++] = '0';
            n += fmt_digits(buf + n, a, nd);
        }
    }
    return n;
}

unsigned wm_exi_int_text(int64_t v, char *buf) { return fmt_i64(buf, v); }

wm_exi_status wm_exi_value_read(wm_exi_reader *r, const wm_exi_datatype *types, const wm_exi_datatype *dt,
                                wm_exi_text *tx, wm_exi_value *v)
{
    size_t start = tx->len;
    wm_exi_status st = WM_EXI_OK;
    char buf[48];
    memset(v, 0, sizeof *v);
    v->kind = dt->kind;
    switch (dt->kind) {
    case WM_EXI_DT_BOOLEAN:
        if (dt->pattern_bool) {
            uint32_t c;
            if ((st = wm_exi_read_nbit(r, 2, &c))) return st;
            if (c > 3) return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "boolean pattern code %u (§7.1.2)", c);
            static const char *const lex[4] = { "false", "0", "true", "1" };
            v->b = c >= 2;
            st = tx_put(r, tx, lex[c], strlen(lex[c]));
        } else {
            if ((st = wm_exi_read_bool(r, &v->b))) return st;
            if (tx->cap) st = v->b ? tx_put(r, tx, "true", 4) : tx_put(r, tx, "false", 5);
        }
        break;
    case WM_EXI_DT_INTEGER:
        if ((st = read_integer(r, &v->i))) return st;
        if (tx->cap) st = tx_put(r, tx, buf, fmt_i64(buf, v->i));
        break;
    case WM_EXI_DT_UNSIGNED: {
        uint64_t u;
        if ((st = wm_exi_read_uint(r, &u))) return st;
        v->i = u > INT64_MAX ? INT64_MAX : (int64_t)u;
        if (tx->cap) st = tx_put(r, tx, buf, fmt_u64(buf, u));
        break;
    }
    case WM_EXI_DT_NBIT: {
        uint32_t u;
        if ((st = wm_exi_read_nbit(r, dt->nbit_width, &u))) return st;
        if (dt->nbit_width < 32 && u >> dt->nbit_width)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "%u-bit integer value %u out of range (§7.1.9)", dt->nbit_width, u);
        v->i = dt->nbit_min + (int64_t)u;
        if (tx->cap) st = tx_put(r, tx, buf, fmt_i64(buf, v->i));
        break;
    }
    case WM_EXI_DT_DECIMAL: {
        bool neg;
        uint64_t ip, fp;
        if ((st = wm_exi_read_bool(r, &neg)) || (st = wm_exi_read_uint(r, &ip)) || (st = wm_exi_read_uint(r, &fp)))
            return st;
        unsigned n = 0;
        if (neg) buf[n++] = '-';
        n += fmt_u64(buf + n, ip);
        buf[n++] = '.';
        n += fmt_reversed(buf + n, fp);
        st = tx_put(r, tx, buf, n);
        break;
    }
    case WM_EXI_DT_FLOAT: st = read_float(r, tx, v); break;
    case WM_EXI_DT_DATETIME: st = read_datetime(r, dt->variant, tx); break;
    case WM_EXI_DT_BASE64: case WM_EXI_DT_HEX: {
        uint64_t n;
        if ((st = wm_exi_read_uint(r, &n))) return st;
        if (n > (r->len_bits - r->pos) / 8)
            return wm_exi_fail(r->err, WM_EXI_E_LENGTH, r->pos, "binary length %llu beyond the stream", (unsigned long long)n);
        uint8_t grp[3];
        unsigned g = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint8_t b;
            if ((st = wm_exi_read_byte(r, &b))) return st;
            if (dt->kind == WM_EXI_DT_HEX) {
                char h[2] = { "0123456789ABCDEF"[b >> 4], "0123456789ABCDEF"[b & 15] };
                if ((st = tx_put(r, tx, h, 2))) return st;
                continue;
            }
            grp[g++] = b;
            if (g == 3 || i + 1 == n) {
                char q[4];
                uint32_t x = (uint32_t)grp[0] << 16 | (g > 1 ? (uint32_t)grp[1] << 8 : 0) | (g > 2 ? grp[2] : 0);
                q[0] = b64[x >> 18]; q[1] = b64[(x >> 12) & 63];
                q[2] = g > 1 ? b64[(x >> 6) & 63] : '=';
                q[3] = g > 2 ? b64[x & 63] : '=';
                if ((st = tx_put(r, tx, q, 4))) return st;
                g = 0;
            }
        }
        break;
    }
    case WM_EXI_DT_ENUM: {
        uint32_t c;
        if ((st = wm_exi_read_nbit(r, wm_exi_code_width(dt->n_enum), &c))) return st;
        if (c >= dt->n_enum)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "enumeration index %u of %u values (§7.2)", c, dt->n_enum);
        v->i = c;
        if (tx->cap) st = tx_put(r, tx, dt->enum_values[c], strlen(dt->enum_values[c]));
        else { /* typed only: the grammar's own text, no copy */
            v->text = dt->enum_values[c];
            v->len = (uint32_t)strlen(dt->enum_values[c]);
            return WM_EXI_OK;
        }
        break;
    }
    case WM_EXI_DT_RCS_STRING: case WM_EXI_DT_STRING: {
        /* Plain String representation (§7.1.10) with the restricted character
         * set when one is given; the string table is the caller's business. */
        uint64_t n;
        if ((st = wm_exi_read_uint(r, &n))) return st;
        if (n > (r->len_bits - r->pos))
            return wm_exi_fail(r->err, WM_EXI_E_LENGTH, r->pos, "string length %llu beyond the stream", (unsigned long long)n);
        unsigned w = dt->kind == WM_EXI_DT_RCS_STRING ? wm_exi_code_width(dt->n_rcs + 1) : 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t cp;
            if (w) {
                uint32_t c;
                if ((st = wm_exi_read_nbit(r, w, &c))) return st;
                if (c < dt->n_rcs) cp = dt->rcs[c];
                else if (c == dt->n_rcs) { if ((st = wm_exi_read_uint(r, &cp))) return st; }
                else return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "restricted character index %u (§7.1.10.1)", c);
            } else if ((st = wm_exi_read_uint(r, &cp))) return st;
            if (!wm_exi_xml_char(cp))
                return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "code point U+%04llX is not an XML 1.0 character",
                                   (unsigned long long)cp);
            char u[4];
            if ((st = tx_put(r, tx, u, wm_exi_utf8_put((uint32_t)cp, u)))) return st;
        }
        break;
    }
    case WM_EXI_DT_LIST: {
        uint64_t n;
        if ((st = wm_exi_read_uint(r, &n))) return st;
        const wm_exi_datatype *it = &types[dt->list_item];
        if (it->kind == WM_EXI_DT_LIST)
            return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "list of lists");
        /* Items of a one-value enumeration (§7.2) or an n-bit range with
         * min = max (§7.1.9) take no bits, so the stream does not bound their
         * count; the text does: every item after the first adds a separator. */
        bool zero_bit = (it->kind == WM_EXI_DT_ENUM && it->n_enum <= 1) || (it->kind == WM_EXI_DT_NBIT && !it->nbit_width);
        if (zero_bit ? n > tx->cap - tx->len + 1 : n > r->len_bits - r->pos + 1)
            return wm_exi_fail(r->err, WM_EXI_E_LENGTH, r->pos, zero_bit ? "list of %llu 0-bit items beyond the value cap"
                                                                         : "list length %llu beyond the stream",
                               (unsigned long long)n);
        for (uint64_t i = 0; i < n; i++) {
            wm_exi_value iv;
            if (i && (st = tx_put(r, tx, " ", 1))) return st;
            if ((st = wm_exi_value_read(r, types, it, tx, &iv))) return st;
        }
        break;
    }
    default:
        return wm_exi_fail(r->err, WM_EXI_E_VALUE, r->pos, "datatype kind %u has no direct representation", dt->kind);
    }
    if (st) return st;
    v->text = tx->cap ? tx->p + start : NULL;
    v->len = (uint32_t)(tx->len - start);
    return WM_EXI_OK;
}

/* ------------------------------------------------------------ writing */

/* Whitespace collapse bounds (§7.1: values are schema-normalized). */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) { (*s)++; (*len)--; }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\n' || (*s)[*len - 1] == '\r'))
        (*len)--;
}

/* Integer lexical forms: valid, not valid, or valid but beyond the 64 bits
 * this codec keeps (WM_EXI_E_UNSUPPORTED, never "not valid"). */
typedef enum { NUM_OK, NUM_BAD, NUM_BIG } numparse;

/* v = v * 10 + d unless that passes UINT64_MAX. */
static bool acc_digit(uint64_t *v, unsigned d)
{
    if (*v > UINT64_MAX / 10 || (*v == UINT64_MAX / 10 && d > UINT64_MAX % 10)) return false;
    *v = *v * 10 + d;
    return true;
}

/* One or more decimal digits, all of s[0..len). */
static numparse parse_digits(const char *s, size_t len, uint64_t *out)
{
    if (!len) return NUM_BAD;
    uint64_t v = 0;
    bool big = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return NUM_BAD;
        big = big || !acc_digit(&v, (unsigned)(s[i] - '0'));
    }
    *out = v;
    return big ? NUM_BIG : NUM_OK;
}

static numparse parse_int(const char *s, size_t len, int64_t *out)
{
    trim(&s, &len);
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    uint64_t v;
    numparse r = parse_digits(s + i, len - i, &v);
    if (r != NUM_OK) return r;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return NUM_BIG;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return NUM_OK;
}

static numparse parse_uint(const char *s, size_t len, uint64_t *out)
{
    trim(&s, &len);
    size_t i = 0;
    if (i < len && s[i] == '+') i++;
    return parse_digits(s + i, len - i, out);
}

bool wm_exi_float_parse(const char *s, size_t len, int64_t *mantissa, int32_t *exponent)
{
    trim(&s, &len);
    if (len == 3 && !memcmp(s, "INF", 3)) { *mantissa = 1; *exponent = -16384; return true; }
    if (len == 4 && !memcmp(s, "-INF", 4)) { *mantissa = -1; *exponent = -16384; return true; }
    if (len == 3 && !memcmp(s, "NaN", 3)) { *mantissa = 0; *exponent = -16384; return true; }
    size_t i = 0;
    bool neg = false, digits = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    /* §7.1.4: the mantissa is a 64-bit signed integer. Digits that do not
     * fit (a lexical form may have any number) are rounded away, half up on
     * the first dropped digit, as EXIficient does: 18 or 19 significant
     * digits, more than a double holds. */
    const uint64_t mmax = (uint64_t)INT64_MAX;
    uint64_t m = 0;
    int64_t e = 0;
    int round = -1; /* the first dropped digit */
    for (bool frac = false;; i++) {
        if (i < len && s[i] == '.' && !frac) { frac = true; continue; }
        if (i >= len || s[i] < '0' || s[i] > '9') break;
        unsigned d = (unsigned)(s[i] - '0');
        digits = true;
        if (round < 0 && (m < mmax / 10 || (m == mmax / 10 && d <= mmax % 10))) {
            m = m * 10 + d;
            e -= frac;
        } else {
            if (round < 0) round = (int)d;
            e += !frac; /* a dropped integer digit scales what is kept */
        }
    }
    if (!digits) return false;
    if (round >= 5) {
        if (m < mmax) m++;
        else { m = mmax / 10 + 1; e++; } /* INT64_MAX ends in 7: rounds up */
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int64_t x;
        if (parse_int(s + i + 1, len - i - 1, &x) != NUM_OK || x > 100000 || x < -100000) return false;
        e += x;
        i = len;
    }
    if (i != len) return false;
    /* canonical mantissa: no trailing decimal zeros ("20" -> 2E1), as
     * deployed encoders write it; the value is the same either way */
    while (m != 0 && m % 10 == 0) { m /= 10; e++; }
    if (m == 0) e = 0;
    if (e < -16383 || e > 16383) return false;
    *mantissa = neg ? -(int64_t)m : (int64_t)m;
    *exponent = (int32_t)e;
    return true;
}

static wm_exi_status write_integer(wm_exi_writer *w, int64_t v)
{
    wm_exi_status st = wm_exi_write_bool(w, v < 0);
    if (st) return st;
    return wm_exi_write_uint(w, v < 0 ? (uint64_t)(-(v + 1)) : (uint64_t)v);
}

static bool digits2(const char *s, unsigned *v)
{
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9') return false;
    *v = (unsigned)(s[0] - '0') * 10 + (unsigned)(s[1] - '0');
    return true;
}

/* Parses a date-time family lexical into its §7.1.8 components. */
typedef struct dtparts {
    int64_t year;
    unsigned month, day, hh, mi, ss;
    bool has_fs;
    uint64_t fs_rev;
    bool has_tz;
    int tz;            /* minutes-encoded: hours*64 + minutes, signed */
} dtparts;

static bool parse_datetime(const char *s, size_t len, unsigned variant, dtparts *p)
{
    trim(&s, &len);
    memset(p, 0, sizeof *p);
    size_t i = 0;
    if (variant <= WM_EXI_DATETIME_V) {
        bool neg = false;
        if (i < len && s[i] == '-') { neg = true; i++; }
        size_t st = i;
        int64_t y = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (i - st > 12) return false;
            y = y * 10 + (s[i++] - '0');
        }
        if (i - st < 4) return false;
        p->year = neg ? -y : y;
        if (variant != WM_EXI_GYEAR) {
            if (i + 3 > len || s[i] != '-' || !digits2(s + i + 1, &p->month)) return false;
            i += 3;
        }
        if (variant == WM_EXI_DATE || variant == WM_EXI_DATETIME_V) {
            if (i + 3 > len || s[i] != '-' || !digits2(s + i + 1, &p->day)) return false;
            i += 3;
        }
        if (variant == WM_EXI_DATETIME_V) {
            if (i >= len || s[i] != 'T') return false;
            i++;
        }
    } else if (variant != WM_EXI_TIME) {
        if (i + 2 > len || s[0] != '-' || s[1] != '-') return false;
        i = 2;
        if (variant == WM_EXI_GDAY) {
            if (i + 3 > len || s[i] != '-' || !digits2(s + i + 1, &p->day)) return false;
            i += 3;
        } else {
            if (i + 2 > len || !digits2(s + i, &p->month)) return false;
            i += 2;
            if (variant == WM_EXI_GMONTHDAY) {
                if (i + 3 > len || s[i] != '-' || !digits2(s + i + 1, &p->day)) return false;
                i += 3;
            }
        }
    }
    if (variant == WM_EXI_DATETIME_V || variant == WM_EXI_TIME) {
        if (i + 8 > len || !digits2(s + i, &p->hh) || s[i + 2] != ':' || !digits2(s + i + 3, &p->mi) ||
            s[i + 5] != ':' || !digits2(s + i + 6, &p->ss))
            return false;
        i += 8;
        if (i < len && s[i] == '.') {
            size_t st = ++i;
            while (i < len && s[i] >= '0' && s[i] <= '9') i++;
            if (i == st || i - st > 18) return false;
            uint64_t f = 0;
            for (size_t k = i; k > st; k--) f = f * 10 + (uint64_t)(s[k - 1] - '0');
            p->has_fs = true;
            p->fs_rev = f;
        }
    }
    if (i < len) {
        p->has_tz = true;
        if (s[i] == 'Z' && i + 1 == len) p->tz = 0;
        else {
            unsigned h, m;
            if (i + 6 != len || (s[i] != '+' && s[i] != '-') || !digits2(s + i + 1, &h) || s[i + 3] != ':' ||
                !digits2(s + i + 4, &m) || h > 14 || m > 59)
                return false;
            p->tz = (int)(h * 64 + m) * (s[i] == '-' ? -1 : 1);
        }
    }
    if (p->month > 12 || p->day > 31 || p->hh > 24 || p->mi > 59 || p->ss > 60) return false;
    return true;
}

/* XML Schema's time zone range, -14:00..+14:00 inclusive, in the
 * hours*64 + minutes form of §7.1.8 (h <= 14 alone lets 14:59 through). */
static bool tz_in_range(const dtparts *p)
{
    return !p->has_tz || (p->tz >= -TZ_MAX && p->tz <= TZ_MAX);
}

static wm_exi_status write_datetime(wm_exi_writer *w, unsigned variant, const dtparts *p)
{
    wm_exi_status st = WM_EXI_OK;
    if (variant <= WM_EXI_DATETIME_V && (st = write_integer(w, p->year - 2000))) return st;
    if (variant != WM_EXI_GYEAR && variant != WM_EXI_TIME && (st = wm_exi_write_nbit(w, 9, p->month * 32 + p->day)))
        return st;
    if (variant == WM_EXI_DATETIME_V || variant == WM_EXI_TIME) {
        if ((st = wm_exi_write_nbit(w, 17, (p->hh * 64 + p->mi) * 64 + p->ss))) return st;
        if ((st = wm_exi_write_bool(w, p->has_fs))) return st;
        if (p->has_fs && (st = wm_exi_write_uint(w, p->fs_rev))) return st;
    }
    if ((st = wm_exi_write_bool(w, p->has_tz))) return st;
    if (p->has_tz) st = wm_exi_write_nbit(w, 11, (uint32_t)(p->tz + 896));
    return st;
}

static int b64val(char c)
{
    const char *p = strchr(b64, c);
    return (c && p) ? (int)(p - b64) : -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes base64 or hex text into out (NULL to only count). Returns bytes or -1. */
static long decode_binary(bool hex, const char *s, size_t len, uint8_t *out)
{
    long n = 0;
    if (hex) {
        trim(&s, &len);
        if (len % 2) return -1;
        for (size_t i = 0; i < len; i += 2) {
            int a = hexval(s[i]), b = hexval(s[i + 1]);
            if (a < 0 || b < 0) return -1;
            if (out) out[n] = (uint8_t)(a << 4 | b);
            n++;
        }
        return n;
    }
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') { pad++; continue; }
        int v = b64val(c);
        if (v < 0 || pad) return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (out) out[n] = (uint8_t)(acc >> bits);
            n++;
        }
    }
    return n;
}

static bool rcs_index(const wm_exi_datatype *dt, uint32_t cp, uint32_t *idx)
{
    uint32_t lo = 0, hi = dt->n_rcs;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (dt->rcs[mid] == cp) { *idx = mid; return true; }
        if (dt->rcs[mid] < cp) lo = mid + 1; else hi = mid;
    }
    return false;
}

static wm_exi_status bad_input(wm_exi_writer *w, const char *what, const char *s, size_t len)
{
    return wm_exi_fail(w->err, WM_EXI_E_INPUT, w->pos, "\"%.*s\" is not a valid %s", (int)(len > 40 ? 40 : len), s, what);
}

/* A valid value this codec cannot represent (its 64-bit limit). */
static wm_exi_status too_big(wm_exi_writer *w, const char *what, const char *s, size_t len)
{
    return wm_exi_fail(w->err, WM_EXI_E_UNSUPPORTED, w->pos, "\"%.*s\": unsupported: %s beyond 64 bits",
                       (int)(len > 40 ? 40 : len), s, what);
}

static bool bool_lex(const char *s, size_t len, unsigned *code)
{
    trim(&s, &len);
    static const char *const lex[4] = { "false", "0", "true", "1" };
    for (unsigned i = 0; i < 4; i++)
        if (strlen(lex[i]) == len && !memcmp(s, lex[i], len)) { *code = i; return true; }
    return false;
}

/* ------------------------------------------- enumeration values (§7.2) */

/* A decimal lexical as its value: sign, integer digits without leading
 * zeros, fraction digits without trailing zeros ("+01.50" = "1.5"). */
typedef struct decview {
    bool neg;
    const char *ip, *fp;
    size_t in, fn;
} decview;

static bool dec_value(const char *s, size_t n, bool integer, decview *d)
{
    trim(&s, &n);
    size_t i = 0;
    d->neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) d->neg = s[i++] == '-';
    size_t is = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    size_t ie = i, fs = i, fe = i;
    if (!integer && i < n && s[i] == '.') {
        fs = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        fe = i;
    }
    if (i != n || (ie == is && fe == fs)) return false;
    while (is < ie && s[is] == '0') is++;
    while (fe > fs && s[fe - 1] == '0') fe--;
    d->ip = s + is; d->in = ie - is;
    d->fp = s + fs; d->fn = fe - fs;
    if (!d->in && !d->fn) d->neg = false; /* -0 = 0 */
    return true;
}

/* Days from 1970-01-01 to the proleptic Gregorian y-m-d (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* A date/time value as a point on the time line (seconds, UTC when it has a
 * time zone): XML Schema compares such values after normalising the zone;
 * missing fields take XML Schema's reference date 1972-12-31. */
static int64_t dt_seconds(const dtparts *p, unsigned variant)
{
    bool has_year = variant <= WM_EXI_DATETIME_V, has_month = variant != WM_EXI_GYEAR && variant != WM_EXI_GDAY && variant != WM_EXI_TIME;
    bool has_day = variant == WM_EXI_DATE || variant == WM_EXI_DATETIME_V || variant == WM_EXI_GMONTHDAY || variant == WM_EXI_GDAY;
    int64_t days = days_from_civil(has_year ? p->year : 1972, has_month ? p->month : 12, has_day ? p->day : 31);
    int64_t tz = p->tz < 0 ? -((-p->tz) / 64 * 60 + (-p->tz) % 64) : p->tz / 64 * 60 + p->tz % 64;
    return ((days * 24 + p->hh) * 60 + p->mi - tz) * 60 + p->ss;
}

/* Whether lexicals a and b are one value of the enumeration's base type:
 * an XML Schema enumeration is a set of values, and §7.2 encodes the index
 * of the document's value, whatever its lexical form (1 = 01 for xs:int,
 * 1.50 = 1.5, 1e1 = 10.0, 2020-01-01T01:00:00+01:00 =
 * 2020-01-01T00:00:00Z, 0a = 0A for hexBinary). Strings compare as written
 * (after trimming), and so does anything else (xs:boolean takes no
 * enumeration facet). */
static bool enum_value_eq(const wm_exi_datatype *dt, const char *a, size_t an, const char *b, size_t bn)
{
    switch (dt->enum_base) {
    case WM_EXI_DT_DECIMAL: case WM_EXI_DT_INTEGER: case WM_EXI_DT_UNSIGNED: case WM_EXI_DT_NBIT: {
        bool integer = dt->enum_base != WM_EXI_DT_DECIMAL;
        decview x, y;
        return dec_value(a, an, integer, &x) && dec_value(b, bn, integer, &y) && x.neg == y.neg && x.in == y.in &&
               x.fn == y.fn && !memcmp(x.ip, y.ip, x.in) && !memcmp(x.fp, y.fp, x.fn);
    }
    case WM_EXI_DT_FLOAT: {
        int64_t xm, ym;
        int32_t xe, ye;
        if (!wm_exi_float_parse(a, an, &xm, &xe) || !wm_exi_float_parse(b, bn, &ym, &ye)) return false;
        if (xm == 0 && ym == 0 && xe != -16384 && ye != -16384) return true; /* 0 = -0 = 0.0E3 */
        return xm == ym && xe == ye;
    }
    case WM_EXI_DT_DATETIME: {
        dtparts x, y;
        if (!parse_datetime(a, an, dt->variant, &x) || !parse_datetime(b, bn, dt->variant, &y)) return false;
        uint64_t xf = x.has_fs ? x.fs_rev : 0, yf = y.has_fs ? y.fs_rev : 0;
        return x.has_tz == y.has_tz && dt_seconds(&x, dt->variant) == dt_seconds(&y, dt->variant) && xf == yf;
    }
    case WM_EXI_DT_BASE64: case WM_EXI_DT_HEX: {
        bool hex = dt->enum_base == WM_EXI_DT_HEX;
        long xn = decode_binary(hex, a, an, NULL), yn = decode_binary(hex, b, bn, NULL);
        if (xn < 0 || xn != yn) return false;
        uint8_t *xb = malloc((size_t)xn + 1), *yb = malloc((size_t)yn + 1);
        bool eq = xb && yb;
        if (eq) {
            decode_binary(hex, a, an, xb);
            decode_binary(hex, b, bn, yb);
            eq = !memcmp(xb, yb, (size_t)xn);
        }
        free(xb);
        free(yb);
        return eq;
    }
    default:
        trim(&a, &an);
        trim(&b, &bn);
        return an == bn && !memcmp(a, b, an);
    }
}

static wm_exi_status value_write(wm_exi_writer *w, const wm_exi_datatype *types, const wm_exi_datatype *dt,
                                 const char *s, size_t len, bool dry)
{
    wm_exi_status st = WM_EXI_OK;
    switch (dt->kind) {
    case WM_EXI_DT_BOOLEAN: {
        unsigned c;
        if (!bool_lex(s, len, &c)) return bad_input(w, "boolean", s, len);
        if (dry) return WM_EXI_OK;
        return dt->pattern_bool ? wm_exi_write_nbit(w, 2, c) : wm_exi_write_bool(w, c >= 2);
    }
    case WM_EXI_DT_INTEGER: {
        int64_t v;
        numparse r = parse_int(s, len, &v);
        if (r != NUM_OK) return r == NUM_BIG ? too_big(w, "integer", s, len) : bad_input(w, "integer", s, len);
        return dry ? WM_EXI_OK : write_integer(w, v);
    }
    case WM_EXI_DT_UNSIGNED: {
        uint64_t v;
        numparse r = parse_uint(s, len, &v);
        if (r != NUM_OK)
            return r == NUM_BIG ? too_big(w, "integer", s, len) : bad_input(w, "non-negative integer", s, len);
        return dry ? WM_EXI_OK : wm_exi_write_uint(w, v);
    }
    case WM_EXI_DT_NBIT: {
        int64_t v;
        if (parse_int(s, len, &v) != NUM_OK || v < dt->nbit_min || (uint64_t)(v - dt->nbit_min) >= (1ull << dt->nbit_width))
            return bad_input(w, "integer in the bounded range", s, len);
        return dry ? WM_EXI_OK : wm_exi_write_nbit(w, dt->nbit_width, (uint32_t)(v - dt->nbit_min));
    }
    case WM_EXI_DT_DECIMAL: {
        const char *p = s;
        size_t n = len;
        trim(&p, &n);
        size_t i = 0;
        bool neg = false;
        if (i < n && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-';
        uint64_t ip = 0, fp = 0;
        bool any = false, big = false;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, any = true)
            big = big || !acc_digit(&ip, (unsigned)(p[i] - '0'));
        if (i < n && p[i] == '.') {
            size_t st0 = ++i;
            while (i < n && p[i] >= '0' && p[i] <= '9') i++;
            size_t end = i;
            while (end > st0 && p[end - 1] == '0') end--; /* trailing zeros carry no value */
            for (size_t k = end; k > st0; k--) big = big || !acc_digit(&fp, (unsigned)(p[k - 1] - '0'));
            any = any || i > st0;
        }
        if (!any || i != n) return bad_input(w, "decimal", s, len);
        if (big) return too_big(w, "decimal integral or (reversed) fractional part", s, len);
        if (dry) return WM_EXI_OK;
        if ((st = wm_exi_write_bool(w, neg && (ip || fp))) || (st = wm_exi_write_uint(w, ip))) return st;
        return wm_exi_write_uint(w, fp);
    }
    case WM_EXI_DT_FLOAT: {
        int64_t m;
        int32_t e;
        if (!wm_exi_float_parse(s, len, &m, &e)) return bad_input(w, "float/double", s, len);
        if (dry) return WM_EXI_OK;
        if ((st = write_integer(w, m))) return st;
        return write_integer(w, e);
    }
    case WM_EXI_DT_DATETIME: {
        dtparts p;
        if (!parse_datetime(s, len, dt->variant, &p)) return bad_input(w, "date/time value", s, len);
        char why[128];
        if (!dt_value_ok(dt->variant, p.year, p.month, p.day, p.hh, p.mi, p.ss, p.has_fs && p.fs_rev, why, sizeof why))
            return wm_exi_fail(w->err, WM_EXI_E_INPUT, w->pos, "\"%.*s\" is not a valid date/time value: %s (XML Schema value space, EXI §7.1.8)",
                               (int)(len > 40 ? 40 : len), s, why);
        if (!tz_in_range(&p))
            return wm_exi_fail(w->err, WM_EXI_E_INPUT, w->pos,
                               "\"%.*s\" is not a valid date/time value: time zone beyond -14:00..+14:00 (XML Schema, EXI §7.1.8)",
                               (int)(len > 40 ? 40 : len), s);
        return dry ? WM_EXI_OK : write_datetime(w, dt->variant, &p);
    }
    case WM_EXI_DT_BASE64: case WM_EXI_DT_HEX: {
        long n = decode_binary(dt->kind == WM_EXI_DT_HEX, s, len, NULL);
        if (n < 0) return bad_input(w, dt->kind == WM_EXI_DT_HEX ? "hexBinary" : "base64Binary", s, len);
        if (dry) return WM_EXI_OK;
        if ((st = wm_exi_write_uint(w, (uint64_t)n))) return st;
        uint8_t tmp[256];
        if (n <= (long)sizeof tmp) {
            decode_binary(dt->kind == WM_EXI_DT_HEX, s, len, tmp);
            for (long i = 0; i < n; i++) if ((st = wm_exi_write_byte(w, tmp[i]))) return st;
            return WM_EXI_OK;
        }
        return wm_exi_fail(w->err, WM_EXI_E_LENGTH, w->pos, "binary values above 256 bytes are not encoded");
    }
    case WM_EXI_DT_ENUM: {
        for (uint32_t i = 0; i < dt->n_enum; i++)
            if (enum_value_eq(dt, s, len, dt->enum_values[i], strlen(dt->enum_values[i])))
                return dry ? WM_EXI_OK : wm_exi_write_nbit(w, wm_exi_code_width(dt->n_enum), i);
        return bad_input(w, "enumerated value", s, len);
    }
    case WM_EXI_DT_RCS_STRING: case WM_EXI_DT_STRING: {
        if (dry) return WM_EXI_OK;
        if ((st = wm_exi_write_uint(w, wm_exi_utf8_count(s, len)))) return st;
        unsigned wd = dt->kind == WM_EXI_DT_RCS_STRING ? wm_exi_code_width(dt->n_rcs + 1) : 0;
        for (size_t i = 0; i < len;) {
            uint32_t cp, idx;
            unsigned k = wm_exi_utf8_get(s + i, len - i, &cp);
            if (!k) return bad_input(w, "UTF-8 string", s, len);
            i += k;
            if (!wd) st = wm_exi_write_uint(w, cp);
            else if (rcs_index(dt, cp, &idx)) st = wm_exi_write_nbit(w, wd, idx);
            else if (!(st = wm_exi_write_nbit(w, wd, dt->n_rcs))) st = wm_exi_write_uint(w, cp);
            if (st) return st;
        }
        return WM_EXI_OK;
    }
    case WM_EXI_DT_LIST: {
        const char *p = s;
        size_t n = len;
        trim(&p, &n);
        const wm_exi_datatype *it = &types[dt->list_item];
        if (it->kind == WM_EXI_DT_LIST) return bad_input(w, "list (of lists)", s, len);
        uint64_t count = 0;
        for (size_t i = 0; i < n;) {
            while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
            size_t st0 = i;
            while (i < n && !(p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
            if (i > st0) {
                if ((st = value_write(w, types, it, p + st0, i - st0, true))) return st;
                count++;
            }
        }
        if (dry) return WM_EXI_OK;
        if ((st = wm_exi_write_uint(w, count))) return st;
        for (size_t i = 0; i < n;) {
            while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
            size_t st0 = i;
            while (i < n && !(p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
            if (i > st0 && (st = value_write(w, types, it, p + st0, i - st0, false))) return st;
        }
        return WM_EXI_OK;
    }
    default:
        return wm_exi_fail(w->err, WM_EXI_E_INPUT, w->pos, "datatype kind %u cannot be written directly", dt->kind);
    }
}

wm_exi_status wm_exi_value_write(wm_exi_writer *w, const wm_exi_datatype *types, const wm_exi_datatype *dt,
                                 const char *s, size_t len)
{
    wm_exi_status st = value_write(w, types, dt, s, len, true);
    if (st) return st;
    return value_write(w, types, dt, s, len, false);
}

wm_exi_status wm_exi_value_check(const wm_exi_datatype *types, const wm_exi_datatype *dt, const char *s, size_t len,
                                 wm_exi_error *err)
{
    wm_exi_writer w;
    memset(&w, 0, sizeof w);
    w.err = err;
    return value_write(&w, types, dt, s, len, true);
}

bool wm_exi_value_valid(const wm_exi_datatype *types, const wm_exi_datatype *dt, const char *s, size_t len)
{
    return wm_exi_value_check(types, dt, s, len, NULL) == WM_EXI_OK;
}
