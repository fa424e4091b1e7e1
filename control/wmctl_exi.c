/* wmctl exi — EXI decode/encode with an XML Schema (W3C EXI 1.0).
 *
 *   wmctl exi decode [--schema X.xsd | --schemaless] [--strict] [--byte-aligned]
 *                    [--fragment] [--preserve-prefixes] [--compression|--pre-compress]
 *                    IN.exi                     XML on stdout (the last three: out-of-band
 *                                               options; compression is refused with a reason;
 *                                               --preserve-prefixes: the XML is written with the
 *                                               stream's prefixes and declarations, codec/exi_xml.h)
 *   wmctl exi compile --schema X.xsd OUT.wmg   the compiled grammar as a file, for --grammar
 *   wmctl exi grammar --schema X.xsd [--format text|exificient] [TYPE]
 *                                              the grammar as text, or as exificient.js's
 *                                              JSON grammar file (control/exi_exificient.h)
 *   (decode and encode take --grammar OUT.wmg instead of --schema X.xsd)
 *   wmctl exi encode [--schema X.xsd | --schemaless] [--strict] [--byte-aligned]
 *                    [--fragment] [--preserve-prefixes] [--header-options] [--schema-id ID] [--cookie]
 *                    IN.xml OUT.exi             (IN and OUT may be '-': stdin, stdout)
 *
 * Options given here are the out-of-band options (§5.4); a stream whose header
 * carries an options document uses those instead, and an option given that
 * contradicts them is refused (exit 2, wmctl_exi_oob_check); --schema-id is
 * written in the options header only, so it needs --header-options. Exit codes: 0 ok, 1 the input
 * is not valid EXI/XML for the schema (reason and bit position on stderr),
 * 2 usage error (also an option the sub-command does not take, e.g. encode
 * --compression, which the encoder cannot honour), unreadable file or
 * bad schema.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "control/exi_exificient.h"
#include "control/exi_mem_cap.h"
#include "control/exi_oob.h"
#include "control/wmctl.h"

/* The rule broken (printf format), named before the usage line. */
static __attribute__((format(printf, 1, 2))) int usage(const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return wmctl_usage_error("exi", "%s\n%s", why,
        "usage: wmctl exi decode|encode [--schema X.xsd | --grammar G.wmg | --schemaless] [--strict] [--byte-aligned] [--fragment]"
        " [--preserve-prefixes] [--compression|--pre-compress] [--header-options] [--schema-id ID] [--cookie] [--mem-cap BYTES] IN|- [OUT] | compile --schema X.xsd OUT.wmg | grammar --schema X.xsd [--format text|exificient] [TYPE]"
        " | filter ... (see wmctl --help)");
}


/* The options and how many operands each sub-command takes: anything else
 * is a usage error (exit 2), never silently ignored. */
enum { /* the out-of-band ones are their WMCTL_EXI_OOB_* bits (wmctl_exi_oob_option) */
    O_STRICT = WMCTL_EXI_OOB_STRICT, O_BYTE_ALIGNED = WMCTL_EXI_OOB_BYTE_ALIGNED, O_FRAGMENT = WMCTL_EXI_OOB_FRAGMENT,
    O_PREFIXES = WMCTL_EXI_OOB_PREFIXES, O_COMPRESSION = WMCTL_EXI_OOB_COMPRESSION, O_PRE_COMPRESS = WMCTL_EXI_OOB_PRE_COMPRESS,
    O_SCHEMA = 1 << 6, O_SCHEMALESS = 1 << 7, O_GRAMMAR = 1 << 8,
    O_HEADER_OPTIONS = 1 << 9, O_COOKIE = 1 << 10, O_SCHEMA_ID = 1 << 11, O_FORMAT = 1 << 12, O_MEM_CAP = 1 << 13,
};

unsigned wmctl_exi_oob_option(const char *arg, wm_exi_options *o)
{
    if (!strcmp(arg, "--strict")) return o->strict = true, WMCTL_EXI_OOB_STRICT;
    if (!strcmp(arg, "--byte-aligned")) return o->alignment = WM_EXI_BYTE_ALIGNED, WMCTL_EXI_OOB_BYTE_ALIGNED;
    if (!strcmp(arg, "--fragment")) return o->fragment = true, WMCTL_EXI_OOB_FRAGMENT;
    if (!strcmp(arg, "--preserve-prefixes")) return o->preserve_prefixes = true, WMCTL_EXI_OOB_PREFIXES;
    if (!strcmp(arg, "--compression")) return o->compression = true, WMCTL_EXI_OOB_COMPRESSION;
    if (!strcmp(arg, "--pre-compress")) return o->alignment = WM_EXI_PRE_COMPRESSION, WMCTL_EXI_OOB_PRE_COMPRESS;
    return 0;
}
static const struct {
    const char *cmd;
    unsigned opts, operands;
} subcommands[] = {
    { "decode", O_SCHEMA | O_SCHEMALESS | O_GRAMMAR | O_STRICT | O_BYTE_ALIGNED | O_FRAGMENT | O_PREFIXES | O_COMPRESSION |
                    O_PRE_COMPRESS | O_MEM_CAP, 1 },
    { "encode", O_SCHEMA | O_SCHEMALESS | O_GRAMMAR | O_STRICT | O_BYTE_ALIGNED | O_FRAGMENT | O_PREFIXES |
                    O_HEADER_OPTIONS | O_COOKIE | O_SCHEMA_ID | O_MEM_CAP, 2 },
    { "compile", O_SCHEMA, 1 },
    { "grammar", O_SCHEMA | O_FORMAT, 1 },
};

int wmctl_exi_load_grammar(const char *path, wm_exi_grammar **g)
{
    char msg[512];
    size_t len;
    uint8_t *b = wmctl_read_file(path, WMCTL_MAX_EXI_INPUT, &len, msg, sizeof msg);
    if (!b) return wmctl_usage_error("exi", "%s", msg);
    wm_exi_error err = { 0 };
    wm_exi_status st = wm_exi_grammar_deserialize(b, len, g, &err);
    free(b);
    if (st == WM_EXI_E_MEMORY) return wmctl_usage_error("exi", "%s: out of memory", path);
    if (st) return wmctl_usage_error("exi", "%s: %s at byte %llu", path, err.msg, (unsigned long long)(err.bit_pos / 8));
    return 0;
}

int wmctl_exi_oob_check(const char *in, const uint8_t *data, size_t len, unsigned given)
{
    wm_exi_options hdr;
    if (!given || !wm_exi_oob_header_options(data, len, &hdr)) return 0;
    static const char *const align[] = { "bit-packed", "byte-aligned", "pre-compression" };
    const char *aligned = (unsigned)hdr.alignment < 3 ? align[hdr.alignment] : "?";
    const struct {
        unsigned bit;
        bool holds;
        const char *opt, *says;
    } c[] = {
        { WMCTL_EXI_OOB_STRICT, hdr.strict, "--strict", "not strict" },
        { WMCTL_EXI_OOB_BYTE_ALIGNED, hdr.alignment == WM_EXI_BYTE_ALIGNED, "--byte-aligned", aligned },
        { WMCTL_EXI_OOB_FRAGMENT, hdr.fragment, "--fragment", "a document, not a fragment" },
        { WMCTL_EXI_OOB_PREFIXES, hdr.preserve_prefixes, "--preserve-prefixes", "prefixes not preserved" },
        { WMCTL_EXI_OOB_COMPRESSION, hdr.compression, "--compression", "no compression" },
        { WMCTL_EXI_OOB_PRE_COMPRESS, hdr.alignment == WM_EXI_PRE_COMPRESSION, "--pre-compress", aligned },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if ((given & c[i].bit) && !c[i].holds)
            return wmctl_usage_error("exi", "%s: %s contradicts the stream's options header (%s); a stream with one is decoded "
                                     "with its own options (EXI 1.0 §5.4), so out-of-band options must agree or be left out",
                                     in, c[i].opt, c[i].says);
    return 0;
}

int wmctl_exi(int argc, char **argv)
{
    if (argc < 2) return usage("no sub-command");
    if (!strcmp(argv[1], "filter")) return wmctl_exi_filter(argc - 1, argv + 1);
    const char *cmd = argv[1], *schema = NULL, *in = NULL, *out = NULL, *schema_id = NULL, *gfile = NULL, *format = NULL;
    bool schemaless = false, header_options = false, cookie = false;
    size_t mem_cap = 0; /* 0: the codec's default */
    wm_exi_options o;
    wm_exi_options_default(&o);
    unsigned given = 0, operands = 0;
    const char *bad = NULL; /* the first option the sub-command does not take */
    unsigned bad_opt = 0;
    size_t sc = 0;
    while (sc < sizeof subcommands / sizeof subcommands[0] && strcmp(subcommands[sc].cmd, cmd)) sc++;
    if (sc == sizeof subcommands / sizeof subcommands[0]) {
        return usage("unknown sub-command '%s'", cmd);
    }
    for (int i = 2; i < argc; i++) {
        unsigned was = given, ob;
        const char *arg = argv[i];
        if (!strcmp(argv[i], "--schema") && i + 1 < argc) schema = argv[++i], given |= O_SCHEMA;
        else if (!strcmp(argv[i], "--schemaless")) schemaless = true, given |= O_SCHEMALESS;
        else if (!strcmp(argv[i], "--grammar") && i + 1 < argc) gfile = argv[++i], given |= O_GRAMMAR;
        else if ((ob = wmctl_exi_oob_option(argv[i], &o))) given |= ob;
        else if (!strcmp(argv[i], "--header-options")) header_options = true, given |= O_HEADER_OPTIONS;
        else if (!strcmp(argv[i], "--cookie")) cookie = true, given |= O_COOKIE;
        else if (!strcmp(argv[i], "--schema-id") && i + 1 < argc) schema_id = argv[++i], given |= O_SCHEMA_ID;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc) format = argv[++i], given |= O_FORMAT;
        else if (!strcmp(argv[i], "--mem-cap") && i + 1 < argc) {
            /* the per-document memory cap (wm_exi_limits.mem_cap), bytes */
            char why[160];
            if (wm_exi_mem_cap_parse(argv[++i], &mem_cap, why, sizeof why)) return usage("%s", why);
            given |= O_MEM_CAP;
        } else if (argv[i][0] == '-' && argv[i][1]) return usage("%s: unknown option, or one missing its value: '%s'", cmd, argv[i]);
        else if (++operands > subcommands[sc].operands)
            return wmctl_usage_error("exi", "%s takes %u operand%s, '%s' is one too many", cmd, subcommands[sc].operands,
                                     subcommands[sc].operands == 1 ? "" : "s", argv[i]);
        else if (!in) in = argv[i];
        else out = argv[i];
        if (!bad && (given & ~was & ~subcommands[sc].opts)) bad = arg, bad_opt = given & ~was;
    }
    if (!strcmp(cmd, "encode") && (bad_opt & (O_COMPRESSION | O_PRE_COMPRESS)))
        return wmctl_usage_error("exi", "encode does not take %s: the encoder writes no compressed or "
                                 "pre-compressed streams (decode reads them out of band)", bad);
    if (bad) return wmctl_usage_error("exi", "%s does not take %s", cmd, bad);
    bool decode = !strcmp(cmd, "decode");
    if (!strcmp(cmd, "compile")) {
        /* wmctl exi compile --schema X.xsd OUT.wmg: the compiled grammar as a file */
        wm_exi_error e2 = { 0 };
        wm_exi_grammar *gg = NULL;
        uint8_t *bytes = NULL;
        size_t blen = 0;
        if (!schema || !in) return usage(!schema ? "compile needs --schema X.xsd" : "compile needs OUT.wmg");
        if (wm_exi_xsd_compile(schema, &gg, &e2))
            return wmctl_usage_error("exi", "schema %s: %s [%s]", schema, e2.msg, wm_exi_status_name(e2.status));
        int rc2 = 0;
        if (wm_exi_grammar_serialize(gg, &bytes, &blen)) rc2 = wmctl_usage_error("exi", "out of memory");
        else {
            FILE *f = fopen(in, "wb");
            if (!f) rc2 = wmctl_usage_error("exi", "cannot write %s: %s", in, strerror(errno));
            else {
                bool short_write = fwrite(bytes, 1, blen, f) != blen;
                rc2 = wmctl_close_output("exi", f, in);
                if (short_write && !rc2) rc2 = wmctl_usage_error("exi", "cannot write %s", in);
            }
        }
        free(bytes);
        wm_exi_grammar_free(gg);
        return rc2;
    }
    if (!strcmp(cmd, "grammar")) {
        /* wmctl exi grammar --schema X.xsd: the compiled grammar, for debugging */
        wm_exi_error e2 = { 0 };
        wm_exi_grammar *gg = NULL;
        if (!schema || wm_exi_xsd_compile(schema, &gg, &e2))
            return wmctl_usage_error("exi", "grammar needs a readable --schema: %s", e2.msg);
        if (format && !strcmp(format, "exificient")) {
            /* the grammar file exificient.js reads (control/exi_exificient.h) */
            char *js = NULL;
            wm_exi_status xs = wm_exi_exificient_json(gg, &js, &e2);
            wm_exi_grammar_free(gg);
            if (xs) return wmctl_usage_error("exi", "%s: %s", schema, xs == WM_EXI_E_MEMORY ? "out of memory" : e2.msg);
            puts(js);
            free(js);
            return 0;
        }
        if (format && strcmp(format, "text")) {
            wm_exi_grammar_free(gg);
            return wmctl_usage_error("exi", "--format is text or exificient");
        }
        if (in) {
            /* A TYPE naming no type of the schema would print only the header: say so. */
            bool known = false;
            for (uint32_t t = 0; t < gg->n_tgrams && !known; t++)
                known = gg->tgrams[t].lid != WM_EXI_NONE && !strcmp(gg->lnames[gg->tgrams[t].lid], in);
            if (!known) {
                wm_exi_grammar_free(gg);
                return wmctl_usage_error("exi", "%s: no named type '%s' in the schema", schema, in);
            }
        }
        printf("uris:");
        for (uint32_t i = 0; i < gg->n_uris; i++) printf(" %u=%s(%u names)", i, gg->uris[i], gg->uri_lid_count[i]);
        printf("\ndocument elements (%u):", gg->n_doc);
        for (uint32_t i = 0; i < gg->n_doc; i++)
            printf(" %u={%s}%s", i, gg->uris[gg->elems[gg->doc_elems[i]].uri], gg->lnames[gg->elems[gg->doc_elems[i]].lid]);
        printf("\nfragment elements (%u):", gg->n_frag);
        for (uint32_t i = 0; i < gg->n_frag; i++)
            printf(" %u={%s}%s%s", i, gg->uris[gg->frag[i].uri], gg->lnames[gg->frag[i].lid], gg->frag[i].elem == WM_EXI_NONE ? "(relaxed)" : "");
        printf("\n");
        static const char *tn[] = { "AT", "AT(uri:*)", "AT(*)", "SE", "SE(uri:*)", "SE(*)", "EE", "CH" };
        for (uint32_t t = 0; t < gg->n_tgrams; t++) {
            const wm_exi_tgram *tg = &gg->tgrams[t];
            if (in && (tg->lid == WM_EXI_NONE || strcmp(gg->lnames[tg->lid], in))) continue;
            printf("type %u %s start=%u content=%u empty=%u\n", t, tg->lid == WM_EXI_NONE ? "(anonymous)" : gg->lnames[tg->lid], tg->start, tg->content, tg->empty_start);
        }
        for (uint32_t i = 0; i < gg->n_states; i++) {
            const wm_exi_state *stt = &gg->states[i];
            if (in) {
                bool want = false;
                for (uint32_t t = 0; t < gg->n_tgrams; t++)
                    if (gg->tgrams[t].lid != WM_EXI_NONE && !strcmp(gg->lnames[gg->tgrams[t].lid], in) && stt->type == t) want = true;
                if (!want) continue;
            }
            printf("state %u (type %u, flags %x):", i, stt->type, stt->flags);
            for (uint32_t k = 0; k < stt->n; k++) {
                const wm_exi_prod *p = &gg->prods[stt->first + k];
                printf(" [%u]%s", k, tn[p->term]);
                if (p->term == WM_EXI_T_AT || p->term == WM_EXI_T_SE) printf("(%s)", gg->lnames[p->lid]);
                if (p->next != WM_EXI_NONE) printf("->%u", p->next);
            }
            printf("\n");
        }
        wm_exi_grammar_free(gg);
        return 0;
    }
    unsigned sources = (schema != NULL) + (gfile != NULL) + schemaless;
    if (sources != 1)
        return usage(sources ? "give one grammar source of --schema, --grammar, --schemaless"
                             : "no grammar source: give --schema X.xsd, --grammar G.wmg or --schemaless");
    if (!in) return usage(decode ? "decode needs IN (- for stdin)" : "encode needs IN and OUT");
    if (!decode && !out) return usage("encode needs OUT (- for stdout)");
    if (schema_id && !header_options)
        return wmctl_usage_error("exi", "--schema-id is written in the options header only: give --header-options too");
    if (schema_id) {
        if (strlen(schema_id) > WM_EXI_SCHEMA_ID_MAX) return wmctl_usage_error("exi", "--schema-id too long");
        o.has_schema_id = true;
        strcpy(o.schema_id, schema_id);
    }
    wm_exi_error err = { 0 };
    wm_exi_grammar *g = NULL;
    if (schema) {
        if (wm_exi_xsd_compile(schema, &g, &err))
            return wmctl_usage_error("exi", "schema %s: %s [%s]", schema, err.msg, wm_exi_status_name(err.status));
    } else if (gfile) {
        int grc = wmctl_exi_load_grammar(gfile, &g);
        if (grc) return grc;
    } else if (!(g = wm_exi_grammar_schemaless())) return wmctl_usage_error("exi", "out of memory");
    uint8_t *data;
    size_t len;
    char msg[512];
    if (!(data = wmctl_read_file(in, WMCTL_MAX_EXI_INPUT, &len, msg, sizeof msg))) {
        wm_exi_grammar_free(g);
        return wmctl_usage_error("exi", "%s", msg);
    }
    int rc = 0;
    if (decode) {
        unsigned oob = given & WMCTL_EXI_OOB_ALL;
        if ((rc = wmctl_exi_oob_check(in, data, len, oob))) {
            free(data);
            wm_exi_grammar_free(g);
            return rc;
        }
        /* A cap below the decoder's fixed per-document state decodes
         * nothing, whatever the document: refused as the option it is */
        size_t min_cap = mem_cap ? wm_exi_decoder_min_mem_cap(g, &(wm_exi_limits){ .whole_buffer = true }, &o) : 0;
        if (mem_cap && mem_cap < min_cap) {
            free(data);
            wm_exi_grammar_free(g);
            return wmctl_usage_error("exi", "--mem-cap %zu is below the %zu bytes the decoder sets up for every document "
                                            "with this grammar (its string table, a 64 KiB value buffer, a 256-level "
                                            "element stack): give --mem-cap %zu or more", mem_cap, min_cap, min_cap);
        }
        wm_exi_decoder d;
        /* the file is one document: bytes after it are an error, not ignored */
        wm_exi_decoder_init(&d, g, &(wm_exi_limits){ .whole_buffer = true, .mem_cap = mem_cap });
        wm_exi_xml_sink sink;
        wm_exi_xml_sink_init(&sink);
        wm_exi_status st = wm_exi_decode(&d, data, len, &o, wm_exi_xml_sink_event, &sink, NULL, &err);
        if (st) {
            fprintf(stderr, "wmctl exi: %s: %s at bit %llu [%s]%s\n", in, err.msg, (unsigned long long)err.bit_pos,
                    wm_exi_status_name(st), st == WM_EXI_E_MEMORY ? WM_EXI_MEM_CAP_HINT : "");
            rc = 1;
        } else if (sink.bad) { /* the sink stopped the decoder: XML 1.0 cannot carry this event */
            fprintf(stderr, "wmctl exi: %s: %s (event ending at bit %llu) [value]\n", in, sink.why,
                    (unsigned long long)d.stop_bit_pos);
            rc = 1;
        } else if (sink.oom) {
            fprintf(stderr, "wmctl exi: out of memory writing XML\n");
            rc = 1;
        } else fputs(sink.buf ? sink.buf : "", stdout);
        wm_exi_xml_sink_free(&sink);
        wm_exi_decoder_free(&d);
    } else {
        wm_exi_encoder e;
        wm_exi_encoder_init(&e, g, &o, cookie, header_options, &(wm_exi_limits){ .mem_cap = mem_cap });
        size_t cap = len * 2 + 1024, olen = 0;
        uint8_t *obuf = malloc(cap);
        wm_exi_status st = obuf ? wm_exi_encode_xml(&e, (const char *)data, len, obuf, cap, &olen, &err) : WM_EXI_E_MEMORY;
        if (st) {
            fprintf(stderr, "wmctl exi: %s: %s [%s]%s\n", in, err.msg, wm_exi_status_name(st),
                    st == WM_EXI_E_MEMORY ? WM_EXI_MEM_CAP_HINT : "");
            rc = 1;
        } else {
            bool to_stdout = !strcmp(out, "-"); /* as IN, '-' is the standard stream */
            FILE *f = to_stdout ? stdout : fopen(out, "wb");
            const char *name = to_stdout ? "stdout" : out;
            if (!f) rc = wmctl_usage_error("exi", "cannot write %s: %s", name, strerror(errno));
            else {
                bool short_write = fwrite(obuf, 1, olen, f) != olen;
                rc = wmctl_close_output("exi", f, name);
                if (short_write && !rc) rc = wmctl_usage_error("exi", "cannot write %s", name);
            }
        }
        free(obuf);
        wm_exi_encoder_free(&e);
    }
    free(data);
    wm_exi_grammar_free(g);
    return rc;
}
