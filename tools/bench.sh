#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the benchmarks of tests/bench/ (sim_bench,
# sweep_bench, then engine_bench: the world 2 and 8 spaces recorded on SGLang
# itself, minutes on 2 cores).
# Extra arguments go to Google Benchmark (e.g. --benchmark_filter=Replay).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
"$build/tests/sim_bench" "$@"
"$build/tests/sweep_bench" "$@"
exec "$build/tests/engine_bench" "$@"
