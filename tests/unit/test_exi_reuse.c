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

/* A reused decoder does not parse a header again when a stream starts with
 * the bits of the previous one (codec/exi_decode.c, hdr_memo): streams whose
 * headers differ in one option, or only in their last bits (schemaId "a" /
 * "b", valueMaxLength 5 / 6), in turn, each decoded like a fresh decoder
 * does: same XML, same effective options, same header fields. */
Test(exi_reuse, repeated_and_near_identical_headers)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    enum { NV = 7 };
    uint8_t exi[NV][4096];
    size_t n[NV];
    uint64_t seed = 0x4ead;
    char xml[4096];
    cr_assert(wm_senml_gen_pack(&seed, 4, xml, sizeof xml));
    for (int v = 0; v < NV; v++) {
        wm_exi_options o;
        wm_exi_options_default(&o);
        o.strict = v != 2;
        if (v == 3) o.alignment = WM_EXI_BYTE_ALIGNED;
        if (v <= 1) {
            o.has_schema_id = true;
            strcpy(o.schema_id, v ? "b" : "a");
        }
        if (v == 4 || v == 5) o.value_max_length = v == 4 ? 5 : 6;
        bool cookie = v == 6;
        wm_exi_encoder enc;
        wm_exi_encoder_init(&enc, g, &o, cookie, v != 6 || cookie, NULL);
        cr_assert_eq(wm_exi_encode_xml(&enc, xml, strlen(xml), exi[v], sizeof exi[v], &n[v], &e), WM_EXI_OK, "v%d: %s", v, e.msg);
        wm_exi_encoder_free(&enc);
    }
    wm_exi_decoder reused;
    wm_exi_decoder_init(&reused, g, NULL);
    static const int order[] = { 0, 0, 1, 0, 1, 1, 2, 3, 3, 0, 4, 5, 4, 5, 5, 6, 6, 0, 2, 1 };
    for (unsigned i = 0; i < sizeof order / sizeof *order; i++) {
        int v = order[i];
        wm_exi_decoder fresh;
        wm_exi_decoder_init(&fresh, g, NULL);
        char *x1 = decode_xml(&reused, exi[v], n[v]), *x2 = decode_xml(&fresh, exi[v], n[v]);
        cr_assert_str_eq(x1, x2, "step %u (variant %d): a reused decoder read it differently", i, v);
        const wm_exi_options *a = &reused.opts, *b = &fresh.opts;
        cr_assert(a->alignment == b->alignment && a->strict == b->strict && a->has_schema_id == b->has_schema_id &&
                      !strcmp(a->schema_id, b->schema_id) && a->value_max_length == b->value_max_length,
                  "step %u (variant %d): other options", i, v);
        cr_assert(reused.header.cookie == fresh.header.cookie && reused.header.options_present == fresh.header.options_present,
                  "step %u (variant %d): other header", i, v);
        wm_exi_decoder_free(&fresh);
        free(x1);
        free(x2);
    }
    wm_exi_decoder_free(&reused);
    wm_exi_grammar_free(g);
}
