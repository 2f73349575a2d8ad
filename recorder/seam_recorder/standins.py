"""CPU stand-ins for the GPU kernels SGLang's layers call, of the same shapes.

Each stands in for a kernel only: the engine's modules around it (the
projections, row-parallel linears, norms, communicators, decoder layers) run
as the engine wrote them. What each replaces:
- the Mamba-2 scan and causal convolution: MambaMixer2.forward's steps run
  on the mixer's own in_proj, norm and out_proj, with the scan's output taken
  as the convolution's x part (token-local, no state);
- the attention kernel: each token's output is its own query (no KV cache);
  under an active CP extend the FlashAttention backend's K/V all-gather over
  the CP group runs first, through the engine's strategy (cp.py);
- the fused MoE kernel: each routed token's top-k experts as plain SiLU MLPs
  of the layer's own local expert weights.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from . import cp


def mamba2_mixer(mixer: Any, hidden_states: torch.Tensor, output: Optional[torch.Tensor]) -> torch.Tensor:
    """MambaMixer2.forward with the scan and convolution stood in for."""
    projected, _ = mixer.in_proj(hidden_states)
    tp = mixer.tp_size
    gate_width, dt_width = mixer.intermediate_size // tp, mixer.num_heads // tp
    gate, xbc, _dt = torch.split(
        projected, [gate_width, projected.shape[-1] - gate_width - dt_width, dt_width], dim=-1
    )
    x = xbc[:, : mixer.intermediate_size // tp].contiguous()
    y = mixer.norm(x, gate)
    out, _ = mixer.out_proj(y)
    if output is not None:
        output[: out.shape[0]].copy_(out)
    return out


def make_backends(hybrid_cls: type, mamba_cls: type) -> Any:
    """A HybridLinearAttnBackend (isinstance holds) whose linear backend is a
    Mamba2AttnBackend stand-in and whose full attention is token-local."""

    class MambaStandin(mamba_cls):  # type: ignore[misc, valid-type]
        def __init__(self):  # no pools, no metadata: nothing is cached
            pass

        def forward(self, mixer, hidden_states, output, layer_id, forward_batch, **kwargs):
            return mamba2_mixer(mixer, hidden_states, output)

    class FullAttentionStandin:
        def forward(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            # Under an active CP extend the backend gathers K and V over the
            # CP group first (cp.py gather_kv); the kernel itself is stood in for.
            cp.gather_kv(k, v, forward_batch)
            # The kernel's output: one row a query token, its heads' values.
            width = layer.tp_q_head_num * layer.v_head_dim
            return q.reshape(q.shape[0], -1)[:, :width].clone() if q.shape[0] else q.new_zeros(0, width)

        def get_cuda_graph_seq_len_fill_value(self) -> int:
            return 1

        get_cpu_graph_seq_len_fill_value = get_cuda_graph_seq_len_fill_value

    class HybridStandin(hybrid_cls):  # type: ignore[misc, valid-type]
        def __init__(self):
            self.linear_attn_backend = MambaStandin()
            self.full_attn_backend = FullAttentionStandin()

        def forward(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            return self.full_attn_backend.forward(q, k, v, layer, forward_batch)

        def forward_decode(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            return self.forward(q, k, v, layer, forward_batch)

        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            return self.forward(q, k, v, layer, forward_batch)

    return HybridStandin()


def install_cpu_ops() -> None:
    """torch ops whose CPU build lacks an overload the engine calls (CUDA
    kernels), answered with the same arithmetic on the CPU."""
    mm = torch.mm
    if getattr(mm, "_seam_standin", False):
        return

    def mm_with_out_dtype(a, b, *args, out_dtype=None, **kwargs):
        if out_dtype is None:
            return mm(a, b, *args, **kwargs)
        return mm(a.to(out_dtype), b.to(out_dtype), *args, **kwargs)

    mm_with_out_dtype._seam_standin = True  # type: ignore[attr-defined]
    torch.mm = mm_with_out_dtype


def moe_experts(layer: Any, x: torch.Tensor, topk_output: Any, moe_runner_config: Any) -> torch.Tensor:
    """The fused MoE kernel: each token's routed experts that this rank holds
    (ids outside its local range, as EP marks them, are skipped), weighted
    and summed; gated activations split w13 in two."""
    topk_weights, topk_ids = topk_output[0], topk_output[1]
    act = moe_runner_config.activation
    gated = getattr(moe_runner_config, "is_gated", True) and act != "relu2"
    out = torch.zeros(x.shape[0], layer.w2_weight.shape[1], dtype=x.dtype)
    local = layer.w13_weight.shape[0]
    # The routed experts this rank holds, in ascending order (the order of the
    # sum does not depend on which experts no token chose).
    for e in (int(i) for i in torch.unique(topk_ids).tolist() if 0 <= i < local):
        rows, slots = (topk_ids == e).nonzero(as_tuple=True)
        h = torch.nn.functional.linear(x[rows], layer.w13_weight[e])
        if gated:
            g, u = h.chunk(2, dim=-1)
            h = torch.nn.functional.silu(g) * u
        elif act == "relu2":
            h = torch.relu(h) ** 2
        else:
            h = torch.nn.functional.silu(h)
        y = torch.nn.functional.linear(h, layer.w2_weight[e])
        out.index_add_(0, rows, y * topk_weights[rows, slots].unsqueeze(-1).to(y.dtype))
    return out


def install_moe(fused_moe_native_module: Any) -> None:
    fused_moe_native_module.moe_forward_native = moe_experts


def fused_allreduce_rmsnorm(input_tensor, residual, weight, eps=1e-6, max_token_num=2048,
                            use_oneshot=None, trigger_completion_at_end=False, fp32_acc=True,
                            use_attn_tp_group=True):
    """FlashInfer's fused all-reduce + residual add + RMSNorm kernel
    (flashinfer_comm_fusion.flashinfer_allreduce_residual_rmsnorm): its
    group and its checks as the engine's wrapper has them (the attention-TP
    group, else MoE-EP when it is split, else MoE-TP; nothing for one rank;
    at most max_token_num rows), the arithmetic as one all-reduce, an add and
    an RMSNorm."""
    from sglang.srt.distributed import parallel_state as ps
    from sglang.srt.runtime_context import get_parallel

    p = get_parallel()
    if use_attn_tp_group:
        group = ps.get_attn_tp_group()
    else:
        group = ps.get_moe_ep_group() if p.moe_ep_size > 1 else ps.get_moe_tp_group()
    if group.world_size <= 1:
        return None, None
    assert input_tensor.shape[0] <= max_token_num
    from . import groups

    groups.CONTEXT["kernel"] = "flashinfer_allreduce_residual_rmsnorm"
    try:
        summed = group.all_reduce(input_tensor.clone())
    finally:
        groups.CONTEXT["kernel"] = None
    residual_out = summed + residual
    variance = residual_out.float().pow(2).mean(-1, keepdim=True)
    norm_out = (residual_out.float() * torch.rsqrt(variance + eps)).to(residual_out.dtype) * weight
    return norm_out, residual_out


def install_fused_kernel(communicator_module: Any, fusion_module: Any) -> None:
    """The hardware facts the fusion gate reads (apply_flashinfer_allreduce_fusion:
    an SM90 GPU with FlashInfer) and the kernel stood in for."""
    communicator_module._is_sm90_supported = True
    communicator_module._is_flashinfer_available = True
    fusion_module.flashinfer_allreduce_residual_rmsnorm = fused_allreduce_rmsnorm


def mla_attention(self, positions, hidden_states, forward_batch, zero_allocator=None,
                  layer_scatter_modes=None, llama_4_scaling=None, prev_topk_indices=None, **kwargs):
    """DeepseekV2AttentionMLA.forward with everything before o_proj stood in
    for (the q/kv low-rank projections, rotary, the absorbed MLA kernel: no
    collective on these paths without input-scattered attention): the
    engine's own short-circuit of a shard of no rows, then each token's
    heads' values as a fixed projection of its row, then the engine's o_proj
    (a RowParallelLinear over attention TP). Under input-scattered attention
    the rows are the q/kv latent the engine fetches (its prepare_qkv_latent,
    all-gathered over TP by the layer's attention inputs)."""
    from sglang.srt.layers.communicator import get_attn_tp_context

    if isinstance(hidden_states, tuple):
        hidden_states = hidden_states[0]
    context = get_attn_tp_context()
    if not context.input_scattered and hidden_states.shape[0] == 0:
        assert not self.o_proj.reduce_results, "short-circuiting allreduce will lead to hangs"
        return hidden_states
    if context.input_scattered:
        # The MLA prepare paths fetch the q/kv latent through the layer's
        # attention inputs (forward_mla.py, forward_mha.py): the engine's own
        # prepare_qkv_latent on the rank's rows, all-gathered over TP
        # (communicator.py AttentionInputs.fetch_qkv_latent).
        hidden_states = context.fetch_qkv_latent()
    width = self.num_local_heads * self.v_head_dim
    if getattr(self, "_seam_values", None) is None or self._seam_values.shape != (hidden_states.shape[-1], width):
        generator = torch.Generator().manual_seed(width)
        self._seam_values = torch.randn(hidden_states.shape[-1], width, generator=generator) * 0.05
    values = hidden_states.to(self._seam_values.dtype) @ self._seam_values
    out, _ = self.o_proj(values.to(hidden_states.dtype))
    return out


def mla_attention_prepare(self, positions, hidden_states, forward_batch, zero_allocator=None, **kwargs):
    """DeepseekV2AttentionMLA.forward_prepare, the first half the TBO
    operations call (op_prepare): the stand-in's whole output, handed on so
    that the engine's own forward_core returns it (an intermediate state with
    no inner state)."""
    out = mla_attention(self, positions, hidden_states, forward_batch, zero_allocator, **kwargs)
    return out, None, forward_batch, None
