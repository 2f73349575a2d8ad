#!/usr/bin/env bash
# Fails (exit 1) when a tracked C++ or CUDA source differs from what the
# repository's .clang-format makes of it; names each such file.
# Fix: clang-format -i FILE (the clang-format 14 that Debian 12 ships).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning)' <<<"$out" | cut -d: -f1 | sort -u |
    sed 's/^/check_format: not formatted with .clang-format: /' >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
