/* EXI decode throughput on RFC 8428 SenML packs of 10 records, strict,
 * bit-packed, schema senml.gen.xsd from $WM_SHARED/data/exi/senml.
 *
 *   bm_exi_decode_senml10      our decoder, typed values (no lexical text), events counted:
 *                              what a content filter consumes; options in the header
 *                              (as the RFC's EXI examples)
 *   bm_exi_decode_senml10_general  the same forced through the general path (no strict
 *                              loop, codec/exi_decode_strict.c): before/after in one run
 *   bm_exi_decode_lexical      the same with every value's lexical text built
 *   bm_exi_decode_to_xml       our decoder writing XML text (wmctl exi decode's path)
 *   bm_exi_plain_events        no options header (options out of band), typed events:
 *   bm_exi_plain_to_xml        and to XML: the documents perf/exi_vs_exificient.sh also
 *                              gives exificient.js (which reads no options header);
 *                              with WM_EXI_DUMP_DIR set they are written there as
 *                              docNNNN.exi first
 *   bm_libxml2_parse_senml10   in-run reference: libxml2 parsing the same packs as XML
 *
 * bytes/s is over the EXI bytes for ours and the XML bytes for libxml2;
 * items/s is documents/s for all. Target (issue 6): >= 200 MB/s of EXI
 * on one core. Reproduce: make bench BENCH_FILTER=exi, or pinned:
 * taskset -c 1 build/bench/bench_exi_decode
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
#include "perf/senml_schema.h"

#define NDOCS 1024

typedef struct docset {
    uint8_t *exi[NDOCS];
    size_t exi_len[NDOCS];
    size_t exi_total;
} docset;

static struct {
    bool ready;
    wm_exi_grammar *g;
    docset hdr, plain;          /* options in the header / out of band */
    wm_exi_options plain_opts;
    char *xml[NDOCS];
    size_t xml_len[NDOCS];
    size_t xml_total;
} W;

static bool encode_set(wm_bench_state *st, docset *ds, const wm_exi_options *o, bool header)
{
    wm_exi_error e = { 0 };
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, W.g, o, false, header, NULL);
    for (int i = 0; i < NDOCS; i++) {
        uint8_t out[4096];
        size_t olen;
        if (wm_exi_encode_xml(&enc, W.xml[i], W.xml_len[i], out, sizeof out, &olen, &e)) {
            wm_bench_skip_with_error(st, e.msg);
            wm_exi_encoder_free(&enc);
            return false;
        }
        ds->exi[i] = malloc(olen);
        memcpy(ds->exi[i], out, olen);
        ds->exi_len[i] = olen;
        ds->exi_total += olen;
    }
    wm_exi_encoder_free(&enc);
    return true;
}

static bool setup(wm_bench_state *st)
{
    if (W.ready) return true;
    if (!wm_bench_senml_grammar(st, &W.g)) return false;
    uint64_t seed = 0xbe7c4;
    for (int i = 0; i < NDOCS; i++) {
        char buf[4096];
        size_t n = wm_senml_gen_pack(&seed, 10, buf, sizeof buf);
        W.xml[i] = strdup(buf);
        W.xml_len[i] = n;
        W.xml_total += n;
    }
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = true;
    o.has_schema_id = true;
    strcpy(o.schema_id, "a");
    wm_exi_options_default(&W.plain_opts);
    W.plain_opts.strict = true;
    if (!encode_set(st, &W.hdr, &o, true) || !encode_set(st, &W.plain, &W.plain_opts, false)) return false;
    const char *dump = getenv("WM_EXI_DUMP_DIR");
    for (int i = 0; dump && i < NDOCS; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/doc%04d.exi", dump, i);
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(W.plain.exi[i], 1, W.plain.exi_len[i], f) != W.plain.exi_len[i]) {
            if (f) fclose(f);
            wm_bench_skip_with_error(st, "cannot write to WM_EXI_DUMP_DIR");
            return false;
        }
        fclose(f);
    }
    W.ready = true;
    return true;
}

static int count(void *user, const wm_exi_event *ev)
{
    ++*(uint64_t *)user;
    (void)ev;
    return 0;
}

static void run_decode(wm_bench_state *st, bool typed_only, bool plain, bool general)
{
    if (!setup(st)) return;
    const docset *ds = plain ? &W.plain : &W.hdr;
    const wm_exi_options *oob = plain ? &W.plain_opts : NULL;
    wm_exi_decoder d;
    wm_exi_limits lim = { .typed_only = typed_only };
    wm_exi_decoder_init(&d, W.g, &lim);
    d.general_only = general;
    uint64_t events = 0, bytes = 0;
    int i = 0;
    while (wm_bench_keep_running_batch(st, 256)) {
        for (int k = 0; k < 256; k++, i = (i + 1) % NDOCS) {
            wm_exi_error e;
            if (wm_exi_decode(&d, ds->exi[i], ds->exi_len[i], oob, count, &events, NULL, &e)) {
                wm_bench_skip_with_error(st, e.msg);
                wm_exi_decoder_free(&d);
                return;
            }
            bytes += ds->exi_len[i];
        }
    }
    wm_bench_do_not_optimize(&events);
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, (int64_t)bytes);
    wm_bench_counter(st, "exi_bytes_per_doc", (double)ds->exi_total / NDOCS);
    wm_bench_counter(st, "xml_bytes_per_doc", (double)W.xml_total / NDOCS);
    wm_exi_decoder_free(&d);
}

static void bm_exi_decode_senml10(wm_bench_state *st) { run_decode(st, true, false, false); }
WM_BENCH(bm_exi_decode_senml10);

/* the same through the general path only (before/after of the strict loop in one run) */
static void bm_exi_decode_senml10_general(wm_bench_state *st) { run_decode(st, true, false, true); }
WM_BENCH(bm_exi_decode_senml10_general);

static void bm_exi_decode_lexical(wm_bench_state *st) { run_decode(st, false, false, false); }
WM_BENCH(bm_exi_decode_lexical);

static void run_to_xml(wm_bench_state *st, bool plain)
{
    if (!setup(st)) return;
    const docset *ds = plain ? &W.plain : &W.hdr;
    const wm_exi_options *oob = plain ? &W.plain_opts : NULL;
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
            if (wm_exi_decode(&d, ds->exi[i], ds->exi_len[i], oob, wm_exi_xml_sink_event, &sink, NULL, &e)) {
                wm_bench_skip_with_error(st, e.msg);
                break;
            }
            bytes += ds->exi_len[i];
        }
    }
    wm_bench_set_items_processed(st, wm_bench_iterations(st));
    wm_bench_set_bytes_processed(st, (int64_t)bytes);
    wm_exi_xml_sink_free(&sink);
    wm_exi_decoder_free(&d);
}

static void bm_exi_decode_to_xml(wm_bench_state *st) { run_to_xml(st, false); }
WM_BENCH(bm_exi_decode_to_xml);

static void bm_exi_plain_events(wm_bench_state *st) { run_decode(st, true, true, false); }
WM_BENCH(bm_exi_plain_events);

static void bm_exi_plain_to_xml(wm_bench_state *st) { run_to_xml(st, true); }
WM_BENCH(bm_exi_plain_to_xml);

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
