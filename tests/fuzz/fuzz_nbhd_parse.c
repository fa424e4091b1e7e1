/* Fuzzes the neighborhood language parser (control/nbhd.h). Besides "no
 * crash, no leak", it checks what the parser promises:
 *   - on success every neighborhood has 1..64 stages, a non-empty visible set
 *     within them, stage 1 takes peids and later stages only earlier stages,
 *     every category filter is a valid non-shared topic filter;
 *   - on failure the position lies inside the input (line <= lines + 1,
 *     column <= line length + 1) and the message is non-empty;
 *   - wm_nbhd_parse_one agrees with wm_nbhd_parse on a single-line input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "control/nbhd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ok(const wm_nbhd *n)
{
    if (n->n_stages < 1 || n->n_stages > WM_NBHD_MAX_STAGES || !n->name || !n->name[0]) abort();
    uint64_t all = n->n_stages == 64 ? ~0ull : (1ull << n->n_stages) - 1;
    if (!n->visible || (n->visible & ~all)) abort();
    for (size_t i = 0; i < n->n_stages; i++) {
        const wm_nbhd_stage *s = &n->stages[i];
        if (i == 0 && (s->refkind != WM_REFS_PEIDS || s->n_peids == 0)) abort();
        if (i > 0 && (s->refkind == WM_REFS_PEIDS || s->ref_stages == 0 || (s->ref_stages >> i) != 0)) abort();
        if (s->n_cats == 0) abort();
        for (size_t c = 0; c < s->n_cats; c++) {
            size_t len = strlen(s->cats[c]);
            if (wm_topic_filter_validate(s->cats[c], len, NULL) != WM_TOPIC_OK) abort();
            if (wm_topic_share_split(s->cats[c], len, NULL)) abort();
        }
        if (s->rel == WM_REL_DWITHIN && !(s->distance_m >= 0 && s->distance_m <= WM_NBHD_MAX_DISTANCE_M)) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    wm_nbhd_file f;
    wm_nbhd_error e;
    wm_nbhd_status st = wm_nbhd_parse(text, size, &f, &e);
    size_t lines = 1;
    for (size_t k = 0; k < size; k++) lines += data[k] == '\n';
    if (st == WM_NBHD_OK) {
        for (size_t k = 0; k < f.n_nbhds; k++) check_ok(&f.nbhds[k]);
    } else {
        if (!e.message[0] || e.pos.line > lines || (e.pos.line && e.pos.col == 0)) abort();
        if (e.pos.col > size + 1) abort();
        char buf[512];
        wm_nbhd_error_format(&e, buf, sizeof buf);
    }
    /* A single line without comments/blank: parse_one must agree. */
    if (size && !memchr(data, '\n', size) && !memchr(data, '\r', size) && st == WM_NBHD_OK && f.n_nbhds == 1) {
        wm_nbhd one;
        wm_nbhd_error e1;
        if (wm_nbhd_parse_one(text, size, &one, &e1) != WM_NBHD_OK) abort();
        if (one.n_stages != f.nbhds[0].n_stages || one.visible != f.nbhds[0].visible) abort();
        wm_nbhd_free(&one);
    }
    wm_nbhd_file_free(&f);
    return 0;
}
