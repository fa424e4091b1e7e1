/* Content filters of a table set: interned XPath texts, their per-schema
 * automata and the reader side (control/content_filters.h). */
#include "control/content_filters.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher/qsbr.h"
#include "matcher/xpath_set.h"

/* A slot's life: LIVE (referenced, validated) -> DEAD (last reference
 * dropped; the published snapshot may still map it to its old text) ->
 * GRACE (a snapshot without it is published; readers may still hold older
 * ones) -> FREE (a grace period later: no reader can map it to the old text
 * any more) -> LIVE again. Without wm_content_reuse_slots a DEAD slot stays
 * DEAD. wm_content_want makes a slot PENDING instead of LIVE: its text is
 * validated by the next job, which makes it LIVE or REFUSED (the reason
 * kept for whoever holds a reference); both go DEAD like LIVE. */
enum { E_LIVE, E_DEAD, E_GRACE, E_FREE, E_PENDING, E_REFUSED };

typedef struct entry {
    char *text;          /* NULL unless LIVE, PENDING or REFUSED */
    uint32_t refs;
    uint32_t hash;
    uint8_t *ok;         /* [n_schemas]: compiles for that schema (LIVE) */
    char *why;           /* REFUSED: the reason */
    uint8_t state;
    bool jobbed;         /* taken by the job in flight */
    bool pub;            /* LIVE and in the published snapshot */
    bool no_room;        /* REFUSED: compiles alone, not with the set (or not tried: the job's builds ran out) */
    uint64_t room_gen;   /* no_room: c->gone when its job began (ROOM_UNTRIED: not tried) */
    uint32_t next_free;  /* FREE: the next free slot, 0 = none */
} entry;

/* One text of a job: its slot, a copy of its text, and which schemas it
 * compiles for (known for a LIVE one; found by the job for a PENDING one). */
typedef struct job_item {
    uint32_t slot;
    char *text;
    uint8_t *ok;         /* [n_schemas] */
    bool validate;       /* PENDING when the job was made */
    bool fresh;          /* not in the published snapshot (PENDING, or LIVE from wm_content_ref) */
    bool in;             /* in the set being built */
    bool no_room;        /* why: valid alone, but not with the texts accepted before it */
    bool untried;        /* no_room, but not tried: the job's set builds ran out */
    char why[300];       /* the refusal's reason, "" if accepted */
} job_item;

struct wm_content_job {
    const wm_schema_reg *reg;
    uint32_t n_slots, ns;
    job_item *it;
    uint32_t n_it;
    uint32_t *dead;      /* slots DEAD when the job was made: out of its snapshot */
    uint32_t n_dead;
    wm_content_snap *snap; /* built by wm_content_job_run, NULL if it failed */
    bool whole;          /* wm_content_commit: all texts or none (no add_fresh) */
    uint64_t gen;        /* c->gone when the job was made */
    uint32_t builds;     /* set builds _run tried */
    char err[300];
    atomic_bool cancel;  /* wm_content_job_cancel: stop at the next text / before the next set build */
    bool cancelled;      /* _run stopped for it: nothing validated is kept */
};

/* A job's no-room isolation stops after WM_CONTENT_JOB_MAX_BUILDS set
 * builds (the first one, of every text, included): each failing one runs
 * the path automaton up to WM_XPF_MAX_STATES (tens of ms, more under
 * sanitizers), and the job holds up every text that came after it. */
#define JOB_MAX_BUILDS WM_CONTENT_JOB_MAX_BUILDS
/* The negative cache: texts proved not to fit, valid while no text has gone. */
#define ROOM_CACHE WM_CONTENT_ROOM_CACHE
#define ROOM_UNTRIED UINT64_MAX

/* A text a job proved not to fit, refused again without a compile while the
 * set it failed against has lost nothing (see "No room"). */
typedef struct room_miss {
    char *text;
    char *why;
    uint32_t hash;
} room_miss;

struct wm_content {
    wm_schema_reg *reg;
    bool owns_reg;
    entry *e;            /* e[slot - 1] */
    uint32_t n, cap, live;
    bool dirty;
    const wm_qsbr_ops *qsbr; /* wm_content_reuse_slots: the readers' grace periods */
    uint32_t max_slots;
    uint32_t free_head;  /* first FREE slot, 0 = none */
    uint32_t n_dead;     /* slots DEAD */
    /* GRACE slots in commit order with the grace-period token taken after
     * the commit that left them out: FIFO, tokens never decrease */
    uint32_t *g_slot;
    uint64_t *g_tok;
    uint32_t g_head, g_n, g_cap;
    wm_content_job *job; /* in flight (wm_content_job_begin .. _end), NULL = none */
    /* texts gone: LIVE or PENDING ones whose last reference was dropped. A
     * set only grows while it does not move, so a text refused for want of
     * room by a job made at generation g cannot fit while gone == g. */
    uint64_t gone;
    room_miss miss[ROOM_CACHE]; /* proved not to fit at generation miss_gen; a ring */
    uint64_t miss_gen;
    uint32_t miss_n, miss_next;
    wm_content_stats st;
    _Atomic(wm_content_snap *) cur;
};

struct wm_content_snap {
    uint64_t id;         /* wm_content_snap_id */
    wm_xpf_set *set;
    const wm_schema_reg *reg;
    uint32_t n_slots, n_schemas, n_q;
    uint32_t *qid;       /* [(slot - 1) * n_schemas + schema]: query id in set, UINT32_MAX: none */
};

struct wm_content_reader {
    const wm_content_snap *s;
    wm_xpf_set_ctx *x;
    uint32_t *cand, *out;  /* [n_q] */
    uint32_t *mark;        /* [n_q]: epoch of the last candidate / pass marking */
    uint32_t epoch;
    bool conflict;         /* the last match: its Content Type's options contradict the payload's header */
    char conflict_why[160];
};

const char *wm_content_outcome_name(enum wm_content_outcome o)
{
    static const char *const names[] = {
#define WM_CONTENT_X_NAME(e, s) s,
        WM_CONTENT_OUTCOMES(WM_CONTENT_X_NAME)
#undef WM_CONTENT_X_NAME
    };
    return (unsigned)o < WM_CONTENT_OUTCOME_COUNT ? names[o] : "?";
}

static uint32_t fnv(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t n_schemas(const wm_content *c) { return c->reg ? c->reg->n : 0; }

#ifdef WM_TEST_HOOKS
static unsigned fail_news; /* test builds only: wm_content_fail_news */

void wm_content_fail_news(unsigned n) { fail_news = n; }
#endif

/* A new table's memory; in test builds NULL while failures are asked for. */
static wm_content *table_alloc(void)
{
#ifdef WM_TEST_HOOKS
    if (fail_news) {
        fail_news--;
        return NULL;
    }
#endif
    return calloc(1, sizeof(wm_content));
}

wm_content *wm_content_new(wm_schema_reg *reg)
{
    wm_content *c = table_alloc();
    if (!c) {
        wm_schema_reg_free(reg);
        return NULL;
    }
    c->reg = reg;
    c->owns_reg = true;
    c->dirty = true;
    c->max_slots = WM_CONTENT_MAX_SLOTS;
    return c;
}

wm_content *wm_content_new_borrowed(const wm_schema_reg *reg)
{
    wm_content *c = table_alloc();
    if (!c) return NULL;
    c->reg = (wm_schema_reg *)reg;
    c->dirty = true;
    c->max_slots = WM_CONTENT_MAX_SLOTS;
    return c;
}

void wm_content_snap_free(wm_content_snap *s)
{
    if (!s) return;
    wm_xpf_set_free(s->set);
    free(s->qid);
    free(s);
}

/* Forgets the texts proved not to fit (texts have gone since). */
static void miss_clear(wm_content *c)
{
    for (uint32_t i = 0; i < c->miss_n; i++) {
        free(c->miss[i].text);
        free(c->miss[i].why);
    }
    c->miss_n = c->miss_next = 0;
    c->miss_gen = c->gone;
}

void wm_content_free(wm_content *c)
{
    if (!c) return;
    miss_clear(c);
    wm_content_snap_free(atomic_load(&c->cur));
    for (uint32_t i = 0; i < c->n; i++) {
        free(c->e[i].text);
        free(c->e[i].ok);
        free(c->e[i].why);
    }
    free(c->e);
    free(c->g_slot);
    free(c->g_tok);
    if (c->owns_reg) wm_schema_reg_free(c->reg);
    free(c);
}

const wm_schema_reg *wm_content_registry(const wm_content *c) { return c->reg; }
uint32_t wm_content_count(const wm_content *c) { return c->live; }

const char *wm_content_text(const wm_content *c, uint32_t slot)
{
    return slot >= 1 && slot <= c->n ? c->e[slot - 1].text : NULL;
}

/* Compiles text alone for every schema: which ones accept it, and the first
 * refusal's reason. */
static bool validate(const wm_content *c, const char *text, uint8_t *ok, char *err, size_t errlen)
{
    bool any = false;
    err[0] = 0;
    for (uint32_t k = 0; k < n_schemas(c); k++) {
        const wm_schema_reg_entry *re = &c->reg->e[k];
        wm_xpf *f = NULL;
        wm_xpf_error fe;
        wm_xpf_status st = wm_xpf_compile(re->g, &text, 1, re->ns, re->n_ns, &f, &fe);
        wm_xpf_free(f);
        ok[k] = st == WM_XPF_OK;
        any |= ok[k];
        if (!ok[k] && !err[0]) {
            if (fe.pos) snprintf(err, errlen, "schema %s: position %u: %s", re->name, fe.pos, fe.msg);
            else snprintf(err, errlen, "schema %s: %s", re->name, fe.msg);
        }
    }
    return any;
}

void wm_content_reuse_slots(wm_content *c, const wm_qsbr_ops *ops, uint32_t max_slots)
{
    c->qsbr = ops;
    if (max_slots > WM_CONTENT_MAX_SLOTS) max_slots = WM_CONTENT_MAX_SLOTS;
    c->max_slots = max_slots > c->n ? max_slots : c->n;
}

size_t wm_content_reclaim(wm_content *c, bool wait)
{
    size_t k = 0;
    if (!c->g_n) return 0;
    if (wait) c->qsbr->check(c->qsbr->ctx, c->g_tok[c->g_head + c->g_n - 1], true);
    while (c->g_n && c->qsbr->check(c->qsbr->ctx, c->g_tok[c->g_head], false)) {
        uint32_t s = c->g_slot[c->g_head++];
        c->g_n--;
        c->e[s - 1].state = E_FREE;
        c->e[s - 1].next_free = c->free_head;
        c->free_head = s;
        k++;
    }
    if (!c->g_n) c->g_head = 0;
    return k;
}

/* Queues slot s for the grace period of token tok. */
static int grace_push(wm_content *c, uint32_t s, uint64_t tok)
{
    if (c->g_head + c->g_n == c->g_cap) {
        if (c->g_head) { /* slide the waiting part down before growing */
            memmove(c->g_slot, c->g_slot + c->g_head, c->g_n * sizeof *c->g_slot);
            memmove(c->g_tok, c->g_tok + c->g_head, c->g_n * sizeof *c->g_tok);
            c->g_head = 0;
        }
        if (c->g_n == c->g_cap) {
            uint32_t nc = c->g_cap ? 2 * c->g_cap : 16;
            uint32_t *ns = realloc(c->g_slot, nc * sizeof *ns);
            if (ns) c->g_slot = ns;
            uint64_t *nt = realloc(c->g_tok, nc * sizeof *nt);
            if (nt) c->g_tok = nt;
            if (!ns || !nt) return -1;
            c->g_cap = nc;
        }
    }
    c->g_slot[c->g_head + c->g_n] = s;
    c->g_tok[c->g_head + c->g_n] = tok;
    c->g_n++;
    return 0;
}

uint32_t wm_content_slots(const wm_content *c) { return c->n; }

/* A slot is available (FREE, or never used below the bound), after
 * collecting the slots whose grace period is known to have passed: first,
 * so that the table stays as small as its live texts even when no job
 * reclaims (refused texts come and go without one). */
static bool slot_available(wm_content *c)
{
    if (!c->free_head && c->g_n) wm_content_reclaim(c, false);
    return c->free_head || c->n < c->max_slots;
}

/* The slot holding text[0..len) (LIVE, PENDING or REFUSED), 0 if none. */
static uint32_t find(const wm_content *c, const char *xpath, size_t len, uint32_t h)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->e[i].text && c->e[i].hash == h && strlen(c->e[i].text) == len && !memcmp(c->e[i].text, xpath, len))
            return i + 1;
    return 0;
}

uint32_t wm_content_find(const wm_content *c, const char *xpath, size_t len)
{
    return find(c, xpath, len, fnv(xpath, len));
}

/* Checks what every reference needs; -1 with the reason if refused. */
static int check_text(const wm_content *c, const char *xpath, size_t len, char *err, size_t errlen)
{
    if (!n_schemas(c)) {
        snprintf(err, errlen, "no schema registry is loaded (--schemas), so no content filter can be bound");
        return -1;
    }
    if (len == 0 || len > WM_CONTENT_MAX_TEXT || memchr(xpath, 0, len)) {
        snprintf(err, errlen, len ? "the XPath text is longer than %u bytes or contains NUL" : "empty XPath query",
                 WM_CONTENT_MAX_TEXT);
        return -1;
    }
    return 0;
}

/* A new entry for text[0..len) in a free or unused slot, in state st (ok
 * may be NULL for PENDING). Returns the slot, or 0 (err set: -2 in *rc
 * when every slot is taken, -1 out of memory). */
static uint32_t new_entry(wm_content *c, const char *xpath, size_t len, uint32_t h, uint8_t st, uint8_t *ok,
                          int *rc, char *err, size_t errlen)
{
    if (!slot_available(c)) {
        bool waiting = c->qsbr && (c->g_n || c->n_dead);
        snprintf(err, errlen, "all %u content-filter slots are %s", c->n,
                 waiting ? "live or waiting for a grace period" : "live or were used since the tables were loaded");
        *rc = waiting ? -2 : -1;
        return 0;
    }
    char *text = malloc(len + 1);
    if (!text || (!c->free_head && c->n == c->cap)) {
        uint32_t nc = c->cap ? c->cap * 2 : 16;
        entry *ne = text ? realloc(c->e, nc * sizeof *ne) : NULL;
        if (!ne) {
            free(text);
            snprintf(err, errlen, "out of memory");
            *rc = -1;
            return 0;
        }
        c->e = ne;
        c->cap = nc;
    }
    memcpy(text, xpath, len);
    text[len] = 0;
    uint32_t s = c->free_head;
    if (s) c->free_head = c->e[s - 1].next_free;
    else s = ++c->n;
    c->e[s - 1] = (entry){ .text = text, .refs = 1, .hash = h, .ok = ok, .state = st };
    c->live++;
    c->dirty = true;
    return s;
}

/* A text refused for want of room in the set is tried again by the next
 * job when someone wants it again, if texts have gone since its job began
 * (or it was not tried); until then the set it failed against only grew. */
static void retry_no_room(wm_content *c, entry *e)
{
    if (e->state != E_REFUSED || !e->no_room) return;
    if (e->room_gen == c->gone) {   /* refused again, no compile */
        c->st.room_cached++;
        return;
    }
    free(e->why);
    e->why = NULL;
    e->no_room = false;
    e->state = E_PENDING;
    c->dirty = true;
}

/* The reason text[0..len) was proved not to fit by a job made at the
 * current generation, NULL if it was not (or texts have gone since). */
static const char *miss_find(wm_content *c, const char *xpath, size_t len, uint32_t h)
{
    if (c->miss_gen != c->gone) miss_clear(c);
    for (uint32_t i = 0; i < c->miss_n; i++) {
        const room_miss *m = &c->miss[i];
        if (m->hash == h && strlen(m->text) == len && !memcmp(m->text, xpath, len)) return m->why;
    }
    return NULL;
}

/* Remembers that a job made at generation gen proved text not to fit. */
static void miss_add(wm_content *c, const char *text, const char *why, uint32_t h, uint64_t gen)
{
    if (gen != c->gone) return;   /* texts have gone since its job began: it may fit now */
    if (c->miss_gen != c->gone) miss_clear(c);
    size_t len = strlen(text);
    if (miss_find(c, text, len, h)) return;
    char *t = strdup(text), *w = strdup(why);
    if (!t || !w) {
        free(t);
        free(w);
        return;
    }
    room_miss *m = &c->miss[c->miss_next];
    if (c->miss_n == ROOM_CACHE) {   /* full: the oldest goes */
        free(m->text);
        free(m->why);
    } else {
        c->miss_n++;
    }
    *m = (room_miss){ t, w, h };
    c->miss_next = (c->miss_next + 1) % ROOM_CACHE;
}

/* Validates a PENDING entry now (LIVE or REFUSED); 0 if it is LIVE. */
static int settle(wm_content *c, entry *e, char *err, size_t errlen)
{
    retry_no_room(c, e);
    if (e->state == E_PENDING) {
        uint8_t *ok = calloc(n_schemas(c), 1);
        char why[300];
        if (!ok) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (validate(c, e->text, ok, why, sizeof why)) {
            e->ok = ok;
            e->state = E_LIVE;
        } else {
            free(ok);
            e->why = strdup(why);
            e->state = E_REFUSED;
        }
    }
    if (e->state == E_REFUSED) {
        snprintf(err, errlen, "%s", e->why ? e->why : "out of memory");
        return -1;
    }
    return 0;
}

int wm_content_ref(wm_content *c, const char *xpath, size_t len, uint32_t *slot, char *err, size_t errlen)
{
    *slot = 0;
    if (check_text(c, xpath, len, err, errlen)) return -1;
    uint32_t h = fnv(xpath, len), s = find(c, xpath, len, h);
    if (s) {
        if (settle(c, &c->e[s - 1], err, errlen)) return -1;
        c->e[s - 1].refs++;
        *slot = s;
        return 0;
    }
    const char *miss = miss_find(c, xpath, len, h);
    if (miss) {
        c->st.room_cached++;
        snprintf(err, errlen, "%s", miss);
        return -1;
    }
    uint8_t *ok = calloc(n_schemas(c), 1);
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* validated before it takes a slot: a refused text leaves nothing behind */
    char text[WM_CONTENT_MAX_TEXT + 1];
    memcpy(text, xpath, len);
    text[len] = 0;
    if (!validate(c, text, ok, err, errlen)) {
        free(ok);
        return -1;
    }
    int rc = 0;
    if (!(s = new_entry(c, xpath, len, h, E_LIVE, ok, &rc, err, errlen))) {
        free(ok);
        return rc;
    }
    *slot = s;
    return 0;
}

int wm_content_want(wm_content *c, const char *xpath, size_t len, uint32_t *slot, char *err, size_t errlen)
{
    *slot = 0;
    if (check_text(c, xpath, len, err, errlen)) return -1;
    uint32_t h = fnv(xpath, len), s = find(c, xpath, len, h);
    if (s) {
        retry_no_room(c, &c->e[s - 1]);
        c->e[s - 1].refs++;
        *slot = s;
        return 0;
    }
    int rc = 0;
    const char *miss = miss_find(c, xpath, len, h);
    char *why = miss ? strdup(miss) : NULL;
    if (miss && !why) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    bool dirty = c->dirty;
    if (!(s = new_entry(c, xpath, len, h, miss ? E_REFUSED : E_PENDING, NULL, &rc, err, errlen))) {
        free(why);
        return rc;
    }
    if (miss) {   /* refused at once, nothing to compile */
        entry *e = &c->e[s - 1];
        e->why = why;
        e->no_room = true;
        e->room_gen = c->gone;
        c->dirty = dirty;
        c->st.room_cached++;
    }
    *slot = s;
    return 0;
}

enum wm_content_state wm_content_state(const wm_content *c, uint32_t slot, const char **why)
{
    *why = NULL;
    if (slot < 1 || slot > c->n || !c->e[slot - 1].text) return WM_CONTENT_S_NONE;
    const entry *e = &c->e[slot - 1];
    if (e->state == E_REFUSED) {
        *why = e->why ? e->why : "out of memory";
        return WM_CONTENT_S_REFUSED;
    }
    return e->state == E_LIVE && e->pub ? WM_CONTENT_S_READY : WM_CONTENT_S_PENDING;
}

bool wm_content_no_room(const wm_content *c, uint32_t slot)
{
    return slot >= 1 && slot <= c->n && c->e[slot - 1].state == E_REFUSED && c->e[slot - 1].no_room;
}

void wm_content_unref(wm_content *c, uint32_t slot)
{
    if (slot < 1 || slot > c->n || !c->e[slot - 1].text) return;
    entry *e = &c->e[slot - 1];
    if (--e->refs) return;
    /* a text that may be in a set: its going may make room */
    if (e->state == E_LIVE || e->state == E_PENDING) c->gone++;
    free(e->text);
    free(e->ok);
    free(e->why);
    e->text = NULL;
    e->ok = NULL;
    e->why = NULL;
    c->live--;
    /* In no snapshot ever (not published, not in the job in flight: e.g. a
     * refused text): no compile is needed to leave it out, only the grace
     * period of whoever may still hold a subscription with the slot. */
    bool in_a_set = e->pub || e->jobbed;
    if (!in_a_set && c->qsbr && grace_push(c, slot, c->qsbr->start(c->qsbr->ctx)) == 0) {
        e->state = E_GRACE;
        return;
    }
    e->state = E_DEAD;
    e->pub = false;
    c->n_dead++;
    if (in_a_set) c->dirty = true;
}

/* ------------------------------------------------------------ jobs */

static void job_free(wm_content_job *j)
{
    if (!j) return;
    for (uint32_t i = 0; i < j->n_it; i++) {
        free(j->it[i].text);
        free(j->it[i].ok);
    }
    free(j->it);
    free(j->dead);
    wm_content_snap_free(j->snap);
    free(j);
}

wm_content_job *wm_content_job_begin(wm_content *c, int *rc)
{
    *rc = c->job ? -1 : 0;
    if (c->job || !c->dirty) return NULL;
    *rc = -1;
    wm_content_job *j = calloc(1, sizeof *j);
    uint32_t ns = n_schemas(c);
    if (!j || !(j->it = calloc(c->live ? c->live : 1, sizeof *j->it)) ||
        !(j->dead = malloc((c->n_dead ? c->n_dead : 1) * sizeof *j->dead)))
        goto nomem;
    j->reg = c->reg;
    j->gen = c->gone;
    j->n_slots = c->n;
    j->ns = ns;
    for (uint32_t i = 0; i < c->n; i++) {
        entry *e = &c->e[i];
        if (e->state == E_DEAD) j->dead[j->n_dead++] = i + 1;
        if (e->state != E_LIVE && e->state != E_PENDING) continue;
        job_item *it = &j->it[j->n_it++];
        it->slot = i + 1;
        it->validate = e->state == E_PENDING;
        it->fresh = !e->pub;
        if (!(it->text = strdup(e->text)) || !(it->ok = calloc(ns ? ns : 1, 1))) goto nomem;
        if (!it->validate) memcpy(it->ok, e->ok, ns);
    }
    for (uint32_t k = 0; k < j->n_it; k++) c->e[j->it[k].slot - 1].jobbed = true;
    c->job = j;
    c->dirty = false;
    *rc = 0;
    return j;
nomem:
    job_free(j);
    return NULL;
}

/* The snapshot of the job's texts marked `in`, per schema in one
 * automaton; NULL with the reason in fe (*nomem: out of memory). Counted
 * in j->builds. */
static wm_content_snap *build(wm_content_job *j, wm_xpf_error *fe, bool *nomem)
{
    j->builds++;
    uint32_t ns = j->ns, nq = 0;
    for (uint32_t i = 0; i < j->n_it; i++)
        for (uint32_t k = 0; j->it[i].in && k < ns; k++) nq += j->it[i].ok[k];
    wm_content_snap *s = calloc(1, sizeof *s);
    wm_xpf_schema *sch = calloc(ns ? ns : 1, sizeof *sch);
    wm_xpf_query_def *defs = malloc((nq ? nq : 1) * sizeof *defs);
    size_t nmap = (size_t)j->n_slots * ns;
    *nomem = !s || !sch || !defs || !(s->qid = malloc((nmap ? nmap : 1) * sizeof *s->qid));
    if (*nomem) {
        snprintf(fe->msg, sizeof fe->msg, "out of memory");
        goto fail;
    }
    static atomic_uint_fast64_t ids;
    s->id = atomic_fetch_add_explicit(&ids, 1, memory_order_relaxed) + 1;
    s->reg = j->reg;
    s->n_slots = j->n_slots;
    s->n_schemas = ns;
    s->n_q = nq;
    if (ns) wm_schema_reg_schemas(j->reg, sch);
    for (size_t m = 0; m < nmap; m++) s->qid[m] = UINT32_MAX;
    uint32_t q = 0;
    for (uint32_t i = 0; i < j->n_it; i++)
        for (uint32_t k = 0; j->it[i].in && k < ns; k++) {
            if (!j->it[i].ok[k]) continue;
            defs[q] = (wm_xpf_query_def){ k, j->it[i].text };
            s->qid[(size_t)(j->it[i].slot - 1) * ns + k] = q++;
        }
    wm_xpf_status st = wm_xpf_set_build(sch, ns, defs, nq, &s->set, fe);
    *nomem = st == WM_XPF_E_MEMORY;
    if (st != WM_XPF_OK) goto fail;
    free(sch);
    free(defs);
    return s;
fail:
    free(sch);
    free(defs);
    wm_content_snap_free(s);
    return NULL;
}

/* Has the job been cancelled (wm_content_job_cancel)? Then it ends with
 * nothing built. */
static bool job_cancelled(wm_content_job *j)
{
    if (!atomic_load_explicit(&j->cancel, memory_order_relaxed)) return false;
    wm_content_snap_free(j->snap);
    j->snap = NULL;
    j->cancelled = true;
    snprintf(j->err, sizeof j->err, "the compile was cancelled");
    return true;
}

/* Refuses fresh text it: valid alone, but no room (untried: not tried, the
 * job's builds ran out), with the reason. */
static void refuse_no_room(wm_content_job *j, job_item *it, bool untried, const char *msg)
{
    uint32_t before = 0;
    for (uint32_t i = 0; i < j->n_it; i++) before += j->it[i].in;
    it->no_room = true;
    it->untried = untried;
    if (untried)
        snprintf(it->why, sizeof it->why, "not compiled: this compile of the content filters spent its %u set "
                 "builds finding the texts that do not fit together with the %u accepted (WM_XPF_MAX_STATES); "
                 "try again later", JOB_MAX_BUILDS, before);
    else
        snprintf(it->why, sizeof it->why, "it compiles alone, but not together with the content filters "
                 "accepted before it (%u): %s", before, msg);
}

/* The set does not compile with every fresh text (fe: why): starting from
 * the published texts (they compiled together, and dropping texts never
 * makes a set larger), the fresh ones are added in slot order, a run at a
 * time, so a text is refused (no room) only for the texts accepted before
 * it, never for one that comes with it or after it. A run that does not
 * compile is halved down to the one text that does not fit; after a
 * refusal the next run is as long as the last tried, after a run that fit
 * twice as long; a run is never as long as a prefix already known not to
 * fit. So r refusals among n fresh texts cost at most about
 * log2(n) + n + r builds (each build accepts a run, halves one or refuses a
 * text; halvings are at most log2(n) plus the doublings), and n texts that
 * all fail about n + log2(n). At most JOB_MAX_BUILDS builds in all: the
 * last one tries every text left at once, and if they do not fit either
 * they are refused untried (no room; tried again when wanted). */
static void add_fresh(wm_content_job *j, const wm_xpf_error *whole)
{
    wm_xpf_error fe, last = *whole;   /* last: the reason of the last set that did not fit */
    bool nomem;
    uint32_t nc = 0, *cand = malloc((j->n_it ? j->n_it : 1) * sizeof *cand);
    if (!cand) {
        snprintf(j->err, sizeof j->err, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < j->n_it; i++)
        if (j->it[i].fresh && j->it[i].in) {
            j->it[i].in = false;
            cand[nc++] = i;
        }
    if (!(j->snap = build(j, &fe, &nomem))) {
        snprintf(j->err, sizeof j->err, nomem ? "out of memory" : "content filters do not compile together: %s",
                 fe.msg);
        nc = 0;
    }
    /* known: the accepted texts with cand[at .. at + known) do not fit
     * (UINT32_MAX: nothing known); the first build of the job tried them all */
    uint32_t at = 0, known = nc, run = nc;
    while (j->snap && at < nc) {
        if (job_cancelled(j)) break;
        if (known == 1) {   /* cand[at] alone does not fit */
            refuse_no_room(j, &j->it[cand[at++]], false, last.msg);
            known = UINT32_MAX;
            continue;
        }
        if (run >= known) run = known / 2;
        if (run > nc - at) run = nc - at;
        if (j->builds >= JOB_MAX_BUILDS) {
            while (at < nc) refuse_no_room(j, &j->it[cand[at++]], true, NULL);
            break;
        }
        if (j->builds + 1 == JOB_MAX_BUILDS && nc - at < known) run = nc - at;   /* the last build: all the rest */
        for (uint32_t k = at; k < at + run; k++) j->it[cand[k]].in = true;
        wm_content_snap *s = build(j, &fe, &nomem);
        if (s) {
            wm_content_snap_free(j->snap);
            j->snap = s;
            at += run;
            if (known != UINT32_MAX) known -= run;
            run = run > nc / 2 ? nc : 2 * run;
            continue;
        }
        for (uint32_t k = at; k < at + run; k++) j->it[cand[k]].in = false;
        if (nomem) {
            snprintf(j->err, sizeof j->err, "out of memory");
            wm_content_snap_free(j->snap);
            j->snap = NULL;
        }
        known = run;
        last = fe;
    }
    free(cand);
}

/* Builds the job's snapshot: its PENDING texts validated, then every
 * accepted text, per schema, in one automaton (add_fresh if they do not
 * compile together). Touches nothing but the job and the (immutable)
 * registry. */
void wm_content_job_run(wm_content_job *j)
{
    wm_content table = { .reg = (wm_schema_reg *)j->reg };
    for (uint32_t i = 0; i < j->n_it; i++) {
        job_item *it = &j->it[i];
        if (it->validate && job_cancelled(j)) return;
        if (it->validate && !validate(&table, it->text, it->ok, it->why, sizeof it->why)) continue;
        if (it->validate) it->why[0] = 0;
        it->in = true;
    }
    /* a set build is one Hyperscan compile: it cannot stop once started */
    if (job_cancelled(j)) return;
    wm_xpf_error fe;
    bool nomem;
    if ((j->snap = build(j, &fe, &nomem))) return;
    if (nomem) snprintf(j->err, sizeof j->err, "out of memory");
    else if (j->whole) snprintf(j->err, sizeof j->err, "content filters do not compile together: %s", fe.msg);
    else add_fresh(j, &fe);
}

void wm_content_job_cancel(wm_content_job *j)
{
    atomic_store_explicit(&j->cancel, true, memory_order_relaxed);
}

void wm_content_job_drop(wm_content *c)
{
    const wm_content_job *j = c->job;
    for (uint32_t i = 0; j && i < j->n_it; i++) c->e[j->it[i].slot - 1].jobbed = false;
    c->job = NULL;
    c->dirty = true;   /* what it took (pending texts, dead slots) goes into the next job */
}

bool wm_content_job_stale(const wm_content *c)
{
    const wm_content_job *j = c->job;
    bool any = false;
    for (uint32_t i = 0; j && i < j->n_it; i++) {
        if (!j->it[i].validate) continue;
        if (c->e[j->it[i].slot - 1].state == E_PENDING) return false;
        any = true;
    }
    return any;
}

int wm_content_job_end(wm_content *c, wm_content_job *j, wm_content_snap **old, char *err, size_t errlen)
{
    *old = NULL;
    c->job = NULL;
    c->st.jobs++;
    c->st.builds += j->builds;
    if (j->builds > c->st.builds_max) c->st.builds_max = j->builds;
    for (uint32_t i = 0; i < j->n_it; i++) {
        job_item *it = &j->it[i];
        entry *e = &c->e[it->slot - 1];
        e->jobbed = false;
        if (j->cancelled) continue;   /* nothing decided: its texts go to the next job */
        if (it->no_room && j->snap) {
            if (it->untried) c->st.room_untried++;
            else c->st.room_refused++;
            /* proved not to fit: refused without a compile until texts go */
            if (!it->untried) miss_add(c, it->text, it->why, fnv(it->text, strlen(it->text)), j->gen);
        }
        /* LIVE by wm_content_ref, but no room in the set: refused like a PENDING one */
        if (e->state == E_LIVE && it->no_room && j->snap) {
            free(e->ok);
            e->ok = NULL;
            e->state = E_PENDING;
        }
        /* still PENDING (a reference left, not validated meanwhile by wm_content_ref) */
        if (e->state != E_PENDING) continue;
        if (it->why[0] || !j->snap) {
            e->why = strdup(it->why[0] ? it->why : j->err);
            e->no_room = it->no_room && j->snap;
            e->room_gen = it->untried ? ROOM_UNTRIED : j->gen;
            e->state = E_REFUSED;
        } else {
            e->ok = it->ok;
            it->ok = NULL;
            e->state = E_LIVE;
        }
    }
    if (!j->snap) {
        /* the published snapshot stays; what the job took is refused (or,
         * cancelled, left PENDING), the rest is tried again by the next job */
        snprintf(err, errlen, "%s", j->err);
        c->dirty = true;
        job_free(j);
        return -1;
    }
    for (uint32_t i = 0; i < c->n; i++) c->e[i].pub = false;
    for (uint32_t i = 0; i < j->n_it; i++) {
        entry *e = &c->e[j->it[i].slot - 1];
        e->pub = e->state == E_LIVE && !j->it[i].why[0];
    }
    *old = atomic_exchange_explicit(&c->cur, j->snap, memory_order_acq_rel);
    j->snap = NULL;
    /* the slots DEAD when the job was made are in no snapshot from now on;
     * readers may still hold older ones for a grace period */
    uint64_t tok = c->qsbr && j->n_dead ? c->qsbr->start(c->qsbr->ctx) : 0;
    for (uint32_t i = 0; tok && i < j->n_dead; i++) {
        uint32_t s = j->dead[i];
        if (c->e[s - 1].state == E_DEAD && grace_push(c, s, tok) == 0) { /* out of memory: stays DEAD */
            c->e[s - 1].state = E_GRACE;
            c->n_dead--;
        }
    }
    job_free(j);
    return 0;
}

void wm_content_job_free(wm_content_job *j) { job_free(j); }

void wm_content_get_stats(const wm_content *c, wm_content_stats *out) { *out = c->st; }

int wm_content_commit(wm_content *c, wm_content_snap **old, char *err, size_t errlen)
{
    *old = NULL;
    int rc;
    wm_content_job *j = wm_content_job_begin(c, &rc);
    if (!j) {
        if (rc) snprintf(err, errlen, c->job ? "a compile of the table is in flight" : "out of memory");
        return rc;
    }
    j->whole = true;
    wm_content_job_run(j);
    return wm_content_job_end(c, j, old, err, errlen);
}

uint64_t wm_content_snap_id(const wm_content_snap *s) { return s ? s->id : 0; }

const wm_content_snap *wm_content_current(const wm_content *c)
{
    return atomic_load_explicit(&((wm_content *)c)->cur, memory_order_acquire);
}

wm_content_reader *wm_content_reader_new(const wm_content_snap *s, const wm_exi_limits *lim)
{
    wm_content_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->s = s;
    size_t n = s->n_q ? s->n_q : 1;
    r->cand = malloc(n * sizeof *r->cand);
    r->out = malloc(n * sizeof *r->out);
    r->mark = calloc(n, sizeof *r->mark);
    /* a payload is one document: bytes after it make it invalid, never a match */
    wm_exi_limits l = lim ? *lim : (wm_exi_limits){ 0 };
    l.whole_buffer = true;
    r->x = wm_xpf_set_ctx_new(s->set, &l);
    if (!r->cand || !r->out || !r->mark || !r->x) {
        wm_content_reader_free(r);
        return NULL;
    }
    wm_xpf_set_ctx_set_whole_stream(r->x, true);
    return r;
}

void wm_content_reader_free(wm_content_reader *r)
{
    if (!r) return;
    wm_xpf_set_ctx_free(r->x);
    free(r->cand);
    free(r->out);
    free(r->mark);
    free(r);
}

/* The query id of slot for schema k in the reader's snapshot. */
static uint32_t qid_of(const wm_content_snap *s, uint32_t slot, uint32_t k)
{
    return slot >= 1 && slot <= s->n_slots ? s->qid[(size_t)(slot - 1) * s->n_schemas + k] : UINT32_MAX;
}

bool wm_content_snap_has(const wm_content_snap *s, uint32_t slot)
{
    if (!s) return false;
    for (uint32_t k = 0; k < s->n_schemas; k++)
        if (qid_of(s, slot, k) != UINT32_MAX) return true;
    return false;
}

static uint32_t next_epoch(wm_content_reader *r)
{
    if (++r->epoch == 0) {
        memset(r->mark, 0, (r->s->n_q ? r->s->n_q : 1) * sizeof *r->mark);
        r->epoch = 1;
    }
    return r->epoch;
}

enum wm_content_outcome wm_content_match(wm_content_reader *r, const char *ct, size_t ct_len, const uint8_t *payload,
                                         size_t len, const uint32_t *slots, uint32_t n, bool *pass,
                                         wm_exi_error *exi_err)
{
    const wm_content_snap *s = r->s;
    for (uint32_t i = 0; i < n; i++) pass[i] = false;
    if (!ct) return WM_CONTENT_NO_CONTENT_TYPE;
    uint32_t k;
    wm_exi_options oob;
    wm_exi_oob ct_ov;
    r->conflict = false;
    exi_err->status = WM_EXI_E_OPTIONS;
    exi_err->bit_pos = 0;
    wm_exi_ct_status cs = wm_schema_reg_bind(s->reg, ct, ct_len, &k, &oob, &ct_ov, exi_err->msg, sizeof exi_err->msg);
    if (cs == WM_EXI_CT_NOT_EXI) return WM_CONTENT_NOT_EXI;
    if (cs == WM_EXI_CT_BAD) return WM_CONTENT_BAD_CONTENT_TYPE;
    if (k == UINT32_MAX || k >= s->n_schemas) return WM_CONTENT_UNKNOWN_SCHEMA;
    exi_err->status = WM_EXI_OK;
    exi_err->msg[0] = 0;
    uint32_t ep = next_epoch(r), nc = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t q = qid_of(s, slots[i], k);
        if (q == UINT32_MAX || r->mark[q] == ep) continue;
        r->mark[q] = ep;
        r->cand[nc++] = q;
    }
    if (!nc) return WM_CONTENT_NOT_APPLICABLE;
    /* The header wins (§5.4, README "Out-of-band EXI options"); a
     * contradiction is only noted, for the caller to count and report. */
    r->conflict = wm_exi_oob_header_conflict(&ct_ov, payload, len, r->conflict_why, sizeof r->conflict_why) != 0;
    uint32_t nout = 0;
    wm_xpf_status st = wm_xpf_set_match(r->x, k, payload, len, &oob, r->cand, nc, r->out, &nout, exi_err);
    if (st == WM_XPF_E_DECODE) return WM_CONTENT_DECODE_ERROR;
    if (st != WM_XPF_OK) {
        exi_err->status = WM_EXI_E_LENGTH;
        snprintf(exi_err->msg, sizeof exi_err->msg, "a value is too large for the content filter");
        return WM_CONTENT_TOO_LARGE;
    }
    ep = next_epoch(r);
    for (uint32_t i = 0; i < nout; i++) r->mark[r->out[i]] = ep;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t q = qid_of(s, slots[i], k);
        pass[i] = q != UINT32_MAX && r->mark[q] == ep;
    }
    return WM_CONTENT_OK;
}

const char *wm_content_reader_conflict(const wm_content_reader *r)
{
    return r->conflict ? r->conflict_why : NULL;
}
