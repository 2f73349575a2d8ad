// Layers off the stack's straight line: LongCat-Flash's branch layer, whose
// MoE runs on a copy of the layer's normed input and is merged back after the
// second MLP (models/longcat_flash.py, layer_boundary/adapters/branch.py), and
// the MTP step, a second stack whose input is the first stack's output.
#include <cassert>

#include "plan_builder.h"

namespace seam::policy_detail {

// The boundaries around the MoE branch, by the role of the producer in the
// layer. Rows move by move_rows (gather over attention TP, then DP; cut over
// DP, then attention TP). Without an a2a backend the MoE and both MLPs run
// on shared rows (attention rows, or under DP attention the gathered full
// rows) and the layer hands on attention rows. With one
// (is_moe_input_scattered_across_dp_ranks) the MoE reads local rows and
// hands on local rows, except in the model's last layer (output_rows).
PlanBuilder::Hand PlanBuilder::branchBoundary(int from, LayerKind consumer, bool final_norm,
                                              std::int8_t group) {
  const int role = from % spl_;
  const bool a2a = a2aMoe(LayerKind::kMoe);
  // The rows the MoE boundary prepares (incoming.need); never CP-sharded: refuse().
  const RowKind moe_rows = a2a ? localRows() : sharedFfnRows(LayerKind::kMoe);
  // The rows the MoE's layer hands on (outgoing.need): the last layer hands
  // attention rows to the final norm; under a2a the others hand on local rows.
  const int layer_end = from - role + spl_ - 1;  // mlp1 of this layer
  const bool last_layer = layer_end == static_cast<int>(stacks_[0].size()) - 1;
  const bool hands_on_local = a2a && !last_layer && a_ > 1;
  if (role == 0) {
    // attn0 into the MoE boundary: prepare (under a2a, the reduce-scatter onto
    // local rows), then the branch takes a copy of the normed input
    // (self.mlp(hidden_states.clone())).
    Hand h0 = twoStageIntoFfn(consumer);
    h0.entry.push_back({OpKind::kAdd, Tensor::kBranch, kNoAxis, moe_rows, moe_rows});
    return h0;
  }
  if (role == 1) return branchOutput(last_layer, moe_rows, group);
  assert(role == 4 && "the other branch-layer boundaries are ordinary two-stage ones");
  return mergeBranch(from, final_norm, hands_on_local, group);
}

// branch_output: the MoE's complete output moved to the rows the layer
// hands on. Without a2a LongcatFlashMoE completes it with its TP
// all-reduce, and under DP the move cuts ATTN_DP (dp_scatter of this
// shard's slot). With a2a the combine completed it and the all-reduce is
// skipped (get_moe_a2a_backend().is_none() is false); only the last layer
// gathers it over attention TP.
PlanBuilder::Hand PlanBuilder::branchOutput(bool last_layer, RowKind moe_rows, std::int8_t group) {
  Hand h;
  const std::int8_t attn_tp = static_cast<std::int8_t>(Axis::kAttnTp);
  h.handoff = {moe_rows, SumGroup::kNone, Completer::kNone, true};
  if (a2aMoe(LayerKind::kMoe)) {
    if (last_layer && a_ > 1) {
      h.exit.push_back(
          {OpKind::kAllGather, Tensor::kBranch, attn_tp, RowKind::kLocal, RowKind::kAttention});
    }
    // branch_input: mlp0 (a dense FFN on shared rows) reads the input the
    // MoE boundary read, gathered over attention TP, then DP; its residual
    // is gathered back to attention rows (the dense FFN's residual_to).
    if (a_ > 1) {
      h.entry.push_back(
          {OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
    }
    if (D_ > 1) {
      h.entry.push_back({OpKind::kDpGatherReplicate, Tensor::kHidden,
                         static_cast<std::int8_t>(Axis::kTp), RowKind::kAttention, RowKind::kFull});
    }
    if (a_ > 1) {
      h.entry.push_back(
          {OpKind::kAllGather, Tensor::kResidual, attn_tp, RowKind::kLocal, RowKind::kAttention});
    }
    residual_local_ = false;
    return h;
  }
  // mlp0 reads the input the MoE boundary read (branch_input: the same rows).
  if (group != kNoAxis)
    h.exit.push_back({OpKind::kAllReduce, Tensor::kBranch, group, moe_rows, moe_rows});
  if (D_ > 1)
    h.exit.push_back(
        {OpKind::kDpScatter, Tensor::kBranch, kNoAxis, RowKind::kFull, RowKind::kAttention});
  return h;
}

// merge_branch: export completes mlp1's outstanding sum (an all-reduce;
// under DP its return over DP as the exit policy picks it), both hidden
// state and residual move to the rows the MoE's layer hands on (under a2a
// a cut to this rank's attention-TP slice), then the MoE contribution is
// added; the next layer's input (or the final norm) adds and norms.
PlanBuilder::Hand PlanBuilder::mergeBranch(int from, bool final_norm, bool hands_on_local,
                                           std::int8_t group) {
  Hand h;
  h.handoff = {hands_on_local ? RowKind::kLocal : RowKind::kAttention, SumGroup::kNone,
               Completer::kNone, true};
  const LayerKind producer = stacks_[0][from];
  if (D_ > 1) {
    dpCompleteSteps(h.exit, producer, group);
  } else if (group != kNoAxis) {
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
  }
  if (hands_on_local) {
    h.exit.push_back(
        {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
    h.exit.push_back(
        {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  h.exit.push_back({OpKind::kAdd, Tensor::kBranch, kNoAxis, h.handoff.rows, h.handoff.rows});
  if (hands_on_local && !final_norm) {
    // The next attention input from local rows: add+norm on the slice, then
    // the normed rows gathered over attention TP; the residual stays local.
    h.entry.push_back(
        {OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp),
                       RowKind::kLocal, RowKind::kAttention});
    h.residual_after = RowKind::kLocal;
    residual_local_ = true;
    return h;
  }
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  return h;
}

// MTP input: eh_proj over [enorm(embedding), hnorm(final hidden)] is the
// step's input; the draft layers start without a residual.
// Under prefill CP the draft model's forward shards its inputs again
// (cp_shard_model_inputs shards spec_info.hidden_states): this rank's
// CP shard of the gathered final hidden state.
void PlanBuilder::emitMtpInput(int r) {
  const int stack = 1;
  if (cp_layout_ != CpLayout::kReplicated && cpShardedRank(r)) {
    emit(r, stack, -1, Phase::kCompute,
         {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kSequence, RowKind::kAttention});
  }
  emit(r, stack, -1, Phase::kCompute, {OpKind::kCompute, Tensor::kHidden, kNoAxis});
  if (!two_stage_) {
    // models/nemotron_h_mtp.py @008b79d2: eh_proj is a ColumnParallelLinear;
    // without DP attention gather_output all-gathers its columns over tp;
    // under DP it is split over attention TP and the forward all-gathers the
    // hidden dimension there. A one-rank group returns its input.
    const Axis columns = D_ > 1 ? Axis::kAttnTp : Axis::kTp;
    if (axisSize(columns) > 1) {
      emit(r, stack, -1, Phase::kCompute,
           {OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(columns),
            RowKind::kAttention, RowKind::kAttention});
    }
  }
  // The zero residual lies on the rows the first MTP layer reads (local
  // rows for an all-to-all MoE), like the hidden state it is added to.
  // LayerNorm SP slices onto local rows even when attn_tp == 1.
  const RowKind res_rows = ln_sp_                                      ? RowKind::kLocal
                           : a2aMoe(stacks_[1][0]) || input_scattered_ ? localRows()
                                                                       : RowKind::kAttention;
  emit(r, stack, -1, Phase::kCompute,
       {OpKind::kZeroFill, Tensor::kResidual, kNoAxis, res_rows, res_rows});
}

}  // namespace seam::policy_detail
