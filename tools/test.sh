#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs every test through ctest. Tests labelled
# `slow` are skipped unless SEAM_SLOW=1; `gpu` tests skip themselves without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
exclude=(-LE slow)
[[ "${SEAM_SLOW:-0}" == 1 ]] && exclude=()
ctest --test-dir "$build" --output-on-failure -j 2 "${exclude[@]}"
