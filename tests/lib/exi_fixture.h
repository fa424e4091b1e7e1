/* The EXI schemas of the shared data set (../shared/data/exi, or
 * $WM_SHARED/data/exi), compiled for tests: the SenML schema senml.gen.xsd
 * and the W3C interop schemas. */
#ifndef WM_TESTS_LIB_EXI_FIXTURE_H
#define WM_TESTS_LIB_EXI_FIXTURE_H

#include "codec/exi_grammar.h"

/* Compiles $WM_SHARED/data/exi/<rel> (e.g. "senml/senml.gen.xsd"); NULL
 * with *err filled on failure. Free with wm_exi_grammar_free. */
wm_exi_grammar *wm_test_exi_schema(const char *rel, wm_exi_error *err);

#endif
