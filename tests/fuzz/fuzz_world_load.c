/* Fuzzes the world-model loader (control/world.h: GeoJSON -> GEOS, CRS with
 * PROJ) under small bounds, then runs every relation of the resolver from the
 * first entity over everything loaded. Checks: a refused input has a status
 * and a message (and a feature number within the features seen); an accepted
 * world has sorted unique peids, and every resolved set is strictly ascending
 * and inside the world. GEOS exceptions (e.g. relate on GeometryCollections)
 * must come back as WM_NBHD_ERR_GEOMETRY, not as a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/resolver.h"
#include "control/world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wm_world_options opt = { .max_bytes = 1 << 16, .max_features = 64, .max_coords = 4096 };
    wm_world_error err;
    wm_world *w = wm_world_load_buffer((const char *)data, size, &opt, &err);
    if (!w) {
        if (err.status == WM_WORLD_OK || !err.message[0] || err.feature > 65) abort();
        return 0;
    }
    size_t n = wm_world_count(w);
    for (uint32_t i = 1; i < n; i++)
        if (strcmp(wm_world_peid(w, i - 1), wm_world_peid(w, i)) >= 0) abort();
    char *cat = (char *)"#";
    wm_nbhd_peid ref = { (char *)wm_world_peid(w, 0), strlen(wm_world_peid(w, 0)), { 1, 1 } };
    for (int rel = WM_REL_EQUALS; rel <= WM_REL_DWITHIN; rel++) {
        wm_nbhd_stage st[2];
        memset(st, 0, sizeof st);
        st[0].refkind = WM_REFS_PEIDS;
        st[0].peids = &ref;
        st[0].n_peids = 1;
        st[0].cats = &cat;
        st[0].n_cats = 1;
        st[0].rel = (wm_nbhd_rel)rel;
        st[0].distance_m = 10;
        st[1] = st[0];
        st[1].refkind = WM_REFS_ANC;
        st[1].ref_stages = 1;
        st[1].peids = NULL;
        st[1].n_peids = 0;
        wm_nbhd nb = { (char *)"F", { 1, 1 }, st, 2, 3 };
        wm_nbhd_result r;
        wm_nbhd_error e;
        wm_nbhd_status s = wm_resolve(w, &nb, &r, &e);
        if (s == WM_NBHD_OK) {
            for (size_t k = 0; k < r.result_len; k++)
                if (r.result[k] >= n || (k && r.result[k] <= r.result[k - 1])) abort();
            wm_nbhd_result_free(&r);
        } else if ((s != WM_NBHD_ERR_GEOMETRY &&
                    !(s == WM_NBHD_ERR_UNKNOWN_CATEGORY && wm_world_category_count(w) == 0)) || !e.message[0]) {
            abort();
        }
    }
    wm_world_free(w);
    return 0;
}
