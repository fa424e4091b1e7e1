/* exificient.js grammar export (control/exi_exificient.h) of schemas whose
 * fragment grammar needs the relaxed ElementFragment grammar (§8.5.3): names
 * declared with several types. The W3C interop schemas fragment-c.xsd and
 * elementFragment.xsd have such names; their ElementFragment states carry
 * SE(qname) productions that lead back into the ElementFragment grammar
 * rather than to an element declaration. */
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "control/exi_exificient.h"
#include "tests/lib/exi_fixture.h"

#define GID_STATE0 5 /* grammar id of our state 0 (exi_exificient.h) */

/* Every startElementGrammarID names a grammar of the file; returns how many
 * startElement productions lead into the ElementFragment grammar. */
static unsigned check_links(const wm_exi_grammar *g, const char *json)
{
    json_error_t je;
    json_t *root = json_loads(json, 0, &je);
    cr_assert(root, "export is not JSON: %s", je.text);
    json_t *grs = json_object_get(json_object_get(root, "grs"), "grammar");
    size_t n = json_array_size(grs);
    cr_assert_eq(n, GID_STATE0 + (size_t)g->n_states);
    json_int_t efrag = GID_STATE0 + (json_int_t)g->tgrams[g->elem_fragment].start;
    unsigned to_efrag = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *gr = json_array_get(grs, i);
        cr_assert_eq(json_integer_value(json_object_get(gr, "grammarID")), (json_int_t)i);
        json_t *prods = json_object_get(gr, "production");
        for (size_t k = 0; k < json_array_size(prods); k++) {
            json_t *id = json_object_get(json_array_get(prods, k), "startElementGrammarID");
            if (!id) continue;
            json_int_t v = json_integer_value(id);
            cr_assert(v >= GID_STATE0 && v < (json_int_t)n, "grammar %zu production %zu: startElementGrammarID %lld", i, k,
                      (long long)v);
            to_efrag += v == efrag;
        }
    }
    /* elements started in the relaxed grammar are nillable, as the decoder has them */
    cr_assert(json_is_true(json_object_get(json_array_get(grs, (size_t)efrag), "isNillable")));
    json_decref(root);
    return to_efrag;
}

static void export_grammar(wm_exi_grammar *g, const char *rel)
{
    wm_exi_error e = { 0 };
    cr_assert(g, "%s: %s", rel, e.msg);
    cr_assert_neq(g->elem_fragment, WM_EXI_NONE, "%s has no name declared with several types", rel);
    unsigned inside = 0; /* SE productions of the ElementFragment states that stay in that grammar */
    for (uint32_t s = 0; s < g->n_states; s++)
        for (uint32_t k = 0; k < g->states[s].n; k++) {
            const wm_exi_prod *p = &g->prods[g->states[s].first + k];
            inside += p->term == WM_EXI_T_SE && p->arg == WM_EXI_ELEM_FRAGMENT;
        }
    cr_assert_gt(inside, 0, "%s: no SE production leads into the ElementFragment grammar", rel);
    char *json = NULL;
    cr_assert_eq(wm_exi_exificient_json(g, &json, &e), WM_EXI_OK, "%s: %s", rel, e.msg);
    /* the fragment list's ambiguous names plus those productions */
    unsigned ambiguous = 0;
    for (uint32_t i = 0; i < g->n_frag; i++) ambiguous += g->frag[i].elem == WM_EXI_NONE;
    cr_assert_eq(check_links(g, json), ambiguous + inside);
    free(json);
    wm_exi_grammar_free(g);
}

Test(exi_exificient, fragment_c_relaxed_element_fragment_grammar)
{
    const char *rel = "interop/schemaInformedGrammar/declaredProductions/fragment-c.xsd";
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema(rel, &e);
    cr_assert(g, "%s: %s", rel, e.msg);
    export_grammar(g, rel);
}

/* The common case behind it: one local name with two types. */
Test(exi_exificient, same_local_name_with_two_types)
{
    static const char xsd[] =
        "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema' targetNamespace='urn:t' elementFormDefault='qualified'>"
        "<xs:element name='r'><xs:complexType><xs:sequence>"
        "<xs:element name='a'><xs:complexType><xs:sequence><xs:element name='b' type='xs:int'/></xs:sequence></xs:complexType></xs:element>"
        "<xs:element name='c'><xs:complexType><xs:sequence><xs:element name='b' type='xs:string'/></xs:sequence></xs:complexType></xs:element>"
        "</xs:sequence></xs:complexType></xs:element></xs:schema>";
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema_text(xsd, &e);
    cr_assert(g, "%s", e.msg);
    export_grammar(g, "inline");
}

/* An SE argument outside the declarations (a grammar built by other code
 * than the compiler) is refused with the reason, not followed. */
Test(exi_exificient, out_of_range_element_is_refused)
{
    wm_exi_error e = { 0 };
    wm_exi_grammar *g = wm_test_exi_schema("senml/senml.gen.xsd", &e);
    cr_assert(g, "%s", e.msg);
    wm_exi_prod *se = NULL;
    for (uint32_t i = 0; i < g->n_prods && !se; i++)
        if (g->prods[i].term == WM_EXI_T_SE) se = &g->prods[i];
    cr_assert(se);
    uint32_t keep = se->arg;
    se->arg = g->n_elems + 1000000;
    char *json = (char *)1;
    cr_assert_eq(wm_exi_exificient_json(g, &json, &e), WM_EXI_E_GRAMMAR);
    cr_assert_null(json);
    cr_assert(strstr(e.msg, "outside the grammar's"), "%s", e.msg);
    se->arg = keep;
    wm_exi_grammar_free(g);
}
