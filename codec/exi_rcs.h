/* Restricted character sets of pattern facets (W3C EXI 1.0 Second Edition
 * §7.1.10.1, Appendix E): the set of characters an XML Schema regular
 * expression can match, when it is small enough for the n-bit character
 * representation of strings.
 *
 * The set of a regExp is the union over its branches, pieces and atoms
 * (quantifiers do not matter): single characters, escapes (\n \r \t and the
 * escaped metacharacters), character ranges, \s (space, tab, CR, LF) and
 * class subtraction. Category escapes (\p{..}, \P{..}), the other
 * multi-character escapes (\S \i \I \c \C \d \D \w \W), the wildcard '.' and
 * negated groups ([^..]) leave a pattern without a restricted set, as does a
 * set of 256 or more characters or one outside the Basic Multilingual Plane.
 * Pure functions; thread safe. */
#ifndef WM_CODEC_EXI_RCS_H
#define WM_CODEC_EXI_RCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A set of BMP characters under construction: one bit per code point. */
typedef struct wm_exi_rcs_set {
    uint64_t bits[65536 / 64];
} wm_exi_rcs_set;

/* Adds the characters the pattern re[0..len) (UTF-8) can match to *set.
 * False when the pattern has no restricted character set (see above) or is
 * not a well-formed regular expression; *set is then unspecified. */
bool wm_exi_rcs_add_pattern(wm_exi_rcs_set *set, const char *re, size_t len);

/* The set's characters in ascending order into out[0..255); returns their
 * number, or -1 when there are 256 or more (no restricted set, §7.1.10.1). */
int wm_exi_rcs_list(const wm_exi_rcs_set *set, uint32_t out[255]);

#endif
