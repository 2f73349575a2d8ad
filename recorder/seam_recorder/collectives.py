"""What a collective computes, given every member's call: the hub's arithmetic.

Each member of a group sends its call (the op, its tensors, its arguments);
when all have arrived, `complete` checks that they issued the same collective
(a real NCCL run would hang or corrupt memory otherwise) and returns each
member's result, computed as the collective defines it (sums in float64 and
cast back, gathers in group order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch

# The ops a fake group answers, by the name of the GroupCoordinator method (or
# torch.distributed function) that issued them.
SUMMING = {"all_reduce", "reduce_scatter_tensor", "reduce_scatterv", "reduce_scatter"}
GATHERING = {"all_gather_into_tensor", "all_gather", "all_gatherv"}
OTHER = {"all_to_all_single", "broadcast", "barrier"}
# Point to point: a pair (sender, receiver) completes a send with a recv.
P2P = {"send", "recv"}
KNOWN = SUMMING | GATHERING | OTHER | P2P



class CollectiveArgumentError(RuntimeError):
    """The engine called a collective with arguments torch.distributed
    refuses (an output buffer of another size): the engine's error, raised
    where the engine called."""


@dataclass
class Call:
    """One member's side of a collective."""

    op: str
    tensor: Optional[torch.Tensor]  # the input (None for a barrier)
    sizes: Optional[List[int]] = None  # v-collectives: rows per member
    dim: int = 0  # all_gather's dimension
    src: int = 0  # broadcast's root, inside the group
    out_rows: Optional[int] = None  # the rows of a preallocated output
    extra: Dict[str, Any] = field(default_factory=dict)

    def signature(self) -> str:
        shape = "x".join(str(d) for d in self.tensor.shape) if self.tensor is not None else "-"
        dtype = str(self.tensor.dtype).replace("torch.", "") if self.tensor is not None else "-"
        tail = f" sizes={self.sizes}" if self.sizes is not None else ""
        return f"{self.op}({shape} {dtype}{tail})"


@dataclass
class Packed:
    """A tensor as plain bytes: what crosses the pipe between a rank and the
    hub (torch's own pickling shares storage through a server thread that a
    forked rank cannot serve)."""

    dtype: str
    shape: List[int]
    data: bytes


def pack(t: Optional[torch.Tensor]) -> Optional[Packed]:
    if t is None:
        return None
    c = t.detach().contiguous().cpu()
    return Packed(str(c.dtype).replace("torch.", ""), list(c.shape), c.view(torch.uint8).numpy().tobytes())


def unpack(p: Optional[Packed]) -> Optional[torch.Tensor]:
    if p is None:
        return None
    dtype = getattr(torch, p.dtype)
    flat = torch.frombuffer(bytearray(p.data), dtype=torch.uint8) if p.data else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(p.shape)


class Mismatch(Exception):
    """The members of a group issued collectives that do not pair."""


def _same_shapes(calls: Sequence[Call]) -> bool:
    shapes = {tuple(c.tensor.shape) for c in calls}
    return len(shapes) == 1


def _trailing_equal(calls: Sequence[Call]) -> bool:
    return len({tuple(c.tensor.shape[1:]) for c in calls}) == 1


def _sum(calls: Sequence[Call]) -> torch.Tensor:
    acc = torch.zeros(calls[0].tensor.shape, dtype=torch.float64)
    for c in calls:
        acc += c.tensor.to(torch.float64)
    return acc.to(calls[0].tensor.dtype)


def complete(calls: Sequence[Call]) -> List[Optional[torch.Tensor]]:
    """Every member's result, in group order; raises Mismatch where the
    members' calls do not form one collective."""
    ops = {c.op for c in calls}
    if ops & P2P:
        return _point_to_point(calls)
    if len(ops) != 1:
        raise Mismatch("different collectives: " + ", ".join(c.signature() for c in calls))
    op = calls[0].op
    if op == "barrier":
        return [None] * len(calls)
    dtypes = {c.tensor.dtype for c in calls}
    if len(dtypes) != 1:
        raise Mismatch("different dtypes: " + ", ".join(c.signature() for c in calls))
    n = len(calls)
    if op == "all_reduce":
        if not _same_shapes(calls):
            raise Mismatch("all_reduce of different shapes: " + ", ".join(c.signature() for c in calls))
        total = _sum(calls)
        return [total.clone() for _ in calls]
    if op in ("reduce_scatter_tensor", "reduce_scatter"):
        if not _same_shapes(calls) or calls[0].tensor.shape[0] % n:
            raise Mismatch(
                f"reduce_scatter over {n} members of shapes that do not split evenly: "
                + ", ".join(c.signature() for c in calls)
            )
        total = _sum(calls)
        return list(torch.chunk(total, n, dim=0))
    if op == "reduce_scatterv":
        sizes = calls[0].sizes
        if any(c.sizes != sizes for c in calls) or not _same_shapes(calls):
            raise Mismatch("reduce_scatterv with different sizes or shapes: " + ", ".join(c.signature() for c in calls))
        rows = sizes if sizes is not None else [calls[0].tensor.shape[0] // n] * n
        if sum(rows) != calls[0].tensor.shape[0]:
            raise Mismatch(f"reduce_scatterv sizes {rows} do not sum to {calls[0].tensor.shape[0]} rows")
        total = _sum(calls)
        return list(torch.split(total, rows, dim=0))
    if op == "all_gather_into_tensor":
        if not _same_shapes(calls):
            raise Mismatch("all_gather_into_tensor of different shapes: " + ", ".join(c.signature() for c in calls))
        whole = torch.cat([c.tensor for c in calls], dim=0)
        return [whole.clone() for _ in calls]
    if op == "all_gather":
        dims = {c.dim for c in calls}
        if len(dims) != 1 or not _same_shapes(calls):
            raise Mismatch("all_gather of different shapes or dims: " + ", ".join(c.signature() for c in calls))
        whole = torch.cat([c.tensor for c in calls], dim=calls[0].dim)
        return [whole.clone() for _ in calls]
    if op == "all_gatherv":
        sizes = calls[0].sizes
        if any(c.sizes != sizes for c in calls) or not _trailing_equal(calls):
            raise Mismatch("all_gatherv with different sizes: " + ", ".join(c.signature() for c in calls))
        if sizes is not None and [c.tensor.shape[0] for c in calls] != list(sizes):
            raise Mismatch(
                f"all_gatherv sizes {sizes} but members send "
                + str([c.tensor.shape[0] for c in calls])
            )
        whole = torch.cat([c.tensor for c in calls], dim=0)
        return [whole.clone() for _ in calls]
    if op == "all_to_all_single":
        if not _same_shapes(calls) or calls[0].tensor.shape[0] % n:
            raise Mismatch("all_to_all_single of shapes that do not split evenly: " + ", ".join(c.signature() for c in calls))
        chunks = [torch.chunk(c.tensor, n, dim=0) for c in calls]
        return [torch.cat([chunks[src][dst] for src in range(n)], dim=0) for dst in range(n)]
    if op == "broadcast":
        srcs = {c.src for c in calls}
        if len(srcs) != 1 or not _same_shapes(calls):
            raise Mismatch("broadcast with different roots or shapes: " + ", ".join(c.signature() for c in calls))
        root = calls[0].src
        return [calls[root].tensor.clone() for _ in calls]
    raise Mismatch(f"the recorder does not know the collective {op!r}")


def _point_to_point(calls: Sequence[Call]) -> List[Optional[torch.Tensor]]:
    """A send (the pair's first member) and the recv that takes it (its
    second): the receiver's buffer must hold the sender's elements."""
    if len(calls) != 2 or [c.op for c in calls] != ["send", "recv"]:
        raise Mismatch("point to point calls that do not pair: " + ", ".join(c.signature() for c in calls))
    sent, buffer = calls[0].tensor, calls[1].tensor
    if sent.dtype != buffer.dtype or sent.numel() != buffer.numel():
        raise Mismatch(f"recv of {buffer.numel()} {buffer.dtype} for a send of {sent.numel()} {sent.dtype}: "
                       + ", ".join(c.signature() for c in calls))
    return [None, sent.reshape(buffer.shape).clone()]
