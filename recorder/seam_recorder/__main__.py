"""python -m seam_recorder: record one case of an engine on the CPU.

    python -m seam_recorder --case CASE.json --out REC.jsonl [--engine-src PATH] [--timeout S]
    python -m seam_recorder --cases CASES.jsonl --out-dir DIR [...]   (one case a line: DIR/<line>.jsonl)

Exit 0: a recording was written (whatever the engine did: ran, raised,
deadlocked, was refused by its own argument checks); 2: bad input (a case
that does not parse, a path that is not an SGLang tree, an engine that does
not import), one line on stderr; nothing is written then.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Dict, List

from .case import CaseError, parse_case
from .recording import record_case, record_cases, server_key
from .sglang_engine import EngineError
from .world import die_with_parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="seam_recorder", description=__doc__.splitlines()[0])
    parser.add_argument("--case", help="the case, as seam writes it (JSON), or - for stdin")
    parser.add_argument("--out", help="the recording to write (JSON lines)")
    parser.add_argument("--cases", help="many cases, one JSON object a line (the engine imported once)")
    parser.add_argument("--out-dir", help="--cases: the folder of the recordings (a case's \"out\" names its file, else N.jsonl for line N)")
    parser.add_argument("--engine-src", default=None, help="an SGLang checkout to run instead of the installed release")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a case may run (default 120)")
    args = parser.parse_args(argv)
    die_with_parent()
    if args.cases:
        return _many(args)
    if not args.case or not args.out:
        print("seam_recorder: give --case and --out, or --cases and --out-dir", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.case == "-" else open(args.case).read()
    except OSError as e:
        print(f"seam_recorder: cannot read the case {args.case}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        case = parse_case(text)
        lines = record_case(case, args.engine_src, args.timeout)
    except (CaseError, EngineError) as e:
        print(f"seam_recorder: {e}", file=sys.stderr)
        return 2
    _write(args.out, lines)
    return 0


def _write(path: str, lines) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".part") as f:
        f.write("".join(line + "\n" for line in lines))
        partial = f.name
    os.replace(partial, path)


def _many(args) -> int:
    """Every case of a file, recorded as --case would, the cases of one
    server as its forwards in turn: a case that does not parse is bad input
    before anything runs; a finished recording is kept (a rerun skips the
    recordings already there)."""
    if not args.out_dir or not os.path.isdir(args.out_dir):
        print(f"seam_recorder: --out-dir {args.out_dir} is not a folder", file=sys.stderr)
        return 2
    try:
        with open(args.cases) as f:
            texts = [line for line in f.read().splitlines() if line.strip()]
        cases = [parse_case(t) for t in texts]
    except OSError as e:
        print(f"seam_recorder: cannot read the cases {args.cases}: {e.strerror}", file=sys.stderr)
        return 2
    except CaseError as e:
        print(f"seam_recorder: {args.cases}: {e}", file=sys.stderr)
        return 2
    names = [json.loads(t).get("out") or f"{i}.jsonl" for i, t in enumerate(texts)]
    outs = [os.path.join(args.out_dir, os.path.basename(n)) for n in names]
    # The cases one server runs (the same launch, other batches), in the
    # file's order: one world each, its model built once.
    servers: Dict[str, List[int]] = {}
    for index, case in enumerate(cases):
        if not os.path.exists(outs[index]):
            servers.setdefault(server_key(case), []).append(index)
    for indices in servers.values():
        try:
            recordings = record_cases([cases[i] for i in indices], args.engine_src, args.timeout)
        except (CaseError, EngineError) as e:
            print(f"seam_recorder: case {indices[0]}: {e}", file=sys.stderr)
            return 2
        for index, lines in zip(indices, recordings):
            _write(outs[index], lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
