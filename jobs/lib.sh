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
  # BLAS threads: the task's CPUs under Slurm (gpuscale's `threads` then sets the number it uses), else 1.
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
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

