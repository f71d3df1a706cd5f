#!/bin/bash
# coral-info: the docs' knob table is what `coral-info --knobs --markdown` prints; every knob is
# listed; a bad value is reported (exit 2) naming the knob; --json parses.
set -uo pipefail
info=$1 docs=$2
fail() { echo "FAIL: $*"; exit 1; }
table=$(sed -n '/<!-- knobs:begin -->/,/<!-- knobs:end -->/p' "$docs" | grep '^|')
[ -n "$table" ] || fail "no knob table between the markers in $docs"
diff <(echo "$table") <("$info" --knobs --markdown) || fail "docs/configuration.md's table differs from coral-info --knobs --markdown (regenerate it)"
n_knobs=$("$info" --knobs | grep -c '^CORAL_')
n_src=$(grep -rhoE '"CORAL_[A-Z0-9_]+"' "$(dirname "$docs")/../src/base/config.cc" | sort -u | wc -l)
[ "$n_knobs" -eq "$n_src" ] || fail "coral-info lists $n_knobs knobs, the registry declares $n_src"
"$info" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["knobs"] and "features" in d and "machine" in d' \
  || fail "--json is not the expected JSON"
"$info" | grep -q '^Coral [0-9]' || fail "no version line"
"$info" | grep -q '^machine: ' || fail "no machine line"
"$info" | grep -qE '^cross-memory attach: .*: (used|not used) \(CORAL_CMA=auto\)$' || fail "no cross-memory attach line"
CORAL_CMA=off "$info" | grep -q '^cross-memory attach: .*: not used (CORAL_CMA=off)$' || fail "CORAL_CMA=off is not reported"
CORAL_CMA=on "$info" --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["cma"]; assert c["used"] and c["setting"] == "on"' \
  || fail "--json's cma does not follow CORAL_CMA=on"
out=$(CORAL_DEBUG=LOUD "$info" --knobs); rc=$?
[ $rc -eq 2 ] || fail "a bad CORAL_DEBUG exits $rc, not 2"
echo "$out" | grep -A1 '^CORAL_DEBUG ' | grep -q 'INVALID' || fail "a bad CORAL_DEBUG is not flagged"
err=$(CORAL_DEBGU=INFO "$info" 2>&1 >/dev/null)
echo "$err" | grep -q 'CORAL_DEBGU is set but is no Coral knob' || fail "a misspelt knob is not warned about: $err"
rows=$("$info" --tuner | grep -c '^P=[0-9]*-[0-9]*: allreduce:') || true
[ "$rows" -ge 2 ] || fail "--tuner prints $rows rule rows"
"$info" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["tuner_defaults"][0]["min_ranks"] == 1' \
  || fail "--json lacks the tuner defaults"
echo "coral-info: ok ($n_knobs knobs)"
