/* On-demand list of a worker's connections for telemetry
 * (/wirematch/flows): the biggest ones by bytes, with their endpoints, MQTT
 * client id, TCP state and counters.
 *
 * Why a request/answer and not a read from the telemetry thread: a flow
 * table is the worker's private memory, changed on every packet; reading it
 * from another thread would race with the worker (torn client ids, entries
 * reused mid-read). Instead the telemetry thread raises `req` and the
 * worker, between two bursts (wm_flow_report_serve: one relaxed load when
 * nobody asks), fills `rows` from its own table and clears `req`. The
 * answer is bounded (WM_FLOW_REPORT_MAX rows per worker) and costs the
 * worker one pass over its active flows per request.
 *
 * Thread safety: one wm_flow_report per worker; serve on the worker,
 * request from one other thread at a time (the caller serialises). */
#ifndef WM_DATAPLANE_FLOW_REPORT_H
#define WM_DATAPLANE_FLOW_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/flow_table.h"
#include "dataplane/mqtt_session.h"

#define WM_FLOW_REPORT_MAX 32

struct wm_flow_row {
    uint64_t id;                   /* creation order in the worker's table */
    uint32_t worker;               /* set by the reader: which worker answered */
    uint8_t client_addr[16], server_addr[16]; /* IPv6 or IPv4-mapped */
    uint16_t client_port, server_port;
    uint8_t state;                 /* enum wm_flow_state */
    uint64_t packets[2];           /* WM_DIR_C2S, WM_DIR_S2C */
    uint64_t bytes[2];             /* stream bytes delivered, by direction */
    uint64_t idle_ns;              /* since the last packet */
    char client[WM_MQTT_CLIENT_ID_MAX + 1]; /* "" before CONNECT */
};

struct wm_flow_report {
    uint32_t req;                  /* atomic: rows wanted (1..MAX), 0 = answered */
    uint32_t n;                    /* rows filled, by bytes descending */
    uint32_t active;               /* flows in the table when filled */
    struct wm_flow_row rows[WM_FLOW_REPORT_MAX];
};

/* Worker: fills r from t at now_ns (up to r->req rows, biggest first). */
void wm_flow_report_fill(struct wm_flow_report *r, struct wm_flow_table *t, uint64_t now_ns);

/* Worker, once per loop: answers a pending request. */
static inline void wm_flow_report_serve(struct wm_flow_report *r, struct wm_flow_table *t, uint64_t now_ns)
{
    if (__builtin_expect(__atomic_load_n(&r->req, __ATOMIC_ACQUIRE) != 0, 0)) {
        wm_flow_report_fill(r, t, now_ns);
        __atomic_store_n(&r->req, 0, __ATOMIC_RELEASE);
    }
}

/* Telemetry: asks for the top `want` rows (clamped to 1..MAX) and waits up
 * to timeout_ms for the worker. Returns 0 with r filled, or -1 if the worker
 * did not answer (it stopped: *done, or is stalled). */
int wm_flow_report_request(struct wm_flow_report *r, uint32_t want, const volatile bool *done, unsigned timeout_ms);

#endif
