/* The schema registry: which XML Schema a content-filtered publication's
 * payload follows, by name, so a SUBSCRIBE's `xpath` user property can be
 * bound to the PUBLISH's Content Type `application/exi; schema=NAME`
 * (issue 6, ARCHITECTURE.md §2 "Filter-enabled EXI dissemination").
 *
 * File format (UTF-8 text, one schema per line):
 *
 *     # comment
 *     NAME  XSD-PATH  [OPTION ...] [PREFIX=URI ...]
 *     senml ../shared/data/exi/senml/senml.gen.xsd s=urn:ietf:params:xml:ns:senml
 *     senml-plain ../shared/data/exi/senml/senml.gen.xsd strict s=urn:ietf:params:xml:ns:senml
 *
 * NAME: 1..64 characters of [A-Za-z0-9._-] (WM_EXI_CT_NAME_MAX), unique. XSD-PATH: no spaces;
 * relative paths are taken from the registry file's directory. OPTION: the
 * out-of-band EXI options of the schema's payloads that carry no options
 * header (control/exi_oob.h: strict, byte-aligned, fragment,
 * value-max-length=N, value-partition-capacity=N; EXI defaults for the rest).
 * PREFIX=URI: the namespace bindings the schema's XPath filters use
 * (matcher/xpath_parse.h); the option names are therefore not usable as
 * prefixes; a prefix bound twice on a line to different URIs is refused
 * (wm_xp_ns_conflict). Options and bindings may be mixed in any order.
 * At most 1024 schemas, lines up to 4096 bytes. Every schema is compiled at
 * load (codec/exi_xsd.h); a bad line or schema fails the whole load with
 * "file:line: reason" ("file:line: column C: reason" for a bad option or
 * binding) and nothing loaded, so a bad file never replaces a good
 * registry. Schema ids are the line order of the entries (0-based), the ids
 * matcher/xpath_set.h takes. Not thread safe while loading; a loaded
 * registry is immutable.
 */
#ifndef WM_CONTROL_SCHEMA_REGISTRY_H
#define WM_CONTROL_SCHEMA_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_grammar.h"
#include "control/exi_content_type.h"
#include "control/exi_oob.h"
#include "control/load_error.h"
#include "matcher/xpath_set.h"

#define WM_SCHEMA_REG_MAX 1024u

typedef struct wm_schema_reg_entry {
    char *name;
    char *path;                 /* as resolved (registry directory + relative path) */
    wm_exi_grammar *g;
    wm_xp_ns *ns;               /* bindings (strings owned by the registry) */
    size_t n_ns;
    wm_exi_options oob;         /* EXI defaults + the line's options: for payloads without an options header */
} wm_schema_reg_entry;

typedef struct wm_schema_reg {
    uint32_t n;
    wm_schema_reg_entry *e;
} wm_schema_reg;

/* Loads and compiles the registry in `file`. Returns 0 and *out (free with
 * wm_schema_reg_free), or -1 with *err filled (NULL: not reported; printed
 * by wm_load_error_format as "file:line: reason"): the file, the line (0
 * for the whole file: unreadable, read error), the column for a bad or
 * unknown option, a bad binding or a prefix bound twice, and the reason
 * (bad name, duplicate name, missing path, schema that does not compile
 * (with the compiler's reason), too many, out of memory). */
int wm_schema_reg_load(const char *file, wm_schema_reg **out, wm_load_error *err);
void wm_schema_reg_free(wm_schema_reg *r);

/* Schema id of name[0..len), UINT32_MAX if unknown (exact, case-sensitive). */
uint32_t wm_schema_reg_find(const wm_schema_reg *r, const char *name, size_t len);

/* Fills out[0..r->n) for wm_xpf_set_build (pointers into r). */
void wm_schema_reg_schemas(const wm_schema_reg *r, wm_xpf_schema *out);

/* Binds a publication's Content Type ct[0..len) to a schema of r: its id and
 * the out-of-band options to decode its payload with (the entry's options,
 * then the Content Type's option parameters; a payload with an options
 * header still uses its header). ct_ov (may be NULL): on OK, the options the
 * Content Type itself gave (for wm_exi_oob_header_conflict: the publisher's
 * word, which an options header overrides). The one path the tool, the data
 * plane and the proxy take (control/content_filters.h). Returns
 * WM_EXI_CT_OK with *id and *oob; WM_EXI_CT_NOT_EXI / WM_EXI_CT_BAD as wm_exi_content_type_parse
 * (reason in why); or WM_EXI_CT_OK with *id = UINT32_MAX when the name is
 * not in r (reason in why). No allocation; thread safe on a loaded registry. */
wm_exi_ct_status wm_schema_reg_bind(const wm_schema_reg *r, const char *ct, size_t len, uint32_t *id,
                                    wm_exi_options *oob, wm_exi_oob *ct_ov, char *why, size_t whylen);

#endif
