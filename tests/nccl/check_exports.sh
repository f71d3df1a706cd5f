#!/bin/bash
# The shim must export every function nccl.h declares, and the host functions of nccl_device.h
# (NCCL 2.28's device API) where the header has one, each also as its pnccl alias, and no other
# global symbol but those (Python loads extensions RTLD_NOW: one missing name breaks import).
# Given a real libnccl.so.2 too, every function it exports must be exported here.
# Usage: check_exports.sh LIBNCCL NCCL_H [REAL_LIBNCCL]
set -u
lib=$1 header=$2 real=${3:-}
[ -f "$lib" ] && [ -f "$header" ] || { echo "usage: $0 LIBNCCL NCCL_H [REAL_LIBNCCL]"; exit 2; }
exports() { nm -D --defined-only "$1" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sed 's/@.*//' | sort -u; }
# Declarations look like `ncclResult_t  ncclAllReduce(` or `const char*  ncclGetErrorString(`; the
# device API's host functions like `NCCL_EXTERN_C __host__ ncclTeam_t ncclTeamWorld(`.
want=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]p?nccl[A-Za-z0-9_]+\(' "$header" | grep -oE 'p?nccl[A-Za-z0-9_]+\($' |
  tr -d '(' | sort -u)
device=$(dirname "$header")/nccl_device
ndev=0
if [ -d "$device" ]; then
  dev=$(grep -rhoE '^NCCL_EXTERN_C __host__ [A-Za-z0-9_ *]*[ *]nccl[A-Za-z0-9_]+\(' "$device" |
    grep -oE 'nccl[A-Za-z0-9_]+\($' | tr -d '(' | sort -u)
  ndev=$(wc -w <<<"$dev")
  want=$(printf '%s\n' $want $dev | sort -u)
fi
# In no header, but in NCCL's library: kept for parity. And newer NCCL releases' functions,
# exported as not supported (src/compat/nccl/newer_api.cc lists them), each with its alias.
internal="ncclResetDebugInitInternal"
newer_src=$(dirname "$0")/../../src/compat/nccl/newer_api.cc
newer=""
if [ -f "$newer_src" ]; then
  newer=$(grep -oE '^CORAL_NCCL_NEWER\(nccl[A-Za-z0-9_]+\)|void ncclParamDumpAll' "$newer_src" |
    grep -oE 'nccl[A-Za-z0-9_]+' | sort -u)
  internal="$internal $newer $(printf 'p%s ' $newer)"
fi
have=$(exports "$lib")
fails=0
n=0
for f in $want $internal; do
  n=$((n + 1))
  grep -qx "$f" <<<"$have" || { echo "FAIL: $lib does not export $f"; fails=$((fails + 1)); }
done
# Every ncclX has its pnccl alias even where the header declares only one of them.
for f in $(grep -E '^nccl' <<<"$want"); do
  grep -qx "p$f" <<<"$have" || { echo "FAIL: $lib does not export p$f"; fails=$((fails + 1)); }
done
extra=$(comm -23 <(echo "$have") <(printf '%s\n' $want $internal $(grep -E '^nccl' <<<"$want" | sed 's/^/p/') | sort -u))
if [ -n "$extra" ]; then
  echo "FAIL: $lib exports symbols the headers do not declare: $(echo $extra)"
  fails=$((fails + 1))
fi
if [ -n "$real" ] && [ -f "$real" ]; then
  missing=$(comm -23 <(exports "$real" | grep -E '^p?nccl') <(echo "$have"))
  [ -z "$missing" ] || { echo "FAIL: $real exports what $lib does not: $(echo $missing)"; fails=$((fails + 1)); }
  echo "compared with $real"
fi
[ "$n" -ge 40 ] || { echo "FAIL: found only $n declarations in $header"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "exports: all $n functions of $header ($ndev of them nccl_device.h's, $(wc -w <<<"$newer") of newer NCCL releases), with pnccl aliases, and nothing else"
exit $((fails > 0))
