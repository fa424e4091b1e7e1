#!/usr/bin/env bash
# Public headers document every function (house rule): a prototype of a
# wm_* function in a layer's public header needs a comment right above it
# (or on its line). Internal headers (*_int.h) and the naive reference
# matcher (naive.h) are exempt. Prints each undocumented prototype.
set -euo pipefail
python3 - "$@" <<'PY'
import glob, re, sys
bad = 0
heads = sorted(sum((glob.glob(f'{d}/*.h') for d in ('codec', 'matcher', 'control', 'dataplane')), []))
proto = re.compile(r'^(?!static|typedef|#|\s|//|/\*|\*|})[A-Za-z_][\w\s\*]*?\b(wm_\w+)\s*\(')
for h in heads:
    if h.endswith('_int.h') or h.endswith('naive.h'):
        continue
    lines = open(h, encoding='utf-8').read().split('\n')
    for i, l in enumerate(lines):
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
