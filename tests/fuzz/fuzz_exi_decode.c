/* Fuzzes the EXI decoder (W3C EXI 1.0) with three grammars: the RFC 8428
 * SenML schema, the W3C interop acceptance schema (both from
 * $WM_SHARED/data/exi, default ../shared) and the schema-less built-in
 * grammars. Input byte 0 selects grammar (bits 0-1), strict (bit 2),
 * byte-aligned (bit 3) and fragment (bit 4) as out-of-band options; the rest
 * is the stream (its header may override them). Besides "no crash, no read
 * out of bounds" (ASan), it checks: an error has a reason and a position
 * inside the input; a decoded stream re-encodes (non-strict, same grammar)
 * and decodes again to the same number of events (not a stream whose header
 * preserves prefixes, comments or PIs: the encoder is set up before the
 * header is read); and the general path
 * (wm_exi_decoder.general_only) gives the same events, status and error
 * position as the default one (the strict bit-packed loop,
 * codec/exi_decode_strict.c, when the options allow it), and so does a
 * decoder running a consumer's own instance of that loop (the template
 * codec/exi_decode_strict_loop.h, wm_exi_decoder strict_loop), whose
 * handlers take SE, EE and declared attributes without the callback; and a decoded
 * document (a fragment: inside a wrapper element) written by the XML sink
 * (codec/exi_xml.h) parses with libxml2 as namespace-well-formed XML, unless
 * the sink refused an event with a reason.
 * Memory cap 1 MiB. */
#include <libxml/parser.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static wm_exi_grammar *grammars[3];

static wm_exi_grammar *load(const char *rel)
{
    const char *sh = getenv("WM_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/exi/%s", sh ? sh : "../shared", rel);
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    if (wm_exi_xsd_compile(path, &g, &e)) {
        fprintf(stderr, "fuzz_exi_decode: %s: %s\n", path, e.msg);
        abort();
    }
    return g;
}

typedef struct rec {
    uint64_t events;
    uint64_t hash;            /* FNV-1a over every event's fields */
    wm_exi_encoder *enc;
    int depth;
    wm_exi_status st;
} rec;

static void mix(uint64_t *h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) *h = (*h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
}

static int on_event(void *user, const wm_exi_event *ev)
{
    rec *r = user;
    uint64_t f[10] = { ev->type, ev->xsi, ev->uri_id, ev->lid, ev->depth, ev->value.kind, ev->value.b, ev->value.i,
                       ev->value.mantissa, (uint64_t)ev->value.exponent };
    if (ev->type != WM_EXI_EV_AT && ev->type != WM_EXI_EV_CH) f[5] = f[6] = f[7] = f[8] = f[9] = 0;
    mix(&r->hash, f, sizeof f);
    if (ev->uri.p) mix(&r->hash, ev->uri.p, ev->uri.len);
    if (ev->local.p) mix(&r->hash, ev->local.p, ev->local.len);
    if ((ev->type == WM_EXI_EV_AT || ev->type == WM_EXI_EV_CH) && ev->value.text) mix(&r->hash, ev->value.text, ev->value.len);
    bool blank = ev->type == WM_EXI_EV_CH;
    for (uint32_t i = 0; blank && i < ev->value.len; i++)
        blank = ev->value.text[i] == ' ' || ev->value.text[i] == '\t' || ev->value.text[i] == '\n' || ev->value.text[i] == '\r';
    if (!blank) r->events++; /* whitespace-only text may be dropped on re-encoding */
    if (!r->enc || r->st) return 0;
    switch (ev->type) {
    case WM_EXI_EV_SE: r->st = wm_exi_encode_se(r->enc, ev->uri.p, ev->uri.len, ev->local.p, ev->local.len); break;
    case WM_EXI_EV_AT:
        r->st = wm_exi_encode_at(r->enc, ev->uri.p, ev->uri.len, ev->local.p, ev->local.len, ev->value.text, ev->value.len);
        break;
    case WM_EXI_EV_CH: r->st = wm_exi_encode_ch(r->enc, ev->value.text, ev->value.len); break;
    case WM_EXI_EV_EE: r->st = wm_exi_encode_ee(r->enc); break;
    default: break;
    }
    return 0;
}

/* The consumer's instance: its handlers hash the events they take, straight. */
#define WM_SL_FN own_loop
#define WM_SL_LINKAGE static
#define WM_SL_TYPED_ONLY 0
#define WM_SL_LOCALS
#define WM_SL_ON_SE(pe)                                                                                     \
    do {                                                                                                    \
        if (on_event(user, (pe))) goto stop;                                                                \
    } while (0)
#define WM_SL_ON_EE WM_SL_ON_SE
#define WM_SL_ON_AT(p, pe, kind)                                                                                  \
    do {                                                                                                    \
        (pe)->depth = depth; /* the instance's to set */                                                    \
        WM_SL_ON_SE(pe);                                                                                    \
    } while (0)
#include "codec/exi_decode_strict_loop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!grammars[0]) {
        grammars[0] = load("senml/senml.gen.xsd");
        grammars[1] = load("interop/schemaInformedGrammar/acceptance.xsd");
        grammars[2] = wm_exi_grammar_schemaless();
    }
    if (size < 1) return 0;
    const wm_exi_grammar *g = grammars[(data[0] & 3) % 3];
    wm_exi_options o;
    wm_exi_options_default(&o);
    o.strict = (data[0] & 4) && !g->schemaless;
    o.alignment = (data[0] & 8) ? WM_EXI_BYTE_ALIGNED : WM_EXI_BIT_PACKED;
    o.fragment = (data[0] & 16) != 0;
    wm_exi_limits lim = { .mem_cap = 1u << 20, .max_depth = 64, .max_value_bytes = 4096 };
    static wm_exi_decoder d, dgen, down;
    static const wm_exi_grammar *dg;
    if (dg != g) {
        if (dg) {
            wm_exi_decoder_free(&d);
            wm_exi_decoder_free(&dgen);
            wm_exi_decoder_free(&down);
        }
        wm_exi_decoder_init(&d, g, &lim);
        wm_exi_decoder_init(&dgen, g, &lim);
        dgen.general_only = true;
        wm_exi_decoder_init(&down, g, &lim);
        down.strict_loop = own_loop;
        dg = g;
    }
    wm_exi_error e;
    rec r = { 0 };
    wm_exi_encoder enc;
    wm_exi_options eo = o;
    eo.strict = false;
    wm_exi_encoder_init(&enc, g, &eo, false, true, &lim);
    static uint8_t out[1 << 16];
    r.enc = &enc;
    static wm_exi_error enc_err; /* the encoder reports apart from the decoder */
    r.st = wm_exi_encode_start(&enc, out, sizeof out, &enc_err);
    wm_exi_status st = wm_exi_decode(&d, data + 1, size - 1, &o, on_event, &r, NULL, &e);
    {
        rec rg = { 0 };
        wm_exi_error eg;
        wm_exi_status stg = wm_exi_decode(&dgen, data + 1, size - 1, &o, on_event, &rg, NULL, &eg);
        if (stg != st || rg.events != r.events || rg.hash != r.hash || (st && (eg.bit_pos != e.bit_pos || strcmp(eg.msg, e.msg)))) {
            fprintf(stderr, "general path differs: status %d vs %d, %llu vs %llu events: %s / %s\n", st, stg,
                    (unsigned long long)r.events, (unsigned long long)rg.events, e.msg, eg.msg);
            abort();
        }
        rec rh = { 0 };
        stg = wm_exi_decode(&down, data + 1, size - 1, &o, on_event, &rh, NULL, &eg);
        if (stg != st || rh.events != r.events || rh.hash != r.hash || (st && (eg.bit_pos != e.bit_pos || strcmp(eg.msg, e.msg)))) {
            fprintf(stderr, "own loop instance differs: status %d vs %d, %llu vs %llu events: %s / %s\n", st, stg,
                    (unsigned long long)r.events, (unsigned long long)rh.events, e.msg, eg.msg);
            abort();
        }
    }
    if (st) {
        if (!e.msg[0] || e.bit_pos > 8 * (uint64_t)(size - 1)) abort();
    } else if (!r.st && !d.opts.preserve_prefixes && !d.opts.preserve_comments && !d.opts.preserve_pis) {
        /* what decoded must encode (non-strict is a superset) and decode back */
        wm_exi_options used = d.opts;
        size_t olen;
        wm_exi_error e2;
        if (wm_exi_encode_end(&enc, &olen) == WM_EXI_OK) {
            rec r2 = { 0 };
            used.strict = false;
            (void)used;
            wm_exi_decoder d2;
            wm_exi_decoder_init(&d2, g, &lim);
            wm_exi_status st2 = wm_exi_decode(&d2, out, olen, NULL, on_event, &r2, NULL, &e2);
            if (st2 != WM_EXI_OK && st2 != WM_EXI_E_MEMORY) {
                fprintf(stderr, "re-encoded stream does not decode: %s\n", e2.msg);
                abort();
            }
            if (st2 == WM_EXI_OK && r2.events != r.events) {
                fprintf(stderr, "event count %llu != %llu\n", (unsigned long long)r2.events, (unsigned long long)r.events);
                abort();
            }
            wm_exi_decoder_free(&d2);
        }
    }
    wm_exi_encoder_free(&enc);
    if (!st) {
        /* the XML of a decoded document parses; a fragment's (several roots
         * or none) inside a wrapper element */
        wm_exi_xml_sink sink;
        wm_exi_xml_sink_init(&sink);
        if (wm_exi_decode(&d, data + 1, size - 1, &o, wm_exi_xml_sink_event, &sink, NULL, &e) != WM_EXI_OK) abort();
        if (sink.bad && !sink.why[0]) abort();
        if (!sink.bad && !sink.oom && sink.buf) {
            static const char open_[] = "<wm-f>", close_[] = "</wm-f>";
            bool frag = d.opts.fragment;
            size_t n = sink.len + (frag ? sizeof open_ + sizeof close_ - 2 : 0);
            char *x = malloc(n + 1);
            if (!x) abort();
            snprintf(x, n + 1, "%s%s%s", frag ? open_ : "", sink.buf, frag ? close_ : "");
            xmlParserCtxtPtr px = xmlNewParserCtxt();
            xmlDocPtr doc = px ? xmlCtxtReadMemory(px, x, (int)n, NULL, NULL,
                                                   XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_HUGE)
                               : NULL;
            if (px && (!doc || !px->wellFormed || !px->nsWellFormed)) {
                fprintf(stderr, "decoded XML does not parse: %s\n%.400s\n", px->lastError.message ? px->lastError.message : "", x);
                abort();
            }
            xmlFreeDoc(doc);
            xmlFreeParserCtxt(px);
            free(x);
        }
        wm_exi_xml_sink_free(&sink);
    }
    return 0;
}
