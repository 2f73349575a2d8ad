#!/usr/bin/env python3
"""Regenerates the golden plans in tests/tools/golden/ with the built seam.

Usage: tools/gen_goldens.py [PATH/TO/seam]   (default: build/tools/seam)

Each golden pins one row of the two-stage decision tables of
reference/serving-boundaries.md (attention input §5.2, FFN input §5.3 /
§6.3, layer output §5.4 / §6.4 / §6.6) or one special mode, as the full
`seam plan --rank all` output of a small case (a fourth entry: options of
`seam plan` only, e.g. --lower-dp). tests/tools/golden_plan_test.cc
re-runs each file's args line and compares; a change of policy shows up as
a diff of these files, reviewed like code. Every file is stamped generated:
edit CASES below, not the files.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "tools", "golden")

TWO = "--family two-stage"
# (file name, what it pins, seam plan arguments)
CASES = [
    ("two_stage_tp1", "attention input at layer 0 (residual := embedding); FFN input #1: attn_tp == 1, add+norm only",
     f"--pattern '*-*-' {TWO} --tp 1"),
    ("two_stage_tp2_fused", "FFN input #3 with D == 1: fused AR(attn_tp)+add+RMSNorm; the FFN defers its AR(tp) into the next attention input's fused kernel",
     f"--pattern '*-*-' {TWO} --tp 2"),
    ("two_stage_tp2_unfused_declared", "declared without fusion: AR(attn_tp) then add+norm; the FFN still defers (Gen B/D should_defer_ffn_reduction): AR(tp) at the next entry",
     f"--pattern '*-*-' {TWO} --tp 2 --fusion off"),
    ("two_stage_tp2_unfused_legacy", "legacy (Gen A) without fusion: the FFN all-reduces at its own exit; the next attention input only adds and norms",
     f"--pattern '*-*-' {TWO} --tp 2 --fusion off --policy legacy"),
    ("two_stage_dp2_attn_tp1_declared", "FFN input with D > 1 and attn_tp == 1, declared (Gen D row 6d): add+norm locally, dp_gather_replicate; the DP return (AR + dp_scatter) carried to the next entry",
     f"--pattern '*-*-' {TWO} --tp 2 --dp 2 --tokens 2,1"),
    ("two_stage_dp2_attn_tp1_legacy", "FFN input with D > 1 and attn_tp == 1, legacy (Gen A): norm before the gather, dp_gather_partial; postprocess AR + dp_scatter (Qwen3 dense: allow_reduce_scatter False)",
     f"--pattern '*-*-' {TWO} --tp 2 --dp 2 --tokens 2,1 --policy legacy"),
    ("two_stage_partial_order_declared", "FFN input with D > 1 and attn_tp > 1 (classic #3 / Gen D row 6c): attn-TP rank 0 adds the residual, dp_gather_partial, dp_scatter of the residual, norm on full rows",
     f"--pattern '*-*-' {TWO} --tp 4 --dp 2 --tokens 3,2"),
    ("two_stage_partial_order_legacy", "the same under legacy: no deferral under DP attention; AR(tp) + dp_scatter at the layer's end",
     f"--pattern '*-*-' {TWO} --tp 4 --dp 2 --tokens 3,2 --policy legacy"),
    ("two_stage_moe_dp_reduce_scatter_legacy", "layer output FULL -> attention rows, legacy with allow_reduce_scatter (DeepSeek) and MAX_LEN: dp_reduce_scatter at the layer's end",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --policy legacy"),
    ("two_stage_moe_dp_scatter_legacy_sum_len", "the same with SUM_LEN: the MoE all-reduces, then dp_scatter copies the slot",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --dp-padding sum_len --policy legacy"),
    ("two_stage_moe_rs_declared", "declared, boundary_reduction rs with MAX_LEN: dp_reduce_scatter carried to the next attention input",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --reduction rs"),
    ("two_stage_moe_rsv_declared", "declared, boundary_reduction rsv with moe_ep == attn_dp: reduce_scatterv carried to the next attention input (an engine finding: its one size per DP shard cannot fit the 4-rank tp group)",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --ep 2 --tokens 3,2 --reduction rsv"),
    ("two_stage_a2a_dense_then_sparse", "a2a MoE after first-k dense layers (DeepSeek): FFN input #5 RS(attn_tp), the first sparse layer slices the residual, the next receives it sliced; attention input on local rows: add+norm, AG(attn_tp); the last layer's _gather",
     f"--pattern '*-*E*E' {TWO} --tp 4 --ep 4 --a2a deepep"),
    ("two_stage_a2a_sparse_then_dense", "a dense FFN after a layer whose FFN ran on local rows gathers the residual over attention TP first (_gather_hidden_states_and_residual step 2)",
     f"--pattern '*E*-' {TWO} --tp 4 --ep 4 --a2a deepep"),
    ("two_stage_a2a_dp", "a2a MoE under DP attention (attn_tp 2): RS(attn_tp) to local rows, no DP collectives",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --ep 4 --a2a deepep --tokens 3,2"),
    ("two_stage_idle_rank", "an idle DP rank (0 tokens) takes part in every collective",
     f"--pattern '*-*-' {TWO} --tp 4 --dp 2 --tokens 0,3"),
    ("two_stage_pp_cut", "a pipeline cut between decoder layers: the FFN completes before the send (terminal at the cut)",
     f"--pattern '*-|*E' {TWO} --pp 2 --tp 2"),
    ("two_stage_pp_cut_a2a", "a pipeline cut after an FFN on local rows: hidden and residual sent on local rows",
     f"--pattern '*E|*E' {TWO} --pp 2 --tp 2 --ep 2 --a2a deepep"),
    ("two_stage_mtp", "the nextn (MTP) decoder layer: eh_proj input, zero residual, marked last",
     f"--pattern '*-*E/*E' {TWO} --tp 2"),
    ("two_stage_capture", "aux hidden-state capture before layers 1 and 2: after the entry completes the carried sum",
     f"--pattern '*-*-*-' {TWO} --tp 2 --capture 2,4"),
    ("two_stage_capture_local", "capture when the layer input is on local rows: snapshot the slice, then AG(attn_tp)",
     f"--pattern '*E*E*E' {TWO} --tp 2 --ep 2 --a2a deepep --capture 2"),
    ("falcon_parallel_mixer", "Falcon-H1: attention || Mamba-2 summed into one attn-TP partial, completed by the MLP input",
     f"--pattern 'P-P-' {TWO} --tp 2"),
    ("qwen3_next_mixers", "Qwen3-Next: Gated DeltaNet and gated attention layers, every FFN sparse",
     f"--pattern 'GE*E' {TWO} --tp 2"),
    ("two_stage_dense_fully_dp", "fully-DP dense FFNs (moe_dense_tp_size 1): FFN input #5 RS(attn_tp) to local rows, replicated weights, no sum owed; the next attention input gathers the normed rows",
     f"--pattern '*-*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --dense-tp 1"),
    ("two_stage_input_scattered", "input-scattered attention (§6.5, MLA with q_lora_rank, extend): layer 0 reduce-scatters the embedding's vocab-shard partial, later layers tp_reduce_scatter the FFN's sum; add+norm on the slice, the latent gather over TP in the attention; the FFN input adds the residual slice into the sum, one AR(tp); the FFN leaves its TP sum to the next reduce-scatter (rs+rsv)",
     f"--pattern '*-*E' {TWO} --tp 2 --tokens 4 --mode extend --input-scattered"),
    ("two_stage_input_scattered_pp_cut", "input-scattered across a pipeline cut: the FFN's TP partial is sent unreduced and the next stage reduce-scatters it once",
     f"--pattern '*-|*E' {TWO} --pp 2 --tp 2 --tokens 4 --mode extend --input-scattered"),
    ("two_stage_ln_sp", "LayerNorm SP (§6.5 SEQUENCE_PARALLEL, extend): every stage on SGLang's padded equal shards (tp chunks of ceil(M/tp) rows, shard_token_rows), its column linear all-gathers them (narrowed to M) and its row linear reduce-scatters (M padded) with the plain collectives; boundaries only add and norm; the final norm runs on the shards and maybe_exit_gather gathers its output",
     f"--pattern '*-*-' {TWO} --tp 2 --tokens 3 --mode extend --ln-sp"),
    ("two_stage_cp_decode", "attention CP on a decode batch (not sharded over CP): the CP ranks hold the same rows; a GQA FFN never leaves its sum (may_leave is false under GQA CP), so every FFN exit all-reduces",
     f"--pattern '*-*-' {TWO} --tp 4 --cp 2 --tokens 3"),
    ("two_stage_cp_mla_interleave", "MLA prefill CP on a CP-sharded extend batch as _deepseek_family_overrides runs it (deepep, ep = tp, moe_dense_tp_size 1, attn_cp = tp // dp; interleave, 5 tokens over cp=2, shards padded to 4 rows): add+norm on the shard, the fully-DP dense FFN and the deepep MoE run on the shard (no FFN gather, no sum owed); the model boundary gathers the final output over attn_cp and reorders it onto sequence rows",
     f"--pattern '*-*E' {TWO} --tp 2 --cp 2 --ep 2 --a2a deepep --dense-tp 1 --tokens 5 --mode extend"),
    ("two_stage_cp_gqa_zigzag", "GQA prefill CP on a CP-sharded extend batch (zigzag, 130 tokens over cp=2: blocks 33,33,32,32, CP rank r holds blocks r and 3-r, shards of 65 padded to 68; attn_tp=2): fused AR(attn_tp)+add+norm on the shard, all-gather over the MoE-CP group (moe_dp, aliased to attn_cp) at each FFN entry, AR(tp) on the gathered rows and the take-back slice at its exit; the model boundary gathers the final output over attn_cp and reorders it onto sequence rows (cp_gather_after_forward)",
     f"--pattern '*-*-' {TWO} --tp 4 --cp 2 --tokens 130 --mode extend"),
    ("two_stage_cp_gqa_zigzag_dp", "GQA prefill CP under attention DP (tp 8, attn_dp 2, attn_cp 2, attn_tp 2; tokens 130,0): DP shard 0 is CP-sharded, the idle shard 1 stays replicated; the FFN entry's DP gather takes the all-reduce path with cp_shard_counts (each CP shard's token rows at its offset, --lower-dp), the exit all-reduces and dp_cp_take_back_output takes back the own CP shard; the final CP gather lands on cp_gathered rows",
     f"--pattern '*-*-' {TWO} --tp 8 --dp 2 --cp 2 --tokens 130,0 --mode extend", "--lower-dp"),
    ("two_stage_naive", "naive: every stage completes its own sum at its exit",
     f"--pattern '*-*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --policy naive"),
    # Two-batch overlap (tbo.h; research note B1-B4).
    ("two_stage_tbo_deepep_dp", "TBO, DeepSeek-like first-k dense then sparse, a2a deepep, attn_dp 2 (tokens 3,2, MAX_LEN 4 rows a shard: halves of tokens 1,1 and 2,1 on tbo_padded_len rows 2,2 and 4,4): the dense layer runs whole and completes at its exit; split of hidden and residual on attention rows; the sparse layers per half, decode order (A two chunks ahead, then alternating); merge of the halves' rows; the final norm on the merged tensor",
     f"--pattern '*-*E*E' {TWO} --tp 4 --dp 2 --ep 4 --a2a deepep --tokens 3,2 --tbo"),
    ("two_stage_tbo_none_dp", "TBO without an a2a backend under DP attention (attn_dp 2), extend (delta 0): each half's DP gathers and returns sized by the half's tokens, its attention rows padded to attn_tp (SUM_LEN parent 4,2 rows: A 2,2, B 4,2) (--lower-dp); an engine finding: a half's gather has no global DP buffer (global_dp_buffer_len None)",
     f"--pattern '*-*E*E' {TWO} --tp 4 --dp 2 --tokens 3,2 --tbo --mode extend", "--lower-dp"),
    ("two_stage_tbo_pp", "TBO under pp 2: the first stage runs whole and sends; the last stage (first_k_dense_replace inside it) receives the whole batch (5 tokens padded to 6 rows), splits (A 2 rows, B 4), runs the halves and merges before the final norm; no half crosses the cut",
     f"--pattern '*-*-|*-*E*E' {TWO} --pp 2 --tp 2 --ep 2 --a2a deepep --tbo --tokens 5"),
    ("two_stage_tbo_cp_dp", "TBO of a decode batch under attention CP and DP attention as MLA prefill CP runs (deepep, ep = tp, fully-DP dense FFNs; tp 4, attn_dp 2, attn_cp 2, attn_tp 1; tokens 3,2, MAX_LEN 3 rows a shard: halves of tokens 1,1 and 2,1 on rows 1,1 and 2,2): the CP replicas (ranks 0,1 and 2,3) hold their DP shard whole and split it alike; each half's MoE dispatches and combines over moe_ep, no DP gather and no CP move",
     f"--pattern '*-*E*E' {TWO} --tp 4 --dp 2 --cp 2 --ep 4 --a2a deepep --dense-tp 1 --tokens 3,2 --tbo"),
    # The DP ops lowered to SGLang's collectives (seam plan --lower-dp; dp_gather.h).
    ("dp_lowered_max_len_replicate", "MAX_LEN, attn_tp 2, a shard of 3 tokens (aligned to 4) and an idle one: both already run 4 rows (prepare_mlp_sync_batch padded the inputs), so no pad; zero on attention-TP rank 1, reduce-scatter over attn_tp into M/a = 2 rows, all-gather over tp into 8; dp_scatter copies the 4-row slot, no trim",
     "--pattern 'M-M' --tp 4 --dp 2 --tokens 3,0", "--lower-dp"),
    ("dp_lowered_sum_len_partial", "SUM_LEN partial order, aligned entries 4 and 2 (the shards already run their aligned entry: no pad, no trim): zero the 6-row buffer, every attention-TP rank writes its slot (offsets 0 and 4), all-reduce over tp",
     f"--pattern '*-*-' {TWO} --tp 4 --dp 2 --tokens 3,1 --dp-padding sum_len", "--lower-dp"),
    ("dp_lowered_reduce_scatter", "dp_reduce_scatter with attn_tp 2: reduce-scatter over tp into the 1/tp chunk, all-gather over attn_tp back to the 4 padded rows the shard runs (no trim)",
     f"--pattern '*E*E' {TWO} --tp 4 --dp 2 --tokens 3,0 --reduction rs", "--lower-dp"),
]

STAMP = "# GENERATED by tools/gen_goldens.py: do not edit. Regenerate: python3 tools/gen_goldens.py"


def main():
    seam = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tools", "seam")
    os.makedirs(OUT, exist_ok=True)
    wanted = set()
    for name, pins, args, *plan_only in CASES:
        full = f"plan {args} --rank all" + "".join(f" {a}" for a in plan_only)
        run = subprocess.run(f"{seam} {full}", shell=True, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"gen_goldens.py: `seam {full}` exited {run.returncode}: {run.stderr.strip()}")
        check = subprocess.run(f"{seam} check {args}", shell=True, capture_output=True, text=True)
        # A golden pins a plan that holds, or one that is SGLang's own fault
        # (an engine finding, docs/engine-findings.md): its pins say which.
        finding = check.returncode == 1 and "ENGINE FINDING" in check.stdout
        if check.returncode != 0 and not (finding and "engine finding" in pins):
            sys.exit(f"gen_goldens.py: `seam check {args}` does not hold:\n{check.stdout}")
        path = os.path.join(OUT, name + ".txt")
        wanted.add(name + ".txt")
        with open(path, "w") as f:
            f.write(f"{STAMP}\n# pins: {pins}\n# args: {full}\n{run.stdout}")
    for stale in set(os.listdir(OUT)) - wanted:
        os.remove(os.path.join(OUT, stale))
    print(f"wrote {len(CASES)} golden plans into {OUT}")


if __name__ == "__main__":
    main()
