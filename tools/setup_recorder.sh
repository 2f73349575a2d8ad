#!/usr/bin/env bash
# Installs the recorder's Python environment (recorder/requirements.txt, every
# version pinned, then the engine release it names) in a cache folder outside
# the checkout, keyed by the Python and torch versions, so that a fresh clone
# on the same machine reuses it instead of downloading several GB again.
# $XDG_CACHE_HOME/seam/recorder-venv (~/.cache when unset) links to it; seam
# check --engine runs that link's python (SEAM_PYTHON overrides it).
# Idempotent: pip runs only when requirements.txt changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
reqs="$root/recorder/requirements.txt"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/seam"
python="${SEAM_BASE_PYTHON:-python3}"
pyver="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
if [[ "$pyver" != 3.11 ]]; then
  echo "setup_recorder: the pinned engine's wheels are for Python 3.11; $python is $pyver (set SEAM_BASE_PYTHON)" >&2
  exit 2
fi
torch="$(sed -n 's/^torch==//p' "$reqs")"
engine="$(sed -n 's/^# ENGINE //p' "$reqs")"
venv="$cache/venv-py$pyver-torch$torch"
stamp="$venv/.seam-requirements"
want="$(sha256sum "$reqs" | cut -d' ' -f1)"
mkdir -p "$cache"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup_recorder: making $venv"
  "$python" -m venv "$venv"
fi
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
  echo "setup_recorder: installing $(grep -c '==' "$reqs") pinned packages and $engine (torch alone is several GB)"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$reqs"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$engine"
  "$venv/bin/python" -W ignore -c "import sglang.srt.models.nemotron_h" 2>/dev/null || {
    echo "setup_recorder: the engine does not import after the install" >&2
    exit 1
  }
  echo "$want" >"$stamp"
fi
ln -sfn "$venv" "$cache/recorder-venv"
echo "setup_recorder: recorder environment $venv ($engine)"
