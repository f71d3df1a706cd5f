#!/bin/bash
# coral-run: output prefixes, failure propagation with a one-line summary, timeout, signals.
set -u
run=$1 hello=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$("$run" -n 3 "$hello") || fail "hello under coral-run failed"
for r in 0 1 2; do echo "$out" | grep -q "^\[$r\] rank $r of 3: .* correct" || fail "no prefixed line for rank $r"; done
out=$("$run" -n 2 --no-prefix "$hello") || fail "--no-prefix run failed"
echo "$out" | grep -q '^\[' && fail "--no-prefix still prefixes"

# One rank exits 3 while the others would run for a long time.
start=$(date +%s)
err=$("$run" -n 3 -- bash -c 'if [ "$CORAL_RANK" = 1 ]; then exit 3; fi; sleep 60' 2>&1 >/dev/null); rc=$?
[ $rc -eq 3 ] || fail "exit status $rc, expected 3"
echo "$err" | grep -q "coral-run: rank 1 (pid [0-9]*) exited with code 3; stopped the other 2 rank(s)" || fail "summary: $err"
[ $(( $(date +%s) - start )) -lt 20 ] || fail "others were not stopped promptly"

# --keep-going: a killed rank does not stop the others; a rank that exits non-zero still fails
# the job, after the others finish.
out=$("$run" -n 3 --keep-going -- bash -c 'if [ "$CORAL_RANK" = 1 ]; then kill -9 $$; fi; sleep 1; echo done' 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--keep-going with a killed rank: exit status $rc, expected 0"
[ "$(echo "$out" | grep -c "done$")" = 2 ] || fail "--keep-going: the others did not finish: $out"
echo "$out" | grep -q "coral-run: rank 1 (pid [0-9]*) was killed by signal 9.*; the other ranks go on (--keep-going)" \
  || fail "--keep-going: no report of the death: $out"
echo "$out" | grep -q "coral-run: 1 of 3 rank(s) lost, 2 finished" || fail "--keep-going: no closing line: $out"
"$run" -n 2 --keep-going -- bash -c 'sleep 0.5; exit $CORAL_RANK' >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--keep-going with rank 1 exiting 1: exit status $rc, expected 1"

# Ranks whose tuning settings differ would run different schedules: init fails at once, naming
# the setting, instead of waiting for the timeout.
# The transports' geometry is compared in their handshakes, with the same message.
for setting in CORAL_TUNE_TRIALS=1 CORAL_ALGO=ring CORAL_SMALL_BYTES=8K CORAL_SHM_NSLOTS=3 CORAL_SHM_SLOT_BYTES=128K; do
  start=$(date +%s)
  err=$(CORAL_TIMEOUT=60 "$run" -n 3 -- bash -c 'if [ "$CORAL_RANK" = 2 ]; then export "$1"; fi; exec "$0"' "$hello" "$setting" 2>&1)
  rc=$?
  [ $rc -ne 0 ] || fail "$setting on one rank: the run succeeded"
  echo "$err" | grep -q "${setting%%=*} must be the same on every rank" || fail "$setting on one rank: $err"
  [ $(( $(date +%s) - start )) -lt 20 ] || fail "$setting on one rank: not stopped promptly"
done

err=$(CORAL_TRANSPORT=tcp CORAL_TIMEOUT=60 "$run" -n 3 -- bash -c 'if [ "$CORAL_RANK" = 1 ]; then export CORAL_SOCKET_NSLOTS=4; fi; exec "$0"' "$hello" 2>&1)
[ $? -ne 0 ] || fail "CORAL_SOCKET_NSLOTS on one rank: the run succeeded"
echo "$err" | grep -q "CORAL_SOCKET_NSLOTS must be the same on every rank" || fail "CORAL_SOCKET_NSLOTS on one rank: $err"

# A knob value outside what its declaration allows fails init on every rank, naming it.
for setting in CORAL_DEBUG=LOUD CORAL_DEBUG_SUBSYS=INIT,NETWORK CORAL_SHM_NSLOTS=99; do
  err=$(env "$setting" CORAL_TIMEOUT=60 "$run" -n 2 "$hello" 2>&1); rc=$?
  [ $rc -ne 0 ] || fail "$setting: the run succeeded"
  echo "$err" | grep -q "${setting%%=*}='${setting#*=}' is not a valid value" || fail "$setting: $err"
done

# A rank killed by a signal.
err=$("$run" -n 2 -- bash -c 'if [ "$CORAL_RANK" = 0 ]; then kill -9 $$; fi; sleep 60' 2>&1 >/dev/null); rc=$?
[ $rc -eq 137 ] || fail "exit status $rc after SIGKILL, expected 137"
echo "$err" | grep -q "rank 0 (pid [0-9]*) was killed by signal 9" || fail "summary: $err"

# --timeout stops everyone.
err=$("$run" -n 2 --timeout 1 -- sleep 30 2>&1); rc=$?
[ $rc -eq 124 ] || fail "timeout exit status $rc"
echo "$err" | grep -q "timeout after 1 s" || fail "timeout summary: $err"

# SIGTERM to coral-run is forwarded to the ranks.
"$run" -n 2 -- bash -c 'trap "echo got-term; exit 0" TERM; sleep 30 & wait' > /tmp/coral-run-term.$$ 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
grep -c got-term /tmp/coral-run-term.$$ | grep -q 2 || fail "SIGTERM not forwarded: $(cat /tmp/coral-run-term.$$)"
rm -f /tmp/coral-run-term.$$

# --bind-to core: each rank on one CPU of coral-run's own set, round-robin, distinct while
# there are CPUs enough; none leaves the whole set; auto (the default) is core while the ranks
# fit the CPUs and none beyond.
allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
ncpu=$(nproc)
out=$("$run" -n 3 --bind-to core --no-prefix -- bash -c 'echo "$CORAL_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"') ||
  fail "--bind-to core run failed"
for r in 0 1 2; do
  cpu=$(echo "$out" | awk -v r=$r '$1 == r {print $2}')
  [[ "$cpu" =~ ^[0-9]+$ ]] || fail "rank $r is not bound to one CPU: '$cpu'"
  eval "cpu$r=$cpu"
done
[ "$ncpu" -ge 2 ] && [ "$cpu0" = "$cpu1" ] && fail "ranks 0 and 1 share CPU $cpu0 with $ncpu CPUs"
[ "$ncpu" -eq 2 ] && [ "$cpu2" != "$cpu0" ] && fail "rank 2 should wrap onto rank 0's CPU"
out=$("$run" -n 1 --bind-to none --no-prefix -- awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
[ "$out" = "$allowed" ] || fail "an unbound rank got '$out', not '$allowed'"
cpus_of() { "$run" "$@" --no-prefix -- bash -c 'echo "$CORAL_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"' | sort -n; }
fits=$(cpus_of -n "$ncpu")
[ "$(echo "$fits" | awk '$2 ~ /^[0-9]+$/' | wc -l)" -eq "$ncpu" ] || fail "default with $ncpu ranks on $ncpu CPUs did not pin each: $fits"
[ "$(echo "$fits" | awk '{print $2}' | sort -u | wc -l)" -eq "$ncpu" ] || fail "default pinning shares a CPU: $fits"
over=$(cpus_of -n $((ncpu + 1)))
[ "$(echo "$over" | awk -v a="$allowed" '$2 == a' | wc -l)" -eq $((ncpu + 1)) ] ||
  fail "default with $((ncpu + 1)) ranks on $ncpu CPUs should leave them unbound: $over"
[ "$(cpus_of -n 1 --bind-to auto | awk '{print $2}')" = "$(cpus_of -n 1 --bind-to core | awk '{print $2}')" ] ||
  fail "--bind-to auto with one rank differs from core"
err=$("$run" -n 1 --bind-to socket true 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--bind-to socket: exit status $rc"
echo "$err" | grep -q "expected auto, core or none" || fail "--bind-to socket: $err"

# Bad usage.
"$run" 2>/dev/null && fail "no -n accepted"
"$run" -n 2 2>/dev/null && fail "no program accepted"
"$run" -n 0 true 2>/dev/null && fail "-n 0 accepted"
"$run" -n 1 /nonexistent/prog 2>&1 | grep -q "cannot execute" || fail "missing program not reported"
err=$("$run" -n 2 --bogus true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "unknown option '--bogus'" || fail "--bogus before the program: $rc: $err"
err=$("$run" -n 2 --node-rank 3 true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "node-rank 3 must be below --nnodes 1" || fail "--node-rank 3 alone: $rc: $err"
err=$(CORAL_SECRET=$(printf '%064d' 7) "$run" -n 1 --nnodes 2 --root foo true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "root 'foo'" || fail "--root foo: $rc: $err"
# The output prefix is the global rank on every node.
out=$(CORAL_SECRET=$(printf '%064d' 7) "$run" -n 2 --nnodes 2 --node-rank 1 --root 127.0.0.1:1 \
      sh -c 'echo rank=$CORAL_RANK' 2>&1)
grep -q '^\[3\] rank=3$' <<<"$out" || fail "node 1's prefixes are not global ranks: $out"
# ...and so is the rank its summary names.
out=$(CORAL_SECRET=$(printf '%064d' 7) "$run" -n 2 --nnodes 2 --node-rank 1 --root 127.0.0.1:1 \
      sh -c '[ "$CORAL_RANK" = 3 ] && exit 3; sleep 5' 2>&1)
grep -q "coral-run: rank 3 (pid [0-9]*) exited with code 3" <<<"$out" || fail "node 1's summary: $out"
# A stopped rank is woken to take the stop: the job ends at once, not when SIGKILL comes (3 s).
start=$(date +%s%N)
"$run" -n 2 sh -c 'if [ "$CORAL_RANK" = 0 ]; then kill -STOP $$; sleep 30; else sleep 0.3; exit 1; fi' >/dev/null 2>&1
took=$((($(date +%s%N) - start) / 1000000))
[ $took -lt 2500 ] || fail "a job with a stopped rank took $took ms to stop"
# SIGUSR1 asks the ranks that catch it (Coral's) to dump; it must not kill a rank that does not.
"$run" -n 2 -- sleep 5 >/dev/null 2>&1 &
pid=$!
sleep 1
kill -USR1 $pid
sleep 0.5
kill -0 $pid 2>/dev/null || fail "SIGUSR1 to coral-run ended a job whose ranks do not catch it"
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "a job stopped by SIGTERM exited $rc, not 143"
echo "coral-run behaviour ok"
