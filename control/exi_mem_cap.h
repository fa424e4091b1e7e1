/* The per-document memory cap of EXI decoding (wm_exi_limits.mem_cap,
 * codec/exi_decode.h) as an operator's option, `--mem-cap BYTES`: one
 * parser and one range for every tool that decodes EXI — `wmctl exi
 * decode|encode|filter`, the data plane (`wirematch`) and the proxy
 * (`wirematch-proxy`) — so that a value one accepts, all accept.
 *
 * BYTES is a decimal count of bytes, WM_EXI_MEM_CAP_MIN (64 KiB) to
 * WM_EXI_MEM_CAP_MAX (64 GiB); no sign, no suffix. Not given, the codec's
 * default applies (4 MiB per document). The cap bounds the whole state of
 * one document (string table, value scratch, element stack, learned
 * grammars); a document that needs more is refused at the cap, with the bit
 * position (WM_EXI_E_MEMORY), and counted as a decode error by filters.
 */
#ifndef WM_CONTROL_EXI_MEM_CAP_H
#define WM_CONTROL_EXI_MEM_CAP_H

#include <stddef.h>

#define WM_EXI_MEM_CAP_MIN (64ull << 10)
#define WM_EXI_MEM_CAP_MAX (64ull << 30)

/* What a tool adds to a refusal at the cap (WM_EXI_E_MEMORY). */
#define WM_EXI_MEM_CAP_HINT "; --mem-cap BYTES raises the per-document memory cap"

/* Parses s (NUL-terminated) as BYTES above into *out. Returns 0, or -1 with
 * "--mem-cap takes bytes from MIN to MAX, not 's'" in why[0..cap) (*out
 * untouched). Pure; thread safe. */
int wm_exi_mem_cap_parse(const char *s, size_t *out, char *why, size_t cap);

#endif
