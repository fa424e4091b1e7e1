/* Export of a compiled EXI grammar (codec/exi_grammar.h) as the JSON grammar
 * file of exificient.js (npm "exificient.js" 0.0.5, EXIDecoder/EXIEncoder),
 * so that independent implementation can read and write the same
 * schema-informed streams we do.
 *
 * exificient.js expects grammars produced by the Java exificient-grammars
 * tool (class Grammars2JSON); that tool is not available offline, so this
 * writes the same structure from our compiled grammar, in the field names
 * the exificient.js 0.0.5 dist reads:
 *
 *   { "qnames": { "namespaceContext": [ { "uriID", "uri",
 *         "qnameContext": [ { "uriID", "localNameID", "localName",
 *                             "globalElementGrammarID"? } ] } ] },
 *     "simpleDatatypes": [ { "simpleDatatypeID", "type": "STRING" | "FLOAT" |
 *         "INTEGER" | "UNSIGNED_INTEGER" | "BOOLEAN" | "DATETIME" | "LIST" |
 *         "DECIMAL" | "BINARY_BASE64" | "BINARY_HEX" | "NBIT_UNSIGNED_INTEGER" |
 *         "ENUMERATION" | "QNAME", "datetimeType"?, "listType"?,
 *         "lowerBound"?, "upperBound"? } ],
 *     "grs": { "documentGrammarID": 0, "fragmentGrammarID": 3, "grammar": [
 *         { "grammarID", "type": "document" | "docContent" | "docEnd" |
 *           "fragment" | "fragmentContent" | "firstStartTagContent" |
 *           "startTagContent" | "elementContent",
 *           "isTypeCastable"?, "isNillable"?,
 *           "production": [ { "event": "startDocument" | "endDocument" |
 *               "startElement" | "startElementNS" | "startElementGeneric" |
 *               "endElement" | "characters" | "attribute" | "attributeNS" |
 *               "attributeGeneric",
 *               "nextGrammarID",            (-1 after EE/ED)
 *               "startElementNamespaceID"?, "startElementLocalNameID"?,
 *               "startElementGrammarID"?, "attributeNamespaceID"?,
 *               "attributeLocalNameID"?, "attributeDatatypeID"?,
 *               "charactersDatatypeID"? } ] } ] } }
 *
 * Grammar ids: 0 Document, 1 DocContent, 2 DocEnd, 3 Fragment,
 * 4 FragmentContent, then 5 + our state index for every state. Productions
 * keep our event-code order (§8.5.4.2.2), local-name ids are compact ids
 * within their URI partition (§7.3.2). exificient.js derives the strict-mode
 * xsi:type/xsi:nil codes from isTypeCastable/isNillable on the first state
 * of an element (§8.5.4.4.2), so a type shared by nillable and non-nillable
 * elements cannot be written and is refused.
 */
#ifndef WM_CONTROL_EXI_EXIFICIENT_H
#define WM_CONTROL_EXI_EXIFICIENT_H

#include "codec/exi_error.h"
#include "codec/exi_grammar.h"

/* Writes g as exificient.js grammar JSON into *out (malloc'ed, NUL-terminated,
 * caller frees). Returns WM_EXI_OK; WM_EXI_E_UNSUPPORTED for a schema-less
 * grammar or a type both nillable and not (err->msg says which);
 * WM_EXI_E_MEMORY. Pure; thread safe for distinct outputs. */
wm_exi_status wm_exi_exificient_json(const wm_exi_grammar *g, char **out, wm_exi_error *err);

#endif
