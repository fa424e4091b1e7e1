/* Content filters of all schemas: the entry point the data plane calls with
 * a publication's schema and payload and the candidate subscriptions that
 * survived topic and spatial matching (ARCHITECTURE.md §3: the EXI filter
 * automaton runs only for survivors).
 *
 * A wm_xpf_set is built from the subscriptions' content filters, each a
 * (schema id, XPath text) pair identified by its position in the build list
 * (the "query id"); the queries of one schema are compiled together into one
 * filter automaton (matcher/xpath_filter.h). Schema ids are small integers
 * the caller assigns (e.g. the line order of the schema registry,
 * control/schema_registry.h); grammar and namespace bindings per schema id
 * are given at build time. The set is immutable: rebuild it on subscription
 * churn and publish the new one through RCU like the other match tables.
 *
 * Matching: wm_xpf_set_match(ctx, schema, payload, cand) decodes the payload
 * with that schema's grammar only if some candidate belongs to that schema,
 * decides only the candidates, and stops decoding when they are decided
 * (unless whole-stream validation is on: wm_xpf_set_ctx_set_whole_stream).
 * Each thread uses its own wm_xpf_set_ctx.
 */
#ifndef WM_MATCHER_XPATH_SET_H
#define WM_MATCHER_XPATH_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "matcher/xpath_filter.h"

typedef struct wm_xpf_schema {
    const wm_exi_grammar *g;  /* must outlive the set; NULL: schema id unused */
    const wm_xp_ns *ns;       /* prefix bindings of this schema's queries */
    size_t n_ns;
} wm_xpf_schema;

typedef struct wm_xpf_query_def {
    uint32_t schema;          /* index into the schemas array */
    const char *xpath;        /* NUL-terminated query text */
} wm_xpf_query_def;

typedef struct wm_xpf_set wm_xpf_set;
typedef struct wm_xpf_set_ctx wm_xpf_set_ctx;

/* Builds the set: schemas[0..n_schemas), queries[0..n_q) (query id = index).
 * Errors as wm_xpf_compile, with err->query the failing query id;
 * WM_XPF_E_QUERY also for a schema id out of range or without grammar. */
wm_xpf_status wm_xpf_set_build(const wm_xpf_schema *schemas, uint32_t n_schemas, const wm_xpf_query_def *queries,
                               uint32_t n_q, wm_xpf_set **out, wm_xpf_error *err);
void wm_xpf_set_free(wm_xpf_set *s);

/* Per-thread context (decoders, Hyperscan scratch of every schema); NULL on
 * out of memory. lim as wm_xpf_ctx_new. */
wm_xpf_set_ctx *wm_xpf_set_ctx_new(const wm_xpf_set *s, const wm_exi_limits *lim);
/* Frees c without reading its set (which may already be gone). */
void wm_xpf_set_ctx_free(wm_xpf_set_ctx *c);

/* Whole-stream validation for every schema's context (wm_xpf_ctx_set_whole_stream). */
void wm_xpf_set_ctx_set_whole_stream(wm_xpf_set_ctx *c, bool on);

/* Decides candidate query ids cand[0..n_cand) on payload[0..len), an EXI
 * stream of schema `schema` (options from its header, else oob, NULL =
 * defaults). Writes the matching candidate ids, in the order given, to
 * out[0..*n_out) (out has room for n_cand). Candidates of other schemas or
 * out of range never match. With no candidate of this schema the payload is
 * not decoded (*n_out = 0, WM_XPF_OK). Errors: WM_XPF_E_DECODE (exi_err
 * filled: the payload is not valid EXI for the schema), WM_XPF_E_MEMORY,
 * WM_XPF_E_QUERY (schema out of range). */
wm_xpf_status wm_xpf_set_match(wm_xpf_set_ctx *c, uint32_t schema, const uint8_t *payload, size_t len,
                               const wm_exi_options *oob, const uint32_t *cand, uint32_t n_cand, uint32_t *out,
                               uint32_t *n_out, wm_exi_error *exi_err);

#endif
