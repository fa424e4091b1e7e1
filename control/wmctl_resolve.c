/* `wmctl resolve --world W --nbhd F [--out R.wmr] [--json] [--crs EPSG:N]`:
 * loads a world, parses a neighborhood file, resolves every neighborhood and
 * writes a resolution file and/or prints it as JSON (control/resolution.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/nbhd.h"
#include "control/resolution.h"
#include "control/resolver.h"
#include "control/wmctl.h"
#include "control/world.h"

static const char USAGE[] = "usage: wmctl resolve --world W.geojson --nbhd F.nbhd [--out R.wmr] [--json] [--crs EPSG:N]";

int wmctl_resolve(int argc, char **argv)
{
    const char *world_path = NULL, *nbhd_path = NULL, *out_path = NULL;
    int json = 0;
    wm_world_options wopt = { 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { puts(USAGE); return 0; }
        if (i + 1 >= argc) return wmctl_usage_error("resolve", "%s needs a value\n%s", a, USAGE);
        const char *v = argv[++i];
        /* each once: the last one used to win, silently */
        if ((!strcmp(a, "--world") && world_path) || (!strcmp(a, "--nbhd") && nbhd_path) ||
            (!strcmp(a, "--out") && out_path) || (!strcmp(a, "--crs") && wopt.target_epsg))
            return wmctl_usage_error("resolve", "%s given twice: give it once", a);
        if (!strcmp(a, "--world")) world_path = v;
        else if (!strcmp(a, "--nbhd")) nbhd_path = v;
        else if (!strcmp(a, "--out")) out_path = v;
        else if (!strcmp(a, "--crs")) {
            char *end;
            long code = strncmp(v, "EPSG:", 5) ? 0 : strtol(v + 5, &end, 10);
            if (code <= 0 || code > 999999 || *end)
                return wmctl_usage_error("resolve", "--crs takes EPSG:N, not \"%s\"", v);
            wopt.target_epsg = (int)code;
        } else return wmctl_usage_error("resolve", "unknown option %s\n%s", a, USAGE);
    }
    if (!world_path || !nbhd_path || (!out_path && !json))
        return wmctl_usage_error("resolve", "%s\n%s",
                                 !world_path ? "no --world" : !nbhd_path ? "no --nbhd" : "nothing to write: no --out and no --json",
                                 USAGE);

    char msg[512];
    size_t len;
    char *text = (char *)wmctl_read_file(nbhd_path, WM_NBHD_MAX_INPUT, &len, msg, sizeof msg);
    if (!text) return wmctl_usage_error("resolve", "%s", msg);
    wm_nbhd_file nf;
    wm_nbhd_error ne;
    if (wm_nbhd_parse(text, len, &nf, &ne) != WM_NBHD_OK) {
        free(text);
        fprintf(stderr, "wmctl resolve: %s:%s [%s]\n", nbhd_path, wm_nbhd_error_format(&ne, msg, sizeof msg),
                wm_nbhd_status_name(ne.status));
        return 1;
    }
    free(text);
    wm_world_error we;
    wm_world *w = wm_world_load_file(world_path, &wopt, &we);
    if (!w) {
        wm_nbhd_file_free(&nf);
        fprintf(stderr, "wmctl resolve: %s: %s\n", world_path, we.message);
        return we.status == WM_WORLD_ERR_IO ? 2 : 1;
    }
    int rc = 0;
    wm_resolution_builder *b = wm_resolution_builder_new(w);
    wm_resolution_error re = { 0 };
    for (size_t k = 0; k < nf.n_nbhds && b && rc == 0; k++) {
        wm_nbhd_result res;
        if (wm_resolve(w, &nf.nbhds[k], &res, &ne) != WM_NBHD_OK) {
            fprintf(stderr, "wmctl resolve: %s:%s [%s]\n", nbhd_path, wm_nbhd_error_format(&ne, msg, sizeof msg),
                    wm_nbhd_status_name(ne.status));
            rc = 1;
            break;
        }
        if (wm_resolution_builder_add(b, nf.nbhds[k].name, &res, &re) != WM_RESOLUTION_OK) rc = 1;
        wm_nbhd_result_free(&res);
    }
    void *buf = NULL;
    size_t blen = 0;
    if (!b) { fprintf(stderr, "wmctl resolve: out of memory\n"); rc = 1; }
    if (rc == 0 && wm_resolution_builder_finish(b, &buf, &blen, &re) != WM_RESOLUTION_OK) rc = 1;
    const char *at = NULL;   /* the file the error is about: only the write's is one */
    if (rc == 0 && out_path && wm_resolution_write_file(out_path, buf, blen, &re) != WM_RESOLUTION_OK) rc = 2, at = out_path;
    if (rc == 0 && json) {
        wm_resolution *r = wm_resolution_view(buf, blen, &re);
        if (!r) rc = 1;
        else wm_resolution_print_json(r, stdout);   /* a write error is sticky: wmctl's main reports it */
        wm_resolution_close(r);
    }
    if (rc && re.status != WM_RESOLUTION_OK) {
        wm_load_error le;
        wm_resolution_error_load(&re, at, &le);
        wmctl_load_error("resolve", &le, rc);
    }
    free(buf);
    wm_resolution_builder_free(b);
    wm_world_free(w);
    wm_nbhd_file_free(&nf);
    return rc;
}
