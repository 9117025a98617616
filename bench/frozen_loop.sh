#!/usr/bin/env bash
# Freezes (SIGSTOP) a rank once the run is done, TRIES times, and counts the jobs that ended by themselves within
# e2e.frozen's bound (60 s): each try is one test method of tests/e2e/test_frozen.py, which freezes rank 1 and then
# rank 0 of a 2-rank job ("pair"), or the only rank of a 1-rank job ("alone").
# Usage: bench/frozen_loop.sh [TRIES] [BUILD_DIR]   (BUILD_DIR: build, or build-mpich for MPICH's mpiexec)
set -uo pipefail
cd "$(dirname "$0")/.."
tries=${1:-10}
build=${2:-build}
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
export GPUSCALE_BIN=$PWD/$build/src/gpuscale MPIEXEC=${mpiexec:-mpirun} PYTHONDONTWRITEBYTECODE=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none
for shape in pair alone; do
  case $shape in
    pair) method=Frozen.test_a_rank_frozen_right_after_done_ends_the_job ;;
    alone) method=Frozen.test_the_only_rank_of_its_node_frozen_right_after_done_ends_the_job ;;
  esac
  passed=0
  for i in $(seq "$tries"); do
    start=$(date +%s)
    if python3 tests/e2e/test_frozen.py "$method" >"/tmp/frozen_loop.$build.$shape.$i.log" 2>&1; then
      passed=$((passed + 1))
      echo "$shape try $i: ended by itself ($(( $(date +%s) - start )) s for the test)"
    else
      echo "$shape try $i: FAILED (/tmp/frozen_loop.$build.$shape.$i.log)"
    fi
  done
  echo "$shape: $passed of $tries tries passed ($MPIEXEC)"
done
