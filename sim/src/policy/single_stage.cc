// The boundaries of single-stage hybrid layers (Nemotron-H: every stage a
// mixer, a dense MLP or a MoE, serving-boundaries.md §9.2 (5), §9.3), as the
// declared policy plans them (legacy and naive differ only where
// legacy_policy.cc and naive_policy.cc answer): a mixer's output into an FFN,
// into another mixer or into the final norm, and an all-to-all MoE's complete
// local rows. An FFN on shared rows exits as in two-stage layers (boundary.cc).
#include "plan_builder.h"

namespace seam::policy_detail {

// always_partial: the mixer never reduces; the FFN entry completes it. Across
// a pipeline cut the partial is sent unreduced (TestStackEnds).
PlanBuilder::Hand PlanBuilder::mixerIntoFfn(const Sides& s) {
  Hand h;
  const std::int8_t group = s.group;
  h.handoff = {RowKind::kAttention, SumGroup::kAttnTp, Completer::kConsumerEntry, true};
  if (a2aMoe(s.consumer)) {
    const OpKind rs = OpKind::kReduceScatter;
    h.entry.push_back({rs, Tensor::kHidden, group, RowKind::kAttention, RowKind::kLocal});
    if (!schema_.on(Decision::kResidualNotSliced)) {
      h.entry.push_back(
          {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
    }
    h.entry.push_back(
        {OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
  } else if (D_ == 1) {
    if (fusable()) {
      Step fused{OpKind::kArAddNorm, Tensor::kHidden, group};
      fused.site = EngineSite::kFfnInputFusion;
      h.entry.push_back(fused);
    } else {
      h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    }
  } else if (schema_.on(Decision::kDpGatherSumResidualEveryRank)) {
    // Classic partial order, but every attention-TP rank adds the residual.
    h.entry.push_back({OpKind::kAdd, Tensor::kHidden});
    h.entry.push_back({OpKind::kDpGatherPartial, Tensor::kHidden,
                       static_cast<std::int8_t>(Axis::kTp), RowKind::kAttention, RowKind::kFull});
    h.entry.push_back(
        {OpKind::kDpScatter, Tensor::kResidual, kNoAxis, RowKind::kFull, RowKind::kAttention});
    h.entry.push_back({OpKind::kNorm, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kFull});
  } else {
    // Replicate order (reads_before_dp_gather): AR(attn_tp) if rows > 0, add+norm, gather.
    h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, group, RowKind::kAttention,
                       RowKind::kAttention,
                       /*skip_if_idle_shard=*/true});
    addEntryRead(h.entry, s.consumer, false, true, false);
  }
  return h;
}

// Mixer output: attention rows; owes ATTN_TP iff attn_tp > 1.
PlanBuilder::Hand PlanBuilder::mixerExit(const Sides& s) {
  const bool owes = s.group != kNoAxis;
  if (owes && s.consumer_ffn && handsOnPartials()) return mixerIntoFfn(s);
  Hand h;
  const bool carry = mixerMayCarry(s);
  if ((carry || (owes && s.terminal_defers)) && !schema_.on(Decision::kMixerKeepsFusedSum)) {
    // MixerExit defers: UnreducedOutput(tp), completed by the next entry.
    h.handoff = {RowKind::kAttention, SumGroup::kTp, Completer::kCarried, true};
    if (!s.terminal_defers) {
      const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
      if (fusedEntryCompletes(Axis::kTp)) {
        h.entry.push_back(attentionInputFusion(Axis::kTp));
      } else {
        h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, tp});
        h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
      }
      if (!s.final_norm) return h;
    }
    addEntryRead(h.entry, s.consumer, s.final_norm, true, false);
    return h;
  }
  if (carry && schema_.on(Decision::kMixerKeepsFusedSum)) {
    // Mutant: the mixer reduces at its exit *and* hands the sum on as carried.
    h.handoff = {RowKind::kAttention, SumGroup::kTp, Completer::kCarried, true};
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, s.group});
    h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp)});
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    return h;
  }
  // Completed at the mixer's exit.
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
  if (owes) h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, s.group});
  addEntryRead(h.entry, s.consumer, s.final_norm, true, false);
  return h;
}

// Complete local rows after the combine; exit_rows = ATTENTION: add the
// residual into the output, then gather over attention TP.
PlanBuilder::Hand PlanBuilder::localMoeExit(const Sides& s) {
  Hand h;
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
  h.exit.push_back({OpKind::kAdd, Tensor::kHidden, kNoAxis, localRows(), localRows()});
  if (a_ > 1) {
    h.exit.push_back({OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp),
                      RowKind::kLocal, RowKind::kAttention});
  }
  addEntryRead(h.entry, s.consumer, s.final_norm, false, false, /*after_ffn=*/true);
  return h;
}

}  // namespace seam::policy_detail
