/* EXI test helpers: decode a stream to XML while remembering the datatype
 * each value was decoded with, and compare that XML with reference XML as
 * an infoset (expanded names, attribute values, text).
 *
 * Values compare by the representation the stream used (wm_exi_dt_kind of
 * the event, i.e. the declared type when the value is typed):
 *   hexBinary      case-insensitive hex digits;   base64Binary: the bytes' text
 *                  without whitespace;
 *   boolean        by value ("1" = "true");
 *   decimal, float by numeric value (INF/-INF/NaN exactly);
 *   integer, unsigned, n-bit: by integer value ("+5" = "5" = "05");
 *   date-time      whitespace-collapsed text, trailing fractional-second zeros
 *                  and "+00:00"/"-00:00" vs "Z" ignored (§7.1.8 keeps neither);
 *   enumeration    whitespace-collapsed text;
 *   list           whitespace-collapsed items, each exact or, when both items
 *                  are numbers, by numeric value (the item type is not in the event);
 *   string, restricted-character string, untyped: the exact text.
 * Not thread safe (libxml2 parsing per call is fine; the helpers keep no state). */
#ifndef WM_TESTS_LIB_EXI_INFOSET_H
#define WM_TESTS_LIB_EXI_INFOSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_decode.h"
#include "codec/exi_xml.h"

/* One typed value seen by the decoder: element number (pre-order, 0-based),
 * attribute name (empty for character content), representation kind. */
typedef struct wm_test_exi_vkind {
    uint32_t elem;
    bool attr;
    char *uri, *local;        /* malloc'ed copies (NULL for character content) */
    uint8_t kind;
} wm_test_exi_vkind;

typedef struct wm_test_exi_doc {
    wm_exi_xml_sink sink;     /* sink.buf: the decoded XML */
    wm_test_exi_vkind *kinds;
    size_t n_kinds, cap_kinds;
    uint32_t n_elems;
} wm_test_exi_doc;

/* Decodes buf[0..len) with grammar g (oob: options when the stream has no
 * header, NULL for defaults) into *doc (free with wm_test_exi_doc_free, also
 * after an error). *used, if not NULL, gets the options in force. Returns the
 * decoder's status; *err has its reason. */
wm_exi_status wm_test_exi_decode_doc(const wm_exi_grammar *g, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                                     wm_test_exi_doc *doc, wm_exi_error *err, wm_exi_options *used);
void wm_test_exi_doc_free(wm_test_exi_doc *doc);

/* Whether two lexical values are the same value of representation `kind`
 * (wm_exi_dt_kind), by the rules above. Pure. */
bool wm_test_exi_same_value(uint8_t kind, const char *a, const char *b);

/* Compares the decoded document (or fragment: several top-level elements)
 * with the reference XML text `want`. The decoded XML must be
 * namespace-well-formed (Namespaces in XML 1.0, as libxml2 checks it);
 * xsi:type values compare as expanded names (each QName's prefix resolved in
 * its own document). True when equal; otherwise false with the first
 * difference written to why[0..why_len) (NUL-terminated). */
bool wm_test_exi_same_infoset(const wm_test_exi_doc *got, const char *want, char *why, size_t why_len);

#endif
