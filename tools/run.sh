#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs seam's main job on its embedded default:
# the model presets, then every valid configuration of the default model at
# world 8. No arguments needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
seam="$build/tools/seam"
"$seam" models
echo
echo "valid configurations of nemotron-3-nano at world 8:"
"$seam" configs --world 8 --model nemotron-3-nano
