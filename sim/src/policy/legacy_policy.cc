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

// Legacy aux capture (serving-boundaries §9.2 (3), TestNemotronAuxCapture):
// before the entry, a copy of the hidden state is all-reduced over the group
// its sum is owed over and the residual added to it; after a mixer with
// attn_tp == 1 the attention all-reduce still runs, over a group of one
// rank (tensor_model_parallel_all_reduce returns at once there; the call
// stays in the call sequence). The declared capture reads the residual after
// the entry instead, which completes the sum once.
StepList PlanBuilder::legacyCapture(int stack, int from, const Hand& h) const {
  StepList steps;
  const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
  steps.push_back({OpKind::kSnapshot, Tensor::kHidden, kNoAxis, rows, rows});
  std::int8_t group = kNoAxis;
  switch (h.handoff.owes) {
    case SumGroup::kAttnTp:
      group = static_cast<std::int8_t>(Axis::kAttnTp);
      break;
    case SumGroup::kTp:
      group = static_cast<std::int8_t>(Axis::kTp);
      break;
    case SumGroup::kMoeOutput:
      group = static_cast<std::int8_t>(postExpertsAxis());
      break;
    default:
      if (from >= 0 && isMixer(stacks_[stack][from]) && a_ == 1)
        group = static_cast<std::int8_t>(Axis::kAttnTp);
      break;
  }
  if (group != kNoAxis) steps.push_back({OpKind::kAllReduce, Tensor::kSnapshot, group, rows, rows});
  if (h.handoff.residual) steps.push_back({OpKind::kAdd, Tensor::kSnapshot, kNoAxis, rows, rows});
  return steps;
}

}  // namespace seam::policy_detail
