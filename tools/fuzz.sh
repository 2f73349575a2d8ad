#!/usr/bin/env bash
# Builds a libFuzzer target of tests/fuzz/ (clang, ASan + UBSan, assertions
# on) in build-fuzz/ and runs it on its seed corpus for SECONDS.
#   tools/fuzz.sh TARGET SECONDS     one of: pattern case_options trace gpu_json store
#   tools/fuzz.sh all SECONDS        every target, one after the other
# Exit 0 when no target crashed, leaked, timed out (an input over
# SEAM_FUZZ_TIMEOUT seconds, default 10) or ran out of memory; 1 otherwise,
# with the reproducer saved under build-fuzz/artifacts/TARGET/ (rerun it:
# build-fuzz/tests/fuzz/fuzz_TARGET FILE). New inputs the fuzzer finds go to
# build-fuzz/corpus/TARGET/, never into the checked-in seeds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SEAM_FUZZ_BUILD:-$root/build-fuzz}"
targets=(pattern case_options trace gpu_json store recording)

usage() { echo "usage: tools/fuzz.sh TARGET|all SECONDS   (targets: ${targets[*]})" >&2; exit 2; }
(($# == 2)) || usage
[[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "tools/fuzz.sh: SECONDS \"$2\" is not a positive integer" >&2; exit 2; }
seconds="$2"
if [[ "$1" == all ]]; then
  run=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $1 "* ]]; then
  run=("$1")
else
  echo "tools/fuzz.sh: unknown target \"$1\" (targets: ${targets[*]}, all)" >&2
  exit 2
fi

"$root/tools/setup.sh" --with-fuzz --packages-only
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # Debug with -O1: optimised enough to fuzz fast, without NDEBUG so that
  # assertions stay on.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DSEAM_FUZZ=ON -DSEAM_BUILD_TESTS=OFF \
    -DSEAM_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" >/dev/null
fi
build_targets=()
for t in "${run[@]}"; do build_targets+=("fuzz_$t"); done
if ! cmake --build "$build" -j 2 --target "${build_targets[@]}" >"$build/build.log" 2>&1; then
  grep -E "error|Error" "$build/build.log" | head -40 >&2 || true
  echo "tools/fuzz.sh: build failed; full log in $build/build.log" >&2
  exit 1
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
for t in "${run[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  work="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  log="$build/logs/$t.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  dict=()
  [[ -f "$root/tests/fuzz/$t.dict" ]] && dict=("-dict=$root/tests/fuzz/$t.dict")
  # close_fd_mask=1: the targets' stdout is noise; libFuzzer and the
  # sanitizers still report on stderr.
  set +e
  "$build/tests/fuzz/fuzz_$t" "$work" "$seeds" "${dict[@]}" -max_total_time="$seconds" \
    -timeout="${SEAM_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=1 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  if ((rc == 0)); then
    echo "fuzz $t: ${runs:-?} inputs in ${secs:-$seconds} s, no crash, leak or timeout"
  else
    failed=1
    echo "fuzz $t: FAILED (exit $rc) after ${runs:-?} inputs; log $log, reproducer in $artifacts/" >&2
    grep -E "^(==[0-9]+==ERROR|SUMMARY|fuzz contract broken|.*runtime error)" "$log" | head -5 >&2 || true
  fi
done
exit "$failed"
