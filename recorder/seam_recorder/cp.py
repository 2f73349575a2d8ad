"""Attention context parallelism in an extend: the engine's own split of the
sequence over the CP ranks and its gathers, as its eager runner drives them.

With `--attn-cp-size N --enable-prefill-cp --cp-strategy zigzag`, SGLang
0.5.20's eager runner (model_executor/runner/eager_runner.py
`_execute_extend` and `_execute_extend_cp`) builds the CP metadata
(`prepare_cp_forward`: the strategy's zigzag blocks, each rank's rows padded
to 2 x cp by `pad_logical_token_to_physical`), embeds the whole sequence,
shards the embeddings, positions and input ids (`cp_shard_model_inputs`),
runs the model body on this rank's rows and gathers the hidden states over
the CP group (`cp_gather_after_forward`) before the logits. The recorder
calls those same functions in that order and stops before the logits, as it
does without CP. In a decode, or a sequence too short for the strategy
(`can_apply`), the runner does not shard and the model runs as usual.
"""

from __future__ import annotations

from typing import Any

import torch


def forward(model: Any, batch: Any, **kwargs: Any) -> torch.Tensor:
    """The model body's forward for this rank, through the CP split when the
    engine's strategy applies to the batch (kwargs: the body's own, e.g.
    pp_proxy_tensors)."""
    from sglang.srt.layers.cp.utils import (
        cp_gather_after_forward,
        cp_shard_model_inputs,
        is_cp_active,
        prepare_cp_forward,
    )

    if not is_cp_active(batch):
        return model.model(batch.input_ids, batch.positions, batch, **kwargs)
    prepare_cp_forward(batch)
    embeds = model.get_input_embeddings()(batch.input_ids)
    with cp_shard_model_inputs(embeds, batch.positions, batch, batch.input_ids) as (local, positions, input_ids):
        hidden = model.model(input_ids, positions, batch, input_embeds=local, **kwargs)
    if isinstance(hidden, tuple):
        hidden = hidden[0]
    return cp_gather_after_forward(hidden, batch, None)


def gather_kv(k: torch.Tensor, v: torch.Tensor, forward_batch: Any) -> None:
    """What the FlashAttention backend does with an attention layer's K and V
    under an active CP extend before its kernel (flashattention_backend.py
    forward_extend -> the strategy's `materialize_full_kv`): all-gather them
    over the CP group in the global token order. The write of the gathered
    rows into the KV pool is left out (the recorder keeps no cache)."""
    from sglang.srt.layers.cp.base import get_cp_strategy
    from sglang.srt.layers.cp.utils import is_cp_active

    if k is None or not is_cp_active(forward_batch):
        return
    strategy = get_cp_strategy()
    assert strategy is not None
    strategy.gather_kv_cache(torch.cat([k, v], dim=-1).contiguous(), forward_batch)
