#!/usr/bin/env bash
# Prepares what tools/gpu_mpi_check.sh needs on a GPU machine without MPI, in
# one folder to carry there (an ignored path of the checkout that travels,
# e.g. build-mpi-carry/): CARRY/build/tools/seam-gpu, CARRY/build/tests/
# backend_test and CUPTI (CARRY/build/lib), and the Open MPI runtime
# (CARRY/mpi, tools/mpi_carry.sh). Then, on the 2-GPU machine:
#   export NCCL_NVLS_ENABLE=0; tools/gpu_mpi_check.sh CARRY/build CARRY/mpi
# Usage: tools/gpu_mpi_carry.sh CARRY [BUILD]   (BUILD default: build/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
carry="${1:?usage: tools/gpu_mpi_carry.sh CARRY [BUILD]}"
build="${2:-$root/build}"
for b in "$build/tools/seam-gpu" "$build/tests/backend_test"; do
  [[ -x "$b" ]] || { echo "gpu_mpi_carry: $b is missing: build seam with CUDA and MPI first" >&2; exit 2; }
done
rm -rf "$carry/build"
mkdir -p "$carry/build/tools" "$carry/build/tests" "$carry/build/lib"
cp "$build/tools/seam-gpu" "$carry/build/tools/"
cp "$build/tests/backend_test" "$carry/build/tests/"
cupti="$(ldd "$build/tools/seam-gpu" | awk '/libcupti/ {print $3}')"
[[ -n "$cupti" ]] && cp -L "$cupti" "$carry/build/lib/"
"$root/tools/mpi_carry.sh" "$carry/mpi"
du -sh "$carry" | awk '{print "gpu_mpi_carry: " $1 " in " $2}'
