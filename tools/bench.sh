#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the benchmarks of tests/bench/.
# Extra arguments go to Google Benchmark (e.g. --benchmark_filter=Replay).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
exec "$build/tests/sim_bench" "$@"
