#!/usr/bin/env bash
# The GPU checks of the kernel ladder, for a GPU machine held for a short
# while (kernels/README.md). Steps, in this order:
#   backend    gpu_cuda_backend: every kernel, dtype and edge case verified
#              at run time, every element of C held to cuBLAS's
#   ladder     configs/kernel-ladder.toml next to cuBLAS, its report, and
#              `report --check` of the targets (shares of cuBLAS)
#   tiles      bench/gemm_tiles at 4096: each tile of blocked (fp32) and
#              mma_async (bf16, fp16) against cuBLAS (which to ship)
#   sanitizer  compute-sanitizer memcheck at edge tiles with 16-byte rows
#              and without; racecheck and synccheck at one of them
#   ncu        ncu's shared-memory table (bank conflicts: kernels/simulate.py
#              expects none) and pipe utilization of our kernels
# Logs, the ladder's result file and its report go to OUT_DIR (eight files at
# most); a summary of each step's outcome is printed last. Exit status: 1
# when a step failed, 77 where no GPU is usable (nothing checked).
#   kernels/gpu_check.sh BIN OUT_DIR [STEP...]      (default: every step)
# BIN: a build directory (build/src/gpuscale, build/tests/..., build/bench/...)
# or a folder holding the binaries (a bundle's $GS/bin). A step whose tool is
# missing (ncu, compute-sanitizer) is reported as not run. All steps may take
# longer than one 10-minute call on a lent machine: split them over two.
set -uo pipefail
usage() { sed -n '2,21p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bin=$1 out=$2
shift 2
all="backend ladder tiles sanitizer ncu"
steps=${*:-$all}
for s in $steps; do
  [[ " $all " == *" $s "* ]] || { echo "unknown step '$s'; steps: $all" >&2; exit 2; }
done
wanted() { [[ " $steps " == *" $1 "* ]]; }
find_bin() {
  for p in "$bin/$1" "$bin/src/$1" "$bin/tests/$1" "$bin/bench/$1"; do [ -x "$p" ] && { echo "$p"; return; }; done
  echo "no $1 under $bin" >&2
  return 1
}
gpuscale=$(find_bin gpuscale) || exit 2
backend_test=$(find_bin gpu_cuda_backend) || exit 2
tiles=$(find_bin gemm_tiles) || exit 2
ladder=$root/configs/kernel-ladder.toml
small=(--set ops=1 --set warmup=0 --set reps=1)
summary=()
note() { summary+=("$(printf '%-50s %s' "$1" "$2")"); }
step() {  # NAME LOG CMD...: runs CMD with its output in OUT/LOG, notes the outcome
  local name=$1 logname=$2 log=$out/$2
  shift 2
  echo "== $name: $*" | tee -a "$log"
  local t0=$SECONDS
  "$@" >>"$log" 2>&1
  local rc=$?
  note "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED, exit $rc") ($((SECONDS - t0)) s, $logname)"
  return $rc
}

if ! gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1); then
  echo "$gpu"
  echo "no usable GPU here (nvidia-smi failed): nothing checked"
  exit 77
fi
mkdir -p "$out"
echo "$gpu" >"$out/gpu.txt"
failed=0

if wanted backend; then
  step "every kernel against cuBLAS, element by element" backend.log "$backend_test" || failed=1
fi
if wanted ladder; then
  step "kernel ladder next to cuBLAS" ladder.log mpirun -np 1 "$gpuscale" run "$ladder" -o "$out/ladder.h5" --force ||
    failed=1
  if [ -f "$out/ladder.h5" ]; then
    "$gpuscale" report "$out/ladder.h5" >"$out/report.txt" 2>&1  # csv, json: from ladder.h5 anywhere
    step "targets: report --check" report.txt "$gpuscale" report "$out/ladder.h5" --check || failed=1
  fi
fi
if wanted tiles; then
  step "tiles of blocked and mma_async against cuBLAS" tiles.txt "$tiles" --size 4096 || failed=1
fi
if wanted sanitizer; then
  if command -v compute-sanitizer >/dev/null; then
    for mnk in "200 136 72" "77 131 45"; do  # 16-byte rows (multiples of 8), then element loads; edge tiles in both
      set -- $mnk
      step "memcheck at m=$1 n=$2 k=$3" sanitizer.log compute-sanitizer --tool memcheck --error-exitcode 3 \
        "$gpuscale" run "$ladder" -o "$out/s.h5" --force --set m=$1 --set n=$2 --set k=$3 "${small[@]}" || failed=1
    done
    for tool in racecheck synccheck; do
      step "$tool at m=200 n=136 k=72" sanitizer.log compute-sanitizer --tool $tool --error-exitcode 3 \
        "$gpuscale" run "$ladder" -o "$out/s.h5" --force --set m=200 --set n=136 --set k=72 "${small[@]}" || failed=1
    done
    rm -f "$out/s.h5"
  else
    note compute-sanitizer "not run: not on PATH"
  fi
fi
if wanted ncu; then
  if command -v ncu >/dev/null; then
    step "ncu: shared memory and pipes of our kernels" ncu.txt ncu -k regex:^gemm_ \
      --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
      "$gpuscale" run "$ladder" -o "$out/n.h5" --force --set size=4096 "${small[@]}" || failed=1
    rm -f "$out/n.h5"
  else
    note ncu "not run: not on PATH"
  fi
fi

echo
cat "$out/gpu.txt"
for f in report.txt tiles.txt; do [ -f "$out/$f" ] && cat "$out/$f"; done
echo
printf '%s\n' "${summary[@]}"
exit $failed
