/* content_commit: what one subscription change costs the writer of the
 * data plane's content filters (control/content_filters.h).
 *
 * Why: a SUBSCRIBE with a new `xpath` text is validated (the text compiled
 * alone for every schema) and then ALL live filters are compiled together
 * into the new snapshot (wm_content_commit); an UNSUBSCRIBE of a text's last
 * subscriber recompiles the rest. This harness measures both, on one
 * thread, for live sets of N distinct filters from the benchmark's
 * subscriber mix (perf/exi_senml_gen.h, wm_senml_gen_query: thresholds,
 * device equalities, ranges, prefixes, substrings, regexes), SenML schema.
 * CPU time of the calling thread (a stall of whoever calls it), median of
 * the repetitions.
 *
 * usage: content_commit [N ...]        (default 10 100 1000 10000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/content_filters.h"
#include "perf/exi_senml_gen.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "content_commit: %s: %s\n", what, why);
    exit(1);
}

/* Refs distinct queries from the mix until n are live. */
static void fill(wm_content *c, uint64_t *seed, unsigned n)
{
    char q[256], err[400];
    while (wm_content_count(c) < n) {
        wm_senml_gen_query(seed, q, sizeof q);
        uint32_t slot;
        if (wm_content_ref(c, q, strlen(q), &slot, err, sizeof err)) die(q, err);
    }
}

int main(int argc, char **argv)
{
    static const unsigned def[] = { 10, 100, 1000, 10000 };
    unsigned ns[16], nn = 0;
    for (int i = 1; i < argc && nn < 16; i++) ns[nn++] = (unsigned)atoi(argv[i]);
    if (!nn) memcpy(ns, def, sizeof def), nn = 4;
    const char *sh = getenv("WM_SHARED");
    char xsd[1024], dir[] = "/tmp/wm_content_commit_XXXXXX", reg[1100], rel[1024];
    snprintf(rel, sizeof rel, "%s/data/exi/senml/senml.gen.xsd", sh ? sh : "../shared");
    if (!realpath(rel, xsd)) die(rel, "not found");
    if (!mkdtemp(dir)) die("mkdtemp", "failed");
    snprintf(reg, sizeof reg, "%s/reg.txt", dir);
    FILE *f = fopen(reg, "w");
    if (!f) die(reg, "cannot write");
    fprintf(f, "senml %s s=urn:ietf:params:xml:ns:senml\n", xsd);
    fclose(f);
    printf("%8s %14s %14s %14s   (CPU ms of the writer, median)\n", "live", "validate new", "commit +1", "commit -1");
    for (unsigned k = 0; k < nn; k++) {
        char err[400];
        wm_load_error le;
        wm_schema_reg *r = NULL;
        if (wm_schema_reg_load(reg, &r, &le)) die(reg, le.reason);
        wm_content *c = wm_content_new(r);
        uint64_t seed = 7 + k;
        fill(c, &seed, ns[k]);
        wm_content_snap *old = NULL;
        if (wm_content_commit(c, &old, err, sizeof err)) die("commit", err);
        int reps = ns[k] >= 10000 ? 3 : ns[k] >= 1000 ? 5 : 15;
        double val[16], add[16], del[16];
        for (int i = 0; i < reps; i++) {
            char q[256];
            uint32_t slot;
            wm_senml_gen_query(&seed, q, sizeof q); /* ...] -> ... and not(@n = 'zI')]: a text not live yet */
            snprintf(q + strlen(q) - 1, sizeof q - strlen(q) + 1, " and not(@n = 'z%d')]", i);
            double t0 = cpu_now();
            if (wm_content_ref(c, q, strlen(q), &slot, err, sizeof err)) die(q, err);
            double t1 = cpu_now();
            if (wm_content_commit(c, &old, err, sizeof err)) die("commit", err);
            double t2 = cpu_now();
            wm_content_snap_free(old);
            wm_content_unref(c, slot);
            double t3 = cpu_now();
            if (wm_content_commit(c, &old, err, sizeof err)) die("commit", err);
            double t4 = cpu_now();
            wm_content_snap_free(old);
            val[i] = (t1 - t0) * 1e3;
            add[i] = (t2 - t1) * 1e3;
            del[i] = (t4 - t3) * 1e3;
        }
        printf("%8u %14.3f %14.3f %14.3f\n", wm_content_count(c), median(val, reps), median(add, reps),
               median(del, reps));
        fflush(stdout);
        wm_content_free(c);
    }
    unlink(reg);
    rmdir(dir);
    return 0;
}
