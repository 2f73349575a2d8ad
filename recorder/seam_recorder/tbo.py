"""Two-batch overlap: the scheduler's decision to split the batch and where,
made by the engine's own preparer, handed to the engine's batch preparation,
which splits the batch into two children; the model then runs its own
overlapped operations over them (batch_overlap/).

In a server the decision is taken in the scheduler's DP sync
(managers/scheduler_components/dp_attn.py): each DP rank's
`TboDPAttentionPreparer.prepare_all_gather` on its local batch (None for a
rank with nothing to run), an all-gather of (can run, forward mode) over the
DP ranks, then `compute_output` on the gathered table. That sync is outside
the model and the recorder does not record it (as it does not record the
token counts' sync); every rank computes the same table from the case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import torch

from .case import Case


@dataclass
class _LocalBatch:
    """The ScheduleBatch fields the preparer reads."""

    forward_mode: Any
    extend_num_tokens: int
    extend_lens: Optional[List[int]]
    is_extend_in_batch: bool
    spec_info: Any = None
    size: int = 0

    def batch_size(self) -> int:
        return self.size


def _local_batch(case: Case, tokens: int) -> Optional[_LocalBatch]:
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    if tokens == 0:
        return None
    if case.mode == "extend":
        return _LocalBatch(ForwardMode.EXTEND, tokens, [tokens], True, size=1)
    return _LocalBatch(ForwardMode.DECODE, tokens, None, False, size=tokens)


def split_decision(case: Case, dp_rank: int) -> Tuple[Optional[int], Any]:
    """(tbo_split_seq_index, global_forward_mode) for this DP rank's batch,
    as the scheduler's sync gives them (None, None: the batch is not split)."""
    from sglang.srt.batch_overlap.two_batch_overlap import TboDPAttentionPreparer
    from sglang.srt.utils.common import require_mlp_sync

    if not require_mlp_sync():
        # The scheduler runs the DP sync, and with it the split, only where
        # the MLP needs one (utils/common.py require_mlp_sync): without DP
        # attention or a gathered buffer the batch is never split.
        return None, None
    shards = case.tokens if case.attn_dp > 1 else [sum(case.tokens)]
    table = []
    mine = None
    for index, tokens in enumerate(shards):
        preparer = TboDPAttentionPreparer()
        can_run, mode = preparer.prepare_all_gather(_local_batch(case, tokens))
        table.append([int(can_run), int(mode)])
        if index == dp_rank:
            mine = preparer
    return mine.compute_output(torch.tensor(table, dtype=torch.int64))


def backend(standin: Any) -> Any:
    """The engine's TBO attention dispatcher over the recorder's stand-in
    backends (one for the whole batch, one per child), which the engine's
    batch split asserts and its executor switches between."""
    from sglang.srt.layers.attention.tbo_backend import TboAttnBackend

    def make() -> Any:
        b = standin()
        b.token_to_kv_pool = b.req_to_token_pool = b.kv_index_translator = None
        return b

    return TboAttnBackend.init_new(make)


class _DeviceProperties:
    """An H100 SXM's SM count: what the DeepSeek prefill TBO strategy reads
    (operations_strategy.py _compute_moe_deepseek_blog_prefill) to size the
    overlapped GEMMs; nothing it communicates."""

    multi_processor_count = 132
    name = "NVIDIA H100 80GB HBM3 (stand-in)"


def install_device_properties() -> None:
    """torch.cuda.get_device_properties answers the stand-in where there is
    no CUDA device (the recorder's ranks are forked CPU processes)."""
    original = getattr(torch.cuda.get_device_properties, "_seam_original", torch.cuda.get_device_properties)

    def properties(device: Any = None) -> Any:
        if torch.cuda.is_available():
            return original(device)
        return _DeviceProperties()

    properties._seam_original = original  # type: ignore[attr-defined]
    torch.cuda.get_device_properties = properties


class _DeepEPBufferConstants:
    """deep_ep.Buffer's class-level SM budget (DeepEP's default), which
    DeepEPConfig reads to size the prefill TBO GEMMs even without an
    all-to-all backend; the recorder's environment has no DeepEP."""

    num_sms = 20


def install_deepep_constants() -> None:
    from sglang.srt.layers.moe.token_dispatcher import deepep

    if not deepep.use_deepep and not hasattr(deepep, "Buffer"):
        deepep.Buffer = _DeepEPBufferConstants
