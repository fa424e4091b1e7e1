/* JSON inputs of `wmctl match` (see match_input.h), parsed with jansson. */
#include "control/match_input.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mqtt5_topic.h"
#include "control/content_filters.h"
#include "control/peid_props.h"

typedef struct sub_id {
    bool is_int;
    long long num;
    char *text;   /* JSON text of the id, as printed */
    long line;
} sub_id;

struct wm_match_input {
    wm_matcher *m;
    wm_matcher_reader *r;
    sub_id *ids;
    size_t n_ids, cap_ids;
    json_t *seen;          /* id key -> index, for duplicates */
    uint32_t *res_subs, *res_members;
    wm_match_group *res_groups;
    uint32_t res_cap, groups_cap;
    size_t *order;
    char *out;
    size_t out_cap;
    wm_content *content;   /* "xpath" filters go here; NULL: refused */
};

static int fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

wm_match_input *wm_match_input_new(const wm_matcher_config *cfg)
{
    wm_match_input *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->m = wm_matcher_new(cfg);
    in->seen = json_object();
    if (!in->m || !in->seen) { wm_match_input_free(in); return NULL; }
    const wm_matcher_config *c = wm_matcher_get_config(in->m);
    in->res_cap = c->max_subs;
    in->groups_cap = c->max_groups;
    return in;
}

void wm_match_input_free(wm_match_input *in)
{
    if (!in) return;
    if (in->r) wm_matcher_reader_free(in->r);
    wm_matcher_free(in->m);
    for (size_t i = 0; i < in->n_ids; i++) free(in->ids[i].text);
    free(in->ids);
    json_decref(in->seen);
    free(in->res_subs); free(in->res_members); free(in->res_groups); free(in->order); free(in->out);
    free(in);
}

wm_matcher *wm_match_input_matcher(wm_match_input *in) { return in->m; }

const char *wm_match_input_sub_id(const wm_match_input *in, uint64_t cookie)
{
    return cookie < in->n_ids ? in->ids[cookie].text : NULL;
}

size_t wm_match_input_sub_count(const wm_match_input *in) { return in->n_ids; }

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
    return true;
}

/* Parses one JSON object line; NULL with err set otherwise. */
static json_t *parse_object(const char *line, size_t len, char *err, size_t cap)
{
    json_error_t je;
    /* without its newline: an object cut at the end of the line is then an
     * error at the line's last column, not at column 0 of the next */
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    json_t *v = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!v) { fail(err, cap, "column %d: invalid JSON: %s", je.column, je.text); return NULL; }
    if (!json_is_object(v)) { json_decref(v); fail(err, cap, "expected a JSON object"); return NULL; }
    return v;
}

static int check_keys(json_t *o, const char *const *allowed, char *err, size_t cap)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, k) == 0;
        if (!ok) return fail(err, cap, "unknown key \"%s\"", k);
    }
    return 0;
}

/* jansson keeps no position of a value: on an error (only then) the text,
 * which jansson has already accepted, is walked again to member `member`
 * (0-based, in text order = jansson's iteration order) of the top-level
 * object, and to element `elem` of its array value (SIZE_MAX: the value
 * itself). *line and *col are 1-based, columns counted in characters as
 * jansson counts them. */
static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n')) i++;
    return i;
}

static size_t skip_value(const char *t, size_t len, size_t i)
{
    int depth = 0;
    bool str = false;
    for (; i < len; i++) {
        char c = t[i];
        if (str) {
            if (c == '\\') i++;
            else if (c == '"') {
                str = false;
                if (!depth) return i + 1;
            }
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (!depth) return i;
            if (!--depth) return i + 1;
        } else if (!depth && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
            return i;
        }
    }
    return i;
}

static void json_position(const char *t, size_t len, size_t member, size_t elem, unsigned long *line, unsigned long *col)
{
    size_t i = skip_ws(t, len, 0) + 1; /* past '{' */
    for (size_t m = 0; i < len; m++) {
        i = skip_value(t, len, skip_ws(t, len, i));   /* the key */
        i = skip_ws(t, len, skip_ws(t, len, i) + 1);  /* past ':' */
        if (m == member) {
            if (elem != SIZE_MAX && i < len && t[i] == '[') {
                i = skip_ws(t, len, i + 1);
                for (size_t e = 0; e < elem && i < len; e++) i = skip_ws(t, len, skip_ws(t, len, skip_value(t, len, i)) + 1);
            }
            break;
        }
        i = skip_ws(t, len, skip_value(t, len, i)) + 1; /* past ',' */
    }
    *line = 1;
    *col = 1;
    for (size_t k = 0; k < i && k < len; k++) {
        if (t[k] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)t[k] & 0xC0) != 0x80) {
            ++*col;
        }
    }
}

int wm_match_input_filters(wm_match_input *in, const char *text, size_t len, char *err, size_t cap)
{
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!doc) return fail(err, cap, "%d:%d: invalid JSON: %s", je.line, je.column, je.text);
    int rc = 0;
    if (!json_is_object(doc)) { rc = fail(err, cap, "1:1: expected an object {\"name\": [\"peid\", ...]}"); goto out; }
    const char *name;
    json_t *arr;
    wm_match_str *strs = NULL;
    size_t member = 0, bad_elem = SIZE_MAX;
    json_object_foreach(doc, name, arr) {
        if (!json_is_array(arr)) { rc = fail(err, cap, "neighborhood \"%s\": expected an array of peid strings", name); break; }
        size_t n = json_array_size(arr);
        wm_match_str *ns = realloc(strs, (n ? n : 1) * sizeof *ns);
        if (!ns) { rc = fail(err, cap, "out of memory"); break; }
        strs = ns;
        for (size_t i = 0; i < n && rc == 0; i++) {
            json_t *p = json_array_get(arr, i);
            if (!json_is_string(p) || json_string_length(p) == 0) {
                rc = fail(err, cap, "neighborhood \"%s\": peid %zu is not a non-empty string", name, i + 1);
                bad_elem = i;
            } else {
                strs[i] = (wm_match_str){ json_string_value(p), json_string_length(p) };
            }
        }
        if (rc) break;
        uint32_t id;
        wm_matcher_status st = wm_matcher_nbhd_define(in->m, name, strlen(name), strs, n, &id);
        if (st) { rc = fail(err, cap, "neighborhood \"%s\": %s", name, wm_matcher_status_message(st)); break; }
        member++;
    }
    free(strs);
    if (rc) {
        /* "LINE:COL: " of the value at fault, before the reason */
        unsigned long line, col;
        json_position(text, len, member, bad_elem, &line, &col);
        char why[400];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, cap, "%lu:%lu: %s", line, col, why);
    }
out:
    json_decref(doc);
    return rc;
}

static const char *const sub_keys[] = { "id", "client", "filter", "nbhd", "qos", "no_local", "xpath", NULL };

void wm_match_input_set_content(wm_match_input *in, wm_content *c) { in->content = c; }

int wm_match_input_sub(wm_match_input *in, const char *line, size_t len, long lineno, char *err, size_t cap)
{
    if (blank(line, len)) return 0;
    json_t *o = parse_object(line, len, err, cap);
    if (!o) return -1;
    int rc = -1;
    if (check_keys(o, sub_keys, err, cap)) goto out;
    json_t *id = json_object_get(o, "id"), *client = json_object_get(o, "client"), *filter = json_object_get(o, "filter");
    json_t *nbhd = json_object_get(o, "nbhd"), *qos = json_object_get(o, "qos"), *nl = json_object_get(o, "no_local");
    if (!id || !(json_is_string(id) || json_is_integer(id))) { fail(err, cap, "\"id\" must be a string or an integer"); goto out; }
    if (!client || !json_is_string(client)) { fail(err, cap, "\"client\" must be a string"); goto out; }
    if (!filter || !json_is_string(filter)) { fail(err, cap, "\"filter\" must be a string"); goto out; }
    if (nbhd && !json_is_string(nbhd)) { fail(err, cap, "\"nbhd\" must be a neighborhood name (string)"); goto out; }
    if (qos && (!json_is_integer(qos) || json_integer_value(qos) < 0 || json_integer_value(qos) > 2)) {
        fail(err, cap, "\"qos\" must be 0, 1 or 2"); goto out;
    }
    if (nl && !json_is_boolean(nl)) { fail(err, cap, "\"no_local\" must be true or false"); goto out; }
    json_t *xp = json_object_get(o, "xpath");
    if (xp && !json_is_string(xp)) { fail(err, cap, "\"xpath\" must be an XPath query (string)"); goto out; }
    if (xp && !in->content) { fail(err, cap, "\"xpath\": content filters need a schema registry (wirematch --schemas)"); goto out; }

    char *idtext = json_dumps(id, JSON_ENCODE_ANY);
    if (!idtext) { fail(err, cap, "out of memory"); goto out; }
    json_t *prev = json_object_get(in->seen, idtext);
    if (prev) {
        fail(err, cap, "duplicate \"id\" %s (first on line %ld)", idtext, in->ids[json_integer_value(prev)].line);
        free(idtext); goto out;
    }
    uint32_t nb = WM_NBHD_NONE;
    if (nbhd) {
        nb = wm_matcher_nbhd_find(in->m, json_string_value(nbhd), json_string_length(nbhd));
        if (nb == WM_NBHD_NONE) { fail(err, cap, "\"nbhd\": unknown neighborhood \"%s\"", json_string_value(nbhd)); free(idtext); goto out; }
    }
    if (in->n_ids == in->cap_ids) {
        size_t nc = in->cap_ids ? in->cap_ids * 2 : 1024;
        sub_id *ni = realloc(in->ids, nc * sizeof *ni);
        if (!ni) { fail(err, cap, "out of memory"); free(idtext); goto out; }
        in->ids = ni; in->cap_ids = nc;
    }
    uint32_t slot = 0;
    if (xp) {
        char why[300];
        if (wm_content_ref(in->content, json_string_value(xp), json_string_length(xp), &slot, why, sizeof why)) {
            fail(err, cap, "\"xpath\": %s", why);
            free(idtext); goto out;
        }
    }
    wm_sub_spec spec = {
        .filter = json_string_value(filter), .filter_len = json_string_length(filter),
        .client = json_string_value(client), .client_len = json_string_length(client),
        .nbhd = nb, .qos = qos ? (uint8_t)json_integer_value(qos) : 0, .no_local = nl && json_is_true(nl),
        .content = slot, .cookie = in->n_ids,
    };
    uint32_t sub;
    wm_matcher_error me;
    if (wm_matcher_sub_add(in->m, &spec, &sub, &me) != WM_MATCHER_OK) {
        if (slot) wm_content_unref(in->content, slot);
        if (me.status == WM_MATCHER_E_INVALID_FILTER)
            fail(err, cap, "\"filter\": invalid topic filter: %s [%s] at byte %zu", wm_topic_status_message(me.topic_status),
                 wm_topic_status_name(me.topic_status), me.offset);
        else
            fail(err, cap, "%s [%s]", wm_matcher_status_message(me.status), wm_matcher_status_name(me.status));
        free(idtext); goto out;
    }
    sub_id *s = &in->ids[in->n_ids];
    s->is_int = json_is_integer(id);
    s->num = s->is_int ? json_integer_value(id) : 0;
    s->text = idtext;
    s->line = lineno;
    json_object_set_new(in->seen, idtext, json_integer((json_int_t)in->n_ids));
    in->n_ids++;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

static int cmp_ids(const void *a, const void *b, void *ctx)
{
    const sub_id *ids = ctx;
    const sub_id *x = &ids[*(const size_t *)a], *y = &ids[*(const size_t *)b];
    if (x->is_int != y->is_int) return x->is_int ? -1 : 1;
    if (x->is_int) return x->num < y->num ? -1 : x->num > y->num;
    return strcmp(x->text, y->text);
}

static bool out_put(wm_match_input *in, size_t *k, const char *s)
{
    size_t n = strlen(s);
    if (*k + n + 1 > in->out_cap) {
        size_t nc = (*k + n + 1) * 2;
        char *no = realloc(in->out, nc);
        if (!no) return false;
        in->out = no; in->out_cap = nc;
    }
    memcpy(in->out + *k, s, n + 1);
    *k += n;
    return true;
}

static const char *const pub_keys[] = { "topic", "peids", "client", NULL };

int wm_match_input_pub(wm_match_input *in, const char *line, size_t len, const char **out, char *err, size_t cap)
{
    *out = NULL;
    if (blank(line, len)) return 0;
    /* The reader is registered on first use, so an input built by a
     * control thread and handed to others (control/tables.h) never makes
     * that thread a QSBR reader that would hold grace periods back. */
    if (!in->r && !(in->r = wm_matcher_reader_new(in->m))) return fail(err, cap, "out of memory");
    if (!in->res_subs) {
        in->res_subs = malloc(in->res_cap * sizeof *in->res_subs);
        in->res_members = malloc(in->res_cap * sizeof *in->res_members);
        in->res_groups = malloc(in->groups_cap * sizeof *in->res_groups);
        in->order = malloc(in->res_cap * sizeof *in->order);
        if (!in->res_subs || !in->res_members || !in->res_groups || !in->order) return fail(err, cap, "out of memory");
    }
    json_t *o = parse_object(line, len, err, cap);
    if (!o) return -1;
    int rc = -1;
    if (check_keys(o, pub_keys, err, cap)) goto out;
    json_t *topic = json_object_get(o, "topic"), *peids = json_object_get(o, "peids"), *client = json_object_get(o, "client");
    if (!topic || !json_is_string(topic)) { fail(err, cap, "\"topic\" must be a string"); goto out; }
    if (!peids || !json_is_array(peids)) { fail(err, cap, "\"peids\" must be an array of strings"); goto out; }
    if (client && !json_is_string(client)) { fail(err, cap, "\"client\" must be a string"); goto out; }
    size_t off;
    wm_topic_status ts = wm_topic_name_validate(json_string_value(topic), json_string_length(topic), &off);
    if (ts != WM_TOPIC_OK) {
        fail(err, cap, "\"topic\": invalid topic name: %s [%s] at byte %zu", wm_topic_status_message(ts), wm_topic_status_name(ts), off);
        goto out;
    }
    /* The data plane's and the proxy's rules (peid_props.h): an empty peid
     * is no peid and does not count; more than WM_PEIDS_MAX others (not the
     * matcher's larger WM_MATCH_MAX_PUB_PEIDS) and they deliver the PUBLISH
     * to no one, so no answer here may say otherwise. */
    wm_match_str strs[WM_PEIDS_MAX];
    uint32_t np = 0;
    for (size_t i = 0; i < json_array_size(peids); i++) {
        json_t *p = json_array_get(peids, i);
        if (!json_is_string(p) || json_string_length(p) > 65535) {
            fail(err, cap, "\"peids\"[%zu] must be a string of at most 65,535 bytes", i); goto out;
        }
        if (json_string_length(p) == 0) continue;
        if (!wm_peids_fit(np + 1)) {
            size_t all = np;
            for (size_t j = i; j < json_array_size(peids); j++) all += json_string_length(json_array_get(peids, j)) != 0;
            fail(err, cap, "\"peids\"[%zu]: %zu peids, more than a spatial publish may carry (%u: the data plane and the "
                           "proxy deliver such a PUBLISH to no one, too_many_peids)", i, all, WM_PEIDS_MAX);
            goto out;
        }
        strs[np++] = (wm_match_str){ json_string_value(p), json_string_length(p) };
    }
    wm_match_result res = { in->res_subs, in->res_cap, in->res_members, in->res_cap, in->res_groups, in->groups_cap, 0, 0, 0 };
    wm_matcher_status st = wm_matcher_lookup_str(in->r, json_string_value(topic), json_string_length(topic), strs, np,
                                                 client ? json_string_value(client) : NULL,
                                                 client ? json_string_length(client) : 0, &res);
    if (st) { fail(err, cap, "%s", wm_matcher_status_message(st)); goto out; }
    size_t n = 0;
    for (uint32_t i = 0; i < res.n_subs; i++) in->order[n++] = wm_matcher_sub_cookie(in->m, res.subs[i]);
    for (uint32_t i = 0; i < res.n_members; i++) in->order[n++] = wm_matcher_sub_cookie(in->m, res.members[i]);
    qsort_r(in->order, n, sizeof *in->order, cmp_ids, in->ids);
    size_t k = 0;
    bool ok = out_put(in, &k, "{\"matched\": [");
    for (size_t i = 0; i < n && ok; i++) ok = (i == 0 || out_put(in, &k, ", ")) && out_put(in, &k, in->ids[in->order[i]].text);
    ok = ok && out_put(in, &k, "]}");
    if (!ok) { fail(err, cap, "out of memory"); goto out; }
    wm_matcher_quiescent(in->r);
    *out = in->out;
    rc = 0;
out:
    json_decref(o);
    return rc;
}
