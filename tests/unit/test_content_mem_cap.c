/* The data plane's per-payload decoding memory (`wirematch --mem-cap`,
 * wm_match_table_set_exi_mem_cap; review 13 finding 14): the match sink's
 * content readers decode with the table's cap, not always the codec's 4 MiB
 * default. The SenML fixture's pack A matches its subscription's filter with
 * the default; with the smallest cap the option takes (64 KiB, below what
 * the decoder sets up for every document) the same payload is a decode error
 * of its filters, counted, and matches nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control/exi_mem_cap.h"
#include "dataplane/match_sink.h"
#include "tests/lib/exi_fixture.h"

static wm_mqtt5_bytes bytes(const char *s) { return (wm_mqtt5_bytes){ (const uint8_t *)s, (uint32_t)strlen(s) }; }

/* Publishes pack A once on a table whose cap is cap (0: not set). */
static enum wm_mqtt_pub_outcome publish_with_cap(size_t cap, struct wm_match_counters *c)
{
    char dir[] = "/tmp/wm_content_memcap_XXXXXX", reg[128], err[256];
    uint8_t pack[2][512];
    size_t len[2];
    const char *why = wm_test_senml_fixture(dir, reg, sizeof reg, pack, len);
    cr_assert(!why, "%s", why);
    wm_load_error le;
    struct wm_match_table *t = wm_match_table_new(NULL, NULL, reg, 1024, &le);
    cr_assert(t, "%s", le.reason);
    if (cap) wm_match_table_set_exi_mem_cap(t, cap);
    struct wm_match_worker *w = wm_match_worker_new(t, NULL, err, sizeof err);
    cr_assert(w, "%s", err);
    wm_match_worker_set_content_wait(w, true);
    struct wm_mqtt_sink sk = wm_match_worker_sink(w);
    struct wm_mqtt_subscribe s = { "c", 1, bytes("t/#"), 0, { 0 }, bytes("//s:senml[@u = 'Cel' and @v > 20]"), 1, false, 0 };
    cr_assert_eq(sk.subscribe(sk.ctx, &s), WM_MQTT_SUB_INSTALLED);
    while (wm_match_table_compile(t) == 1) {}
    enum wm_mqtt_pub_outcome o =
        (enum wm_mqtt_pub_outcome)wm_test_publish_exi(&sk, 1, "t/x", "application/exi; schema=senml", pack[0], len[0]);
    wm_match_worker_free(w); /* its counters go to the table */
    wm_match_table_counters(t, c);
    wm_match_table_free(t);
    unlink(reg);
    rmdir(dir);
    return o;
}

Test(content_mem_cap, the_tables_cap_bounds_payload_decoding)
{
    struct wm_match_counters c;
    enum wm_mqtt_pub_outcome o = publish_with_cap(0, &c);
    cr_assert_eq(o, WM_MQTT_PUB_MATCHED, "%s", wm_mqtt_pub_outcome_name(o));
    cr_assert_eq(c.content_decode_error, 0);
    o = publish_with_cap(WM_EXI_MEM_CAP_MIN, &c);
    cr_assert_eq(o, WM_MQTT_PUB_NO_MATCH, "%s", wm_mqtt_pub_outcome_name(o));
    cr_assert_eq(c.content_decode_error, 1, "pubs %llu decoded %llu too large %llu", (unsigned long long)c.content_pubs,
                 (unsigned long long)c.content_decoded, (unsigned long long)c.content_value_too_large);
    /* a cap that leaves room: the default answer again */
    o = publish_with_cap(WM_EXI_MEM_CAP_MIN * 16, &c);
    cr_assert_eq(o, WM_MQTT_PUB_MATCHED, "%s", wm_mqtt_pub_outcome_name(o));
    cr_assert_eq(c.content_decode_error, 0);
}
