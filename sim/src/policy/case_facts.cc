// What the planner reads off a case before it plans a boundary: the row
// layout over attention CP, which axes' groups coincide, the group each
// stage's output owes its sum over, the fusion gate and the pipeline stages.
#include <algorithm>
#include <array>
#include <vector>

#include "plan_builder.h"

namespace seam::policy_detail {
namespace {

/// The batch takes the CONTEXT_PARALLEL variant (prefill CP shards its
/// tokens): an extend batch the CP strategy can apply to (layers/cp/). Zigzag
/// (GQA) needs every sequence to hold at least max(128, 2cp) tokens; seam's
/// batch is one sequence per DP shard. Interleave (MLA) needs sum >= cp.
bool cpShardsBatch(const Case& c, bool mla) {
  const int cp = c.config.attn_cp;
  if (c.flags.mode != ForwardMode::kExtend || cp <= 1) return false;
  for (int tokens : c.batch.tokens) {
    if (mla ? tokens >= cp : tokens >= std::max(kZigzagMinTokens, 2 * cp)) return true;
  }
  return false;
}

/// The rows a case's batch takes over attention CP on a CP-sharded extend
/// batch of a two-stage stack: interleaved for MLA with attn_tp = attn_dp = 1
/// (any other MLA CP batch is refused by attn_cp_gather's assert), zigzag for
/// GQA (moe_dp is 1 or attn_cp: serverArgsMoeDp), under attention DP too: there
/// each DP shard long enough is sharded (rows.h), the others stay replicated.
CpLayout cpLayoutOf(const Case& c) {
  const bool mla = c.model.shape.q_lora_rank > 0;
  if (c.model.family == LayerFamily::kSingleStage || !cpShardsBatch(c, mla))
    return CpLayout::kReplicated;
  if (mla)
    return c.config.attnTp() == 1 && c.config.attn_dp == 1 ? CpLayout::kInterleave
                                                           : CpLayout::kReplicated;
  return CpLayout::kZigzag;
}

/// How a DP shard's attention rows split into local rows. The engine pads the
/// batch to a multiple of attn_tp before the forward wherever local rows can
/// occur: `prepare_mlp_sync_batch` (model_executor/forward_batch_info.py,
/// copy in index id 54487805952) aligns every DP entry, the single one without
/// DP attention too, and pads the inputs to it; model_runner calls it whenever
/// the scheduler synced token counts, which `require_mlp_sync` (utils.py,
/// index id 47117906) asks for under DP attention, an a2a backend or
/// moe_dense_tp_size 1; else `prepare_attn_tp_scatter_input` pads an
/// input-scattered batch to tp. The attn_tp collectives then move equal
/// chunks of a padded shard; LayerNorm SP pads its own (shard_token_rows). A
/// CP-sharded batch keeps the tensor_split of its physical shard.
LocalSplit localSplitOf(const Case& c, CpLayout cp, bool ln_sp) {
  if (cp != CpLayout::kReplicated) return LocalSplit::kTensorSplit;
  const bool mlp_sync =
      c.config.attn_dp > 1 || c.flags.a2a != A2aBackend::kNone || c.flags.dense_tp1;
  return ln_sp || mlp_sync || c.flags.input_scattered ? LocalSplit::kPaddedEqual
                                                      : LocalSplit::kTensorSplit;
}

}  // namespace

PlanBuilder::PlanBuilder(const Case& c, const Schema& schema, PolicyKind policy)
    : two_stage_(c.model.family != LayerFamily::kSingleStage),
      branch_(c.model.family == LayerFamily::kBranchMerge),
      input_scattered_(c.flags.input_scattered),
      ln_sp_(two_stage_ && c.flags.layernorm_sp),
      legacy_(policy == PolicyKind::kLegacy),
      naive_(policy == PolicyKind::kNaive),
      c_(c),
      schema_(schema),
      cfg_(c.config),
      padding_(resolvePadding(c)),
      cp_layout_(cpLayoutOf(c)),
      local_split_(localSplitOf(c, cp_layout_, ln_sp_)),
      attention_pad_(resolveAttentionPad(c, padding_, cp_layout_)),
      rows_(c.config, c.batch, padding_, cp_layout_, local_split_, attention_pad_),
      T_(cfg_.tp),
      D_(cfg_.attn_dp),
      a_(cfg_.attnTp()),
      total_tokens_(c.batch.total()),
      spl_(c.model.stagesPerLayer()),
      cp_(two_stage_ && cfg_.attn_cp > 1),
      mla_(c.model.shape.q_lora_rank > 0),
      cp_batch_(cp_ && cpShardsBatch(c, mla_)),
      same_groups_(sameGroups(cfg_)) {
  stacks_.push_back(c.model.pattern.layers);
  if (!c.model.pattern.mtp.empty()) stacks_.push_back(c.model.pattern.mtp);
}

std::array<std::uint8_t, kAxisCount> PlanBuilder::sameGroups(const ParallelConfig& cfg) {
  std::array<std::vector<int>, kAxisCount> groups;
  for (Axis a : kAllAxes) groups[static_cast<int>(a)] = groupMembers(cfg, a, 0);
  std::array<std::uint8_t, kAxisCount> same{};
  for (int x = 0; x < kAxisCount; ++x) {
    for (int y = 0; y < kAxisCount; ++y) {
      if (groups[x] == groups[y]) same[x] = static_cast<std::uint8_t>(same[x] | (1U << y));
    }
  }
  return same;
}

// post_experts_reduction_group(): tp when the EP and MoE-TP reductions merge
// (moe_ep > 1, moe_tp > 1, moe_dp == 1); else the EP group if moe_ep > 1;
// else the MoE-TP group.
Axis PlanBuilder::postExpertsAxis() const {
  if (cfg_.moe_ep > 1 && cfg_.moeTp() > 1 && cfg_.moe_dp == 1 &&
      !schema_.on(Decision::kPostExpertsNotMerged)) {
    return Axis::kTp;
  }
  if (cfg_.moe_ep > 1) return Axis::kMoeEp;
  return Axis::kMoeTp;
}

// apply_flashinfer_allreduce_fusion: available, no DP attention, tp > 1,
// 0 < batch_size <= 2048. Its callers (complete_attention_input,
// complete_ffn_input: layers/communicator/fusions/allreduce.py @060c48f7) pass
// hidden_states.shape[0], the rows the tensor holds: without DP attention
// the attention rows, padded to attn_tp on a synced batch (rows.h's
// AttentionPad::kAlignedEntry), so 2047 tokens at attn_tp 6 are 2052 rows.
bool PlanBuilder::fusable() const {
  // Under DP attention only a flipped gate fuses; it keeps the batch's tokens.
  const int rows = D_ == 1 ? rows_.shardTokens(0) : total_tokens_;
  // The flipped gates are asked only where they decide (attn_dp > 1, 2049 rows).
  return mayFuse() && c_.flags.fusion && T_ > 1 && rows > 0 &&
         (D_ == 1 || schema_.on(Decision::kFusionIgnoresDpAttention)) &&
         (rows <= kFuseMaxTokens ||
          (rows == kFuseMaxTokens + 1 && schema_.on(Decision::kFusionTokenBoundMoved)));
}

std::int8_t PlanBuilder::weightAxis(LayerKind k) const {
  Axis axis;
  if (isMixer(k)) {
    // o_proj / out_proj are row-parallel over attn_tp
    axis = schema_.on(Decision::kMixerWeightsOverTp) ? Axis::kTp : Axis::kAttnTp;
  } else if (denseOnLocal(k)) {
    return kNoAxis;  // replicated weights on every rank
  } else if (k == LayerKind::kDenseMlp) {
    axis = Axis::kTp;  // dense_tp_size = tp
  } else if (a2aMoe(k)) {
    axis = Axis::kMoeEp;  // dispatch/combine over the EP group
  } else {
    axis = postExpertsAxis();
  }
  return axisSize(axis) > 1 ? static_cast<std::int8_t>(axis) : kNoAxis;
}

std::vector<int> PlanBuilder::ppOfStages() const {
  const int n0 = static_cast<int>(stacks_[0].size());
  std::vector<int> pp_of(n0, 0);
  const auto& cuts = c_.model.pattern.cuts;
  if (!cuts.empty()) {
    for (int i = 0, k = 0; i < n0; ++i) {
      while (k < static_cast<int>(cuts.size()) && cuts[k] <= i) ++k;
      pp_of[i] = k;
    }
  } else {
    // By decoder layer: both stages of a two-stage layer on one pipeline stage.
    const int per = n0 / spl_ / cfg_.pp;
    for (int i = 0; i < n0; ++i) pp_of[i] = std::min(i / spl_ / std::max(per, 1), cfg_.pp - 1);
  }
  return pp_of;
}

}  // namespace seam::policy_detail
