/* EXI built-in datatype representations (W3C EXI 1.0 Second Edition §7.1,
 * §7.2 enumerations) between the bit stream and lexical (XML) text.
 *
 * A wm_exi_datatype describes how one schema simple type is represented:
 * the §7.1 representation chosen by the Table 7-1 mapping (done by the schema
 * compiler), plus its facets that change the bits (integer bounds §7.1.5,
 * enumeration values §7.2, restricted character set §7.1.10.1, boolean
 * pattern §7.1.2, list item type §7.1.11). Strings that are not restricted are
 * handled by the string table (codec/exi_strtab.h); everything else is here.
 *
 * Decoding yields a wm_exi_value: the lexical text (written into a caller
 * scratch buffer) and, for numbers, the typed value so filters can compare
 * without parsing text. Encoding parses lexical text (XML Schema lexical
 * spaces, whitespace collapsed) and writes the representation.
 *
 * Limits: integers and the integral/fractional parts of decimals are kept in
 * 64 bits (WM_EXI_E_UNSUPPORTED beyond); float mantissas are 64-bit signed and
 * exponents 14-bit as §7.1.4 requires (longer decimal mantissas are rounded to
 * 64 bits when encoding). Pure functions; thread safe.
 */
#ifndef WM_CODEC_EXI_TYPES_H
#define WM_CODEC_EXI_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_stream.h"

typedef enum wm_exi_dt_kind {
    WM_EXI_DT_STRING = 0,   /* §7.1.10 through the string table (also untyped values) */
    WM_EXI_DT_BASE64,       /* §7.1.1 binary, lexical base64Binary */
    WM_EXI_DT_HEX,          /* §7.1.1 binary, lexical hexBinary */
    WM_EXI_DT_BOOLEAN,      /* §7.1.2 (pattern_bool: 2-bit representation) */
    WM_EXI_DT_DECIMAL,      /* §7.1.3 */
    WM_EXI_DT_FLOAT,        /* §7.1.4 float and double */
    WM_EXI_DT_INTEGER,      /* §7.1.5 unbounded or one-sided: sign + magnitude */
    WM_EXI_DT_UNSIGNED,     /* §7.1.6: integer with minInclusive >= 0 */
    WM_EXI_DT_NBIT,         /* §7.1.9: integer with max - min < 4096 */
    WM_EXI_DT_DATETIME,     /* §7.1.8, variant in dt_variant */
    WM_EXI_DT_LIST,         /* §7.1.11 */
    WM_EXI_DT_ENUM,         /* §7.2 */
    WM_EXI_DT_RCS_STRING,   /* §7.1.10.1 string with a restricted character set (not via
                               the string table's char encoding, but still a string value) */
    WM_EXI_DT_QNAME,        /* §7.1.7 (xsi:type values) */
} wm_exi_dt_kind;

typedef enum wm_exi_dt_variant {
    WM_EXI_GYEAR, WM_EXI_GYEARMONTH, WM_EXI_DATE, WM_EXI_DATETIME_V, WM_EXI_GMONTH,
    WM_EXI_GMONTHDAY, WM_EXI_GDAY, WM_EXI_TIME,
} wm_exi_dt_variant;

/* One simple-type representation. Arrays are owned by whoever built the
 * descriptor (the compiled grammar) and live as long as it does. */
typedef struct wm_exi_datatype {
    uint8_t kind;            /* wm_exi_dt_kind */
    uint8_t variant;         /* wm_exi_dt_variant for DATETIME */
    bool pattern_bool;       /* boolean with a pattern facet: 2-bit lexical form (§7.1.2) */
    uint8_t nbit_width;      /* NBIT: ceil(log2(max - min + 1)) */
    uint8_t enum_base;       /* ENUM: kind of the base type, whose value space the
                                values are matched in (variant: its DATETIME variant) */
    int64_t nbit_min;        /* NBIT: the minimum (value encoded is v - min) */
    uint32_t list_item;      /* LIST: index of the item datatype in the grammar's table */
    uint32_t n_enum;         /* ENUM: number of values (code width ceil(log2 n)) */
    const char *const *enum_values; /* ENUM: lexical values in schema order */
    uint32_t n_rcs;          /* RCS_STRING: size of the restricted set (< 256) */
    const uint32_t *rcs;     /* RCS_STRING: code points, ascending (§7.1.10.1) */
} wm_exi_datatype;

/* A decoded content value. text is always set (lexical form, in the scratch
 * buffer or the string table); the typed fields are set for their kinds. */
typedef struct wm_exi_value {
    const char *text;
    uint32_t len;            /* bytes of text */
    uint8_t kind;            /* wm_exi_dt_kind of the representation used */
    bool b;                  /* BOOLEAN */
    int64_t i;               /* INTEGER, UNSIGNED (<= INT64_MAX), NBIT, ENUM index */
    int64_t mantissa;        /* FLOAT: value = mantissa * 10^exponent */
    int32_t exponent;        /* FLOAT; -16384 with mantissa 1/-1/other = INF/-INF/NaN */
} wm_exi_value;

/* Scratch text buffer for decoded lexical values (caller-owned). */
typedef struct wm_exi_text {
    char *p;
    size_t len, cap;
} wm_exi_text;

/* Reads one value of datatype dt (not STRING: strings go through the string
 * table) from r, appending its lexical form to *tx and filling *v. With
 * tx->cap == 0, booleans, integers, floats and enumerations are returned
 * typed only (v->text NULL, v->len 0; enumerations point text at the grammar's
 * value instead): the fast path of content filters.
 * `types` is the table LIST item indexes refer to. Errors: WM_EXI_E_TRUNCATED,
 * WM_EXI_E_VALUE (out of range: enum index, n-bit above the range, month 13,
 * a date/time outside XML Schema's value space — 2019-02-29, 23:59:60,
 * 24:00:01, year 0000 — at the value's first bit, code point > 0x10FFFF...), WM_EXI_E_LENGTH (scratch full), WM_EXI_E_UNSUPPORTED
 * (beyond 64 bits). */
wm_exi_status wm_exi_value_read(wm_exi_reader *r, const wm_exi_datatype *types, const wm_exi_datatype *dt,
                                wm_exi_text *tx, wm_exi_value *v);

/* Room for the texts of wm_exi_float_text and wm_exi_int_text (bytes). */
#define WM_EXI_FLOAT_TEXT_MAX 48
#define WM_EXI_INT_TEXT_MAX 24
/* The lexical text wm_exi_value_read() gives a float mantissa * 10^exponent
 * (§7.1.4; exponent -16384: INF, -INF, NaN) and an integer (§7.1.5), written
 * to buf (at least WM_EXI_FLOAT_TEXT_MAX / WM_EXI_INT_TEXT_MAX bytes, no NUL);
 * return the length. Shared with the decoder's strict loop so both paths
 * write the same text. Pure; thread safe. */
unsigned wm_exi_float_text(int64_t mantissa, int32_t exponent, char *buf);
unsigned wm_exi_int_text(int64_t v, char *buf);

/* Encodes lexical text s[0..len) as datatype dt. Errors: WM_EXI_E_INPUT when the
 * text is not in the type's lexical space, or a date/time not in its value
 * space (the caller may then fall back to an untyped string where the grammar
 * allows it), WM_EXI_E_UNSUPPORTED when it is
 * but the value passes this codec's 64-bit limits (integers, decimal parts;
 * the reason says "unsupported: ... beyond 64 bits"), WM_EXI_E_LENGTH (buffer
 * full). Floats with more digits than a 64-bit mantissa holds are rounded
 * (§7.1.4), not refused. */
wm_exi_status wm_exi_value_write(wm_exi_writer *w, const wm_exi_datatype *types, const wm_exi_datatype *dt,
                                 const char *s, size_t len);

/* Checks s[0..len) as wm_exi_value_write would, without writing: WM_EXI_OK,
 * WM_EXI_E_INPUT or WM_EXI_E_UNSUPPORTED with the reason in *err (may be NULL). */
wm_exi_status wm_exi_value_check(const wm_exi_datatype *types, const wm_exi_datatype *dt, const char *s, size_t len,
                                 wm_exi_error *err);
/* wm_exi_value_check() == WM_EXI_OK. */
bool wm_exi_value_valid(const wm_exi_datatype *types, const wm_exi_datatype *dt, const char *s, size_t len);

/* Parses an xs:double/xs:float lexical into the §7.1.4 decimal mantissa and
 * exponent exactly as written (no binary rounding): "23.1" -> 231, -1;
 * "1.5e+09" -> 15, 8. Trailing zeros of the mantissa are dropped ("20" -> 2, 1),
 * as deployed encoders (EXIficient) write them. False if invalid. */
bool wm_exi_float_parse(const char *s, size_t len, int64_t *mantissa, int32_t *exponent);

#endif
