/* Fuzzes the resolution-file reader (control/resolution.h). Random bytes
 * almost never pass the CRC-32s, so each input is tried twice: as is, and with
 * both checksums recomputed, which sends mutated structure into the
 * validation behind them. Whatever is accepted is then walked completely
 * through the accessors (which do no checks of their own), so an accepted
 * inconsistency shows up as an ASan report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "control/resolution.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const wm_resolution *r)
{
    uint32_t np = wm_resolution_peid_count(r);
    volatile size_t sink = 0;
    for (uint32_t i = 0; i < np; i++) sink += strlen(wm_resolution_peid(r, i));
    if (wm_resolution_peid(r, np) != NULL) abort();
    for (uint32_t i = 0; i < wm_resolution_count(r); i++) {
        wm_resolution_nbhd nb;
        if (wm_resolution_get(r, i, &nb) != 0) abort();
        for (uint32_t m = 0; m < nb.result_len; m++) if (nb.result[m] >= np) abort();
        for (uint32_t s = 1; s <= nb.n_stages; s++) {
            uint32_t len;
            const uint32_t *v = wm_resolution_stage(r, i, s, &len);
            for (uint32_t m = 0; m < len; m++) if (v[m] >= np) abort();
        }
        if (wm_resolution_find(r, nb.name) != (int64_t)i) abort();
    }
    (void)sink;
}

static void try_load(const uint8_t *buf, size_t size)
{
    wm_resolution_error err;
    wm_resolution *r = wm_resolution_view(buf, size, &err);
    if (r) {
        walk(r);
        wm_resolution_close(r);
    } else if (err.status == WM_RESOLUTION_OK || !err.message[0]) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The reader needs 8-byte alignment; malloc gives it. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    try_load(buf, size);
    if (size >= WM_RESOLUTION_HEADER_SIZE) {
        uint32_t c = (uint32_t)crc32(0, buf + 64, (uInt)(size - 64));
        memcpy(buf + 52, &c, 4);
        c = (uint32_t)crc32(0, buf, 60);
        memcpy(buf + 60, &c, 4);
        try_load(buf, size);
    }
    free(buf);
    return 0;
}
