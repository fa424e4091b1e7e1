/* The neighborhood language (control/nbhd.h): what parses into what, and for
 * every error kind the exact line and column reported. */
#include <criterion/criterion.h>
#include <string.h>

#include "control/nbhd.h"

static wm_nbhd_file parse_ok(const char *s)
{
    wm_nbhd_file f;
    wm_nbhd_error e;
    wm_nbhd_status st = wm_nbhd_parse(s, strlen(s), &f, &e);
    cr_assert_eq(st, WM_NBHD_OK, "%u:%u %s", e.pos.line, e.pos.col, e.message);
    return f;
}

/* Asserts the status, line and column of the first error of `s`. */
static void parse_err(const char *s, wm_nbhd_status want, uint32_t line, uint32_t col)
{
    wm_nbhd_file f;
    wm_nbhd_error e;
    wm_nbhd_status st = wm_nbhd_parse(s, strlen(s), &f, &e);
    cr_expect_eq(st, want, "\"%s\": got %s (%s), want %s", s, wm_nbhd_status_name(st), e.message, wm_nbhd_status_name(want));
    cr_expect_eq(e.pos.line, line, "\"%s\": line %u, want %u (%s)", s, e.pos.line, line, e.message);
    cr_expect_eq(e.pos.col, col, "\"%s\": column %u, want %u (%s)", s, e.pos.col, col, e.message);
    cr_expect_eq(f.n_nbhds, 0);
    cr_expect(e.message[0]);
}

Test(nbhd_parse, paper_table_ii_n6)
{
    wm_nbhd_file f = parse_ok("# Table II\n\nN6: ({z}, {road/#}, C) \xe2\x80\xa2 3(Prev, {road/#}, T) . ({2,3,4}, {transport/parking}, T)\n");
    cr_assert_eq(f.n_nbhds, 1);
    wm_nbhd *n = &f.nbhds[0];
    cr_expect_str_eq(n->name, "N6");
    cr_assert_eq(n->n_stages, 5);
    cr_expect_eq(n->stages[0].refkind, WM_REFS_PEIDS);
    cr_expect_eq(n->stages[0].n_peids, 1);
    cr_expect_str_eq(n->stages[0].peids[0].peid, "z");
    cr_expect_eq(n->stages[0].rel, WM_REL_CONTAINS);
    cr_expect_eq(n->stages[1].ref_stages, 0x1, "Prev of stage 2 = {1}");
    cr_expect_eq(n->stages[2].ref_stages, 0x3, "Prev of stage 3 = {1,2}");
    cr_expect_eq(n->stages[3].ref_stages, 0x7, "Prev of stage 4 = {1,2,3}");
    cr_expect_eq(n->stages[4].ref_stages, 0xe, "{2,3,4}");
    cr_expect_str_eq(n->stages[4].cats[0], "transport/parking");
    cr_expect_eq(n->visible, 0x1f, "default: all stages visible");
    wm_nbhd_file_free(&f);
}

Test(nbhd_parse, peids_filters_conditions_visible)
{
    wm_nbhd_file f = parse_ok("X3: ({a339724631, \"q \\\"x\\\\\", 42}, {road/#}, DW30) . (Anc, {road/minor/+}, T) . "
                              "({1,2}, {shop/+, transport/parking}, DW 12.5)  visible {3}   # comment\r\n"
                              "e:({x},{\"a b\"},E).(Anc,{#},I).(Anc,{+},D)\n");
    cr_assert_eq(f.n_nbhds, 2);
    wm_nbhd *n = &f.nbhds[0];
    cr_expect_str_eq(n->stages[0].peids[1].peid, "q \"x\\");
    cr_expect_eq(n->stages[0].peids[1].pos.col, 19);
    cr_expect_str_eq(n->stages[0].peids[2].peid, "42", "a bare numeric peid");
    cr_expect_eq(n->stages[0].rel, WM_REL_DWITHIN);
    cr_expect_eq(n->stages[0].distance_m, 30.0);
    cr_expect_eq(n->stages[1].ref_stages, 0x1);
    cr_expect_eq(n->stages[2].ref_stages, 0x3);
    cr_expect_eq(n->stages[2].n_cats, 2);
    cr_expect_eq(n->stages[2].distance_m, 12.5);
    cr_expect_eq(n->visible, 0x4);
    wm_nbhd *m = &f.nbhds[1];
    cr_expect_str_eq(m->stages[0].cats[0], "a b");
    cr_expect_eq(m->stages[0].rel, WM_REL_EQUALS);
    cr_expect_eq(m->stages[1].rel, WM_REL_INTERSECTS);
    cr_expect_eq(m->stages[2].rel, WM_REL_DISJOINT);
    cr_expect_eq(m->stages[2].ref_stages, 0x2, "Anc of stage 3 = {2}");
    wm_nbhd_file_free(&f);
}

Test(nbhd_parse, empty_and_comment_only_files)
{
    wm_nbhd_file f = parse_ok("");
    cr_expect_eq(f.n_nbhds, 0);
    f = parse_ok("  # nothing\n\n\t\n");
    cr_expect_eq(f.n_nbhds, 0);
}

Test(nbhd_parse, syntax_errors_have_line_and_column)
{
    parse_err("X: ({a}, {b}, T)\nY ({a}, {b}, T)\n", WM_NBHD_ERR_SYNTAX, 2, 3);   /* missing ':' */
    parse_err("X: ({a} {b}, T)", WM_NBHD_ERR_SYNTAX, 1, 9);                      /* missing ',' */
    parse_err("X: ({a}, {b}, Q)", WM_NBHD_ERR_SYNTAX, 1, 15);                    /* unknown condition */
    parse_err("X: ({a}, {b}, DW)", WM_NBHD_ERR_SYNTAX, 1, 17);                   /* DW without distance */
    parse_err("X: ({a}, {b}, T", WM_NBHD_ERR_SYNTAX, 1, 16);                     /* unclosed stage */
    parse_err("X: ({a}, {b}, T) .", WM_NBHD_ERR_SYNTAX, 1, 19);                  /* dangling separator */
    parse_err("X: ({a}, {b}, T) junk", WM_NBHD_ERR_SYNTAX, 1, 18);
    parse_err("X: ({a!}, {b}, T)", WM_NBHD_ERR_SYNTAX, 1, 7);                    /* bad peid character */
    parse_err("X: (Prev2, {b}, T)", WM_NBHD_ERR_SYNTAX, 1, 5);
    parse_err(":({a},{b},T)", WM_NBHD_ERR_SYNTAX, 1, 1);                          /* no name */
    parse_err("X: ({a}, {b}, T) . (foo, {b}, T)", WM_NBHD_ERR_SYNTAX, 1, 21);
    
}

Test(nbhd_parse, nul_and_cr_bytes)
{
    wm_nbhd_file f;
    wm_nbhd_error e;
    cr_expect_eq(wm_nbhd_parse("X: ({a}\0, {b}, T)", 17, &f, &e), WM_NBHD_ERR_SYNTAX);
    cr_expect_eq(e.pos.col, 8);
    cr_expect_eq(wm_nbhd_parse("X: ({a}\r, {b}, T)", 17, &f, &e), WM_NBHD_ERR_SYNTAX);
    cr_expect_eq(e.pos.col, 8);
}

Test(nbhd_parse, empty_sets)
{
    parse_err("X: ({}, {b}, T)", WM_NBHD_ERR_EMPTY_SET, 1, 5);
    parse_err("X: ({a}, { }, T)", WM_NBHD_ERR_EMPTY_SET, 1, 10);
    parse_err("X: ({a}, {b}, T) . ({}, {b}, T)", WM_NBHD_ERR_EMPTY_SET, 1, 21);
    parse_err("X: ({a}, {b}, T) visible {}", WM_NBHD_ERR_EMPTY_SET, 1, 26);
}

Test(nbhd_parse, bad_strings)
{
    parse_err("X: ({\"abc}, {b}, T)", WM_NBHD_ERR_BAD_STRING, 1, 6);             /* unterminated */
    parse_err("X: ({\"a\\nb\"}, {b}, T)", WM_NBHD_ERR_BAD_STRING, 1, 8);          /* bad escape */
    parse_err("X: ({\"a\tb\"}, {b}, T)", WM_NBHD_ERR_BAD_STRING, 1, 8);           /* control byte */
    parse_err("X: ({\"\"}, {b}, T)", WM_NBHD_ERR_BAD_STRING, 1, 6);               /* empty peid */
    parse_err("X: ({\"\xff\"}, {b}, T)", WM_NBHD_ERR_BAD_STRING, 1, 6);           /* not UTF-8 */
}

Test(nbhd_parse, bad_numbers)
{
    parse_err("X: 0({a}, {b}, T)", WM_NBHD_ERR_BAD_NUMBER, 1, 4);                 /* COUNT 0 */
    parse_err("X: ({a}, {b}, T) . 65(Prev, {b}, T)", WM_NBHD_ERR_BAD_NUMBER, 1, 20);
    parse_err("X: ({a}, {b}, DW100000001)", WM_NBHD_ERR_BAD_NUMBER, 1, 17);
    parse_err("X: ({a}, {b}, DW1.)", WM_NBHD_ERR_SYNTAX, 1, 19);
    /* a distance spelled as a word or with an exponent: bad_number at the distance, not "expected a condition" */
    parse_err("X: ({a}, {b}, DWnan)", WM_NBHD_ERR_BAD_NUMBER, 1, 17);
    parse_err("X: ({a}, {b}, DWinf)", WM_NBHD_ERR_BAD_NUMBER, 1, 17);
    parse_err("X: ({a}, {b}, DW1e999)", WM_NBHD_ERR_BAD_NUMBER, 1, 18);
    parse_err("X: ({a}, {b}, DW2.5E3)", WM_NBHD_ERR_BAD_NUMBER, 1, 20);
    parse_err("X: ({a}, {b}, DX)", WM_NBHD_ERR_SYNTAX, 1, 15);
    parse_err("X: ({a}, {b}, T) . ({99999999999}, {b}, T)", WM_NBHD_ERR_BAD_NUMBER, 1, 22);
}

Test(nbhd_parse, bad_category_filters)
{
    parse_err("X: ({a}, {road/#/x}, T)", WM_NBHD_ERR_BAD_CATFILTER, 1, 16);      /* '#' not last: at the '#' */
    parse_err("X: ({a}, {ro+ad}, T)", WM_NBHD_ERR_BAD_CATFILTER, 1, 13);         /* '+' not alone */
    parse_err("X: ({a}, {b, $share/g/road}, T)", WM_NBHD_ERR_BAD_CATFILTER, 1, 14);
    parse_err("X: ({a}, {\"\"}, T)", WM_NBHD_ERR_BAD_CATFILTER, 1, 11);          /* empty filter */
}

Test(nbhd_parse, stage_references)
{
    parse_err("X: (Prev, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 5);                  /* Prev on stage 1 */
    parse_err("X: (Anc, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 5);
    parse_err("X: ({a}, {b}, T) . ({2}, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 22);  /* itself */
    parse_err("X: ({a}, {b}, T) . ({1, 3}, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 25); /* forward */
    parse_err("X: ({a}, {b}, T) . ({0}, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 22);  /* stage 0 */
    parse_err("X: 2({a}, {b}, T)", WM_NBHD_ERR_STAGE_REF, 1, 4);                  /* COUNT on stage 1 */
    /* A set that is backward for the first copy stays backward for the rest. */
    wm_nbhd_file f = parse_ok("X: ({a}, {b}, T) . 3({1}, {b}, T)");
    cr_expect_eq(f.nbhds[0].n_stages, 4);
    cr_expect_eq(f.nbhds[0].stages[3].ref_stages, 0x1);
    wm_nbhd_file_free(&f);
}

Test(nbhd_parse, visible_out_of_range)
{
    parse_err("X: ({a}, {b}, T) visible {2}", WM_NBHD_ERR_VISIBLE, 1, 27);
    parse_err("X: ({a}, {b}, T) visible {0}", WM_NBHD_ERR_VISIBLE, 1, 27);
    parse_err("X: ({a}, {b}, T) visible 1", WM_NBHD_ERR_SYNTAX, 1, 26);
}

Test(nbhd_parse, duplicate_names)
{
    parse_err("A: ({a}, {b}, T)\nB: ({a}, {b}, T)\n  A: ({a}, {b}, T)\nB: ({a}, {b}, T)", WM_NBHD_ERR_DUP_NAME, 3, 3);
}

Test(nbhd_parse, limits)
{
    /* 64 stages are fine, 65 are not. */
    parse_err("X: ({a}, {b}, T) . 63(Prev, {b}, T) . (Anc, {b}, T)", WM_NBHD_ERR_LIMIT, 1, 39);
    wm_nbhd_file f = parse_ok("X: ({a}, {b}, T) . 63(Prev, {b}, T)");
    cr_expect_eq(f.nbhds[0].n_stages, 64);
    cr_expect_eq(f.nbhds[0].stages[63].ref_stages, ~0ull >> 1);
    wm_nbhd_file_free(&f);
    char name[300];
    memset(name, 'n', 256);
    strcpy(name + 256, ": ({a}, {b}, T)");
    parse_err(name, WM_NBHD_ERR_LIMIT, 1, 1);
    static char big[WM_NBHD_MAX_TOKEN + 64];
    strcpy(big, "X: ({");
    memset(big + 5, 'p', WM_NBHD_MAX_TOKEN + 1);
    strcpy(big + 5 + WM_NBHD_MAX_TOKEN + 1, "}, {b}, T)");
    parse_err(big, WM_NBHD_ERR_LIMIT, 1, 6);
}

Test(nbhd_parse, parse_one_and_formatting)
{
    wm_nbhd n;
    wm_nbhd_error e;
    const char *s = "N: ({z}, {road/#}, C) . 3(Prev, {road/#}, T)";
    cr_assert_eq(wm_nbhd_parse_one(s, strlen(s), &n, &e), WM_NBHD_OK);
    cr_expect_eq(n.n_stages, 4);
    wm_nbhd_free(&n);
    cr_expect_eq(wm_nbhd_parse_one("N: ({z}, {r}, T)\nM: ({z}, {r}, T)", 33, &n, &e), WM_NBHD_ERR_SYNTAX);
    cr_expect_eq(e.pos.col, 17);
    cr_expect_eq(wm_nbhd_parse_one("", 0, &n, &e), WM_NBHD_ERR_SYNTAX);
    char buf[300];
    cr_expect_str_eq(wm_nbhd_error_format(&e, buf, sizeof buf), "1:1: expected a neighborhood name, found end of line");
}
