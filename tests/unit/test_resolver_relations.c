/* The six relations and the Select / multi-stage semantics of the spaPS paper
 * (§IV) on a small hand-drawn world whose answers can be read off the
 * drawing (projected CRS, metres):
 *
 *   sq1  [0,10]x[0,10]      zone        sq2 [10,20]x[0,10]  zone (shares sq1's east edge)
 *   sq3  [5,15]x[5,15]      zone        dup = sq1 drawn from another start vertex, zone
 *   far  [100,110]^2        zone
 *   p_in (2,2)   shop/a + shop/x        p_edge (10,5) shop/b (on sq1's and sq2's boundary)
 *   l1   (0,-5)-(0,0)  road             l2 (30,0)-(40,0) road/minor/y
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "control/resolver.h"
#include "control/world.h"
#include "tests/lib/world_fixture.h"


static wm_world *w;

static void setup(void)
{
    wm_world_error err;
    w = wm_test_small_world(&err);
    cr_assert(w, "%s", err.message);
}
static void teardown(void) { wm_world_free(w); }

TestSuite(relations, .init = setup, .fini = teardown);

/* Resolves `line` and renders stage `stage` (0 = result) as "a b c". */
static const char *sets(const char *line, size_t stage)
{
    static char out[512];
    wm_nbhd_result r;
    wm_nbhd_error e;
    wm_nbhd_status st = wm_resolve_text(w, line, strlen(line), &r, &e);
    cr_assert_eq(st, WM_NBHD_OK, "%s: %s", line, e.message);
    const uint32_t *v = stage ? r.stage[stage - 1] : r.result;
    size_t n = stage ? r.stage_len[stage - 1] : r.result_len;
    out[0] = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert(k == 0 || v[k - 1] < v[k], "sets are strictly ascending");
        strcat(out, k ? " " : "");
        strcat(out, wm_world_peid(w, v[k]));
    }
    wm_nbhd_result_free(&r);
    return out;
}

Test(relations, equals_is_topological_and_excludes_the_reference)
{
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, E)", 0), "dup");
}

Test(relations, intersects_includes_touching)
{
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, I)", 0), "dup sq2 sq3");
    cr_expect_str_eq(sets("N: ({sq1}, {#}, I)", 0), "dup l1 p_edge p_in sq2 sq3");
}

Test(relations, touches_boundaries_only)
{
    cr_expect_str_eq(sets("N: ({sq1}, {#}, T)", 0), "l1 p_edge sq2");
}

Test(relations, contains_reference_contains_entity)
{
    cr_expect_str_eq(sets("N: ({sq1}, {shop/#}, C)", 0), "p_in", "a point on the boundary is not contained");
    cr_expect_str_eq(sets("N: ({p_in}, {zone}, C)", 0), "", "C is ST_Contains(r, e), not (e, r)");
}

Test(relations, disjoint_needs_one_disjoint_reference)
{
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, D)", 0), "far");
    /* Every zone is disjoint from far or from sq1. */
    cr_expect_str_eq(sets("N: ({sq1, far}, {zone}, D)", 0), "dup sq2 sq3");
    /* sq3 and dup intersect both sq1 and sq2; far intersects neither. */
    cr_expect_str_eq(sets("N: ({sq1, sq2}, {zone}, D)", 0), "far");
    cr_expect_str_eq(sets("N: ({sq1}, {road/#, shop/+}, D)", 0), "l2");
}

Test(relations, dwithin_is_inclusive_metres)
{
    cr_expect_str_eq(sets("N: ({sq2}, {road/#}, DW10)", 0), "l1 l2");
    cr_expect_str_eq(sets("N: ({sq2}, {road/#}, DW9.99)", 0), "");
    cr_expect_str_eq(sets("N: ({far}, {#}, DW0)", 0), "");
    cr_expect_str_eq(sets("N: ({sq1}, {shop/+}, DW0)", 0), "p_edge p_in", "DW0 = intersects");
}

Test(relations, category_filters_are_topic_filters)
{
    cr_expect_str_eq(sets("N: ({sq1}, {road/#}, I)", 0), "l1", "road/# matches road itself");
    /* road/+ needs one more level: it selects no category here (refused) */
    wm_nbhd_result r;
    wm_nbhd_error e;
    const char *plus = "N: ({sq1}, {road/+}, DW100)";
    cr_expect_eq(wm_resolve_text(w, plus, strlen(plus), &r, &e), WM_NBHD_ERR_UNKNOWN_CATEGORY, "%s", e.message);
    cr_expect_str_eq(sets("N: ({sq1}, {road/+/y}, DW100)", 0), "l2");
    cr_expect_str_eq(sets("N: ({sq1}, {shop/a, shop/x}, I)", 0), "p_in", "two matching layers, one entity");
}

Test(relations, later_stages_exclude_only_their_own_references)
{
    /* N[1] = {sq2}; Ref[2] = {sq2}; sq1 (stage 0) comes back in stage 2. */
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, T) . (Anc, {zone}, T)", 1), "sq2");
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, T) . (Anc, {zone}, T)", 2), "dup sq1");
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, T) . (Anc, {zone}, T)", 0), "dup sq1 sq2");
}

Test(relations, prev_anc_sets_and_visible)
{
    const char *n = "N: ({sq1}, {shop/#}, C) . (Anc, {zone}, I) . (Anc, {#}, T) . ({1}, {zone}, C)";
    cr_expect_str_eq(sets(n, 1), "p_in");
    cr_expect_str_eq(sets(n, 2), "dup sq1", "zones intersecting p_in");
    cr_expect_str_eq(sets(n, 3), "l1 p_edge sq2", "touching sq1 or dup (refs excluded)");
    cr_expect_str_eq(sets(n, 4), "", "no zone is contained in a point");
    cr_expect_str_eq(sets("N: ({sq1}, {shop/#}, C) . (Anc, {zone}, I) . (Prev, {#}, T)", 3), "l1 p_edge sq2",
                     "Prev = {1,2}: p_in touches nothing, sq1/dup excluded");
    cr_expect_str_eq(sets("N: ({sq1}, {shop/#}, C) . (Anc, {zone}, I) . (Anc, {#}, T) visible {1,3}", 0),
                     "l1 p_edge p_in sq2");
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, I) . 2(Prev, {zone}, T)", 2), "sq1", "sq1 touches sq2");
    cr_expect_str_eq(sets("N: ({sq1}, {zone}, I) . 2(Prev, {zone}, T)", 3), "", "only far is left; it touches nothing");
}

Test(relations, empty_reference_stage_selects_nothing)
{
    cr_expect_str_eq(sets("N: ({far}, {road/#}, I) . (Anc, {#}, D)", 2), "");
}

Test(relations, unknown_peid_reports_its_position)
{
    wm_nbhd_result r;
    wm_nbhd_error e;
    const char *line = "N: ({sq1, \"nope\"}, {zone}, T)";
    cr_expect_eq(wm_resolve_text(w, line, strlen(line), &r, &e), WM_NBHD_ERR_UNKNOWN_PEID);
    cr_expect_eq(e.pos.line, 1);
    cr_expect_eq(e.pos.col, 11);
    cr_expect(strstr(e.message, "nope"));
    cr_expect_null(r.result);
}

/* REVIEW12 #19: a filter selecting no category of the world (a typo) is
 * refused at its position, on any stage and in a COUNT copy too, instead of
 * resolving to an empty neighborhood. */
Test(relations, unknown_category_reports_its_position)
{
    wm_nbhd_result r;
    wm_nbhd_error e;
    const char *line = "N: ({sq1}, {zone, raod/#}, T)";
    cr_expect_eq(wm_resolve_text(w, line, strlen(line), &r, &e), WM_NBHD_ERR_UNKNOWN_CATEGORY, "%s", e.message);
    cr_expect_eq(e.pos.line, 1);
    cr_expect_eq(e.pos.col, 19);
    cr_expect(strstr(e.message, "\"raod/#\""), "%s", e.message);
    cr_expect_str_eq(wm_nbhd_status_name(e.status), "unknown_category");
    cr_expect_null(r.result);
    line = "N: ({sq1}, {zone}, T) . 2(Prev, {shop/+/x}, I)";
    cr_expect_eq(wm_resolve_text(w, line, strlen(line), &r, &e), WM_NBHD_ERR_UNKNOWN_CATEGORY, "%s", e.message);
    cr_expect_eq(e.pos.col, 34);
    /* a stage that is empty on purpose names a category that exists */
    cr_expect_str_eq(sets("N: ({far}, {road/#}, I) . (Anc, {#}, D)", 2), "");
}

/* More references than candidates: the resolver goes by candidate (each
 * candidate queries a tree of the references and stops at the first that
 * decides it, control/resolver.c select_by_candidate). The same answers as
 * by reference, read off the drawing. */
Test(relations, by_candidate_when_references_outnumber_candidates)
{
    const char *zones = "{sq1, sq2, sq3, dup, far}";
    char line[160];
    snprintf(line, sizeof line, "N: (%s, {shop/#}, I)", zones);
    cr_expect_str_eq(sets(line, 0), "p_edge p_in");
    snprintf(line, sizeof line, "N: (%s, {shop/#}, C)", zones);
    cr_expect_str_eq(sets(line, 0), "p_in", "p_edge lies on sq1's, sq2's and sq3's boundaries");
    snprintf(line, sizeof line, "N: (%s, {shop/#}, T)", zones);
    cr_expect_str_eq(sets(line, 0), "p_edge", "p_in is inside sq1 and dup, on no boundary");
    snprintf(line, sizeof line, "N: (%s, {shop/#}, D)", zones);
    cr_expect_str_eq(sets(line, 0), "p_edge p_in", "far is disjoint from both");
    snprintf(line, sizeof line, "N: (%s, {shop/#}, E)", zones);
    cr_expect_str_eq(sets(line, 0), "");
    /* D: p_in intersects both references (one of them handed out by no index query) */
    cr_expect_str_eq(sets("N: ({sq1, dup}, {shop/a}, D)", 0), "");
    cr_expect_str_eq(sets("N: ({sq1, far}, {shop/a}, D)", 0), "p_in", "far is never near p_in in the index");
    /* DWd: p_edge (10,5) is 20.6 m from l2 and ~90 m from far */
    cr_expect_str_eq(sets("N: ({far, l2}, {shop/b}, DW20)", 0), "");
    cr_expect_str_eq(sets("N: ({far, l2}, {shop/b}, DW21)", 0), "p_edge");
    /* the references themselves stay excluded, even among the candidates */
    cr_expect_str_eq(sets("N: ({sq1, sq2, sq3}, {zone}, I)", 0), "dup");
}
