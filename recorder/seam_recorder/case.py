"""A seam case as the recorder receives it: the JSON that `seam` writes (the
`config` object of `seam plan --format json`, with the model's pattern), and
the SGLang launch flags it stands for."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


class CaseError(Exception):
    """A case the recorder cannot read (exit 2)."""


_KEYS = ("pp", "tp", "attn_dp", "attn_cp", "moe_ep", "moe_dp", "tokens", "mode")


@dataclass
class Case:
    family: str  # single-stage (Nemotron-H) | two-stage
    pattern: str  # one character per layer, as seam writes it (the MTP step apart)
    model: Optional[str]
    architecture: str  # the checkpoint's config.json class ("" : the family's default)
    pp: int
    tp: int
    attn_dp: int
    attn_cp: int
    moe_ep: int
    moe_dp: int
    tokens: List[int]  # per attention-DP shard
    mode: str  # decode | extend
    a2a: str = "none"
    fusion: bool = False
    dense_tp: Optional[int] = None
    input_scattered: bool = False
    tbo: bool = False
    layernorm_sp: bool = False
    dp_gatherv: bool = False
    # The checkpoint's counts that decide the engine's weight splits (heads,
    # kv_heads, mamba_heads, mamba_groups, experts, top_k); absent: the
    # recorder's defaults.
    shape: Dict[str, int] = field(default_factory=dict)
    # The MTP step's layers (seam's Pattern::mtp, the same alphabet): the
    # engine's draft model runs one forward after the target's ("" : none).
    mtp: str = ""

    @property
    def world(self) -> int:
        return self.pp * self.tp

    def launch_flags(self) -> List[str]:
        """The `python -m sglang.launch_server` flags of this case (the model
        path and the CPU-only flags apart)."""
        flags = ["--tp-size", str(self.tp)]
        if self.pp > 1:
            flags += ["--pp-size", str(self.pp)]
        if self.attn_dp > 1:
            flags += ["--dp-size", str(self.attn_dp), "--enable-dp-attention"]
        if self.attn_cp > 1:
            # Prefill CP with the zigzag layout (seam's model of CP), on the
            # attention backend SM90 runs it with (FlashAttention; the CPU's
            # own default, torch_native, has no CP path).
            flags += ["--attn-cp-size", str(self.attn_cp), "--enable-prefill-cp", "--cp-strategy", "zigzag",
                      "--attention-backend", "fa3"]
        if self.moe_ep > 1:
            flags += ["--ep-size", str(self.moe_ep)]
        if self.moe_dp > 1:
            flags += ["--moe-dp-size", str(self.moe_dp)]
        if self.a2a != "none":
            flags += ["--moe-a2a-backend", self.a2a]
        if self.dense_tp is not None:
            flags += ["--moe-dense-tp-size", str(self.dense_tp)]
        if self.input_scattered:
            flags += ["--enable-attn-tp-input-scattered"]
        if self.tbo:
            flags += ["--enable-two-batch-overlap"]
        if self.layernorm_sp:
            flags += ["--enable-layernorm-sp"]
        if self.mtp:
            # The engine resolves NEXTN to EAGLE and takes the draft layers from
            # the target's checkpoint (server_args: speculative_hook.py).
            flags += ["--speculative-algorithm", "NEXTN"]
        if self.fusion:
            # What the engine turns on by itself on SM90/SM100 for Nemotron-H
            # with tp > 1, no DP attention and no all-to-all backend
            # (arg_groups/overrides.py, the FlashInfer fusion auto-enable).
            flags += ["--flashinfer-allreduce-fusion-backend", "auto"]
        return flags

    def env(self) -> Dict[str, str]:
        """The environment variables of this case (ENV_VARIABLES: every one
        the recorder sets or clears)."""
        env = {"SGLANG_DP_USE_GATHERV": "1"} if self.dp_gatherv else {}
        if self.pp > 1 and "|" in self.pattern:
            # The engine's pipeline split (distributed/utils.py get_pp_indices)
            # at the case's cuts, in decoder layers per stage.
            per_layer = 1 if self.family == "single-stage" else 2
            env["SGLANG_PP_LAYER_PARTITION"] = ",".join(str(len(p) // per_layer) for p in self.pattern.split("|"))
        return env


ENV_VARIABLES = ("SGLANG_DP_USE_GATHERV", "SGLANG_PP_LAYER_PARTITION")


def parse_case(text: str) -> Case:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(f"the case is not JSON: {e}") from None
    if not isinstance(doc, dict) or "config" not in doc or "pattern" not in doc:
        raise CaseError("the case needs \"pattern\" and \"config\" (seam plan --format json's)")
    cfg = doc["config"]
    missing = [k for k in _KEYS if k not in cfg]
    if missing:
        raise CaseError(f"the case's config lacks {', '.join(missing)}")
    dense = cfg.get("dense_tp")
    pattern, _, mtp = str(doc["pattern"]).partition("/")
    if "mtp" in doc and mtp and str(doc["mtp"]) != mtp:
        raise CaseError(f"the case's \"mtp\" {doc['mtp']!r} is not its pattern's MTP step {mtp!r}")
    mtp = str(doc.get("mtp") or mtp)
    return Case(
        family=doc.get("family", "single-stage"),
        pattern=pattern,
        model=doc.get("model"),
        architecture=str(doc.get("architecture") or ""),
        pp=int(cfg["pp"]),
        tp=int(cfg["tp"]),
        attn_dp=int(cfg["attn_dp"]),
        attn_cp=int(cfg["attn_cp"]),
        moe_ep=int(cfg["moe_ep"]),
        moe_dp=int(cfg["moe_dp"]),
        tokens=[int(t) for t in cfg["tokens"]],
        mode=str(cfg["mode"]),
        a2a=str(cfg.get("a2a", "none")),
        fusion=bool(cfg.get("fusion", False)),
        dense_tp=None if dense in (None, "tp") else int(dense),
        input_scattered=bool(cfg.get("input_scattered", False)),
        tbo=bool(cfg.get("tbo", False)),
        layernorm_sp=bool(cfg.get("layernorm_sp", False)),
        dp_gatherv=bool(cfg.get("dp_gatherv", False)),
        shape={k: int(v) for k, v in (doc.get("shape") or {}).items() if isinstance(v, int) and v > 0},
        mtp=mtp,
    )
