// The legacy policy (PolicyKind::kLegacy): the rules before stage
// declarations (serving-boundaries §9.2 (3); for two-stage layers the
// classic tables of §5), where they differ from the declared policy's. The
// boundaries branch to these; the other legacy differences are one-line
// choices beside the declared ones (the DP gather after a complete input in
// two_stage.cc) and the refusals of what the classic communicator lacks.
#include "plan_builder.h"

namespace seam::policy_detail {

// A stage leaves its sum to the next layer only for the fused kernel of that
// layer's input, never under DP attention.
bool PlanBuilder::legacyMayLeave(std::int8_t owed) const {
  return D_ == 1 && owed != kNoAxis && fusedEntryCompletes(static_cast<Axis>(owed));
}

// An FFN whose input is already complete folds it into the residual and
// all-reduces a zero update (previous_leaves_attention_partial is false),
// then adds and norms as if the update were a partial.
void PlanBuilder::legacyCompleteInputRead(StepList& steps) const {
  const Axis group = D_ > 1 ? Axis::kAttnTp : Axis::kTp;
  steps.push_back({OpKind::kAdd, Tensor::kResidual});
  steps.push_back({OpKind::kZeroFill, Tensor::kHidden});
  if (axisSize(group) > 1 && D_ == 1 && fusable()) {
    steps.push_back({OpKind::kArAddNorm, Tensor::kHidden, static_cast<std::int8_t>(group)});
    return;
  }
  if (axisSize(group) > 1) {
    steps.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(group),
                     RowKind::kAttention, RowKind::kAttention,
                     /*skip_if_idle_shard=*/D_ > 1});
  }
  steps.push_back({OpKind::kAddNorm, Tensor::kHidden});
}

// Classic _scatter_hidden_states (Gen A): dp_reduce_scatter when the model
// allows it and the padding is MAX_LEN, else the FFN all-reduces and
// dp_scatter copies this shard's slot; no reduce_scatterv before Gen B.
OpKind PlanBuilder::classicDpStep(bool owes_tp) const {
  if (c_.model.allow_reduce_scatter && padding_ == DpPadding::kMaxLen && owes_tp)
    return OpKind::kDpReduceScatter;
  return OpKind::kDpScatter;
}

// The parent (layers/communicator.py CommunicateSummableTensorPairFn.
// _scatter_hidden_states, haosenwang1018/sglang @1a66b018): the varlen
// reduce_scatterv where should_use_dp_reduce_scatterv holds (a2a none,
// moe_ep == attn_dp), else dp_reduce_scatter_tensor under MAX_LEN (every
// Nemotron-H FFN passes allow_reduce_scatter, models/nemotron_h.py
// @cdaef07e), else the FFN's all-reduce and dp_scatter. The engine's boundary
// reduction strategy did not exist yet. (The parent does not ask whether the
// sum is owed over the whole TP group; seam keeps that guard, not read for
// moe_dp > 1.)
OpKind PlanBuilder::parentDpStep(bool owes_tp) const {
  if (c_.flags.a2a == A2aBackend::kNone && cfg_.moe_ep == D_ && owes_tp)
    return OpKind::kReduceScatterv;
  if (padding_ == DpPadding::kMaxLen && owes_tp) return OpKind::kDpReduceScatter;
  return OpKind::kDpScatter;
}

// NemotronHMLPLikeDecoderLayer.forward (parent, models/nemotron_h.py
// @cdaef07e): an input that is already reduced (the stack start, or after an
// FFN) is folded into the residual and prepare_mlp gets a zero update; for an
// a2a MoE (SCATTERED mlp mode) prepare_mlp reduce-scatters that update over
// attention TP and splits the residual, then adds and norms on local rows.
void PlanBuilder::legacyA2aCompleteInputRead(StepList& steps) const {
  steps.push_back({OpKind::kAdd, Tensor::kResidual});
  steps.push_back({OpKind::kZeroFill, Tensor::kHidden});
  if (a_ > 1) {
    steps.push_back({OpKind::kReduceScatter, Tensor::kHidden,
                     static_cast<std::int8_t>(Axis::kAttnTp), RowKind::kAttention,
                     RowKind::kLocal});
    // The residual holds the folded input, so it is split whatever came before.
    steps.push_back(
        {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  steps.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
}

// LayerCommunicator.should_fuse_mlp_allreduce_with_next_layer (parent,
// layers/communicator.py @1a66b018) asks is_last_layer (the model's last
// layer) but nothing of the pipeline: a mixer that reduces its own output
// (no FFN follows) or an FFN followed by a mixer fuses into the next layer
// across a cut too. The flag it sets on the tensor
// (_sglang_needs_allreduce_fusion) does not travel in PPProxyTensors, so the
// receiver only adds and norms (models/nemotron_h.py @cdaef07e): as read,
// the sum is never completed.
bool PlanBuilder::legacyCutKeepsFusion(const Sides& s) const {
  if (!legacy_ || two_stage_ || !s.cut || s.final_norm || s.consumer_ffn) return false;
  if (s.group == kNoAxis || !fusable()) return false;
  const bool hybrid_ep_tp = s.producer == LayerKind::kMoe && cfg_.moe_ep > 1 && cfg_.moeTp() > 1 &&
                            postExpertsAxis() != Axis::kTp;
  return !hybrid_ep_tp && !a2aMoe(s.producer);
}

}  // namespace seam::policy_detail
