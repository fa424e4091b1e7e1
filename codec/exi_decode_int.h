/* Internal: what the general EXI decoder (codec/exi_decode.c) shares with
 * its strict bit-packed loop (codec/exi_decode_strict.c). Not a public
 * header; the event API is codec/exi_decode.h. */
#ifndef WM_CODEC_EXI_DECODE_INT_H
#define WM_CODEC_EXI_DECODE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/exi_decode.h"
#include "codec/exi_stream.h"

typedef struct wm_exi_dctx {
    wm_exi_decoder *d;
    wm_exi_reader r;
    wm_exi_error *err;
    wm_exi_event_fn fn;
    void *user;
    bool stop;
    bool typed_fast;          /* typed_only and no prefixes: values come typed only */
} wm_exi_dctx;

/* Fused event + value kinds of declared productions (wm_exi_decoder.prod_op).
 * AT_STR: the value is a string without a restricted character set (or
 * untyped): string table hit or literal; AT: any other value. */
enum { WM_EXI_OP_TERM = 0, WM_EXI_OP_AT, WM_EXI_OP_AT_FLOAT, WM_EXI_OP_AT_INT, WM_EXI_OP_AT_BOOL, WM_EXI_OP_SE,
       WM_EXI_OP_EE, WM_EXI_OP_AT_STR };

/* Per grammar state, packed for the strict loop: first production, count,
 * event-code width of the declared productions alone (§6.2) and the state
 * flags (WM_EXI_S_START states add the strict xsi:type/xsi:nil codes of
 * §8.5.4.4.2 at run time: they depend on the frame). */
struct wm_exi_strict_state {
    uint32_t first;
    uint16_t n;
    uint8_t w;
    uint8_t flags;
};

/* Per production: its fused kind (prod_op; WM_EXI_OP_TERM for what the
 * strict loop leaves to the general path), next state and what the next
 * event needs of it (first production, count, code width; nstart: a
 * WM_EXI_S_START state, whose width depends on the frame), local name (uri
 * is the name's own, lname_uri) and argument (SE: element declaration). */
struct wm_exi_strict_prod {
    uint8_t op, nw;
    bool nstart;
    uint16_t nn;
    uint32_t nfirst, next, lid, arg;
    wm_exi_event ev;          /* SE and declared attributes: the prepared event (below) */
};

/* Per element declaration, the frame an SE of it opens and its start
 * state's first production, count and code width (with the strict
 * xsi:type/xsi:nil codes of that element, §8.5.4.4.2). */
struct wm_exi_strict_elem {
    uint32_t state, tgram, first;
    uint16_t n;
    uint8_t w;
    bool nillable;
};

/* What the strict loop specialises on, built once per decoder for its
 * grammar. names: per local name of the grammar, its EE event (uri_id,
 * lid, uri, local filled in, everything else zero). prods[].ev: per SE and
 * declared-attribute production the loop decodes, its event prepared the
 * same way (type, qname, value kind): the loop writes only the depth and
 * the value's fields of that kind into it and passes it to the callback, so
 * no event is built or copied per event. Each production's event only ever
 * gets the same fields written, so the others stay as the general path
 * leaves them (zero; no text with limits.typed_only). Mutable per decoder,
 * like the decoder itself. */
struct wm_exi_strict_tables {
    struct wm_exi_strict_state *states;
    struct wm_exi_strict_prod *prods;
    struct wm_exi_strict_elem *elems;
    wm_exi_event *names;
    uint32_t n_states, n_names;
};

/* SE of {uri}lid with element declaration elem (WM_EXI_NONE: undeclared),
 * its prefix when preserved, the new frame and the event (§8.5.4.1). */
wm_exi_status wm_exi_dec_push(wm_exi_dctx *c, uint32_t uri, uint32_t lid, uint32_t elem);

/* AT of {uri}lid after its event code: prefix, value of datatype dt
 * (WM_EXI_NONE: untyped; xsi_nil_typed: xsi:nil as a boolean, *nil_true
 * its value) and the event (§8.5.4.1, §7). */
wm_exi_status wm_exi_dec_attribute(wm_exi_dctx *c, uint32_t uri, uint32_t lid, uint32_t dt, bool xsi_nil_typed,
                                   bool *nil_true);

/* WM_EXI_E_MEMORY at the current position: the arena's cap is reached. */
wm_exi_status wm_exi_dec_mem_fail(wm_exi_dctx *c);

/* One event of the innermost element (depth > 0) through the general path. */
wm_exi_status wm_exi_dec_step(wm_exi_dctx *c);

/* The tables above for g and its prod_op (malloc'ed; NULL on OOM, which
 * disables the loop), and their release (NULL is fine). */
struct wm_exi_strict_tables *wm_exi_decode_strict_tables(const wm_exi_grammar *g, const uint8_t *prod_op);
void wm_exi_decode_strict_tables_free(struct wm_exi_strict_tables *t);

/* Decodes events while depth > 0 and decoding has not stopped, for strict
 * bit-packed streams without prefixes: declared SE and EE, typed attributes,
 * string-table hits and short ASCII literals come straight from a local
 * 64-bit window; everything else (built-in grammars, xsi:*, other values,
 * near the end of the stream, any error) goes through wm_exi_dec_step() from
 * the event's first bit (or wm_exi_dec_attribute() from a declared
 * attribute's value), so both paths yield the same events and errors by
 * construction. */
wm_exi_status wm_exi_decode_strict_run(wm_exi_dctx *c);

#endif
