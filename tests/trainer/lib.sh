# Shared by the coral-train test scripts (source it): the two programs from the arguments, a
# scratch directory removed on exit, parameter comparison, and ok/bad counting into $fails.
run=$1
train=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmp="python3 $here/compare_params.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
