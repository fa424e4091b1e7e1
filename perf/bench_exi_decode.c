/* EXI decode throughput on RFC 8428 SenML packs of 10 records, strict,
 * bit-packed, options in the header (as the RFC's EXI examples), schema
 * senml.gen.xsd from $WM_SHARED/data/exi/senml.
 *
 *   bm_exi_decode_senml10      our decoder, typed values (no lexical text), events counted:
 *                              what a content filter consumes
 *   bm_exi_decode_lexical      the same with every value's lexical text built
 *   bm_exi_decode_to_xml       our decoder writing XML text (wmctl exi decode's path)
 *   bm_libxml2_parse_senml10   in-run reference: libxml2 parsing the same packs as XML
 *
 * bytes/s is over the EXI bytes for ours and the XML bytes for libxml2;
 * items/s is documents/s for all three. Target (issue 6): >= 200 MB/s of EXI
 * on one core. Reproduce: make bench BENCH_FILTER=exi
 */
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "perf/bench.h"
#include "perf/exi_senml_gen.h"

#define NDOCS 1024

static struct {
    bool ready;
    wm_exi_grammar *g;
    uint8_t *exi[NDOCS];
    size_t exi_len[NDOCS];
    char *xml[NDOCS];
    size_t xml_len[NDOCS];
    size_t exi_total, xml_total;
} W;

static bool setup(wm_bench_state *st)
{
    if (W.ready) return true;
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    wm_exi_error e = { 0 };
    if (wm_exi_xsd_compile(path, &W.g, &e)) {
        wm_bench_skip_with_error(st, "cannot compile senml.gen.xsd (set WM_SHARED)");
        return false;
    }
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    o.has_schema_id = true;
    strcpy(o.schema_id, "a");
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, W.g, &o, false, true, NULL);
    uint64_t seed = 0xbe7c4;
    for (int i = 0; i < NDOCS; i++) {
        char buf[4096];
        size_t n = wm_senml_gen_pack(&seed, 10, buf, sizeof buf);
        W.xml[i] = strdup(buf);
        W.xml_len[i] = n;
        uint8_t out[4096];
        size_t olen;
        if (wm_exi_encode_xml(&enc, buf, n, out, sizeof out, &olen, &e)) {
            wm_bench_skip_with_error(st, e.msg);
            return false;
        }
        W.exi[i] = malloc(olen);
        memcpy(W.exi[i], out, olen);
        W.exi_len[i] = olen;
        W.exi_total += olen;
        W.xml_total += n;
    }
    wm_exi_encoder_free(&enc);
    W.ready = true;
    return true;
}

static int count(void *user, const wm_exi_event *ev)
{
    ++*(uint64_t *)user;
    (void)ev;
    return 0;
}

static void run_decode(wm_bench_state *st, bool typed_only)
{
    if (!setup(st)) return;
    wm_exi_decoder d;
    wm_exi_limits lim = { .typed_only = typed_only };
    wm_exi_decoder_init(&d, W.g, &lim);
    uint64_t events = 0, bytes = 0;
    int i = 0;
    while (wm_bench_keep_running_batch(st, 256)) {
        for (int k = 0; k < 256; k++, i = (i + 1) % NDOCS) {
            wm_exi_error e;
            if (wm_exi_decode(&d, W.exi[i], W.exi_len[i], NULL, count, &events, NULL, &e)) {
                wm_bench_skip_with_error(st, e.msg);
                wm_exi_decoder_free(&d);
                return;
            }
            bytes += W.exi_len[i];
        }
    }
    wm_bench_do_not_optimize(&events);
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, (int64_t)bytes);
    wm_bench_counter(st, "exi_bytes_per_doc", (double)W.exi_total / NDOCS);
    wm_bench_counter(st, "xml_bytes_per_doc", (double)W.xml_total / NDOCS);
    wm_exi_decoder_free(&d);
}

static void bm_exi_decode_senml10(wm_bench_state *st) { run_decode(st, true); }
WM_BENCH(bm_exi_decode_senml10);

static void bm_exi_decode_lexical(wm_bench_state *st) { run_decode(st, false); }
WM_BENCH(bm_exi_decode_lexical);

static void bm_exi_decode_to_xml(wm_bench_state *st)
{
    if (!setup(st)) return;
    wm_exi_decoder d;
    wm_exi_decoder_init(&d, W.g, NULL);
    uint64_t bytes = 0;
    int i = 0;
    wm_exi_xml_sink sink;
    wm_exi_xml_sink_init(&sink);
    while (wm_bench_keep_running_batch(st, 64)) {
        for (int k = 0; k < 64; k++, i = (i + 1) % NDOCS) {
            wm_exi_error e;
            sink.len = 0;
            if (wm_exi_decode(&d, W.exi[i], W.exi_len[i], NULL, wm_exi_xml_sink_event, &sink, NULL, &e)) {
                wm_bench_skip_with_error(st, e.msg);
                break;
            }
            bytes += W.exi_len[i];
        }
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, (int64_t)bytes);
    wm_exi_xml_sink_free(&sink);
    wm_exi_decoder_free(&d);
}
WM_BENCH(bm_exi_decode_to_xml);

static void bm_libxml2_parse_senml10(wm_bench_state *st)
{
    if (!setup(st)) return;
    uint64_t bytes = 0;
    int i = 0;
    while (wm_bench_keep_running_batch(st, 64)) {
        for (int k = 0; k < 64; k++, i = (i + 1) % NDOCS) {
            xmlDocPtr doc = xmlReadMemory(W.xml[i], (int)W.xml_len[i], NULL, NULL, XML_PARSE_NONET);
            wm_bench_do_not_optimize(doc);
            xmlFreeDoc(doc);
            bytes += W.xml_len[i];
        }
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, (int64_t)bytes);
}
WM_BENCH(bm_libxml2_parse_senml10);
