#!/usr/bin/env bash
# Configures and builds gpuscale (Release) in build/; extra arguments go to cmake --build (e.g. --target gpuscale).
# GPUSCALE_CUDA=AUTO|ON|OFF (default AUTO: the CUDA backend where nvcc is found) is set on every call, so that a
# CPU-only build (demo.sh without a GPU) does not stay CPU-only for the next one.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
cuda=${GPUSCALE_CUDA:-AUTO}
case $cuda in AUTO|ON|OFF) ;; *) echo "build.sh: error: GPUSCALE_CUDA=$cuda: AUTO, ON or OFF" >&2; exit 2 ;; esac
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUSCALE_CUDA="$cuda" >build/configure.log 2>&1; then
  cat build/configure.log >&2
  exit 1
fi
grep -E "^-- gpuscale" build/configure.log || true
cmake --build build -j"$(nproc)" "$@"
