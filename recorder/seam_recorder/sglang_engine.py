"""SGLang run on the CPU for one seam case: the engine's own argument
resolution, group construction, DP batch preparation, model and decoder
layers, with only the GPU kernels stood in for (standins.py).

The parent process imports the engine and publishes the case's server
arguments once (`prepare`); each rank's process then builds its groups
through the engine's bootstrap and the model, and runs one forward per case
of the server (`rank_steps`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from . import cp, draft, pp, tbo
from .architectures import HIDDEN, EngineError, architecture_of, write_model_dir  # noqa: F401
from .case import ENV_VARIABLES, Case


@dataclass
class Engine:
    name: str  # "sglang"
    version: str  # the release, e.g. "0.5.20"
    source: str  # "pypi" or the tree's path
    commit: str  # the tree's git commit, when it has one
    root: str  # the directory holding the sglang package
    generation: str  # single-file | package | layer-boundary


def _tree_root(src: str) -> str:
    for candidate in (os.path.join(src, "python"), src):
        if os.path.isfile(os.path.join(candidate, "sglang", "srt", "distributed", "parallel_state.py")):
            return candidate
    raise EngineError(f"not an SGLang tree: {src} (no python/sglang/srt/distributed/parallel_state.py)")


def _generation(srt: str) -> str:
    layers = os.path.join(srt, "layers")
    if os.path.isdir(os.path.join(layers, "layer_boundary")):
        return "layer-boundary"
    if os.path.isdir(os.path.join(layers, "communicator")):
        return "package"
    if os.path.isfile(os.path.join(layers, "communicator.py")):
        return "single-file"
    return "unknown"


def load(src: Optional[str]) -> Engine:
    """Imports SGLang: the installed release, or the tree at src."""
    root = None
    if src:
        root = _tree_root(os.path.abspath(src))
        sys.path.insert(0, root)
    try:
        import sglang  # noqa: F401
        from sglang.srt.distributed import parallel_state  # noqa: F401
        from sglang.srt.layers import dp_attention  # noqa: F401
    except ModuleNotFoundError as e:
        raise EngineError(
            f"importing SGLang failed: no module named {e.name!r}; tools/setup.sh installs the recorder's "
            "pinned packages (recorder/requirements.txt)"
        ) from None
    except Exception as e:  # an engine tree that does not import is bad input
        raise EngineError(f"importing SGLang failed: {type(e).__name__}: {e}") from None
    import sglang

    pkg_root = os.path.dirname(os.path.dirname(os.path.realpath(sglang.__file__)))
    if root is not None and os.path.realpath(root) != pkg_root:
        raise EngineError(f"imported SGLang from {pkg_root}, not from the tree {root}")
    version = getattr(sglang, "__version__", "unknown")
    commit = ""
    if src:
        try:
            commit = subprocess.run(
                ["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = ""
    return Engine(
        name="sglang",
        version=version,
        source=os.path.abspath(src) if src else "pypi",
        commit=commit,
        root=pkg_root,
        generation=_generation(os.path.join(pkg_root, "sglang", "srt")),
    )


# --- one case --------------------------------------------------------------

CPU_FLAGS = [
    "--device", "cpu", "--skip-tokenizer-init", "--load-format", "dummy",
    "--disable-radix-cache", "--disable-cuda-graph", "--dtype", "float32",
]


@dataclass
class Prepared:
    """What every rank of one case shares: the published server arguments
    and the model's configuration (made in the parent, before the fork). A server's
    forwards share one Prepared: the cases that differ only in their batch
    (tokens and mode)."""

    case: Case
    server_args: Any
    model_config: Any
    launch_flags: List[str]
    arch: Any = None  # Architecture
    draft_config: Any = None  # the draft's ModelConfig (a case with an MTP step)


class RecorderGap(Exception):
    """The engine accepted the case, but runs it on a path the recorder has
    no CPU stand-in for (never an engine finding)."""


class EngineRefusal(Exception):
    """The engine's own argument checks refused the case."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where


def install(engine: Engine) -> None:
    """Puts the recording groups and the CPU stand-ins in place, once per
    process (the forked ranks inherit them)."""
    from sglang.srt.distributed import parallel_state as ps
    from sglang.srt.layers import dp_attention
    from sglang.srt.layers.moe import fused_moe_native

    from . import groups, standins
    from .frames import set_engine_roots

    import torch._dynamo

    # What every rank imports, imported once here: the forked ranks inherit it.
    from sglang.srt.distributed import bootstrap  # noqa: F401
    from sglang.srt.layers.attention import hybrid_linear_attn_backend  # noqa: F401
    from sglang.srt.model_executor import forward_context, model_runner  # noqa: F401
    from sglang.srt.models import deepseek_nextn, deepseek_v2, nemotron_h, nemotron_h_mtp, qwen3  # noqa: F401

    # DeepSeek's MLA attention: everything before o_proj stood in for (its
    # forward, and its first half for the overlapped operations of TBO).
    deepseek_v2.DeepseekV2AttentionMLA.forward = standins.mla_attention
    deepseek_v2.DeepseekV2AttentionMLA.forward_prepare = standins.mla_attention_prepare

    # torch.compile'd helpers (the embedding's local shard, ...) run eagerly:
    # the same arithmetic, without seconds of tracing in every rank of every case.
    torch._dynamo.config.disable = True
    if not getattr(ps.GroupCoordinator, "_seam_recording", False):
        cls = groups.make_group_class(ps.GroupCoordinator)
        cls._seam_recording = True
        ps.GroupCoordinator = cls
    from sglang.srt.model_executor import forward_batch_info

    # The engine's own CPU copy stands in for its Triton copy kernel.
    dp_attention.memcpy_func = dp_attention.memcpy_cpu
    # Rotary embeddings take their torch-native path (on a platform that is
    # neither CUDA nor SGLang's CPU engine they would load vllm's kernel).
    from sglang.srt.layers.rotary_embedding import base as rotary_base

    rotary_base._is_cpu = True
    # The batch preparation's CPU branch: unpinned host tensors (pinning needs
    # a CUDA driver) and the CPU graph's fill value; nothing it communicates.
    forward_batch_info._is_cpu = True
    standins.install_cpu_ops()
    tbo.install_device_properties()
    tbo.install_deepep_constants()
    standins.install_moe(fused_moe_native)
    _answer_cpu_device()
    set_engine_roots([engine.root])


def _answer_cpu_device() -> None:
    """`get_device()` (utils/common.py) names the accelerator, and raises
    without one; the recorder's device is the CPU. Each module binds the name
    it imports, so every loaded engine module holding the function gets the
    stand-in (as SGLang's own communicator_patch.py does for its doubles)."""
    from sglang.srt.utils import common

    original = getattr(common, "_seam_original_get_device", common.get_device)
    common._seam_original_get_device = original

    def cpu_device(device_id: Optional[int] = None) -> str:
        return "cpu"

    for name, module in list(sys.modules.items()):
        if name.startswith("sglang") and getattr(module, "get_device", None) is original:
            module.get_device = cpu_device


def prepare(engine: Engine, case: Case, workdir: str) -> Prepared:
    """Resolves and publishes the case's server arguments with the engine's
    own parser and resolution (its refusals are the case's)."""
    arch = architecture_of(case)
    from sglang.srt import runtime_context as rc
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.server_args import prepare_server_args

    from .frames import raise_site
    import traceback

    model_dir = write_model_dir(arch.config(case), os.path.join(workdir, "model"))
    from sglang.srt.layers import communicator, flashinfer_comm_fusion

    from . import standins

    # The attention-TP context's hardware fact (AttnTpContext.init_context
    # allows input-scattered attention on CUDA or NPU only).
    communicator._is_cuda = case.input_scattered
    if case.fusion:
        standins.install_fused_kernel(communicator, flashinfer_comm_fusion)
    else:
        communicator._is_sm90_supported = False
        communicator._is_flashinfer_available = False
    flags = case.launch_flags()
    _apply_env(case)
    try:
        server_args = prepare_server_args(["--model-path", model_dir] + CPU_FLAGS + flags)
        rc.publish(server_args, role="scheduler")
        model_config = ModelConfig.from_server_args(server_args)
        _seed_moe_flags(model_config)
        draft_config = ModelConfig.from_server_args(server_args, is_draft_model=True) if case.mtp else None
    except (AssertionError, ValueError, NotImplementedError, RuntimeError, SystemExit) as e:
        site = raise_site(traceback.extract_tb(e.__traceback__))
        raise EngineRefusal(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", site) from None
    from sglang.srt.arg_groups.model_override_base import resolved_view

    a2a = str(resolved_view(server_args).moe_a2a_backend)
    if a2a != case.a2a and a2a != "none":
        # Resolution turned an all-to-all backend on by itself (MLA prefill CP
        # sets DeepEP): its kernels move tokens through their own buffers,
        # which the recorder does not stand in for.
        raise RecorderGap(f"the engine resolved --moe-a2a-backend {a2a} itself (its log says why); "
                          "the recorder does not stand in for that backend")
    if draft_config is not None:
        named = draft_config.hf_config.architectures[0]
        if arch.draft is None or named != arch.draft[1]:
            raise EngineError(f"the engine's draft configuration names {named}, a class the recorder does not build")
    return Prepared(case=case, server_args=server_args, model_config=model_config, launch_flags=flags, arch=arch,
                    draft_config=draft_config)


# Environment variables the engine reads once, at import, into a module
# global: (variable, module, global).
_IMPORT_TIME_ENV = (("SGLANG_DP_USE_GATHERV", "sglang.srt.layers.dp_attention", "_USE_DP_GATHERV"),)


def _apply_env(case: Case) -> None:
    """The case's environment (and no earlier case's: one process records
    many), and the globals the engine fills from it at import, refilled with
    the engine's own reader as a freshly started server would have them."""
    from sglang.srt.utils.common import get_bool_env_var

    wanted = case.env()
    for name in ENV_VARIABLES:
        if name in wanted:
            os.environ[name] = wanted[name]
        else:
            os.environ.pop(name, None)
    for name, module, attr in _IMPORT_TIME_ENV:
        setattr(sys.modules[module], attr, get_bool_env_var(name))


def _seed_moe_flags(model_config: Any) -> None:
    """What the scheduler does after publishing (managers/scheduler.py): the
    MoE runtime flags (the a2a backend, two-batch overlap, ...) seeded from
    the published configuration when the model has a per-token expert count,
    else left at their defaults (reset here: one process records many cases)."""
    from sglang.srt.layers.moe.utils import initialize_moe_config
    from sglang.srt.runtime_context import get_flags

    flags = get_flags()
    flags.moe = type(flags.moe)()
    config = model_config.hf_text_config if hasattr(model_config, "hf_text_config") else model_config.hf_config
    if any(hasattr(config, a) for a in ("num_experts_per_tok", "num_experts_per_token", "top_k_experts",
                                        "moe_top_k", "moe_topk")):
        initialize_moe_config()


class _RunnerStandin:
    """The ModelRunner attributes the engine's eager batch preparation reads;
    its methods are ModelRunner's own."""

    def __init__(self, model_config: Any, attn_backend: Any):
        self.model_config = model_config
        self.attn_backend = attn_backend
        self.is_draft_worker = False
        self.hisparse_coordinator = None

    def attn_tp_sequence_sharded(self, num_tokens: int) -> bool:
        from sglang.srt.model_executor.model_runner import ModelRunner

        return ModelRunner.attn_tp_sequence_sharded(self, num_tokens)


def _forward_batch(case: Case, dp_rank: int):
    """The batch this rank's scheduler hands the model: its DP shard's tokens
    (decode: one token per request; extend: one request of all its tokens),
    the DP group's token counts as the scheduler's sync gives them, and an
    idle rank in IDLE mode."""
    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode

    tokens = case.tokens[dp_rank] if case.attn_dp > 1 else sum(case.tokens)
    extend = case.mode == "extend"
    if tokens == 0:
        mode = ForwardMode.IDLE
    else:
        mode = ForwardMode.EXTEND if extend else ForwardMode.DECODE
    bs = (1 if tokens else 0) if extend else tokens
    seq_len = tokens if extend else 8
    fb = ForwardBatch(
        forward_mode=mode,
        batch_size=bs,
        input_ids=torch.arange(tokens, dtype=torch.int64) % 200 + 1,
        req_pool_indices=torch.arange(bs, dtype=torch.int64),
        seq_lens=torch.full((bs,), seq_len, dtype=torch.int64),
        out_cache_loc=torch.arange(tokens, dtype=torch.int64),
        seq_lens_sum=seq_len * bs,
        positions=torch.arange(tokens, dtype=torch.int64) if extend else torch.full((tokens,), 7, dtype=torch.int64),
        seq_lens_cpu=torch.full((bs,), seq_len, dtype=torch.int64),
        orig_seq_lens=torch.full((bs,), seq_len, dtype=torch.int64),
        is_extend_in_batch=extend,
    )
    if extend and tokens:
        fb.extend_num_tokens = tokens
        fb.extend_seq_lens = torch.tensor([tokens], dtype=torch.int32)
        fb.extend_prefix_lens = torch.zeros(1, dtype=torch.int64)
        fb.extend_start_loc = torch.zeros(1, dtype=torch.int32)
        fb.extend_seq_lens_cpu = [tokens]
        fb.extend_prefix_lens_cpu = [0]
        fb.extend_logprob_start_lens_cpu = [0]
    if case.attn_dp > 1:
        fb.global_num_tokens_cpu = list(case.tokens)
        fb.global_num_tokens_gpu = torch.tensor(case.tokens, dtype=torch.int64)
        fb.global_num_tokens_for_logprob_cpu = list(case.tokens)
        fb.global_num_tokens_for_logprob_gpu = torch.tensor(case.tokens, dtype=torch.int64)
    return fb


def _tag_layers(model: Any, first: int = 0) -> None:
    """Each decoder layer's forward sets the recorder's layer context (the
    model calls layer.forward directly, so hooks would not fire); a draft's
    layers are numbered on from the target's (`first`)."""
    from . import groups
    from .draft import decoder_layers

    for index, layer in enumerate(decoder_layers(model), start=first):
        inner = layer.forward

        def tagged(*args, _inner=inner, _index=index, **kwargs):
            groups.CONTEXT["layer"] = _index
            try:
                return _inner(*args, **kwargs)
            finally:
                groups.CONTEXT["layer"] = None

        layer.forward = tagged


def rank_steps(prepared: Prepared, batches: List[Case], rank: int, comm: Any) -> Iterator[Dict[str, Any]]:
    """One rank as a server runs it: the engine's bootstrap of its groups and
    its model once, then for each case of `batches` (the prepared case's
    server arguments, each its own tokens and mode) the engine's eager batch
    preparation and one forward (then the MTP step's, when the case has one),
    yielding the outputs' shapes and digests. Each forward starts from the
    random state the model's build left, so a batch's forward is the same
    whichever batches ran before it."""
    import torch

    model = _build_rank(prepared, rank, comm)
    after_build = torch.get_rng_state()
    for case in batches:
        torch.set_rng_state(after_build)
        yield _forward_rank(prepared, case, model)


def _build_rank(prepared: Prepared, rank: int, comm: Any) -> Any:
    """The rank's groups (the engine's bootstrap) and its model, with seeded
    weights and each decoder layer tagged."""
    import torch
    from sglang.srt import runtime_context as rc
    from sglang.srt.distributed import bootstrap
    import importlib

    from . import groups

    case = prepared.case
    groups.bind_rank(rank, comm)
    groups.patch_torch_distributed(case.world)
    parallel = rc.get_parallel()
    bootstrap._set_all_reduce_flags()
    bootstrap._init_parallel_groups(
        backend="gloo",
        dist_init_method="tcp://127.0.0.1:0",
        server_args=prepared.server_args,
        model_config=prepared.model_config,
        gpu_id=rank,
        tp_rank=rank % case.tp,
        tp_size=case.tp,
        pp_rank=rank // case.tp,
        pp_size=case.pp,
        attn_dp_size=parallel.attn_dp_size,
        attn_cp_size=parallel.attn_cp_size,
        moe_ep_size=parallel.moe_ep_size,
        moe_dp_size=parallel.moe_dp_size,
        dcp_size=1,
    )
    torch.manual_seed(20261207)
    model_class = getattr(importlib.import_module(f"sglang.srt.models.{prepared.arch.module}"), prepared.arch.cls)
    model = model_class(config=prepared.model_config.hf_config, quant_config=None)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            param.normal_(0.0, 0.05)
    _tag_layers(model)
    return model


def _forward_rank(prepared: Prepared, case: Case, model: Any) -> Dict[str, Any]:
    """One forward of `case`'s batch on the built model (then the MTP
    step's)."""
    import torch
    from sglang.srt.layers.attention.hybrid_linear_attn_backend import (
        HybridLinearAttnBackend,
        Mamba2AttnBackend,
    )
    from sglang.srt.layers.dp_attention import get_attention_dp_rank
    from sglang.srt.model_executor import forward_context as fc
    from sglang.srt.model_executor.model_runner import ModelRunner

    from . import standins

    backend = standins.make_backends(HybridLinearAttnBackend, Mamba2AttnBackend)
    dp_rank = get_attention_dp_rank() if case.attn_dp > 1 else 0
    batch = _forward_batch(case, dp_rank)
    if case.tbo:
        batch.tbo_split_seq_index, batch.global_forward_mode = tbo.split_decision(case, dp_rank)
        backend = tbo.backend(lambda: standins.make_backends(HybridLinearAttnBackend, Mamba2AttnBackend))
    with fc.forward_context(fc.ForwardContext(attn_backend=backend)), torch.no_grad():
        ModelRunner._prepare_eager_forward_batch(_RunnerStandin(prepared.model_config, backend), batch)
        # DeepseekV3ForCausalLM.forward runs its body inside the attention-TP
        # context's input-scattered scope (models/deepseek_v2.py).
        from sglang.srt.layers.communicator import get_attn_tp_context

        scope = get_attn_tp_context().maybe_input_scattered(batch) if case.input_scattered else nullcontext()
        with scope:
            if case.pp > 1:
                out = pp.forward(model, batch, lambda proxies: cp.forward(model, batch, pp_proxy_tensors=proxies))
            else:
                out = cp.forward(model, batch)
    if isinstance(out, tuple):
        out = out[0]
    if hasattr(out, "tensors"):  # a stage before the last hands on its proxies
        out = out["hidden_states"]
    result = {
        "output_shape": [int(d) for d in out.shape],
        "output_digest": _digest(out),
        "dp_rank": dp_rank,
        "dp_padding": getattr(getattr(batch, "dp_padding_mode", None), "name", ""),
        "batch_tokens": int(batch.input_ids.shape[0]),
    }
    if case.tbo:
        children = batch.tbo_children or []
        result["tbo_children_tokens"] = [int(c.input_ids.shape[0]) for c in children]
    from sglang.srt.distributed import get_pp_group

    # Under pipeline stages the draft lives on the last stage only
    # (eagle_worker_v2.py: the other stages forward the target's proxies).
    if prepared.draft_config is not None and get_pp_group().is_last_rank:
        result.update(_run_draft(prepared, case, dp_rank, out, len(draft.decoder_layers(model)), backend))
    return result


def _digest(out: Any) -> str:
    import hashlib

    import torch

    return hashlib.sha256(out.detach().to(torch.float32).contiguous().numpy().tobytes()).hexdigest()[:16]


def _run_draft(prepared: Prepared, case: Case, dp_rank: int, target_out: Any, first_layer: int,
               backend: Any) -> Dict[str, Any]:
    """The MTP step (draft.py): the engine's draft class on the same ranks
    and groups, its layers numbered after the target's, its calls marked."""
    import torch
    from sglang.srt.model_executor import forward_context as fc
    from sglang.srt.model_executor.model_runner import ModelRunner

    from . import groups

    torch.manual_seed(20261208)
    model = draft.build(prepared)
    _tag_layers(model, first_layer)
    batch = _forward_batch(case, dp_rank)
    real_rows = case.tokens[dp_rank] if case.attn_dp > 1 else sum(case.tokens)
    draft.attach_spec_input(case, batch, target_out, real_rows)
    runner = _RunnerStandin(prepared.draft_config, backend)
    runner.is_draft_worker = True
    groups.CONTEXT["draft"] = True
    try:
        with draft.forward_scope(), fc.forward_context(fc.ForwardContext(attn_backend=backend)), torch.no_grad():
            ModelRunner._prepare_eager_forward_batch(runner, batch)
            out = model.model(batch.input_ids, batch.positions, batch)
    finally:
        groups.CONTEXT["draft"] = False
    if isinstance(out, tuple):
        out = out[0]
    return {
        "draft_output_shape": [int(d) for d in out.shape],
        "draft_output_digest": _digest(out),
        "draft_batch_tokens": int(batch.input_ids.shape[0]),
    }
