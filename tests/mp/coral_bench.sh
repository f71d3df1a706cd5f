#!/bin/bash
# coral-bench: nccl-tests-compatible output for every collective, the checker catching a
# corrupted result, flag validation, JSON/CSV/plot outputs.
set -u
run=$1 bench=$2
here=$(dirname "$0")
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quick=(-b 8 -e 1M -f 8 -n 3 -w 1)

for coll in allreduce reducescatter allgather broadcast reduce; do
  out=$("$run" -n 3 --no-prefix "$bench" -t "$coll" "${quick[@]}" -r 1) || fail "$coll: exit $?: $out"
  echo "$out" | python3 "$here/parse_nccl.py" 3 "$coll" || fail "$coll output"
done
out=$("$run" -n 2 --no-prefix "$bench" -b 4K -e 4K -d all -o all -n 2 -w 1) || fail "all types and ops: $out"
echo "$out" | python3 "$here/parse_nccl.py" 2 allreduce || fail "all types/ops output"
[ "$(echo "$out" | grep -vc '^#')" -eq 60 ] || fail "expected 12 dtypes x 5 ops rows"

# The newer collectives, checked (-c 1), under nccl-tests' names where it has one; the v-forms
# with empty blocks. parse_nccl.py knows busbw factors by name: theirs is all-gather's (P-1)/P.
for coll in alltoall alltoallv gather scatter allgatherv reducescatterv; do
  out=$("$run" -n 3 --no-prefix "$bench" -t "$coll" -b 64 -e 256K -f 64 -n 2 -w 1 -r 2 -c 1 --skew inf -d all) ||
    fail "$coll: exit $?: $out"
  echo "$out" | python3 "$here/parse_nccl.py" 3 allgather || fail "$coll output"
  echo "$out" | grep -q "# Out of bounds values : 0 OK" || fail "$coll results: $out"
  echo "$out" | grep -q "# Collective: $coll " || fail "$coll header: $out"
  [ "$(echo "$out" | grep -vc '^#')" -eq 36 ] || fail "$coll: expected 12 dtypes x 3 sizes rows: $out"
  # The algorithm column names what runs: the v-forms' one algorithm, the tuner's pick for the others.
  case $coll in
    alltoall|alltoallv) algos="pairwise|bruck" ;;
    gather|scatter) algos="direct|tree" ;;
    *) algos="ring" ;;
  esac
  echo "$out" | awk -v a="^($algos)\$" '/^ +[0-9]/ && $(NF-2) !~ a {bad = 1} END {exit bad}' || fail "$coll algo column: $out"
  # The root column: the root for gather and scatter, -1 for the others (nccl-tests' convention).
  root=-1; [ $coll = gather ] || [ $coll = scatter ] && root=2
  echo "$out" | awk -v r=$root '/^ +[0-9]/ && $5 != r {bad = 1} END {exit bad}' || fail "$coll root column: $out"
done
# nccl-tests' binary names and an even and a skewed all-to-all-v; the columns are nccl-tests':
# the buffer's bytes and a rank's block (its count argument), rounded down to 16 bytes.
out=$("$run" -n 3 --no-prefix "$bench" -t all_to_all_perf -b 3K -e 3K -n 1 -w 0) || fail "-t all_to_all_perf: $out"
echo "$out" | grep -q "^ *3072 *256 *float *none " || fail "alltoall 3K is not 3 blocks of 256 floats: $out"
out=$("$run" -n 3 --no-prefix "$bench" -t allgather -b 100 -e 100 -n 1 -w 0 -c 0) || fail "allgather 100: $out"
echo "$out" | grep -q "^ *96 *8 *float *none *-1 .* N/A .* N/A" || fail "allgather 100 B over 3 ranks, unchecked: $out"
for skew in 1 4; do
  out=$("$run" -n 4 --no-prefix "$bench" -t alltoallv -b 64K -e 64K -n 1 -w 0 --skew $skew) || fail "--skew $skew: $out"
  echo "$out" | grep -q "Out of bounds values : 0 OK" || fail "--skew $skew results: $out"
done
# PreMulSum: an op with a per-rank scalar, for every reducing collective and dtype.
for coll in allreduce reducescatter reduce reducescatterv; do
  out=$("$run" -n 3 --no-prefix "$bench" -t $coll -b 1K -e 64K -f 64 -n 1 -w 1 -o premulsum -d all) ||
    fail "-o premulsum -t $coll: $out"
  echo "$out" | grep -q "Out of bounds values : 0 OK" || fail "-o premulsum -t $coll results: $out"
  echo "$out" | awk '/^ +[0-9]/ && $4 != "premulsum" {bad = 1} END {exit bad}' || fail "premulsum redop column: $out"
done
out=$("$run" -n 2 --no-prefix "$bench" -b 1K -e 1K -n 1 -w 0 -o mulsum) && grep -q " premulsum " <<<"$out" ||
  fail "-o mulsum (nccl-tests' name): $out"
# A corrupted all-to-all result is caught too.
out=$("$run" -n 3 --no-prefix "$bench" -t alltoall -b 1K -e 1K -n 1 -w 0 --inject-error 2>&1) && fail "corrupted all-to-all gave exit 0"
echo "$out" | grep -q "# Out of bounds values : [1-9][0-9]* FAILED" || fail "all-to-all corruption not reported: $out"

# A corrupted result is caught: #wrong > 0, FAILED footer, non-zero exit.
out=$("$run" -n 2 --no-prefix "$bench" -b 1K -e 1K -n 2 -w 1 --inject-error 2>&1); rc=$?
[ $rc -ne 0 ] || fail "corrupted result gave exit 0"
echo "$out" | grep -q "# Out of bounds values : [1-9][0-9]* FAILED" || fail "corruption not reported: $out"

# JSON, CSV, plot.
"$run" -n 2 --no-prefix "$bench" "${quick[@]}" -J "$tmp/r.json" --plot "$tmp/r.png" > /dev/null || fail "json/plot run"
python3 -c "import json,sys; j=json.load(open('$tmp/r.json')); assert j['nranks']==2 and len(j['results'])==6 and j['out_of_bounds']==0 and all(r['model_us'] > 0 for r in j['results']), j" \
  || fail "JSON content"
if command -v gnuplot >/dev/null; then
  head -c 4 "$tmp/r.png" | od -c | grep -q "P   N   G" || fail "--plot wrote no PNG"
fi
csv=$("$run" -n 2 --no-prefix "$bench" "${quick[@]}" --csv) || fail "csv run"
[ "$(echo "$csv" | head -1 | cut -d, -f1-5)" = "size,count,type,redop,root" ] || fail "CSV header: $csv"
[ "$(echo "$csv" | wc -l)" -eq 7 ] || fail "CSV rows: $csv"

# Trials: the warm-up runs through them (the algorithm column is the pick), the picks come out
# as a CORAL_ALGO value, and a run with that value makes the same choices without trials.
out=$(CORAL_TUNE_TRIALS=1 "$run" -n 4 --no-prefix "$bench" -b 64K -e 1M -f 4 -n 2 -w 1) || fail "trials run: $out"
echo "$out" | python3 "$here/parse_nccl.py" 4 allreduce || fail "trials output"
picks=$(echo "$out" | sed -n "s/^# Trials' picks as CORAL_ALGO: //p")
[[ "$picks" == allreduce:64K-128K:*,256K-512K:*,1M-2M:* ]] || fail "trials' picks: '$picks' in $out"
fixed=$(CORAL_ALGO="$picks" "$run" -n 4 --no-prefix "$bench" -b 64K -e 1M -f 4 -n 2 -w 1) || fail "CORAL_ALGO=$picks: $fixed"
[ "$(echo "$out" | awk '/^ +[0-9]/ {print $(NF-2)}')" = "$(echo "$fixed" | awk '/^ +[0-9]/ {print $(NF-2)}')" ] ||
  fail "CORAL_ALGO=$picks chose otherwise: $fixed"
echo "$fixed" | grep -q "Trials' picks" && fail "picks printed without trials"

# --device on the stand-in GPU: stream-ordered calls, every collective checked, in and out of place.
for t in allreduce reducescatter allgather broadcast reduce alltoall alltoallv gather scatter allgatherv reducescatterv; do
  out=$(CORAL_GPU_EMULATE=1 "$run" -n 3 --no-prefix "$bench" --device -t $t -b 8 -e 1M -f 64 -n 2 -w 1 -d all \
    --skew inf 2>&1) ||
    fail "--device -t $t: $out"
  echo "$out" | grep -q "Buffers: GPU" || fail "--device header: $out"
  echo "$out" | grep -q "Out of bounds values : 0 OK" || fail "--device -t $t results: $out"
  # The bound is measured over host links: for device buffers there is none to compare with.
  echo "$out" | awk '/^ +[0-9]/ && $NF != "n/a" {bad = 1} END {exit bad}' || fail "--device %bound is not n/a: $out"
done
CORAL_GPU_EMULATE=1 "$run" -n 2 --no-prefix "$bench" --device -b 8 -e 64 -n 1 -w 0 -J "$tmp/d.json" --csv > "$tmp/d.csv" ||
  fail "--device json/csv run"
python3 -c "import json; j=json.load(open('$tmp/d.json')); assert all(r['bound_pct'] is None for r in j['results']), j" ||
  fail "--device JSON bound_pct is not null"
awk -F, 'NR > 1 && $NF != "" {bad = 1} END {exit bad}' "$tmp/d.csv" || fail "--device CSV bound_pct is not empty: $(cat "$tmp/d.csv")"
# Without a GPU (or the stand-in), --device says why and exits 2.
out=$("$run" -n 1 --no-prefix "$bench" --device 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q -- "--device: no usable GPU" || fail "--device without a GPU: rc $rc: $out"

# Bad flags: a clear message naming the flag, exit 2, no hang.
check_bad() {
  local want=$1; shift
  local msg
  msg=$("$run" -n 1 --no-prefix "$bench" "$@" 2>&1); local rc=$?
  [ $rc -ne 0 ] || fail "accepted: $*"
  echo "$msg" | grep -q -- "$want" || fail "message for '$*' lacks '$want': $msg"
}
check_bad "-b '12Q'" -b 12Q
check_bad "-e '1X'" -e 1X
check_bad "-d 'float128'" -d float128
check_bad "-o 'mean'" -o mean
check_bad "is larger than -e" -b 1M -e 1K
check_bad "-t 'alltoallw'" -t alltoallw
check_bad "--skew '0.5'" -t alltoallv --skew 0.5
check_bad "--skew 'x'" -t alltoallv --skew x
check_bad "-r 3 is not a rank" -t gather -r 3
check_bad "unknown algorithm 'magic'" --algo magic
check_bad "-c must be 0 or 1" -c 7
check_bad "-o bxor takes integer types only" -o bxor -d float
check_bad "-T is at most 1e9" -T 1e12
check_bad "out of memory for the buffers" -b 100000G -e 100000G -n 1 -w 0
check_bad "-J: cannot write '/nonexistent/r.json'" -b 8 -e 8 -n 1 -w 0 -J /nonexistent/r.json
# On the public API: linked against libcoral.so, with none of the library's internals inside.
ldd "$bench" | grep -q 'libcoral\.so' || fail "coral-bench does not link libcoral.so"
nm -C "$bench" | grep -q 'coral::Communicator\|coral::collectives::' && fail "coral-bench carries library internals"
echo "coral-bench ok"
