/* Compiled EXI grammar -> exificient.js grammar JSON (see exi_exificient.h). */
#include "control/exi_exificient.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define GID_STATE0 5 /* grammar id of our state 0 */

static const char *dt_name(const wm_exi_datatype *t)
{
    switch (t->kind) {
    case WM_EXI_DT_STRING: case WM_EXI_DT_RCS_STRING: return "STRING";
    case WM_EXI_DT_BASE64: return "BINARY_BASE64";
    case WM_EXI_DT_HEX: return "BINARY_HEX";
    case WM_EXI_DT_BOOLEAN: return "BOOLEAN";
    case WM_EXI_DT_DECIMAL: return "DECIMAL";
    case WM_EXI_DT_FLOAT: return "FLOAT";
    case WM_EXI_DT_INTEGER: return "INTEGER";
    case WM_EXI_DT_UNSIGNED: return "UNSIGNED_INTEGER";
    case WM_EXI_DT_NBIT: return "NBIT_UNSIGNED_INTEGER";
    case WM_EXI_DT_DATETIME: return "DATETIME";
    case WM_EXI_DT_LIST: return "LIST";
    case WM_EXI_DT_ENUM: return "ENUMERATION";
    default: return "QNAME";
    }
}

static const char *const dt_variant[] = { "gYear", "gYearMonth", "date", "dateTime", "gMonth", "gMonthDay", "gDay", "time" };

/* Compact id of lid within its URI partition (§7.3.2). */
static json_int_t local_id(const wm_exi_grammar *g, uint32_t uri, uint32_t lid)
{
    return (json_int_t)(lid - g->uri_lid_first[uri]);
}

/* Grammar id of the first state an element starts in: elem is an element
 * declaration or WM_EXI_ELEM_FRAGMENT, the relaxed ElementFragment grammar
 * of names declared with several types (§8.5.3). -1 when elem (or its type
 * grammar) lies outside the grammar's arrays: the caller refuses. */
static json_int_t elem_grammar(const wm_exi_grammar *g, uint32_t elem)
{
    uint32_t t = elem == WM_EXI_ELEM_FRAGMENT ? g->elem_fragment : elem < g->n_elems ? g->elems[elem].type : WM_EXI_NONE;
    if (t >= g->n_tgrams || g->tgrams[t].start >= g->n_states) return -1;
    return GID_STATE0 + (json_int_t)g->tgrams[t].start;
}

static json_t *grammar(json_int_t id, const char *type, json_t *prods)
{
    return json_pack("{s:I, s:s, s:o}", "grammarID", id, "type", type, "production", prods);
}

static json_t *prod_simple(const char *event, json_int_t next)
{
    return json_pack("{s:s, s:I}", "event", event, "nextGrammarID", next);
}

/* NULL when elem is out of range (see elem_grammar). */
static json_t *prod_se(const wm_exi_grammar *g, uint32_t uri, uint32_t lid, uint32_t elem, json_int_t next)
{
    if (elem_grammar(g, elem) < 0) return NULL;
    return json_pack("{s:s, s:I, s:I, s:I, s:I}", "event", "startElement", "startElementNamespaceID", (json_int_t)uri,
                     "startElementLocalNameID", local_id(g, uri, lid), "startElementGrammarID", elem_grammar(g, elem),
                     "nextGrammarID", next);
}

wm_exi_status wm_exi_exificient_json(const wm_exi_grammar *g, char **out, wm_exi_error *err)
{
    if (g->schemaless)
        return wm_exi_fail(err, WM_EXI_E_UNSUPPORTED, 0, "a schema-less grammar has no exificient.js grammar file");
    /* nillable per start state: exificient.js keeps it per grammar, not per element */
    signed char *nil = calloc(g->n_states ? g->n_states : 1, 1);
    if (!nil) return WM_EXI_E_MEMORY;
    for (uint32_t e = 0; e < g->n_elems; e++) {
        uint32_t s = g->tgrams[g->elems[e].type].start;
        signed char v = g->elems[e].nillable ? 1 : -1;
        if (nil[s] && nil[s] != v) {
            free(nil);
            return wm_exi_fail(err, WM_EXI_E_UNSUPPORTED, 0,
                               "type of element " WM_EXI_QUOTE_FMT " is used by nillable and non-nillable elements: exificient.js grammars "
                               "keep nillable per grammar", WM_EXI_QUOTE(g->lnames[g->elems[e].lid], 64));
        }
        nil[s] = v;
    }
    /* elements started through the relaxed ElementFragment grammar are nillable (§8.5.3) */
    if (g->elem_fragment < g->n_tgrams && g->tgrams[g->elem_fragment].start < g->n_states)
        nil[g->tgrams[g->elem_fragment].start] = 1;
    uint32_t bad = WM_EXI_NONE; /* an out-of-range SE argument: refused after the walk */
    json_t *root = json_object(), *nsa = json_array(), *dts = json_array(), *grs = json_array();
    /* string table partitions (§7.3.1) with the global element grammars */
    for (uint32_t u = 0; u < g->n_uris; u++) {
        json_t *qa = json_array();
        for (uint32_t k = 0; k < g->uri_lid_count[u]; k++) {
            uint32_t lid = g->uri_lid_first[u] + k;
            json_t *q = json_pack("{s:I, s:I, s:s}", "uriID", (json_int_t)u, "localNameID", (json_int_t)k, "localName",
                                  g->lnames[lid]);
            uint32_t ge = wm_exi_grammar_global_elem(g, u, lid);
            if (ge != WM_EXI_NONE) {
                if (elem_grammar(g, ge) < 0) bad = ge;
                json_object_set_new(q, "globalElementGrammarID", json_integer(elem_grammar(g, ge)));
            }
            json_array_append_new(qa, q);
        }
        json_array_append_new(nsa, json_pack("{s:I, s:s, s:o}", "uriID", (json_int_t)u, "uri", g->uris[u], "qnameContext", qa));
    }
    for (uint32_t i = 0; i < g->n_types; i++) {
        const wm_exi_datatype *t = &g->types[i];
        json_t *d = json_pack("{s:I, s:s}", "simpleDatatypeID", (json_int_t)i, "type", dt_name(t));
        if (t->kind == WM_EXI_DT_DATETIME && t->variant < 8)
            json_object_set_new(d, "datetimeType", json_string(dt_variant[t->variant]));
        if (t->kind == WM_EXI_DT_LIST && t->list_item < g->n_types)
            json_object_set_new(d, "listType", json_string(dt_name(&g->types[t->list_item])));
        if (t->kind == WM_EXI_DT_NBIT) {
            json_object_set_new(d, "lowerBound", json_integer(t->nbit_min));
            json_object_set_new(d, "upperBound", json_integer(t->nbit_min + (t->nbit_width ? (1ll << t->nbit_width) - 1 : 0)));
        }
        json_array_append_new(dts, d);
    }
    /* document and fragment grammars (§8.5.1, §8.5.2), strict: no DT/CM/PI */
    json_t *p;
    p = json_array();
    json_array_append_new(p, prod_simple("startDocument", 1));
    json_array_append_new(grs, grammar(0, "document", p));
    p = json_array();
    for (uint32_t i = 0; i < g->n_doc; i++) {
        uint32_t d = g->doc_elems[i];
        json_t *j = prod_se(g, d < g->n_elems ? g->elems[d].uri : 0, d < g->n_elems ? g->elems[d].lid : 0, d, 2);
        if (!j) bad = d;
        json_array_append_new(p, j);
    }
    json_array_append_new(p, prod_simple("startElementGeneric", 2));
    json_array_append_new(grs, grammar(1, "docContent", p));
    p = json_array();
    json_array_append_new(p, prod_simple("endDocument", -1));
    json_array_append_new(grs, grammar(2, "docEnd", p));
    p = json_array();
    json_array_append_new(p, prod_simple("startDocument", 4));
    json_array_append_new(grs, grammar(3, "fragment", p));
    p = json_array();
    for (uint32_t i = 0; i < g->n_frag; i++) {
        const wm_exi_frag_elem *f = &g->frag[i];
        /* elem NONE: a name declared with several types, relaxed ElementFragment grammar (§8.5.3) */
        uint32_t e = f->elem == WM_EXI_NONE ? WM_EXI_ELEM_FRAGMENT : f->elem;
        json_t *j = prod_se(g, f->uri, f->lid, e, 4);
        if (!j) bad = e;
        json_array_append_new(p, j);
    }
    json_array_append_new(p, prod_simple("startElementGeneric", 4));
    json_array_append_new(p, prod_simple("endDocument", -1));
    json_array_append_new(grs, grammar(4, "fragmentContent", p));
    /* element grammars: one per state, productions in event-code order */
    for (uint32_t s = 0; s < g->n_states; s++) {
        const wm_exi_state *st = &g->states[s];
        p = json_array();
        for (uint32_t k = 0; k < st->n; k++) {
            const wm_exi_prod *q = &g->prods[st->first + k];
            json_int_t next = q->next == WM_EXI_NONE ? -1 : GID_STATE0 + (json_int_t)q->next;
            json_t *j;
            switch (q->term) {
            case WM_EXI_T_AT:
                j = json_pack("{s:s, s:I, s:I, s:I, s:I}", "event", "attribute", "attributeNamespaceID", (json_int_t)q->uri,
                              "attributeLocalNameID", local_id(g, q->uri, q->lid), "attributeDatatypeID",
                              (json_int_t)(q->arg == WM_EXI_NONE ? g->dt_string : q->arg), "nextGrammarID", next);
                break;
            case WM_EXI_T_AT_URI:
                j = json_pack("{s:s, s:I, s:I}", "event", "attributeNS", "attributeNamespaceID", (json_int_t)q->uri,
                              "nextGrammarID", next);
                break;
            case WM_EXI_T_AT_ANY: j = prod_simple("attributeGeneric", next); break;
            case WM_EXI_T_SE:
                /* arg is a declaration or, in the ElementFragment grammar's states, that grammar itself */
                j = prod_se(g, q->uri, q->lid, q->arg, next);
                if (!j) bad = q->arg;
                break;
            case WM_EXI_T_SE_URI:
                j = json_pack("{s:s, s:I, s:I}", "event", "startElementNS", "startElementNamespaceID", (json_int_t)q->uri,
                              "nextGrammarID", next);
                break;
            case WM_EXI_T_SE_ANY: j = prod_simple("startElementGeneric", next); break;
            case WM_EXI_T_EE: j = prod_simple("endElement", -1); break;
            default:
                j = json_pack("{s:s, s:I, s:I}", "event", "characters", "charactersDatatypeID",
                              (json_int_t)(q->arg == WM_EXI_NONE ? g->dt_string : q->arg), "nextGrammarID", next);
                break;
            }
            json_array_append_new(p, j);
        }
        const char *type = st->flags & WM_EXI_S_START ? "firstStartTagContent"
                           : st->flags & WM_EXI_S_ATTRS ? "startTagContent" : "elementContent";
        json_t *gr = grammar(GID_STATE0 + (json_int_t)s, type, p);
        if (st->flags & WM_EXI_S_START) {
            json_object_set_new(gr, "isTypeCastable", json_boolean(g->tgrams[st->type].xsi_type_strict));
            json_object_set_new(gr, "isNillable", json_boolean(nil[s] > 0));
        }
        json_array_append_new(grs, gr);
    }
    free(nil);
    json_object_set_new(root, "qnames", json_pack("{s:o}", "namespaceContext", nsa));
    json_object_set_new(root, "simpleDatatypes", dts);
    json_object_set_new(root, "grs", json_pack("{s:i, s:i, s:o}", "documentGrammarID", 0, "fragmentGrammarID", 3, "grammar", grs));
    if (bad != WM_EXI_NONE) {
        json_decref(root);
        *out = NULL;
        return wm_exi_fail(err, WM_EXI_E_GRAMMAR, 0,
                           "a start-element production names element grammar %" PRIu32 ", outside the grammar's %" PRIu32
                           " element declarations",
                           bad, g->n_elems);
    }
    *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return *out ? WM_EXI_OK : WM_EXI_E_MEMORY;
}
