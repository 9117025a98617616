#!/usr/bin/env bash
# Every GPU check of the kernel ladder in one command, for a GPU machine held
# for a short while (kernels/README.md):
#   1. gpu_cuda_backend: every kernel, dtype and edge case verified at run
#      time, and every element of C held to cuBLAS's from the same inputs;
#   2. configs/kernel-ladder.toml next to cuBLAS, its report, and
#      `report --check` of the targets (each a share of cuBLAS);
#   3. compute-sanitizer memcheck of every kernel at edge tiles with 16-byte
#      rows and without, racecheck and synccheck at one of them;
#   4. ncu's shared-memory table (bank conflicts: kernels/simulate.py expects
#      none) and pipe utilization of our kernels at 4096 and the odd shape;
#   5. bench/mma_tiles: each tile of the cp.async kernel against cuBLAS at
#      4096 (which to ship, if the default misses its target).
# Logs, the ladder's result file and its report go to OUT_DIR; a summary of
# each step's outcome is printed last. Exit status: 1 when any step failed,
# 77 where no GPU is usable (nothing checked).
#   kernels/gpu_check.sh BIN OUT_DIR
# BIN: a build directory (build/src/gpuscale, build/tests/..., build/bench/...) or a
# folder holding the binaries (a bundle's $GS/bin). Steps whose tool is
# missing (ncu, compute-sanitizer) are reported as not run.
set -uo pipefail
[ $# -eq 2 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bin=$1 out=$2
mkdir -p "$out"
find_bin() {
  for p in "$bin/$1" "$bin/src/$1" "$bin/tests/$1" "$bin/bench/$1"; do [ -x "$p" ] && { echo "$p"; return; }; done
  echo "no $1 under $bin" >&2; return 1
}
gpuscale=$(find_bin gpuscale) || exit 2
backend_test=$(find_bin gpu_cuda_backend) || exit 2
tiles=$(find_bin mma_tiles) || exit 2
ladder=$root/configs/kernel-ladder.toml
summary=()
step() {  # NAME LOG CMD...: runs CMD with its output in OUT/LOG, notes the outcome
  local name=$1 logname=$2 log=$out/$2; shift 2
  echo "== $name: $*" | tee -a "$log"
  local t0=$SECONDS
  "$@" >>"$log" 2>&1
  local rc=$?
  summary+=("$(printf '%-50s %s (%d s, %s)' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED, exit $rc")" \
    $((SECONDS - t0)) "$logname")")
  return $rc
}
failed=0
if ! gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1); then
  echo "$gpu"
  echo "no usable GPU here (nvidia-smi failed): nothing checked"
  exit 77
fi
echo "$gpu" >"$out/backend.log"

step "every kernel against cuBLAS, element by element" backend.log "$backend_test" || failed=1
step "kernel ladder next to cuBLAS" ladder.log mpirun -np 1 "$gpuscale" run "$ladder" -o "$out/ladder.h5" --force ||
  failed=1
if [ -f "$out/ladder.h5" ]; then
  "$gpuscale" report "$out/ladder.h5" >"$out/report.txt" 2>&1
  "$gpuscale" report "$out/ladder.h5" --format csv >"$out/report.csv" 2>&1
  step "targets: report --check" report.txt "$gpuscale" report "$out/ladder.h5" --check || failed=1
fi

small=(--set ops=1 --set warmup=0 --set reps=1)
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
  summary+=("$(printf '%-50s %s' compute-sanitizer 'not run: not on PATH')")
fi

if command -v ncu >/dev/null; then
  step "ncu: shared memory and pipes of our kernels" ncu.txt ncu -k regex:^gemm_ \
    --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
    "$gpuscale" run "$ladder" -o "$out/n.h5" --force --set size=4096 "${small[@]}" || failed=1
  rm -f "$out/n.h5"
else
  summary+=("$(printf '%-50s %s' ncu 'not run: not on PATH')")
fi

step "tiles of mma_async against cuBLAS" tiles.txt "$tiles" --size 4096 || failed=1

echo
echo "$gpu"
cat "$out/report.txt" 2>/dev/null
cat "$out/tiles.txt"
echo
printf '%s\n' "${summary[@]}"
exit $failed
