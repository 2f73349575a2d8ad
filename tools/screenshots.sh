#!/usr/bin/env bash
# Draws what a reviewer sees, with headless Chromium (installed via apt if
# missing), into docs/results/screenshots/ (or the folder given): the HTML
# report of a world 8 sweep with two graphs embedded, a 52-stage boundary
# graph (nemotron-h-8b tp 8), a diff graph with aux captures (nemotron-3-nano
# tp 2 unfused, legacy against declared, captures before stages 1, 26, 49)
# and DeepSeek-V3 at tp 8 dp 8 (124 stages, folded). Also prints the sizes
# of the sweep's JUnit and Markdown report. Uses build/tools/seam as built.
#   tools/screenshots.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/docs/results/screenshots}"
seam="$root/build/tools/seam"
[[ -x "$seam" ]] || { echo "screenshots: $seam not built (tools/setup.sh first)" >&2; exit 2; }
command -v chromium >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$seam" graph --model nemotron-h-8b --tp 8 -o "$work/graph-52-stages.svg"
"$seam" graph --model nemotron-3-nano --tp 2 --fusion off --capture 1,26,49 \
  --policy legacy --against declared -o "$work/graph-diff-capture.svg"
"$seam" graph --model deepseek-v3 --tp 8 --dp 8 -o "$work/graph-deepseek-v3-tp8-dp8.svg"
"$seam" sweep --world 8 --db "$work/w8.db" --junit "$work/w8.xml" >/dev/null || (($? == 1))
"$seam" report --db "$work/w8.db" -o "$work/report.md"
"$seam" report --db "$work/w8.db" -o "$work/report.html" \
  --graph "$work/graph-52-stages.svg" --graph "$work/graph-deepseek-v3-tp8-dp8.svg"
shot() {  # shot FILE WIDTH HEIGHT: a PNG of FILE's first WIDTH x HEIGHT pixels
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="$2,$3" --screenshot="$out/$(basename "${1%.*}").png" "file://$1" 2>/dev/null
}
shot "$work/report.html" 1400 2400
shot "$work/graph-52-stages.svg" 1400 2000
shot "$work/graph-diff-capture.svg" 3000 2200
shot "$work/graph-deepseek-v3-tp8-dp8.svg" 1400 1400
echo "screenshots: $(ls "$out"/*.png | wc -l) PNGs in $out; world 8 JUnit $(stat -c %s "$work/w8.xml") bytes, Markdown report $(stat -c %s "$work/report.md") bytes"
