"""Pipeline stages (pp > 1): each stage's ranks build the engine's model
with only their own layers (the engine's get_pp_indices, given the case's
cuts as SGLANG_PP_LAYER_PARTITION: case.py env), and the hidden states travel between
stages as the scheduler's pipeline loop sends them
(managers/scheduler_pp_mixin.py): the stage before sends its proxy tensors
with the pipeline group's `send_tensor_dict` (typed "proxy", a slice per
attention-TP rank, `all_gather_group` the attention-TP group), the stage
after takes them with `recv_tensor_dict` and all-gathers the slices over
attention TP. Those two methods are the engine's own; the point-to-point
calls under them are answered by the hub (groups.py).
"""

from __future__ import annotations

from typing import Any


def forward(model: Any, batch: Any, run_body: Any) -> Any:
    """One stage's forward: the proxies from the stage before (not on the
    first stage), the model body (run_body(proxies)), the proxies to the
    stage after (not on the last). Returns the body's output."""
    from sglang.srt.distributed import get_pp_group
    from sglang.srt.model_executor.forward_batch_info import PPProxyTensors
    from sglang.srt.runtime_context import get_parallel

    from . import groups

    pp_group = get_pp_group()
    attn_tp_group = get_parallel().attn_tp_group
    proxies = None
    if not pp_group.is_first_rank:
        groups.CONTEXT["pipeline"] = "scheduler_pp_mixin.py:_pp_recv_proxy_tensors"
        try:
            received = pp_group.recv_tensor_dict(all_gather_group=attn_tp_group)
        finally:
            groups.CONTEXT["pipeline"] = None
        received.pop("__msg_type__", None)
        proxies = PPProxyTensors(received)
    out = run_body(proxies)
    if not pp_group.is_last_rank:
        tensors = dict(out.tensors)
        tensors["__msg_type__"] = "proxy"
        groups.CONTEXT["pipeline"] = "scheduler_pp_mixin.py:_pp_send_dict_to_next_stage"
        try:
            pp_group.send_tensor_dict(tensor_dict=tensors, all_gather_group=attn_tp_group, async_send=True)
        finally:
            groups.CONTEXT["pipeline"] = None
    return out
