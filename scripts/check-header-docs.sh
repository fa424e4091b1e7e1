#!/usr/bin/env bash
# Public headers document every function (house rule): a prototype of a
# wm_* function in a layer's public header needs a comment that ends on the
# line right above it, or above the group of consecutive prototypes it
# belongs to, with nothing else in between (or a comment on its own line); a
# static (inline) definition needs its own comment on the line right above
# it. So a prototype glued below an inline function's body, a struct, an
# #endif or a #define does not borrow their comment (REVIEW14 finding 5:
# until 2026-12-02 the check walked up over any code to the first comment).
# Internal headers (*_int.h) and the naive reference matcher (naive.h) are
# exempt. Prints each undocumented prototype.
#   check-header-docs.sh            the layers' headers
#   check-header-docs.sh H.h ...    these headers only (the checker's own test)
set -euo pipefail
python3 - "$@" <<'PY'
import glob, re, sys
bad = 0
heads = sys.argv[1:] or sorted(sum((glob.glob(f'{d}/*.h') for d in ('codec', 'matcher', 'control', 'dataplane')), []))
proto = re.compile(r'^(?!static|typedef|#|\s|//|/\*|\*|})[A-Za-z_][\w\s\*]*?\b(wm_\w+)\s*\(')
# a static (inline) definition's first line: its own comment must sit right
# above it; a sibling's comment further up does not say what this one does
inline = re.compile(r'^static\s+(?:inline\s+)?(?:[\w\s\*]|__attribute__\(\([^)]*\)\))*?\b(wm_\w+)\s*\(')
for h in heads:
    if h.endswith('_int.h') or h.endswith('naive.h'):
        continue
    lines = open(h, encoding='utf-8').read().split('\n')
    for i, l in enumerate(lines):
        m = inline.match(l)
        if m:
            above = lines[i - 1].strip() if i else ''
            if not (above.startswith(('//', '/*', '*')) or above.endswith('*/')):
                print(f'check-header-docs: {h}:{i + 1}: {m.group(1)} (static inline) has no comment right above it')
                bad = 1
            continue
        m = proto.match(l)
        if not m or '/*' in l:
            continue
        # the comment may sit above earlier prototypes of the same group
        # (each ending in ';', continued on indented lines); any other line
        # in between (code, a preprocessor line, a blank) ends the search
        j, doc = i - 1, False
        while j >= 0 and lines[j].strip():
            s = lines[j].strip()
            if s.startswith(('//', '/*', '*')) or s.endswith('*/'):
                doc = True
                break
            if not s.endswith(';'):
                break
            k = j
            while k >= 0 and not proto.match(lines[k]) and lines[k][:1] in (' ', '\t') and not set('{}#') & set(lines[k]):
                k -= 1
            if k < 0 or not proto.match(lines[k]) or '{' in lines[k]:
                break
            j = k - 1
        if not doc:
            print(f'check-header-docs: {h}:{i + 1}: {m.group(1)} has no comment')
            bad = 1
if not bad:
    print('check-header-docs: every public function documented')
sys.exit(bad)
PY
