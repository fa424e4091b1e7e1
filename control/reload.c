/* Hot reload of the match tables (see control/reload.h).
 *
 * Why a fresh matcher per load and not a batch against the live one: a
 * batch is applied op by op (matcher.h), so readers would see a mix of old
 * and new subscriptions; and an error half-way would need an undo. A fresh
 * set is invisible until one pointer store, and dropping it undoes it.
 *
 * Lifetime of a replaced set ("generation"): a reader attaches to the
 * generation it loads from rl->cur by incrementing its attach count while
 * online, i.e. before its next quiescent state. So once a grace period has
 * passed since the generation stopped being current, no reader can attach
 * to it any more, and when its count then reads 0 nobody uses it: free. */
#include "control/reload.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct gen {
    wm_tables *t;
    uint32_t readers;   /* atomic: readers attached */
    bool grace_done;    /* writer: a grace period passed since it was replaced */
    struct gen *next;   /* writer: retired list */
} gen;

struct wm_reload {
    wm_matcher_config cfg;
    gen *cur;           /* atomic: published with release, read with acquire */
    gen *retired;
    uint64_t generation;
    wm_retire retire;   /* grace periods, matcher/qsbr.h */
};

struct wm_reload_reader {
    wm_reload *rl;
    unsigned qidx;
    gen *g;
    wm_matcher_reader *mr;
};

wm_reload *wm_reload_new(const wm_matcher_config *cfg)
{
    wm_reload *rl = calloc(1, sizeof *rl);
    if (!rl) return NULL;
    if (cfg) rl->cfg = *cfg;
    if (!rl->cfg.qsbr) rl->cfg.qsbr = wm_qsbr_urcu();
    wm_retire_init(&rl->retire, rl->cfg.qsbr);
    return rl;
}

static void gen_free(gen *g)
{
    wm_tables_free(g->t);
    free(g);
}

void wm_reload_free(wm_reload *rl)
{
    if (!rl) return;
    wm_retire_fini(&rl->retire);
    for (gen *g = rl->retired, *n; g; g = n) { n = g->next; gen_free(g); }
    if (rl->cur) gen_free(rl->cur);
    free(rl);
}

static void grace_passed(void *ctx, uint64_t arg)
{
    (void)arg;
    ((gen *)ctx)->grace_done = true;
}

size_t wm_reload_reclaim(wm_reload *rl, bool wait)
{
    wm_retire_reclaim(&rl->retire, wait);
    size_t left = 0;
    for (gen **p = &rl->retired; *p;) {
        gen *g = *p;
        if (g->grace_done && __atomic_load_n(&g->readers, __ATOMIC_ACQUIRE) == 0) {
            *p = g->next;
            gen_free(g);
        } else {
            p = &g->next;
            left++;
        }
    }
    return left;
}

int wm_reload_load(wm_reload *rl, const char *resolution_path, const char *subs_path, wm_load_error *err)
{
    wm_tables *t = wm_tables_compile(&rl->cfg, resolution_path, subs_path, err);
    if (!t) return -1;
    if (wm_reload_publish(rl, t) != 0) {
        wm_tables_free(t);
        return wm_load_error_set(err, NULL, 0, "out of memory");
    }
    return 0;
}

const wm_matcher_config *wm_reload_config(const wm_reload *rl) { return &rl->cfg; }

int wm_reload_publish(wm_reload *rl, wm_tables *t)
{
    gen *g = calloc(1, sizeof *g);
    if (!g) return -1;
    g->t = t;
    gen *old = rl->cur;
    __atomic_store_n(&rl->cur, g, __ATOMIC_RELEASE);
    rl->generation++;
    if (old) {
        old->next = rl->retired;
        rl->retired = old;
        wm_retire_call(&rl->retire, grace_passed, old, 0);
    }
    wm_reload_reclaim(rl, false);
    return 0;
}

const wm_tables *wm_reload_current(const wm_reload *rl) { return rl->cur ? rl->cur->t : NULL; }
uint64_t wm_reload_generation(const wm_reload *rl) { return rl->generation; }

/* ---------------------------------------------------------------- readers */

wm_reload_reader *wm_reload_reader_new(wm_reload *rl)
{
    wm_reload_reader *rd = calloc(1, sizeof *rd);
    if (!rd) return NULL;
    rd->rl = rl;
    const wm_qsbr_ops *q = rl->cfg.qsbr;
    if (q->reader_register(q->ctx, &rd->qidx) != 0) { free(rd); return NULL; }
    q->reader_online(q->ctx, rd->qidx);
    return rd;
}

static void detach(wm_reload_reader *rd)
{
    if (!rd->g) return;
    /* Frees from this thread, as the matcher requires, before the count
     * lets the writer free the matcher itself. */
    wm_matcher_reader_free(rd->mr);
    __atomic_sub_fetch(&rd->g->readers, 1, __ATOMIC_RELEASE);
    rd->g = NULL;
    rd->mr = NULL;
}

void wm_reload_reader_free(wm_reload_reader *rd)
{
    if (!rd) return;
    detach(rd);
    const wm_qsbr_ops *q = rd->rl->cfg.qsbr;
    wm_qsbr_reader_offline(q, rd->qidx);
    q->reader_unregister(q->ctx, rd->qidx);
    free(rd);
}

wm_matcher_reader *wm_reload_reader_acquire(wm_reload_reader *rd, const wm_tables **tables)
{
    gen *g = __atomic_load_n(&rd->rl->cur, __ATOMIC_ACQUIRE);
    if (g && g != rd->g) {
        /* Attach while online (see the top of this file), then build the
         * matcher reader; only then let go of the old generation. */
        __atomic_add_fetch(&g->readers, 1, __ATOMIC_ACQ_REL);
        wm_matcher_reader *mr = wm_matcher_reader_new(wm_tables_matcher(g->t));
        if (!mr) {
            __atomic_sub_fetch(&g->readers, 1, __ATOMIC_RELEASE);
            return NULL;
        }
        detach(rd);
        rd->g = g;
        rd->mr = mr;
        /* Freeing the old matcher reader may have taken the whole thread
         * offline (liburcu keys readers by thread): come back online. */
        const wm_qsbr_ops *q = rd->rl->cfg.qsbr;
        q->reader_online(q->ctx, rd->qidx);
        wm_matcher_reader_online(mr);
    }
    if (!rd->g) return NULL;
    if (tables) *tables = rd->g->t;
    return rd->mr;
}

void wm_reload_reader_quiescent(wm_reload_reader *rd)
{
    wm_qsbr_reader_quiescent(rd->rl->cfg.qsbr, rd->qidx);
    if (rd->mr) wm_matcher_quiescent(rd->mr);
}

void wm_reload_reader_pause(wm_reload_reader *rd)
{
    if (rd->mr) wm_matcher_reader_offline(rd->mr);
    wm_qsbr_reader_offline(rd->rl->cfg.qsbr, rd->qidx);
}

void wm_reload_reader_resume(wm_reload_reader *rd)
{
    const wm_qsbr_ops *q = rd->rl->cfg.qsbr;
    q->reader_online(q->ctx, rd->qidx);
    if (rd->mr) wm_matcher_reader_online(rd->mr);
}

void wm_reload_reader_offline(wm_reload_reader *rd)
{
    detach(rd);
    wm_qsbr_reader_offline(rd->rl->cfg.qsbr, rd->qidx);
}

void wm_reload_reader_online(wm_reload_reader *rd)
{
    const wm_qsbr_ops *q = rd->rl->cfg.qsbr;
    q->reader_online(q->ctx, rd->qidx);
}
