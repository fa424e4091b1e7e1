/* EXI encoder (W3C EXI 1.0 Second Edition §6, §7, §8): events in, EXI out.
 *
 * Mirror of the decoder (codec/exi_decode.h) over the same grammars and the
 * same run-time rules (codec/exi_rt.h), so a stream it writes decodes back to
 * the same events. For each event it picks the first-level production when
 * the grammar has one (declared element/attribute, typed value valid for the
 * datatype), otherwise, in non-strict mode, the undeclared production
 * (§8.5.4.4.1: SE(*), AT(*), AT(*) [untyped value], CH [untyped value], EE)
 * or the built-in grammar (§8.4). In strict mode an event the schema does
 * not allow is an error (WM_EXI_E_GRAMMAR) naming the event.
 *
 * Values use the string table like the decoder: local hit, then global hit,
 * then literal (§7.3.3). Output goes to a caller buffer (WM_EXI_E_LENGTH when
 * full). Per-document state lives in a bounded arena (mem_cap). One encoder
 * per thread; the grammar is shared read-only.
 */
#ifndef WM_CODEC_EXI_ENCODE_H
#define WM_CODEC_EXI_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_arena.h"
#include "codec/exi_decode.h"
#include "codec/exi_grammar.h"
#include "codec/exi_header.h"
#include "codec/exi_stream.h"
#include "codec/exi_strtab.h"

typedef struct wm_exi_encoder {
    const wm_exi_grammar *g;
    wm_exi_limits lim;
    wm_exi_arena arena;
    wm_exi_strtab st;
    wm_exi_options opts;
    bool cookie, header_options;
    wm_exi_writer w;
    wm_exi_error *err;
    wm_exi_frame *stack;
    uint32_t depth;
    wm_exi_bi *bis;
    uint32_t n_bis, cap_bis;
    int doc_state;            /* 0 DocContent/FragmentContent, 1 DocEnd */
    const char *pfx, *vpfx;   /* Preserve.prefixes: the next SE/AT's prefixes (wm_exi_encode_prefixes) */
    size_t pfx_len, vpfx_len;
} wm_exi_encoder;

/* opts: the options to encode with (copied). header_options: write them in
 * the header (§5.4) instead of leaving them out of band. */
void wm_exi_encoder_init(wm_exi_encoder *e, const wm_exi_grammar *g, const wm_exi_options *opts, bool cookie,
                         bool header_options, const wm_exi_limits *lim);
void wm_exi_encoder_free(wm_exi_encoder *e);

/* Starts a stream in out[0..cap): header, SD. */
wm_exi_status wm_exi_encode_start(wm_exi_encoder *e, uint8_t *out, size_t cap, wm_exi_error *err);
/* SE: namespace URI (may be empty) and local name, UTF-8 (ptr, len). */
wm_exi_status wm_exi_encode_se(wm_exi_encoder *e, const char *uri, size_t ulen, const char *local, size_t llen);
/* AT: attributes of the current element, in EXI order (xsi:type, xsi:nil,
 * then any order: the encoder needs declared ones sorted as the grammar
 * expects, lexically by local name then URI). An xsi:type value is given as
 * "{uri}local" (or "local" for no namespace). */
wm_exi_status wm_exi_encode_at(wm_exi_encoder *e, const char *uri, size_t ulen, const char *local, size_t llen,
                               const char *val, size_t vlen);
/* CH: character data; whitespace-only text where the grammar has no first-level
 * CH production is dropped (it is not significant there). */
wm_exi_status wm_exi_encode_ch(wm_exi_encoder *e, const char *text, size_t len);
wm_exi_status wm_exi_encode_ee(wm_exi_encoder *e);
/* Preserve.prefixes (§7.1.7): the prefix of the next SE's or AT's qname
 * (qp[0..ql), "" for none; NULL: not known) and, for an xsi:type AT, of its
 * value's QName (vp, alike). The event writes each as its index in the
 * URI's prefix partition; a prefix not there yet (an SE's, declared by an NS
 * event of its own that follows, with local_element_ns) is written as 0
 * (§7.1.7 allows any). Used up by that event; ignored without
 * Preserve.prefixes. The strings must live until then. */
void wm_exi_encode_prefixes(wm_exi_encoder *e, const char *qp, size_t ql, const char *vp, size_t vl);
/* CM (Preserve.comments) with text[0..len), or PI (Preserve.pis) with
 * target[0..tl) and data[0..dl): anywhere an element's content or the
 * document's may have one (§8.4.1-3, §8.5.4.4.1: the grammar's state stays;
 * a built-in grammar's start tag ends). Written as Strings (§7.1.10), not
 * through the string table. Errors: WM_EXI_E_GRAMMAR when the option is off
 * (or strict: no undeclared productions), WM_EXI_E_INPUT (not UTF-8). */
wm_exi_status wm_exi_encode_cm(wm_exi_encoder *e, const char *text, size_t len);
wm_exi_status wm_exi_encode_pi(wm_exi_encoder *e, const char *target, size_t tl, const char *data, size_t dl);
/* NS (§4; Preserve.prefixes only): declares prefix p[0..pl) ("" the default
 * namespace) for namespace uri[0..ul) on the element just started, before
 * its attributes; local_element_ns: the element's own prefix is this one.
 * Adds the URI and the prefix to the string table as the decoder does.
 * Errors: WM_EXI_E_GRAMMAR when the grammar offers no NS here (not in a
 * start tag, strict, prefixes not preserved), WM_EXI_E_MEMORY. */
wm_exi_status wm_exi_encode_ns(wm_exi_encoder *e, const char *uri, size_t ul, const char *p, size_t pl,
                               bool local_element_ns);
/* ED; *out_len receives the stream length in bytes (last byte zero-padded). */
wm_exi_status wm_exi_encode_end(wm_exi_encoder *e, size_t *out_len);

#endif
