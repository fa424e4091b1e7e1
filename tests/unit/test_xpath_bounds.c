/* The compile-cost bounds of content-filter patterns (matcher/xpath_parse.h:
 * WM_XP_MAX_PATTERN, WM_XP_MAX_REPEAT, WM_XP_MAX_WIDTH). Hyperscan unrolls
 * bounded repetitions: unbounded, one matches(@vs, ".{30000}") held a worker
 * ~20 s and ~430 MB before Hyperscan refused it (review finding 6). Each costly
 * query is compiled in a child process under a tight CPU and address-space
 * limit, so a missing bound shows as the child killed (SIGXCPU) or out of
 * memory, not as a timed assertion; the refusal must come with its reason and
 * position. Widths follow the rule documented in xpath_parse.h. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec/exi_xsd.h"
#include "matcher/xpath_filter.h"
#include "tests/lib/exi_fixture.h"
#include "tests/lib/xpf_check.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1 /* ASan reserves terabytes of address space: no RLIMIT_AS */
#else
#define UNDER_ASAN 0
#endif
/* ASan's allocator makes the compile ~4x slower (the \p{L} case below: 0.7 s
 * plain, ~3 s under ASan); an unbounded query costs 20 s and more even plain. */
#define CPU_LIMIT_S (UNDER_ASAN ? 12 : 3)

static const char xsd[] =
    "<xs:schema xmlns:xs='http://www.w3.org/2001/XMLSchema'>"
    "<xs:element name='r'><xs:complexType><xs:attribute name='vs' type='xs:string'/>"
    "<xs:attribute name='n' type='xs:string'/></xs:complexType></xs:element></xs:schema>";

static wm_exi_grammar *grammar(void)
{
    return wm_test_xpf_grammar(xsd);
}

static size_t vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Compiles q in a child limited to CPU_LIMIT_S of CPU and 96 MiB more address space
 * (a bounded query needs ~10 ms and a few MiB; ".{2000}" alone took 2.2 s,
 * ".{30000}" 20 s and 430 MB). Expects status st at 1-based position pos with
 * needle in the message. */
static void compile_limited(const char *q, wm_xpf_status st, unsigned pos, const char *needle)
{
    wm_exi_grammar *g = grammar();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct rlimit cpu = { CPU_LIMIT_S, CPU_LIMIT_S + 1 };
        setrlimit(RLIMIT_CPU, &cpu);
        if (!UNDER_ASAN) {
            struct rlimit as = { vm_bytes() + (96u << 20), vm_bytes() + (96u << 20) };
            setrlimit(RLIMIT_AS, &as);
        }
        wm_xpf *f = NULL;
        wm_xpf_error fe = { 0 };
        const char *qs[] = { "//r[@n = 'x']", q };
        wm_xpf_status got = wm_xpf_compile(g, qs, 2, NULL, 0, &f, &fe);
        if (got != st || (st != WM_XPF_OK && (fe.query != 1 || fe.pos != pos || !strstr(fe.msg, needle)))) {
            fprintf(stderr, "%.80s: status %d (expected %d), query %u, position %u (expected %u): %s\n", q, (int)got,
                    (int)st, fe.query, fe.pos, pos, fe.msg);
            _exit(1);
        }
        wm_xpf_free(f);
        _exit(0);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    wm_exi_grammar_free(g);
    cr_assert(!WIFSIGNALED(ws), "%.80s: compile killed by signal %d (%s): its cost is not bounded", q, WTERMSIG(ws),
              strsignal(WTERMSIG(ws)));
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "%.80s: wrong outcome (see stderr)", q);
}

Test(xpath_bounds, costly_repetition_refused_before_compiling)
{
    /* the reviewer's query: the '{' of the count is at 20 */
    compile_limited("//r[matches(@vs, \".{30000}\")]", WM_XPF_E_QUERY, 20, "repetition count 30000 above 255");
    compile_limited("//r[matches(@vs, 'a{0,256}')]", WM_XPF_E_QUERY, 20, "repetition count 256");
    compile_limited("//r[matches(@vs, 'x.{300,}')]", WM_XPF_E_QUERY, 21, "repetition count 300");
    /* nested counts multiply: 100 x 100 (width at the pattern's quote, 18) */
    compile_limited("//r[matches(@vs, '(.{100}){100}')]", WM_XPF_E_QUERY, 18, "expand to 10000 positions");
    compile_limited("//r[matches(@vs, '((.{16}){16}){16}')]", WM_XPF_E_QUERY, 18, "expand to 4096 positions");
}

Test(xpath_bounds, width_summed_over_the_query)
{
    /* 200 + 57 > 256, the second pattern's quote is at 43 */
    compile_limited("//r[matches(@vs, '.{200}') or matches(@n, '.{57}')]", WM_XPF_E_QUERY, 43, "expand to 257 positions");
    /* unrolled: 300 dots are 300 positions with no count at all */
    char q[512];
    int k = snprintf(q, sizeof q, "//r[matches(@vs, '");
    memset(q + k, '.', 300);
    snprintf(q + k + 300, sizeof q - (size_t)k - 300, "')]");
    compile_limited(q, WM_XPF_E_QUERY, 18, "expand to 300 positions");
}

Test(xpath_bounds, unicode_properties_weigh_more)
{
    /* UTF-8 mode expands \p{L} to hundreds of byte sequences: \p{L}{30} took 3.1 s and 107 MB alone */
    compile_limited("//r[matches(@vs, '\\p{L}{30}')]", WM_XPF_E_QUERY, 18, "expand to 1920 positions");
    compile_limited("//r[matches(@vs, '[^\\P{Lu}x]{5}')]", WM_XPF_E_QUERY, 18, "expand to 320 positions");
    compile_limited("//r[matches(@vs, '^\\p{L}+$') and matches(@n, '[\\p{L}\\d]{3}')]", WM_XPF_OK, 0, "");
}

Test(xpath_bounds, long_arguments_refused)
{
    char q[WM_XP_MAX_PATTERN + 64];
    int k = snprintf(q, sizeof q, "//r[contains(@vs, '");
    memset(q + k, 'a', WM_XP_MAX_PATTERN + 1);
    snprintf(q + k + WM_XP_MAX_PATTERN + 1, sizeof q - (size_t)k - WM_XP_MAX_PATTERN - 1, "')]");
    compile_limited(q, WM_XPF_E_QUERY, 19, "1025 bytes, more than 1024");
    /* at the limit: accepted (a literal is cheap for Hyperscan) */
    q[k + WM_XP_MAX_PATTERN] = '\'';
    snprintf(q + k + WM_XP_MAX_PATTERN + 1, sizeof q - (size_t)k - WM_XP_MAX_PATTERN - 1, ")]");
    compile_limited(q, WM_XPF_OK, 0, "");
}

Test(xpath_bounds, typical_and_limit_patterns_accepted)
{
    compile_limited("//r[matches(@vs, '.{255}')]", WM_XPF_OK, 0, "");             /* width 255 */
    compile_limited("//r[matches(@vs, '(.{16}){16}')]", WM_XPF_OK, 0, "");        /* width 256 */
    compile_limited("//r[matches(@vs, '^z00042.*q$') and matches(@n, '(vol|cur)')]", WM_XPF_OK, 0, "");
    compile_limited("//r[matches(@vs, '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')]", WM_XPF_OK, 0, "");
    /* braces that are no repetition, escaped or in a class, count as atoms */
    compile_limited("//r[matches(@vs, 'a\\{99999\\}[{]x{,5}')]", WM_XPF_OK, 0, "");
}
