#!/usr/bin/env bash
# Builds gpuscale with its tests and runs them all through ctest.
# GPU tests are reported as skipped (not passed) where no CUDA device is usable.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
mkdir -p build
scripts/build.sh
cd build
ctest --output-on-failure -j2 "$@"
