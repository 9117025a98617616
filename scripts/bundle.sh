#!/usr/bin/env bash
# Packs a build of gpuscale into one relocatable tarball for a machine where nothing can be installed (a cluster's
# compute node, a lent GPU machine): the installed layout (`cmake --install`: bin/, share/gpuscale/ with the configs,
# job scripts, tools and docs), the GPU check (share/gpuscale/scripts/gpu-check.sh) with the test and benchmark
# programs it runs (libexec/gpuscale/), and the libraries those programs load that such a machine may lack: HDF5,
# OpenBLAS, toml++ and what they load (lib/gpuscale/). Not packed, because the machine must provide them to match
# its driver, network and launcher: the C and C++ runtimes, the CUDA driver and toolkit libraries (cudart, cuBLAS,
# NVML), NCCL, and the MPI library with what it loads.
#
#   scripts/bundle.sh [BUILD_DIR] [-o FILE]        (default: build, gpuscale-bundle.tar.gz)
#
# On the machine: unpack anywhere and run bin/gpuscale, a launcher that puts lib/gpuscale first on the loader's path
# for gpuscale alone (the machine's own programs, python3 among them, never see those libraries) and adds the CUDA
# toolkit's library folder where the loader does not know it:
#   tar xzf gpuscale-bundle.tar.gz && cd gpuscale
#   mpirun -np 2 bin/gpuscale run share/gpuscale/configs/default.toml -o r.h5 && bin/gpuscale report r.h5
#   share/gpuscale/scripts/gpu-check.sh /tmp/check            # the whole GPU check, one call
# bin/gpuscale-exec PROGRAM [ARGS...] runs any program of libexec/gpuscale (or any command) the same way.
# The job scripts in share/gpuscale/jobs find bin/gpuscale by themselves.
# A build without the CUDA backend is packed all the same (it says so): gpuscale then runs on the CPU backend.
# Exit status: 0 packed; 2 bad usage or no build there; 1 a step failed.
set -euo pipefail
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "bundle.sh: error: $2" >&2; exit "$1"; }
build=build out=gpuscale-bundle.tar.gz
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -o) [ $# -ge 2 ] || die 2 "-o needs a file name"; out=$2; shift 2 ;;
    -*) die 2 "unknown option '$1' (usage: scripts/bundle.sh [BUILD_DIR] [-o FILE]; --help)" ;;
    *) build=$1; shift ;;
  esac
done
[ -f "$build/CMakeCache.txt" ] ||
  die 2 "$build is not a CMake build folder (no CMakeCache.txt): build first (scripts/build.sh)"
[ -x "$build/src/gpuscale" ] || die 2 "no $build/src/gpuscale: build first (scripts/build.sh)"
[[ $out == *.tar.gz ]] || die 2 "-o $out: the bundle is a .tar.gz"
command -v ldd >/dev/null || die 1 "ldd not found: it lists the libraries to pack"
out=$(realpath -m "$out")

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/gpuscale
cmake --install "$build" --prefix "$root" >/dev/null
mkdir -p "$root/libexec/gpuscale" "$root/lib/gpuscale" "$root/share/gpuscale/scripts"
mv "$root/bin/gpuscale" "$root/libexec/gpuscale/gpuscale"
# The programs the GPU check runs, where this build has them.
for p in tests/gpu_cuda_probe tests/gpu_cuda_backend tests/gpu_nccl_comm bench/gpu_bench bench/gemm_tiles; do
  [ -x "$build/$p" ] && cp "$build/$p" "$root/libexec/gpuscale/"
done
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/gpu-check.sh" "$here/gpu_check_summary.py" "$here/torch_anchor.py" "$root/share/gpuscale/scripts/"

# Libraries: what the programs load, less the ones the machine must provide (see the top of this file).
provided='^(linux-vdso|ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s'
provided+='|libcuda|libcudart|libcublas|libcublasLt|libnvidia-ml|libnccl'
provided+='|libmpi|libmpi_cxx|libmpich|libmpichcxx|libopen-rte|libopen-pal|libpmix|libhwloc|libevent|libevent_core'
provided+='|libevent_pthreads|libudev|libfabric|libucp|libucs|libuct|libucm|libpsm2|libibverbs|librdmacm)[-.0-9]*\.so'
ldd "$root"/libexec/gpuscale/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $provided ]] || cp -L "$path" "$root/lib/gpuscale/$name"
  done
if ldd "$root"/libexec/gpuscale/* | grep "not found" >/dev/null; then
  missing=$(ldd "$root"/libexec/gpuscale/* | grep "not found" | sort -u | head -3 | tr -s ' \t\n' ' ')
  die 1 "${missing}cannot be found here"
fi

cat >"$root/bin/gpuscale-exec" <<'EOF'
#!/bin/sh
# Runs a program of this bundle (libexec/gpuscale/PROGRAM, or any command) with the bundle's libraries first on the
# loader's path, for that program alone, and the CUDA toolkit's library folder after the caller's own path where the
# loader does not know it (CUDA_HOME, /usr/local/cuda*, /usr/local/nvidia/lib64).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 PROGRAM [ARGS...] (a program of $here/libexec/gpuscale, or any command)" >&2
  exit 2
fi
prog=$1
shift
[ -x "$here/libexec/gpuscale/$prog" ] && prog=$here/libexec/gpuscale/$prog
path=$here/lib/gpuscale${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! ldconfig -p 2>/dev/null | grep 'libcublas\.so' >/dev/null; then
  for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(ls -d /usr/local/cuda-*/targets/x86_64-linux/lib 2>/dev/null | sort -rV) /usr/local/nvidia/lib64; do
    [ -d "$d" ] && path=$path:$d
  done
fi
LD_LIBRARY_PATH=$path exec "$prog" "$@"
EOF
cat >"$root/bin/gpuscale" <<'EOF'
#!/bin/sh
# gpuscale from a bundle (scripts/bundle.sh): the bundle's libraries first, for gpuscale alone.
exec "$(dirname "$0")/gpuscale-exec" gpuscale "$@"
EOF
chmod +x "$root/bin/gpuscale" "$root/bin/gpuscale-exec"
"$root/bin/gpuscale" --version >/dev/null || die 1 "the packed gpuscale does not start here"

cuda=yes
# grep reads all (no -q): under pipefail, ldd cut short by SIGPIPE would fail a pipeline that found it.
ldd "$root/libexec/gpuscale/gpuscale" | grep 'libcudart' >/dev/null || cuda=no
mkdir -p "$(dirname "$out")"
tar -C "$stage" -czf "$out" gpuscale
version=$("$root/bin/gpuscale" --version | head -1 | cut -d' ' -f2)
programs=$(find "$root/libexec/gpuscale" -type f | wc -l)
libraries=$(find "$root/lib/gpuscale" -type f | wc -l)
echo "bundle.sh: wrote $out ($(du -h "$out" | cut -f1)): gpuscale $version, $programs program(s), $libraries" \
     "library file(s)"
if [ "$cuda" = no ]; then
  echo "bundle.sh: note: $build has no CUDA backend: the bundle runs on the CPU backend only (GPU check: nothing" \
       "to check); build with nvcc found (scripts/build.sh) for a GPU machine"
fi
