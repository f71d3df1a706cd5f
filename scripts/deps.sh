#!/bin/bash
# Installs the Debian packages Coral builds, tests and benchmarks with (skips what is present).
# ccache: Meson compiles through it when it is installed, so a fresh clone on a machine that has
# built Coral before (CI's) compiles only what changed.
set -euo pipefail
pkgs=(meson ninja-build pkg-config g++ libfmt-dev libcli11-dev catch2 libhwloc-dev libucx-dev
      libibverbs-dev librdmacm-dev openmpi-bin libopenmpi-dev mpich libmpich-dev libbenchmark-dev
      libopenblas-dev zlib1g-dev libgloo-dev nlohmann-json3-dev gnuplot-nox iproute2 python3
      dataset-fashion-mnist libpugixml-dev graphviz iperf3 clang-format
      python3-torch libtorch-dev pybind11-dev python3-dev python3-mpi4py hpcc lammps scalapack-mpi-test gfortran
      ccache)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
