/* Out-of-band EXI options as text (control/exi_oob.h). */
#include "control/exi_oob.h"

#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

static bool is(const char *s, size_t n, const char *lit)
{
    size_t l = 0;
    while (lit[l]) l++;
    return n == l && !strncasecmp(s, lit, l);
}

static const struct {
    const char *name;
    uint32_t bit;
    bool number;
} opts[] = {
    { "strict", WM_EXI_OOB_STRICT, false },
    { "byte-aligned", WM_EXI_OOB_BYTE_ALIGNED, false },
    { "fragment", WM_EXI_OOB_FRAGMENT, false },
    { "value-max-length", WM_EXI_OOB_VALUE_MAX_LENGTH, true },
    { "value-partition-capacity", WM_EXI_OOB_VALUE_PARTITION_CAPACITY, true },
};

/* decimal 0..WM_EXI_UNBOUNDED-1, or "unbounded" (= WM_EXI_UNBOUNDED) */
static bool number(const char *v, size_t n, uint32_t *out)
{
    if (is(v, n, "unbounded")) {
        *out = WM_EXI_UNBOUNDED;
        return true;
    }
    if (n == 0 || n > 10) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (x >= WM_EXI_UNBOUNDED) return false;
    *out = (uint32_t)x;
    return true;
}

wm_exi_oob_status wm_exi_oob_set(wm_exi_oob *ov, const char *key, size_t kl, const char *val, size_t vl, char *why,
                                 size_t whylen)
{
    size_t k = 0;
    while (k < sizeof opts / sizeof opts[0] && !is(key, kl, opts[k].name)) k++;
    if (k == sizeof opts / sizeof opts[0]) return WM_EXI_OOB_UNKNOWN;
    const char *nm = opts[k].name;
    int shown = vl > 64 ? 64 : (int)vl; /* a hostile value is not echoed whole */
    if (ov->set & opts[k].bit) {
        snprintf(why, whylen, "%s given twice", nm);
        return WM_EXI_OOB_BAD;
    }
    if (opts[k].number) {
        uint32_t n;
        if (!val || !number(val, vl, &n)) {
            if (!val) snprintf(why, whylen, "%s wants a value (%s=N, N 0..%u, or unbounded)", nm, nm, WM_EXI_UNBOUNDED - 1);
            else snprintf(why, whylen, "%s wants a number 0..%u or unbounded, got '%.*s'", nm, WM_EXI_UNBOUNDED - 1, shown, val);
            return WM_EXI_OOB_BAD;
        }
        if (opts[k].bit == WM_EXI_OOB_VALUE_MAX_LENGTH) ov->value_max_length = n;
        else ov->value_partition_capacity = n;
    } else {
        bool b;
        if (!val || is(val, vl, "true")) b = true;
        else if (is(val, vl, "false")) b = false;
        else {
            snprintf(why, whylen, "%s wants true or false, got '%.*s'", nm, shown, val);
            return WM_EXI_OOB_BAD;
        }
        if (opts[k].bit == WM_EXI_OOB_STRICT) ov->strict = b;
        else if (opts[k].bit == WM_EXI_OOB_BYTE_ALIGNED) ov->byte_aligned = b;
        else ov->fragment = b;
    }
    ov->set |= opts[k].bit;
    return WM_EXI_OOB_OK;
}

void wm_exi_oob_apply(const wm_exi_oob *ov, wm_exi_options *o)
{
    if (ov->set & WM_EXI_OOB_STRICT) o->strict = ov->strict;
    if (ov->set & WM_EXI_OOB_BYTE_ALIGNED) o->alignment = ov->byte_aligned ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
    if (ov->set & WM_EXI_OOB_FRAGMENT) o->fragment = ov->fragment;
    if (ov->set & WM_EXI_OOB_VALUE_MAX_LENGTH) o->value_max_length = ov->value_max_length;
    if (ov->set & WM_EXI_OOB_VALUE_PARTITION_CAPACITY) o->value_partition_capacity = ov->value_partition_capacity;
}

bool wm_exi_oob_header_options(const uint8_t *data, size_t len, wm_exi_options *hdr)
{
    wm_exi_error e = { 0 };
    wm_exi_reader r;
    wm_exi_reader_init(&r, data, len, &e);
    wm_exi_header h;
    wm_exi_options_default(hdr);
    return wm_exi_header_read(&r, &h, hdr) == WM_EXI_OK && h.options_present;
}

/* An option's value as its Content Type parameter writes it. */
static void show(char *out, size_t n, uint32_t bit, bool b, uint32_t v)
{
    if (bit & (WM_EXI_OOB_VALUE_MAX_LENGTH | WM_EXI_OOB_VALUE_PARTITION_CAPACITY)) {
        if (v == WM_EXI_UNBOUNDED) snprintf(out, n, "unbounded");
        else snprintf(out, n, "%" PRIu32, v);
    } else {
        snprintf(out, n, "%s", b ? "true" : "false");
    }
}

uint32_t wm_exi_oob_header_conflict(const wm_exi_oob *ov, const uint8_t *data, size_t len, char *why, size_t whylen)
{
    wm_exi_options hdr;
    if (!ov->set || !wm_exi_oob_header_options(data, len, &hdr)) return 0;
    /* the header's options as an overlay setting all five, so that one
     * comparison covers them (alignment: pre-compression is no byte-aligned) */
    const wm_exi_oob hv = { 0, hdr.strict, hdr.alignment == WM_EXI_BYTE_ALIGNED, hdr.fragment, hdr.value_max_length,
                            hdr.value_partition_capacity };
    uint32_t bad = 0;
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        uint32_t bit = opts[k].bit;
        if (!(ov->set & bit)) continue;
        bool b1 = bit == WM_EXI_OOB_STRICT ? ov->strict : bit == WM_EXI_OOB_BYTE_ALIGNED ? ov->byte_aligned : ov->fragment;
        bool b2 = bit == WM_EXI_OOB_STRICT ? hv.strict : bit == WM_EXI_OOB_BYTE_ALIGNED ? hv.byte_aligned : hv.fragment;
        uint32_t v1 = bit == WM_EXI_OOB_VALUE_MAX_LENGTH ? ov->value_max_length : ov->value_partition_capacity;
        uint32_t v2 = bit == WM_EXI_OOB_VALUE_MAX_LENGTH ? hv.value_max_length : hv.value_partition_capacity;
        if (opts[k].number ? v1 == v2 : b1 == b2) continue;
        if (!bad && whylen) {
            char a[16], b[16];
            show(a, sizeof a, bit, b1, v1);
            show(b, sizeof b, bit, b2, v2);
            snprintf(why, whylen, "%s=%s contradicts the payload's options header (%s=%s)", opts[k].name, a,
                     opts[k].name, b);
        }
        bad |= bit;
    }
    return bad;
}
