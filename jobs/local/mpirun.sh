#!/usr/bin/env bash
# gpuscale through mpirun: on one workstation, or inside a Slurm allocation (sbatch, salloc), where
# mpirun starts the ranks on the allocated nodes itself (no srun, no PMIx plugin needed).
#
#   jobs/local/mpirun.sh [-n NP] CONFIG [gpuscale run options...]
#   jobs/local/mpirun.sh -n 2 configs/default.toml -o results/mine.h5
#   sbatch -N 1 -n 4 --gpus-per-node=4 jobs/local/mpirun.sh configs/default.toml
#   salloc -N 2 --ntasks-per-node=4 --gpus-per-node=4 jobs/local/mpirun.sh configs/cross-server.toml
#
# NP, the ranks: default SLURM_NTASKS inside an allocation, else one per GPU that nvidia-smi lists
# (required where there is none). Outside an allocation more ranks than cores are allowed (ranks then
# share cores; gpuscale's timings say so). Each rank uses the GPU of its node-local rank; in an
# allocation of several nodes ask for GPUs with --gpus-per-node, not --gpus-per-task (jobs/README.md).
# The launcher is $MPIRUN, else the one of the MPI gpuscale was built with (gpuscale --version), else mpirun;
# Open MPI's mpirun and MPICH's (or Intel MPI's) Hydra mpiexec are told apart and set up each its own way
# (jobs/README.md). More launcher options: MPIRUN_ARGS="--mca btl tcp,self" (split at spaces).
# The binary is $GPUSCALE, else (installed by cmake --install) the gpuscale installed with this script,
# else gpuscale on PATH, else build/src/gpuscale in the submission (or working) directory or in the
# checkout this script belongs to; missing: exit 2 at once. Results go to
# results/<config>[-job<JOBID>]-<time>.h5 in the working directory (or -o FILE); under sbatch the
# log is gpuscale-<JOBID>.out, appended to, and the job is not requeued.
# Exit code: gpuscale's (0 ok, 1 failure, 2 bad input, 3 timeout); 2 when the binary or config is missing.
#SBATCH --job-name=gpuscale
#SBATCH --time=00:30:00
#SBATCH --output=gpuscale-%j.out
#SBATCH --open-mode=append
#SBATCH --no-requeue
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then sed -n '2,/^[^#]/{/^#SBATCH/d;/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0; fi
script=mpirun.sh
# Slurm runs a copy of this script from its spool folder, so $0 does not say where the checkout is;
# the path it was submitted with does (scontrol; relative to the submission directory).
self=$0
if [ -n "${SLURM_JOB_ID:-}" ] && [ ! -f "$(dirname "$self")/../lib.sh" ]; then
  self=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *Command=//p' | head -n 1) || true
  [ -f "$self" ] || self=${self%% *}  # newer Slurm may list the arguments too
  [[ $self == /* ]] || self=${SLURM_SUBMIT_DIR:-$PWD}/$self
fi
checkout=$(cd "$(dirname "$self")/../.." 2>/dev/null && pwd) || checkout=/nonexistent
if [ ! -f "$checkout/jobs/lib.sh" ]; then
  echo "$script: error: cannot find jobs/lib.sh of the gpuscale checkout this script belongs to ($self);" \
       "run the scripts where they lie in the checkout (a copy elsewhere cannot find it)" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR/.. source=lib.sh
. "$checkout/jobs/lib.sh"

np=""
case ${1:-} in
  -n|-np|--np) [ $# -ge 2 ] || die 2 "$1 needs a number of ranks"; np=$2; shift 2;;
  -n*) np=${1#-n}; shift;;
esac
# A number of at most 7 digits before bash compares it (past 2^63 it would fail inside the launcher instead).
[ -z "$np" ] || { [[ $np =~ ^[1-9][0-9]{0,6}$ ]] && [ "$np" -le 1000000 ]; } ||
  die 2 "-n wants a number of ranks from 1 to 1000000, got '$np'"
[ $# -ge 1 ] || die 2 "no config given (usage: $script [-n NP] CONFIG [gpuscale run options...]; --help)"
config=$(find_config "$1")
shift
gpuscale=$(find_gpuscale)

launcher=$(find_launcher "$gpuscale")
family=$(launcher_family "$launcher")
launch=("$launcher")
if [ -n "$np" ]; then
  launch+=(-n "$np")
elif [ -n "${SLURM_JOB_ID:-}" ]; then
  if [ -n "${SLURM_NTASKS:-}" ]; then launch+=(-n "$SLURM_NTASKS"); fi  # else: the launcher fills the allocation
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "${gpus:-0}" -gt 0 ] || die 2 "how many ranks? give -n NP (not in a Slurm allocation, and nvidia-smi lists no GPU)"
  launch+=(-n "$gpus")
fi
job_environment
case $family in
  openmpi)
    if [ -z "${SLURM_JOB_ID:-}" ]; then
      export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
    fi
    # Several BLAS threads per rank: mpirun's default binding (one core per rank for up to 2 ranks)
    # would put them all on one core.
    if [[ $OPENBLAS_NUM_THREADS =~ ^[0-9]{1,6}$ ]] && [ "$OPENBLAS_NUM_THREADS" -gt 1 ] &&
       [ -z "${OMPI_MCA_hwloc_base_binding_policy:-}" ]; then
      launch+=(--bind-to none)
    fi;;
  hydra) ;;  # oversubscribes, binds nothing and passes the whole environment by default (jobs/README.md)
  *) echo "$script: warning: $launcher is neither Open MPI's mpirun nor a Hydra mpiexec: only -n is set;" \
          "add its options with MPIRUN_ARGS" >&2;;
esac
read -r -a extra <<<"${MPIRUN_ARGS:-}"
launch+=("${extra[@]}")

log_start "$gpuscale" "$config"
echo "launcher: $launcher ($family)"
if [ -n "${SLURM_GPUS_PER_TASK:-}" ] && [ "${SLURM_GPUS_PER_TASK}" != 0 ] && [ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ]; then
  echo "$script: warning: --gpus-per-task with mpirun on ${SLURM_JOB_NUM_NODES} nodes: on every node but the" \
       "first, mpirun's daemon gets one GPU and all ranks there see it; use --gpus-per-node" >&2
fi
rc=0
"${launch[@]}" "$gpuscale" run "$config" "$@" || rc=$?
log_end "$rc"
exit "$rc"
