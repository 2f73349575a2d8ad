"""The model classes the recorder builds, each with the tiny config.json
that gives the engine's class the case's layers and the checkpoint's counts
that decide its weight splits (heads, KV heads, Mamba heads and groups,
experts, top-k), and, for a case with an MTP step, the draft class the
engine's own draft configuration names (configs/model_config.py
_config_draft_model)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from .case import Case


class EngineError(Exception):
    """The engine cannot be loaded or the case cannot be put to it (exit 2)."""


HIDDEN = 64  # the recorder's hidden size; seam scales recorded rows by its own


def nemotron_h_config(case: Case) -> Dict[str, Any]:
    """A Nemotron-H config.json of tiny widths with the case's pattern and the
    checkpoint's counts (case.shape: heads, KV heads, Mamba heads and
    groups, experts, top-k), so that the engine splits them over its groups
    as it would the checkpoint's; without them, counts that divide every TP
    size up to 16."""
    pattern = case.pattern.replace("|", "")
    shape = case.shape
    heads = shape.get("heads", 16)
    mamba_heads = shape.get("mamba_heads", 16)
    return {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hidden_size": HIDDEN,
        "intermediate_size": 128,
        "num_attention_heads": heads,
        "num_key_value_heads": shape.get("kv_heads", heads),
        "head_dim": 4,
        "mamba_num_heads": mamba_heads,
        "mamba_head_dim": 4,
        "ssm_state_size": 4,
        "n_groups": shape.get("mamba_groups", mamba_heads),
        "conv_kernel": 4,
        "expand": 1,
        "hybrid_override_pattern": pattern,
        "num_hidden_layers": len(pattern),
        "vocab_size": 256,
        "n_routed_experts": shape.get("experts", 16),
        "num_experts_per_tok": shape.get("top_k", 2),
        "moe_intermediate_size": 32,
        "n_shared_experts": 1,
        "moe_shared_expert_intermediate_size": 32,
        "torch_dtype": "float32",
        "max_position_embeddings": 4096,
        # The MTP step's layers, which the engine's draft class builds
        # (models/nemotron_h_mtp.py); its own config checks refuse what it
        # does not know.
        **({"mtp_hybrid_override_pattern": case.mtp, "num_nextn_predict_layers": 1} if case.mtp else {}),
    }


def qwen3_config(case: Case) -> Dict[str, Any]:
    """A Qwen3 (dense) config.json of tiny widths: the case's two-stage
    pattern, one decoder layer per `*-` pair, the checkpoint's head counts."""
    pattern = case.pattern.replace("|", "")
    if len(pattern) % 2 or any(pattern[i : i + 2] != "*-" for i in range(0, len(pattern), 2)):
        raise EngineError(f"Qwen3ForCausalLM layers are attention then MLP ('*-' each); the pattern is {pattern}")
    if case.mtp:
        raise EngineError("Qwen3ForCausalLM has no MTP draft class in the engine; the case has an MTP step")
    heads = case.shape.get("heads", 16)
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": HIDDEN,
        "intermediate_size": 128,
        "num_attention_heads": heads,
        "num_key_value_heads": case.shape.get("kv_heads", heads),
        "head_dim": 4,
        "num_hidden_layers": len(pattern) // 2,
        "vocab_size": 256,
        "max_position_embeddings": 4096,
        "torch_dtype": "float32",
        "tie_word_embeddings": False,
    }


def deepseek_v3_config(case: Case) -> Dict[str, Any]:
    """A DeepSeek-V3 config.json of tiny widths: the case's two-stage pattern
    (attention then a dense MLP `-` or a MoE `E` per layer; the dense ones
    first, as first_k_dense_replace says), the checkpoint's head and expert
    counts."""
    pattern = case.pattern.replace("|", "")
    pairs = [pattern[i : i + 2] for i in range(0, len(pattern), 2)]
    if len(pattern) % 2 or any(p not in ("*-", "*E") for p in pairs):
        raise EngineError(f"DeepseekV3ForCausalLM layers are MLA then an MLP or MoE ('*-', '*E'); the pattern is {pattern}")
    dense = pairs.index("*E") if "*E" in pairs else len(pairs)
    if any(p == "*-" for p in pairs[dense:]):
        raise EngineError(f"DeepSeek-V3's dense layers come first (first_k_dense_replace); the pattern is {pattern}")
    if case.mtp not in ("", "*E"):
        # DeepseekModelNextN builds one decoder layer, always sparse
        # (DeepseekV2DecoderLayer._is_layer_sparse with is_nextn).
        raise EngineError(f"DeepSeek-V3's MTP step is one MLA + MoE layer ('*E'); the case's is {case.mtp}")
    heads = case.shape.get("heads", 16)
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": HIDDEN,
        "intermediate_size": 128,
        "moe_intermediate_size": 16,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "q_lora_rank": 16,
        "kv_lora_rank": 16,
        "qk_nope_head_dim": 4,
        "qk_rope_head_dim": 4,
        "v_head_dim": 4,
        "n_routed_experts": case.shape.get("experts", 16),
        "num_experts_per_tok": case.shape.get("top_k", 2),
        "n_shared_experts": 1,
        "n_group": 1,
        "topk_group": 1,
        "first_k_dense_replace": dense,
        "moe_layer_freq": 1,
        "num_hidden_layers": len(pairs),
        "num_nextn_predict_layers": 1 if case.mtp else 0,
        "vocab_size": 256,
        "max_position_embeddings": 4096,
        "torch_dtype": "float32",
        "tie_word_embeddings": False,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "routed_scaling_factor": 1.0,
        "norm_topk_prob": True,
        "hidden_act": "silu",
        # DeepSeek-V3's own (its config.json): YaRN, which the engine's
        # CPU rotary path takes as deepseek_yarn.
        "rope_scaling": {
            "type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
            "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
        },
    }


@dataclass
class Architecture:
    """One model class the recorder builds: where the engine defines it and
    the tiny config.json that gives it the case's layers."""

    module: str  # under sglang.srt.models
    cls: str
    config: Callable[[Case], Dict[str, Any]]
    # The draft class (module, class) the engine's draft configuration turns
    # this one into under --speculative-algorithm NEXTN; None: it has none.
    draft: Optional[Tuple[str, str]] = None


ARCHITECTURES: Dict[str, Architecture] = {
    "NemotronHForCausalLM": Architecture(
        "nemotron_h", "NemotronHForCausalLM", nemotron_h_config, ("nemotron_h_mtp", "NemotronHForCausalLMMTP")
    ),
    "Qwen3ForCausalLM": Architecture("qwen3", "Qwen3ForCausalLM", qwen3_config),
    "DeepseekV3ForCausalLM": Architecture(
        "deepseek_v2", "DeepseekV3ForCausalLM", deepseek_v3_config, ("deepseek_nextn", "DeepseekV3ForCausalLMNextN")
    ),
}


def architecture_of(case: Case) -> Architecture:
    name = case.architecture or ("NemotronHForCausalLM" if case.family == "single-stage" else "")
    if name not in ARCHITECTURES:
        raise EngineError(
            f"the recorder does not run {name or case.family} models yet (it runs {', '.join(sorted(ARCHITECTURES))})"
        )
    return ARCHITECTURES[name]


def write_model_dir(config: Dict[str, Any], where: str) -> str:
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return where


