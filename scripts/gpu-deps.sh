#!/bin/bash
# Fetches the Debian packages the GPU machine lacks (it has no apt and no network) into
# .gpu-deps/, which the device tool carries and tests/gpu/run-all.sh unpacks into /tmp (never /).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps
cd .gpu-deps
apt-get download pkgconf pkgconf-bin libpkgconf3 libfmt-dev libfmt9 libpugixml-dev libpugixml1v5 \
  nlohmann-json3-dev libcli11-dev
ls -la
