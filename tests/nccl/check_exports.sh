#!/bin/bash
# The shim must export every function nccl.h declares, each also as its pnccl alias, and no
# other global symbol but those (Python loads extensions RTLD_NOW: one missing name breaks import).
# Usage: check_exports.sh LIBNCCL NCCL_H
set -u
lib=$1 header=$2
[ -f "$lib" ] && [ -f "$header" ] || { echo "usage: $0 LIBNCCL NCCL_H"; exit 2; }
# Declarations look like `ncclResult_t  ncclAllReduce(` or `const char*  ncclGetErrorString(`.
want=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]p?nccl[A-Za-z0-9_]+\(' "$header" | grep -oE 'p?nccl[A-Za-z0-9_]+\($' |
  tr -d '(' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sed 's/@.*//' | sort -u)
fails=0
n=0
for f in $want; do
  n=$((n + 1))
  grep -qx "$f" <<<"$have" || { echo "FAIL: $lib does not export $f"; fails=$((fails + 1)); }
done
# Every ncclX has its pnccl alias even where the header declares only one of them.
for f in $(grep -E '^nccl' <<<"$want"); do
  grep -qx "p$f" <<<"$have" || { echo "FAIL: $lib does not export p$f"; fails=$((fails + 1)); }
done
extra=$(comm -23 <(echo "$have") <(printf '%s\n' $want $(grep -E '^nccl' <<<"$want" | sed 's/^/p/') | sort -u))
if [ -n "$extra" ]; then
  echo "FAIL: $lib exports symbols nccl.h does not declare: $(echo $extra)"
  fails=$((fails + 1))
fi
[ "$n" -ge 40 ] || { echo "FAIL: found only $n declarations in $header"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "exports: all $n functions of $header, with pnccl aliases, and nothing else"
exit $((fails > 0))
