#!/usr/bin/env bash
# Arrows point one way: dataplane -> control -> matcher -> codec. A source file
# may include headers of its own layer and the layers below, never above, and
# nothing includes perf/, tests/ or dataplane/ from the layers.
set -euo pipefail
rank() { case $1 in codec) echo 0;; matcher) echo 1;; control) echo 2;; dataplane) echo 3;; *) echo 9;; esac; }
bad=0
for L in codec matcher control dataplane; do
  for f in $(ls $L/*.c $L/*.h 2>/dev/null); do
    while IFS= read -r inc; do
      top=${inc%%/*}
      case $top in codec|matcher|control|dataplane|perf|tests) ;; *) continue;; esac
      if [ "$(rank "$top")" -gt "$(rank "$L")" ]; then
        echo "check-layers: $f includes $inc (arrow points up: $L -> $top)"; bad=1
      fi
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f")
  done
done
[ $bad -eq 0 ] && echo "check-layers: arrows point one way"
exit $bad
