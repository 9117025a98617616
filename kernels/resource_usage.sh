#!/bin/sh
# The compiler's resource report of each GEMM kernel (registers per thread,
# static shared memory, spills, stack) for the given architectures; dynamic
# shared memory (mma, mma_async) is set at launch: kernels/README.md.
#   kernels/resource_usage.sh            # sm_80 and sm_90
#   kernels/resource_usage.sh 90
set -eu
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
archs=${*:-80 90}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in $archs; do
  for f in gemm_naive gemm_tiled gemm_blocked gemm_tensor gemm_mma; do
    "$nvcc" -std=c++17 -O3 -arch="sm_$arch" -I"$here" -I"$here/../src" -Xptxas -v -c "$here/$f.cu" \
      -o "$tmp/$f.o" 2>&1 |
      awk -v arch="sm_$arch" '
        /Compiling entry function/ { name = $0; sub(/.*function .\047?/, "", name); sub(/\047.*/, "", name) }
        /spill stores/ { spill = $0; sub(/^ +/, "", spill) }
        /Used [0-9]+ registers/ {
          regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
          smem = "0"; if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
          print arch "\t" name "\t" regs " registers\t" smem " B static smem\t" spill
        }' |
      while IFS="$(printf '\t')" read -r a name rest; do
        printf '%s  %s\t%s\n' "$a" "$(echo "$name" | c++filt | sed 's/gpuscale::kernels::(anonymous namespace):://g; s/(int, int, int.*//')" "$rest"
      done
  done
done
