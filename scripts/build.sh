#!/usr/bin/env bash
# Configures and builds gpuscale (Release) in build/; extra arguments go to
# cmake --build (e.g. --target gpuscale).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build/configure.log 2>&1; then
  cat build/configure.log >&2
  exit 1
fi
grep -E "^-- gpuscale" build/configure.log || true
cmake --build build -j"$(nproc)" "$@"
