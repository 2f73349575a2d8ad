"""Every rank of a world as a forked process, over a hub that completes their
collectives.

The parent imports the engine once; each case forks one process per rank, so
each rank has the engine's process-wide state (parallel groups, DP buffers,
the published server arguments) as the engine itself would have it. A rank's
collective is a message to the hub (this process); when every member of the
group has sent its call, the hub checks that they pair, computes each
member's result (collectives.py) and answers. The hub logs every call in
arrival order per rank, so a rank that hangs or dies keeps what it issued.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import collectives
from .frames import raise_frames, raise_site


def die_with_parent() -> None:
    """Asks Linux to kill this process when its parent goes (prctl
    PR_SET_PDEATHSIG), so that a killed seam or recorder leaves no process
    behind; elsewhere, nothing."""
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent went before the request
        os._exit(1)


class WorldAborted(BaseException):
    """Raised in a rank whose collective can never complete (the hub said so)."""


@dataclass
class RankOutcome:
    status: str = "running"  # ok | raised | recorder-error | aborted | hung | died
    error: str = ""  # "AssertionError: ..." for raised
    where: str = ""  # the engine's file:line:function that raised
    frames: List[str] = field(default_factory=list)  # the engine's frames of the raise, innermost first
    result: Any = None  # what the rank's function returned


@dataclass
class WorldResult:
    calls: List[List[Dict[str, Any]]]
    outcomes: List[RankOutcome]
    failure: str = ""  # a collective mismatch, a deadlock or a timeout, in words
    failure_kind: str = ""  # mismatch | deadlock | timeout
    seconds: float = 0.0


class RankComm:
    """A rank's line to the hub."""

    def __init__(self, conn: Connection, rank: int):
        self.conn = conn
        self.rank = rank

    def collective(self, group: Tuple[int, ...], name: str, call: collectives.Call, record: Dict[str, Any]):
        sent = collectives.Call(**{**call.__dict__, "tensor": None})
        self.conn.send(("call", group, name, sent, collectives.pack(call.tensor), record))
        kind, payload = self.conn.recv()
        if kind == "abort":
            raise WorldAborted(payload)
        return collectives.unpack(payload)


@dataclass
class _Open:
    """A collective some members of a group have issued."""

    calls: Dict[int, collectives.Call] = field(default_factory=dict)  # by global rank
    signature: str = ""


def _child(rank: int, conn: Connection, main: Callable[[int, RankComm], Any]) -> None:
    torch.set_num_threads(1)
    comm = RankComm(conn, rank)
    try:
        result = main(rank, comm)
        conn.send(("done", result))
    except WorldAborted as e:
        conn.send(("aborted", str(e)))
    except BaseException as e:  # the engine raising is a result, not a crash
        tb = traceback.extract_tb(e.__traceback__)
        # Raised inside the recorder's own code (a stand-in, the groups): a
        # bug of the recorder, never the engine's.
        own = (bool(tb) and not isinstance(e, collectives.CollectiveArgumentError)
               and os.path.dirname(os.path.abspath(tb[-1].filename)) == os.path.dirname(os.path.abspath(__file__)))
        kind = "recorder-error" if own else "raised"
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}:{tb[-1].name}" if own else raise_site(tb)
        conn.send((kind, f"{type(e).__name__}: {e}", where, traceback.format_exc(), [] if own else raise_frames(tb)))
    finally:
        conn.close()
        os._exit(0)


def run_world(world: int, main: Callable[[int, RankComm], Any], timeout_s: float) -> WorldResult:
    """Runs main(rank, comm) in `world` forked processes until each returns,
    raises or is stopped; never hangs past timeout_s."""
    start = time.monotonic()
    conns: List[Connection] = []
    pids: List[int] = []
    for rank in range(world):
        parent, child = Pipe()
        pid = os.fork()
        if pid == 0:
            die_with_parent()
            for c in conns:
                c.close()
            parent.close()
            _child(rank, child, main)
        child.close()
        conns.append(parent)
        pids.append(pid)

    result = WorldResult(calls=[[] for _ in range(world)], outcomes=[RankOutcome() for _ in range(world)])
    open_calls: Dict[Tuple[Tuple[int, ...], int], _Open] = {}
    issued: Dict[Tuple[int, Tuple[int, ...]], int] = {}  # (rank, group) -> calls issued on it
    blocked: Dict[int, Tuple[Tuple[int, ...], int]] = {}
    alive = set(range(world))

    def abort(rank: int, why: str) -> None:
        try:
            conns[rank].send(("abort", why))
        except (BrokenPipeError, OSError):
            pass
        blocked.pop(rank, None)

    def finish(rank: int, outcome: RankOutcome) -> None:
        result.outcomes[rank] = outcome
        alive.discard(rank)

    while alive:
        remaining = timeout_s - (time.monotonic() - start)
        ready = wait([conns[r] for r in alive], timeout=max(0.0, remaining)) if remaining > 0 else []
        if not ready:
            waiting = ", ".join(
                f"rank {r} in {result.calls[r][-1]['op']} on {result.calls[r][-1]['group']}" if r in blocked and result.calls[r]
                else f"rank {r} computing" for r in sorted(alive)
            )
            result.failure_kind = "timeout"
            result.failure = f"no progress within {timeout_s:g} s: {waiting}"
            for r in sorted(alive):
                os.kill(pids[r], signal.SIGKILL)
                result.outcomes[r] = RankOutcome(status="hung")
            alive.clear()
            break
        for conn in ready:
            rank = conns.index(conn)
            try:
                msg = conn.recv()
            except EOFError:
                finish(rank, RankOutcome(status="died", error="the rank's process ended without a word"))
                continue
            kind = msg[0]
            if kind == "done":
                finish(rank, RankOutcome(status="ok", result=msg[1]))
            elif kind == "aborted":
                finish(rank, RankOutcome(status="aborted", error=msg[1]))
            elif kind in ("raised", "recorder-error"):
                finish(rank, RankOutcome(status=kind, error=msg[1], where=msg[2], result=msg[3], frames=msg[4]))
            elif kind == "call":
                _, group, name, call, packed, record = msg
                call.tensor = collectives.unpack(packed)
                index = issued.get((rank, group), 0)
                issued[(rank, group)] = index + 1
                record = dict(record, seq=len(result.calls[rank]), group=name, ranks=list(group), group_seq=index)
                result.calls[rank].append(record)
                key = (group, index)
                entry = open_calls.setdefault(key, _Open())
                entry.calls[rank] = call
                blocked[rank] = key
                if len(entry.calls) < len(group):
                    continue
                del open_calls[key]
                members = [entry.calls[r] for r in group]
                try:
                    outs = collectives.complete(members)
                except collectives.Mismatch as e:
                    if not result.failure:
                        frames = result.calls[rank][-1].get("frames") or ["?"]
                        result.failure_kind = "mismatch"
                        result.failure = f"{name} call #{index} (ranks {list(group)}) at {' < '.join(frames[:3])}: {e}"
                    for r in group:
                        abort(r, f"collective mismatch on {name}")
                    continue
                for r, out in zip(group, outs):
                    blocked.pop(r, None)
                    conns[r].send(("result", collectives.pack(out)))
        # Every live rank waits on a collective that a finished rank owes, or
        # on one another: nothing can move.
        if alive and all(r in blocked for r in alive):
            stuck = sorted(alive)
            if not result.failure:
                detail = "; ".join(
                    f"rank {r} waits in {result.calls[r][-1]['op']} on {result.calls[r][-1]['group']}"
                    f" (members {result.calls[r][-1]['ranks']})" for r in stuck
                )
                result.failure_kind = "deadlock"
                result.failure = f"deadlock: {detail}"
            for r in stuck:
                abort(r, "deadlock")
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    for c in conns:
        c.close()
    result.seconds = time.monotonic() - start
    return result
