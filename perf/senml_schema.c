#include "perf/senml_schema.h"

#include <stdio.h>
#include <stdlib.h>

#include "codec/exi_xsd.h"

bool wm_bench_senml_grammar(wm_bench_state *st, wm_exi_grammar **g)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    wm_exi_error e = { 0 };
    if (wm_exi_xsd_compile(path, g, &e)) {
        wm_bench_skip_with_error(st, "cannot compile senml.gen.xsd (set WM_SHARED)");
        return false;
    }
    return true;
}
