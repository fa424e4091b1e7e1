/* The encoder finds URIs and local names by string through hashes
 * (codec/exi_strtab.h): a document with many distinct names encodes in time
 * linear in their number. Review 13 finding 5: the linear scans made 20,000
 * names take 6 s and 100,000 more than 10 minutes; here 100,000 distinct
 * element and attribute names (and 2,000 namespaces) must take well under
 * 10 s (tens of milliseconds expected), and decode back to the same names. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/exi_decode.h"
#include "codec/exi_encode.h"

enum { N_NAMES = 100000, N_URIS = 2000 };

typedef struct seen {
    uint32_t n_se, bad;
} seen;

static int check(void *u, const wm_exi_event *ev)
{
    seen *s = u;
    if (ev->type != WM_EXI_EV_SE || !ev->local.len || ev->local.p[0] != 'n') return 0;
    char want[32];
    int wl = snprintf(want, sizeof want, "n%u", s->n_se);
    if (ev->local.len != (uint32_t)wl || memcmp(ev->local.p, want, (size_t)wl)) s->bad++;
    s->n_se++;
    return 0;
}

Test(exi_encode_names, many_distinct_names_encode_in_linear_time, .timeout = 60)
{
    wm_exi_grammar *g = wm_exi_grammar_schemaless();
    cr_assert_not_null(g);
    wm_exi_options o;
    wm_exi_options_default(&o);
    wm_exi_limits lim = { .mem_cap = 256u << 20 };
    wm_exi_encoder enc;
    wm_exi_encoder_init(&enc, g, &o, false, false, &lim);
    size_t cap = 16u << 20, olen = 0;
    uint8_t *out = malloc(cap);
    cr_assert_not_null(out);
    wm_exi_error e = { 0 };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(wm_exi_encode_start(&enc, out, cap, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert_eq(wm_exi_encode_se(&enc, "", 0, "r", 1), WM_EXI_OK);
    for (uint32_t i = 0; i < N_NAMES; i++) {
        char n[32], a[32], u[40];
        int nl = snprintf(n, sizeof n, "n%u", i), al = snprintf(a, sizeof a, "a%u", i);
        int ul = i % 50 ? 0 : snprintf(u, sizeof u, "urn:u%u", (i / 50) % N_URIS);
        cr_assert_eq(wm_exi_encode_se(&enc, u, (size_t)ul, n, (size_t)nl), WM_EXI_OK, "SE %u: %s", i, e.msg);
        cr_assert_eq(wm_exi_encode_at(&enc, "", 0, a, (size_t)al, "1", 1), WM_EXI_OK, "AT %u", i);
        cr_assert_eq(wm_exi_encode_ee(&enc), WM_EXI_OK);
    }
    cr_assert_eq(wm_exi_encode_ee(&enc), WM_EXI_OK);
    cr_assert_eq(wm_exi_encode_end(&enc, &olen), WM_EXI_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(s, 10.0, "encoding %d distinct names took %.2f s", N_NAMES, s);
    wm_exi_encoder_free(&enc);

    wm_exi_decoder d;
    wm_exi_decoder_init(&d, g, &lim);
    seen sn = { 0 };
    cr_assert_eq(wm_exi_decode(&d, out, olen, &o, check, &sn, NULL, &e), WM_EXI_OK, "%s", e.msg);
    cr_assert_eq(sn.n_se, N_NAMES);
    cr_assert_eq(sn.bad, 0);
    wm_exi_decoder_free(&d);
    free(out);
    wm_exi_grammar_free(g);
}
