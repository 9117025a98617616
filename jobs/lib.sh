# Shared by the gpuscale job scripts (jobs/slurm/*.sbatch, jobs/slurm/study.sh,
# jobs/local/mpirun.sh); sourced, not run. Each script sets `script` (its name,
# for messages) and `checkout` (the folder that holds jobs/) first.
# shellcheck shell=bash disable=SC2154

die() {  # die CODE MESSAGE...: one clear line on stderr, then exit CODE
  local code=$1
  shift
  echo "$script: error: $*" >&2
  exit "$code"
}

# The gpuscale binary, by the first of: $GPUSCALE; where these scripts are installed (cmake --install
# wrote jobs/installed.sh), the gpuscale installed with them (PREFIX/bin/gpuscale); gpuscale on PATH;
# build/src/gpuscale in the submission directory (SLURM_SUBMIT_DIR, else the working directory);
# build/src/gpuscale in the checkout these scripts belong to. Prints its absolute path, or exits 2
# saying where it looked.
find_gpuscale() {
  if [ -n "${GPUSCALE:-}" ]; then
    if [ ! -f "$GPUSCALE" ] || [ ! -x "$GPUSCALE" ]; then
      die 2 "GPUSCALE=$GPUSCALE is not an executable file (unset it to search PATH and build/src/gpuscale)"
    fi
    realpath "$GPUSCALE"
    return
  fi
  local tried=() dir installed_bindir=""
  if [ -f "$checkout/jobs/installed.sh" ]; then
    # shellcheck source=/dev/null
    . "$checkout/jobs/installed.sh"
    if [ -n "$installed_bindir" ]; then
      if [ -f "$checkout/$installed_bindir/gpuscale" ] && [ -x "$checkout/$installed_bindir/gpuscale" ]; then
        realpath "$checkout/$installed_bindir/gpuscale"
        return
      fi
      tried+=("$checkout/$installed_bindir/gpuscale")
    fi
  fi
  local found
  if found=$(command -v gpuscale); then
    realpath "$found"
    return
  fi
  for dir in "${SLURM_SUBMIT_DIR:-$PWD}" "$checkout"; do
    [ -n "$dir" ] || continue
    if [ -f "$dir/build/src/gpuscale" ] && [ -x "$dir/build/src/gpuscale" ]; then
      realpath "$dir/build/src/gpuscale"
      return
    fi
    tried+=("$dir/build/src/gpuscale")
  done
  die 2 "gpuscale binary not found: GPUSCALE is not set, no gpuscale on PATH, none at ${tried[*]}." \
    "Build it (cmake --build build --target gpuscale) or set GPUSCALE=/path/to/gpuscale"
}

# The MPI family gpuscale was built with, from its --version: "openmpi", "mpich" (MPICH and the libraries built
# on it: Intel MPI, MVAPICH, Cray MPICH) or "other".
mpi_family() {  # mpi_family BINARY
  case $("$1" --version 2>/dev/null | sed -n 's/^MPI: built with //p') in
    "Open MPI "*) echo openmpi;;
    MPICH*) echo mpich;;
    *) echo other;;
  esac
}

# srun's --mpi for that family: pmix for Open MPI (Debian's starts under srun with PMIx only), pmi2 for the
# MPICH family (Slurm's pmi2 plugin also speaks PMI-1, which MPICH's default build uses). None where the user
# set SLURM_MPI_TYPE (srun reads it) or the family is not known (Slurm's MpiDefault).
srun_mpi_args() {  # srun_mpi_args BINARY: prints "--mpi=TYPE" or nothing
  [ -z "${SLURM_MPI_TYPE:-}" ] || return 0
  case $(mpi_family "$1") in
    openmpi) echo --mpi=pmix;;
    mpich) echo --mpi=pmi2;;
  esac
}

# The launcher that starts the ranks: $MPIRUN, else the one gpuscale was built with (the "mpiexec:" line of its
# --version), else mpirun on PATH. Prints its path, or exits 2.
find_launcher() {  # find_launcher BINARY
  if [ -n "${MPIRUN:-}" ]; then
    command -v "$MPIRUN" || die 2 "MPIRUN=$MPIRUN is not a command (unset it to use the launcher gpuscale was built with)"
    return
  fi
  local built
  built=$("$1" --version 2>/dev/null | sed -n 's/^mpiexec: \(\/.*\)/\1/p')
  if [ -n "$built" ] && [ -x "$built" ]; then
    echo "$built"
    return
  fi
  command -v mpirun || die 2 "no MPI launcher: $1 names ${built:-none} and there is no mpirun on PATH;" \
    "set MPIRUN=/path/to/mpiexec"
}

# The kind of launcher, from its --version: "openmpi" (Open MPI's mpirun), "hydra" (MPICH's and Intel MPI's
# mpiexec) or "other".
launcher_family() {  # launcher_family LAUNCHER
  case $("$1" --version 2>&1 | head -n 5) in
    *"Open MPI"*|*OpenRTE*) echo openmpi;;
    *HYDRA*|*Hydra*|*"Intel(R) MPI"*) echo hydra;;
    *) echo other;;
  esac
}

# The config as gpuscale will open it: as given (relative to the working directory), else relative to
# the submission directory (sbatch --chdir moves the working directory). Exits 2 when it is neither.
find_config() {
  local c=$1
  if [ -f "$c" ]; then
    echo "$c"
  elif [[ $c != /* ]] && [ -n "${SLURM_SUBMIT_DIR:-}" ] && [ -f "$SLURM_SUBMIT_DIR/$c" ]; then
    echo "$SLURM_SUBMIT_DIR/$c"
  else
    die 2 "config not found: $c (working directory $PWD${SLURM_SUBMIT_DIR:+, submitted from $SLURM_SUBMIT_DIR})"
  fi
}

# The environment every rank gets (each default only where the variable is unset).
job_environment() {
  # BLAS threads: the task's CPUs under Slurm (gpuscale's `threads` then sets the number it uses; srun_layout's
  # share of the node in SRUN_CPUS_PER_TASK), else 1.
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-${SRUN_CPUS_PER_TASK:-1}}}
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$OPENBLAS_NUM_THREADS}
  # Slurm 22.05+: srun no longer takes --cpus-per-task from the batch job unless told so.
  if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export SRUN_CPUS_PER_TASK=${SRUN_CPUS_PER_TASK:-$SLURM_CPUS_PER_TASK}; fi
  # A dead peer (node down, cable pulled) is noticed within seconds (~7 s on the test bed) instead of
  # ~8 minutes: TCP keepalive on Open MPI's out-of-band channel (mpirun's daemons): a probe after 2 s
  # idle, then every 1 s, 3 tries. srun-started ranks do not use that channel (jobs/README.md).
  export OMPI_MCA_oob_tcp_keepalive_time=${OMPI_MCA_oob_tcp_keepalive_time:-2}
  export OMPI_MCA_oob_tcp_keepalive_intvl=${OMPI_MCA_oob_tcp_keepalive_intvl:-1}
  export OMPI_MCA_oob_tcp_keepalive_probes=${OMPI_MCA_oob_tcp_keepalive_probes:-3}
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

# A header in the (appended) log, so the runs of one log file can be told apart.
log_start() {  # log_start BINARY CONFIG
  local restart=""
  if [ "${SLURM_RESTART_COUNT:-0}" != 0 ]; then restart=" (restart $SLURM_RESTART_COUNT)"; fi
  echo "=== gpuscale job ${SLURM_JOB_ID:-(no job)}$restart: $(date '+%F %T %z') on $(hostname)" \
       "${SLURM_JOB_NODELIST:+nodes $SLURM_JOB_NODELIST }in $PWD"
  echo "binary: $1 ($("$1" --version 2>&1 | head -n 1))"
  echo "config: $2; results: $PWD/results/ unless -o is given"
  echo "threads: OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS SLURM_CPUS_PER_TASK=${SLURM_CPUS_PER_TASK:-unset}"
}

log_end() {  # log_end EXIT_CODE
  echo "=== gpuscale job ${SLURM_JOB_ID:-(no job)}: exit $1 at $(date '+%F %T %z')"
}

# A site's settings (jobs/README.md, "Site settings"): $GPUSCALE_SITE if set (it must be a file), else
# jobs/slurm/site.sh beside these scripts if present; sourced with GPUSCALE_SITE_PHASE set to "submit" (study.sh on
# the login node, before sbatch: SBATCH_ACCOUNT, SBATCH_PARTITION, ...) or "job" (inside the job, before srun:
# module loads, MPI and binding variables).
load_site() {  # load_site PHASE
  local site=${GPUSCALE_SITE:-$checkout/jobs/slurm/site.sh}
  if [ -n "${GPUSCALE_SITE:-}" ] && [ ! -f "$GPUSCALE_SITE" ]; then
    die 2 "GPUSCALE_SITE=$GPUSCALE_SITE is not a file (unset it to use jobs/slurm/site.sh where present)"
  fi
  [ -f "$site" ] || return 0
  export GPUSCALE_SITE_PHASE=$1
  # The first command that fails stops the script with the file's name (the scripts run with set -e).
  trap 'die 2 "site settings $site failed (exit $?)"' ERR
  # shellcheck source=/dev/null
  . "$site"
  trap - ERR
  # shellcheck disable=SC2034  # the job scripts' log names it
  site_loaded=$site
}

# How many GPUs Slurm granted this job on the node the batch script runs on (with --exclusive: all of the node's),
# 0 where none: SLURM_GPUS_ON_NODE, else the entries of CUDA_VISIBLE_DEVICES.
granted_gpus() {
  if [[ ${SLURM_GPUS_ON_NODE:-} =~ ^[0-9]+$ ]]; then
    echo "$SLURM_GPUS_ON_NODE"
  elif [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    local -a ids
    IFS=, read -r -a ids <<<"$CUDA_VISIBLE_DEVICES"
    echo "${#ids[@]}"
  else
    echo 0
  fi
}

# The GPUs asked per node (sbatch --gpus-per-node, "4" or "a100:4"); "" where not asked that way.
asked_gpus_per_node() {
  local asked=${SLURM_GPUS_PER_NODE:-}
  echo "${asked##*:}"
}

# The NUMA node of each GPU the batch script sees, in CUDA_VISIBLE_DEVICES order, comma-separated (nvidia-smi's PCI
# bus id, then the PCI device's numa_node in sysfs); "" where any is unknown.
gpu_numa_nodes() {
  command -v nvidia-smi >/dev/null 2>&1 && [ -n "${CUDA_VISIBLE_DEVICES:-}" ] || return 0
  local id bus numa out=()
  for id in ${CUDA_VISIBLE_DEVICES//,/ }; do
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i "$id" 2>/dev/null) || return 0
    bus=$(tr '[:upper:]' '[:lower:]' <<<"$bus")
    numa=$(cat "/sys/bus/pci/devices/${bus: -12}/numa_node" 2>/dev/null) || return 0
    [[ $numa =~ ^[0-9]+$ ]] || return 0
    out+=("$numa")
  done
  (IFS=,; echo "${out[*]}")
}

# --cpu-bind for the ranks: $GPUSCALE_CPU_BIND if set; else map_ldom with each GPU's NUMA node (rank i of a node
# uses GPU i, so its threads run on that GPU's NUMA node) where the GPUs span several NUMA nodes and all are known;
# else cores (each rank its own cores, laid out block by block, in the order of the local ranks). Prints
# "BIND|why".
cpu_bind_choice() {
  if [ -n "${GPUSCALE_CPU_BIND:-}" ]; then
    echo "$GPUSCALE_CPU_BIND|GPUSCALE_CPU_BIND"
    return
  fi
  local numa
  numa=$(gpu_numa_nodes)
  if [ -z "$numa" ]; then
    echo "cores|no GPU's NUMA node known: nvidia-smi and sysfs do not tell here"
  elif [ "$(tr ',' '\n' <<<"$numa" | sort -u | wc -l)" -gt 1 ]; then
    echo "map_ldom:$numa|each rank on its GPU's NUMA node"
  else
    echo "cores|all GPUs on NUMA node ${numa%%,*}"
  fi
}

# The srun options that lay the ranks out, in the array `layout` (and what was chosen, in `layout_note`):
# - ranks per node: the tasks the job asked (--ntasks-per-node, -n: Slurm's layout), else one per GPU Slurm granted
#   on the node (an 8-GPU server runs 8), else (no GPU) Slurm's default of one;
# - GPUs: every granted GPU to every rank of the node (--gpus-per-node), so each rank sees all of them and picks its
#   own by local rank, as nccl-tests does; --gpus-per-task given to sbatch is kept (each rank then sees one GPU, and
#   gpuscale warns what that costs);
# - CPUs: the node's CPUs shared out (--cpus-per-task) where the job did not say, and --cpu-bind (cpu_bind_choice).
srun_layout() {
  layout=() layout_note=""
  local gpus nodes=${SLURM_JOB_NUM_NODES:-1} per_node="" asked
  gpus=$(granted_gpus)
  asked=$(asked_gpus_per_node)
  if [ "$asked" = 0 ]; then gpus=0; fi  # --gpus-per-node=0: CPU only, even where --exclusive granted GPUs
  if [ -n "${SLURM_NTASKS:-}" ]; then
    layout_note="ranks: as the job asked ($SLURM_NTASKS${SLURM_NTASKS_PER_NODE:+, $SLURM_NTASKS_PER_NODE per node})"
  elif [ "$gpus" -gt 0 ]; then
    per_node=$gpus
    layout_note="ranks: $gpus per node, one per GPU Slurm granted (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-})"
  else
    per_node=1
    layout_note="ranks: 1 per node (no GPU granted, no --ntasks-per-node)"
  fi
  if [ -n "$per_node" ]; then layout+=(--ntasks-per-node="$per_node" --ntasks="$((per_node * nodes))"); fi
  srun_gpu_args "$gpus"
  srun_cpu_args "${per_node:-${SLURM_NTASKS_PER_NODE:-}}"
}

srun_gpu_args() {  # srun_gpu_args GRANTED
  if [ -n "${SLURM_GPUS_PER_TASK:-}" ]; then
    layout_note+="; GPUs: --gpus-per-task=$SLURM_GPUS_PER_TASK as asked"
  elif [ "$1" -gt 0 ]; then
    layout+=(--gpus-per-node="$1")
    layout_note+="; GPUs: all $1 to every rank of a node (--gpus-per-node=$1), each picks its own by local rank"
  elif [ "$(asked_gpus_per_node)" = 0 ]; then
    layout+=(--gpus-per-node=0)
  fi
}

srun_cpu_args() {  # srun_cpu_args RANKS_PER_NODE ("" not known)
  local cpus=${SLURM_CPUS_ON_NODE:-} per=${SLURM_CPUS_PER_TASK:-} bind
  if [ -z "$per" ] && [ -n "$1" ] && [[ $cpus =~ ^[0-9]+$ ]] && [ "$cpus" -ge "$1" ]; then
    per=$((cpus / $1))
    layout+=(--cpus-per-task="$per")
  fi
  bind=$(cpu_bind_choice)
  layout+=(--cpu-bind="${bind%%|*}")
  layout_note+="; CPUs: ${per:-the default number of CPUs} per rank, --cpu-bind=${bind%%|*} (${bind#*|})"
  # gpuscale's `threads` and the BLAS threads follow the rank's CPUs (job_environment).
  if [ -n "$per" ]; then export SRUN_CPUS_PER_TASK=$per; fi
}

# Waits for a Slurm job to end, asking the controller with back-off: after 5 s, then twice as long each time, at
# most every 60 s (a queued job can wait for hours; the controller is everyone's). A job stays visible to scontrol
# for MinJobAge (300 s by default) after it ends, more than the longest pause. Sets `job_state` (COMPLETED, FAILED,
# CANCELLED, TIMEOUT, ...) and `job_exit` (the N of its ExitCode N:S; "" where not known); returns 1, with
# job_state "", where scontrol did not know the job 3 times running.
wait_for_job() {  # wait_for_job JOBID
  local pause=5 unknown=0 info
  job_state="" job_exit=""
  while :; do
    sleep "$pause"
    pause=$((pause * 2 > 60 ? 60 : pause * 2))
    info=$(scontrol show job -o "$1" 2>/dev/null) || true
    job_state=$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2) || true
    case $job_state in
      "") unknown=$((unknown + 1))
          [ $unknown -lt 3 ] || return 1;;
      PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING) unknown=0;;
      *) break;;
    esac
  done
  # shellcheck disable=SC2034  # the caller reads it
  job_exit=$(grep -o ' ExitCode=[0-9]*' <<<"$info" | cut -d= -f2) || true
}

# The result file a job wrote in results/ of the working directory (the newest: a job that ran twice, requeued,
# wrote two); "" where it wrote none.
job_result_file() {  # job_result_file JOBID
  # shellcheck disable=SC2012  # our own names: no newlines in them
  ls -t results/*-job"$1"-*.h5 2>/dev/null | head -n 1 || true
}
