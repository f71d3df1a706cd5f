#!/bin/bash
# Installs dependencies, builds, runs every test, and prints "N passed, N failed[, N skipped]".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
scripts/build.sh || exit 1
build=${BUILD_DIR:-build}
meson test -C "$build" --print-errorlogs --num-processes 1 --no-suite long "$@"
rc=$?
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): counts["passed"] += 1
    elif r == "SKIP": counts["skipped"] += 1
    else: counts["failed"] += 1
print(f'{counts["passed"]} passed, {counts["failed"]} failed, {counts["skipped"]} skipped')
PY
exit $rc
