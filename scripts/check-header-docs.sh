#!/usr/bin/env bash
# Public headers document every function (house rule): a prototype of a
# wm_* function in a layer's public header needs a comment right above it
# (or on its line); a static (inline) definition needs its own comment on the
# line right above it. Internal headers (*_int.h) and the naive reference
# matcher (naive.h) are exempt. Prints each undocumented prototype.
set -euo pipefail
python3 - "$@" <<'PY'
import glob, re, sys
bad = 0
heads = sorted(sum((glob.glob(f'{d}/*.h') for d in ('codec', 'matcher', 'control', 'dataplane')), []))
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
        j, doc = i - 1, False
        # the comment may sit above attributes or earlier prototypes of the same group
        while j >= 0 and lines[j].strip():
            s = lines[j].strip()
            if s.startswith(('//', '/*', '*')) or s.endswith('*/'):
                doc = True
                break
            j -= 1
        if not doc:
            print(f'check-header-docs: {h}:{i + 1}: {m.group(1)} has no comment')
            bad = 1
if not bad:
    print('check-header-docs: every public function documented')
sys.exit(bad)
PY
