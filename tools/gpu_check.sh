#!/usr/bin/env bash
# Runs seam's GPU checks on a machine with 1-2 GPUs, using only binaries built
# elsewhere and carried here (build/tests/backend_test, build/tools/seam-gpu):
# it never builds. The backend tests (bit-identity with the reference, the
# reported hang), then `seam-gpu run` on two presets at tp=2 and tp=2 dp=2,
# exact and real, LongCat-Flash's branch and a two-batch-overlap plan (their
# logs only: $OUT holds 8 files), `seam-gpu compare` (logs only), and the
# bare-NCCL all-reduce comparison. Results go to $OUT
# when set (8 files at most: the log, the tests' XML, one JSON per run),
# otherwise to ./gpu-check-out. Exit status: the number of failed steps.
# Usage: tools/gpu_check.sh [build-dir]   (default: build/)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
out="${OUT:-$root/gpu-check-out}"
log_name=gpu_check.log
# shellcheck source=tools/gpu_common.sh
source "$root/tools/gpu_common.sh"

step info "$gpu_bin" info
step backend_test "$test_bin" --gtest_filter="$no_mpi_tests" --gtest_output="xml:$out/backend_test.xml"

gpus=$("$gpu_bin" info | grep -c '^device ')
if ((gpus >= 2)); then
  step h8b-tp2-exact "$gpu_bin" run --model nemotron-h-8b --tp 2 --json "$out/h8b_tp2_exact.json"
  step h8b-tp2-dp2-exact "$gpu_bin" run --model nemotron-h-8b --tp 2 --dp 2 --tokens 3,2 \
    --json "$out/h8b_tp2_dp2_exact.json"
  step nano-tp2-deepep-exact "$gpu_bin" run --model nemotron-3-nano --tp 2 --ep 2 --a2a deepep --tokens 5 \
    --json "$out/nano_tp2_deepep_exact.json"
  step nano-tp2-dp2-exact "$gpu_bin" run --model nemotron-3-nano --tp 2 --dp 2 \
    --json "$out/nano_tp2_dp2_exact.json"
  step nano-tp2-dp2-real "$gpu_bin" run --model nemotron-3-nano --tp 2 --dp 2 --numeric real \
    --hidden 512 --inner 1024 --json "$out/nano_tp2_dp2_real.json"
  step longcat-tp2-dp2-exact "$gpu_bin" run --model longcat-flash --tp 2 --dp 2 --tokens 3,2
  step tbo-tp2-deepep-exact "$gpu_bin" run --pattern '*-*E*E' --family two-stage --tbo --tp 2 --ep 2 \
    --a2a deepep --tokens 5
  step tbo-tp2-dp2-exact "$gpu_bin" run --pattern '*-*E*E' --family two-stage --tbo --tp 2 --dp 2 --tokens 3,2
  step ln-sp-tp2-exact "$gpu_bin" run --model qwen3-8b --tp 2 --tokens 5 --mode extend --ln-sp
  # The bit-identity prediction in real mode (logs only): different
  # reductions over two members (predicted identical), and a planted planner
  # bug against its parent (predicted to differ; the difference measured).
  step compare-qwen3next-dp-legacy "$gpu_bin" compare --model qwen3-next-80b-a3b --tp 2 --dp 2 --tokens 2,2 \
    --policy legacy --against declared
  step compare-deepseek-dp-legacy "$gpu_bin" compare --model deepseek-v3 --tp 2 --dp 2 --tokens 3,2 \
    --policy legacy --against declared
  step compare-capture-legacy "$gpu_bin" compare --pattern '*E-M' --tp 2 --capture 1,2 --tokens 3 \
    --policy legacy --against declared
  step compare-fused-naive "$gpu_bin" compare --pattern '-M' --tp 2 --tokens 3 --policy naive --against declared
  step compare-planted "$gpu_bin" compare --model nemotron-h-8b --tp 2 --policy declared --decision terminal_defers \
    --against declared
else
  # One GPU: the same models, world 1.
  step h8b-exact "$gpu_bin" run --model nemotron-h-8b --json "$out/h8b_exact.json"
  step nano-exact "$gpu_bin" run --model nemotron-3-nano --json "$out/nano_exact.json"
  step nano-real "$gpu_bin" run --model nemotron-3-nano --numeric real --hidden 512 --inner 1024 \
    --json "$out/nano_real.json"
  step longcat-exact "$gpu_bin" run --model longcat-flash --tokens 3
  step tbo-deepep-exact "$gpu_bin" run --pattern '*-*E*E' --family two-stage --tbo --a2a deepep --tokens 5
  step compare-legacy "$gpu_bin" compare --model nemotron-h-8b --policy legacy --against declared \
    --json "$out/compare_legacy.json"
  step compare-naive "$gpu_bin" compare --model deepseek-v3 --tokens 2 --policy naive --against declared
  # A planted bug that changes values at world 1: predicted to differ, the difference measured.
  step compare-planted "$gpu_bin" compare --model nemotron-h-8b --policy declared --decision stack_never_entered \
    --against declared --json "$out/compare_planted.json"
fi
step bench-allreduce "$gpu_bin" bench-allreduce --bytes $((64 << 20)) --iters 20 --json "$out/bench_allreduce.json"

echo "gpu_check: $failed step(s) failed; results in $out" | tee -a "$log"
exit "$failed"
