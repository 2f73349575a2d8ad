// The declared policy (PolicyKind::kDeclared, layer_boundary semantics) where
// the policies differ: when a stage may leave its sum for the next entry to
// complete (a mixer's TP sum; an FFN's sum, _sum_deferral_allowed, and under
// prefill CP LayerCommunicator._declared_sides), and the exit policy's
// dp_step, which picks by the --boundary-reduction strategy the step that
// returns a sum over DP. Legacy narrows the deferrals (legacy_policy.cc);
// naive leaves no sum (naive_policy.cc).
#include "plan_builder.h"

namespace seam::policy_detail {

// A mixer feeding a mixer (no FFN between them, not terminal) leaves its TP
// sum to the next entry when TP is more than one rank and there is no DP
// attention. Legacy (skip_reduce = feeds_mlp_layer or fuse_mlp_allreduce)
// leaves it only when the fused kernel takes it.
bool PlanBuilder::mixerMayCarry(const Sides& s) const {
  const bool owes = s.group != kNoAxis;
  return handsOnPartials() && owes && !s.final_norm && !s.consumer_ffn && !s.terminal && T_ > 1 &&
         D_ == 1 && (!legacy_ || legacyMayLeave(static_cast<std::int8_t>(Axis::kTp)));
}

// An FFN defers its sum to the next stage's entry unless it is terminal or
// the batch is empty, whatever kind of stage comes next: factories.py
// (_ffn_decl) and exit.py (_select_ffn_completion) @060c48f7 ask nothing of the
// consumer. Legacy: the FFN skips its all-reduce only for the fused kernel of
// the next mixer's input (should_fuse_mlp_allreduce_with_next_layer), never
// under DP attention.
bool PlanBuilder::ffnMayDefer(const Sides& s, std::int8_t owed) const {
  // _sum_deferral_allowed: not (ep > 1 and moe_tp > 1 and not mergeable).
  const bool hybrid_ep_tp = s.producer == LayerKind::kMoe && cfg_.moe_ep > 1 && cfg_.moeTp() > 1 &&
                            postExpertsAxis() != Axis::kTp;
  return handsOnPartials() && T_ > 1 && !s.terminal && !s.final_norm &&
         !(legacy_ && s.consumer_ffn) && !hybrid_ep_tp && total_tokens_ > 0 &&
         mayLeave(s.producer) && (!legacy_ || legacyMayLeave(owed));
}

// The GQA CP moves have no reduce-scatter, so an FFN output may leave its sum
// only when the FFN runs on CP shards (on_cp_shards: a MoE with moe_dp ==
// attn_cp). MLA CP may leave it on any batch that is not CP-sharded. Without
// CP: always.
bool PlanBuilder::mayLeave(LayerKind ffn) const {
  if (!cp_ || mla_) return true;
  return onCpShards(ffn);
}

// may_reduce_scatterv = use_rsv and may_leave; may_reduce_scatter = use_rs
// and may_scatter. kDpScatter: none picked (AR + dp_scatter).
OpKind PlanBuilder::strategyDpStep(LayerKind producer, bool owes_tp) const {
  const BoundaryReduction strategy = c_.flags.reduction;
  const bool strategy_rsv = mayLeave(producer) && (strategy == BoundaryReduction::kRsv ||
                                                   strategy == BoundaryReduction::kRsRsv);
  const bool strategy_rs = mayLeave(producer) && useRs();
  // The naive baseline makes no call that cannot run: the engine's
  // reduce_scatterv takes one size per DP shard, which fits the TP group only
  // when every DP shard is one rank.
  const bool rsv_fits = !naive_ || T_ == D_;
  if (strategy_rsv && c_.flags.a2a == A2aBackend::kNone && cfg_.moe_ep == D_ && owes_tp && rsv_fits)
    return OpKind::kReduceScatterv;  // should_use_dp_reduce_scatterv
  if (strategy_rs && padding_ == DpPadding::kMaxLen && owes_tp) return OpKind::kDpReduceScatter;
  return OpKind::kDpScatter;
}

}  // namespace seam::policy_detail
