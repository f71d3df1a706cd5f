#!/bin/bash
# meson install into a staging prefix, then build a C program with pkg-config and run it under
# the installed coral-run; and check libcoral.so exports only the C API.
set -eu
src=$1 build=$2
opt() { meson introspect "$build" --buildoptions | python3 -c "import json,sys; print([o['value'] for o in json.load(sys.stdin) if o['name']=='$1'][0])"; }
if [ "$(opt b_sanitize)" != "none" ]; then
  echo "SKIP: a sanitizer build's libcoral.so needs the sanitizer runtime loaded first"
  exit 77
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --destdir "$stage" >/dev/null
prefix=$(opt prefix)
root="$stage$prefix"
libdir=$(dirname "$(find "$root" -name 'libcoral.so' | head -1)")
pc=$(find "$root" -name coral.pc | head -1)
[ -x "$root/bin/coral-run" ] || { echo "coral-run not installed"; exit 1; }
[ -x "$root/bin/coral-topo" ] || { echo "coral-topo not installed"; exit 1; }
if [ -x "$build/examples/trainer/coral-train" ]; then
  [ -x "$root/bin/coral-train" ] && [ -f "$root/share/coral/digits.csv.gz" ] ||
    { echo "coral-train or its bundled dataset not installed"; exit 1; }
fi
[ -f "$root/include/coral/coral.h" ] && [ -f "$root/include/coral/coral.hpp" ] || { echo "headers missing"; exit 1; }
[ -n "$pc" ] || { echo "coral.pc missing"; exit 1; }
# The .pc file names the final prefix; point it at the staging area.
sed "s|^prefix=.*|prefix=$root|" "$pc" > "$stage/coral.pc"
flags=$(PKG_CONFIG_PATH=$stage pkg-config --cflags --libs coral)
cc -o "$stage/hello" "$src/examples/hello.c" $flags
out=$(LD_LIBRARY_PATH=$libdir "$root/bin/coral-run" -n 4 "$stage/hello")
[ "$(grep -c correct <<<"$out")" -eq 4 ] || { echo "installed hello failed: $out"; exit 1; }
# The torch backend, when built: the installed package imports with the installed libcoral
# (through LD_LIBRARY_PATH here, as the staged prefix is not the rpath's) and registers "coral".
if ls "$build"/src/compat/torch/coral_torch/_C*.so >/dev/null 2>&1; then
  pkgdir=$(dirname "$(find "$root" -path '*coral_torch/__init__.py' | head -1)")
  [ "$pkgdir" != . ] && ls "$pkgdir"/_C*.so >/dev/null 2>&1 || { echo "coral_torch not installed"; exit 1; }
  # Under the python's own prefix (Debian: /usr/local) it must land where that python looks.
  site=$(dirname "${pkgdir#"$stage"}")
  if /usr/bin/python3 -c "import sys, sysconfig; sys.exit(not sysconfig.get_paths()['platlib'].startswith('$prefix/'))"; then
    /usr/bin/python3 -c "import sys; sys.exit('$site' not in sys.path)" ||
      { echo "coral_torch installed to $site, which /usr/bin/python3 does not search"; exit 1; }
  fi
  readelf -d "$pkgdir"/_C*.so | grep -q "$prefix/$(opt libdir)" || { echo "coral_torch's rpath lacks the libdir"; exit 1; }
  LD_LIBRARY_PATH=$libdir PYTHONPATH=$(dirname "$pkgdir") /usr/bin/python3 -c \
    'import coral_torch, torch.distributed as d; assert "CORAL" in d.Backend._plugins' ||
    { echo "installed coral_torch does not register the backend"; exit 1; }
fi
# The MPI interposers, when built: installed next to libcoral, found by the installed coral-mpi,
# and working from there (preloaded by hand, as the staged prefix is not coral-mpi's).
for abi in ompi mpich; do
  [ -f "$build/src/compat/mpi/libcoral_mpi_$abi.so" ] || continue
  [ -f "$libdir/libcoral_mpi_$abi.so" ] || { echo "libcoral_mpi_$abi.so not installed"; exit 1; }
  [ -x "$root/bin/coral-mpi" ] && grep -q "^libdir=\"$prefix/$(opt libdir)\"" "$root/bin/coral-mpi" ||
    { echo "coral-mpi not installed, or not pointing at the libdir"; exit 1; }
  if [ $abi = ompi ] && command -v mpicc.openmpi >/dev/null; then
    mpicc.openmpi -o "$stage/mpi_app" "$src/tests/mpi/launcher.c"
    out=$(CORAL_MPI_REPORT=1 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
          -x LD_LIBRARY_PATH="$libdir" -x LD_PRELOAD="$libdir/libcoral_mpi_ompi.so" "$stage/mpi_app" 2>&1)
    grep -q 'handled 4 collective calls' <<<"$out" || { echo "installed interposer failed: $out"; exit 1; }
  fi
done
extra=$(nm -D --defined-only "$libdir/libcoral.so" | awk '$2 ~ /[TDBVW]/ {print $3}' | grep -v '^coral' | grep -v '^_' || true)
[ -z "$extra" ] || { echo "libcoral.so exports non-API symbols:"; echo "$extra" | head; exit 1; }
echo "install ok: $(nm -D --defined-only "$libdir/libcoral.so" | grep -c ' T coral') C API functions exported"
