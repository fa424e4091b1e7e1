/* Compiled schemas of the shared EXI data set and XML -> EXI for tests
 * (see exi_fixture.h). */
#include "tests/lib/exi_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"

wm_exi_grammar *wm_test_exi_schema(const char *rel, wm_exi_error *err)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    wm_exi_grammar *g = NULL;
    return wm_exi_xsd_compile(path, &g, err) == WM_EXI_OK ? g : NULL;
}

wm_exi_grammar *wm_test_exi_schema_text(const char *xsd, wm_exi_error *err)
{
    wm_exi_grammar *g = NULL;
    return wm_exi_xsd_compile_mem(xsd, strlen(xsd), &g, err) == WM_EXI_OK ? g : NULL;
}

size_t wm_test_exi_encode(const wm_exi_grammar *g, const char *xml, bool strict, uint8_t *out, size_t cap,
                          wm_exi_error *err)
{
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = strict;
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    size_t n = 0;
    wm_exi_status st = wm_exi_encode_xml(&enc, xml, strlen(xml), out, cap, &n, err);
    wm_exi_encoder_free(&enc);
    return st ? 0 : n;
}
