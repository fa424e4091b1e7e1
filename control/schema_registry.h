/* The schema registry: which XML Schema a content-filtered publication's
 * payload follows, by name, so a SUBSCRIBE's `xpath` user property can be
 * bound to the PUBLISH's Content Type `application/exi; schema=NAME`
 * (issue 6, ARCHITECTURE.md §2 "Filter-enabled EXI dissemination").
 *
 * File format (UTF-8 text, one schema per line):
 *
 *     # comment
 *     NAME  XSD-PATH  [PREFIX=URI ...]
 *     senml ../shared/data/exi/senml/senml.gen.xsd s=urn:ietf:params:xml:ns:senml
 *
 * NAME: 1..64 characters of [A-Za-z0-9._-], unique. XSD-PATH: no spaces;
 * relative paths are taken from the registry file's directory. PREFIX=URI:
 * the namespace bindings the schema's XPath filters use (matcher/xpath_parse.h).
 * At most 1024 schemas, lines up to 4096 bytes. Every schema is compiled at
 * load (codec/exi_xsd.h); a bad line or schema fails the whole load with
 * "file:line: reason" and nothing loaded, so a bad file never replaces a good
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
#include "matcher/xpath_set.h"

#define WM_SCHEMA_REG_MAX 1024u

typedef struct wm_schema_reg_entry {
    char *name;
    char *path;                 /* as resolved (registry directory + relative path) */
    wm_exi_grammar *g;
    wm_xp_ns *ns;               /* bindings (strings owned by the registry) */
    size_t n_ns;
} wm_schema_reg_entry;

typedef struct wm_schema_reg {
    uint32_t n;
    wm_schema_reg_entry *e;
} wm_schema_reg;

/* Loads and compiles the registry in `file`. Returns 0 and *out (free with
 * wm_schema_reg_free), or -1 with "file:line: reason" in err[0..errlen)
 * (unreadable file, bad name, duplicate name, missing path, bad binding,
 * schema that does not compile (with the compiler's reason), too many). */
int wm_schema_reg_load(const char *file, wm_schema_reg **out, char *err, size_t errlen);
void wm_schema_reg_free(wm_schema_reg *r);

/* Schema id of name[0..len), UINT32_MAX if unknown (exact, case-sensitive). */
uint32_t wm_schema_reg_find(const wm_schema_reg *r, const char *name, size_t len);

/* Fills out[0..r->n) for wm_xpf_set_build (pointers into r). */
void wm_schema_reg_schemas(const wm_schema_reg *r, wm_xpf_schema *out);

/* The schema name of an MQTT Content Type naming EXI, media type syntax of
 * RFC 9110 §8.3.1: "application/exi" (case-insensitive) followed by
 * parameters, one of them "schema" (name case-insensitive) with a token or
 * quoted-string value (no escapes). On success *name and *nlen view into ct.
 * False for another media type, no schema parameter, or bad syntax. Pure. */
bool wm_exi_content_type_schema(const char *ct, size_t len, const char **name, size_t *nlen);

#endif
