/* One decoder (and one encoder) reused over many documents behaves like a
 * fresh one per document: the string table and learned built-in grammars of
 * a document never leak into the next (§7.3.1: the table starts from its
 * initial entries for every stream). The string table restores only what a
 * document touched, so this checks that the touched set is complete: undeclared
 * elements named like schema attributes (seeded local names that get a
 * built-in grammar, §8.4.3), values added to seeded names, new names. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "perf/exi_senml_gen.h"
#include "tests/lib/exi_fixture.h"

static char *decode_xml(wm_exi_decoder *d, const uint8_t *b, size_t n)
{
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    wm_exi_error e;
    cr_assert_eq(wm_exi_decode(d, b, n, NULL, wm_exi_xml_sink_event, &sink, NULL, &e), WM_EXI_OK, "%s", e.msg);
    char *s = strdup(sink.buf ? sink.buf : "");
    wm_exi_xml_sink_free(&sink);
    return s;
}

Test(exi_reuse, reused_decoder_and_encoder_equal_fresh_ones)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    /* non-strict: {""}n and {""}v are seeded local names (SenML attributes)
     * used as undeclared elements; "extra" and "q" are new names */
    static const char *const fixed[] = {
        "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><senml n=\"a\" v=\"1\"/>"
        "<n xmlns=\"\" u=\"x\">t1<v>2</v><v>3</v></n><extra q=\"1\">z</extra></sensml>",
        "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><n xmlns=\"\">t2</n><senml n=\"a\" vs=\"a\"/>"
        "<v xmlns=\"\" n=\"y\"><n/></v></sensml>",
        "<sensml xmlns=\"urn:ietf:params:xml:ns:senml\"><n xmlns=\"\" u=\"x\">t1<v>2</v><v>3</v></n></sensml>",
    };
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder reused_enc;
    wm_exi_encoder_init(&reused_enc, g, &o, false, true, NULL);
    wm_exi_decoder reused;
    wm_exi_decoder_init(&reused, g, NULL);
    uint64_t seed = 0x2e05e;
    for (unsigned i = 0; i < 60; i++) {
        char gen[8192];
        const char *xml = gen;
        if (i % 4 < 3) xml = fixed[(i / 4 + i) % 3];
        else wm_senml_gen_pack(&seed, 1 + i % 12, gen, sizeof gen);
        uint8_t a[8192], b[8192];
        size_t na, nb;
        wm_exi_encoder fresh_enc;
        wm_exi_encoder_init(&fresh_enc, g, &o, false, true, NULL);
        cr_assert_eq(wm_exi_encode_xml(&reused_enc, xml, strlen(xml), a, sizeof a, &na, &e), WM_EXI_OK, "doc %u: %s", i, e.msg);
        cr_assert_eq(wm_exi_encode_xml(&fresh_enc, xml, strlen(xml), b, sizeof b, &nb, &e), WM_EXI_OK, "doc %u: %s", i, e.msg);
        wm_exi_encoder_free(&fresh_enc);
        cr_assert(na == nb && !memcmp(a, b, na), "doc %u: a reused encoder wrote other bytes", i);
        wm_exi_decoder fresh;
        wm_exi_decoder_init(&fresh, g, NULL);
        char *x1 = decode_xml(&reused, a, na), *x2 = decode_xml(&fresh, a, na);
        wm_exi_decoder_free(&fresh);
        cr_assert_str_eq(x1, x2, "doc %u: a reused decoder read it differently", i);
        cr_assert(strstr(x1, "sensml"), "doc %u: %s", i, x1);
        free(x1);
        free(x2);
    }
    wm_exi_decoder_free(&reused);
    wm_exi_encoder_free(&reused_enc);
    wm_exi_grammar_free(g);
}
