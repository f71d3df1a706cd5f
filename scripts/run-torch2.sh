#!/bin/bash
# The "coral" torch backend built and tested against torch 2 on the CPU. Debian 12 ships torch
# 1.13 only; Debian 13 (trixie) ships torch 2.6 and Debian testing a newer one, so this script
# bootstraps that release into a chroot (Debian's registry only), builds libcoral and coral_torch
# there from this checkout, and runs the torch tests: ops x dtypes, DDP equivalence, failures,
# launchers, the CUDA path compiled against this torch's headers (with the host's CUDA toolkit),
# and PyTorch's own distributed suite (quick tier, or --full) for gloo and coral.
#
#   scripts/run-torch2.sh [--suite trixie|forky|sid] [--root DIR] [--full] [--shell]
#
# Needs root (debootstrap, chroot, bind mounts). The chroot is kept for the next run (DIR,
# default /var/tmp/coral-torch2/SUITE; DIR.ok marks it finished) and the build in it is brought up
# to date. Prints "N passed, N failed" and exits non-zero if any test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
suite=trixie
root=""
tier=quick
shell=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite=$2; shift 2 ;;
    --root) root=$2; shift 2 ;;
    --full) tier=full; shift ;;
    --shell) shell=1; shift ;;
    *) echo "run-torch2: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
root=$(realpath -m "${root:-/var/tmp/coral-torch2/$suite}")
[ "$(id -u)" -eq 0 ] || { echo "run-torch2: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
[ "$root" != / ] || { echo "run-torch2: --root / is not a chroot" >&2; exit 2; }
mirror=http://deb.debian.org/debian
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock -n 9 || { echo "run-torch2: another run holds $root.lock" >&2; exit 1; }

if ! command -v debootstrap >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap ||
    exit 1
fi
# Mounts a killed run left in the chroot go first: made slaves, top first, so that no unmount
# below reaches the host's own mounts, then unmounted, deepest first. The bootstrap below
# deletes the folder, which must hold no mount then (rm would go down a bind mount).
mounted() { awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print $5}' /proc/self/mountinfo | sort -u; }
for m in $(mounted); do mount --make-rslave "$m" 2>/dev/null; done
for m in $(mounted | sort -r); do umount "$m" 2>/dev/null || umount -l "$m"; done
if [ -n "$(mounted)" ]; then
  echo "run-torch2: still mounted under $root: $(mounted | tr '\n' ' ')" >&2
  exit 1
fi
# $root.ok marks a finished bootstrap, $root.partial one under way (or killed): only those two
# kinds of folder are this script's to delete.
if [ ! -e "$root.ok" ]; then
  if [ -n "$(ls -A "$root" 2>/dev/null)" ] && [ ! -e "$root.partial" ]; then
    echo "run-torch2: $root holds files and is not a chroot this script made; give another --root" >&2
    exit 1
  fi
  # Debian 12's debootstrap has no script for releases after it; theirs is sid's.
  script=/usr/share/debootstrap/scripts/$suite
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  echo "run-torch2: bootstrapping Debian $suite into $root"
  touch "$root.partial"
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" "$script" >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
  touch "$root.ok"
  rm -f "$root.partial"
fi
# A registry snapshot's Release files may be past their Valid-Until date.
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99coral"

mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    mount --make-rslave "${mounts[$i]}" 2>/dev/null
    umount -R "${mounts[$i]}" 2>/dev/null || umount -R -l "${mounts[$i]}"
  done
}
trap cleanup EXIT
# attach SRC DST MOUNT-OPTIONS...: recorded at once, so cleanup makes it a slave and unmounts it
# whatever happens next.
attach() {
  mkdir -p "$2"
  mount "${@:3}" "$1" "$2" || exit 1
  mounts+=("$2")
}
for m in proc sys dev; do
  attach "/$m" "$root/$m" --rbind
  mount --make-rslave "$root/$m" || exit 1
done
# The checkout read-only: nothing the tests do may change it.
attach "$repo" "$root/coral" --bind -o ro
# The host's CUDA toolkit, for compiling coral_torch's CUDA path against this torch's headers.
cuda=${CUDA_HOME:-/usr/local/cuda}
have_cuda=0
if [ -e "$cuda/include/cuda_runtime_api.h" ]; then
  attach "$cuda" "$root/usr/local/cuda-host" --bind -o ro
  have_cuda=1
fi
cp --remove-destination /etc/resolv.conf "$root/etc/resolv.conf"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

pkgs="meson ninja-build pkg-config g++ libfmt-dev libhwloc-dev nlohmann-json3-dev libpugixml-dev libcli11-dev"
pkgs+=" zlib1g-dev python3-dev pybind11-dev python3-torch libtorch-dev openmpi-bin ccache"
# ccache: /coral and /build are the same paths on every run, so a fresh clone compiles only what
# changed since this chroot last built Coral. The package lists are fetched only when a package
# is missing: the chroot keeps the torch it was tested with until then.
missing=$(in_root bash -c "for p in $pkgs; do
  dpkg-query -W -f='\${Status}' \$p 2>/dev/null | grep -q 'install ok installed' || echo \$p; done")
if [ -n "$missing" ]; then
  echo "run-torch2: packages:" $missing
  in_root bash -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends $pkgs >/var/log/coral-apt.log 2>&1" || { tail -20 "$root/var/log/coral-apt.log"; exit 1; }
fi
version=$(in_root python3 -c 'import torch; print(torch.__version__)') || exit 1
echo "run-torch2: Debian $suite, torch $version"

# Only what the torch tests use: libcoral, coral-run and the extension.
echo "run-torch2: build"
in_root bash -c 'opts="-Dtests=false -Dbench=false -Dtrainer=disabled -Dmpi=disabled -Dcuda=disabled \
  -Dnccl=disabled -Ducx=disabled -Dibverbs=disabled -Dtorch=enabled"
  { if [ -d /build ]; then meson setup --reconfigure /build /coral $opts; else meson setup /build /coral $opts; fi &&
    ninja -C /build; } >/var/log/coral-build.log 2>&1' ||
  { tail -40 "$root/var/log/coral-build.log"; exit 1; }

# USE_LIBUV=0: Debian builds torch without libuv, and torch's env:// store asks for it by default.
env=(PYTHONPATH=/build/src/compat/torch CORAL_RUN=/build/tools/coral-run/coral-run TORCH_PYTHON=/usr/bin/python3
     USE_LIBUV=0 PYTHONDONTWRITEBYTECODE=1)
if [ $shell -eq 1 ]; then
  echo "run-torch2: a shell in the chroot (the tests are in /coral/tests/torch)"
  in_root "${env[@]}" bash -i
  exit $?
fi

passed=0
failed=()
run() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  in_root "${env[@]}" bash -c "cd /coral/tests/torch && timeout -k 10 $limit $*" >"$root/var/log/coral-$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok   $name ($((SECONDS - t0)) s)"
  else
    failed+=("$name")
    echo "FAIL $name (exit $rc, $((SECONDS - t0)) s); the last lines of $root/var/log/coral-$name.log:"
    grep -v "is_success API is being deprecated" "$root/var/log/coral-$name.log" | tail -25 | sed 's/^/    /'
  fi
}
run torch_ops 900 python3 test_ops.py
run torch_ddp 900 python3 test_ddp.py
run torch_algorithms 600 python3 test_algorithms.py
run torch_failure 300 python3 test_failure.py
run torch_launch 600 bash test_launch.sh
if [ $have_cuda -eq 1 ]; then
  run torch_cuda_compile 600 python3 cuda_compile_check.py /build /usr/local/cuda-host/include
else
  echo "skip torch_cuda_compile: no CUDA toolkit at $cuda"
fi
run "torch_suite_$tier" 7200 python3 dist_suite.py --tier $tier --report /var/log/coral-suite-$tier.md
[ -f "$root/var/log/coral-suite-$tier.md" ] && echo "run-torch2: the suite's table: $root/var/log/coral-suite-$tier.md"
echo "torch $version (Debian $suite): $passed passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
