/* EXI events <-> XML text, for tools and tests (`wmctl exi decode`; the
 * decode-to-XML benchmark measures the sink against exificient.js).
 *
 * wm_exi_xml_sink turns a decoder's events (codec/exi_decode.h) into XML
 * text: element and attribute namespaces get generated prefixes ("ns<id>",
 * "xsi") declared where first needed; a Preserve.prefixes stream (events
 * with pfx) is written with its own prefixes instead: its NS events become
 * the start tag's declarations (xmlns:p="u", xmlns="u"), each SE/AT/xsi:type
 * QName takes the prefix the stream gives it (§7.1.7: the partition's entry,
 * or the NS event with local-element-ns for an SE), and only a name whose
 * prefix the stream leaves unbound in scope gets a generated one, "ns<id>"
 * (with '_' appended until no prefix in scope has that name). Text and namespace names are
 * escaped, xsi:type values are written as prefix:local (a prefix "xsd" or
 * "t" declared on the tag for the type's namespace). The XML namespace is
 * always written with its reserved prefix "xml" and never declared, and no
 * other prefix is ever bound to it (Namespaces in XML 1.0 §3). The text is appended
 * to a growable buffer the sink owns (malloc); the infoset — expanded names,
 * attribute values, text — is what EXI preserves with default fidelity
 * options (§6.3). The output is namespace-well-formed XML 1.0: the decoder
 * already refuses characters outside XML 1.0 Char and names that are not
 * NCNames (codec/exi_xmlchar.h); what only the sink can see — an attribute
 * name twice in one start tag, an attribute named xmlns in no namespace, a
 * name or xsi:type value in the xmlns namespace
 * (http://www.w3.org/2000/xmlns/, which no QName may name), a namespace name
 * that is not a URI reference — stops the
 * decoder (the event callback returns 1) with `bad` set and the reason in
 * `why`; wm_exi_decoder.stop_bit_pos then says where.
 *
 * wm_exi_encode_xml() reads XML with libxml2's xmlReader and feeds the
 * encoder (codec/exi_encode.h): attributes in the EXI order (§6: xsi:type,
 * xsi:nil, then the rest; the grammar sorts declared ones), an xsi:type
 * value's prefix resolved in its element's scope (WM_EXI_E_INPUT with the
 * line when it is not declared), namespace
 * declarations dropped unless the encoder preserves prefixes (then they are
 * NS events right after SE, local-element-ns set for the element's own, and
 * each element, attribute and xsi:type value carries its prefix, §7.1.7),
 * whitespace-only text
 * dropped where the grammar has no character production at the first level.
 */
#ifndef WM_CODEC_EXI_XML_H
#define WM_CODEC_EXI_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"

typedef struct wm_exi_xml_sink {
    char *buf;                /* NUL-terminated output (owned; free with wm_exi_xml_sink_free) */
    size_t len, cap;
    bool oom;                 /* an allocation failed: output incomplete */
    bool open;                /* a start tag is waiting for '>' */
    uint32_t *bound;          /* per URI id: depth where its prefix was declared (0 = none) */
    uint32_t n_bound;
    uint32_t bound_max;       /* internal: no entry of bound is deeper */
    uint32_t depth;
    bool bad;                 /* an event XML 1.0 cannot carry: output incomplete, see why */
    char why[160];
    struct wm_exi_xml_seen *seen; /* internal: attribute names of the open start tag */
    uint32_t n_seen, cap_seen, gen;
    char *ok_uri;             /* internal: the last namespace name found a URI reference */
    uint32_t ok_len;
    struct wm_exi_xml_pfx *px; /* internal: the stream's prefixes and their scopes (Preserve.prefixes) */
} wm_exi_xml_sink;

/* An empty sink (no allocation until the first event). */
void wm_exi_xml_sink_init(wm_exi_xml_sink *s);
/* Frees the sink's buffers (s->buf included: copy the XML out first) and
 * leaves it empty, ready for wm_exi_xml_sink_init or another free. */
void wm_exi_xml_sink_free(wm_exi_xml_sink *s);
/* The wm_exi_event_fn to pass to wm_exi_decode with user = the sink. */
int wm_exi_xml_sink_event(void *user, const wm_exi_event *ev);

/* Encodes the XML document xml[0..len) with encoder e (already initialised
 * with its grammar and options), writing the EXI stream to out[0..cap) and
 * its length to *out_len. Errors: WM_EXI_E_INPUT (XML not well-formed or
 * not namespace-well-formed: message has the line and libxml2's reason; an
 * xsi:type prefix not declared, with the line; nesting deeper than libxml2's
 * depth limit, 256 levels, says so; a DOCTYPE declaring an entity (general
 * or parameter), with the entity's name, or naming an external subset, with
 * its system or public identifier: only the predefined entities and
 * character references are read, so no external entity or DTD is ever
 * loaded and no declared entity expanded), the encoder's errors (WM_EXI_E_GRAMMAR when the
 * document does not fit the grammar in strict mode, WM_EXI_E_LENGTH when out
 * is full). */
wm_exi_status wm_exi_encode_xml(wm_exi_encoder *e, const char *xml, size_t len, uint8_t *out, size_t cap,
                                size_t *out_len, wm_exi_error *err);

#endif
