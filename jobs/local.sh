#!/usr/bin/env bash
# Runs gpuscale with NP ranks on this machine through mpirun, one BLAS thread
# per rank unless OPENBLAS_NUM_THREADS is set.
#   jobs/local.sh NP CONFIG [gpuscale run options...]
#   jobs/local.sh 2 configs/default.toml -o results/mine.h5
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 NP CONFIG [gpuscale run options...]" >&2
  exit 2
fi
np=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
gpuscale=${GPUSCALE:-$here/build/src/gpuscale}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# More ranks than cores is allowed (ranks then share cores; timings say so).
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
exec mpirun -np "$np" "$gpuscale" run "$@"
