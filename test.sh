#!/usr/bin/env bash
# Builds gpuscale with its tests and runs them all through ctest: against the system's MPI (Open MPI) in build/,
# then against MPICH in build-mpich/ (scripts/test-mpich.sh; GPUSCALE_MPICH=0 leaves it out). Extra arguments
# go to ctest. GPU tests are reported as skipped (not passed) where no CUDA device is usable.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
mkdir -p build
scripts/build.sh
rc=0
(cd build && ctest --output-on-failure -j2 "$@") || rc=$?
scripts/test-mpich.sh "$@" || rc=$?
[ "$rc" -eq 0 ] || echo "test.sh: some tests failed (see above)" >&2
exit "$rc"
