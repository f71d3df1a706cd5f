#!/bin/bash
# Every C/C++ source is formatted as .clang-format says (clang-format 14, Debian's).
set -uo pipefail
cd "$1" || exit 1
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
bad=0
while read -r f; do
  clang-format --style=file "$f" | cmp -s - "$f" || { echo "not formatted: $f (clang-format -i $f)"; bad=1; }
done < <(git ls-files 'src/*' 'include/*' 'tools/*' 'bench/*' 'examples/*' 'tests/*' 2>/dev/null | grep -E '\.(c|cc|h|hpp|cu|cuh)$')
[ $bad = 0 ] && echo "format: ok"
exit $bad
