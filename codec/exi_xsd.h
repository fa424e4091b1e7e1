/* XML Schema -> EXI grammars (W3C EXI 1.0 Second Edition §8.5, Table 7-1).
 *
 * Reads a schema document and every local document it pulls in through
 * xs:include / xs:import (schemaLocation relative to the including file; any
 * URL scheme is refused, nothing is fetched) with libxml2, builds the schema
 * components the EXI grammars need and compiles them (codec/exi_grammar.h):
 * global and local element declarations (ref, form, nillable, abstract,
 * substitution groups), attribute declarations and uses (ref, use, form,
 * attribute groups, prohibited uses in restrictions), simple types
 * (restriction with enumeration and integer bound facets, list, union),
 * complex types (empty, simple content by extension/restriction, element-only
 * and mixed content by extension/restriction, model groups sequence/choice/all
 * and named groups, min/maxOccurs, element and attribute wildcards), and the
 * built-in types of XML Schema.
 *
 * The schema is first checked with libxml2's XML Schema parser (same
 * documents, after the remote-location and external-entity refusals); an
 * invalid one is refused with libxml2's reason as "file:line: not a valid
 * XML Schema: ...". Occurrence and integer facet values are then read
 * strictly (whole value, range-checked).
 *
 * Not interpreted (documented limits): identity constraints, xs:redefine,
 * xs:override, pattern-derived restricted character sets (§7.1.10.1: strings
 * with patterns are encoded as plain strings), occurrence bounds above
 * 10000 (refused with WM_EXI_E_GRAMMAR), and integer bound facets beyond
 * int64 (the type keeps the (Unsigned) Integer representation where §7.1.5
 * would give n-bit). Not thread safe while compiling
 * (libxml2 parser state); the result is immutable and shareable.
 */
#ifndef WM_CODEC_EXI_XSD_H
#define WM_CODEC_EXI_XSD_H

#include "codec/exi_grammar.h"

/* Compiles the schema at `path` (a local file). On success *out owns a new
 * grammar (free with wm_exi_grammar_free). Errors: WM_EXI_E_SCHEMA (file
 * unreadable: errno's text; not well-formed XML: libxml2's reason and line;
 * not a valid XML Schema: libxml2's reason, file and line; external entity,
 * remote schemaLocation, bad occurrence/facet value; err->msg names file,
 * line and component; err->bit_pos holds the line when known), WM_EXI_E_LENGTH (compile_mem: above 16 MiB), WM_EXI_E_GRAMMAR
 * (content model too large), WM_EXI_E_MEMORY. */
wm_exi_status wm_exi_xsd_compile(const char *path, wm_exi_grammar **out, wm_exi_error *err);

/* Same from a schema document in memory (no include/import allowed: they
 * would have no base location). For fuzzing and tests. */
wm_exi_status wm_exi_xsd_compile_mem(const char *xsd, size_t len, wm_exi_grammar **out, wm_exi_error *err);

#endif
