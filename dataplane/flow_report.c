/* On-demand connection list of a worker; see flow_report.h. */
#include "dataplane/flow_report.h"

#include <string.h>
#include <unistd.h>

static uint64_t row_bytes(const struct wm_flow_row *x) { return x->bytes[0] + x->bytes[1]; }

void wm_flow_report_fill(struct wm_flow_report *r, struct wm_flow_table *t, uint64_t now_ns)
{
    uint32_t want = __atomic_load_n(&r->req, __ATOMIC_ACQUIRE);
    if (want > WM_FLOW_REPORT_MAX) want = WM_FLOW_REPORT_MAX;
    uint32_t n = 0;
    /* Insertion into a small array kept sorted by bytes (descending): once
     * it is full most flows are rejected by one comparison. */
    for (uint32_t i = t->lru_head; i != WM_FLOW_NIL;) {
        struct wm_flow *f = (struct wm_flow *)(t->entries + (size_t)i * t->entry_stride);
        i = f->lru_next;
        uint64_t b = f->dir[WM_DIR_C2S].delivered + f->dir[WM_DIR_S2C].delivered;
        if (n == want && b <= row_bytes(&r->rows[n - 1])) continue;
        uint32_t k = n < want ? n++ : n - 1;
        while (k > 0 && row_bytes(&r->rows[k - 1]) < b) {
            r->rows[k] = r->rows[k - 1];
            k--;
        }
        struct wm_flow_row *x = &r->rows[k];
        int cs = f->client_side;
        x->id = f->id;
        memcpy(x->client_addr, f->key.addr[cs], 16);
        memcpy(x->server_addr, f->key.addr[!cs], 16);
        x->client_port = f->key.port[cs];
        x->server_port = f->key.port[!cs];
        x->state = f->state;
        for (int d = 0; d < 2; d++) {
            x->packets[d] = f->packets[d];
            x->bytes[d] = f->dir[d].delivered;
        }
        x->idle_ns = now_ns > f->last_ns ? now_ns - f->last_ns : 0;
        uint32_t cl = 0;
        const char *c = wm_mqtt_session_client(f, &cl);
        if (cl > WM_MQTT_CLIENT_ID_MAX) cl = WM_MQTT_CLIENT_ID_MAX;
        memcpy(x->client, c, cl);
        x->client[cl] = 0;
    }
    r->n = n;
    r->active = t->active;
}

int wm_flow_report_request(struct wm_flow_report *r, uint32_t want, const volatile bool *done, unsigned timeout_ms)
{
    if (want < 1) want = 1;
    if (want > WM_FLOW_REPORT_MAX) want = WM_FLOW_REPORT_MAX;
    __atomic_store_n(&r->req, want, __ATOMIC_RELEASE);
    for (unsigned t = 0; t < timeout_ms * 10; t++) {
        if (__atomic_load_n(&r->req, __ATOMIC_ACQUIRE) == 0) return 0;
        if (*done) break;
        usleep(100);
    }
    /* Withdraw the request; if the worker answered meanwhile, use it. */
    uint32_t expect = want;
    if (__atomic_compare_exchange_n(&r->req, &expect, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return -1;
    return 0;
}
