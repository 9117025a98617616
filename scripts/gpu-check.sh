#!/usr/bin/env bash
# The whole GPU check in one call, sized for a GPU machine held for a few minutes: run it whenever one is at hand.
#
#   scripts/gpu-check.sh OUT_DIR [--budget SECONDS] [--steps STEP,STEP...] [--build DIR]
#
# From a bundle (scripts/bundle.sh; this script then lies in share/gpuscale/scripts and runs the bundle's programs
# through bin/gpuscale-exec) or from a checkout (the programs of --build, default build/ beside this folder).
# Steps, in this order, each in its own time box (seconds); a step that runs over its box is killed and reported,
# and a step that would take the total past the budget (default 420 s) is not started:
#   probe            15  gpu_cuda_probe: the device, its properties, what CUDA reports
#   backend          90  gpu_cuda_backend: every CUDA op and kernel of the backend verified at run time
#   nccl             25  gpu_nccl_comm: NCCL's communicator on one rank
#   info             10  gpuscale info on one rank: devices, topology, backends
#   gemm-sweep       20  configs/gpu-gemm-sweep.toml at small size (reps 3), verified, reported
#   graphs           15  configs/gpu-graphs.toml: CUDA graphs replayed beside eager launches
#   cpu-vs-gpu       20  configs/cpu-vs-gpu.toml with warm-up by time (warmup_s 0.2)
#   copies           20  configs/copies.toml up to 32 MiB
#   async            15  configs/async.toml
#   gemv             15  configs/gemv.toml (bf16 on the GPU)
#   nccl-1rank       20  configs/collectives.toml over NCCL on one rank
#   mpi-2share       25  the same over MPI, 2 ranks sharing the GPU (NCCL refuses two ranks on one GPU)
#   ladder           25  configs/kernel-ladder.toml at 1024: our kernels beside cuBLAS
#   ladder-check      5  its report --check: the kernels' targets (shares of cuBLAS)
#   anchor-gpuscale  35  configs/torch-anchor.toml: gemm 4096 in 5 dtypes, 1 GiB copies, 20000 matmuls, r += a*b
#   anchor-torch     40  scripts/torch_anchor.py: the same work in PyTorch (skipped where torch is not there),
#                        then gpuscale / PyTorch per figure
# OUT_DIR gets at most 4 files: summary.txt and summary.json (each step: ok, failed, timed out, skipped or not run,
# its seconds and figures; printed last), gpu-check.tgz (every log, result file and report), gpu.txt.
# Without a usable GPU it prints the plan and exits 77 (nothing checked). Exit status: 0 no step failed or ran over
# (the summary lists steps not run: past the budget, or nothing to check), 1 one did, 2 bad usage, 77 no GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "gpu-check.sh: error: $2" >&2; exit "$1"; }
all=(probe:15 backend:90 nccl:25 info:10 gemm-sweep:20 graphs:15 cpu-vs-gpu:20 copies:20 async:15 gemv:15
     nccl-1rank:20 mpi-2share:25 ladder:25 ladder-check:5 anchor-gpuscale:35 anchor-torch:40)
names=" ${all[*]%%:*} "
out="" budget=420 only="" build=""
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --budget) [ $# -ge 2 ] || die 2 "--budget needs a number of seconds"; budget=$2; shift 2 ;;
    --steps) [ $# -ge 2 ] || die 2 "--steps needs a list of steps"; only=$2; shift 2 ;;
    --build) [ $# -ge 2 ] || die 2 "--build needs a build folder"; build=$2; shift 2 ;;
    -*) die 2 "unknown option '$1' (usage: gpu-check.sh OUT_DIR [--budget S] [--steps A,B] [--build DIR])" ;;
    *) [ -z "$out" ] || die 2 "one OUT_DIR only (got '$out' and '$1')"; out=$1; shift ;;
  esac
done
[ -n "$out" ] || die 2 "no OUT_DIR given (usage: gpu-check.sh OUT_DIR [--budget S] [--steps A,B] [--build DIR])"
[[ $budget =~ ^[0-9]{1,6}$ ]] || die 2 "--budget $budget: a whole number of seconds"
[ "$budget" -ge 60 ] || die 2 "--budget $budget: at least 60 s (the check's smallest useful run)"
plan=()
for s in "${all[@]}"; do
  name=${s%%:*}
  [ -z "$only" ] || [[ ",$only," == *",$name,"* ]] && plan+=("$s")
done
for want in ${only//,/ }; do
  [[ $names == *" $want "* ]] || die 2 "unknown step '$want'; steps:$names"
done

# Where the programs are: a bundle's (its launchers put its libraries first), or a build's folders. prog NAME sets
# CMD to the command that runs program NAME; fails where there is none.
if [ -x "$here/../../../bin/gpuscale-exec" ]; then
  bundle=$(cd "$here/../../.." && pwd)
  prog() {
    [ -x "$bundle/libexec/gpuscale/$1" ] || return 1
    CMD=("$bundle/bin/gpuscale-exec" "$1")
    [ "$1" != gpuscale ] || CMD=("$bundle/bin/gpuscale")
  }
  configs=$bundle/share/gpuscale/configs
else
  root=$(dirname "$here")
  build=$(realpath -m "${build:-$root/build}")
  prog() {
    local d
    for d in src tests bench; do [ -x "$build/$d/$1" ] && { CMD=("$build/$d/$1"); return 0; }; done
    return 1
  }
  configs=$root/configs
fi

echo "gpu-check.sh: plan (budget $budget s):"
total=0
for s in "${plan[@]}"; do
  printf '  %-16s %4s s\n' "${s%%:*}" "${s##*:}"
  total=$((total + ${s##*:}))
done
echo "  total            $total s of the steps' boxes"
if ! command -v nvidia-smi >/dev/null; then
  echo "gpu-check.sh: no usable GPU here (no nvidia-smi on PATH): nothing checked"
  exit 77
fi
if ! gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1) ||
   [ -z "$gpu" ]; then
  echo "gpu-check.sh: no usable GPU here (nvidia-smi: $(echo "${gpu:-no GPU listed}" | head -n 1)): nothing checked"
  exit 77
fi
prog gpuscale || die 2 "no gpuscale program here (build it: scripts/build.sh, or give --build DIR)"
gpuscale=${CMD[0]}
mkdir -p "$out" || die 2 "cannot make $out"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$gpu" | tee "$work/gpu.txt" "$out/gpu.txt"
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OMPI_MCA_rmaps_base_oversubscribe=1
t_start=$SECONDS

# step NAME BOX REPORT NOTE CMD...: CMD in its box, its output in WORK/NAME.log, a line of steps.tsv; REPORT: the
# result file (.h5) whose report becomes the step's figures, or -.
step() {
  local name=$1 box=$2 h5=$3 note=$4 t0=$SECONDS rc outcome json=-
  shift 4
  if ((SECONDS - t_start + box > budget)); then
    printf '%s\t%s\tnot run\t0\t0\t-\tthe budget (%s s) would be passed\n' "$name" "$box" "$budget" >>"$work/steps.tsv"
    return
  fi
  echo "== $name (box $box s): $*"
  timeout -k 5 "$box" "$@" >"$work/$name.log" 2>&1
  rc=$?
  tail -n 3 "$work/$name.log"
  case $rc in
    0) outcome=ok ;;
    77) outcome=skipped ;;
    124|137) outcome="timed out" ;;
    *) outcome=failed ;;
  esac
  if [ "$h5" != - ] && [ -f "$h5" ]; then
    json=${h5%.h5}.json
    "$gpuscale" report "$h5" >"$work/$name.report.txt" 2>&1
    "$gpuscale" report "$h5" --format json >"$json" 2>>"$work/$name.report.txt" || json=-
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$box" "$outcome" "$((SECONDS - t0))" "$rc" "$json" "$note" \
    >>"$work/steps.tsv"
}
wanted() { [[ " ${plan[*]%%:*} " == *" $1 "* ]]; }
box() { local s; for s in "${plan[@]}"; do [ "${s%%:*}" = "$1" ] && echo "${s##*:}"; done; }
gs_run() {  # NAME NOTE NP CONFIG [run options...]: one gpuscale run as a step, its report the figures
  local name=$1 note=$2 np=$3 config=$4
  shift 4
  wanted "$name" || return 0
  step "$name" "$(box "$name")" "$work/$name.h5" "$note" mpirun -np "$np" "$gpuscale" run "$configs/$config" \
    -o "$work/$name.h5" --force "$@"
}
test_prog() {  # NAME PROGRAM: a GPU test program as a step (77: skipped)
  wanted "$1" || return 0
  if prog "$2"; then
    step "$1" "$(box "$1")" - "" "${CMD[@]}"
  else
    printf '%s\t%s\tskipped\t0\t0\t-\tno %s in this build\n' "$1" "$(box "$1")" "$2" >>"$work/steps.tsv"
  fi
}

small=(--set reps=3 --set warmup=1)
test_prog probe gpu_cuda_probe
test_prog backend gpu_cuda_backend
test_prog nccl gpu_nccl_comm
wanted info && step info "$(box info)" - "" mpirun -np 1 "$gpuscale" info
gs_run gemm-sweep "" 1 gpu-gemm-sweep.toml "${small[@]}"
gs_run graphs "" 1 gpu-graphs.toml "${small[@]}"
gs_run cpu-vs-gpu "warm-up by time" 1 cpu-vs-gpu.toml --set reps=3 --set warmup=1 --set warmup_s=0.2
gs_run copies "" 1 copies.toml "${small[@]}" --set 'bytes=[1024,1048576,33554432]'
gs_run async "" 1 async.toml "${small[@]}"
gs_run gemv "" 1 gemv.toml "${small[@]}"
gs_run nccl-1rank "" 1 collectives.toml "${small[@]}" --set 'bytes=[8,1048576,67108864]'
gs_run mpi-2share "NCCL refuses 2 ranks on 1 GPU" 2 collectives.toml "${small[@]}" --set 'bytes=[8,1048576]' \
  --set defaults.share_devices=true
gs_run ladder "" 1 kernel-ladder.toml --set size=1024 --set reps=3 --set warmup=1
if wanted ladder-check; then
  if [ -f "$work/ladder.h5" ]; then
    step ladder-check "$(box ladder-check)" - "" "$gpuscale" report "$work/ladder.h5" --check
  else
    printf 'ladder-check\t%s\tnot run\t0\t0\t-\tno ladder result\n' "$(box ladder-check)" >>"$work/steps.tsv"
  fi
fi
gs_run anchor-gpuscale "" 1 torch-anchor.toml
[ -f "$work/anchor-gpuscale.json" ] && cp "$work/anchor-gpuscale.json" "$work/anchor.json"
if wanted anchor-torch; then
  # The machine's own python3 and its packages, never the bundle's libraries.
  step anchor-torch "$(box anchor-torch)" - "" python3 "$here/torch_anchor.py" "$work/torch.json"
fi

tar -czf "$out/gpu-check.tgz" -C "$work" . 2>/dev/null
echo
echo "== summary (total $((SECONDS - t_start)) s; logs, result files and reports in $out/gpu-check.tgz)"
if command -v python3 >/dev/null; then
  python3 "$here/gpu_check_summary.py" "$work" "$out"
  exit $?
fi
cut -f1-5 "$work/steps.tsv" | tee "$out/summary.txt"
! grep -qP '\t(failed|timed out)\t' "$work/steps.tsv"
