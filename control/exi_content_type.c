/* EXI Content Type parsing, RFC 9110 media-type syntax (control/exi_content_type.h). */
#include "control/exi_content_type.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* tchar, RFC 9110 §5.6.2 */
static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool ows(unsigned char c) { return c == ' ' || c == '\t'; }

/* qdtext, RFC 9110 §5.6.4: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text */
static bool qdtext(unsigned char c) { return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c != 0x5c && c != 0x7f); }

/* what a quoted-pair may escape: HTAB / SP / VCHAR / obs-text */
static bool pairable(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

/* why = "position P: ..." (P 1-based) */
static wm_exi_ct_status at(wm_exi_ct_status st, char *why, size_t whylen, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static wm_exi_ct_status at(wm_exi_ct_status st, char *why, size_t whylen, size_t pos, const char *fmt, ...)
{
    if (why && whylen) {
        int k = snprintf(why, whylen, "position %zu: ", pos + 1);
        if (k > 0 && (size_t)k < whylen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(why + k, whylen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

static size_t token(const char *ct, size_t i, size_t end)
{
    while (i < end && tchar((unsigned char)ct[i])) i++;
    return i;
}

/* A parameter value at ct[*i] (token or quoted-string), its text with
 * quoted-pairs undone in buf[0..cap) (*vl bytes; *vl > cap: it did not fit,
 * buf holds the first cap). *i moves past it. Returns WM_EXI_CT_OK or BAD. */
static wm_exi_ct_status value(const char *ct, size_t *i, size_t end, char *buf, size_t cap, size_t *vl, char *why,
                              size_t whylen)
{
    size_t j = *i, n = 0;
    if (j < end && ct[j] == '"') {
        for (j++;; j++) {
            if (j >= end) return at(WM_EXI_CT_BAD, why, whylen, *i, "unterminated quoted value");
            unsigned char c = (unsigned char)ct[j];
            if (c == '"') break;
            if (c == '\\') {
                if (j + 1 >= end) return at(WM_EXI_CT_BAD, why, whylen, *i, "unterminated quoted value");
                c = (unsigned char)ct[++j];
                if (!pairable(c))
                    return at(WM_EXI_CT_BAD, why, whylen, j, "byte 0x%02x cannot be escaped (HTAB, SP, VCHAR or obs-text)", c);
            } else if (!qdtext(c))
                return at(WM_EXI_CT_BAD, why, whylen, j, "byte 0x%02x is not allowed in a quoted value", c);
            if (n < cap) buf[n] = (char)c;
            n++;
        }
        *i = j + 1;
    } else {
        size_t e = token(ct, j, end);
        for (; j < e; j++, n++)
            if (n < cap) buf[n] = ct[j];
        *i = e;
    }
    *vl = n;
    return WM_EXI_CT_OK;
}

wm_exi_ct_status wm_exi_content_type_parse(const char *ct, size_t len, wm_exi_ct *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (why && whylen) why[0] = 0;
    size_t i = 0, end = len;
    while (i < end && ows((unsigned char)ct[i])) i++;
    while (end > i && ows((unsigned char)ct[end - 1])) end--;
    /* type "/" subtype: what is not a media type cannot name EXI */
    size_t t0 = i, t1 = token(ct, i, end);
    if (t1 == t0) return at(WM_EXI_CT_NOT_EXI, why, whylen, t1, "not a media type: type expected");
    if (t1 >= end || ct[t1] != '/') return at(WM_EXI_CT_NOT_EXI, why, whylen, t1, "not a media type: '/' expected after the type");
    size_t s0 = t1 + 1, s1 = token(ct, s0, end);
    if (s1 == s0) return at(WM_EXI_CT_NOT_EXI, why, whylen, s1, "not a media type: subtype expected");
    if (t1 - t0 != 11 || strncasecmp(ct + t0, "application", 11) || s1 - s0 != 3 || strncasecmp(ct + s0, "exi", 3)) {
        if (why && whylen) snprintf(why, whylen, "not application/exi");
        return WM_EXI_CT_NOT_EXI;
    }
    i = s1;
    bool found = false;
    while (i < end) {
        while (i < end && ows((unsigned char)ct[i])) i++;
        if (ct[i] != ';') return at(WM_EXI_CT_BAD, why, whylen, i, "';' expected before a parameter");
        i++;
        while (i < end && ows((unsigned char)ct[i])) i++;
        if (i == end || ct[i] == ';') continue; /* an empty parameter */
        size_t k0 = i;
        i = token(ct, i, end);
        size_t kl = i - k0;
        int shown = kl > 64 ? 64 : (int)kl; /* a hostile name is not echoed whole */
        if (!kl) return at(WM_EXI_CT_BAD, why, whylen, i, "parameter name expected");
        if (i >= end || ct[i] != '=')
            return at(WM_EXI_CT_BAD, why, whylen, i, "'=' expected after parameter '%.*s'%s", shown, ct + k0,
                      i < end && ows((unsigned char)ct[i]) ? " (no whitespace around '=', RFC 9110 §5.6.6)" : "");
        i++;
        if (i >= end || (ct[i] != '"' && !tchar((unsigned char)ct[i])))
            return at(WM_EXI_CT_BAD, why, whylen, i, "value expected for parameter '%.*s'%s", shown, ct + k0,
                      i < end && ows((unsigned char)ct[i]) ? " (no whitespace around '=', RFC 9110 §5.6.6)" : "");
        bool is_schema = kl == 6 && !strncasecmp(ct + k0, "schema", 6);
        if (is_schema && found) return at(WM_EXI_CT_BAD, why, whylen, k0, "schema given twice (RFC 6838 §4.3)");
        /* option values are short words and numbers: one longer than this cannot be valid */
        char vb[WM_EXI_CT_NAME_MAX + 1];
        char *buf = is_schema ? out->schema : vb;
        size_t vl = 0, v0 = i;
        wm_exi_ct_status st = value(ct, &i, end, buf, WM_EXI_CT_NAME_MAX, &vl, why, whylen);
        if (st) return st;
        if (is_schema) {
            if (!vl) return at(WM_EXI_CT_BAD, why, whylen, v0, "empty schema name");
            if (vl > WM_EXI_CT_NAME_MAX)
                return at(WM_EXI_CT_BAD, why, whylen, v0, "schema name of %zu bytes (registry names have 1..%u)", vl,
                          WM_EXI_CT_NAME_MAX);
            out->schema[vl] = 0;
            out->schema_len = vl;
            found = true;
            continue;
        }
        char w[160];
        /* too long: handed over as written, which the option refuses with its reason */
        wm_exi_oob_status os = vl > WM_EXI_CT_NAME_MAX ? wm_exi_oob_set(&out->ov, ct + k0, kl, ct + v0, i - v0, w, sizeof w)
                                                       : wm_exi_oob_set(&out->ov, ct + k0, kl, vb, vl, w, sizeof w);
        if (os == WM_EXI_OOB_BAD) return at(WM_EXI_CT_BAD, why, whylen, k0, "%s", w);
        if (os == WM_EXI_OOB_UNKNOWN)
            return at(WM_EXI_CT_BAD, why, whylen, k0, "parameter '%.*s' is not an EXI option (schema, %s)", shown, ct + k0,
                      WM_EXI_OOB_NAMES);
    }
    if (!found) {
        if (why && whylen) snprintf(why, whylen, "application/exi without a schema parameter");
        return WM_EXI_CT_NOT_EXI;
    }
    return WM_EXI_CT_OK;
}

bool wm_exi_content_type_schema(const char *ct, size_t len, const char **name, size_t *nlen)
{
    static _Thread_local wm_exi_ct last;
    if (wm_exi_content_type_parse(ct, len, &last, NULL, 0) != WM_EXI_CT_OK) return false;
    *name = last.schema;
    *nlen = last.schema_len;
    return true;
}
