/* wmctl exi filter — content filters (matcher/xpath_filter.h) over one EXI
 * stream:
 *
 *   wmctl exi filter (--schema X.xsd | --grammar G.wmg | --schemaless | --registry R --content-type CT)
 *                    [--ns PREFIX=URI ...] --query Q [--query Q ...] [--strict]
 *                    [--byte-aligned] [--fragment] [--preserve-prefixes] [--compression|--pre-compress]
 *                    [--mem-cap BYTES] [--stats] IN.exi|-
 *
 * With --registry (control/schema_registry.h) the schema, its namespace
 * bindings and the out-of-band options come from the registry entry the
 * Content Type names and the Content Type's option parameters
 * ("application/exi; schema=NAME; strict=true", wm_schema_reg_bind), as the
 * data plane binds them; the out-of-band options given here (the same flags
 * as decode's, wmctl_exi_oob_option) still apply on top (and,
 * like every out-of-band option, must agree with a stream's options header
 * if it has one: wmctl_exi_oob_check); an option of the Content Type that
 * contradicts the header is not refused but reported on stderr, and the
 * stream decoded with the header's options (§5.4), as the data plane and
 * the proxy do (they count it: wm_exi_oob_header_conflict, the same
 * comparison);
 * --ns may add a prefix, but one the entry binds to another URI is refused
 * (the data plane would use the registry's, so an override would answer a
 * different question than the one being tried out).
 *
 * prints the 1-based indexes of the queries that select something in the
 * document as a JSON list ("[1,3]"); --stats adds the compiled automaton's
 * figures on stderr. Options are the out-of-band ones (a header's options
 * win). The whole stream is always decoded and validated, also when the
 * queries are decided early (wm_xpf_ctx_set_whole_stream): a truncated or
 * damaged stream is never printed as a match. Exit codes: 0 ok; 1 the
 * stream is not valid EXI for the schema (reason and bit position on
 * stderr, nothing on stdout); 2 usage, unreadable file, bad schema,
 * or a query refused (its index, position and reason on stderr).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_grammar.h"
#include "codec/exi_xsd.h"
#include "control/exi_mem_cap.h"
#include "control/exi_oob.h"
#include "control/schema_registry.h"
#include "control/wmctl.h"
#include "matcher/xpath_filter.h"

/* A usage error: the reason, then the usage line. Returns 2. */
__attribute__((format(printf, 1, 2))) static int refuse(const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return wmctl_usage_error("exi",
        "%s\nusage: wmctl exi filter (--schema X.xsd | --grammar G.wmg | --schemaless | --registry R --content-type CT) [--ns PREFIX=URI ...]"
        " --query Q [--query Q ...] [--strict] [--byte-aligned] [--fragment] [--preserve-prefixes] [--compression|--pre-compress]"
        " [--mem-cap BYTES] [--stats] IN.exi|-", why);
}

int wmctl_exi_filter(int argc, char **argv)
{
    const char *schema = NULL, *gfile = NULL, *in = NULL, *regfile = NULL, *ctype = NULL;
    wm_schema_reg *reg = NULL;
    bool stats = false, schemaless = false;
    size_t mem_cap = 0; /* 0: the codec's default */
    unsigned oob = 0; /* the out-of-band options given here (wmctl_exi_oob_check) */
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_oob ct_ov = { 0 }; /* --registry: the options the Content Type itself gave */
    const char **qs = calloc((size_t)argc + 1, sizeof *qs);
    wm_xp_ns *ns = calloc((size_t)argc + 1, sizeof *ns);
    uint32_t nq = 0;
    size_t nns = 0;
    int rc = 2;
    wm_exi_grammar *g = NULL;
    wm_xpf *f = NULL;
    wm_xpf_ctx *c = NULL;
    uint8_t *data = NULL;
    uint64_t *m = NULL;
    if (!qs || !ns) { rc = wmctl_usage_error("exi", "out of memory"); goto out; }
    for (int i = 1; i < argc; i++) {
        unsigned ob;
        if (!strcmp(argv[i], "--schema") && i + 1 < argc) schema = argv[++i];
        else if (!strcmp(argv[i], "--grammar") && i + 1 < argc) gfile = argv[++i];
        else if (!strcmp(argv[i], "--registry") && i + 1 < argc) regfile = argv[++i];
        else if (!strcmp(argv[i], "--content-type") && i + 1 < argc) ctype = argv[++i];
        else if (!strcmp(argv[i], "--query") && i + 1 < argc) qs[nq++] = argv[++i];
        else if (!strcmp(argv[i], "--ns") && i + 1 < argc) {
            if (!wm_xp_ns_parse(argv[++i], &ns[nns])) { rc = wmctl_usage_error("exi", "--ns wants PREFIX=URI, got '%s'", argv[i]); goto out; }
            char why[600];
            if (wm_xp_ns_conflict(ns, nns, &ns[nns], why, sizeof why)) { rc = wmctl_usage_error("exi", "--ns: %s", why); goto out; }
            nns++;
        } else if ((ob = wmctl_exi_oob_option(argv[i], &o))) oob |= ob;
        else if (!strcmp(argv[i], "--schemaless")) schemaless = true;
        else if (!strcmp(argv[i], "--stats")) stats = true;
        else if (!strcmp(argv[i], "--mem-cap") && i + 1 < argc) {
            char why[160];
            if (wm_exi_mem_cap_parse(argv[++i], &mem_cap, why, sizeof why)) { rc = refuse("%s", why); goto out; }
        }
        else if (argv[i][0] == '-' && argv[i][1]) { rc = refuse("filter does not take %s", argv[i]); goto out; }
        else if (!in) in = argv[i];
        else { rc = refuse("filter takes one input, '%s' is one too many", argv[i]); goto out; }
    }
    const char *why = !in ? "no input (IN.exi or -)"
                      : !nq ? "no --query"
                      : (schema != NULL) + (gfile != NULL) + (regfile != NULL) + schemaless != 1
                          ? "exactly one of --schema, --grammar, --registry, --schemaless"
                      : (regfile != NULL) != (ctype != NULL) ? "--registry and --content-type go together" : NULL;
    if (why) {
        rc = refuse("%s", why);
        goto out;
    }
    wm_exi_error e = { 0 };
    if (regfile) {
        char rerr[512];
        uint32_t id;
        wm_load_error le;
        if (wm_schema_reg_load(regfile, &reg, &le)) { rc = wmctl_load_error("exi", &le, 2); goto out; }
        /* the publication's options as the data plane sees them; the ones given here on top */
        wm_exi_options given = o;
        wm_exi_ct_status cs = wm_schema_reg_bind(reg, ctype, strlen(ctype), &id, &o, &ct_ov, rerr, sizeof rerr);
        if (cs != WM_EXI_CT_OK) {
            rc = wmctl_usage_error("exi", "content type '%s': %s (application/exi; schema=NAME[; OPTION=VALUE ...])", ctype, rerr);
            goto out;
        }
        if (id == UINT32_MAX) { rc = wmctl_usage_error("exi", "%s (%s)", rerr, regfile); goto out; }
        if (oob & WMCTL_EXI_OOB_STRICT) o.strict = true;
        if (oob & (WMCTL_EXI_OOB_BYTE_ALIGNED | WMCTL_EXI_OOB_PRE_COMPRESS)) o.alignment = given.alignment;
        if (oob & WMCTL_EXI_OOB_FRAGMENT) o.fragment = true;
        if (oob & WMCTL_EXI_OOB_PREFIXES) o.preserve_prefixes = true;
        if (oob & WMCTL_EXI_OOB_COMPRESSION) o.compression = true;
        const wm_schema_reg_entry *re = &reg->e[id];
        /* --ns may add prefixes, never rebind one of the registry's: the data plane and the
         * proxy know only the registry's bindings, and this tool answers as they would */
        for (size_t j = 0; j < nns; j++) {
            const wm_xp_ns *r0 = wm_xp_ns_conflict(re->ns, re->n_ns, &ns[j], NULL, 0);
            if (r0) {
                rc = wmctl_usage_error("exi", "--ns %s=%s: the registry %s binds prefix '%s' of schema '%s' to '%s'"
                                       " (the data plane and the proxy use the registry's binding)",
                                       ns[j].prefix, ns[j].uri, regfile, r0->prefix, re->name, r0->uri);
                goto out;
            }
        }
        wm_xp_ns *all = calloc(re->n_ns + nns + 1, sizeof *all);
        if (!all) { rc = wmctl_usage_error("exi", "out of memory"); goto out; }
        memcpy(all, re->ns, re->n_ns * sizeof *all);
        memcpy(all + re->n_ns, ns, nns * sizeof *all);
        free(ns);
        ns = all;
        nns += re->n_ns;
        g = re->g;
    } else if (schema) {
        if (wm_exi_xsd_compile(schema, &g, &e)) {
            rc = wmctl_usage_error("exi", "schema %s: %s [%s]", schema, e.msg, wm_exi_status_name(e.status));
            goto out;
        }
    } else if (schemaless) {
        if (!(g = wm_exi_grammar_schemaless())) { rc = wmctl_usage_error("exi", "out of memory"); goto out; }
    } else if ((rc = wmctl_exi_load_grammar(gfile, &g))) {
        goto out;
    }
    wm_xpf_error fe;
    if (wm_xpf_compile(g, qs, nq, ns, nns, &f, &fe)) {
        if (fe.query != UINT32_MAX)
            rc = wmctl_usage_error("exi", "query %u at position %u: %s", fe.query + 1, fe.pos, fe.msg);
        else rc = wmctl_usage_error("exi", "%s", fe.msg);
        goto out;
    }
    if (stats) {
        wm_xpf_stats s;
        wm_xpf_stats_get(f, &s);
        fprintf(stderr, "filter: %u queries, %u path states over %u name classes, %u predicate states, %u accepting states,"
                " %u value tests (%u Hyperscan patterns), %u always-evaluated; filter grammar %u pairs, %u queries impossible in strict streams\n",
                s.queries, s.path_states, s.symbols, s.predicate_states, s.accepting_states, s.literals, s.patterns, s.always,
                s.filter_grammar_pairs, s.impossible_strict);
    }
    size_t len;
    char msg[512];
    if (!(data = wmctl_read_file(in, WMCTL_MAX_EXI_INPUT, &len, msg, sizeof msg))) {
        rc = wmctl_usage_error("exi", "%s", msg);
        goto out;
    }
    if ((rc = wmctl_exi_oob_check(in, data, len, oob))) goto out;
    char cwhy[200];
    if (regfile && wm_exi_oob_header_conflict(&ct_ov, data, len, cwhy, sizeof cwhy))
        fprintf(stderr, "wmctl exi: %s: Content Type \"%s\": %s; decoded with the header's options (EXI 1.0 §5.4),"
                        " as the data plane and the proxy do (they count it: header_conflicts)\n", in, ctype, cwhy);
    if (!(c = wm_xpf_ctx_new(f, &(wm_exi_limits){ .whole_buffer = true, .mem_cap = mem_cap })) || !(m = calloc((nq + 63) / 64, sizeof *m))) {
        rc = wmctl_usage_error("exi", "out of memory");
        goto out;
    }
    wm_xpf_ctx_set_whole_stream(c, true);
    bool early = false;
    wm_xpf_status st = wm_xpf_match(c, data, len, &o, NULL, 0, m, &early, &e);
    if (st == WM_XPF_E_DECODE) {
        fprintf(stderr, "wmctl exi: %s: %s at bit %llu [%s]%s\n", in, e.msg, (unsigned long long)e.bit_pos, wm_exi_status_name(e.status),
                e.status == WM_EXI_E_MEMORY ? WM_EXI_MEM_CAP_HINT : "");
        rc = 1;
        goto out;
    }
    if (st) { rc = wmctl_usage_error("exi", "%s: a value is too large for the filter", in); goto out; }
    printf("[");
    for (uint32_t q = 0, k = 0, b; q < nq; q++)
        if (b = wm_xpf_bit_of(f, q), m[b >> 6] >> (b & 63) & 1) printf("%s%u", k++ ? "," : "", q + 1);
    printf("]\n");
    if (stats) fprintf(stderr, "filter: %s\n", early ? "decided before the end of the stream (the rest was still validated)" : "needed the whole stream");
    rc = 0;
out:
    free(m);
    free(data);
    wm_xpf_ctx_free(c);
    wm_xpf_free(f);
    if (!reg) wm_exi_grammar_free(g); /* else the registry owns it */
    wm_schema_reg_free(reg);
    free(qs);
    free(ns);
    return rc;
}
