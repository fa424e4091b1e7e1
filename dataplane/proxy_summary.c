/* The proxy's JSON summary at exit: the same kind of one-object report the
 * data plane prints, built with jansson. Field names follow the counters in
 * proxy.h; per-direction pairs are objects {"client_to_upstream",
 * "upstream_to_client"}. */
#include "dataplane/proxy.h"

#include <jansson.h>

#include "control/mem_stats.h"
#include "dataplane/proxy_registry.h"
#include "dataplane/proxy_reload.h"
#include "dataplane/proxy_state.h"

static json_t *pair(const uint64_t v[2])
{
    return json_pack("{s:I,s:I}", "client_to_upstream", (json_int_t)v[WM_PROXY_C2U],
                     "upstream_to_client", (json_int_t)v[WM_PROXY_U2C]);
}

#define I(x) ((json_int_t)(x))

int wm_proxy_write_summary(FILE *f, const wm_proxy_config *cfg,
                           const wm_proxy_counters *c, uint64_t elapsed_ns, int late)
{
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:i, s:f,"
        " s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},"
        " s:{s:I,s:I,s:I,s:I,s:I}, s:{s:I,s:I,s:I,s:I,s:I,s:I},"
        " s:o, s:o, s:o, s:o, s:o,"
        " s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},"
        " s:{s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:o,s:I,s:I,s:I},"
        " s:{s:I,s:I,s:I,s:I,s:I},"
        " s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
        "tool", "wirematch-proxy",
        "listen", cfg->listen_text ? cfg->listen_text : "",
        "upstream", cfg->upstream_text ? cfg->upstream_text : "",
        "threads", (int)cfg->threads,
        "elapsed_s", (double)elapsed_ns / 1e9,
        "connections",
          "accepted", I(c->conns_accepted), "closed", I(c->conns_closed),
          "open_at_exit", I(c->conns_open), "peak", I(c->conns_peak),
          "closed_by_client", I(c->closed_by_client), "closed_by_upstream", I(c->closed_by_upstream),
          "closed_at_shutdown", I(c->closed_at_shutdown), "closed_no_connect", I(c->closed_no_connect),
          "upstream_connect_failed", I(c->upstream_connect_failed),
          "refused_protocol_version", I(c->refused_protocol_version),
        "upstream_failures",
          "connect_refused", I(c->upstream_refused), "connect_timed_out", I(c->upstream_timed_out),
          "connect_other", I(c->upstream_connect_failed - c->upstream_refused - c->upstream_timed_out),
          "socket_failed", I(c->upstream_socket_failed),
          "lost", I(c->upstream_lost),
        "told_clients",
          "connack_0x88_server_unavailable", I(c->sent_connack_unavailable),
          "disconnect_0x80_upstream_lost", I(c->sent_disconnect_lost),
          "disconnect_0x8b_shutting_down", I(c->sent_disconnect_shutdown),
          "connack_0x89_server_busy", I(c->sent_connack_busy),
          "disconnect_0x97_quota_exceeded", I(c->sent_disconnect_quota),
          "disconnect_0x82_second_connect", I(c->sent_second_connect),
        "bytes", pair(c->bytes),
        "packets", pair(c->packets),
        "publishes", pair(c->publishes),
        "max_packet_announced", pair(c->max_packet_announced),
        "malformed", pair(c->malformed),
        "bounds",
          "max_conns", I(cfg->max_conns), "conn_buffer", I(cfg->conn_buffer),
          "total_buffer", I(cfg->total_buffer), "max_packet", I(cfg->max_packet),
          "connect_packet_timeout_ms", I(cfg->connect_packet_timeout_ms),
          "linger_ms", I(cfg->linger_ms), "linger_bytes", I(cfg->linger_bytes),
          "fds_needed", I(cfg->fds_needed), "fds_limit", cfg->fds_limit == UINT64_MAX ? (json_int_t)-1 : I(cfg->fds_limit),
        "limits",
          "conns", I(c->limit_conns), "fds", I(c->limit_fds), "fds_shed", I(c->fds_shed),
          "conn_buffer", pair(c->limit_conn_buffer),
          "total_buffer", I(c->limit_total_buffer),
          "held_peak_bytes", I(c->held_peak),
          "held_at_exit_bytes", I(c->held_at_exit),
          "packet_too_large", pair(c->packet_too_large),
          "resumed", I(c->resumed), "parked", I(c->parked), "park_overflow", I(c->park_overflow),
        "linger",
          "lingers", I(c->lingers), "cut_time", I(c->linger_cut_time), "cut_bytes", I(c->linger_cut_bytes),
          "bytes_dropped", I(c->linger_bytes), "drain_cut", I(c->drain_cut),
        "io_uring",
          "submits", I(c->submits), "batched_waits", I(c->batched_waits), "sqes", I(c->sqes), "cqes", I(c->cqes),
          "sends", I(c->sends), "sends_short", I(c->sends_short), "sends_inline", I(c->sends_inline), "recvs", I(c->recvs),
          "recv_nobufs", I(c->recv_nobufs), "recv_rearm", I(c->recv_rearm), "quickacks", I(c->quickacks),
          "accept_rearm", I(c->accept_rearm));
    if (!o) return -1;
    if (late >= 0 && (json_object_set_new(o, "live", json_true()) ||
                      json_object_set_new(o, "late_workers", json_integer(late)))) {
        json_decref(o);
        return -1;
    }
    json_t *modes = json_object();
    for (int m = 0; modes && m < 2; m++) {
        json_t *mo = json_pack("{s:f,s:f,s:I,s:I}", "cpu_s", (double)c->mode_cpu_ns[m] / 1e9,
                               "wall_s", (double)c->mode_wall_ns[m] / 1e9, "frames", I(c->mode_frames[m]),
                               "wakeups", I(c->mode_wakeups[m]));
        if (!mo || json_object_set_new(modes, m ? "batched" : "unbatched", mo)) { json_decref(modes); modes = NULL; }
    }
    if (!modes || json_object_set_new(json_object_get(o, "io_uring"), "modes", modes)) { json_decref(o); return -1; }
    json_t *flt = json_pack(
        "{s:s?, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I,s:I,s:I}, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "resolution", cfg->resolution_text,
        "nbhd_subscribes", I(c->filter_nbhd_subscribes),
        "suback_unknown_nbhd", I(c->filter_suback_unknown_nbhd),
        "sid_added", I(c->filter_sid_added),
        "sid_reserved", I(c->filter_sid_reserved),
        "records_full", I(c->filter_records_full),
        "sid_wait", I(c->filter_sid_wait),
        "withheld", "qos0", I(c->filter_withheld[0]), "qos1", I(c->filter_withheld[1]),
                    "qos2", I(c->filter_withheld[2]),
        "too_many_peids", I(c->filter_too_many_peids),
        "acked_on_behalf", I(c->filter_acked_on_behalf),
        "pubcomp_on_behalf", I(c->filter_pubcomp_on_behalf),
        "sid_stripped", I(c->filter_sid_stripped),
        "alias_rewritten", pair(c->filter_alias_rewritten),
        "sid_unavailable", I(c->filter_sid_unavailable),
        "too_large", I(c->filter_too_large),
        "failed", I(c->filter_failed),
        "shared_refused", I(c->filter_share_refused),
        "shared_mixed_restored", I(c->filter_share_mixed_restored),
        "unsub_refused", I(c->filter_unsub_refused), "unsub_untracked", I(c->filter_unsub_untracked),
        "refused_kept", I(c->filter_refused_kept),
        "acks_waited", I(c->filter_acks_waited),
        "acks_overflow", I(c->filter_acks_overflow),
        "pings_answered", I(c->filter_pings_answered));
    if (!flt || json_object_set_new(o, "filter", flt)) { json_decref(o); return -1; }
    if (cfg->tables) {
        uint64_t ok, failed;
        wm_proxy_tables_stats(cfg->tables, &ok, &failed);
        json_t *rl = json_pack("{s:I,s:I,s:I,s:I}", "ok", I(ok), "refused", I(failed), "nbhd_gone",
                               I(c->filter_nbhd_gone), "xpath_gone", I(c->filter_xpath_gone));
        if (!rl || json_object_set_new(o, "reload", rl)) { json_decref(o); return -1; }
    }
    if (cfg->schemas) {
        /* content_pubs = the sum of the outcomes (control/content_filters.h) */
        json_t *co = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "xpath_subscribes", I(c->filter_xpath_subscribes),
                               "resumes_held", I(c->filter_resume_held),
                               "suback_bad_xpath", I(c->filter_suback_bad_xpath), "pubs", I(c->filter_content_pubs),
                               "slots_peak", I(c->filter_content_slots_peak),
                               "slots_reused", I(c->filter_content_slots_reused),
                               "compiles", I(c->filter_content_compiles), "held", I(c->filter_xpath_held),
                               "suback_quota", I(c->filter_suback_xpath_quota),
                               "resume_refused", I(c->filter_resume_refused));
        for (int k = 0; co && k < WM_CONTENT_OUTCOME_COUNT; k++)
            json_object_set_new(co, wm_content_outcome_name((enum wm_content_outcome)k), json_integer(I(c->filter_content[k])));
        /* the compile threads (dataplane/proxy_compile.h) */
        if (co) {
            json_object_set_new(co, "cancelled", json_integer(I(c->filter_content_cancelled)));
            json_object_set_new(co, "dropped_gone", json_integer(I(c->filter_xpath_dropped_gone)));
            json_object_set_new(co, "suback_compile_busy", json_integer(I(c->filter_suback_compile_busy)));
            json_object_set_new(co, "detached_at_stop", json_integer(I(c->compile_detached)));
            json_object_set_new(co, "set_builds", json_integer(I(c->filter_content_set_builds)));
            json_object_set_new(co, "room_cached", json_integer(I(c->filter_content_room_cached)));
            json_object_set_new(co, "header_conflicts", json_integer(I(c->filter_content_header_conflicts)));
        }
        if (!co || json_object_set_new(o, "content", co)) { json_decref(o); return -1; }
    }
    wm_proxy_registry_stats st;
    if (cfg->registry) {
        wm_proxy_registry_stats_get(cfg->registry, &st);
        json_t *ss = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I}}",
                               "live", I(st.sessions_live), "max", I(cfg->max_sessions),
                               "restored", I(st.sessions_restored), "incomplete", I(st.sessions_incomplete),
                               "dropped", I(st.sessions_dropped), "expired", I(st.sessions_expired),
                               "full", I(st.sessions_full), "records_lost", I(st.records_lost),
                               "unknown_sid_withheld", I(c->filter_unknown_sid),
                               "subscribe_refused_full", I(c->filter_session_full),
                               "disconnect_expiry_from_zero", I(c->filter_expiry_from_zero),
                               "lock", "wait_max_us", I(st.lock_wait_max_ns / 1000),
                               "hold_max_us", I(st.lock_hold_max_ns / 1000));
        if (!ss || json_object_set_new(o, "sessions", ss)) { json_decref(o); return -1; }
    }
    if (cfg->state) {
        const wm_proxy_state_saver *sv = cfg->state;
        /* live: the saver's thread writes its running counters: not read (left out below) */
        uint64_t saves = late < 0 ? sv->saves : 0, save_errors = late < 0 ? sv->save_errors : 0;
        uint64_t bytes = late < 0 ? sv->bytes : 0, interval_ns = late < 0 ? sv->interval_ns : 0;
        json_t *so = json_pack("{s:s, s:{s:b,s:b,s:I,s:I,s:I,s:I}, s:I, s:I, s:I, s:I, s:I, s:{s:I,s:I,s:I,s:I,s:I,s:I}}",
                               "file", sv->path,
                               "loaded", "found", (int)sv->loaded.found, "clean", (int)sv->loaded.clean,
                               "sessions", I(sv->loaded.sessions), "records", I(sv->loaded.records),
                               "expired", I(sv->loaded.expired), "skipped", I(sv->loaded.skipped),
                               "saves", I(saves), "save_errors", I(save_errors),
                               "sid_refused", I(c->filter_sid_unsaved),
                               "bytes", I(bytes), "interval_ms", I(interval_ns / 1000000),
                               "copy", "holds", I(st.copy_holds), "entries", I(st.copy_entries),
                               "bytes", I(st.copy_bytes), "hold_max_entries", I(st.copy_hold_max_entries),
                               "hold_max_bytes", I(st.copy_hold_max_bytes), "hold_max_us", I(st.copy_hold_max_ns / 1000));
        if (so) json_object_set_new(so, "saver_stuck_at_stop", json_integer(I(c->state_saver_stuck)));
        for (const char *const *k = (const char *const[]){ "saves", "save_errors", "bytes", "interval_ms", NULL };
             so && late >= 0 && *k; k++)
            json_object_del(so, *k);
        if (!so || json_object_set_new(o, "state", so)) { json_decref(o); return -1; }
    }
    if (cfg->registry && wm_proxy_registry_prefilter(cfg->registry)) {
        json_t *pf = json_pack("{s:{s:I,s:I,s:I}, s:I, s:I, s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}}",
                               "dropped", "qos0", I(c->filter_prefiltered[0]), "qos1", I(c->filter_prefiltered[1]),
                               "qos2", I(c->filter_prefiltered[2]),
                               "too_many_peids", I(c->filter_prefiltered_too_many_peids),
                               "suback_refused", I(c->filter_suback_prefilter),
                               "registry", "added", I(st.added), "removed", I(st.removed), "refused", I(st.refused),
                               "widened_too_deep", I(st.widened_too_deep), "refused_full", I(st.refused_full),
                               "refused_nomem", I(st.refused_nomem), "refused_invalid", I(st.refused_invalid),
                               "kept_for_sessions", I(st.deferred_live), "broken", (int)st.broken);
        if (!pf || json_object_set_new(o, "prefilter", pf)) { json_decref(o); return -1; }
    }
    json_t *mem = wm_mem_stats_json();
    if (!mem || json_object_set_new(o, "memory", mem)) { json_decref(o); return -1; }
    int rc = json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? 0 : -1;
    fflush(f);
    json_decref(o);
    return rc;
}

int wm_proxy_write_failed_summary(FILE *f, const char *why)
{
    json_t *o = json_pack("{s:s}", "error", why);
    if (!o) return -1;
    int rc = json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? 0 : -1;
    if (fflush(f) != 0) rc = -1;
    json_decref(o);
    return rc;
}
