#!/usr/bin/env bash
# The second build: gpuscale against MPICH (Debian's mpich and libmpich-dev), CPU backend only, in build-mpich/,
# and there, with MPICH's own mpiexec (Hydra), the tests whose outcome depends on the MPI library or its launcher
# (label mpi, tests/CMakeLists.txt: MPI calls, launches, ranks ending; not those that read files, which build/
# runs). Extra arguments go to ctest. Says why and exits 0 where MPICH is not installed, or with GPUSCALE_MPICH=0.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${GPUSCALE_MPICH:-1}" = 0 ]; then
  echo "MPICH build: left out (GPUSCALE_MPICH=0)"
  exit 0
fi
if ! command -v mpicxx.mpich >/dev/null || ! command -v mpiexec.mpich >/dev/null; then
  echo "MPICH build: left out: mpicxx.mpich or mpiexec.mpich not found (Debian packages mpich, libmpich-dev)"
  exit 0
fi
mkdir -p build-mpich
if ! cmake -S . -B build-mpich -DCMAKE_BUILD_TYPE=Release -DGPUSCALE_CUDA=OFF \
     -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich \
     -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" >build-mpich/configure.log 2>&1; then
  cat build-mpich/configure.log >&2
  exit 1
fi
echo "MPICH build: $(grep -E '^-- Found MPI_CXX' build-mpich/configure.log | head -n 1)"
cmake --build build-mpich -j"$(nproc)" --target gpuscale mpi_tests transfer_bench
cd build-mpich
ctest --output-on-failure -j2 -L mpi "$@"
