/* Internal: the schema model between the XSD reader (exi_xsd.c) and the
 * grammar builder (exi_grammar.c). Names are kept as strings here; the
 * builder sorts them into the initial string table (§7.3.1) and resolves ids.
 * Not part of the public API: include codec/exi_grammar.h and
 * codec/exi_xsd.h instead. */
#ifndef WM_CODEC_EXI_SCHEMA_H
#define WM_CODEC_EXI_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/exi_grammar.h"

#define XS_UNBOUNDED UINT32_MAX

enum { XS_P_ELEM, XS_P_ANY, XS_P_SEQ, XS_P_CHOICE, XS_P_ALL };
enum { XS_W_ANY, XS_W_NOT, XS_W_LIST };
enum { XS_CT_EMPTY, XS_CT_SIMPLE, XS_CT_ELEMENT, XS_CT_MIXED };

typedef struct xs_wild {
    uint8_t kind;            /* XS_W_* */
    uint32_t n;              /* XS_W_LIST: namespace names ("" = absent) */
    char **uris;
} xs_wild;

typedef struct xs_particle {
    uint8_t kind;            /* XS_P_* */
    uint32_t min, max;       /* max XS_UNBOUNDED */
    uint32_t elem;           /* XS_P_ELEM: element declaration */
    xs_wild wild;            /* XS_P_ANY */
    uint32_t n_kids;
    uint32_t *kids;          /* particle indexes */
} xs_particle;

typedef struct xs_attr {
    char *uri, *name;
    uint32_t dt;             /* datatype index */
    bool required;
} xs_attr;

typedef struct xs_type {
    char *uri, *name;        /* name NULL: anonymous */
    bool simple;
    uint32_t dt;             /* simple type or simple content: datatype index */
    uint8_t content;         /* XS_CT_* */
    uint32_t particle;       /* XS_CT_ELEMENT/MIXED: root particle, WM_EXI_NONE if empty */
    uint32_t n_attrs;
    xs_attr *attrs;
    bool has_awild;
    xs_wild awild;
    uint32_t base;           /* base type index, WM_EXI_NONE at the top */
    bool is_union;
    bool ur;                 /* xs:anyType */
    bool has_min, has_max;   /* integer-derived simple types: value bounds (§7.1.5) */
    int64_t min, max;
    bool is_integer;         /* derived from xs:integer */
} xs_type;

typedef struct xs_elem {
    char *uri, *name;
    uint32_t type;
    bool nillable, global, abstract;
    uint32_t subst_head;     /* element index or WM_EXI_NONE */
} xs_elem;

typedef struct xs_gattr {
    char *uri, *name;
    uint32_t dt;             /* datatype, WM_EXI_NONE while unresolved */
} xs_gattr;

typedef struct wm_exi_schema {
    uint32_t n_gattrs, cap_gattrs;
    xs_gattr *gattrs;        /* global attribute declarations (string table, AT(*) typing) */
    uint32_t n_wuris, cap_wuris;
    char **wuris;            /* namespaces named by wildcards (string table, §7.3.1) */
    uint32_t n_types, cap_types;
    xs_type *types;
    uint32_t n_elems, cap_elems;
    xs_elem *elems;
    uint32_t n_parts, cap_parts;
    xs_particle *parts;
    uint32_t n_dts, cap_dts;
    wm_exi_datatype *dts;
    uint32_t anytype;        /* type index of xs:anyType */
    uint32_t dt_string, dt_boolean;
    /* every string the model owns, freed together */
    uint32_t n_strs, cap_strs;
    void **strs;
} wm_exi_schema;

/* Builds the compiled grammar from a complete model. The model stays owned by
 * the caller. Errors: WM_EXI_E_GRAMMAR (too many states), WM_EXI_E_MEMORY. */
wm_exi_status wm_exi_grammar_build(const wm_exi_schema *s, wm_exi_grammar **out, wm_exi_error *err);

/* Model helpers (exi_grammar.c). Each returns the new index, WM_EXI_NONE on OOM. */
void wm_exi_schema_init(wm_exi_schema *s);
void wm_exi_schema_free(wm_exi_schema *s);
char *wm_exi_schema_strdup(wm_exi_schema *s, const char *str);
void *wm_exi_schema_keep(wm_exi_schema *s, void *p);      /* model takes ownership of malloc'ed p */
uint32_t wm_exi_schema_add_type(wm_exi_schema *s);
uint32_t wm_exi_schema_add_elem(wm_exi_schema *s);
uint32_t wm_exi_schema_add_part(wm_exi_schema *s);
uint32_t wm_exi_schema_add_dt(wm_exi_schema *s, const wm_exi_datatype *dt);
uint32_t wm_exi_schema_add_gattr(wm_exi_schema *s, char *uri, char *name, uint32_t dt);
uint32_t wm_exi_schema_add_wuri(wm_exi_schema *s, char *uri);
/* Adds the XML Schema built-in types (anyType, anySimpleType and the 44 others
 * of Appendix D) as named types in the XSD namespace; sets anytype/dt_*. */
wm_exi_status wm_exi_schema_add_builtins(wm_exi_schema *s);

#endif
