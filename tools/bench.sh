#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the benchmarks of tests/bench/ (sim_bench,
# then sweep_bench).
# Extra arguments go to Google Benchmark (e.g. --benchmark_filter=Replay).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
"$build/tests/sim_bench" "$@"
exec "$build/tests/sweep_bench" "$@"
