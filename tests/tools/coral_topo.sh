#!/bin/bash
# coral-topo end to end: every view of a fixture, JSON and NCCL XML written and read back to the
# same matrix, a PNG through graphviz, rings for several hosts, and clear errors for bad input.
# Usage: coral_topo.sh CORAL_TOPO FIXTURES_DIR
set -uo pipefail
topo=$1
fix=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

h100=$fix/oci-hpc_H100-topology.xml
"$topo" -l "$h100" >"$tmp/matrix" || bad "matrix"
grep -q "^GPU0 *X *NV18" "$tmp/matrix" && ok "matrix shows NV18 between GPUs" || bad "matrix content"
grep -q "PXB" "$tmp/matrix" && grep -q "SYS" "$tmp/matrix" && ok "matrix has PCI classes" || bad "matrix classes"
"$topo" -l "$h100" -f json -o "$tmp/h100.json" && "$topo" -l "$tmp/h100.json" >"$tmp/matrix2" || bad "json"
cmp -s "$tmp/matrix" "$tmp/matrix2" && ok "JSON round trip keeps the matrix" || bad "JSON round trip"
"$topo" -l "$h100" -f xml -o "$tmp/h100.xml" && "$topo" -l "$tmp/h100.xml" >"$tmp/matrix3" || bad "xml"
cmp -s "$tmp/matrix" "$tmp/matrix3" && ok "NCCL XML round trip keeps the matrix" || bad "XML round trip"
tree=$("$topo" -l "$h100" -f tree); echo "$tree" | grep -q "nvswitch" && ok "tree" || bad "tree"
dot=$("$topo" -l "$h100" -f dot); echo "$dot" | grep -q "^graph topology" && ok "dot" || bad "dot"
"$topo" -l "$h100" -f summary | grep -q "GPUs 8, NVSwitches 4, NICs 8 (16 ports)" && ok "summary" || bad "summary"
out=$("$topo" -l "$h100" -f summary -r 8 --hosts 2)
[ "$(echo "$out" | grep -o -- '-NET->' | wc -l)" = 2 ] && ok "16-rank ring crosses hosts twice" || bad "ring over hosts: $out"
[ "$(echo "$out" | grep -o -- '-NVB->' | wc -l)" = 14 ] && ok "the other hops are NVLink via switch" || bad "ring hops"
if command -v dot >/dev/null; then
  "$topo" -l "$h100" -f summary --png "$tmp/h100.png" >/dev/null && head -c 4 "$tmp/h100.png" | grep -q PNG && ok "PNG" || bad "PNG"
else
  echo "skip: graphviz not installed, no PNG check"
fi
"$topo" -f summary | grep -q "hosts 1" && ok "detects this machine" || bad "detection"
"$topo" -f json | "$topo" -l /dev/stdin -f summary >/dev/null && ok "detected model reloads" || bad "detected model reload"

expect_fail() {  # expect_fail PATTERN ARGS...
  local pat=$1
  shift
  local out
  out=$("$topo" "$@" 2>&1)
  if [ $? -eq 1 ] && echo "$out" | grep -q -- "$pat"; then ok "$* -> $pat"; else bad "$*: expected '$pat', got: $out"; fi
}
expect_fail 'version="2"' -l "$fix/rccl_topo_8p_pcie.xml"
expect_fail "cannot open" -l "$tmp/missing.xml"
head -c 300 "$h100" >"$tmp/cut.xml"
expect_fail "line [0-9]*: malformed XML" -l "$tmp/cut.xml"
echo '{"format": "coral-topology", "version": 1, "devices": [{"kind": "gpu"}]}' >"$tmp/bad.json"
expect_fail 'devices\[0\]: missing "id"' -l "$tmp/bad.json"
echo "hello" >"$tmp/text"
expect_fail "neither JSON" -l "$tmp/text"

expect_fail "is a directory" -l "$tmp"
grep -q "rings: wants a number of ranks a host, 1 to 4096; got '0'" <<<"$("$topo" -l "$h100" -r 0 2>&1)" \
  && ok "-r 0 says what it wants" || bad "-r 0 message"
"$topo" -l "$h100" | grep -q "LOC  =" && "$topo" -l "$h100" | grep -q "C2C  =" && ok "legend has LOC and C2C" || bad "legend"
a100=$fix/nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml
"$topo" -l "$a100" -r 3 2>&1 >/dev/null | grep -q "warning: 3 ranks a host but 2 GPUs" && ok "oversubscribed GPUs warned" \
  || bad "no warning for 3 ranks on 2 GPUs"
out=$("$topo" -l "$h100" -f summary -r 8 --hosts 4096) || bad "--hosts 4096"
grep -q "rank 32767 on host4095/0000:d8:00.0 (gpu), NIC host4095/mlx5_16 (0000:d5:00.0)" <<<"$out" \
  && ok "4096 hosts: one host's plan repeated" || bad "4096 hosts: $(echo "$out" | tail -3)"
grep -q "hosts 4096, NUMA nodes 8192" <<<"$out" && ok "4096-host summary" || bad "4096-host summary"

# Every fixture NCCL can read, exported as NCCL XML, reads back as the same machine: the matrix
# (device kinds, NVLink lanes) and the ring, and so does this machine's own model.
for f in "$fix"/*.xml; do
  b=$(basename "$f")
  "$topo" -l "$f" >"$tmp/m.a" 2>/dev/null || continue  # RCCL's dialect is refused above
  "$topo" -l "$f" -f xml -o "$tmp/$b" && "$topo" -l "$tmp/$b" >"$tmp/m.b" 2>&1 && cmp -s "$tmp/m.a" "$tmp/m.b" &&
    [ "$("$topo" -l "$f" -f summary -r 4)" = "$("$topo" -l "$tmp/$b" -f summary -r 4)" ] &&
    ok "$b: XML export reads back the same" || bad "$b: XML export differs: $(diff "$tmp/m.a" "$tmp/m.b" | head -4)"
done
"$topo" -f xml -o "$tmp/here.xml" && "$topo" -l "$tmp/here.xml" -f summary -r 2 >/dev/null &&
  ok "this machine's XML reads back" || bad "this machine's XML: $("$topo" -l "$tmp/here.xml" 2>&1 | tail -1)"
expect_usage() {  # expect_usage PATTERN ARGS...: refused before any work, exit 2
  local pat=$1
  shift
  local out
  out=$("$topo" "$@" 2>&1)
  if [ $? -eq 2 ] && echo "$out" | grep -q -- "$pat"; then ok "$* -> $pat"; else bad "$*: expected '$pat', got: $out"; fi
}
expect_usage "--rings prints text" -l "$h100" -f json -r 8
expect_usage "describes one machine" -l "$h100" -f xml --hosts 2
expect_usage "--sysfs $tmp/none" --sysfs "$tmp/none"
"$topo" -l "$h100" -f summary >/dev/full 2>/dev/null && bad "a full standard output went unnoticed" ||
  ok "a full standard output fails the run"
if command -v dot >/dev/null; then
  (cd "$tmp" && "$topo" -l "$h100" -f summary --png "it's';touch injected;'.png" >/dev/null) &&
    head -c 4 "$tmp/it's';touch injected;'.png" | grep -q PNG && [ ! -e "$tmp/injected" ] &&
    ok "PNG path with quotes is a path" || bad "PNG path with quotes"
fi

echo "coral-topo: $fails failure(s)"
[ $fails -eq 0 ]
