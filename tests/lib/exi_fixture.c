/* Compiled schemas of the shared EXI data set (see exi_fixture.h). */
#include "tests/lib/exi_fixture.h"

#include <stdio.h>
#include <stdlib.h>

#include "codec/exi_xsd.h"

wm_exi_grammar *wm_test_exi_schema(const char *rel, wm_exi_error *err)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    wm_exi_grammar *g = NULL;
    return wm_exi_xsd_compile(path, &g, err) == WM_EXI_OK ? g : NULL;
}
