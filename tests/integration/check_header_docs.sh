#!/usr/bin/env bash
# The header-documentation check itself (scripts/check-header-docs.sh,
# REVIEW14 finding 5): a prototype's comment must end right above it or
# above its group of consecutive prototypes. A prototype glued below an
# inline function's body, a struct, an #endif or a #define has none of its
# own and must fail the check; documented ones and groups must pass.
set -euo pipefail
cd "${WM_ROOT:-.}"
T=$(mktemp -d /tmp/wm_hdrdocs_XXXXXX)
trap 'rm -rf "$T"' EXIT

cat >"$T/good.h" <<'H'
/* A good header. */
#ifndef GOOD_H
#define GOOD_H
#include <stdint.h>
/* Opens one; returns 0 or -1. Any thread. */
int wm_good_open(const char *path,
                 uint32_t flags);
int wm_good_reopen(const char *path);
/* Closes it. */
void wm_good_close(int h); /* (its own line may carry more) */
void wm_good_flush(int h); /* a comment on its own line */
#endif
H
out=$(bash scripts/check-header-docs.sh "$T/good.h") || { echo "good.h refused: $out"; exit 1; }

n=0
for glued in inline struct endif define typedef; do
  {
    echo "/* A header whose last prototype borrows a comment. */"
    case $glued in
      inline)  printf '/* Doubles x. */\nstatic inline int wm_twice(int x)\n{\n    return 2 * x;\n}\n' ;;
      struct)  printf '/* A pair. */\nstruct wm_pair {\n    int a, b;\n};\n' ;;
      endif)   printf '#ifdef WM_TEST_HOOKS\n/* Test builds only. */\nvoid wm_hook(unsigned n);\n#endif\n' ;;
      define)  printf '/* The most. */\n#define WM_MOST 8\n' ;;
      typedef) printf '/* Counts. */\ntypedef struct wm_counts {\n    int n;\n} wm_counts;\n' ;;
    esac
    echo "int wm_undocumented(int x);"
  } >"$T/$glued.h"
  if out=$(bash scripts/check-header-docs.sh "$T/$glued.h"); then
    echo "a prototype glued below a $glued passed: $out"; exit 1
  fi
  grep -q "$glued.h:.*wm_undocumented has no comment" <<<"$out" || { echo "$glued: $out"; exit 1; }
  n=$((n + 1))
done
echo "check-header-docs: good header passes, $n glued prototypes refused"
