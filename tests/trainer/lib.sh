# Shared by the coral-train test scripts (source it): the two programs from the arguments, a
# scratch directory removed on exit, parameter comparison, ok/bad counting into $fails, and
# expect_fail for bad input.
run=$1
train=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmp="python3 $here/compare_params.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect_fail PATTERN ARGS...: coral-train on 2 ranks must fail (not time out) and print PATTERN.
expect_fail() {
  local pat=$1
  shift
  local out
  out=$("$run" -n 2 --timeout 60 "$train" "$@" 2>&1)
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "$out" | grep -q -- "$pat"; then ok "$* -> $pat"
  else bad "$* (rc $rc): expected '$pat'"; echo "$out" | tail -3; fi
}
