/* Fuzzes the Content Type binding of content filters
 * (wm_exi_content_type_parse and wm_exi_content_type_schema,
 * control/exi_content_type.h, with the option parameters of
 * control/exi_oob.h). Besides "no crash, nothing read beyond the length"
 * (ASan), it checks: an accepted text starts, after whitespace, with the EXI
 * media type; the schema name is 1..64 bytes, NUL-terminated, without the
 * bytes a quoted-string cannot carry; written back as a quoted-string with
 * every byte escaped, together with the options found, it parses to the
 * same name and options (quoted-pairs undone exactly once); only the options
 * given are set and numbers stay below the "unbounded" sentinel unless they
 * say "unbounded"; a refusal has a NUL-terminated reason, with a position
 * inside the input for BAD; and the two entry points agree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control/exi_content_type.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_bool(char *b, size_t cap, size_t *n, const char *name, bool v)
{
    *n += (size_t)snprintf(b + *n, cap - *n, "; %s=%s", name, v ? "TRUE" : "false");
}

static void put_num(char *b, size_t cap, size_t *n, const char *name, uint32_t v)
{
    if (v == WM_EXI_UNBOUNDED) *n += (size_t)snprintf(b + *n, cap - *n, ";%s=\"unbounded\"", name);
    else *n += (size_t)snprintf(b + *n, cap - *n, ";%s=%u", name, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ct = (const char *)data, *n2 = NULL;
    size_t nl2 = 0;
    wm_exi_ct c;
    char why[160];
    memset(why, 'x', sizeof why);
    wm_exi_ct_status st = wm_exi_content_type_parse(ct, size, &c, why, sizeof why);
    if ((st == WM_EXI_CT_OK) != wm_exi_content_type_schema(ct, size, &n2, &nl2)) abort();
    if (st != WM_EXI_CT_OK) {
        if (!memchr(why, 0, sizeof why) || !why[0]) abort();
        unsigned long p = 0;
        bool has_pos = sscanf(why, "position %lu:", &p) == 1;
        if (st == WM_EXI_CT_BAD && !has_pos) abort();
        if (has_pos && (p < 1 || p > size + 1)) abort();
        return 0;
    }
    if (nl2 != c.schema_len || memcmp(n2, c.schema, nl2)) abort();
    if (c.schema_len < 1 || c.schema_len > WM_EXI_CT_NAME_MAX || c.schema[c.schema_len]) abort();
    for (size_t i = 0; i < c.schema_len; i++) {
        unsigned char b = (unsigned char)c.schema[i];
        if ((b < 0x20 && b != '\t') || b == 0x7f) abort();
    }
    size_t k = 0;
    while (k < size && (ct[k] == ' ' || ct[k] == '\t')) k++;
    if (size - k < 15 || strncasecmp(ct + k, "application/exi", 15)) abort();
    const wm_exi_oob *ov = &c.ov;
    if (ov->set & ~(uint32_t)(WM_EXI_OOB_STRICT | WM_EXI_OOB_BYTE_ALIGNED | WM_EXI_OOB_FRAGMENT | WM_EXI_OOB_VALUE_MAX_LENGTH |
                              WM_EXI_OOB_VALUE_PARTITION_CAPACITY))
        abort();
    /* "unbounded" in the input once backslashes are dropped (quoted-pairs
     * may spell it; the input is not NUL-terminated: no strcasestr) */
    char *plain = malloc(size + 1);
    if (!plain) abort();
    size_t pl = 0;
    for (size_t i = 0; i < size; i++)
        if (ct[i] != '\\') plain[pl++] = ct[i];
    bool says_unbounded = false;
    for (size_t i = 0; i + 9 <= pl && !says_unbounded; i++) says_unbounded = !strncasecmp(plain + i, "unbounded", 9);
    free(plain);
    if ((ov->set & WM_EXI_OOB_VALUE_MAX_LENGTH) && ov->value_max_length == WM_EXI_UNBOUNDED && !says_unbounded) abort();
    if ((ov->set & WM_EXI_OOB_VALUE_PARTITION_CAPACITY) && ov->value_partition_capacity == WM_EXI_UNBOUNDED && !says_unbounded)
        abort();
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_oob_apply(ov, &o);
    if (o.strict != ((ov->set & WM_EXI_OOB_STRICT) && ov->strict)) abort();
    if ((o.alignment == WM_EXI_BYTE_ALIGNED) != ((ov->set & WM_EXI_OOB_BYTE_ALIGNED) && ov->byte_aligned)) abort();
    /* written back: every byte of the name as a quoted-pair, the options as tokens */
    char b[512];
    size_t n = (size_t)snprintf(b, sizeof b, "Application/EXI ;SCHEMA=\"");
    for (size_t i = 0; i < c.schema_len; i++) {
        b[n++] = '\\';
        b[n++] = c.schema[i];
    }
    b[n++] = '"';
    if (ov->set & WM_EXI_OOB_STRICT) put_bool(b, sizeof b, &n, "strict", ov->strict);
    if (ov->set & WM_EXI_OOB_BYTE_ALIGNED) put_bool(b, sizeof b, &n, "byte-aligned", ov->byte_aligned);
    if (ov->set & WM_EXI_OOB_FRAGMENT) put_bool(b, sizeof b, &n, "fragment", ov->fragment);
    if (ov->set & WM_EXI_OOB_VALUE_MAX_LENGTH) put_num(b, sizeof b, &n, "value-max-length", ov->value_max_length);
    if (ov->set & WM_EXI_OOB_VALUE_PARTITION_CAPACITY)
        put_num(b, sizeof b, &n, "value-partition-capacity", ov->value_partition_capacity);
    b[n++] = ';';
    wm_exi_ct back;
    if (wm_exi_content_type_parse(b, n, &back, why, sizeof why) != WM_EXI_CT_OK) {
        fprintf(stderr, "written back, refused: %.*s: %s\n", (int)n, b, why);
        abort();
    }
    if (back.schema_len != c.schema_len || memcmp(back.schema, c.schema, c.schema_len) ||
        memcmp(&back.ov, &c.ov, sizeof c.ov)) {
        fprintf(stderr, "written back, parsed differently: %.*s\n", (int)n, b);
        abort();
    }
    return 0;
}
