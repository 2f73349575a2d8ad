"""The MTP step: the engine's own draft model (the class its draft
configuration names under --speculative-algorithm NEXTN), built on the
target's ranks and groups and run for one forward after the target's.

What the recorder gives the draft is what the EAGLE worker gives it
(speculative/eagle_worker_v2.py): after a prefill, the draft extend over
the same tokens with the target's hidden states (`_draft_extend_for_prefill`:
EXTEND, an EagleDraftExtendInput); in decode, the first draft step with
top-k 1 (`draft_forward`: DECODE, one row a request, an EagleDraftInput);
an idle DP shard runs the draft's IDLE forward (`_draft_forward_idle`). The
engine's batch preparation then pads it as a draft worker's
(`prepare_mlp_sync_batch` with is_draft_worker). The target itself runs the
case's batch as without speculation (not TARGET_VERIFY).
"""

from __future__ import annotations

import importlib
from typing import Any, List

import torch

from .case import Case


def build(prepared: Any) -> Any:
    """The draft class, as the engine's draft worker builds it: on the draft
    ModelConfig (`ModelConfig.from_server_args(..., is_draft_model=True)`)."""
    from sglang.srt.layers.moe.utils import (
        draft_model_build_scope,
        speculative_moe_a2a_backend_context,
        speculative_moe_backend_context,
    )
    from sglang.srt.speculative.spec_utils import draft_pp_context

    module, cls = prepared.arch.draft
    model_class = getattr(importlib.import_module(f"sglang.srt.models.{module}"), cls)
    # The scopes the EAGLE worker builds its draft in (eagle_worker_v2.py
    # EAGLEWorkerV2.__init__): a pipeline group of one, the speculative MoE
    # backends, the draft build scope.
    with draft_pp_context(), speculative_moe_backend_context(), speculative_moe_a2a_backend_context(), \
            draft_model_build_scope():
        model = model_class(config=prepared.draft_config.hf_config, quant_config=None)
    with torch.no_grad():
        for _name, param in sorted(model.named_parameters()):
            param.normal_(0.0, 0.05)
    return model


def decoder_layers(model: Any) -> List[Any]:
    """The decoder layers of a target or draft model, in forward order: a
    ModuleList (`model.layers`), Nemotron-H's MTP ModuleDict keyed "0", "1",
    ..., or DeepSeek NextN's one `model.decoder`."""
    inner = model.model
    if hasattr(inner, "decoder"):
        return [inner.decoder]
    layers = inner.layers
    if isinstance(layers, torch.nn.ModuleDict):
        return [layers[k] for k in sorted(layers.keys(), key=int)]
    return list(layers)


def attach_spec_input(case: Case, batch: Any, target_out: torch.Tensor, real_rows: int) -> None:
    """The spec input the EAGLE worker hands the draft: the target's hidden
    states of this shard's real rows (its DP padding left off)."""
    from sglang.srt.speculative.eagle_info import EagleDraftExtendInput, EagleDraftInput

    hidden = target_out[:real_rows].contiguous()
    bs = int(batch.batch_size)
    if case.mode == "extend":
        batch.spec_info = EagleDraftExtendInput(hidden_states=hidden, num_tokens_per_req=1,
                                                num_tokens_for_logprob_per_req=1)
    else:
        batch.spec_info = EagleDraftInput(
            hidden_states=hidden,
            topk_p=torch.ones((bs, 1), dtype=torch.float32),
            topk_index=torch.zeros((bs, 1), dtype=torch.int64),
            num_tokens_per_req=1,
            num_tokens_for_logprob_per_req=1,
        )


def forward_scope() -> Any:
    """The scopes the EAGLE worker runs its draft's forwards in
    (eagle_worker_v2.py forward_batch_generation): under DP attention the
    draft runner's TP group patched in (draft_tp_context; for NEXTN/EAGLE the
    draft is built on the target's TP group), and the speculative MoE
    backends."""
    from contextlib import ExitStack

    from sglang.srt.distributed import get_tp_group
    from sglang.srt.layers.moe.utils import speculative_moe_a2a_backend_context, speculative_moe_backend_context
    from sglang.srt.runtime_context import get_parallel
    from sglang.srt.speculative.spec_utils import draft_tp_context

    stack = ExitStack()
    if get_parallel().enable_dp_attention:
        stack.enter_context(draft_tp_context(get_tp_group()))
    stack.enter_context(speculative_moe_backend_context())
    stack.enter_context(speculative_moe_a2a_backend_context())
    return stack
