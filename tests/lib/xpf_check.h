/* Assertions shared by the content-filter unit tests (Criterion only). */
#ifndef WM_TESTS_LIB_XPF_CHECK_H
#define WM_TESTS_LIB_XPF_CHECK_H

#include <criterion/criterion.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_grammar.h"
#include "codec/exi_xsd.h"
#include "tests/lib/exi_fixture.h"
#include "matcher/xpath_filter.h"
#include "matcher/xpath_parse.h"

/* The reference of the content-filter differentials: whether libxml2's
 * XPath 1.0 evaluation of q on d selects a non-empty node set, with the n
 * bindings of ns registered (asserts that libxml2 takes q). */
static inline bool wm_test_libxml2_selects(xmlDocPtr d, const char *q, const wm_xp_ns *ns, size_t n)
{
    xmlXPathContextPtr x = xmlXPathNewContext(d);
    cr_assert_not_null(x);
    for (size_t i = 0; i < n; i++) xmlXPathRegisterNs(x, BAD_CAST ns[i].prefix, BAD_CAST ns[i].uri);
    xmlXPathObjectPtr r = xmlXPathEval(BAD_CAST q, x);
    cr_assert(r, "libxml2 refused %s", q);
    bool y = r->nodesetval && r->nodesetval->nodeNr > 0;
    xmlXPathFreeObject(r);
    xmlXPathFreeContext(x);
    return y;
}

/* The grammar of the XSD text xsd (asserted to compile); free with
 * wm_exi_grammar_free. */
static inline wm_exi_grammar *wm_test_xpf_grammar(const char *xsd)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(xsd, &e);
    cr_assert_not_null(g, "%s", e.msg);
    return g;
}

/* The grammar of the repository's schema tests/data/<name> (under
 * $WM_ROOT, else the working directory), asserted to compile; free with
 * wm_exi_grammar_free. */
static inline wm_exi_grammar *wm_test_xpf_data_grammar(const char *name)
{
    const char *root = getenv("WM_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", root ? root : ".", name);
    wm_exi_grammar *g = NULL;
    wm_exi_error e = { 0 };
    cr_assert_eq(wm_exi_xsd_compile(path, &g, &e), WM_EXI_OK, "%s: %s", path, e.msg);
    return g;
}

/* Compiles {first, q} with g (which the caller keeps) and bindings ns[0..n_ns)
 * and asserts the filter is refused as WM_XPF_E_TYPE on q (query 1) at
 * position pos, with a reason containing needle. first is a query that
 * compiles, so the index shows the refusal names the right query. */
static inline void wm_test_xpf_refused(const wm_exi_grammar *g, const char *first, const wm_xp_ns *ns, size_t n_ns,
                                       const char *q, unsigned pos, const char *needle)
{
    wm_xpf *f = NULL;
    wm_xpf_error fe;
    const char *qs[] = { first, q };
    cr_assert_eq(wm_xpf_compile(g, qs, 2, ns, n_ns, &f, &fe), WM_XPF_E_TYPE, "%s accepted", q);
    cr_assert_eq(fe.query, 1);
    cr_assert_eq(fe.pos, pos, "%s: position %u, expected %u (%s)", q, fe.pos, pos, fe.msg);
    cr_assert(strstr(fe.msg, needle), "%s: '%s' lacks '%s'", q, fe.msg, needle);
}

/* Does matched[], wm_xpf_match's result for f, report query q (bit
 * wm_xpf_bit_of(f, q), not bit q: the filter numbers its queries)? */
static inline bool wm_test_xpf_hit(const wm_xpf *f, const uint64_t *matched, uint32_t q)
{
    uint32_t b = wm_xpf_bit_of(f, q);
    cr_assert_lt(b, wm_xpf_n_queries(f), "query %u has no bit", q);
    return matched[b >> 6] >> (b & 63) & 1;
}

/* matched[] of f (at most 64 queries) with bit q for query q, to compare
 * with a literal. */
static inline uint64_t wm_test_xpf_by_query(const wm_xpf *f, const uint64_t *matched)
{
    uint64_t m = 0;
    cr_assert_leq(wm_xpf_n_queries(f), 64);
    for (uint32_t q = 0; q < wm_xpf_n_queries(f); q++) m |= (uint64_t)wm_test_xpf_hit(f, matched, q) << q;
    return m;
}

#endif
