// The boundaries of two-stage decoder layers (attention then FFN: the classic
// tables of serving-boundaries.md §5 for legacy, the declared equivalents of
// §6 for declared; DeepSeek-V3, Qwen3, Qwen3-Next, and Falcon-H1, whose
// parallel mixer is one attn-TP partial and so plans as any mixer, §10): the
// attention output into the FFN, an FFN on local rows into the next layer,
// and the variants that move rows off the ordinary layout: prefill CP's
// shards, LayerNorm SP's padded shards and input-scattered attention's slices.
#include "plan_builder.h"

namespace seam::policy_detail {

// prepare_mlp of a two-stage layer: the attention output (an attn-TP partial
// when attn_tp > 1) into the FFN. Classic get_fn rows #1, #3, #5 and Gen D
// _select_entry_step rows 2, 6a, 6b, 6c, 6d; the residual follows.
PlanBuilder::Hand PlanBuilder::twoStageIntoFfn(LayerKind consumer) {
  Hand h;
  const std::int8_t attn_tp = a_ > 1 ? static_cast<std::int8_t>(Axis::kAttnTp) : kNoAxis;
  const bool owes = attn_tp != kNoAxis;
  h.handoff = {RowKind::kAttention, owes ? SumGroup::kAttnTp : SumGroup::kNone,
               owes ? Completer::kConsumerEntry : Completer::kNone, true};
  if (owes && !handsOnPartials()) {
    // Naive: o_proj reduces its own output.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, attn_tp});
  }
  const bool partial_in = owes && handsOnPartials();
  if (input_scattered_) {
    // _tp_sum_with_residual_read: the residual slice into this rank's rows of
    // the attention partial, one all-reduce over TP, which is the new
    // residual; then the norm.
    h.entry.push_back(
        {OpKind::kAdd, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kAttention});
    h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp)});
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    residual_local_ = false;
    return h;
  }
  if (ffnOnLocal(consumer)) {
    // _scatter_hidden_states_and_residual: RS(attn_tp) completes and slices;
    // the residual is sliced unless it already lies on local rows.
    if (a_ > 1) {
      Step scatter{partial_in ? OpKind::kReduceScatter : OpKind::kSlice, Tensor::kHidden,
                   partial_in ? attn_tp : kNoAxis, RowKind::kAttention, RowKind::kLocal};
      if (partial_in) scatter.site = EngineSite::kAttnTpReduceScatter;
      h.entry.push_back(scatter);
      if (!residual_local_ && !schema_.on(Decision::kResidualNotSliced)) {
        h.entry.push_back(
            {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      }
      residual_local_ = true;
    }
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    h.residual_after = localRows();
    return h;
  }
  if (residual_local_) {
    // _gather_hidden_states_and_residual step 2: a dense FFN after a layer whose
    // FFN ran on local rows gathers the residual back over attention TP.
    h.entry.push_back(
        {OpKind::kAllGather, Tensor::kResidual, attn_tp, RowKind::kLocal, RowKind::kAttention});
    residual_local_ = false;
  }
  if (D_ == 1) {
    intoFfnOnAttentionRows(h, consumer, attn_tp, partial_in);
  } else {
    intoFfnOverDp(h, partial_in);
  }
  return h;
}

void PlanBuilder::intoFfnOnAttentionRows(Hand& h, LayerKind consumer, std::int8_t attn_tp,
                                         bool partial_in) {
  if (!partial_in) {
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  } else if (fusable()) {
    Step fused{OpKind::kArAddNorm, Tensor::kHidden, attn_tp};
    fused.site = EngineSite::kFfnInputFusion;
    h.entry.push_back(fused);
  } else {
    h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, attn_tp});
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  }
  if (gathersOverCp(consumer)) {
    // Entry row "gathered == {CP}" (_then_attn_cp_gather /
    // _then_moe_cp_gather): complete and norm on the own shard as above,
    // then gather the shards (equal, padded) in CP rank order; the
    // residual stays on the shard.
    h.entry.push_back(
        {OpKind::kAllGather, Tensor::kHidden, cpGatherAxis(), RowKind::kAttention, RowKind::kFull});
  }
}

void PlanBuilder::intoFfnOverDp(Hand& h, bool partial_in) {
  const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
  if (partial_in) {
    // The partial order (classic #3 with attn_dp > 1; Gen D row 6c: two-stage
    // models read after the DP gather): attn-TP rank 0 adds the residual,
    // dp_gather_partial completes the attn-TP sum while gathering, the
    // residual comes back by dp_scatter, the norm runs on full rows.
    const bool every_rank = schema_.on(Decision::kDpGatherSumResidualEveryRank);
    Step add{OpKind::kAdd, Tensor::kHidden};
    add.attn_tp_rank0_only = !every_rank;
    h.entry.push_back(add);
    h.entry.push_back(
        {OpKind::kDpGatherPartial, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kFull});
    h.entry.push_back(
        {OpKind::kDpScatter, Tensor::kResidual, kNoAxis, RowKind::kFull, RowKind::kAttention});
    h.entry.push_back({OpKind::kNorm, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kFull});
    return;
  }
  // attn_tp == 1 (or naive): the input is complete. Declared (row 6d):
  // add+norm locally, dp_gather_replicate. Legacy (classic, attn_tp == 1):
  // the norm runs before the gather, which is still dp_gather_partial.
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  h.entry.push_back({legacy_ ? OpKind::kDpGatherPartial : OpKind::kDpGatherReplicate,
                     Tensor::kHidden, tp, RowKind::kAttention, RowKind::kFull});
}

// An FFN on local rows (a2a MoE: dispatch/combine inside) hands on complete
// local rows. The next attention input adds and norms on the slice and
// gathers the normed rows (classic §5.2 _scattered_to_tp_attn_full; Gen D
// row 5); the residual stays on local rows. The last layer gathers first
// (_gather: hs += residual, AG(attn_tp)) and the final norm has no residual.
// A pipeline cut sends both on local rows (the stage end is not the model's
// last layer), and the receiving stage's attention input reads them as here.
PlanBuilder::Hand PlanBuilder::twoStageOutOfLocalFfn(LayerKind consumer, bool final_norm,
                                                     bool to_attention) {
  Hand h;
  const std::int8_t attn_tp = static_cast<std::int8_t>(Axis::kAttnTp);
  h.handoff = {localRows(), SumGroup::kNone, Completer::kNone, true};
  if (final_norm) {
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
    h.exit.push_back({OpKind::kAdd, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    if (a_ > 1)
      h.exit.push_back(
          {OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
    residual_local_ = false;
    if (to_attention) {
      addEntryRead(h.entry, consumer, false, /*residual_present=*/false, false);
    } else {
      h.entry.push_back({OpKind::kNorm, Tensor::kHidden});
    }
    return h;
  }
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
  if (a_ > 1)
    h.entry.push_back(
        {OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
  h.residual_after = localRows();
  return h;
}

// Exit row R - P == {CP} on a CP-sharded batch (may_leave is false: no
// deferral): MLA's attn_cp_reduce_scatter_output when the strategy allows
// a reduce-scatter, else AR over the owed
// group and the take-back slice (attn_cp_take_back_output, or GQA's
// moe_cp_take_back_output: narrow(rank * max, rows[rank]) of the padded
// shards, which are all the physical length). _select_exit_move reduce-
// scatters only over a sum group whose ranks are attn_cp's, else raises;
// under interleave CP (attn_tp = attn_dp = 1, moe_dp = 1: serverArgsMoeDp)
// every TP FFN's sum group spans the whole TP group, which is attn_cp.
PlanBuilder::Hand PlanBuilder::cpShardedFfnExit(const Sides& s, std::int8_t owed) {
  Hand h;
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
  const std::int8_t cp = static_cast<std::int8_t>(Axis::kAttnCp);
  if (mayFuse() && mla_ && useRs() && owed != kNoAxis) {
    h.exit.push_back(
        {OpKind::kReduceScatter, Tensor::kHidden, cp, RowKind::kFull, RowKind::kAttention});
  } else {
    if (owed != kNoAxis)
      h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, owed, RowKind::kFull, RowKind::kFull});
    h.exit.push_back(
        {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kAttention});
  }
  addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
  return h;
}

// The stage's row linear reduce-scattered its output: complete local rows.
PlanBuilder::Hand PlanBuilder::layerNormSpBoundary(const Sides& s) {
  Hand h;
  h.handoff = {RowKind::kLocal, SumGroup::kNone, Completer::kNone, true};
  if (s.final_norm) {
    // The model's final norm (add + RMSNorm) runs on the SP shards; the
    // LogitsProcessor's maybe_exit_gather then all-gathers them over TP and
    // narrows to the M tokens (sp_exit_gather) before the LM head.
    h.entry.push_back(
        {OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp),
                       RowKind::kLocal, RowKind::kAttention});
    residual_local_ = false;
    return h;
  }
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
  h.residual_after = RowKind::kLocal;
  return h;
}

// factories.py (_ffn_decl, INPUT_SCATTERED) and exit.py
// (_ffn_leaves_sum_to_reduce_scatter) @060c48f7: the FFN leaves its TP sum
// for the next layer's tp_reduce_scatter when the boundary reduction is rs
// or rs+rsv and the FFN is not the model's last (a pipeline cut is not
// terminal: the partial crosses it and the receiver completes it, as
// TestBoundaryIntegrations' pipeline test states). Otherwise the exit
// all-reduces and the next entry takes the completed step, a slice
// (prepare.py _consumer_step @96bbe18f).
PlanBuilder::Hand PlanBuilder::inputScatteredFfnExit(const Sides& s) {
  Hand h;
  const bool rs = useRs() && !s.final_norm && s.group != kNoAxis &&
                  sameGroup(static_cast<Axis>(s.group), Axis::kTp);
  h.handoff = {RowKind::kAttention, rs ? SumGroup::kTp : SumGroup::kNone,
               rs ? Completer::kCarried : Completer::kNone, true};
  if (!rs && s.group != kNoAxis) h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, s.group});
  inputScatteredEntry(h.entry, rs, true);
  h.residual_after = RowKind::kLocal;
  return h;
}

void PlanBuilder::inputScatteredEntry(StepList& steps, bool owes_tp,
                                      bool residual_on_attention_rows) {
  const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
  if (owes_tp) {
    steps.push_back(
        {OpKind::kReduceScatter, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kLocal});
  } else {
    steps.push_back(
        {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  if (residual_on_attention_rows) {
    steps.push_back(
        {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  steps.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
  // The attention takes its slice; its QKV hook gathers the latents over tp
  // after the projection (emitCompute).
  residual_local_ = true;
}

}  // namespace seam::policy_detail
