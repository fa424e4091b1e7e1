/* build/wirematch's application options (after EAL's "--"). */
#include <criterion/criterion.h>
#include <string.h>

#include "dataplane/app_options.h"

static struct wm_app_options o;
static char err[512];

static int parse(int argc, const char **argv)
{
    return wm_app_options_parse(argc, (char **)argv, &o, err, sizeof err);
}

Test(options, defaults)
{
    const char *argv[] = {"wirematch"};
    cr_assert_eq(parse(1, argv), 0);
    cr_assert_eq(o.n_ports, 1);
    cr_assert_eq(o.mqtt_ports[0], 1883);
    cr_assert_eq(o.tx, WM_TX_NONE);
    cr_assert_eq(o.max_flows, 16384);
    cr_assert_eq(o.idle_timeout_s, 600);
    cr_assert_null(o.resolution);
}

Test(options, every_option)
{
    const char *argv[] = {"wirematch", "--resolution", "r.wmr", "--subs", "s.jsonl", "--mqtt-port", "1883,8883",
                          "--match-log", "m.jsonl", "--tx", "matched", "--stats-interval", "5",
                          "--max-flows", "1000", "--ooo-blocks", "0", "--summary", "sum.json",
                          "--idle-exit-ms", "50", "--idle-timeout", "90"};
    cr_assert_eq(parse(23, argv), 0, "%s", err);
    cr_assert_eq(o.idle_timeout_s, 90);
    cr_assert_str_eq(o.resolution, "r.wmr");
    cr_assert_str_eq(o.subs, "s.jsonl");
    cr_assert_str_eq(o.match_log, "m.jsonl");
    cr_assert_str_eq(o.summary, "sum.json");
    cr_assert_eq(o.n_ports, 2);
    cr_assert_eq(o.mqtt_ports[1], 8883);
    cr_assert_eq(o.tx, WM_TX_MATCHED);
    cr_assert_eq(o.stats_interval, 5);
    cr_assert_eq(o.max_flows, 1000);
    cr_assert_eq(o.ooo_blocks, 0);
    cr_assert_eq(o.idle_exit_ms, 50);
}

Test(options, errors_name_the_option)
{
    const char *bad_port[] = {"wirematch", "--mqtt-port", "1883,,2"};
    cr_assert_eq(parse(3, bad_port), -1);
    cr_assert(strstr(err, "--mqtt-port"), "%s", err);
    const char *port0[] = {"wirematch", "--mqtt-port", "0"};
    cr_assert_eq(parse(3, port0), -1);
    const char *port_big[] = {"wirematch", "--mqtt-port", "65536"};
    cr_assert_eq(parse(3, port_big), -1);
    const char *tx[] = {"wirematch", "--tx", "some"};
    cr_assert_eq(parse(3, tx), -1);
    cr_assert(strstr(err, "--tx"), "%s", err);
    const char *idle0[] = {"wirematch", "--idle-timeout", "0"};
    cr_assert_eq(parse(3, idle0), -1);
    cr_assert(strstr(err, "--idle-timeout"), "%s", err);
    const char *flows[] = {"wirematch", "--max-flows", "0"};
    cr_assert_eq(parse(3, flows), -1);
    const char *neg[] = {"wirematch", "--max-flows", "-5"};
    cr_assert_eq(parse(3, neg), -1);
    const char *junk[] = {"wirematch", "--max-flows", "12abc"};
    cr_assert_eq(parse(3, junk), -1);
    const char *missing[] = {"wirematch", "--resolution"};
    cr_assert_eq(parse(2, missing), -1);
    cr_assert(strstr(err, "missing"), "%s", err);
    const char *unknown[] = {"wirematch", "--bogus"};
    cr_assert_eq(parse(2, unknown), -1);
    cr_assert(strstr(err, "--bogus"), "%s", err);
    const char *extra[] = {"wirematch", "stray"};
    cr_assert_eq(parse(2, extra), -1);
    cr_assert(strstr(err, "stray"), "%s", err);
    const char *many[] = {"wirematch", "--mqtt-port", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    cr_assert_eq(parse(3, many), -1);
}

Test(options, share_policy)
{
    const char *def[] = {"wirematch"};
    cr_assert_eq(parse(1, def), 0);
    cr_assert_eq(o.share_policy, WM_SHARE_ROUND_ROBIN);
    const char *hash[] = {"wirematch", "--share-policy", "hash"};
    cr_assert_eq(parse(3, hash), 0, "%s", err);
    cr_assert_eq(o.share_policy, WM_SHARE_HASH);
    const char *rr[] = {"wirematch", "--share-policy", "round-robin"};
    cr_assert_eq(parse(3, rr), 0, "%s", err);
    cr_assert_eq(o.share_policy, WM_SHARE_ROUND_ROBIN);
    const char *bad[] = {"wirematch", "--share-policy", "random"};
    cr_assert_eq(parse(3, bad), -1);
    cr_assert(strstr(err, "--share-policy") && strstr(err, "random"), "%s", err);
}

Test(options, xpath_apply)
{
    const char *def[] = {"wirematch"};
    cr_assert_eq(parse(1, def), 0);
    cr_assert_eq(o.xpath_apply, WM_XPATH_APPLY_AUTO);
    const char *as[] = {"wirematch", "--schemas", "reg", "--xpath-apply", "async"};
    cr_assert_eq(parse(5, as), 0, "%s", err);
    cr_assert_eq(o.xpath_apply, WM_XPATH_APPLY_ASYNC);
    const char *wt[] = {"wirematch", "--xpath-apply", "wait", "--schemas", "reg"};
    cr_assert_eq(parse(5, wt), 0, "%s", err);
    cr_assert_eq(o.xpath_apply, WM_XPATH_APPLY_WAIT);
    const char *bad[] = {"wirematch", "--schemas", "reg", "--xpath-apply", "sync"};
    cr_assert_eq(parse(5, bad), -1);
    cr_assert(strstr(err, "--xpath-apply") && strstr(err, "sync"), "%s", err);
    /* content filters need the registry: without it the option did nothing */
    const char *no_schemas[] = {"wirematch", "--xpath-apply", "wait"};
    cr_assert_eq(parse(3, no_schemas), -1);
    cr_assert_str_eq(err, "--xpath-apply needs --schemas");
}

/* An option given twice is refused, whatever its kind (before 2026-12-02 the
 * last one won, silently: REVIEW14 finding 7); --help may be repeated. */
Test(options, each_option_once)
{
    const char *tx[] = {"wirematch", "--tx", "all", "--tx", "none"};
    cr_assert_eq(parse(5, tx), -1);
    cr_assert_str_eq(err, "--tx given twice: give it once");
    const char *num[] = {"wirematch", "--max-flows", "8", "--stats-interval", "1", "--max-flows", "8"};
    cr_assert_eq(parse(7, num), -1);
    cr_assert_str_eq(err, "--max-flows given twice: give it once");
    const char *str[] = {"wirematch", "--subs", "a", "--subs", "b"};
    cr_assert_eq(parse(5, str), -1);
    cr_assert_str_eq(err, "--subs given twice: give it once");
    const char *ports[] = {"wirematch", "--mqtt-port", "1883", "--mqtt-port", "8883"};
    cr_assert_eq(parse(5, ports), -1);
    cr_assert_str_eq(err, "--mqtt-port given twice: give it once");
    const char *help[] = {"wirematch", "-h", "--help"};
    cr_assert_eq(parse(3, help), 0, "%s", err);
}

Test(options, fragments)
{
    const char *def[] = {"wirematch"};
    cr_assert_eq(parse(1, def), 0);
    cr_assert_eq(o.frag_max, 256);
    cr_assert_eq(o.frag_timeout_ms, 2000);
    const char *set[] = {"wirematch", "--frag-max", "0", "--frag-timeout-ms", "50"};
    cr_assert_eq(parse(5, set), 0, "%s", err);
    cr_assert_eq(o.frag_max, 0);
    cr_assert_eq(o.frag_timeout_ms, 50);
    const char *big[] = {"wirematch", "--frag-max", "65537"};
    cr_assert_eq(parse(3, big), -1);
    cr_assert(strstr(err, "--frag-max"), "%s", err);
    const char *zero[] = {"wirematch", "--frag-timeout-ms", "0"};
    cr_assert_eq(parse(3, zero), -1);
    cr_assert(strstr(err, "--frag-timeout-ms"), "%s", err);
}

/* --help is an answer, not an error: the caller prints the usage and exits
 * 0; the usage names every option the parser takes. */
Test(options, help_and_usage)
{
    const char *help[] = {"wirematch", "--max-flows", "10", "--help"};
    cr_assert_eq(parse(4, help), 0, "%s", err);
    cr_assert(o.help);
    const char *h[] = {"wirematch", "-h"};
    cr_assert_eq(parse(2, h), 0, "%s", err);
    cr_assert(o.help);
    const char *none[] = {"wirematch"};
    cr_assert_eq(parse(1, none), 0);
    cr_assert(!o.help);
    const char *u = wm_app_options_usage();
    static const char *const names[] = {"--mqtt-port P", "--resolution FILE", "--subs FILE", "--schemas FILE",
                                        "--match-log FILE", "--summary FILE", "--tx matched|all|none",
                                        "--stats-interval SEC", "--max-flows N", "--ooo-blocks N", "--max-subs N",
                                        "--idle-exit-ms MS", "--mbufs N", "--share-policy round-robin|hash",
                                        "--xpath-apply auto|async|wait", "--frag-max N", "--frag-timeout-ms MS",
                                        "--idle-timeout SEC"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) cr_expect(strstr(u, names[i]), "%s missing", names[i]);
    /* the ranges the parser enforces are the ones the usage gives */
    const char *big[] = {"wirematch", "--frag-max", "65537"};
    cr_assert_eq(parse(3, big), -1);
    cr_expect(strstr(err, "0..65536") && strstr(u, "0..65536, default 256"), "%s", err);
}

/* --mem-cap: the same parser and range as `wmctl exi decode` (control/exi_mem_cap.h) */
Test(options, mem_cap)
{
    const char *unset[] = {"wirematch", "--schemas", "reg"};
    cr_assert_eq(parse(3, unset), 0, "%s", err);
    cr_assert_eq(o.exi_mem_cap, 0);
    const char *ok[] = {"wirematch", "--schemas", "reg", "--mem-cap", "1048576"};
    cr_assert_eq(parse(5, ok), 0, "%s", err);
    cr_assert_eq(o.exi_mem_cap, 1048576);
    const char *bad[][2] = { {"65535", "'65535'"}, {"68719476737", "'68719476737'"}, {"-1", "'-1'"}, {"1M", "'1M'"}, {"+65536", "'+65536'"} };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[] = {"wirematch", "--schemas", "reg", "--mem-cap", bad[i][0]};
        cr_assert_eq(parse(5, argv), -1, "%s", bad[i][0]);
        cr_assert(strstr(err, "--mem-cap takes bytes from 65536 to 68719476736, not ") && strstr(err, bad[i][1]), "%s", err);
    }
    const char *no_schemas[] = {"wirematch", "--mem-cap", "1048576"};
    cr_assert_eq(parse(3, no_schemas), -1);
    cr_assert_str_eq(err, "--mem-cap needs --schemas");
}
