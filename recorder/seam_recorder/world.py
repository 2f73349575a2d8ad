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

import gc
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

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


def _child(rank: int, conn: Connection, steps: Callable[[int, RankComm], Iterator[Any]]) -> None:
    torch.set_num_threads(1)
    # Memory the engine allocates and does not write (a padded buffer's rows)
    # reads as NaN, not as whatever the allocator held: the same on every run.
    torch.use_deterministic_algorithms(True, warn_only=True)
    gc.disable()  # a rank lives for a few forwards: no collector passes over the parent's objects
    comm = RankComm(conn, rank)
    try:
        for result in steps(rank, comm):
            conn.send(("step", result))
            if conn.recv()[0] != "go":
                break
        conn.send(("end",))
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

    def one(rank: int, comm: RankComm) -> Iterator[Any]:
        yield main(rank, comm)

    return run_world_steps(world, one, 1, timeout_s)[0]


class _Hub:
    """The hub's view of one step: every rank's calls, the collectives some
    members have issued, who waits where."""

    def __init__(self, world: int):
        self.result = WorldResult(calls=[[] for _ in range(world)], outcomes=[RankOutcome() for _ in range(world)])
        self.open_calls: Dict[Tuple[Tuple[int, ...], int], _Open] = {}
        self.issued: Dict[Tuple[int, Tuple[int, ...]], int] = {}  # (rank, group) -> calls issued on it
        self.blocked: Dict[int, Tuple[Tuple[int, ...], int]] = {}
        self.start = time.monotonic()


def run_world_steps(world: int, steps: Callable[[int, RankComm], Iterator[Any]], count: int,
                    timeout_s: float) -> List[WorldResult]:
    """Runs the generator steps(rank, comm) in `world` forked processes, one
    WorldResult for each step it yields (a server running one forward after
    another): every rank finishes a step before any starts the next, and
    each step's calls are its own. The first step that does not end with
    every rank ok (a raise, a mismatch, a deadlock, a timeout) is the last:
    its result is the list's last, and the steps after it are not run.
    Each step may take timeout_s."""
    conns: List[Connection] = []
    pids: List[int] = []
    gc.freeze()  # the parent's objects stay out of the ranks' collections (fewer copied pages)
    for rank in range(world):
        parent, child = Pipe()
        pid = os.fork()
        if pid == 0:
            die_with_parent()
            for c in conns:
                c.close()
            parent.close()
            _child(rank, child, steps)
        child.close()
        conns.append(parent)
        pids.append(pid)

    results: List[WorldResult] = []
    hub = _Hub(world)
    alive = set(range(world))
    waiting: Dict[int, Any] = {}  # rank -> its step's result, while it waits for the next step

    def abort(rank: int, why: str) -> None:
        try:
            conns[rank].send(("abort", why))
        except (BrokenPipeError, OSError):
            pass
        hub.blocked.pop(rank, None)

    def finish(rank: int, outcome: RankOutcome) -> None:
        hub.result.outcomes[rank] = outcome
        alive.discard(rank)

    def close_step() -> bool:
        """Ends the step every live rank waits after; True: go on."""
        for r, value in waiting.items():
            hub.result.outcomes[r] = RankOutcome(status="ok", result=value)
        hub.result.seconds = time.monotonic() - hub.start
        results.append(hub.result)
        go = (not hub.result.failure and len(results) < count
              and all(o.status == "ok" for o in hub.result.outcomes))
        for r in list(waiting):
            try:
                conns[r].send(("go",) if go else ("stop",))
            except (BrokenPipeError, OSError):
                pass
            if not go:
                alive.discard(r)
        waiting.clear()
        return go

    while alive:
        remaining = timeout_s - (time.monotonic() - hub.start)
        running = [r for r in alive if r not in waiting]
        ready = wait([conns[r] for r in running], timeout=max(0.0, remaining)) if remaining > 0 and running else []
        if running and not ready:
            calls = hub.result.calls
            stuck = ", ".join(
                f"rank {r} in {calls[r][-1]['op']} on {calls[r][-1]['group']}" if r in hub.blocked and calls[r]
                else f"rank {r} computing" for r in sorted(running)
            )
            hub.result.failure_kind = "timeout"
            hub.result.failure = f"no progress within {timeout_s:g} s: {stuck}"
            for r in sorted(alive):
                os.kill(pids[r], signal.SIGKILL)
                if r not in waiting:
                    hub.result.outcomes[r] = RankOutcome(status="hung")
            for r, value in waiting.items():
                hub.result.outcomes[r] = RankOutcome(status="ok", result=value)
            waiting.clear()
            alive.clear()
            hub.result.seconds = time.monotonic() - hub.start
            results.append(hub.result)
            break
        for conn in ready:
            rank = conns.index(conn)
            try:
                msg = conn.recv()
            except EOFError:
                finish(rank, RankOutcome(status="died", error="the rank's process ended without a word"))
                continue
            kind = msg[0]
            if kind == "step":
                waiting[rank] = msg[1]
            elif kind == "end":
                alive.discard(rank)
            elif kind == "aborted":
                finish(rank, RankOutcome(status="aborted", error=msg[1]))
            elif kind in ("raised", "recorder-error"):
                finish(rank, RankOutcome(status=kind, error=msg[1], where=msg[2], result=msg[3], frames=msg[4]))
            elif kind == "call":
                _complete_call(hub, rank, msg, conns, abort)
        # Every live rank waits on a collective that a finished (or waiting)
        # rank owes, or on one another: nothing can move.
        if alive and all(r in hub.blocked or r in waiting for r in alive) and hub.blocked:
            stuck_ranks = sorted(hub.blocked)
            if not hub.result.failure:
                calls = hub.result.calls
                detail = "; ".join(
                    f"rank {r} waits in {calls[r][-1]['op']} on {calls[r][-1]['group']}"
                    f" (members {calls[r][-1]['ranks']})" for r in stuck_ranks
                )
                hub.result.failure_kind = "deadlock"
                hub.result.failure = f"deadlock: {detail}"
            for r in stuck_ranks:
                abort(r, "deadlock")
        if all(r in waiting for r in alive):  # no rank is still in this step
            if not close_step():
                break
            hub = _Hub(world)
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    for c in conns:
        c.close()
    return results


def _complete_call(hub: _Hub, rank: int, msg: Tuple[Any, ...], conns: List[Connection],
                   abort: Callable[[int, str], None]) -> None:
    """Logs a rank's call and, once every member of its group has issued it,
    answers each member with its result (or aborts them on a mismatch)."""
    _, group, name, call, packed, record = msg
    result = hub.result
    call.tensor = collectives.unpack(packed)
    index = hub.issued.get((rank, group), 0)
    hub.issued[(rank, group)] = index + 1
    record = dict(record, seq=len(result.calls[rank]), group=name, ranks=list(group), group_seq=index)
    result.calls[rank].append(record)
    key = (group, index)
    entry = hub.open_calls.setdefault(key, _Open())
    entry.calls[rank] = call
    hub.blocked[rank] = key
    if len(entry.calls) < len(group):
        return
    del hub.open_calls[key]
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
        return
    for r, out in zip(group, outs):
        hub.blocked.pop(r, None)
        conns[r].send(("result", collectives.pack(out)))
