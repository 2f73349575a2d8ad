#!/usr/bin/env bash
# Runs the fused-kernel and graph checks and measurements on a machine with 2 GPUs, using
# only binaries built elsewhere and carried here (tests/backend_test and
# tools/seam-gpu under the build dir): it never builds. In order: the backend
# tests (fused ar_add_norm and graph capture included), `seam-gpu run` with
# the fused kernel at the presets' hidden sizes (bit-identity with the
# reference, the unfused path and the graph replay), then `seam-gpu bench` on a
# decode step (collectives, fused kernel table, captured step) and on two
# extend batches whose all-reduces are 64 and 128 MiB. Results go to $OUT when
# set (7 files: the log, the tests' XML, one JSON per run), otherwise to
# ./gpu-bench-out. Exit status: the number of failed steps.
# Usage: tools/gpu_bench.sh [build-dir] [--quick|--runs|--protocols]   (default
# build/; --quick: the new tests and small sizes only, to check a build before
# the full run; --runs: the seam-gpu runs and the decode bench only;
# --protocols: the backend tests, the fused kernel's two protocols, each
# forced, from 1 to 128 tokens, then the decode bench with the default choice)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
quick="${2:-}"
out="${OUT:-$root/gpu-bench-out}"
log_name=gpu_bench.log
# shellcheck source=tools/gpu_common.sh
source "$root/tools/gpu_common.sh"

# CUPTI (libcupti.so.13) times the kernels of a captured step; a machine
# without it gets the copy carried in <build>/lib.
if ldd "$gpu_bin" | grep -q "not found"; then
  export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
ldd "$gpu_bin" | grep -E "cupti|nccl|cublas|not found" | tee -a "$log"


step info "$gpu_bin" info
nvidia-smi topo -m 2>&1 | tee -a "$log"
if [[ "$quick" == --quick ]]; then
  step backend_test "$test_bin" --gtest_filter='GpuFused*:GpuGraph*:GpuExecutorOnGpus.TensorAndData*' \
    --gtest_output="xml:$out/backend_test.xml"
  step run-fused "$gpu_bin" run --model nemotron-h-8b --tp 2 --tokens 8 --hidden 512 --inner 1024 --numeric real \
    --check-unfused --graph-replays 5 --json "$out/run_quick.json"
  step bench-quick "$gpu_bin" bench --model nemotron-h-8b --tp 2 --tokens 8 --hidden 512 --inner 1024 \
    --numeric real --iters 10 --graph-replays 10 --fused-iters 20 --fused-tokens 1,64,2048 --json "$out/bench_quick.json"
  echo "gpu_bench: $failed step(s) failed; results in $out" | tee -a "$log"
  exit "$failed"
fi

if [[ "$quick" == --protocols ]]; then
  step backend_test "$test_bin" --gtest_filter="$no_mpi_tests" --gtest_output="xml:$out/backend_test.xml"
  for protocol in flag ll; do
    step "bench-fused-$protocol" "$gpu_bin" bench --model nemotron-h-8b --tp 2 --sections fused \
      --fused-protocol "$protocol" --fused-tokens 1,2,4,8,16,32,64,128 --fused-iters 200 \
      --json "$out/bench_fused_$protocol.json"
  done
  step bench-decode "$gpu_bin" bench --model nemotron-h-8b --tp 2 --tokens 8 --hidden 4096 --inner 8192 --numeric real \
    --iters 50 --graph-replays 50 --fused-iters 200 --json "$out/bench_h8b_decode.json"
  echo "gpu_bench: $failed step(s) failed; results in $out" | tee -a "$log"
  exit "$failed"
fi

if [[ "$quick" != --runs ]]; then
  step backend_test "$test_bin" --gtest_filter="$no_mpi_tests" --gtest_output="xml:$out/backend_test.xml"
else
  step backend_test_graph "$test_bin" --gtest_filter='GpuGraph*' --gtest_output="xml:$out/backend_test_graph.xml"
fi
step bench-decode "$gpu_bin" bench --model nemotron-h-8b --tp 2 --tokens 8 --hidden 4096 --inner 8192 --numeric real \
  --iters 50 --graph-replays 50 --fused-iters 200 --json "$out/bench_h8b_decode.json"
step run-nano-h2688 "$gpu_bin" run --model nemotron-3-nano --tp 2 --tokens 8 --hidden 2688 --inner 3712 \
  --check-unfused --graph-replays 20 --watchdog 30 --json "$out/run_nano_tp2_exact_h2688.json"
step run-h8b-h4096 "$gpu_bin" run --model nemotron-h-8b --tp 2 --tokens 8 --hidden 4096 --inner 8192 \
  --check-unfused --graph-replays 20 --watchdog 30 --json "$out/run_h8b_tp2_exact_h4096.json"
[[ "$quick" == --runs ]] || for tokens in 4096 8192; do
  step "bench-extend-$tokens" "$gpu_bin" bench --model nemotron-h-8b --tp 2 --fusion off --mode extend \
    --tokens "$tokens" --hidden 4096 --inner 256 --iters 30 --sections collectives \
    --json "$out/bench_h8b_extend_$tokens.json"
done

echo "gpu_bench: $failed step(s) failed; results in $out" | tee -a "$log"
exit "$failed"
