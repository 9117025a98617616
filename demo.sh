#!/usr/bin/env bash
# Builds gpuscale (Release) and runs the default experiment on 2 ranks, then prints the report. Where no GPU is
# usable (nvidia-smi lists none) it builds the CPU backend only, which is what runs there; GPUSCALE_CUDA=ON
# ./demo.sh builds the CUDA backend too (test.sh always does, where nvcc is found).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
mkdir -p build results
if [ -z "${GPUSCALE_CUDA:-}" ]; then
  if nvidia-smi -L 2>/dev/null | grep '^GPU ' >/dev/null; then  # no -q: under pipefail, see scripts/bundle.sh
    GPUSCALE_CUDA=AUTO
  else
    GPUSCALE_CUDA=OFF
    echo "demo.sh: no usable GPU here (nvidia-smi lists none): building the CPU backend only" \
         "(GPUSCALE_CUDA=ON ./demo.sh builds the CUDA backend too)"
  fi
fi
GPUSCALE_CUDA=$GPUSCALE_CUDA scripts/build.sh --target gpuscale
out=results/default-$(date +%Y%m%d-%H%M%S).h5
GPUSCALE=build/src/gpuscale jobs/local/mpirun.sh -n 2 configs/default.toml -o "$out"
echo
build/src/gpuscale report "$out"
