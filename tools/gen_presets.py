#!/usr/bin/env python3
"""Regenerates sim/src/model/presets_data.cc from reference/checkpoints.json and
sim/data/presets_extra.json.

Usage: tools/gen_presets.py [PATH/TO/checkpoints.json]
(default: ../shared/reference/checkpoints.json beside the checkout).

checkpoints.json gives the shapes of the released hybrid checkpoints; the few
facts it lacks (the CLI name, the layer family, Mamba n_groups, whether the
classic communicator may reduce-scatter) are in EXTRA below, each with its
source in checkpoints.md or serving-boundaries.md. sim/data/presets_extra.json
holds the two-stage models the reference does not list (DeepSeek-V3, a Qwen3
dense model), each with its source. Two-stage and parallel-hybrid presets get
their stack written stage by stage (mixer then FFN per decoder layer). The
output is stamped as generated: edit this script or the JSON, not it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_JSON = os.path.join(ROOT, "..", "shared", "reference", "checkpoints.json")
OUT = os.path.join(ROOT, "sim", "src", "model", "presets_data.cc")
EXTRA_JSON = os.path.join(ROOT, "sim", "data", "presets_extra.json")

# name in checkpoints.json -> (CLI name, family, mamba n_groups or None when unknown,
# allow_reduce_scatter of the classic LayerCommunicator: Qwen3-Next and
# Falcon-H1 pass True (serving-boundaries.md §10); single-stage models: n/a)
# n_groups: Megatron-Bridge provider default mamba_num_groups = 8 (Nemotron-H,
# Nano-v2, Mamba2-Hybrid); Super's config n_groups = 8; Falcon-H1 mamba_n_groups = 1
# (checkpoints.md notes). Nemotron-3-Nano: Megatron-Bridge's Nemotron3NanoProvider
# (nemotron_h_provider.py, the source checkpoints.json cites) sets no
# mamba_num_groups and inherits NemotronHModelProvider's default 8.
EXTRA = {
    "Nemotron-H-4B": ("nemotron-h-4b", "kSingleStage", 8, False),
    "Nemotron-H-8B": ("nemotron-h-8b", "kSingleStage", 8, False),
    "Nemotron-H-47B": ("nemotron-h-47b", "kSingleStage", 8, False),
    "Nemotron-H-56B": ("nemotron-h-56b", "kSingleStage", 8, False),
    "Nemotron-Nano-9B-v2": ("nemotron-nano-9b-v2", "kSingleStage", 8, False),
    "Nemotron-Nano-12B-v2": ("nemotron-nano-12b-v2", "kSingleStage", 8, False),
    "Nemotron-3-Nano-30B-A3B": ("nemotron-3-nano", "kSingleStage", 8, False),
    "Nemotron-3-Super-120B-A12B": ("nemotron-3-super", "kSingleStage", 8, False),
    "Qwen3-Next-80B-A3B": ("qwen3-next-80b-a3b", "kTwoStage", None, True),
    "Falcon-H1-7B": ("falcon-h1-7b", "kParallelHybrid", 1, True),
    "Falcon-H1-3B": ("falcon-h1-3b", "kParallelHybrid", 1, True),
    "Falcon-H1 (24 layers, hidden 2048)": ("falcon-h1-24l-2048", "kParallelHybrid", 1, True),
    "Falcon-H1-Tiny-90M": ("falcon-h1-tiny-90m", "kParallelHybrid", 1, True),
    "NVIDIA-Mamba2-Hybrid-8B (research)": ("mamba2-hybrid-8b", "kSingleStage", 8, False),
}

SHAPE_FIELDS = [
    ("hidden", "hidden"), ("heads", "heads"), ("kv_heads", "kv_heads"), ("head_dim", "head_dim"),
    ("mamba_heads", "mamba_heads"), ("mamba_head_dim", "mamba_head_dim"), (None, "mamba_groups"),
    ("ssm_state", "ssm_state"), ("ffn_intermediate", "ffn_intermediate"),
    ("moe_experts", "moe_experts"), ("moe_top_k", "moe_top_k"),
    ("moe_shared_intermediate", "moe_shared_intermediate"),
    ("dense_intermediate", "dense_intermediate"),
    ("q_lora_rank", "q_lora_rank"),
]
# Fields that are "not applicable" (0) rather than "unknown" (-1) when null.
NOT_APPLICABLE_WHEN_NULL = {"moe_experts", "moe_top_k", "moe_shared_intermediate", "dense_intermediate",
                            "q_lora_rank"}


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def value(entry, key, cxx_name, mamba_groups):
    if key is None:
        if mamba_groups is not None:
            return str(mamba_groups)
        return "kUnknown" if "M" in (entry.get("pattern") or "") else "kNotApplicable"
    v = entry.get(key)
    if v is None:
        if cxx_name in NOT_APPLICABLE_WHEN_NULL:
            return "kNotApplicable"
        if cxx_name.startswith("mamba") or cxx_name == "ssm_state":
            # Qwen3-Next (GDN) and the research 8B: no Mamba shapes in the sources.
            return "kUnknown" if entry["name"].startswith("NVIDIA-Mamba2") else "kNotApplicable"
        return "kUnknown"
    return str(int(v))


def two_stage_stack(e, family):
    """The stack stage by stage: each decoder layer's mixer, then its FFN.

    Qwen3-Next: every layer sparse (is_layer_sparse = True). DeepSeek-V3: the
    first first_k_dense_replace layers dense, then MoE (moe_layer_freq 1).
    Falcon-H1: every layer a parallel mixer (attention || Mamba-2) then an MLP.
    LongCat-Flash (branch-merge): five stages per layer.
    """
    if family == "kSingleStage":
        return ""
    if family == "kParallelHybrid":
        return "P-" * int(e["layers"])
    if family == "kBranchMerge":
        # LongCat-Flash: attention, the MoE branch, MLP, attention, MLP; the
        # MTP layer (after '/') is a two-stage layer.
        return "*E-*-" * int(e["layers"]) + ("/" + e["mtp_layer"] if e.get("mtp_layer") else "")
    sparse_from = e.get("first_k_dense", 0) if e.get("moe_experts") else int(e["layers"])
    out = "".join(m + ("E" if i >= sparse_from else "-") for i, m in enumerate(e["pattern"]))
    if e.get("mtp_layer"):
        out += "/" + e["mtp_layer"]
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_JSON
    with open(path) as f:
        entries = json.load(f)
    out = [
        "// GENERATED by tools/gen_presets.py from reference/checkpoints.json and sim/data/presets_extra.json: do not edit.",
        "// Regenerate: python3 tools/gen_presets.py",
        "#include \"model/presets_data.h\"",
        "",
        "namespace seam {",
        "",
        "const ModelPreset kPresets[] = {",
    ]
    with open(EXTRA_JSON) as f:
        extra_entries = json.load(f)
    for e in extra_entries:
        EXTRA[e["name"]] = (e["cli"], e["family"], e.get("mamba_groups"), e["allow_reduce_scatter"])
        e.setdefault("pattern", "*" * e["layers"])
    for e in entries + extra_entries:
        name = e["name"]
        if name not in EXTRA:
            sys.exit(f"gen_presets.py: no EXTRA facts for {name!r}")
        cli, family, groups, allow_rs = EXTRA[name]
        pattern = e.get("pattern") or ""
        if family == "kParallelHybrid":
            pattern = ""
        stages = two_stage_stack(e, family)
        shape = ", ".join(f".{cxx}={value(e, key, cxx, groups)}" for key, cxx in SHAPE_FIELDS)
        out.append("    {")
        out.append(f"        .name = {cstr(cli)},")
        out.append(f"        .display_name = {cstr(name)},")
        out.append(f"        .family = LayerFamily::{family},")
        out.append(f"        .layers = {int(e['layers'])},")
        out.append(f"        .pattern = {cstr(pattern)},")
        out.append(f"        .mtp_pattern = {cstr(e.get('mtp_pattern') or '')},")
        out.append(f"        .stages = {cstr(stages)},")
        out.append(f"        .allow_reduce_scatter = {'true' if allow_rs else 'false'},")
        out.append(f"        .shape = {{{shape}}},")
        out.append(f"        .source = {cstr(e.get('source') or '')},")
        out.append("    },")
    out += ["};", "", "const int kPresetCount = sizeof(kPresets) / sizeof(kPresets[0]);", "",
            "}  // namespace seam", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {OUT} ({len(entries) + len(extra_entries)} presets)")


if __name__ == "__main__":
    main()
