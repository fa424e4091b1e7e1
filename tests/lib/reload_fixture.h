/* Files for the hot-reload tests (control/reload.h): a resolution file of
 * hand-picked peid sets over the small world of tests/lib/world_fixture.h,
 * and a subscriptions file, both written into a fresh temporary directory.
 * Not thread safe; call from the test's main thread. */
#ifndef WM_TESTS_LIB_RELOAD_FIXTURE_H
#define WM_TESTS_LIB_RELOAD_FIXTURE_H

#include <stddef.h>

/* One neighborhood: a name and a NULL-terminated list of the small world's
 * peids ("sq1", "p_in", ...), visible as one stage. */
typedef struct wm_test_nbhd {
    const char *name;
    const char *const *peids;
} wm_test_nbhd;

/* Creates a temporary directory (mkdtemp) and returns its path (static
 * storage, overwritten by the next call); NULL on failure. */
const char *wm_test_tmpdir(void);

/* Writes dir/file holding text; returns the malloc'd path or NULL. */
char *wm_test_write_text(const char *dir, const char *file, const char *text);

/* Resolves the n neighborhoods over the small world and writes them as a
 * .wmr to dir/file; returns the malloc'd path or NULL (with a message on
 * stderr). */
char *wm_test_write_wmr(const char *dir, const char *file, const wm_test_nbhd *nb, size_t n);

#endif
