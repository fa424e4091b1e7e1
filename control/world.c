/* World model loading: GeoJSON features -> entities sorted by peid -> one
 * STRtree per category layer (the paper's catLayers view, §V-B1).
 *
 * Loading is all-or-nothing: every feature is checked (structure, id,
 * categories, geometry, CRS, validity, uniqueness) before the world exists,
 * and the first problem is reported with its 1-based feature number.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec/mqtt5_topic.h"
#include "control/world_impl.h"

/* One feature while loading, in input order. */
typedef struct feat {
    char *peid;
    size_t len;
    char **cats;
    size_t n_cats;
} feat;

typedef struct loader {
    wm_world_options opt;
    wm_world_error *err;
    GEOSContextHandle_t geos;
    char geos_msg[256];
    feat *f;
    GEOSGeometry **g;
    size_t n, cap;
    uint64_t coords_left;
    int src_epsg;
} loader;

static void *fail(loader *L, wm_world_status st, uint64_t feature, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void *fail(loader *L, wm_world_status st, uint64_t feature, const char *fmt, ...)
{
    if (L->err->status != WM_WORLD_OK) return NULL;
    L->err->status = st;
    L->err->feature = feature;
    char body[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (feature && feature <= L->n && L->f[feature - 1].peid)
        snprintf(L->err->message, sizeof L->err->message, "feature %llu (id \"%.80s\"): %s",
                 (unsigned long long)feature, L->f[feature - 1].peid, body);
    else if (feature)
        snprintf(L->err->message, sizeof L->err->message, "feature %llu: %s", (unsigned long long)feature, body);
    else
        snprintf(L->err->message, sizeof L->err->message, "%s", body);
    return NULL;
}

static void geos_message(const char *message, void *ud)
{
    char *buf = ud;
    snprintf(buf, 256, "%s", message);
}

/* ------------------------------------------------------------ one feature */

static bool feature_id(loader *L, json_t *id, feat *f, uint64_t num)
{
    char buf[32];
    const char *s;
    size_t len;
    if (!id) return fail(L, WM_WORLD_ERR_ID, num, "no \"id\" member (the id is the peid)"), false;
    if (json_is_string(id)) {
        s = json_string_value(id);
        len = json_string_length(id);
    } else if (json_is_integer(id)) {
        len = (size_t)snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(id));
        s = buf;
    } else if (json_is_real(id) && json_real_value(id) == (double)(long long)json_real_value(id) &&
               json_real_value(id) > -9007199254740992.0 && json_real_value(id) < 9007199254740992.0) {
        len = (size_t)snprintf(buf, sizeof buf, "%lld", (long long)json_real_value(id));
        s = buf;
    } else {
        return fail(L, WM_WORLD_ERR_ID, num, "\"id\" must be a string or an integer"), false;
    }
    if (len == 0) return fail(L, WM_WORLD_ERR_ID, num, "empty \"id\""), false;
    if (len > WM_WORLD_MAX_PEID) return fail(L, WM_WORLD_ERR_ID, num, "\"id\" longer than %u bytes", WM_WORLD_MAX_PEID), false;
    if (memchr(s, 0, len)) return fail(L, WM_WORLD_ERR_ID, num, "\"id\" contains U+0000"), false;
    if (!(f->peid = malloc(len + 1))) return fail(L, WM_WORLD_ERR_NOMEM, num, "out of memory"), false;
    memcpy(f->peid, s, len);
    f->peid[len] = 0;
    f->len = len;
    return true;
}

static bool add_cat(loader *L, feat *f, json_t *c, uint64_t num)
{
    if (!json_is_string(c)) return fail(L, WM_WORLD_ERR_CATS, num, "a category must be a string"), false;
    const char *s = json_string_value(c);
    size_t len = json_string_length(c), off = 0;
    wm_topic_status ts = wm_topic_name_validate(s, len, &off);
    if (ts != WM_TOPIC_OK)
        return fail(L, WM_WORLD_ERR_CATS, num, "category \"%.80s\": %s (byte %zu)", s, wm_topic_status_message(ts), off), false;
    for (size_t k = 0; k < f->n_cats; k++)
        if (!strcmp(f->cats[k], s)) return true; /* listed twice: one layer membership */
    if (f->n_cats >= WM_WORLD_MAX_CATS)
        return fail(L, WM_WORLD_ERR_CATS, num, "more than %u categories", WM_WORLD_MAX_CATS), false;
    char **nc = realloc(f->cats, (f->n_cats + 1) * sizeof *nc);
    if (!nc) return fail(L, WM_WORLD_ERR_NOMEM, num, "out of memory"), false;
    f->cats = nc;
    if (!(f->cats[f->n_cats] = strdup(s))) return fail(L, WM_WORLD_ERR_NOMEM, num, "out of memory"), false;
    f->n_cats++;
    return true;
}

static bool feature(loader *L, json_t *o)
{
    uint64_t num = L->n + 1;
    if (L->n >= L->opt.max_features)
        return fail(L, WM_WORLD_ERR_LIMIT, num, "more than %llu features", (unsigned long long)L->opt.max_features), false;
    if (L->n == L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 1024;
        feat *nf = realloc(L->f, nc * sizeof *nf);
        if (!nf) return fail(L, WM_WORLD_ERR_NOMEM, num, "out of memory"), false;
        L->f = nf;
        GEOSGeometry **ng = realloc(L->g, nc * sizeof *ng);
        if (!ng) return fail(L, WM_WORLD_ERR_NOMEM, num, "out of memory"), false;
        L->g = ng;
        L->cap = nc;
    }
    feat *f = &L->f[L->n];
    memset(f, 0, sizeof *f);
    L->g[L->n] = NULL;
    L->n++;
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!json_is_object(o) || !type || strcmp(type, "Feature"))
        return fail(L, WM_WORLD_ERR_FEATURE, num, "not a GeoJSON Feature (\"type\":\"Feature\")"), false;
    if (!feature_id(L, json_object_get(o, "id"), f, num)) return false;
    json_t *props = json_object_get(o, "properties");
    if (props && !json_is_null(props) && !json_is_object(props))
        return fail(L, WM_WORLD_ERR_FEATURE, num, "\"properties\" must be an object or null"), false;
    json_t *cats = json_object_get(props, "cats");
    if (json_is_array(cats)) {
        size_t k;
        json_t *c;
        json_array_foreach(cats, k, c) if (!add_cat(L, f, c, num)) return false;
    } else if (cats && !json_is_null(cats)) {
        if (!add_cat(L, f, cats, num)) return false;
    }
    json_t *g = json_object_get(o, "geometry");
    if (!g || json_is_null(g)) return fail(L, WM_WORLD_ERR_GEOMETRY, num, "no geometry"), false;
    char msg[256];
    int limit = 0;
    L->g[L->n - 1] = wm_world_geojson_geometry(L->geos, g, &L->coords_left, &limit, msg, sizeof msg);
    if (!L->g[L->n - 1])
        return fail(L, limit ? WM_WORLD_ERR_LIMIT : WM_WORLD_ERR_GEOMETRY, num, "%s%s%s", msg,
                    limit ? "" : (L->geos_msg[0] ? ": " : ""), limit ? "" : L->geos_msg), false;
    return true;
}

/* ------------------------------------------------------------ documents */

static bool document(loader *L, const char *data, size_t len)
{
    size_t at = 0;
    uint64_t line = 1; /* line of data[at], for JSON errors in text sequences */
    bool first = true;
    for (;;) {
        while (at < len && (data[at] == ' ' || data[at] == '\t' || data[at] == '\n' || data[at] == '\r' || data[at] == 0x1e)) {
            if (data[at] == '\n') line++;
            at++;
        }
        if (at >= len) break;
        json_error_t je;
        json_t *v = json_loadb(data + at, len - at, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
        if (!v) {
            fail(L, WM_WORLD_ERR_JSON, 0, "JSON error at line %llu, column %d: %s",
                 (unsigned long long)(line + (je.line > 0 ? (uint64_t)je.line - 1 : 0)), je.column, je.text);
            return false;
        }
        size_t used = (size_t)je.position;
        const char *type = json_string_value(json_object_get(v, "type"));
        bool ok;
        if (first && type && !strcmp(type, "FeatureCollection")) {
            char m[256];
            int src = wm_world_crs_member_epsg(json_object_get(v, "crs"), m, sizeof m);
            json_t *fs = json_object_get(v, "features");
            if (src < 0) {
                ok = fail(L, WM_WORLD_ERR_CRS, 0, "%s", m);
            } else if (!json_is_array(fs)) {
                ok = fail(L, WM_WORLD_ERR_FEATURE, 0, "FeatureCollection without a \"features\" array");
            } else {
                L->src_epsg = src;
                size_t k;
                json_t *o;
                ok = true;
                json_array_foreach(fs, k, o) if (!(ok = feature(L, o))) break;
            }
            json_decref(v);
            if (!ok) return false;
            for (size_t k = at + used; k < len; k++)
                if (data[k] != ' ' && data[k] != '\t' && data[k] != '\n' && data[k] != '\r')
                    return fail(L, WM_WORLD_ERR_JSON, 0, "data after the FeatureCollection (byte %zu)", k), false;
            return true;
        }
        ok = feature(L, v);
        json_decref(v);
        if (!ok) return false;
        for (size_t k = at; k < at + used; k++) line += data[k] == '\n';
        at += used;
        first = false;
    }
    return true;
}

/* ------------------------------------------------------------ the world */

static int cmp_feat(const void *a, const void *b, void *arg)
{
    const feat *f = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    size_t n = f[x].len < f[y].len ? f[x].len : f[y].len;
    int c = memcmp(f[x].peid, f[y].peid, n);
    if (c) return c;
    if (f[x].len != f[y].len) return f[x].len < f[y].len ? -1 : 1;
    return x < y ? -1 : x > y;
}

typedef struct catpair {
    const char *cat;
    uint32_t ent;
} catpair;

static int cmp_pair(const void *a, const void *b)
{
    const catpair *x = a, *y = b;
    int c = strcmp(x->cat, y->cat);
    return c ? c : (x->ent < y->ent ? -1 : x->ent > y->ent);
}

static void build_query_cb(void *item, void *ud) { (void)item; (void)ud; }

static bool build_layers(loader *L, wm_world *w, char ***cats_of, size_t *ncats_of)
{
    size_t total = 0;
    for (size_t k = 0; k < w->n; k++) total += ncats_of[k];
    catpair *p = malloc((total ? total : 1) * sizeof *p);
    if (!p) return fail(L, WM_WORLD_ERR_NOMEM, 0, "out of memory"), false;
    size_t m = 0;
    for (size_t k = 0; k < w->n; k++)
        for (size_t c = 0; c < ncats_of[k]; c++) p[m++] = (catpair){ cats_of[k][c], (uint32_t)k };
    qsort(p, m, sizeof *p, cmp_pair);
    size_t nl = 0;
    for (size_t k = 0; k < m; k++) nl += (k == 0 || strcmp(p[k].cat, p[k - 1].cat));
    w->layers = calloc(nl ? nl : 1, sizeof *w->layers);
    w->layer_pick = calloc(nl ? nl : 1, 1);
    w->key_words = (nl + 63) / 64 ? (nl + 63) / 64 : 1;
    w->key_scratch = calloc(w->key_words, sizeof(uint64_t));
    if (!w->layers || !w->layer_pick || !w->key_scratch) { free(p); return fail(L, WM_WORLD_ERR_NOMEM, 0, "out of memory"), false; }
    for (size_t k = 0; k < m;) {
        size_t e = k;
        while (e < m && !strcmp(p[e].cat, p[k].cat)) e++;
        wm_world_layer *ly = &w->layers[w->n_layers++];
        ly->name = strdup(p[k].cat);
        ly->members = malloc((e - k) * sizeof *ly->members);
        ly->tree = GEOSSTRtree_create_r(w->geos, 10);
        if (!ly->name || !ly->members || !ly->tree) { free(p); return fail(L, WM_WORLD_ERR_NOMEM, 0, "out of memory"), false; }
        for (size_t j = k; j < e; j++) {
            ly->members[ly->n_members++] = p[j].ent;
            /* Items are index + 1: a NULL item would be ambiguous. */
            GEOSSTRtree_insert_r(w->geos, ly->tree, w->geom[p[j].ent], (void *)(uintptr_t)(p[j].ent + 1));
        }
        /* The tree is built lazily by its first query; do it now so that
         * resolving never mutates the tree. */
        GEOSSTRtree_query_r(w->geos, ly->tree, w->geom[ly->members[0]], build_query_cb, NULL);
        k = e;
    }
    free(p);
    return true;
}

static void loader_free(loader *L)
{
    for (size_t k = 0; k < L->n; k++) {
        free(L->f[k].peid);
        for (size_t c = 0; c < L->f[k].n_cats; c++) free(L->f[k].cats[c]);
        free(L->f[k].cats);
        if (L->g[k]) GEOSGeom_destroy_r(L->geos, L->g[k]);
    }
    free(L->f);
    free(L->g);
}

wm_world *wm_world_load_buffer(const char *data, size_t len, const wm_world_options *opt, wm_world_error *err)
{
    wm_world_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    loader L;
    memset(&L, 0, sizeof L);
    L.err = err;
    if (opt) L.opt = *opt;
    if (!L.opt.max_bytes) L.opt.max_bytes = WM_WORLD_MAX_BYTES;
    if (!L.opt.max_features) L.opt.max_features = WM_WORLD_MAX_FEATURES;
    if (!L.opt.max_coords) L.opt.max_coords = WM_WORLD_MAX_COORDS;
    L.coords_left = L.opt.max_coords;
    if (len > L.opt.max_bytes) {
        fail(&L, WM_WORLD_ERR_LIMIT, 0, "input of %zu bytes above the bound of %llu bytes", len,
             (unsigned long long)L.opt.max_bytes);
        return NULL;
    }
    L.geos = GEOS_init_r();
    if (!L.geos) { fail(&L, WM_WORLD_ERR_NOMEM, 0, "GEOS_init_r failed"); return NULL; }
    GEOSContext_setErrorMessageHandler_r(L.geos, geos_message, L.geos_msg);
    GEOSContext_setNoticeMessageHandler_r(L.geos, geos_message, L.geos_msg);

    wm_world *w = NULL;
    uint32_t *order = NULL;
    if (!document(&L, data, len)) goto bad;
    if (L.n == 0) { fail(&L, WM_WORLD_ERR_FEATURE, 0, "no features"); goto bad; }

    uint64_t badf = 0;
    char msg[512];
    int epsg = wm_world_crs_reproject(L.geos, L.g, L.n, L.src_epsg, L.opt.target_epsg, &badf, msg, sizeof msg);
    if (epsg < 0) { fail(&L, WM_WORLD_ERR_CRS, badf, "%s", msg); goto bad; }

    for (size_t k = 0; k < L.n; k++) {
        if (GEOSisEmpty_r(L.geos, L.g[k])) { fail(&L, WM_WORLD_ERR_GEOMETRY, k + 1, "empty geometry"); goto bad; }
        char v = GEOSisValid_r(L.geos, L.g[k]);
        if (v != 1) {
            char *why = GEOSisValidReason_r(L.geos, L.g[k]);
            fail(&L, WM_WORLD_ERR_INVALID_GEOMETRY, k + 1, "invalid geometry: %s", why ? why : L.geos_msg);
            if (why) GEOSFree_r(L.geos, why);
            goto bad;
        }
    }

    order = malloc(L.n * sizeof *order);
    if (!order) { fail(&L, WM_WORLD_ERR_NOMEM, 0, "out of memory"); goto bad; }
    for (size_t k = 0; k < L.n; k++) order[k] = (uint32_t)k;
    qsort_r(order, L.n, sizeof *order, cmp_feat, L.f);
    /* Report the later feature of the earliest-found duplicate pair. */
    uint64_t dup = 0, orig = 0;
    for (size_t k = 1, head = 0; k < L.n; k++) {
        feat *a = &L.f[order[head]], *b = &L.f[order[k]];
        if (a->len != b->len || memcmp(a->peid, b->peid, a->len)) { head = k; continue; }
        if (!dup || order[k] + 1 < dup) { dup = order[k] + 1; orig = order[head] + 1; }
    }
    if (dup) {
        fail(&L, WM_WORLD_ERR_DUP_ID, dup, "duplicate id: feature %llu has the same id", (unsigned long long)orig);
        goto bad;
    }

    w = calloc(1, sizeof *w);
    if (!w) { fail(&L, WM_WORLD_ERR_NOMEM, 0, "out of memory"); goto bad; }
    w->geos = L.geos;
    w->epsg = epsg;
    w->n = L.n;
    w->peid = calloc(L.n, sizeof *w->peid);
    w->peid_len = calloc(L.n, sizeof *w->peid_len);
    w->geom = calloc(L.n, sizeof *w->geom);
    w->env = calloc(L.n, sizeof *w->env);
    w->prep = calloc(L.n, sizeof *w->prep);
    w->line_xy = calloc(L.n, sizeof *w->line_xy);
    w->line_n = calloc(L.n, sizeof *w->line_n);
    w->mark_ref = calloc(L.n, sizeof(uint32_t));
    w->mark_sel = calloc(L.n, sizeof(uint32_t));
    w->mark_cand = calloc(L.n, sizeof(uint32_t));
    w->count = calloc(L.n, sizeof(uint32_t));
    char ***cats_of = calloc(L.n, sizeof *cats_of);
    size_t *ncats_of = calloc(L.n, sizeof *ncats_of);
    if (!w->peid || !w->peid_len || !w->geom || !w->env || !w->prep || !w->line_xy || !w->line_n || !w->mark_ref || !w->mark_sel ||
        !w->mark_cand || !w->count || !cats_of || !ncats_of) {
        free(cats_of);
        free(ncats_of);
        fail(&L, WM_WORLD_ERR_NOMEM, 0, "out of memory");
        goto bad;
    }
    for (size_t k = 0; k < L.n; k++) {
        uint32_t o = order[k];
        w->peid[k] = L.f[o].peid; L.f[o].peid = NULL;
        w->peid_len[k] = L.f[o].len;
        w->geom[k] = L.g[o]; L.g[o] = NULL;
        cats_of[k] = L.f[o].cats;
        ncats_of[k] = L.f[o].n_cats;
        wm_world_envelope *e = &w->env[k];
        GEOSGeom_getExtent_r(w->geos, w->geom[k], &e->xmin, &e->ymin, &e->xmax, &e->ymax);
        if (GEOSGeomTypeId_r(w->geos, w->geom[k]) == GEOS_LINESTRING) {
            const GEOSCoordSequence *cs = GEOSGeom_getCoordSeq_r(w->geos, w->geom[k]);
            unsigned size = 0;
            if (cs && GEOSCoordSeq_getSize_r(w->geos, cs, &size) && size >= 2 &&
                (w->line_xy[k] = malloc(2 * sizeof(double) * size)) &&
                GEOSCoordSeq_copyToBuffer_r(w->geos, cs, w->line_xy[k], 0, 0))
                w->line_n[k] = size;
        }
    }
    bool ok = build_layers(&L, w, cats_of, ncats_of);
    free(cats_of);
    free(ncats_of);
    if (!ok) goto bad;
    GEOSContext_setErrorMessageHandler_r(w->geos, geos_message, w->geos_msg);
    GEOSContext_setNoticeMessageHandler_r(w->geos, geos_message, w->geos_msg);
    free(order);
    loader_free(&L); /* categories now live in the layers; the rest was moved */
    return w;

bad:
    free(order);
    if (w) {
        w->geos = NULL; /* destroyed below, after the geometries */
        for (size_t k = 0; k < w->n; k++) {
            free(w->peid ? w->peid[k] : NULL);
            free(w->line_xy ? w->line_xy[k] : NULL);
            if (w->geom && w->geom[k]) GEOSGeom_destroy_r(L.geos, w->geom[k]);
        }
        for (size_t k = 0; k < w->n_layers; k++) {
            free(w->layers[k].name);
            free(w->layers[k].members);
            if (w->layers[k].tree) GEOSSTRtree_destroy_r(L.geos, w->layers[k].tree);
        }
        free(w->layers); free(w->layer_pick); free(w->key_scratch);
        free(w->line_xy); free(w->line_n);
        free(w->peid); free(w->peid_len); free(w->geom); free(w->env); free(w->prep);
        free(w->mark_ref); free(w->mark_sel); free(w->mark_cand); free(w->count);
        free(w);
    }
    loader_free(&L);
    GEOS_finish_r(L.geos);
    return NULL;
}

wm_world *wm_world_load_file(const char *path, const wm_world_options *opt, wm_world_error *err)
{
    wm_world_error local;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    uint64_t max = opt && opt->max_bytes ? opt->max_bytes : WM_WORLD_MAX_BYTES;
    FILE *fp = fopen(path, "rb");
    struct stat st;
    if (!fp || fstat(fileno(fp), &st) != 0) {
        err->status = WM_WORLD_ERR_IO;
        snprintf(err->message, sizeof err->message, "%s", strerror(errno));
        if (fp) fclose(fp);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(fp);
        err->status = WM_WORLD_ERR_IO;
        snprintf(err->message, sizeof err->message, "is a directory");
        return NULL;
    }
    if ((uint64_t)st.st_size > max) {
        fclose(fp);
        err->status = WM_WORLD_ERR_LIMIT;
        snprintf(err->message, sizeof err->message, "%lld bytes above the bound of %llu bytes",
                 (long long)st.st_size, (unsigned long long)max);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, fp) != len) {
        err->status = buf ? WM_WORLD_ERR_IO : WM_WORLD_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "%s", buf ? (ferror(fp) ? strerror(errno) : "short read") : "out of memory");
        free(buf);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    wm_world *w = wm_world_load_buffer(buf, len, opt, err);
    free(buf);
    return w;
}

static void union_drop(wm_world *w, wm_world_union *u)
{
    if (u->tree) GEOSSTRtree_destroy_r(w->geos, u->tree);
    free(u->key);
    free(u->members);
    memset(u, 0, sizeof *u);
}

void wm_world_free(wm_world *w)
{
    if (!w) return;
    for (size_t k = 0; k < WM_WORLD_UNION_CACHE; k++) union_drop(w, &w->unions[k]);
    free(w->key_scratch);
    for (size_t k = 0; k < w->n_layers; k++) {
        free(w->layers[k].name);
        free(w->layers[k].members);
        GEOSSTRtree_destroy_r(w->geos, w->layers[k].tree);
    }
    for (size_t k = 0; k < w->n; k++) {
        if (w->prep[k]) GEOSPreparedGeom_destroy_r(w->geos, w->prep[k]);
        GEOSGeom_destroy_r(w->geos, w->geom[k]);
        free(w->peid[k]);
        free(w->line_xy[k]);
    }
    free(w->line_xy); free(w->line_n);
    free(w->layers); free(w->layer_pick);
    free(w->peid); free(w->peid_len); free(w->geom); free(w->env); free(w->prep);
    free(w->mark_ref); free(w->mark_sel); free(w->mark_cand); free(w->count);
    GEOS_finish_r(w->geos);
    free(w);
}

size_t wm_world_count(const wm_world *w) { return w->n; }
const char *wm_world_peid(const wm_world *w, uint32_t idx) { return idx < w->n ? w->peid[idx] : NULL; }
int wm_world_epsg(const wm_world *w) { return w->epsg; }
size_t wm_world_category_count(const wm_world *w) { return w->n_layers; }
const char *wm_world_category(const wm_world *w, size_t cat) { return cat < w->n_layers ? w->layers[cat].name : NULL; }

const uint32_t *wm_world_category_members(const wm_world *w, size_t cat, size_t *n)
{
    if (cat >= w->n_layers) { *n = 0; return NULL; }
    *n = w->layers[cat].n_members;
    return w->layers[cat].members;
}

int64_t wm_world_find(const wm_world *w, const char *peid, size_t len)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, ml = w->peid_len[mid];
        int c = memcmp(w->peid[mid], peid, ml < len ? ml : len);
        if (!c) c = ml < len ? -1 : ml > len;
        if (c == 0) return (int64_t)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

uint32_t wm_world_stamps(wm_world *w, uint32_t k)
{
    if (w->stamp > UINT32_MAX - k - 1) {
        memset(w->mark_ref, 0, w->n * sizeof(uint32_t));
        memset(w->mark_sel, 0, w->n * sizeof(uint32_t));
        memset(w->mark_cand, 0, w->n * sizeof(uint32_t));
        w->stamp = 0;
    }
    uint32_t first = w->stamp + 1;
    w->stamp += k;
    return first;
}

const GEOSPreparedGeometry *wm_world_prepared(wm_world *w, uint32_t idx)
{
    if (!w->prep[idx]) w->prep[idx] = GEOSPrepare_r(w->geos, w->geom[idx]);
    return w->prep[idx];
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

bool wm_world_candidates_for_pick(wm_world *w, wm_world_candidates *out)
{
    memset(out, 0, sizeof *out);
    memset(w->key_scratch, 0, w->key_words * sizeof(uint64_t));
    size_t picked = 0, one = 0, total = 0;
    for (size_t l = 0; l < w->n_layers; l++)
        if (w->layer_pick[l]) {
            w->key_scratch[l / 64] |= 1ull << (l % 64);
            picked++;
            one = l;
            total += w->layers[l].n_members;
        }
    if (picked == 0) return true;
    if (picked == 1) {
        out->tree = w->layers[one].tree;
        out->members = w->layers[one].members;
        out->n_members = w->layers[one].n_members;
        return true;
    }
    wm_world_union *victim = &w->unions[0];
    for (size_t k = 0; k < WM_WORLD_UNION_CACHE; k++) {
        wm_world_union *u = &w->unions[k];
        if (u->key && !memcmp(u->key, w->key_scratch, w->key_words * sizeof(uint64_t))) {
            u->last_use = ++w->use_clock;
            out->tree = u->tree;
            out->members = u->members;
            out->n_members = u->n_members;
            return true;
        }
        if (!u->key || (victim->key && u->last_use < victim->last_use)) victim = u;
    }
    union_drop(w, victim);
    wm_world_union u = { 0 };
    u.key = malloc(w->key_words * sizeof(uint64_t));
    u.members = malloc(total * sizeof(uint32_t));
    u.tree = GEOSSTRtree_create_r(w->geos, 10);
    if (!u.key || !u.members || !u.tree) {
        union_drop(w, &u);
        return false;
    }
    memcpy(u.key, w->key_scratch, w->key_words * sizeof(uint64_t));
    for (size_t l = 0; l < w->n_layers; l++)
        if (w->layer_pick[l]) {
            memcpy(u.members + u.n_members, w->layers[l].members, w->layers[l].n_members * sizeof(uint32_t));
            u.n_members += w->layers[l].n_members;
        }
    /* An entity in several picked layers is one candidate. */
    qsort(u.members, u.n_members, sizeof *u.members, cmp_u32);
    size_t m = 0;
    for (size_t k = 0; k < u.n_members; k++)
        if (m == 0 || u.members[k] != u.members[m - 1]) u.members[m++] = u.members[k];
    u.n_members = m;
    for (size_t k = 0; k < m; k++)
        GEOSSTRtree_insert_r(w->geos, u.tree, w->geom[u.members[k]], (void *)(uintptr_t)(u.members[k] + 1));
    GEOSSTRtree_query_r(w->geos, u.tree, w->geom[u.members[0]], build_query_cb, NULL);
    u.last_use = ++w->use_clock;
    *victim = u;
    out->tree = u.tree;
    out->members = u.members;
    out->n_members = u.n_members;
    return true;
}
