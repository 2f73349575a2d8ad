#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for seam and builds it (Release, 2 jobs).
# Idempotent: apt runs only when a package is missing; cmake rebuilds what changed.
# Usage: tools/setup.sh [--with-fuzz] [--packages-only] [build-dir]   (default: build/)
#   --with-fuzz      also install clang and libFuzzer's runtime (tools/fuzz.sh)
#   --packages-only  install the packages, build nothing
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
fuzz=0
packages_only=0
for arg in "$@"; do
  case "$arg" in
    --with-fuzz) fuzz=1 ;;
    --packages-only) packages_only=1 ;;
    -*) echo "setup: unknown option \"$arg\" (--with-fuzz, --packages-only)" >&2; exit 2 ;;
    *) build="$arg" ;;
  esac
done

packages=(
  cmake g++ make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libcli11-dev nlohmann-json3-dev libsqlite3-dev libeigen3-dev libgraphviz-dev
  sqlite3 clang-format python3 python3-venv libxml2-utils
  libopenmpi-dev openmpi-bin
)
# libFuzzer ships in clang's runtime package (Debian 12: clang 14).
((fuzz)) && packages+=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

((packages_only)) && exit 0

# The recorder's Python environment (the pinned engine; a cached folder).
"$root/tools/setup_recorder.sh"

# SEAM_CMAKE_ARGS: extra configure options (tools/test.sh --sanitize sets them).
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${SEAM_CMAKE_ARGS:-} >/dev/null
if ! cmake --build "$build" -j 2 >"$build/build.log" 2>&1; then
  grep -E "error|Error" "$build/build.log" | head -40 >&2 || true
  echo "setup: build failed; full log in $build/build.log" >&2
  exit 1
fi
grep -E "warning:" "$build/build.log" | head -20 || true
echo "setup: built seam in $build"
