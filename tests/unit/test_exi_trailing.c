/* Bytes after the end of an EXI document (codec/exi_decode.h,
 * wm_exi_limits.whole_buffer). EXI 1.0 §5/§6: a stream is its header and
 * its body, and the body ends with EndDocument; only the padding of ED's
 * last byte may follow. With whole_buffer, anything more is
 * WM_EXI_E_TRAILING at the first extra byte; without it the extra bytes are
 * ignored (a reader of a longer buffer). The streams are the shared data
 * set's, bit-packed (padding bits in the last byte) and byte-aligned. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_header.h"
#include "tests/lib/exi_fixture.h"

static size_t slurp(const char *rel, uint8_t *out, size_t cap)
{
    char path[1024];
    const char *sh = getenv("WM_SHARED");
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t n = fread(out, 1, cap, f);
    cr_assert(n > 0 && n < cap, "%s: %zu bytes", path, n);
    fclose(f);
    return n;
}

static int ignore(void *user, const wm_exi_event *ev)
{
    (void)user;
    (void)ev;
    return 0;
}

static const struct {
    const char *exi, *xsd;
    bool oob_strict; /* interop streams carry no options header: strict, alignment from the suffix */
} cases[] = {
    { "senml/ex1.gen.exi", "senml/senml.gen.xsd", false },
    { "senml/ex2.gen.exi", "senml/senml.gen.xsd", false },
    { "senml/ex5.gen.exi", "senml/senml.gen.xsd", false },
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.bitPacked",
      "interop/schemaInformedGrammar/acceptance.xsd", true },
    { "interop/schemaInformedGrammar/declaredProductions/sequence-01.byteAligned",
      "interop/schemaInformedGrammar/acceptance.xsd", true },
};

Test(exi_trailing, bytes_after_the_document_are_refused_with_their_position)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wm_exi_error e = { 0 };
        wm_exi_grammar *g = wm_test_exi_schema(cases[i].xsd, &e);
        cr_assert(g, "%s: %s", cases[i].xsd, e.msg);
        uint8_t buf[4096];
        size_t n = slurp(cases[i].exi, buf, sizeof buf - 8);
        wm_exi_options oob, *o = NULL;
        if (cases[i].oob_strict) {
            wm_exi_options_default(&oob);
            cr_assert(wm_exi_options_from_suffix(strrchr(cases[i].exi, '.') + 1, &oob));
            oob.strict = true;
            o = &oob;
        }
        wm_exi_limits whole = { .whole_buffer = true };
        wm_exi_decoder strict_d, lax_d;
        wm_exi_decoder_init(&strict_d, g, &whole);
        wm_exi_decoder_init(&lax_d, g, NULL);
        /* the stream as given: its last byte is ED's (padding included) */
        cr_assert_eq(wm_exi_decode(&strict_d, buf, n, o, ignore, NULL, NULL, &e), WM_EXI_OK, "%s: %s", cases[i].exi,
                     e.msg);
        for (size_t extra = 1; extra <= 5; extra++) {
            for (size_t k = 0; k < extra; k++) buf[n + k] = (uint8_t)(k * 0x5b + extra); /* also 0x00 bytes */
            wm_exi_status st = wm_exi_decode(&strict_d, buf, n + extra, o, ignore, NULL, NULL, &e);
            cr_assert_eq(st, WM_EXI_E_TRAILING, "%s + %zu bytes: status %s (%s)", cases[i].exi, extra,
                         wm_exi_status_name(st), e.msg);
            cr_assert_eq(e.bit_pos, 8 * (uint64_t)n, "%s + %zu: error at bit %llu, the first extra byte is at %zu",
                         cases[i].exi, extra, (unsigned long long)e.bit_pos, 8 * n);
            char want[32];
            snprintf(want, sizeof want, "%zu byte%s after", extra, extra == 1 ? "" : "s");
            cr_assert(strstr(e.msg, want), "%s: reason \"%s\" does not say \"%s\"", cases[i].exi, e.msg, want);
            cr_assert_eq(wm_exi_decode(&lax_d, buf, n + extra, o, ignore, NULL, NULL, &e), WM_EXI_OK,
                         "%s: without whole_buffer the extra bytes are ignored: %s", cases[i].exi, e.msg);
        }
        /* one byte short is still truncation, not trailing */
        cr_assert_neq(wm_exi_decode(&strict_d, buf, n - 1, o, ignore, NULL, NULL, &e), WM_EXI_E_TRAILING);
        wm_exi_decoder_free(&strict_d);
        wm_exi_decoder_free(&lax_d);
        wm_exi_grammar_free(g);
    }
}
