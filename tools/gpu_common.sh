# Sourced by tools/gpu_check.sh and tools/gpu_bench.sh (never run alone):
# the output folder and log, NVLS off, the carried binaries' checks, and
# step(), which runs, logs and times one step and counts its failure.
# Expects: build (the carried build dir), out (the output folder), log_name.
mkdir -p "$out"
log="$out/$log_name"
: >"$log"

# NVLink multicast (NVLS) stays off: on shared hosts it can take the GPUs out
# of service. NCCL reads this at communicator creation.
export NCCL_NVLS_ENABLE=0

test_bin="$build/tests/backend_test"
gpu_bin="$build/tools/seam-gpu"
for b in "$test_bin" "$gpu_bin"; do
  if [[ ! -x "$b" ]]; then
    echo "${log_name%.log}: $b is missing: build it on the CPU machine and carry it here" | tee -a "$log" >&2
    exit 2
  fi
done

# GpuMpiRun needs Open MPI on this machine: tools/gpu_mpi_check.sh runs it
# with the carried runtime; the other scripts leave it out.
no_mpi_tests='-GpuMpiRun.*'

failed=0
step() {  # step NAME COMMAND...: runs, logs, times, counts a failure
  local name="$1"
  shift
  echo "== $name: $*" | tee -a "$log"
  local t0=$SECONDS
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
  ((rc == 0)) || failed=$((failed + 1))
}
