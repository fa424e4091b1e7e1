/* Compiled schemas of the shared EXI data set and XML -> EXI for tests
 * (see exi_fixture.h). */
#include "tests/lib/exi_fixture.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "dataplane/mqtt_session.h"

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

wm_exi_status wm_test_exi_decode_xml(const wm_exi_grammar *g, const uint8_t *buf, size_t n, const wm_exi_options *o,
                                     bool general, wm_exi_xml_sink *s, bool *stopped, uint64_t *stop_pos,
                                     wm_exi_error *err)
{
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, NULL);
    d.general_only = general;
    wm_exi_status st = wm_exi_decode(&d, buf, n, o, wm_exi_xml_sink_event, s, stopped, err);
    if (stop_pos) *stop_pos = d.stop_bit_pos;
    wm_exi_decoder_free(&d);
    return st;
}

wm_exi_status wm_test_exi_xml_round_trip(const wm_exi_grammar *g, const wm_exi_options *o, const char *xml, char *out,
                                         size_t cap, wm_exi_error *err)
{
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, o, false, false, NULL);
    size_t n = 0, bcap = strlen(xml) * 4 + 256;
    uint8_t *buf = malloc(bcap);
    wm_exi_status st = buf ? wm_exi_encode_xml(&enc, xml, strlen(xml), buf, bcap, &n, err) : WM_EXI_E_MEMORY;
    wm_exi_encoder_free(&enc);
    if (!st) {
        wm_exi_xml_sink s;
        wm_exi_xml_sink_init(&s);
        st = wm_test_exi_decode_xml(g, buf, n, o, false, &s, NULL, NULL, err);
        if (!st) snprintf(out, cap, "%s", s.buf ? s.buf : "");
        wm_exi_xml_sink_free(&s);
    }
    free(buf);
    return st;
}

const char *wm_test_senml_fixture(char *dir, char *reg, size_t cap, uint8_t pack[2][512], size_t len[2])
{
    char xsd[PATH_MAX], rel[PATH_MAX];
    if (!mkdtemp(dir)) return "mkdtemp";
    const char *sh = getenv("WM_SHARED");
    snprintf(rel, sizeof rel, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    if (!realpath(rel, xsd)) return "the SenML schema of the shared data set is missing";
    snprintf(reg, cap, "%s/reg.txt", dir);
    FILE *f = fopen(reg, "w");
    if (!f) return "cannot write the registry file";
    fprintf(f, "senml %s s=urn:ietf:params:xml:ns:senml\n", xsd);
    fclose(f);
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    if (!g) return "the SenML schema does not compile";
    const char *docs[2] = { "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='t' u='V' v='3'/>"
                            "<senml n='t' u='Cel' v='21.5'/></sensml>",
                            "<sensml xmlns='urn:ietf:params:xml:ns:senml'><senml n='t' u='V' v='30'/></sensml>" };
    for (int d = 0; d < 2; d++) len[d] = wm_test_exi_encode(g, docs[d], false, pack[d], 512, &e);
    wm_exi_grammar_free(g);
    return len[0] && len[1] ? NULL : "a SenML pack does not encode";
}

int wm_test_publish_exi(const struct wm_mqtt_sink *sk, uint64_t seq, const char *topic, const char *ct,
                        const uint8_t *payload, size_t len)
{
    wm_mqtt5_packet pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.type = WM_MQTT5_PUBLISH;
    pkt.props.present = 1ull << WM_MQTT5_PROP_CONTENT_TYPE;
    pkt.props.v[WM_MQTT5_PROP_CONTENT_TYPE].s = (wm_mqtt5_bytes){ (const uint8_t *)ct, (uint32_t)strlen(ct) };
    pkt.payload = (wm_mqtt5_bytes){ payload, (uint32_t)len };
    struct wm_mqtt_publish p;
    memset(&p, 0, sizeof p);
    p.seq = seq;
    p.client = "pub";
    p.client_len = 3;
    p.topic = topic;
    p.topic_len = (uint32_t)strlen(topic);
    p.pkt = &pkt;
    return (int)sk->publish(sk->ctx, &p);
}
