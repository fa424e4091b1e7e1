/* Fuzzes the XPath subset parser (matcher/xpath_parse.h) and, for what it
 * accepts, the filter compiler and evaluator (matcher/xpath_filter.h) on a
 * small in-memory schema with attributes and typed text. Besides "no crash,
 * no leak", it checks what the parser promises:
 *   - on failure the position lies within the input (1..len+1) and the
 *     message is non-empty;
 *   - on success there are 1..WM_XP_MAX_STEPS steps and every predicate
 *     node index is in range;
 *   - compiling an accepted query either succeeds or fails with a message
 *     naming query 0, and evaluation over a fixed stream succeeds.
 * Input: the query text; bindings s=urn:s and t=urn:t are given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/exi_encode.h"
#include "codec/exi_xml.h"
#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema' targetNamespace='urn:s' xmlns:s='urn:s' elementFormDefault='qualified'>"
    "<xs:element name='r'><xs:complexType><xs:sequence>"
    "<xs:element name='a' maxOccurs='unbounded'><xs:complexType><xs:simpleContent><xs:extension base='xs:decimal'>"
    "<xs:attribute name='n' type='xs:string'/><xs:attribute name='v' type='xs:double'/><xs:attribute name='b' type='xs:boolean'/>"
    "</xs:extension></xs:simpleContent></xs:complexType></xs:element>"
    "<xs:element name='c' type='xs:string' minOccurs='0'/>"
    "</xs:sequence><xs:attribute name='id' type='xs:int'/></xs:complexType></xs:element></xs:schema>";
static const char xml[] = "<r xmlns='urn:s' id='7'><a n='x' v='1.5' b='true'>12.5</a><a n='yy'>-3</a><c>hello</c></r>";

static wm_exi_grammar *g;
static uint8_t exi[512];
static size_t exi_len;

static void setup(void)
{
    wm_exi_error e;
    if (wm_exi_xsd_compile_mem(xsd, sizeof xsd - 1, &g, &e)) abort();
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, true, NULL);
    if (wm_exi_encode_xml(&enc, xml, sizeof xml - 1, exi, sizeof exi, &exi_len, &e)) abort();
    wm_exi_encoder_free(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g) setup();
    static const wm_xp_ns ns[] = { { "s", "urn:s" }, { "t", "urn:t" } };
    wm_xp_query q;
    wm_xp_error err;
    if (!wm_xp_parse((const char *)data, size, ns, 2, &q, &err)) {
        if (!err.msg[0]) abort();
        if (err.pos > size + 1) abort();
        if (err.pos == 0 && strcmp(err.msg, "out of memory")) abort();
        return 0;
    }
    if (q.n_steps < 1 || q.n_steps > WM_XP_MAX_STEPS) abort();
    for (uint32_t i = 0; i < q.n_steps; i++)
        if (q.steps[i].pred != WM_XP_NONE && q.steps[i].pred >= q.n_nodes) abort();
    for (uint32_t i = 0; i < q.n_nodes; i++) {
        const wm_xp_node *n = &q.nodes[i];
        if (n->kind <= WM_XP_N_NOT && n->a >= q.n_nodes) abort();
        if (n->kind <= WM_XP_N_AND && n->b >= q.n_nodes) abort();
    }
    wm_xp_query_free(&q);
    /* the compiler wants a NUL-terminated text */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    if (strlen(text) == size) {
        const char *qs[1] = { text };
        wm_xpf *f = NULL;
        wm_xpf_error fe;
        wm_xpf_status st = wm_xpf_compile(g, qs, 1, ns, 2, &f, &fe);
        if (st) {
            if (!fe.msg[0]) abort();
            if (st != WM_XPF_E_MEMORY && st != WM_XPF_E_LIMIT && fe.query != 0) abort();
        } else {
            wm_xpf_ctx *c = wm_xpf_ctx_new(f, NULL);
            uint64_t m = 0;
            wm_exi_error e;
            if (c && wm_xpf_match(c, exi, exi_len, NULL, NULL, 0, &m, NULL, &e) != WM_XPF_OK) abort();
            wm_xpf_ctx_free(c);
            wm_xpf_free(f);
        }
    }
    free(text);
    return 0;
}
