// The judges' geometry (judge_geometry.h), written from the engine's rules
// (docs/modelling/sglang.md) without the planner's helpers: positions and
// group sizes from initialize_model_parallel's layout, the DP buffer from
// dp_attention.py's padding, the CP shards from layers/cp/, the local split
// from tensor_split or layernorm_sp.shard_token_rows.
#include "seam/sim/replay/judge_geometry.h"

#include <algorithm>

namespace seam {

namespace {

/// A rank's place (parallel_state.py, initialize_model_parallel @0005973a84f7):
/// every group but pp lives in one TP block of tp ranks; attention TP is
/// contiguous, attention CP strides attn_tp, a DP shard is attn_tp * attn_cp ranks.
struct Place {
  int pp, dp, cp, tp_in_attn;
};
Place placeOf(const ParallelConfig& k, int rank) {
  const int atp = k.tp / (k.attn_dp * k.attn_cp);
  const int l = rank % k.tp;
  return {rank / k.tp, l / (atp * k.attn_cp), (l / atp) % k.attn_cp, l % atp};
}

int sizeOf(const ParallelConfig& k, Axis axis) {
  switch (axis) {
    case Axis::kTp:
      return k.tp;
    case Axis::kAttnTp:
      return k.tp / (k.attn_dp * k.attn_cp);
    case Axis::kAttnCp:
      return k.attn_cp;
    case Axis::kAttnDp:
      return k.attn_dp;
    case Axis::kMoeEp:
      return k.moe_ep;
    case Axis::kMoeTp:
      return k.tp / (k.moe_ep * k.moe_dp);
    case Axis::kMoeDp:
      // _MOE_DP is the attention-CP group when attn_cp > moe_dp (the MoE-CP alias).
      return std::max(k.moe_dp, k.attn_cp);
    case Axis::kPp:
      return k.pp;
  }
  return 1;
}

int roundUp(int n, int m) { return m <= 1 ? n : (n + m - 1) / m * m; }

/// DpPaddingMode.get_dp_padding_mode (sglang.md, DP gathers): extend batches
/// SUM_LEN, except a hybrid (single-stage) model with an idle DP rank; decode
/// keeps the requested mode; without DP attention nothing is padded.
DpPadding paddingOf(const Case& c) {
  if (c.config.attn_dp == 1 || c.flags.mode != ForwardMode::kExtend) return c.flags.dp_padding;
  const bool idle = std::count(c.batch.tokens.begin(), c.batch.tokens.end(), 0) > 0;
  return c.model.family == LayerFamily::kSingleStage && idle ? DpPadding::kMaxLen
                                                             : DpPadding::kSumLen;
}

/// The CP layout of the batch (layers/cp/, _deepseek_family_overrides): two-stage
/// stacks on an extend batch with attn_cp > 1; MLA interleaves when attn_tp ==
/// attn_dp == 1, GQA zigzags; a batch no shard of which is long enough is replicated.
CpLayout cpLayoutOf(const Case& c) {
  const int cp = c.config.attn_cp;
  if (c.model.family == LayerFamily::kSingleStage || c.flags.mode != ForwardMode::kExtend ||
      cp <= 1)
    return CpLayout::kReplicated;
  const bool mla = c.model.shape.q_lora_rank > 0;
  const CpLayout layout = mla ? CpLayout::kInterleave : CpLayout::kZigzag;
  bool any = false;
  for (int t : c.batch.tokens) any = any || judgeCpShards(layout, t, cp);
  if (!any) return CpLayout::kReplicated;
  if (mla && !(sizeOf(c.config, Axis::kAttnTp) == 1 && c.config.attn_dp == 1))
    return CpLayout::kReplicated;
  return layout;
}

/// pad_logical_token_to_physical: a CP shard's physical rows. Interleave: the
/// longest shard (ceil(B / cp)) rounded up to cp; zigzag: the longest pair of
/// blocks (2cp blocks of B / 2cp, the first B % 2cp one longer) rounded up to 2cp.
int cpShardRowsOf(CpLayout layout, int tokens, int cp) {
  if (layout == CpLayout::kInterleave) return roundUp((tokens + cp - 1) / cp, cp);
  const int n = 2 * cp;
  auto block = [&](int b) { return tokens / n + (b < tokens % n ? 1 : 0); };
  int longest = 0;
  for (int c = 0; c < cp; ++c) longest = std::max(longest, block(c) + block(n - 1 - c));
  return roundUp(longest, n);
}

/// `held`: each shard's attention rows where fixed (a TBO child's), else empty.
JudgeRows rowsOf(const Case& c, const std::vector<int>& tokens, DpPadding padding, CpLayout cp,
                 LocalSplit split, AttentionPad pad, const std::vector<int>& held = {}) {
  const ParallelConfig& k = c.config;
  const int world = k.pp * k.tp, atp = sizeOf(k, Axis::kAttnTp), acp = k.attn_cp;
  const int D = k.attn_dp;
  // _dp_gather's buffer: every entry aligned to attn_tp under DP attention;
  // MAX_LEN D slots of the longest, SUM_LEN the sum.
  // A TBO child's entry is the tbo_padded_len its tensor holds.
  auto entry = [&](int d) {
    if (D == 1) return tokens[d];
    return held.empty() ? roundUp(tokens[d], atp) : held[d];
  };
  int longest = 0, sum = 0;
  for (int d = 0; d < D; ++d) {
    longest = std::max(longest, entry(d));
    sum += entry(d);
  }
  const int dp_buffer = D > 1 && padding == DpPadding::kMaxLen ? D * longest : sum;
  JudgeRows out;
  out.count.assign(world, {});
  out.dp_local.assign(world, 0);
  // _pad_inputs_to_size: under the DP buffer's padding every shard runs the
  // longest aligned entry (an idle shard too).
  auto attention = [&](int r) {
    const int d = placeOf(k, r).dp, b = tokens[d];
    if (judgeCpShards(cp, b, acp)) return cpShardRowsOf(cp, b, acp);
    if (!held.empty()) return held[d];
    if (pad == AttentionPad::kAlignedEntry) return roundUp(b, atp);
    return pad == AttentionPad::kDpBuffer ? longest : b;
  };
  auto local = [&](int r) {
    const int i = placeOf(k, r).tp_in_attn;
    const int n = attention(r);
    if (split == LocalSplit::kPaddedEqual) return (n + atp - 1) / atp;
    // torch.tensor_split: the first n % atp take one more
    return n / atp + (i < n % atp ? 1 : 0);
  };
  const int mep = k.moe_ep, mtp = sizeOf(k, Axis::kMoeTp);
  for (int r = 0; r < world; ++r) {
    auto& row = out.count[r];
    const int b = tokens[placeOf(k, r).dp];
    const bool sharded = judgeCpShards(cp, b, acp);
    row[static_cast<int>(RowKind::kAttention)] = attention(r);
    row[static_cast<int>(RowKind::kLocal)] = local(r);
    row[static_cast<int>(RowKind::kSequence)] = b;
    // set_dp_buffer_len's local length: the shard's entry of the padded
    // global_num_tokens (every entry the longest under MAX_LEN).
    const bool max_len = D > 1 && padding == DpPadding::kMaxLen;
    out.dp_local[r] = D == 1 ? b : max_len ? longest : entry(placeOf(k, r).dp);
    row[static_cast<int>(RowKind::kCpGathered)] = sharded ? acp * attention(r) : 0;
    row[static_cast<int>(RowKind::kFull)] = D > 1     ? dp_buffer
                                            : sharded ? acp * attention(r)
                                                      : attention(r);
    // The expert-parallel group: ranks of one moe_ep * moe_tp block sharing a MoE-TP position.
    const int base = r / k.tp * k.tp, l = r % k.tp;
    int dispatched = 0;
    for (int e = 0; e < mep; ++e)
      dispatched += local(base + l / (mep * mtp) * mep * mtp + l % mtp + e * mtp);
    row[static_cast<int>(RowKind::kDispatched)] = dispatched;
  }
  return out;
}

/// The group a stage's weights are split over (its output's owed sum): mixers'
/// o_proj/out_proj over attn_tp; dense MLPs over tp (dense_tp_size = tp), or
/// replicated under moe_dense_tp_size 1 in two-stage layers; an a2a MoE over
/// moe_ep; a MoE's post-experts reduction group (tp when EP and MoE-TP
/// reductions merge with moe_dp 1, else moe_ep when > 1, else moe_tp).
int weightAxisOf(const Case& c, LayerKind kind) {
  const ParallelConfig& k = c.config;
  Axis axis = Axis::kAttnTp;
  if (isMixer(kind)) {
    axis = Axis::kAttnTp;
  } else if (kind == LayerKind::kDenseMlp) {
    if (c.model.family != LayerFamily::kSingleStage && c.flags.dense_tp1) return kNoAxis;
    axis = Axis::kTp;
  } else if (c.flags.a2a != A2aBackend::kNone) {
    axis = Axis::kMoeEp;
  } else if (k.moe_ep > 1 && sizeOf(k, Axis::kMoeTp) > 1 && k.moe_dp == 1) {
    axis = Axis::kTp;
  } else {
    axis = k.moe_ep > 1 ? Axis::kMoeEp : Axis::kMoeTp;
  }
  return sizeOf(k, axis) > 1 ? static_cast<int>(axis) : kNoAxis;
}

std::vector<JudgeStage> stagesOf(const Case& c) {
  std::vector<JudgeStage> out;
  const Pattern& p = c.model.pattern;
  const int spl = c.model.stagesPerLayer(), pp = c.config.pp;
  const int n0 = static_cast<int>(p.layers.size());
  for (int stack = 0; stack < (p.mtp.empty() ? 1 : 2); ++stack) {
    const auto& kinds = stack == 0 ? p.layers : p.mtp;
    const int n = static_cast<int>(kinds.size());
    for (int s = 0; s < n; ++s) {
      JudgeStage st;
      st.stack = stack;
      st.kind = kinds[s];
      st.weight_axis = weightAxisOf(c, kinds[s]);
      st.shards =
          st.weight_axis == kNoAxis ? 1 : sizeOf(c.config, static_cast<Axis>(st.weight_axis));
      if (stack == 1) {
        st.pp_rank = pp - 1;  // the MTP step runs after the last stage
      } else if (!p.cuts.empty()) {
        st.pp_rank = static_cast<int>(
            std::count_if(p.cuts.begin(), p.cuts.end(), [s](int cut) { return cut <= s; }));
      } else {
        // Even split by decoder layer, the last pipeline stage taking the remainder.
        const int per = std::max(1, n0 / spl / pp);
        st.pp_rank = std::min(s / spl / per, pp - 1);
      }
      st.terminal = s == n - 1;
      // LongCat-Flash (longcat_flash.py): the MoE (stage 1 of 5) is merged
      // after mlp1's sum; mlp0 (stage 2) reads the MoE's normed input.
      if (c.model.family == LayerFamily::kBranchMerge && stack == 0) {
        if (s % spl == 1) st.joins_at = std::min(s + spl - 1, n);
        if (s % spl == 2) st.reads_norm_of = s - 1;
      }
      out.push_back(st);
    }
  }
  return out;
}

}  // namespace

bool judgeCpShards(CpLayout layout, int tokens, int cp) {
  // can_apply of InterleaveCPStrategy: tokens >= cp; of ZigzagCPStrategy: max(128, 2cp).
  if (cp <= 1) return false;
  if (layout == CpLayout::kInterleave) return tokens >= cp;
  if (layout == CpLayout::kZigzag) return tokens >= std::max(128, 2 * cp);
  return false;
}

JudgeGeometry judgeGeometry(const Case& c) {
  JudgeGeometry g;
  g.padding = paddingOf(c);
  g.cp_layout = cpLayoutOf(c);
  // Equal chunks of a batch padded to attn_tp: LayerNorm SP pads its rows
  // (layernorm_sp.shard_token_rows); ForwardBatch.prepare_mlp_sync_batch
  // (model_executor/forward_batch_info.py, index id 54487805952) ceil-aligns
  // every DP entry to attn_tp and pads the inputs, and runs whenever
  // require_mlp_sync (utils.py, index id 47117906): DP attention, an a2a
  // backend or moe_dense_tp_size 1; prepare_attn_tp_scatter_input pads an
  // input-scattered batch to tp. A CP-sharded batch splits its physical shard.
  const bool sp = c.model.family != LayerFamily::kSingleStage && c.flags.layernorm_sp;
  const bool synced = c.config.attn_dp > 1 || c.flags.a2a != A2aBackend::kNone || c.flags.dense_tp1;
  const bool padded = sp || synced || c.flags.input_scattered;
  g.local_split = padded && g.cp_layout == CpLayout::kReplicated ? LocalSplit::kPaddedEqual
                                                                 : LocalSplit::kTensorSplit;
  // ForwardBatch.prepare_mlp_sync_batch (model_executor/forward_batch_info.py
  // @003bbaf9), on every synced batch: _pad_inputs_to_size pads the shard's
  // inputs to its entry of the attn_tp-aligned token list (under MAX_LEN every
  // DP entry is the longest), so the whole forward runs on the padded rows.
  // Not for a CP-sharded batch. Under two-batch overlap the parent is padded
  // so before the split; its children's rows follow. Unsynced, the eager
  // forward's prepare_attn_tp_scatter_input pads an input-scattered batch's
  // inputs to a multiple of tp (= attn_tp: no DP attention, no CP there).
  const bool pads = (synced || c.flags.input_scattered) && g.cp_layout == CpLayout::kReplicated;
  const bool dp_buffer = pads && c.config.attn_dp > 1 && g.padding == DpPadding::kMaxLen;
  g.attention_pad = dp_buffer ? AttentionPad::kDpBuffer
                    : pads    ? AttentionPad::kAlignedEntry
                              : AttentionPad::kTokens;
  g.row_bytes = static_cast<std::int64_t>(c.model.shape.hidden > 0 ? c.model.shape.hidden : 1) * 2;
  g.stages = stagesOf(c);
  g.rows[0] = rowsOf(c, c.batch.tokens, g.padding, g.cp_layout, g.local_split, g.attention_pad);
  if (c.flags.tbo) {
    // compute_split_seq_index: child A takes half of each shard's unpadded
    // batch. TboForwardBatchPreparer.prepare_raw cuts the padded parent there
    // (B keeps the parent's padding rows), and filter_batch pads each child
    // to tbo_padded_len = ceil(len / attn_tp) * attn_tp
    // (batch_overlap/two_batch_overlap.py @0099dee6).
    // The parent's rows: the attention rows of any rank of shard d (a batch
    // split is never CP-sharded: the rows it holds unsharded).
    const int atp = sizeOf(c.config, Axis::kAttnTp);
    const JudgeRows unsharded = g.cp_layout == CpLayout::kReplicated
                                    ? g.rows[0]
                                    : rowsOf(c, c.batch.tokens, g.padding, CpLayout::kReplicated,
                                             g.local_split, g.attention_pad);
    std::vector<int> a, b;
    for (size_t d = 0; d < c.batch.tokens.size(); ++d) {
      const int t = c.batch.tokens[d];
      const int parent =
          unsharded.count[d * atp * c.config.attn_cp][static_cast<int>(RowKind::kAttention)];
      g.tbo_split.push_back(t / 2);
      a.push_back(t / 2);
      b.push_back(t - t / 2);
      g.tbo_rows[0].push_back(roundUp(t / 2, atp));
      g.tbo_rows[1].push_back(roundUp(parent - t / 2, atp));
    }
    g.rows[1] = rowsOf(c, a, g.padding, g.cp_layout, g.local_split, g.attention_pad, g.tbo_rows[0]);
    g.rows[2] = rowsOf(c, b, g.padding, g.cp_layout, g.local_split, g.attention_pad, g.tbo_rows[1]);
  }
  return g;
}

namespace {

std::string stageText(const JudgeStage& s) {
  return std::string("kind ") + layerChar(s.kind) + ", weights over " +
         (s.weight_axis == kNoAxis ? std::string("none")
                                   : std::string(axisName(static_cast<Axis>(s.weight_axis)))) +
         " (" + std::to_string(s.shards) + " shards), pp rank " + std::to_string(s.pp_rank) +
         (s.terminal ? ", terminal" : "") + ", reads the norm of " +
         std::to_string(s.reads_norm_of) + ", joins at " + std::to_string(s.joins_at);
}

}  // namespace

std::vector<GeometryDisagreement> planGeometryDisagreements(const Plan& plan,
                                                            const JudgeGeometry& g) {
  std::vector<GeometryDisagreement> out;
  if (plan.padding != g.padding) {
    out.push_back({"padding", "the plan pads " + std::string(paddingName(plan.padding)) +
                                  " but the engine pads this case " +
                                  std::string(paddingName(g.padding))});
  }
  auto cpName = [](CpLayout l) {
    return l == CpLayout::kReplicated   ? "replicated"
           : l == CpLayout::kInterleave ? "interleave"
                                        : "zigzag";
  };
  if (plan.cp_layout != g.cp_layout) {
    out.push_back({"cp_layout", std::string("the plan lays the batch over attn_cp ") +
                                    cpName(plan.cp_layout) + " but the engine lays it " +
                                    cpName(g.cp_layout)});
  }
  auto splitName = [](LocalSplit s) {
    return s == LocalSplit::kTensorSplit ? "tensor_split" : "padded equal shards";
  };
  if (plan.local_split != g.local_split) {
    out.push_back({"local_split", std::string("the plan splits attention rows by ") +
                                      splitName(plan.local_split) + " but the engine by " +
                                      splitName(g.local_split)});
  }
  if (plan.attention_pad != g.attention_pad) {
    auto padName = [](AttentionPad p) {
      return p == AttentionPad::kTokens     ? "the shard's tokens"
             : p == AttentionPad::kDpBuffer ? "the padded local DP buffer"
                                            : "the shard's entry aligned to attn_tp";
    };
    out.push_back({"attention_pad", std::string("the plan's attention rows hold ") +
                                        padName(plan.attention_pad) + " but the engine's hold " +
                                        padName(g.attention_pad)});
  }
  if (!plan.tbo_split.empty() && plan.tbo_split != g.tbo_split) {
    out.push_back({"tbo_split", g.tbo_split.empty()
                                    ? "the plan splits the batch for two-batch overlap but the "
                                      "case does not ask for it"
                                    : "the plan splits the DP shards at other tokens than "
                                      "compute_split_seq_index (half of each shard)"});
  }
  if (plan.stages.size() != g.stages.size()) {
    out.push_back({"stages", "the plan has " + std::to_string(plan.stages.size()) +
                                 " stages but the case's pattern has " +
                                 std::to_string(g.stages.size())});
    return out;
  }
  for (size_t i = 0; i < g.stages.size(); ++i) {
    const StageInfo& p = plan.stages[i];
    const JudgeStage& j = g.stages[i];
    const JudgeStage mine{p.stack,   p.kind,     p.weight_axis,   p.shards,
                          p.pp_rank, p.terminal, p.reads_norm_of, p.joins_at};
    const bool same = mine.stack == j.stack && mine.kind == j.kind &&
                      mine.weight_axis == j.weight_axis && mine.shards == j.shards &&
                      mine.pp_rank == j.pp_rank && mine.terminal == j.terminal &&
                      mine.reads_norm_of == j.reads_norm_of && mine.joins_at == j.joins_at;
    if (same) continue;
    out.push_back({"stages[" + std::to_string(i) + "]",
                   "the plan's stage " + std::to_string(i) + " is " + stageText(mine) +
                       "; from the case it is " + stageText(j)});
    break;
  }
  return out;
}

}  // namespace seam
