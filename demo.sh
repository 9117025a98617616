#!/usr/bin/env bash
# Builds gpuscale (Release) and runs the default experiment on 2 ranks
# (CPU backend where no GPU is usable), then prints the report.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
mkdir -p build results
scripts/build.sh --target gpuscale
out=results/default-$(date +%Y%m%d-%H%M%S).h5
GPUSCALE=build/src/gpuscale jobs/local/mpirun.sh -n 2 configs/default.toml -o "$out"
echo
build/src/gpuscale report "$out"
