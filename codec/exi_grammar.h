/* Compiled EXI grammars (W3C EXI 1.0 Second Edition §8).
 *
 * A wm_exi_grammar is what a schema (or no schema) compiles into: the initial
 * string table (§7.3.1, Appendix D: URIs, prefixes and local names, extended
 * with every namespace and name of the schema, sorted), the datatype
 * representations of its simple types (§7.1), and the normalized
 * schema-informed grammars (§8.5.4.2) of every type, with event codes
 * assigned in the §8.5.4.2.2 order: AT(qname) by local name then URI,
 * AT(uri:*), AT(*), SE(qname) in schema order, SE(uri:*), SE(*), EE, CH.
 *
 * Only first-level (declared) productions are stored. The undeclared
 * productions of non-strict mode (§8.5.4.4.1), the strict xsi:type/xsi:nil
 * additions (§8.5.4.4.2), the document and fragment grammars (§8.5.1, §8.5.2)
 * and the built-in element grammars (§8.4.3, learned per document) are
 * derived at run time by the decoder/encoder from the state flags below, so
 * one compiled grammar serves strict and non-strict streams alike.
 *
 * A grammar is immutable once built: share it between threads and decoders.
 * Built by wm_exi_grammar_schemaless() or the XSD compiler
 * (codec/exi_xsd.h); freed with wm_exi_grammar_free().
 */
#ifndef WM_CODEC_EXI_GRAMMAR_H
#define WM_CODEC_EXI_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_error.h"
#include "codec/exi_types.h"

#define WM_EXI_NONE UINT32_MAX

/* Fixed URI ids of the initial string table (§7.3.1, Appendix D). */
enum { WM_EXI_URI_EMPTY = 0, WM_EXI_URI_XML = 1, WM_EXI_URI_XSI = 2, WM_EXI_URI_XSD = 3 };

/* Production terminals. */
typedef enum wm_exi_term {
    WM_EXI_T_AT = 0,        /* AT(qname) [typed value]: arg = datatype index */
    WM_EXI_T_AT_URI,        /* AT(uri:*): uri */
    WM_EXI_T_AT_ANY,        /* AT(*) */
    WM_EXI_T_SE,            /* SE(qname): arg = element declaration index */
    WM_EXI_T_SE_URI,        /* SE(uri:*): uri */
    WM_EXI_T_SE_ANY,        /* SE(*) */
    WM_EXI_T_EE,
    WM_EXI_T_CH,            /* CH [typed value]: arg = datatype index (WM_EXI_NONE = untyped) */
} wm_exi_term;

typedef struct wm_exi_prod {
    uint8_t term;           /* wm_exi_term */
    uint8_t pad[3];
    uint32_t lid;           /* AT/SE: local-name id (global across URIs, see lname_uri) */
    uint32_t uri;           /* AT/SE: URI id; AT_URI/SE_URI: the URI */
    uint32_t next;          /* next state index */
    uint32_t arg;           /* see wm_exi_term */
} wm_exi_prod;

enum {
    WM_EXI_S_HAS_EE = 1,    /* an EE production exists at the first level */
    WM_EXI_S_ATTRS = 2,     /* state index <= content (§8.5.4.4.1: attributes may still come) */
    WM_EXI_S_START = 4,     /* Element_i,0 of some type grammar */
    WM_EXI_S_CH = 8,        /* a CH production exists at the first level */
    WM_EXI_S_EFRAG0 = 16,   /* ElementFragment_0 (§8.5.3): undeclared = AT(xsi:type), AT(xsi:nil) only */
    WM_EXI_S_EFRAG = 32,    /* other ElementFragment states: no undeclared productions */
};

/* SE production argument naming the relaxed ElementFragment grammar (§8.5.3)
 * instead of an element declaration. */
#define WM_EXI_ELEM_FRAGMENT (UINT32_MAX - 1)

typedef struct wm_exi_state {
    uint32_t first;         /* index of the first production in prods[] */
    uint16_t n;             /* first-level productions (event codes 0..n-1) */
    uint8_t flags;          /* WM_EXI_S_* */
    uint8_t pad;
    uint32_t type;          /* owning type grammar */
} wm_exi_state;

/* One type grammar (§8.5.4.1.3) and what xsi:type/xsi:nil need to know. */
typedef struct wm_exi_tgram {
    uint32_t start;         /* Type_i,0 */
    uint32_t empty_start;   /* TypeEmpty_i,0 (after xsi:nil="true", §8.5.4.1.3.2) */
    uint32_t content;       /* Type_i,content */
    uint32_t uri, lid;      /* type name, WM_EXI_NONE for anonymous types */
    uint32_t simple_dt;     /* datatype of a simple type (WM_EXI_NONE for complex types) */
    uint32_t base;          /* base type grammar (WM_EXI_NONE at the top) */
    bool xsi_type_strict;   /* has named sub-types or is a union: AT(xsi:type) in strict (§8.5.4.4.2) */
} wm_exi_tgram;

/* One element declaration (global or local). */
typedef struct wm_exi_elem {
    uint32_t uri, lid;
    uint32_t type;          /* type grammar */
    bool nillable;
    bool global;
} wm_exi_elem;

/* The fragment grammar's SE(qname) list (§8.5.2): all element declarations
 * by qname; declarations of one qname with different types use the relaxed
 * ElementFragment grammar (elem == WM_EXI_NONE). */
typedef struct wm_exi_frag_elem {
    uint32_t uri, lid;
    uint32_t elem;
} wm_exi_frag_elem;

/* A global attribute declaration: AT(*) values of that name are typed (§8.5.4.4.1). */
typedef struct wm_exi_gattr {
    uint32_t uri, lid, dt;
} wm_exi_gattr;

typedef struct wm_exi_grammar {
    bool schemaless;        /* no schema: built-in grammars only (§8.4) */
    /* initial string table (§7.3.1): URIs, then local names grouped by URI */
    uint32_t n_uris;
    const char **uris;
    uint32_t *uri_lid_first; /* [n_uris] first local-name id of the URI's partition */
    uint32_t *uri_lid_count; /* [n_uris] initial local names in the partition */
    uint32_t n_lids;
    const char **lnames;     /* [n_lids] */
    uint32_t *lname_uri;     /* [n_lids] */
    /* datatypes, states, productions */
    uint32_t n_types;
    wm_exi_datatype *types;
    uint32_t n_states, n_prods;
    wm_exi_state *states;
    wm_exi_prod *prods;
    uint32_t n_tgrams;
    wm_exi_tgram *tgrams;
    uint32_t n_elems;
    wm_exi_elem *elems;
    uint32_t n_doc;          /* global elements, sorted by (local name, uri) (§8.5.1) */
    uint32_t *doc_elems;
    uint32_t n_frag;
    wm_exi_frag_elem *frag;
    uint32_t n_gattrs;
    wm_exi_gattr *gattrs;
    uint32_t anytype;        /* tgram of xs:anyType (ur-type, §8.5.4.1.3.3) */
    uint32_t dt_string;      /* datatype index of xs:string (untyped values use it too) */
    uint32_t dt_boolean;     /* xs:boolean (xsi:nil) */
    uint32_t elem_fragment;  /* tgram of the relaxed ElementFragment grammar, or NONE */
    void *mem;               /* owner of everything above (internal) */
} wm_exi_grammar;

/* A grammar with no schema: built-in grammars only (§8.4), initial string
 * table of Appendix D without the XML Schema entries. Returns NULL on OOM. */
wm_exi_grammar *wm_exi_grammar_schemaless(void);

/* Frees g and everything it owns (g->mem); NULL is a no-op. Not while a
 * decoder, encoder or content filter built on g is still in use: they
 * borrow its tables. */
void wm_exi_grammar_free(wm_exi_grammar *g);

/* Compiled grammars as bytes (.wmg files), so a schema is compiled once
 * (wmctl exi compile) and loaded fast. Layout in codec/exi_grammar_io.c: a
 * header with the format version, the body length and the body's CRC-32
 * (codec/crc32.h), then records in host byte order and layout: a cache for
 * machines running the same build, not an interchange format.
 * serialize: *out is malloc'ed (caller frees); WM_EXI_E_MEMORY.
 * deserialize: checks magic and version, length, checksum, record sizes,
 * then every count, index and flag against its array; a bad file is refused
 * with WM_EXI_E_GRAMMAR (WM_EXI_E_MEMORY if allocation fails), the reason in
 * err->msg and 8 x the byte offset of the offending field in err->bit_pos,
 * never trusted. *out owns a new grammar (NULL on failure). Pure; thread
 * safe. */
wm_exi_status wm_exi_grammar_serialize(const wm_exi_grammar *g, uint8_t **out, size_t *len);
wm_exi_status wm_exi_grammar_deserialize(const uint8_t *data, size_t len, wm_exi_grammar **out, wm_exi_error *err);

/* Lookups used by xsi:type and SE(*) (binary search, O(log n)). Return
 * WM_EXI_NONE when absent. */
uint32_t wm_exi_grammar_find_lid(const wm_exi_grammar *g, uint32_t uri, const char *local, size_t len);
uint32_t wm_exi_grammar_find_uri(const wm_exi_grammar *g, const char *uri, size_t len);
uint32_t wm_exi_grammar_global_elem(const wm_exi_grammar *g, uint32_t uri, uint32_t lid);
uint32_t wm_exi_grammar_type_by_name(const wm_exi_grammar *g, uint32_t uri, uint32_t lid);
/* Datatype of the global attribute {uri}lid, WM_EXI_NONE if undeclared. */
uint32_t wm_exi_grammar_global_attr_dt(const wm_exi_grammar *g, uint32_t uri, uint32_t lid);

#endif
