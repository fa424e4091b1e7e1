/* Assertions for the *_concurrent tests, which CI also runs under
 * ThreadSanitizer. Criterion's runner cannot start under TSan (its sandbox
 * maps a shared arena at random addresses TSan reserves: "Could not
 * initialize inheritable arena", Snaipe/Criterion#274), so in the TSan
 * build such a test brings its own main() and these macros print the
 * failure and a Criterion-style Synthesis line (scripts/run-tests.sh reads
 * it) and abort; otherwise they are cr_assert / cr_log_info. */
#ifndef WM_TESTS_LIB_CONCURRENT_CHECK_H
#define WM_TESTS_LIB_CONCURRENT_CHECK_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__SANITIZE_THREAD__)
#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: assertion failed: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            fprintf(stderr, "[====] Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0\n"); \
            abort();                                                                  \
        }                                                                             \
    } while (0)
#define LOG_INFO(...) (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))
#else
#define CHECK(cond, ...) cr_assert(cond, __VA_ARGS__)
#define LOG_INFO(...) cr_log_info(__VA_ARGS__)
#endif

#endif
