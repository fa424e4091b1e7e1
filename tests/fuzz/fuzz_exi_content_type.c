/* Fuzzes the Content Type binding of content filters
 * (wm_exi_content_type_parse and wm_exi_content_type_schema,
 * control/schema_registry.h, with the option parameters of
 * control/exi_oob.h). Besides "no crash", it checks that an accepted schema
 * name is a non-empty view inside the input, without quotes or
 * backslashes, that the input starts with the EXI media type, that only the
 * options given are set and numbers stay below the "unbounded" sentinel
 * unless they say "unbounded", that a refusal has a NUL-terminated reason
 * (with a position inside the input for BAD), and that the two entry
 * points agree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control/schema_registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ct = (const char *)data, *name = NULL, *n2 = NULL;
    size_t nl = 0, nl2 = 0;
    wm_exi_oob ov;
    char why[160];
    memset(why, 'x', sizeof why);
    wm_exi_ct_status st = wm_exi_content_type_parse(ct, size, &name, &nl, &ov, why, sizeof why);
    if ((st == WM_EXI_CT_OK) != wm_exi_content_type_schema(ct, size, &n2, &nl2)) abort();
    if (st != WM_EXI_CT_OK) {
        if (!memchr(why, 0, sizeof why) || !why[0]) abort();
        if (st == WM_EXI_CT_BAD) {
            unsigned long p = 0;
            if (sscanf(why, "position %lu:", &p) != 1 || p < 1 || p > size + 1) abort();
        }
        return 0;
    }
    if (n2 != name || nl2 != nl) abort();
    if (!name || nl == 0 || name < ct || name + nl > ct + size) abort();
    if (memchr(name, '"', nl) || memchr(name, '\\', nl)) abort();
    if (size < 15 || strncasecmp(ct, "application/exi", 15)) abort();
    if (ov.set & ~(uint32_t)(WM_EXI_OOB_STRICT | WM_EXI_OOB_BYTE_ALIGNED | WM_EXI_OOB_FRAGMENT | WM_EXI_OOB_VALUE_MAX_LENGTH |
                             WM_EXI_OOB_VALUE_PARTITION_CAPACITY))
        abort();
    if ((ov.set & WM_EXI_OOB_VALUE_MAX_LENGTH) && ov.value_max_length == WM_EXI_UNBOUNDED && !strcasestr(ct, "unbounded"))
        abort();
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_oob_apply(&ov, &o);
    if (o.strict != ((ov.set & WM_EXI_OOB_STRICT) && ov.strict)) abort();
    if ((o.alignment == WM_EXI_BYTE_ALIGNED) != ((ov.set & WM_EXI_OOB_BYTE_ALIGNED) && ov.byte_aligned)) abort();
    return 0;
}
