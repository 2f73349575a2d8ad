#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs seam's main job on its embedded default:
# the sweep of every preset over every valid configuration of world 8, with
# the flag values each model supports and batches with an idle DP rank.
# No arguments needed. Exit code: the sweep's (0: every property holds).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
seam="$build/tools/seam"
"$seam" models
echo
exec "$seam" sweep --world 8
