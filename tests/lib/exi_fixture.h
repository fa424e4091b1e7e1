/* EXI test helper shared by the content-filter tests: XML text to an EXI
 * stream with a compiled grammar, options in the header. */
#ifndef WM_TESTS_LIB_EXI_FIXTURE_H
#define WM_TESTS_LIB_EXI_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_error.h"
#include "codec/exi_grammar.h"

/* Encodes xml (NUL-terminated) with g into out[0..cap): bit-packed, strict
 * as asked, options written in the header. Returns the stream length, or 0
 * with *err filled when the XML does not encode. */
size_t wm_test_exi_encode(const wm_exi_grammar *g, const char *xml, bool strict, uint8_t *out, size_t cap,
                          wm_exi_error *err);

#endif
