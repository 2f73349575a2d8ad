#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs seam's main job on its embedded default:
# the presets, the boundary graph of nemotron-3-nano at tp=8 (build/*.svg),
# and the sweep of every preset over every valid configuration of world 8,
# with the flag values each model supports and batches with an idle DP rank
# (stored in build/seam.db); then the same space run on the pinned SGLang
# release itself (seam sweep --engine sglang: what the engine really calls,
# against both policies' plans, into the same store), and the HTML report
# (build/seam-report.html). No arguments needed. Exit code: 0 when every
# property holds and the engine bears out every declared plan, else 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
"$root/tools/setup.sh" "$build"
seam="$build/tools/seam"
"$seam" models
echo
# The boundary graph of the default case (for review), the sweep, then the
# report of the store with the graph embedded.
graph="$build/nemotron-3-nano-tp8.svg"
"$seam" graph --model nemotron-3-nano --tp 8 -o "$graph"
status=0
"$seam" sweep --world 8 --db "$build/seam.db" || status=$?
echo
"$seam" sweep --engine sglang --world 8 --db "$build/seam.db" || status=$((status > $? ? status : $?))
"$seam" report --db "$build/seam.db" --graph "$graph" -o "$build/seam-report.html"
echo "graph: $graph"
echo "report: $build/seam-report.html"
exit "$status"
