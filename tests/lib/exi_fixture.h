/* EXI test helpers: the EXI schemas of the shared data set
 * (../shared/data/exi, or $WM_SHARED/data/exi) compiled for tests — the
 * SenML schema senml.gen.xsd and the W3C interop schemas — and XML text to
 * an EXI stream for the content-filter tests. */
#ifndef WM_TESTS_LIB_EXI_FIXTURE_H
#define WM_TESTS_LIB_EXI_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_error.h"
#include "codec/exi_grammar.h"
#include "codec/exi_header.h"
#include "codec/exi_xml.h"

/* Compiles $WM_SHARED/data/exi/<rel> (e.g. "senml/senml.gen.xsd"); NULL
 * with *err filled on failure. Free with wm_exi_grammar_free. */
wm_exi_grammar *wm_test_exi_schema(const char *rel, wm_exi_error *err);

/* Compiles the XSD text xsd (NUL-terminated, no includes); NULL with *err
 * filled on failure. Free with wm_exi_grammar_free. */
wm_exi_grammar *wm_test_exi_schema_text(const char *xsd, wm_exi_error *err);

/* Encodes xml (NUL-terminated) with g into out[0..cap): bit-packed, strict
 * as asked, options written in the header. Returns the stream length, or 0
 * with *err filled when the XML does not encode. */
size_t wm_test_exi_encode(const wm_exi_grammar *g, const char *xml, bool strict, uint8_t *out, size_t cap,
                          wm_exi_error *err);

/* Decodes buf[0..n) with g and the out-of-band options o into the XML sink
 * s (initialised by the caller, freed by it); general forces the decoder's
 * general path. *stopped and *stop_pos (may be NULL): whether the sink
 * stopped the decoder, and where (wm_exi_decoder.stop_bit_pos). */
wm_exi_status wm_test_exi_decode_xml(const wm_exi_grammar *g, const uint8_t *buf, size_t n, const wm_exi_options *o,
                                     bool general, wm_exi_xml_sink *s, bool *stopped, uint64_t *stop_pos,
                                     wm_exi_error *err);

/* Encodes xml with g and options o (out of band: no options header), then
 * decodes the stream to XML text in out[0..cap) (truncated to fit). Returns
 * the status of the step that failed, with *err filled, or WM_EXI_OK. */
wm_exi_status wm_test_exi_xml_round_trip(const wm_exi_grammar *g, const wm_exi_options *o, const char *xml, char *out,
                                         size_t cap, wm_exi_error *err);

/* The SenML fixture of the content-filter concurrency tests: in a new
 * directory dir (a mkdtemp template, rewritten), a schema registry file
 * (its path in reg, cap bytes) with the line "senml XSD
 * s=urn:ietf:params:xml:ns:senml"; and two packs encoded into pack[d]
 * (len[d] bytes): pack 0 has a "Cel" record with v = 21.5 (and a "V" one),
 * pack 1 only a "V" record with v = 30. Returns NULL, or why it failed
 * (static text). The caller removes reg and dir. */
const char *wm_test_senml_fixture(char *dir, char *reg, size_t cap, uint8_t pack[2][512], size_t len[2]);

struct wm_mqtt_sink;
/* Hands the match sink sk a client PUBLISH (client "pub", sequence number
 * seq) on topic with Content Type ct and payload[0..len), as the MQTT layer
 * would; returns the sink's outcome (an enum wm_mqtt_pub_outcome). */
int wm_test_publish_exi(const struct wm_mqtt_sink *sk, uint64_t seq, const char *topic, const char *ct,
                        const uint8_t *payload, size_t len);

#endif
