#!/usr/bin/env bash
# The whole GPU check in one call, sized for a GPU machine held for a few minutes: run it whenever one is at hand.
#
#   scripts/gpu-check.sh OUT_DIR [--budget SECONDS] [--steps STEP,STEP...] [--build DIR] [--rates FILE]
#
# From a bundle (scripts/bundle.sh; this script then lies in share/gpuscale/scripts and runs the bundle's programs
# through bin/gpuscale-exec) or from a checkout (the programs of --build, default build/ beside this folder).
# Steps, in this order, each in its own time box (seconds); a step that runs over its box is killed and reported,
# a step that would take the total past the budget (default 420 s) is not started, and a step whose needs the
# preflight found missing is skipped, saying what is missing:
#   preflight          5  every program loads (ldd), and mpirun, cuBLAS, NCCL, NVML, compute-sanitizer, PyTorch
#   probe              8  gpu_cuda_probe: the device, its properties, what CUDA reports
#   backend           65  gpu_cuda_backend: every CUDA op and kernel of the backend verified at run time
#   nccl              15  gpu_nccl_comm: NCCL's communicator on one rank
#   info               8  gpuscale info on one rank: devices, topology, backends
#   gemm-sweep        33  configs/gpu-gemm-sweep.toml: cuBLAS at 1024 and 4096, the others at 1024, verified
#   graphs            14  configs/gpu-graphs.toml: CUDA graphs replayed beside eager launches
#   cpu-vs-gpu        17  configs/cpu-vs-gpu.toml with warm-up by time (warmup_s 0.2)
#   copies            14  configs/copies.toml up to 32 MiB
#   async              9  configs/async.toml
#   gemv              14  configs/gemv.toml (bf16 on the GPU)
#   nccl-1rank        15  configs/collectives.toml over NCCL on one rank, up to 1 MiB
#   mpi-2share        15  the same over MPI, 2 ranks sharing the GPU (NCCL refuses two ranks on one GPU)
#   ladder            45  configs/kernel-ladder.toml: the ladder at 1024, the targets at their own 4096
#   ladder-check       3  its report --check: the kernels' targets (shares of cuBLAS)
#   anchor-gpuscale   80  configs/torch-anchor.toml: gemm 4096 in 5 dtypes, 1 GiB copies, 20000 matmuls, r += a*b
#   anchor-torch      30  scripts/torch_anchor.py: the same work in PyTorch (skipped where torch is not there),
#                         then gpuscale / PyTorch per figure
#   memcheck          30  the ladder at 256 (its odd shapes 100x110x90) under compute-sanitizer memcheck (skipped
#                         where it is not there)
# Each step's estimate on an H100 (configs/rates/h100.toml, or --rates FILE) is in the plan: a gpuscale run's from
# `gpuscale check --rates`, the others' assumed; a step is sized so that its estimate is at most 2/3 of its box.
# Small runs warm up by count (1) and by time (0.1 s); a GPU's clocks take longer to settle, which these runs do not
# measure: they check that the work runs and verifies, not its speed (anchor-gpuscale runs at the config's sizes).
# OUT_DIR gets at most 4 files: summary.txt and summary.json (each step: ok, failed, timed out, skipped or not run,
# its seconds and figures; printed last), gpu-check.tgz (every log, result file and report), gpu.txt.
# Without a usable GPU it prints the plan and exits 77 (nothing checked). Exit status: 0 no step failed or ran over
# (the summary lists steps not run: past the budget, or nothing to check), 1 one did, 2 bad usage, 77 no GPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "gpu-check.sh: error: $2" >&2; exit "$1"; }
# name:box:assumed seconds on an H100 ("-": a gpuscale run, estimated by gpuscale check --rates)
all=(preflight:5:3 probe:8:5 backend:65:40 nccl:15:10 info:8:5 gemm-sweep:33:- graphs:14:- cpu-vs-gpu:17:-
     copies:14:- async:9:- gemv:14:- nccl-1rank:15:- mpi-2share:15:- ladder:45:- ladder-check:3:2
     anchor-gpuscale:80:- anchor-torch:30:20 memcheck:30:20)
names=" ${all[*]%%:*} "
out="" budget=420 only="" build="" rates=""
usage="usage: gpu-check.sh OUT_DIR [--budget S] [--steps A,B] [--build DIR] [--rates FILE]"
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --budget) [ $# -ge 2 ] || die 2 "--budget needs a number of seconds"; budget=$2; shift 2 ;;
    --steps) [ $# -ge 2 ] || die 2 "--steps needs a list of steps"; only=$2; shift 2 ;;
    --build) [ $# -ge 2 ] || die 2 "--build needs a build folder"; build=$2; shift 2 ;;
    --rates) [ $# -ge 2 ] || die 2 "--rates needs a rates table"; rates=$2; shift 2 ;;
    -*) die 2 "unknown option '$1' ($usage)" ;;
    *) [ -z "$out" ] || die 2 "one OUT_DIR only (got '$out' and '$1')"; out=$1; shift ;;
  esac
done
[ -n "$out" ] || die 2 "no OUT_DIR given ($usage)"
[[ $budget =~ ^[0-9]{1,6}$ ]] || die 2 "--budget $budget: a whole number of seconds"
[ "$budget" -ge 60 ] || die 2 "--budget $budget: at least 60 s (the check's smallest useful run)"
[ -z "$rates" ] || [ -f "$rates" ] || die 2 "--rates $rates: no such file"
[ ! -e "$out" ] || [ -d "$out" ] || die 2 "OUT_DIR $out is not a folder"
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
programs=(gpuscale gpu_cuda_probe gpu_cuda_backend gpu_nccl_comm)  # what the steps run
if [ -x "$here/../../../bin/gpuscale-exec" ]; then
  bundle=$(cd "$here/../../.." && pwd)
  prog() {
    [ -x "$bundle/libexec/gpuscale/$1" ] || return 1
    CMD=("$bundle/bin/gpuscale-exec" "$1")
    [ "$1" != gpuscale ] || CMD=("$bundle/bin/gpuscale")
  }
  binary() { echo "$bundle/libexec/gpuscale/$1"; }
  with_libs=("$bundle/bin/gpuscale-exec")  # runs a command with the bundle's libraries first
  configs=$bundle/share/gpuscale/configs
  holder="bundle $bundle"
else
  root=$(dirname "$here")
  build=$(realpath -m "${build:-$root/build}")
  prog() {
    local d
    for d in src tests bench; do [ -x "$build/$d/$1" ] && { CMD=("$build/$d/$1"); return 0; }; done
    return 1
  }
  binary() { prog "$1" && echo "${CMD[0]}"; }
  with_libs=()
  configs=$root/configs
  holder="build $build"
fi
[ -n "$rates" ] || rates=$configs/rates/h100.toml

# The gpuscale runs, one place for the run and its estimate: NAME NOTE NP CONFIG [run options...]
declare -A run_np run_config run_args run_note
define_run() {
  local name=$1
  run_note[$name]=$2 run_np[$name]=$3 run_config[$name]=$4
  shift 4
  run_args[$name]="$*"
}
small="--set reps=3 --set warmup=1 --set warmup_s=0.1"
define_run gemm-sweep "" 1 gpu-gemm-sweep.toml $small --set cublas.size=[1024,4096] --set ours.size=1024 \
  --set tensor-cores.size=1024
define_run graphs "" 1 gpu-graphs.toml $small
define_run cpu-vs-gpu "warm-up by time" 1 cpu-vs-gpu.toml --set reps=3 --set warmup=1 --set warmup_s=0.2
define_run copies "" 1 copies.toml $small --set bytes=[1024,1048576,33554432]
define_run async "" 1 async.toml $small
define_run gemv "" 1 gemv.toml $small
define_run nccl-1rank "" 1 collectives.toml $small --set bytes=[8,1048576]
define_run mpi-2share "NCCL refuses 2 ranks on 1 GPU" 2 collectives.toml $small --set bytes=[8,1048576] \
  --set defaults.share_devices=true
define_run ladder "" 1 kernel-ladder.toml $small --set fp32-ladder.size=1024 --set tensor-ladder.size=1024
define_run anchor-gpuscale "" 1 torch-anchor.toml --set warmup=1 --set reps=5

# A run's estimate on the rates' GPU, in whole seconds ("" where gpuscale check cannot give one).
estimate_of() {
  local text
  [ -f "$rates" ] && prog gpuscale || return 0
  # shellcheck disable=SC2086  # the run's options are words
  text=$("${CMD[@]}" check "$configs/${run_config[$1]}" ${run_args[$1]} --rates "$rates" --ranks "${run_np[$1]}" \
         2>/dev/null | tr '\n' ' ' | tr -s ' ')
  [[ $text =~ estimated\ time\ on\ [^:]*:\ about\ ([0-9hmins. ]+)\ \(start ]] || return 0
  echo "${BASH_REMATCH[1]}" | awk '{
    t = 0
    for (i = 1; i < NF; i += 2) t += $i * ($(i + 1) == "h" ? 3600 : $(i + 1) == "min" ? 60 : 1)
    printf "%d\n", t + 0.999
  }'
}

# The plan: each step's box and estimate; then what this bundle or build holds.
echo "gpu-check.sh: plan (budget $budget s; estimates on $(basename "$rates"), 2/3 of a box at most):"
total=0
for s in "${plan[@]}"; do
  IFS=: read -r name box assumed <<<"$s"
  if [ "$assumed" = - ]; then
    est=$(estimate_of "$name")
    how="gpuscale check --rates"
    [ -n "$est" ] || { est="?"; how="no estimate: no gpuscale or rates table here"; }
  else
    est=$assumed how="assumed"
  fi
  printf '  %-16s %4s s  estimate %4s s (%s)\n' "$name" "$box" "$est" "$how"
  total=$((total + box))
done
echo "  total            $total s of the steps' boxes"
found=() lacking=()
for p in "${programs[@]}"; do if prog "$p"; then found+=("$p"); else lacking+=("$p"); fi; done
line="gpu-check.sh: $holder holds ${#found[@]} of ${#programs[@]} programs the steps run"
if [ ${#lacking[@]} -gt 0 ]; then
  line+=" (lacks ${lacking[*]}): build with the tests (scripts/build.sh) before scripts/bundle.sh"
elif ! ldd "$(binary gpuscale)" 2>/dev/null | grep libcudart >/dev/null; then  # no -q: see bundle.sh
  line+=", but its gpuscale has no CUDA backend: build it with GPUSCALE_CUDA=ON scripts/build.sh"
fi
echo "$line"
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
mkdir -p "$out" 2>/dev/null || die 2 "cannot make OUT_DIR $out"
[ -w "$out" ] || die 2 "OUT_DIR $out is not writable"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$gpu" | tee "$work/gpu.txt" "$out/gpu.txt"
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OMPI_MCA_rmaps_base_oversubscribe=1
t_start=$SECONDS

# record NAME BOX OUTCOME SECONDS RC REPORT NOTE: a line of steps.tsv
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/steps.tsv"; }
# The preflight's findings: what each need lacks ("" where it is there), read by the steps that have it.
declare -A lacks
# step NAME BOX REPORT NOTE CMD...: CMD in its box, its output in WORK/NAME.log, a line of steps.tsv; REPORT: the
# result file (.h5) whose report becomes the step's figures, or -.
step() {
  local name=$1 box=$2 h5=$3 note=$4 t0=$SECONDS rc outcome json=-
  shift 4
  if ((SECONDS - t_start + box > budget)); then
    record "$name" "$box" "not run" 0 0 - "the budget ($budget s) would be passed"
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
  record "$name" "$box" "$outcome" "$((SECONDS - t0))" "$rc" "$json" "$note"
}
wanted() { [[ " ${plan[*]%%:*} " == *" $1 "* ]]; }
box() { local s; for s in "${plan[@]}"; do [ "${s%%:*}" = "$1" ] && echo "$s" | cut -d: -f2; done; }
# ready NAME NEED...: whether the step is wanted and its needs are there; else its line says what is missing.
ready() {
  local name=$1 need missing=""
  wanted "$name" || return 1
  shift
  for need in "$@"; do [ -z "${lacks[$need]:-}" ] || missing+="${missing:+, }${lacks[$need]}"; done
  [ -z "$missing" ] && return 0
  record "$name" "$(box "$name")" skipped 0 0 - "skipped: $missing"
  return 1
}
gs_run() {  # NAME: a gpuscale run as a step, its report the figures
  local name=$1
  ready "$name" gpuscale mpirun cublas || return 0
  # shellcheck disable=SC2086  # the run's options are words
  step "$name" "$(box "$name")" "$work/$name.h5" "${run_note[$name]}" mpirun -np "${run_np[$name]}" "$gpuscale" run \
    "$configs/${run_config[$name]}" -o "$work/$name.h5" --force ${run_args[$name]}
}
test_prog() {  # NAME PROGRAM NEED...: a GPU test program as a step (77: skipped)
  local name=$1 program=$2
  shift 2
  ready "$name" "$program" "$@" || return 0
  prog "$program"
  step "$name" "$(box "$name")" - "" "${CMD[@]}"
}

# The preflight, in this shell (its findings decide which steps run), each probe bounded: every program of the
# step list loads with its libraries; mpirun, cuBLAS, NCCL and NVML load; compute-sanitizer and PyTorch are there.
loads() { python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$1" 2>/dev/null; }
preflight() {
  local t0=$SECONDS p bin notes=() torch
  for p in "${programs[@]}"; do
    if ! bin=$(binary "$p"); then
      lacks[$p]="no $p in this $holder"
    elif timeout 3 "${with_libs[@]}" ldd "$bin" 2>&1 | grep "not found" >/dev/null; then
      lacks[$p]="$p lacks $(timeout 3 "${with_libs[@]}" ldd "$bin" | awk '/not found/ {print $1}' | sort -u |
                           tr '\n' ' ' | sed 's/ $//')"
    fi
  done
  command -v mpirun >/dev/null || lacks[mpirun]="no mpirun on PATH"
  local libs
  libs=$(timeout 3 "${with_libs[@]}" ldd "$(binary gpuscale)" 2>/dev/null)
  grep -q 'libcublas.*=> /' <<<"$libs" || lacks[cublas]="cuBLAS does not load for gpuscale"
  grep -q 'libnccl.*=> /' <<<"$libs" || lacks[nccl]="NCCL does not load for gpuscale"
  if command -v python3 >/dev/null; then
    loads libnvidia-ml.so.1 || loads /usr/local/nvidia/lib64/libnvidia-ml.so.1 || lacks[nvml]="NVML does not load"
    torch=$(timeout 4 python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
      lacks[torch]="PyTorch does not import"
  else
    lacks[torch]="no python3"
  fi
  command -v compute-sanitizer >/dev/null || lacks[sanitizer]="no compute-sanitizer on PATH"
  for p in "${!lacks[@]}"; do notes+=("${lacks[$p]}"); done
  local outcome=ok
  for p in "${programs[@]}" mpirun cublas nccl nvml; do [ -z "${lacks[$p]:-}" ] || outcome=failed; done
  [ ${#notes[@]} -gt 0 ] || notes=("all there${torch:+; PyTorch $torch}")
  local said
  said=$(printf '%s; ' "${notes[@]}")
  echo "== preflight: ${said%; }" | tee "$work/preflight.log"
  record preflight "$(box preflight)" "$outcome" "$((SECONDS - t0))" 0 - "${said%; }"
}

wanted preflight && preflight
test_prog probe gpu_cuda_probe
test_prog backend gpu_cuda_backend cublas
test_prog nccl gpu_nccl_comm nccl
ready info gpuscale mpirun && step info "$(box info)" - "" mpirun -np 1 "$gpuscale" info
for name in gemm-sweep graphs cpu-vs-gpu copies async gemv; do gs_run "$name"; done
ready nccl-1rank nccl && gs_run nccl-1rank
for name in mpi-2share ladder; do gs_run "$name"; done
if wanted ladder-check; then
  if [ -f "$work/ladder.h5" ]; then
    step ladder-check "$(box ladder-check)" - "" "$gpuscale" report "$work/ladder.h5" --check
  else
    record ladder-check "$(box ladder-check)" "not run" 0 0 - "no ladder result"
  fi
fi
gs_run anchor-gpuscale
[ -f "$work/anchor-gpuscale.json" ] && cp "$work/anchor-gpuscale.json" "$work/anchor.json"
if ready anchor-torch torch; then
  # The machine's own python3 and its packages, never the bundle's libraries.
  step anchor-torch "$(box anchor-torch)" - "" python3 "$here/torch_anchor.py" "$work/torch.json"
fi
if ready memcheck gpuscale mpirun sanitizer; then
  odd_small=()  # the odd shapes smaller too, still no multiple of 8: edge tiles and element-by-element loads
  for e in odd-fp32 odd-tensor; do odd_small+=(--set "$e.m=100" --set "$e.n=110" --set "$e.k=90"); done
  step memcheck "$(box memcheck)" - "compute-sanitizer memcheck" mpirun -np 1 compute-sanitizer --tool memcheck \
    --error-exitcode 9 --print-limit 20 "$gpuscale" run "$configs/kernel-ladder.toml" -o "$work/memcheck.h5" --force \
    --set size=256 --set reps=1 --set warmup=1 --set warmup_s=0 "${odd_small[@]}"
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
