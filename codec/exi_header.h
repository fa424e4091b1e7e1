/* EXI header and EXI Options (W3C EXI 1.0 Second Edition §5, Appendix C).
 *
 * Header layout (§5): optional "$EXI" cookie (4 bytes), distinguishing bits
 * "10", presence bit for EXI Options, format version (preview bit + 4-bit
 * groups, §5.3), EXI Options document (§5.4) when present, then padding to a
 * byte boundary when the body is byte-aligned, pre-compressed or compressed.
 *
 * The Options document is an EXI body informed by the Appendix C schema and
 * encoded with <strict/> and otherwise default options (§5.4); this module
 * implements that schema's grammars directly (they are small and fixed), so the
 * header can be read without any schema machinery.
 *
 * When the header carries no options, the caller's out-of-band options apply
 * (§5.4: "an EXI Processor may obtain the EXI options using another mechanism").
 * Compression and pre-compression are recognised and refused with
 * WM_EXI_E_UNSUPPORTED (never misread as a plain body); so are datatype
 * representation maps, self-contained elements and user-defined meta-data.
 * Pure functions over caller-owned structs; thread safe.
 */
#ifndef WM_CODEC_EXI_HEADER_H
#define WM_CODEC_EXI_HEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/exi_stream.h"

typedef enum wm_exi_alignment {
    WM_EXI_BIT_PACKED = 0,
    WM_EXI_BYTE_ALIGNED,
    WM_EXI_PRE_COMPRESSION,
} wm_exi_alignment;

#define WM_EXI_UNBOUNDED UINT32_MAX   /* valueMaxLength / valuePartitionCapacity default */
#define WM_EXI_SCHEMA_ID_MAX 255      /* longest schemaId kept, in bytes of UTF-8 */

/* The EXI Options of §5.4, Table 5-1, with their defaults from
 * wm_exi_options_default(). */
typedef struct wm_exi_options {
    wm_exi_alignment alignment;
    bool compression;
    bool strict;
    bool fragment;
    bool self_contained;
    bool preserve_dtd, preserve_prefixes, preserve_lexical_values, preserve_comments, preserve_pis;
    uint32_t block_size;               /* compression block size (default 1,000,000) */
    uint32_t value_max_length;         /* chars; WM_EXI_UNBOUNDED = unbounded (§7.3.3) */
    uint32_t value_partition_capacity; /* entries; WM_EXI_UNBOUNDED = unbounded (§7.3.3) */
    bool has_schema_id;                /* schemaId element present */
    bool schema_id_nil;                /* schemaId xsi:nil="true": schema-less (§5.4) */
    char schema_id[WM_EXI_SCHEMA_ID_MAX + 1]; /* NUL-terminated UTF-8 */
} wm_exi_options;

/* Default options: bit-packed, no compression, not strict, document, nothing preserved. */
void wm_exi_options_default(wm_exi_options *o);

typedef struct wm_exi_header {
    bool cookie;                /* "$EXI" present */
    bool options_present;       /* presence bit (§5.2) */
    bool preview;               /* version preview bit (§5.3): 1 = preview version */
    uint32_t version;           /* format version, 1-based (§5.3) */
} wm_exi_header;

/* Reads the header at the reader's position (normally 0). *opts holds the
 * out-of-band options on entry and the effective options on return (replaced
 * wholesale by the header's options document when one is present). On return
 * the reader is positioned at the first bit of the body, with its alignment
 * mode set from the options.
 * Errors: WM_EXI_E_HEADER (bad cookie, distinguishing bits, version other
 * than 1), WM_EXI_E_OPTIONS (options document not matching Appendix C, or
 * contradicting the §5.4 constraints), WM_EXI_E_UNSUPPORTED (compression,
 * pre-compression, datatypeRepresentationMap, selfContained, user-defined
 * meta-data), WM_EXI_E_TRUNCATED. */
wm_exi_status wm_exi_header_read(wm_exi_reader *r, wm_exi_header *h, wm_exi_options *opts);

/* Writes a final-version-1 header; with include_options the options document
 * is written (only non-default options appear, as Appendix C allows), else the
 * reader must know the options out of band. Sets the writer's alignment mode
 * and pads when the body is byte-aligned. Errors: WM_EXI_E_UNSUPPORTED for
 * options this codec cannot produce (compression, pre-compression,
 * selfContained), WM_EXI_E_LENGTH when the buffer is full. */
wm_exi_status wm_exi_header_write(wm_exi_writer *w, bool cookie, bool include_options,
                                  const wm_exi_options *opts);

/* Parses a W3C interop-style option suffix ("bitPacked", "byteAligned",
 * "compress", "preCompress") into *o (alignment / compression). Returns false
 * for an unknown suffix. */
bool wm_exi_options_from_suffix(const char *suffix, wm_exi_options *o);

#endif
