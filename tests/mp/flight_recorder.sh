#!/bin/bash
# Flight recorder under coral-run: a stopped rank and a lagging rank are named in every other
# rank's error and in coral-run's table; --timeout and SIGUSR1 make every rank dump its ops.
set -u
run=$1 prog=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names() {  # names CASE RANKS OP CULPRIT: each of RANKS reports an error on OP that says CULPRIT
  local r
  for r in $2; do
    echo "$err" | grep "^\[$r\] rank $r: .*$3" | grep -q "$4" || fail "$1: rank $r does not say '$4' about $3: $err"
  done
}

# Rank 2 stops itself mid-job (SIGSTOP): the others time out and name it.
err=$(CORAL_TIMEOUT=3 STUCK_RANK=2 STUCK_HOW=stop "$run" -n 4 "$prog" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "stopped rank: the job succeeded"
names "stopped rank" "0 1 3" "allreduce #[0-9]" "rank 2 is stopped"
echo "$err" | grep -q "coral-run: where each rank is" || fail "stopped rank: no table: $err"
echo "$err" | grep -Eq "^ +2  \(no dump" || fail "stopped rank: the table does not list rank 2 as silent: $err"
echo "$err" | grep -Eq "^ +0  allreduce #[0-9]+ +allreduce #[0-9]+ " || fail "stopped rank: rank 0's row: $err"

# Rank 1 sleeps outside Coral after 5 all-reduces: it is the one behind.
err=$(CORAL_TIMEOUT=3 STUCK_RANK=1 STUCK_AFTER=5 STUCK_HOW=sleep "$run" -n 4 "$prog" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "lagging rank: the job succeeded"
names "lagging rank" "0 2 3" "allreduce #6 " "rank 1 is behind"
# Its own recorder answered SIGUSR1 from coral-run: idle since allreduce #5.
echo "$err" | grep -Eq "^ +1  allreduce #5 +- +- +- +idle" || fail "lagging rank: rank 1's row: $err"

# --timeout: every rank dumps (JSON lines into the user's directory) and the table shows them.
mkdir "$tmp/dumps"
err=$(CORAL_DUMP_ON_TIMEOUT=$tmp/dumps STUCK_RANK=3 STUCK_AFTER=3 STUCK_HOW=sleep "$run" -n 4 --timeout 4 "$prog" 2>&1); rc=$?
[ $rc -eq 124 ] || fail "--timeout: exit status $rc, expected 124: $err"
echo "$err" | grep -q "coral-run: where each rank is" || fail "--timeout: no table: $err"
n=$(cat "$tmp"/dumps/*.jsonl 2>/dev/null | grep -c '"event":"dump"')
[ "$n" -ge 4 ] || fail "--timeout: $n rank dumps in $tmp/dumps, expected 4"
python3 - "$tmp/dumps" <<'PY' || fail "--timeout: the dumps are not JSON lines with ops"
import glob, json, sys
ops = 0
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for line in open(f):
        j = json.loads(line)
        ops += "op" in j
assert ops >= 4 * 3, ops
PY

# SIGUSR1 to one rank dumps its recorder to stderr without stopping it.
err=$(STUCK_RANK=9 "$run" -n 2 --no-prefix -- bash -c 'unset CORAL_DUMP_ON_TIMEOUT; "$0" & p=$!; sleep 1.5; kill -USR1 $p; sleep 0.5; kill -TERM $p; wait $p; true' "$prog" 2>&1)
echo "$err" | grep -q '"event":"dump","why":"SIGUSR1"' || fail "SIGUSR1: no dump on stderr: $err"
echo "PASS"
