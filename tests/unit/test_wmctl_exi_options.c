/* `wmctl exi` never ignores an option (REVIEW10 #8): out-of-band options on a
 * stream that carries its own options header must agree with it (EXI 1.0
 * §5.4: the header's options are the ones used), and encode's --schema-id,
 * which only the options header can carry, needs --header-options. The
 * command runs in-process (control/wmctl.h) on the shared SenML vectors. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/wmctl.h"

static char dir[] = "/tmp/wm-wmctl-exi-XXXXXX";

static void setup(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *senml(const char *file)
{
    static char path[4][512];
    static int k;
    const char *s = getenv("WM_SHARED");
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/data/exi/senml/%s", s ? s : "../shared", file);
    return path[k];
}

static int run(int argc, const char **argv) { return wmctl_exi(argc, (char **)argv); }
#define RUN(...) run((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(char *)), (const char *[]){ __VA_ARGS__ })

/* what the runs wrote to stderr so far */
static char *stderr_text(void)
{
    static char buf[8192];
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

TestSuite(wmctl_exi_options, .init = setup, .fini = teardown);

/* ex1.gen.exi carries strict, byte-aligned and schemaId "a" in its header */
Test(wmctl_exi_options, out_of_band_options_that_contradict_the_header_are_refused)
{
    const char *xsd = senml("senml.gen.xsd"), *ex1 = senml("ex1.gen.exi");
    static const struct { const char *opt, *says; } bad[] = {
        { "--compression", "--compression contradicts the stream's options header (no compression)" },
        { "--pre-compress", "--pre-compress contradicts the stream's options header (byte-aligned)" },
        { "--fragment", "--fragment contradicts the stream's options header (a document, not a fragment)" },
        { "--preserve-prefixes", "--preserve-prefixes contradicts the stream's options header (prefixes not preserved)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(RUN("exi", "decode", "--schema", xsd, bad[i].opt, ex1), 2, "%s", bad[i].opt);
    /* options that agree with the header are no contradiction */
    cr_assert_eq(RUN("exi", "decode", "--schema", xsd, "--strict", "--byte-aligned", ex1), 0);
    /* a stream without an options header takes them: compression is refused by the decoder */
    char plain[600];
    snprintf(plain, sizeof plain, "%s/plain.exi", dir);
    cr_assert_eq(RUN("exi", "encode", "--schema", xsd, senml("ex1.gen.xml"), plain), 0);
    cr_assert_eq(RUN("exi", "decode", "--schema", xsd, "--compression", plain), 1);
    const char *err = stderr_text();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) cr_assert(strstr(err, bad[i].says), "lacks '%s':\n%s", bad[i].says, err);
    cr_assert(strstr(err, "plain.exi: EXI compression (§9) is not supported"), "%s", err);
}

Test(wmctl_exi_options, filter_options_that_contradict_the_header_are_refused)
{
    const char *xsd = senml("senml.gen.xsd"), *ex1 = senml("ex1.gen.exi");
    char hdr[600];
    snprintf(hdr, sizeof hdr, "%s/hdr.exi", dir);
    /* bit-packed, not strict, options in the header */
    cr_assert_eq(RUN("exi", "encode", "--schema", xsd, "--header-options", senml("ex1.gen.xml"), hdr), 0);
    char ns[] = "s=urn:ietf:params:xml:ns:senml"; /* wmctl parses argv in place, as main()'s is writable */
    const char *q[] = { "exi", "filter", "--schema", xsd, "--ns", ns, "--query", "//s:senml", NULL, NULL };
    static const struct { const char *opt; int in_hdr, rc; } runs[] = {
        { "--byte-aligned", 1, 2 }, { "--strict", 1, 2 }, { "--strict", 0, 0 } /* ex1 is strict in its header: agrees */
    };
    for (size_t i = 0; i < 3; i++) {
        strcpy(ns, "s=urn:ietf:params:xml:ns:senml");
        q[8] = runs[i].opt, q[9] = runs[i].in_hdr ? hdr : ex1;
        cr_assert_eq(run(10, q), runs[i].rc, "%s %s", q[8], q[9]);
    }
    const char *err = stderr_text();
    cr_assert(strstr(err, "hdr.exi: --byte-aligned contradicts the stream's options header (bit-packed)"), "%s", err);
    cr_assert(strstr(err, "hdr.exi: --strict contradicts the stream's options header (not strict)"), "%s", err);
}

Test(wmctl_exi_options, schema_id_needs_header_options)
{
    const char *xsd = senml("senml.gen.xsd"), *xml = senml("ex1.gen.xml");
    char out[600];
    snprintf(out, sizeof out, "%s/o.exi", dir);
    cr_assert_eq(RUN("exi", "encode", "--schema", xsd, "--schema-id", "a", xml, out), 2);
    cr_assert_neq(access(out, F_OK), 0, "a refused encode wrote its output");
    cr_assert(strstr(stderr_text(), "--schema-id is written in the options header only: give --header-options too"));
    /* with it, the README's example: the same bytes as the vector */
    cr_assert_eq(RUN("exi", "encode", "--schema", xsd, "--strict", "--byte-aligned", "--header-options",
                                           "--schema-id", "a", xml, out), 0);
    FILE *a = fopen(out, "rb"), *b = fopen(senml("ex1.gen.exi"), "rb");
    cr_assert(a && b);
    int ca, cb;
    do { ca = fgetc(a), cb = fgetc(b); } while (ca == cb && ca != EOF);
    cr_assert_eq(ca, cb, "not the vector's bytes");
    fclose(a);
    fclose(b);
}
