/* The Content Type of a content-filtered publication: an MQTT 5 Content
 * Type property (§3.3.2.3.9, a UTF-8 string) holding a media type that
 * names the payload's EXI schema, e.g. "application/exi; schema=senml;
 * strict=true" (issue 6, README "Out-of-band EXI options").
 *
 * Syntax: RFC 9110 §8.3.1 and §5.6.6, exactly:
 *
 *     media-type = type "/" subtype parameters      type, subtype = token
 *     parameters = *( OWS ";" OWS [ parameter ] )   empty parameters allowed
 *     parameter  = parameter-name "=" parameter-value   (no whitespace around "=")
 *     parameter-value = token / quoted-string       (equivalent, §5.6.6)
 *     quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
 *     quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )   (undone, §5.6.4)
 *
 * with leading and trailing SP/HTAB of the whole text ignored, as an HTTP
 * field parser strips them (§5.5). type, subtype and parameter names are
 * case-insensitive. A media type other than application/exi is NOT_EXI and
 * its parameters are not looked at; application/exi is followed by
 * parameters: "schema" (required, the registry name, 1..64 bytes once
 * quoted-pairs are undone) and the out-of-band options of control/exi_oob.h
 * ("strict=true", "value-max-length=64", ...). A parameter given twice
 * (names compared case-insensitively, so schema=a; SCHEMA=a too) is refused:
 * RFC 6838 §4.3 "It is an error for a specific parameter to be specified more
 * than once", and which schema was meant cannot be guessed. Any other
 * parameter is refused too: an option this parser does not know could change
 * how the payload decodes, and a guess would be a silent wrong answer.
 *
 * Thread safe, bounded by the given length, no allocation;
 * wm_exi_content_type_parse is pure.
 */
#ifndef WM_CONTROL_EXI_CONTENT_TYPE_H
#define WM_CONTROL_EXI_CONTENT_TYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "control/exi_oob.h"

/* The longest schema name (= the registry's, control/schema_registry.h). */
#define WM_EXI_CT_NAME_MAX 64u

/* What a Content Type says about EXI (wm_exi_content_type_parse). */
typedef enum wm_exi_ct_status {
    WM_EXI_CT_OK = 0,  /* application/exi with a schema and valid parameters */
    WM_EXI_CT_NOT_EXI, /* another media type, text that is no media type, or application/exi naming no schema */
    WM_EXI_CT_BAD,     /* application/exi with bad syntax, an unknown, repeated or bad parameter */
} wm_exi_ct_status;

/* A parsed EXI Content Type. */
typedef struct wm_exi_ct {
    char schema[WM_EXI_CT_NAME_MAX + 1]; /* the schema name, quoted-pairs undone, NUL-terminated */
    size_t schema_len;                   /* 1..WM_EXI_CT_NAME_MAX */
    wm_exi_oob ov;                       /* the option parameters */
} wm_exi_ct;

/* Parses the Content Type ct[0..len) (not NUL-terminated; may hold any
 * bytes). On OK: *out filled. NOT_EXI and BAD: the reason in why[0..whylen)
 * (NUL-terminated; whylen 0 writes nothing), for BAD always and for a text
 * that is no media type with the 1-based byte position in ct first:
 * "position 31: parameter 'charset' is not an EXI option (schema, strict,
 * ...)", "position 17: '/' expected after the type"; *out undefined. */
wm_exi_ct_status wm_exi_content_type_parse(const char *ct, size_t len, wm_exi_ct *out, char *why, size_t whylen);

/* True iff wm_exi_content_type_parse says OK. *name and *nlen: the schema
 * name, in a per-thread buffer valid until this thread's next call (the name
 * may hold quoted-pairs in ct, so it cannot always view ct). */
bool wm_exi_content_type_schema(const char *ct, size_t len, const char **name, size_t *nlen);

#endif
