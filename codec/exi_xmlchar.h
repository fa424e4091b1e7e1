/* XML 1.0 (Fifth Edition) character classes for strings decoded from EXI.
 *
 * An EXI stream carries code points and names as it likes; the infoset it
 * stands for cannot (EXI 1.0 §1: it represents an XML Information Set). The
 * decoder refuses what no XML document can hold, so neither the XML adaptor
 * (codec/exi_xml.h) nor a content filter sees it: characters outside Char
 * (XML 1.0 §2.2 [2]) in any string, and local names or prefixes that are not
 * NCNames (Namespaces in XML 1.0 §3 [4], XML 1.0 §2.3 [4][4a]). Pure inline
 * functions; thread safe.
 */
#ifndef WM_CODEC_EXI_XMLCHAR_H
#define WM_CODEC_EXI_XMLCHAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_utf8.h"

/* Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF] */
static inline bool wm_exi_xml_char(uint64_t cp)
{
    if (cp < 0x20) return cp == 0x9 || cp == 0xa || cp == 0xd;
    return cp < 0xd800 || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* NameStartChar without ':' (the NCName form). */
static inline bool wm_exi_ncname_start(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= 0xc0 && c <= 0xd6) ||
           (c >= 0xd8 && c <= 0xf6) || (c >= 0xf8 && c <= 0x2ff) || (c >= 0x370 && c <= 0x37d) ||
           (c >= 0x37f && c <= 0x1fff) || (c >= 0x200c && c <= 0x200d) || (c >= 0x2070 && c <= 0x218f) ||
           (c >= 0x2c00 && c <= 0x2fef) || (c >= 0x3001 && c <= 0xd7ff) || (c >= 0xf900 && c <= 0xfdcf) ||
           (c >= 0xfdf0 && c <= 0xfffd) || (c >= 0x10000 && c <= 0xeffff);
}

/* NameChar without ':'. */
static inline bool wm_exi_ncname_char(uint32_t c)
{
    return wm_exi_ncname_start(c) || c == '-' || c == '.' || (c >= '0' && c <= '9') || c == 0xb7 ||
           (c >= 0x300 && c <= 0x36f) || (c >= 0x203f && c <= 0x2040);
}

/* True when the UTF-8 text s[0..len) is an NCName (non-empty). */
static inline bool wm_exi_ncname(const char *s, size_t len)
{
    if (!len) return false;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        unsigned k = wm_exi_utf8_get(s + i, len - i, &c);
        if (!k || !(i ? wm_exi_ncname_char(c) : wm_exi_ncname_start(c))) return false;
        i += k;
    }
    return true;
}

#endif
