/* Out-of-band EXI options as text (EXI 1.0 §5.4: "When the options are not
 * in the header, they are communicated out of band"): the option tokens of a
 * schema registry line (control/schema_registry.h) and the option parameters
 * of a PUBLISH's Content Type "application/exi; schema=NAME; strict=true"
 * share one vocabulary, named after the `wmctl exi` flags:
 *
 *     strict                       strict=true|false          §5.4 strict
 *     byte-aligned                 byte-aligned=true|false    §5.4 alignment (else bit-packed)
 *     fragment                     fragment=true|false        §5.4 fragment
 *     value-max-length=N|unbounded                            §5.4 valueMaxLength (§7.3.3)
 *     value-partition-capacity=N|unbounded                    §5.4 valuePartitionCapacity (§7.3.3)
 *
 * A bare boolean name (registry only: a media type parameter always has a
 * value) means true. N is decimal, 0..4294967294 (an unsignedInt below the
 * "unbounded" sentinel WM_EXI_UNBOUNDED). Names are case-insensitive, values
 * of booleans too ("true"/"false" only). The other options of §5.4
 * (compression, pre-compression, preserve.*, selfContained, schemaId,
 * datatypeRepresentationMap, blockSize) cannot be given out of band: a
 * stream that uses them carries its options header.
 *
 * The layering is the operator's: EXI defaults (wm_exi_options_default) <
 * the registry line < the Content Type's parameters; a payload with an
 * options header uses its header only (§5.4; codec/exi_header.h replaces
 * the out-of-band options wholesale). All functions are pure and thread
 * safe; nothing allocates.
 */
#ifndef WM_CONTROL_EXI_OOB_H
#define WM_CONTROL_EXI_OOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/exi_header.h"

/* Which options an overlay sets (wm_exi_oob.set). */
enum {
    WM_EXI_OOB_STRICT = 1u << 0,
    WM_EXI_OOB_BYTE_ALIGNED = 1u << 1,
    WM_EXI_OOB_FRAGMENT = 1u << 2,
    WM_EXI_OOB_VALUE_MAX_LENGTH = 1u << 3,
    WM_EXI_OOB_VALUE_PARTITION_CAPACITY = 1u << 4,
};

/* The option names, for error messages ("strict, byte-aligned, ..."). */
#define WM_EXI_OOB_NAMES "strict, byte-aligned, fragment, value-max-length, value-partition-capacity"

/* An overlay: the options some text gave, to apply over other options.
 * Zero-initialise ({0}: sets nothing). */
typedef struct wm_exi_oob {
    uint32_t set; /* WM_EXI_OOB_* bits */
    bool strict, byte_aligned, fragment;
    uint32_t value_max_length, value_partition_capacity; /* WM_EXI_UNBOUNDED = unbounded */
} wm_exi_oob;

typedef enum wm_exi_oob_status {
    WM_EXI_OOB_OK = 0,
    WM_EXI_OOB_UNKNOWN = 1, /* key is not an option name (the caller may treat it otherwise) */
    WM_EXI_OOB_BAD = 2,     /* known name, bad or missing value, or given twice: reason in why */
} wm_exi_oob_status;

/* Sets the option key[0..kl) to val[0..vl) in *ov; val == NULL is a bare
 * name (true for a boolean, a missing value for a number). Returns OK;
 * UNKNOWN (ov unchanged, why untouched); BAD with the reason in
 * why[0..whylen) (e.g. "value-max-length wants a number 0..4294967294 or
 * unbounded, got '-1'", "strict given twice"; ov unchanged). */
wm_exi_oob_status wm_exi_oob_set(wm_exi_oob *ov, const char *key, size_t kl, const char *val, size_t vl, char *why,
                                 size_t whylen);

/* Applies the options ov sets to *o, leaving the others as they are. */
void wm_exi_oob_apply(const wm_exi_oob *ov, wm_exi_options *o);

/* The options in the header of the EXI stream data[0..len) (codec/exi_header.h;
 * only the header is read): true with *hdr set if it carries an options
 * header; false if it has none or its header does not read (the decoder
 * refuses such a stream with its own reason and position). Pure, thread safe. */
bool wm_exi_oob_header_options(const uint8_t *data, size_t len, wm_exi_options *hdr);

/* A stream with an options header is decoded with its header's options
 * only (§5.4), so out-of-band options that contradict it are ignored: a
 * sign of a mis-configured publisher (its Content Type says strict=true and
 * its encoder writes non-strict headers), which the data plane and the
 * proxy count and report rather than act on. Compares the options ov sets
 * with the options header of the stream data[0..len) (read by
 * codec/exi_header.h; only the header, never the body). Returns the
 * WM_EXI_OOB_* bits of ov that contradict it; 0 for agreement, no options
 * header, or a header that does not read (the decoder then refuses the
 * stream with its own reason and position). For a non-zero return, why[0..
 * whylen) has the first one as text: "strict=true contradicts the
 * payload's options header (strict=false)". Pure, thread safe, no allocation. */
uint32_t wm_exi_oob_header_conflict(const wm_exi_oob *ov, const uint8_t *data, size_t len, char *why, size_t whylen);

#endif
