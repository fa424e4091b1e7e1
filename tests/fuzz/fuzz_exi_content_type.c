/* Fuzzes the Content Type binding of content filters
 * (wm_exi_content_type_schema, control/schema_registry.h). Besides "no
 * crash", it checks that an accepted schema name is a non-empty view inside
 * the input, without quotes or backslashes, and that the input starts with
 * the EXI media type. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control/schema_registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ct = (const char *)data, *name = NULL;
    size_t nl = 0;
    if (!wm_exi_content_type_schema(ct, size, &name, &nl)) return 0;
    if (!name || nl == 0 || name < ct || name + nl > ct + size) abort();
    if (memchr(name, '"', nl) || memchr(name, '\\', nl)) abort();
    if (size < 15 || strncasecmp(ct, "application/exi", 15)) abort();
    return 0;
}
