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

}  // namespace seam::policy_detail
