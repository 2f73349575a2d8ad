"""Where in the engine a call was issued: the innermost frames of the
engine's own files, written file:line:function with the file relative to the
engine's package root."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Dict, List, Optional

_ROOTS: List[str] = []  # directories whose files are the engine's
_SKIP_PARTS = ("sglang/srt/distributed/",)  # the collective API and its wrappers


def set_engine_roots(roots: List[str]) -> None:
    """roots: directories holding the engine's package (site-packages, or a
    tree's python/); only files of its package `sglang/` count."""
    _ROOTS[:] = [os.path.realpath(r) + os.sep for r in roots]
    _RELATIVE.clear()


def _is_engine(rel: str) -> bool:
    return rel.startswith("sglang" + os.sep)


_RELATIVE: Dict[str, Optional[str]] = {}  # a code object's file -> its engine-relative path


def _relative(path: str) -> Optional[str]:
    if path not in _RELATIVE:
        real = os.path.realpath(path)
        _RELATIVE[path] = next((real[len(root):] for root in _ROOTS
                                if real.startswith(root) and _is_engine(real[len(root):])), None)
    return _RELATIVE[path]


def engine_frames(limit: int = 4) -> List[str]:
    """The innermost engine frames of the current stack, skipping the
    collective API (parallel_state.py), innermost first."""
    out: List[str] = []
    frame = sys._getframe(1)
    while frame is not None and len(out) < limit:
        rel = _relative(frame.f_code.co_filename)
        if rel is not None and not rel.startswith(_SKIP_PARTS):
            out.append(f"{rel}:{frame.f_lineno}:{frame.f_code.co_name}")
        frame = frame.f_back
    return out


def raise_site(tb: traceback.StackSummary) -> str:
    """The innermost engine frame of a traceback, or the innermost frame."""
    for entry in reversed(tb):
        rel = _relative(entry.filename)
        if rel is not None:
            return f"{rel}:{entry.lineno}:{entry.name}"
    if tb:
        last = tb[-1]
        return f"{last.filename}:{last.lineno}:{last.name}"
    return ""


def raise_frames(tb: traceback.StackSummary, limit: int = 8) -> List[str]:
    """The engine frames of a traceback, innermost first (file:line:function)."""
    out: List[str] = []
    for entry in reversed(tb):
        rel = _relative(entry.filename)
        if rel is not None:
            out.append(f"{rel}:{entry.lineno}:{entry.name}")
            if len(out) == limit:
                break
    return out
