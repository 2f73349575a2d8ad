#!/usr/bin/env bash
# seam-gpu under mpirun on a machine with 2 GPUs and no MPI of its own, with carried
# binaries and a carried Open MPI (tools/mpi_carry.sh): `mpirun -np 2
# seam-gpu run` (one process per GPU, NCCL's unique id broadcast over MPI)
# against the one-process run of the same cases, exact mode (the output
# hashes must be equal: GPU, CPU executor and reference), a real-mode pair
# (both unfused), graph replays and `compare` under MPI, the wrong process
# count refused, then the backend tests (the one-process executor). Results
# go to $OUT when set (8 files at most), otherwise to ./gpu-mpi-out. Exit
# status: the number of failed steps.
# Usage: tools/gpu_mpi_check.sh BUILD_DIR MPI_DIR
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:?usage: tools/gpu_mpi_check.sh BUILD_DIR MPI_DIR}"
mpi="${2:?usage: tools/gpu_mpi_check.sh BUILD_DIR MPI_DIR}"
out="${OUT:-$root/gpu-mpi-out}"
log_name=gpu_mpi_check.log
# shellcheck source=tools/gpu_common.sh
source "$root/tools/gpu_common.sh"
# shellcheck source=/dev/null
source "$mpi/env.sh"
echo "carried MPI: $(ls "$mpi/missing" | wc -l) libraries this machine lacked" | tee -a "$log"
# CUPTI: a machine without it gets the copy carried in <build>/lib (as gpu_bench.sh).
if ldd "$gpu_bin" | grep -q "not found"; then
  export LD_LIBRARY_PATH="$build/lib:$LD_LIBRARY_PATH"
fi
ldd "$gpu_bin" | grep -E "mpi|nccl|cupti|not found" | tee -a "$log"
mpirun=(mpirun --allow-run-as-root --bind-to none -np 2)

step info "$gpu_bin" info
step mpi-hello "${mpirun[@]}" "$gpu_bin" info

# Exact mode: one process (fused ar_add_norm) against one process per GPU.
h8b=(--model nemotron-h-8b --tp 2 --tokens 8 --hidden 2048 --inner 4096)
nano=(--model nemotron-3-nano --tp 2 --dp 2 --tokens 3,2)
step single-h8b "$gpu_bin" run "${h8b[@]}" --json "$out/single_h8b.json"
step mpi-h8b "${mpirun[@]}" "$gpu_bin" run "${h8b[@]}" --json "$out/mpi_h8b.json"
step single-nano-dp2 "$gpu_bin" run "${nano[@]}" --json "$out/single_nano_dp2.json"
step mpi-nano-dp2 "${mpirun[@]}" "$gpu_bin" run "${nano[@]}" --json "$out/mpi_nano_dp2.json"
for pair in h8b nano_dp2; do
  step "same-hashes-$pair" python3 - "$out/single_$pair.json" "$out/mpi_$pair.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("one process:  ", a["hashes"], a["verdict"])
print("one per GPU:  ", b["hashes"], b["verdict"], b["device"])
same = a["hashes"]["gpu_host"] == b["hashes"]["gpu_host"] == b["hashes"]["gpu_device"] == b["hashes"]["reference"]
print("bit-identical outputs" if same else "OUTPUTS DIFFER")
sys.exit(0 if same and a["verdict"] == b["verdict"] == "identical" else 1)
PY
done

# Real mode, both unfused (NCCL + add+norm): the same kernels, so the same bits.
real=(--model nemotron-3-nano --tp 2 --dp 2 --numeric real --hidden 512 --inner 1024 --fused off)
step single-nano-real "$gpu_bin" run "${real[@]}"
step mpi-nano-real "${mpirun[@]}" "$gpu_bin" run "${real[@]}"
step real-same-output bash -c "diff <(grep '^output:' '$log' | tail -2 | head -1) <(grep '^output:' '$log' | tail -1) && echo same real-mode output"

step mpi-graph "${mpirun[@]}" "$gpu_bin" run "${h8b[@]}" --check-unfused --graph-replays 5 --watchdog 30 \
  --json "$out/mpi_h8b_graph.json"
step mpi-compare "${mpirun[@]}" "$gpu_bin" compare --model nemotron-h-8b --tp 2 --fusion off --numeric real \
  --hidden 512
step wrong-count bash -c "mpirun --allow-run-as-root --bind-to none --oversubscribe -np 3 $gpu_bin run \
  --model nemotron-h-8b --tp 2; test \$? -eq 2"

# The backend tests, GpuMpiRun included (it finds the carried binaries here).
export SEAM_GPU_BIN="$gpu_bin" SEAM_MPIRUN="$mpi/bin/mpirun"
step backend_test "$test_bin" --gtest_output="xml:$out/backend_test.xml"
echo "gpu_mpi_check: $failed step(s) failed; results in $out" | tee -a "$log"
exit "$failed"
