/* Resolution file -> matcher neighborhoods (see control/resolution_compile.h). */
#include "control/resolution_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wm_resolution_compile(wm_matcher *m, const wm_resolution *r, char *err, size_t cap)
{
    uint32_t np = wm_resolution_peid_count(r);
    uint32_t *ids = malloc((np ? np : 1) * sizeof *ids);
    uint32_t *set = NULL;
    size_t set_cap = 0;
    int rc = 0;
    if (!ids) { snprintf(err, cap, "out of memory"); return -1; }
    for (uint32_t i = 0; i < np; i++) {
        const char *p = wm_resolution_peid(r, i);
        wm_matcher_status st = wm_matcher_peid_intern(m, p, strlen(p), &ids[i]);
        if (st) {
            snprintf(err, cap, "peid \"%.100s\": %s", p, wm_matcher_status_message(st));
            free(ids);
            return -1;
        }
    }
    for (uint32_t k = 0; k < wm_resolution_count(r) && rc == 0; k++) {
        wm_resolution_nbhd nb;
        wm_resolution_get(r, k, &nb);
        if (nb.result_len > set_cap) {
            uint32_t *ns = realloc(set, nb.result_len * sizeof *ns);
            if (!ns) { snprintf(err, cap, "out of memory"); rc = -1; break; }
            set = ns;
            set_cap = nb.result_len;
        }
        for (uint32_t j = 0; j < nb.result_len; j++) set[j] = ids[nb.result[j]];
        uint32_t id;
        wm_matcher_status st = wm_matcher_nbhd_define_ids(m, nb.name, strlen(nb.name), set, nb.result_len, &id);
        if (st) {
            snprintf(err, cap, "neighborhood \"%.100s\": %s", nb.name, wm_matcher_status_message(st));
            rc = -1;
        }
    }
    free(set);
    free(ids);
    return rc;
}
