"""A recording stand-in for SGLang's GroupCoordinator.

The engine builds its groups itself (`initialize_model_parallel`, through
`distributed/bootstrap.py` `_init_parallel_groups`); the recorder only puts
this class in the place of `parallel_state.GroupCoordinator`, so each group
the engine asks for is one of these, with the engine's own rank lists. Its
collective methods keep the engine's group-of-one bypass, log the call with
the engine's frame and ask the hub for the result; no process group or
device communicator is created.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Dict, List, Optional

import torch

from . import collectives
from .frames import engine_frames

# Set in each rank's process before the engine builds its groups.
_RANK: List[int] = [0]
_COMM: List[Any] = [None]
# What the recorder knows about where the engine is (layer, module), filled
# by forward hooks.
CONTEXT: Dict[str, Any] = {"layer": None, "module": None, "kernel": None, "draft": False, "pipeline": None}
_BY_HANDLE: Dict[int, "Any"] = {}


def bind_rank(rank: int, comm: Any) -> None:
    _RANK[0] = rank
    _COMM[0] = comm


def shape_of(t: Optional[torch.Tensor]) -> List[int]:
    return [] if t is None else [int(d) for d in t.shape]


def issue(group_ranks: List[int], name: str, call: collectives.Call, out: Optional[torch.Tensor] = None):
    """Sends one call to the hub and returns this member's result."""
    record = {
        "op": call.op,
        "in_shape": shape_of(call.tensor),
        "out_shape": shape_of(out) if out is not None else None,
        "dtype": str(call.tensor.dtype).replace("torch.", "") if call.tensor is not None else None,
        "sizes": call.sizes,
        "frames": engine_frames(),
        "layer": CONTEXT["layer"],
        "module": CONTEXT["module"],
    }
    if CONTEXT["pipeline"]:
        # Issued by the stage transfer the recorder drives as the scheduler's
        # pipeline loop does (pp.py), through the engine's own methods.
        record["pipeline"] = CONTEXT["pipeline"]
    if CONTEXT["draft"]:
        record["draft"] = True  # issued by the MTP step's draft model
    if CONTEXT["kernel"]:
        record["kernel"] = CONTEXT["kernel"]  # a fused kernel's collective (stood in for)
    return _COMM[0].collective(tuple(group_ranks), name, call, record)


class DeviceGroupHandle:
    """What the engine passes to torch.distributed as `group=`."""

    def __init__(self, ranks: List[int], name: str):
        self.ranks = ranks
        self.name = name
        _BY_HANDLE[id(self)] = self

    def size(self) -> int:
        return len(self.ranks)

    def rank(self) -> int:
        return self.ranks.index(_RANK[0])


def make_group_class(base: type) -> type:
    """A subclass of the engine's GroupCoordinator (isinstance holds) whose
    constructor takes the engine's arguments and whose collectives record."""

    class RecordingGroup(base):  # type: ignore[misc, valid-type]
        def __init__(self, group_ranks, local_rank, torch_distributed_backend, *args, group_name=None,
                     rank_offset: int = 0, **kwargs):
            from sglang.srt.distributed import parallel_state as ps

            self.unique_name = ps._get_unique_name(group_name or "anonymous")
            ps._register_group(self)
            self.rank = _RANK[0]
            self.local_rank = local_rank
            for ranks in group_ranks:
                ranks = [r + rank_offset for r in ranks]
                if self.rank in ranks:
                    self.ranks = ranks
                    self.world_size = len(ranks)
                    self.rank_in_group = ranks.index(self.rank)
            assert hasattr(self, "ranks"), f"rank {self.rank} is in no group of {group_name}"
            self.device_group = DeviceGroupHandle(self.ranks, self.unique_name)
            self.cpu_group = self.device_group
            self.device = torch.device("cpu")
            self.device_module = torch.get_device_module(self.device)
            self.local_size = 0
            self._fi_workspace_hint = None
            self.use_pynccl = False
            self.use_pymscclpp = False
            self.use_custom_allreduce = False
            self.use_torch_symm_mem_all_reduce = False
            self.use_message_queue_broadcaster = False
            self.pynccl_comm = None
            self.pymscclpp_comm = None
            self.ca_comm = None
            self.qr_comm = None
            self.torch_symm_mem_comm = None
            self.hpu_communicator = None
            self.xpu_communicator = None
            self.npu_communicator = None
            self.mq_broadcaster = None
            self.active_ranks = torch.ones(len(self.ranks), dtype=torch.int32)
            self.active_ranks_cpu = self.active_ranks
            self.is_symmetric_memory_enabled = lambda: False
            self.use_symmetric_memory = lambda *a, **k: nullcontext()
            self.is_allocation_symmetric = lambda: False

        def _issue(self, call: collectives.Call, out=None):
            return issue(self.ranks, self.unique_name, call, out)

        @staticmethod
        def _into(output: torch.Tensor, result: torch.Tensor, op: str) -> None:
            """Copies a collective's result into the engine's output buffer;
            a buffer of another size is the engine's error (torch.distributed
            refuses it before NCCL runs), raised at the engine's call."""
            if output.numel() != result.numel():
                raise collectives.CollectiveArgumentError(
                    f"{op}: the output buffer holds {output.numel()} elements ({list(output.shape)}), "
                    f"the collective gives {result.numel()} ({list(result.shape)}); torch.distributed refuses it")
            output.copy_(result.reshape(output.shape))

        # The collectives, each with the engine's bypass for a group of one.
        def all_reduce(self, input_: torch.Tensor) -> torch.Tensor:
            if self.world_size == 1:
                return input_
            result = self._issue(collectives.Call("all_reduce", input_))
            input_.copy_(result)
            return input_

        def reduce_scatter_tensor(self, output: torch.Tensor, input: torch.Tensor):
            if self.world_size == 1:
                output.copy_(input)
                return output
            self._into(output, self._issue(collectives.Call("reduce_scatter_tensor", input), output),
                       "reduce_scatter_tensor")
            return output

        def reduce_scatter(self, output: torch.Tensor, input_list: List[torch.Tensor]):
            whole = torch.cat(input_list, dim=0)
            output.copy_(self._issue(collectives.Call("reduce_scatter", whole), output))
            return output

        def reduce_scatterv(self, input_: torch.Tensor, output: Optional[torch.Tensor] = None,
                            sizes: Optional[List[int]] = None) -> torch.Tensor:
            result = self._issue(collectives.Call("reduce_scatterv", input_, sizes=list(sizes) if sizes else None), output)
            if output is None:
                return result
            output.copy_(result)
            return output

        def all_gather_into_tensor(self, output: torch.Tensor, input: torch.Tensor):
            if self.world_size == 1:
                output.copy_(input)
                return
            self._into(output, self._issue(collectives.Call("all_gather_into_tensor", input), output),
                       "all_gather_into_tensor")

        def all_gather(self, input_: torch.Tensor, dim: int = -1, output_tensor_list=None):
            if self.world_size == 1:
                if output_tensor_list is not None:
                    output_tensor_list[0].copy_(input_)
                    return None
                return input_
            if dim < 0:
                dim += input_.dim()
            whole = self._issue(collectives.Call("all_gather", input_, dim=dim))
            if output_tensor_list is not None:
                for i, part in enumerate(torch.chunk(whole, self.world_size, dim=dim)):
                    output_tensor_list[i].copy_(part)
                return None
            return whole

        def all_gatherv(self, input_, sizes: Optional[List[int]] = None, output: Optional[torch.Tensor] = None):
            single = isinstance(input_, torch.Tensor)
            inputs = [input_] if single else list(input_)
            outs = []
            for inp in inputs:
                res = self._issue(collectives.Call("all_gatherv", inp, sizes=list(sizes) if sizes else None), output)
                if output is not None:
                    output.copy_(res)
                    res = output
                outs.append(res)
            return outs

        def all_to_all_single(self, output: torch.Tensor, input: torch.Tensor):
            if self.world_size == 1:
                output.copy_(input)
                return
            output.copy_(self._issue(collectives.Call("all_to_all_single", input), output))

        def broadcast(self, input_: torch.Tensor, src: int = 0):
            if self.world_size == 1:
                return input_
            input_.copy_(self._issue(collectives.Call("broadcast", input_, src=src)))
            return input_

        def barrier(self):
            if self.world_size == 1:
                return
            self._issue(collectives.Call("barrier", None))

        def destroy(self):
            pass

    return RecordingGroup


def _handle_ranks(group) -> List[int]:
    if group is None or group is getattr(torch.distributed.group, "WORLD", object()):
        return list(range(_WORLD[0]))
    handle = _BY_HANDLE.get(id(group))
    if handle is None:
        raise RuntimeError(f"torch.distributed call on a group the recorder does not know: {group!r}")
    return handle.ranks


_WORLD: List[int] = [1]


def patch_torch_distributed(world: int) -> None:
    """torch.distributed as a rank of this world sees it, its collectives
    recorded like the groups' (the engine calls some directly)."""
    import torch.distributed as dist

    _WORLD[0] = world
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda group=None: len(_handle_ranks(group))
    dist.get_rank = lambda group=None: _RANK[0] if group is None else _handle_ranks(group).index(_RANK[0])
    dist.get_backend = lambda group=None: "gloo"
    dist.new_group = lambda ranks=None, *a, **k: DeviceGroupHandle(list(ranks or range(world)), "new_group")
    dist.barrier = lambda group=None, *a, **k: None

    def all_reduce(tensor, op=None, group=None, async_op=False):
        ranks = _handle_ranks(group)
        if len(ranks) > 1:
            tensor.copy_(issue(ranks, _name(group), collectives.Call("all_reduce", tensor)))

    def all_gather_into_tensor(output, input, group=None, async_op=False):
        ranks = _handle_ranks(group)
        if len(ranks) > 1:
            output.copy_(issue(ranks, _name(group), collectives.Call("all_gather_into_tensor", input), output))
        else:
            output.copy_(input)

    def reduce_scatter_tensor(output, input, op=None, group=None, async_op=False):
        ranks = _handle_ranks(group)
        if len(ranks) > 1:
            output.copy_(issue(ranks, _name(group), collectives.Call("reduce_scatter_tensor", input), output))
        else:
            output.copy_(input)

    dist.all_reduce = all_reduce
    dist.all_gather_into_tensor = all_gather_into_tensor
    dist.reduce_scatter_tensor = reduce_scatter_tensor

    # Point to point between two global ranks (the engine's send_tensor_dict
    # and recv_tensor_dict, send_object and recv_object, call these): the
    # pair (sender, receiver) is the hub's group; a send waits for its recv.
    def send(tensor, dst, group=None, tag=0):
        issue([_RANK[0], int(dst)], f"p2p:{_name(group)}", collectives.Call("send", tensor))
        return _Done()

    def recv(tensor, src=None, group=None, tag=0):
        tensor.copy_(issue([int(src), _RANK[0]], f"p2p:{_name(group)}", collectives.Call("recv", tensor)))
        return _Done()

    dist.send = send
    dist.isend = send
    dist.recv = recv
    dist.irecv = recv


class _Done:
    """The work handle of a point-to-point call the hub has completed."""

    def wait(self, *args, **kwargs) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _name(group) -> str:
    handle = _BY_HANDLE.get(id(group))
    return handle.name if handle is not None else "world"
