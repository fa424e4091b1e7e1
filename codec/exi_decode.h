/* EXI body decoder (W3C EXI 1.0 Second Edition §6 event codes, §7 content,
 * §8 grammars): one pass over the bit stream, events to a callback.
 *
 * The decoder is a caller-owned struct holding the per-document state (string
 * table, element stack, built-in grammars learned so far) in a bounded arena:
 * after the first documents it decodes without allocating. It reads the
 * header (codec/exi_header.h), then the body with the grammar it was given:
 * schema-informed strict or non-strict (undeclared productions, §8.5.4.4),
 * built-in grammars for schema-less streams or undeclared elements (§8.4),
 * document or fragment grammar (§8.5.1, §8.5.2).
 *
 * Events carry views (pointer + length) into the string table or a scratch
 * buffer, valid until the callback returns. Typed values also carry their
 * typed form (codec/exi_types.h) so filters need not parse text.
 *
 * Not supported (refused with WM_EXI_E_UNSUPPORTED and the reason):
 * compression, pre-compression, selfContained, datatype representation maps
 * and user-defined meta-data (codec/exi_header.h), Preserve.lexicalValues and
 * Preserve.dtd streams, integers beyond 64 bits (codec/exi_types.h). Bad input
 * never reads out of bounds; see wm_exi_decode().
 */
#ifndef WM_CODEC_EXI_DECODE_H
#define WM_CODEC_EXI_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_arena.h"
#include "codec/exi_grammar.h"
#include "codec/exi_header.h"
#include "codec/exi_strtab.h"
#include "codec/exi_types.h"

typedef enum wm_exi_ev {
    WM_EXI_EV_SD = 0, WM_EXI_EV_ED, WM_EXI_EV_SE, WM_EXI_EV_EE, WM_EXI_EV_AT, WM_EXI_EV_CH,
    WM_EXI_EV_NS, WM_EXI_EV_CM, WM_EXI_EV_PI, WM_EXI_EV_DT, WM_EXI_EV_ER,
} wm_exi_ev;

typedef struct wm_exi_event {
    uint8_t type;             /* wm_exi_ev */
    bool xsi;                 /* AT: xsi:type or xsi:nil (value text is the lexical QName/boolean) */
    uint32_t uri_id, lid;     /* SE/AT/EE qname as string-table ids (EE: the closing element) */
    wm_exi_sview uri, local;  /* SE/AT/EE qname text */
    wm_exi_value value;       /* AT/CH: lexical text + typed value */
    uint32_t depth;           /* element depth: 1 for the root element */
    /* Preserve.prefixes (§7.1.7, §4): pfx says the stream carries prefixes.
     * SE/AT: prefix is the qname's prefix from the URI's prefix partition
     * (has_prefix false when the partition was empty: an SE's prefix then
     * comes from an NS event with local_ns; a later one with local_ns
     * overrides an SE's candidate, §7.1.7 rule 2). AT xsi:type: vprefix is
     * the value's QName prefix, alike. NS: uri/uri_id the namespace, prefix
     * the declared prefix ("" for the default namespace), local_ns the
     * local-element-ns flag. Views into the string table: valid for the
     * document. */
    bool pfx, has_prefix, has_vprefix, local_ns;
    wm_exi_sview prefix, vprefix;
} wm_exi_event;

/* Return 0 to continue, non-zero to stop decoding early (wm_exi_decode then
 * returns WM_EXI_OK with *stopped set and decoder.stop_bit_pos after that event). */
typedef int (*wm_exi_event_fn)(void *user, const wm_exi_event *ev);

typedef struct wm_exi_limits {
    size_t mem_cap;           /* bytes for all per-document state (default 4 MiB) */
    uint32_t max_depth;       /* element nesting (default 256) */
    uint32_t max_value_bytes; /* one non-string value's text (default 64 KiB) */
    bool typed_only;          /* decoder: booleans, integers, floats and enumerations come
                                 typed only (value.text NULL): no lexical text is built */
    bool whole_buffer;        /* decoder: the buffer must hold exactly one stream. EXI 1.0 §5:
                                 a stream is a header and a body, and the body ends with its
                                 EndDocument event (§6); in a bit-packed stream only the padding
                                 of ED's last byte (any bits) may follow. Bytes after that are
                                 WM_EXI_E_TRAILING (bit_pos: the first one). Off: they are
                                 ignored, as a reader of a longer buffer wants. */
} wm_exi_limits;

/* The limits in force for `lim`: each zero field (or a NULL `lim`) takes its
 * default above. Shared by the decoder and the encoder so both sides of a
 * round trip are bounded alike. Pure; thread safe. */
wm_exi_limits wm_exi_limits_resolve(const wm_exi_limits *lim);

typedef struct wm_exi_frame wm_exi_frame;  /* internal */
struct wm_exi_dctx;                        /* internal: a decoding in progress */
typedef struct wm_exi_bi wm_exi_bi;        /* internal: learned built-in grammar */

typedef struct wm_exi_decoder {
    const wm_exi_grammar *g;
    wm_exi_limits lim;
    wm_exi_arena arena;
    wm_exi_strtab st;
    wm_exi_options opts;      /* effective options of the current document */
    wm_exi_header header;
    wm_exi_frame *stack;
    uint32_t depth;
    wm_exi_bi *bis;
    uint32_t n_bis, cap_bis;
    char *scratch;            /* max_value_bytes, from the arena */
    uint8_t *prod_op;         /* internal: per production of g, its event and value kind
                                 fused, so one dispatch serves both (malloc'ed at init) */
    struct wm_exi_strict_tables *strict; /* internal: per state, production and local name
                                 of g, what the strict bit-packed loop needs
                                 (codec/exi_decode_strict.c; malloc'ed at init) */
    bool general_only;        /* set by tests to force the general path: the strict loop
                                 must decode exactly the same events */
    /* Internal: the instance of the strict bit-packed loop (the template
     * codec/exi_decode_strict_loop.h) that decodes the streams it serves.
     * wm_exi_decoder_init sets the event callback's; a consumer with an
     * instance of its own, whose handlers replace the callback for the
     * events that loop decodes, sets it after init (matcher/xpath_eval.c).
     * Whatever the instance, every other event reaches the callback. */
    wm_exi_status (*strict_loop)(struct wm_exi_dctx *c);
    uint64_t stop_bit_pos;    /* after a decode the callback stopped: the bit just after
                                 the event it stopped at (for reports such as the XML
                                 sink's refusals, codec/exi_xml.h) */
    struct {                  /* internal: the last header read without out-of-band options
                                 (its bits, what it yielded): a stream starting with the same
                                 bits is not parsed again (a feed's headers repeat) */
        uint64_t bits;        /* 0: none */
        uint8_t raw[32];
        bool byte_aligned;
        wm_exi_header header;
        wm_exi_options opts;
    } hdr_memo;
} wm_exi_decoder;

/* Prepares d for grammar g (not copied: must outlive d). lim may be NULL
 * for defaults. Allocates tables of g's size for the fast paths (~120 bytes
 * per production, 8 per state, 96 per local name; a failed allocation only
 * disables a fast path); the per-document state comes later. */
void wm_exi_decoder_init(wm_exi_decoder *d, const wm_exi_grammar *g, const wm_exi_limits *lim);
void wm_exi_decoder_free(wm_exi_decoder *d);

/* The smallest mem_cap (bytes) with which a decoder for g and lim (its
 * mem_cap ignored) can set up the per-document state every stream needs
 * before its body: the string table seeded from the grammar (EXI 1.0
 * §7.3.1), the value scratch of max_value_bytes and the element stack of
 * max_depth frames, with the stream's options opts (NULL: the defaults;
 * the string table depends on valueMaxLength / valuePartitionCapacity).
 * Below it no document decodes; at it, one whose body adds nothing to the
 * arena does. 0 if even 1 TiB does not fit (out of memory). Allocates and
 * frees a decoder about 20 times: for tools checking an option, not per
 * document. Thread safe (g is only read). */
size_t wm_exi_decoder_min_mem_cap(const wm_exi_grammar *g, const wm_exi_limits *lim, const wm_exi_options *opts);

/* Decodes one EXI stream buf[0..len): header, then body. `oob` gives the
 * options used when the header has none (NULL: defaults) and, with
 * oob_override, replaces options read from the header (never set in normal
 * use). Events go to fn(user, ev); stopping early is allowed.
 * Errors (err->msg has the reason, err->bit_pos the position):
 *   WM_EXI_E_HEADER / _OPTIONS / _UNSUPPORTED from the header;
 *   WM_EXI_E_TRUNCATED      the stream ends inside an event;
 *   WM_EXI_E_EVENT_CODE     an event code no production has;
 *   WM_EXI_E_STRING_INDEX   a compact identifier beyond its partition, or a local value
 *                           id left unassigned when valuePartitionCapacity replaced its
 *                           value (§7.3.3);
 *   WM_EXI_E_VALUE          an out-of-range content value, a character outside XML 1.0
 *                           Char in any string, or a local name / prefix string-table
 *                           miss that is not an NCName (codec/exi_xmlchar.h); the
 *                           position is the string's (names) or the character's;
 *   WM_EXI_E_LENGTH         a string/binary length beyond the stream or limits;
 *   WM_EXI_E_MEMORY         the memory cap was reached;
 *   WM_EXI_E_DEPTH          nesting beyond max_depth;
 *   WM_EXI_E_TRAILING       with lim.whole_buffer, bytes after the end of the body.
 * Thread safety: one decoder per thread; grammars are shared read-only. */
wm_exi_status wm_exi_decode(wm_exi_decoder *d, const uint8_t *buf, size_t len, const wm_exi_options *oob,
                            wm_exi_event_fn fn, void *user, bool *stopped, wm_exi_error *err);

#endif
