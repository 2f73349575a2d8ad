#!/usr/bin/env bash
# Sets up (tools/setup.sh), checks formatting (tools/check_format.sh) and the
# sizes and layering of the sources (tools/check_structure.py), then runs
# every test through ctest. Tests labelled `slow` are skipped unless
# SEAM_SLOW=1; `gpu` tests skip themselves without a GPU.
# Then, on the Release build, every fuzz target for SEAM_FUZZ_SECONDS each
# (default 15; 0 skips them; tools/fuzz.sh, clang, in build-fuzz/) and the
# kill/resume check (tools/kill_resume.sh, --quick unless SEAM_SLOW=1;
# SEAM_KILL_RESUME=0 skips it).
#   tools/test.sh              the Release build in build/
#   tools/test.sh --sanitize   the whole CPU suite under ASan + UBSan, in build-sanitize/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
extra=()
setup_flags=(--with-fuzz)
case "${1:-}" in
  "") ;;
  --sanitize)
    setup_flags=()
    build="$root/build-sanitize"
    extra=(-DSEAM_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$root/tools/lsan_suppressions.txt:print_suppressions=0"
    ;;
  *) echo "tools/test.sh: unknown option \"$1\" (only --sanitize)" >&2; exit 2 ;;
esac
SEAM_CMAKE_ARGS="${extra[*]:-}" "$root/tools/setup.sh" "${setup_flags[@]}" "$build"
"$root/tools/check_format.sh"
python3 "$root/tools/check_structure.py"
exclude=(-LE slow)
[[ "${SEAM_SLOW:-0}" == 1 ]] && exclude=()
ctest --test-dir "$build" --output-on-failure -j 2 "${exclude[@]}"
[[ "${1:-}" == --sanitize ]] && exit 0
fuzz_seconds="${SEAM_FUZZ_SECONDS:-15}"
if [[ "$fuzz_seconds" != 0 ]]; then
  "$root/tools/fuzz.sh" all "$fuzz_seconds"
fi
if [[ "${SEAM_KILL_RESUME:-1}" != 0 ]]; then
  quick=(--quick)
  [[ "${SEAM_SLOW:-0}" == 1 ]] && quick=()
  "$root/tools/kill_resume.sh" "${quick[@]}"
fi
