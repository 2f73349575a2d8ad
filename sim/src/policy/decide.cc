// The decide step: the engine's refusals, the stages' facts and every
// boundary decided once (rank-independent), recorded in the plan; emission
// (emission.cc) then instantiates the boundaries per rank.
#include <algorithm>
#include <string>
#include <vector>

#include "plan_builder.h"

namespace seam::policy_detail {

Status PlanBuilder::decide() {
  LayerRange tbo_layers;
  if (Status st = refuse(cp_batch_, &tbo_layers); !st) return st;
  // can_run_tbo (B2): every split is a number (tbo.h), so every batch runs
  // split, except a CP-sharded batch, which the runtime gate keeps whole
  // (research note B7). A batch that is not CP-sharded under attn_cp > 1
  // (decode; an extend batch too short to shard) splits: every attn_cp
  // replica holds the DP shard's rows whole and cuts them at the same token
  // (TboDPAttentionPreparer, per rank from its local batch), and each half
  // runs the whole batch's boundaries on its rows (the halves' builders
  // decide on their own batches, which are not CP-sharded either).
  if (!tbo_layers.empty() && !cp_batch_) tbo_first_layer_ = tbo_layers.first;

  plan_.policy = std::string(policyName(policy()));
  plan_.source = c_;
  plan_.padding = padding_;
  plan_.cp_layout = cp_layout_;
  plan_.local_split = local_split_;
  plan_.attention_pad = attention_pad_;
  plan_.ranks.assign(world(), {});
  const size_t stage_count = c_.model.pattern.layers.size() + c_.model.pattern.mtp.size();
  plan_.boundaries.reserve(stage_count + 2);
  plan_.stages.reserve(stage_count);

  const std::vector<int> pp_of = ppOfStages();
  declareStages(pp_of);
  decideBoundaries(pp_of);
  for (const Decided& d : decided_) {
    for (const Step& s : d.hand.entry) rank0_steps_ = rank0_steps_ || s.attn_tp_rank0_only;
  }
  return Status::ok();
}

void PlanBuilder::declareStages(const std::vector<int>& pp_of) {
  const int last_pp = cfg_.pp - 1;
  for (int stack = 0; stack < static_cast<int>(stacks_.size()); ++stack) {
    const auto& kinds = stacks_[stack];
    const int n = static_cast<int>(kinds.size());
    for (int s = 0; s < n; ++s) {
      StageInfo info;
      info.stack = static_cast<std::uint8_t>(stack);
      info.layer = s / spl_;
      info.kind = kinds[s];
      info.weight_axis = weightAxis(kinds[s]);
      info.shards = info.weight_axis == kNoAxis ? 1 : axisSize(static_cast<Axis>(info.weight_axis));
      info.pp_rank = stack == 0 ? pp_of[s] : last_pp;
      // The MTP stack's layer (stack 1) is an ordinary two-stage layer.
      const bool branch_layer = branch_ && stack == 0;
      if (branch_layer && s % spl_ == 1)
        info.joins_at = std::min(s + spl_ - 1, n);                    // merged after mlp1's sum
      if (branch_layer && s % spl_ == 2) info.reads_norm_of = s - 1;  // mlp0 reads the MoE's input
      info.terminal = s == n - 1;
      plan_.stages.push_back(info);
    }
  }
}

void PlanBuilder::decideBoundaries(const std::vector<int>& pp_of) {
  const int last_pp = cfg_.pp - 1;
  decided_.reserve(plan_.stages.size() + stacks_.size());
  for (int stack = 0; stack < static_cast<int>(stacks_.size()); ++stack) {
    const int n = static_cast<int>(stacks_[stack].size());
    auto ppOf = [&](int s) { return stack == 0 ? pp_of[s] : last_pp; };
    for (int from = -1; from < n; ++from) {
      const int to = from + 1;
      const bool cut = from >= 0 && to < n && ppOf(from) != ppOf(to);
      // The producer before the TBO split completes its sum (the split moves
      // rows only, B3): terminal, like a pipeline cut.
      const bool split_edge = stack == 0 && from >= 0 && to == tboFirstStage();
      Hand h = boundary(stack, from, to, cut || split_edge);
      if (to == n && cp_layout_ != CpLayout::kReplicated) gatherCpShardsAfterForward(h.entry, D_);
      plan_.boundaries.push_back(boundaryRecord(stack, from, to, cut, h));
      const int consumer_pp = to < n ? ppOf(to) : last_pp;
      const int producer_pp = from >= 0 ? ppOf(from) : consumer_pp;
      decided_.push_back({stack, from, to, cut, producer_pp, consumer_pp, h});
    }
  }
}

// The final output stays on the CP shard; the model boundary all-gathers the
// shards over attn_cp and puts the tokens back in sequence order (a local
// reorder, expressed as a slice onto sequence rows). Under attention DP full
// rows are the DP buffer: the shards land on cp_gathered rows, and only DP
// shards the strategy sharded gather.
void PlanBuilder::gatherCpShardsAfterForward(StepList& entry, int attn_dp) {
  const RowKind gathered = attn_dp > 1 ? RowKind::kCpGathered : RowKind::kFull;
  Step gather{OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnCp),
              RowKind::kAttention, gathered};
  Step reorder{OpKind::kSlice, Tensor::kHidden, kNoAxis, gathered, RowKind::kSequence};
  gather.cp_sharded_only = reorder.cp_sharded_only = true;
  entry.push_back(gather);
  entry.push_back(reorder);
}

// The exit side is what the producer's exit does; the entry side is what the
// consumer's entry was built to expect (they differ only under mutants).
Boundary PlanBuilder::boundaryRecord(int stack, int from, int to, bool cut, const Hand& h) {
  Boundary b;
  b.stack = static_cast<std::uint8_t>(stack);
  b.from = from;
  b.to = to;
  b.pipeline_cut = cut;
  b.entry = h.handoff;
  b.exit = h.handoff;
  const bool exit_completes = std::any_of(h.exit.begin(), h.exit.end(), [](const Step& s) {
    return reduces(s.kind) || s.kind == OpKind::kDpScatter;
  });
  if (exit_completes && h.handoff.completer == Completer::kCarried) {
    b.exit.owes = SumGroup::kNone;
    b.exit.completer = Completer::kNone;
    b.exit.rows = RowKind::kAttention;
  }
  b.exit_steps.reserve(h.exit.size());
  for (const Step& s : h.exit) b.exit_steps.push_back(s.kind);
  b.entry_steps.reserve(h.entry.size());
  for (const Step& s : h.entry) b.entry_steps.push_back(s.kind);
  return b;
}

}  // namespace seam::policy_detail
