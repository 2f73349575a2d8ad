#include "seam/sim/plan/rows.h"

#include <algorithm>
#include <cassert>

#include "seam/sim/plan/dp_gather.h"

namespace seam {

namespace {
constexpr std::string_view kRowKindNames[kRowKindCount] = {
    "none", "attention", "local", "full", "dispatched", "sequence", "cp_gathered"};
}  // namespace

std::string_view rowKindName(RowKind kind) { return kRowKindNames[static_cast<int>(kind)]; }

bool parseRowKind(std::string_view name, RowKind* kind) {
  for (int i = 0; i < kRowKindCount; ++i) {
    if (kRowKindNames[i] == name) {
      *kind = static_cast<RowKind>(i);
      return true;
    }
  }
  return false;
}

namespace {
/// ZigzagCPStrategy.build_metadata: block b of 2cp over a sequence of `tokens`.
int zigzagBlockSize(int tokens, int cp, int b) {
  return tokens / (2 * cp) + (b < tokens % (2 * cp) ? 1 : 0);
}
int zigzagBlockStart(int tokens, int cp, int b) {
  return b * (tokens / (2 * cp)) + std::min(b, tokens % (2 * cp));
}
/// tensor_split(parts)[i] of n rows: the first n % parts positions take one more.
struct Span {
  int start, count;
};
Span tensorSplit(int n, int parts, int i) {
  return {i * (n / parts) + std::min(i, n % parts), n / parts + (i < n % parts ? 1 : 0)};
}
}  // namespace

bool cpShardsTokens(CpLayout layout, int tokens, int cp) {
  // InterleaveCPStrategy.can_apply: sum >= cp; ZigzagCPStrategy.can_apply:
  // every sequence (seam: the DP shard's one) of at least max(128, 2cp).
  switch (layout) {
    case CpLayout::kInterleave:
      return cp > 1 && tokens >= cp;
    case CpLayout::kZigzag:
      return cp > 1 && tokens >= std::max(kZigzagMinTokens, 2 * cp);
    default:
      return false;
  }
}

int cpShardRows(CpLayout layout, int tokens, int cp) {
  // pad_logical_token_to_physical: the longest shard rounded up to the
  // alignment (cp for interleave, 2cp for zigzag's in-sequence split).
  int longest = 0;
  int align = cp;
  if (layout == CpLayout::kInterleave) {
    longest = (tokens + cp - 1) / cp;  // CP rank 0 holds the most
  } else {
    assert(layout == CpLayout::kZigzag && "cpShardRows of a replicated layout");
    align = 2 * cp;
    for (int c = 0; c < cp; ++c) {
      longest = std::max(
          longest, zigzagBlockSize(tokens, cp, c) + zigzagBlockSize(tokens, cp, 2 * cp - 1 - c));
    }
  }
  return (longest + align - 1) / align * align;
}

std::vector<int> cpShardTokens(CpLayout layout, int tokens, int cp, int c) {
  std::vector<int> out;
  const int rows = cpShardRows(layout, tokens, cp);
  out.reserve(rows);
  if (layout == CpLayout::kInterleave) {
    for (int k = 0; k < rows; ++k) out.push_back(c + k * cp < tokens ? c + k * cp : kPaddingRow);
    return out;
  }
  for (int b : {c, 2 * cp - 1 - c}) {
    const int start = zigzagBlockStart(tokens, cp, b);
    for (int t = 0; t < zigzagBlockSize(tokens, cp, b); ++t) out.push_back(start + t);
  }
  out.resize(rows, kPaddingRow);
  return out;
}

// CpLayout::kReplicated: a shard's tokens are split over attn_tp only, so the
// ranks of one attn_cp group hold the same rows.
RowMap::RowMap(const Topology& topology, const Batch& batch, DpPadding padding, CpLayout cp,
               const std::vector<int>* first_tokens, LocalSplit local_split, AttentionPad pad)
    : total_tokens_(batch.total()), padding_(padding), local_split_(local_split) {
  assert((local_split == LocalSplit::kTensorSplit || cp == CpLayout::kReplicated) &&
         "LayerNorm SP's padded shards of a CP-sharded batch");
  assert((pad == AttentionPad::kTokens || cp == CpLayout::kReplicated) &&
         "the DP buffer's padding on a CP-sharded batch");
  const ParallelConfig& config = topology.config();
  const int world = topology.world();
  const int shards = config.attn_dp;
  const int atp = config.attnTp();
  assert(static_cast<int>(batch.tokens.size()) == shards &&
         "one batch entry per attention-DP shard");

  // Tokens are numbered over the DP shards of one TP group; every TP group
  // (pipeline stage) holds the same batch.
  std::vector<int> offset(shards, 0);
  for (int d = 1; d < shards; ++d) offset[d] = offset[d - 1] + batch.tokens[d - 1];
  if (first_tokens != nullptr) offset = *first_tokens;

  // The full rows are the same on every rank of every TP group: each shard's
  // tokens at its slot, then its pad rows (dp_gather.h's geometry).
  const DpGeometry geometry(config, batch, padding, false, CpLayout::kReplicated, pad);
  std::vector<int> full(geometry.globalRows(), kPaddingRow);
  full_slot_.assign(shards, 0);
  for (int d = 0; d < shards; ++d) {
    full_slot_[d] = geometry.slot(d);
    for (int t = 0; t < batch.tokens[d]; ++t) full[geometry.slot(d) + t] = offset[d] + t;
  }
  // Without DP attention the full rows are the attention rows, padded too.
  if (shards == 1)
    full.resize(std::max(geometry.globalRows(), geometry.attentionRows(0)), kPaddingRow);

  for (auto& per_rank : rows_) per_rank.assign(world, {});
  local_offset_.assign(world, 0);
  for (int r = 0; r < world; ++r) {
    const int d = topology.attnDpRank(r);
    const int i = topology.attnTpRank(r);
    const int shard_tokens = batch.tokens[d];
    std::vector<int>& attention = rows_[static_cast<int>(RowKind::kAttention)][r];
    for (int t = 0; t < shard_tokens; ++t) attention.push_back(offset[d] + t);
    // Sequence rows: the shard's tokens in order (CP-sharded: after the model
    // boundary's gather and reorder).
    rows_[static_cast<int>(RowKind::kSequence)][r] = attention;
    attention.resize(geometry.attentionRows(d), kPaddingRow);  // kDpBuffer: the longest entry
    const int held = static_cast<int>(attention.size());

    std::vector<int>& local = rows_[static_cast<int>(RowKind::kLocal)][r];
    if (local_split == LocalSplit::kPaddedEqual) {
      // shard_token_rows: equal chunks of the shard padded to a multiple of attn_tp.
      const int c = paddedLocalRows(held, atp);
      local_offset_[r] = i * c;
      for (int p = i * c; p < (i + 1) * c; ++p)
        local.push_back(p < shard_tokens ? offset[d] + p : kPaddingRow);
      continue;
    }
    const Span split = tensorSplit(held, atp, i);
    local_offset_[r] = split.start;
    for (int p = split.start; p < split.start + split.count; ++p)
      local.push_back(p < shard_tokens ? offset[d] + p : kPaddingRow);
  }

  cp_sharded_.assign(world, 0);
  seq_in_gathered_.assign(world, {});
  if (cp != CpLayout::kReplicated) {
    // Each DP shard the strategy applies to lies over its CP ranks in shards
    // (interleave asserts attn_tp == attn_dp == 1; zigzag may run under DP).
    const int acp = config.attn_cp;
    std::vector<std::vector<int>> gathered(shards);  // per DP shard: its CP shards in CP rank order
    std::vector<std::vector<int>> seq_in(shards);
    for (int d = 0; d < shards; ++d) {
      if (!cpShardsTokens(cp, batch.tokens[d], acp)) continue;
      seq_in[d].assign(batch.tokens[d], 0);
      int slot_row = geometry.slot(d);
      for (int c = 0; c < acp; ++c) {
        std::vector<int> shard = cpShardTokens(cp, batch.tokens[d], acp, c);
        for (int& t : shard) {
          if (t == kPaddingRow) continue;
          seq_in[d][t] = static_cast<int>(gathered[d].size()) + static_cast<int>(&t - shard.data());
          // _cp_shard_rows: the shard's token rows at dp_start + the counts before it.
          if (shards > 1) full[slot_row++] = offset[d] + t;
          t += offset[d];
        }
        gathered[d].insert(gathered[d].end(), shard.begin(), shard.end());
      }
    }
    for (int r = 0; r < world; ++r) {
      const int d = topology.attnDpRank(r);
      if (gathered[d].empty()) continue;
      cp_sharded_[r] = 1;
      const int c = topology.attnCpRank(r);
      const int i = topology.attnTpRank(r);
      const int rows = static_cast<int>(gathered[d].size()) / acp;
      std::vector<int> mine(gathered[d].begin() + c * rows, gathered[d].begin() + (c + 1) * rows);
      // tensor_split of the padded shard over attention TP.
      const Span split = tensorSplit(rows, atp, i);
      local_offset_[r] = split.start;
      rows_[static_cast<int>(RowKind::kLocal)][r].assign(mine.begin() + split.start,
                                                         mine.begin() + split.start + split.count);
      rows_[static_cast<int>(RowKind::kAttention)][r] = std::move(mine);
      rows_[static_cast<int>(RowKind::kCpGathered)][r] = gathered[d];
      seq_in_gathered_[r] = seq_in[d];
    }
  }
  for (int r = 0; r < world; ++r) {
    // Without DP attention the CP shards gathered are the full rows (the
    // MoE-CP gather's); with it the full rows are the DP buffer.
    const bool gathered_are_full = shards == 1 && cp_sharded_[r];
    rows_[static_cast<int>(RowKind::kFull)][r] =
        gathered_are_full ? rows_[static_cast<int>(RowKind::kCpGathered)][r] : full;
  }

  for (int r = 0; r < world; ++r) {
    std::vector<int>& dispatched = rows_[static_cast<int>(RowKind::kDispatched)][r];
    for (int member : topology.groupOf(Axis::kMoeEp, r)) {
      const std::vector<int>& local = rows_[static_cast<int>(RowKind::kLocal)][member];
      dispatched.insert(dispatched.end(), local.begin(), local.end());
    }
  }
}

RowCounts::RowCounts(const ParallelConfig& c, const Batch& batch, DpPadding padding, CpLayout cp,
                     LocalSplit split, AttentionPad pad) {
  const int world = c.world();
  const int T = c.tp, atp = c.attnTp(), acp = c.attn_cp;
  counts_.assign(static_cast<size_t>(world) * kRowKindCount, 0);
  const int full_rows = DpGeometry::globalRows(c, batch, padding);
  dp_local_.assign(world, 0);
  // The rank's tensor_split of its attention rows (under a CP-sharded
  // layout, of its padded CP shard).
  // The rank's attention rows: its shard's tokens, its padded CP shard, or
  // (kDpBuffer) its local DP buffer.
  auto held = [&](int rank) {
    const int d = rank % T / (atp * acp);
    const int bd = batch.tokens[d];
    if (cpShardsTokens(cp, bd, acp)) return cpShardRows(cp, bd, acp);
    if (!batch.rows.empty()) return batch.rows[d];  // a TBO child's tbo_padded_len
    // (MAX_LEN's local rows, whichever mode the plan's DP ops use.)
    if (pad == AttentionPad::kDpBuffer)
      return DpGeometry::localRows(c, batch, DpPadding::kMaxLen, d);
    if (pad == AttentionPad::kAlignedEntry) return dpAlignedTokens(bd, atp);
    return bd;
  };
  auto local = [&](int rank) {
    if (split == LocalSplit::kPaddedEqual) return paddedLocalRows(held(rank), atp);
    return tensorSplit(held(rank), atp, rank % T % atp).count;
  };
  for (int r = 0; r < world; ++r) {
    const int l = r % T;
    const int bd = batch.tokens[l / (atp * acp)];
    int* row = &counts_[static_cast<size_t>(r) * kRowKindCount];
    row[static_cast<int>(RowKind::kAttention)] = held(r);
    row[static_cast<int>(RowKind::kLocal)] = local(r);
    // Without DP attention the full rows are the (padded) attention rows.
    row[static_cast<int>(RowKind::kFull)] = c.attn_dp == 1 ? held(r) : full_rows;
    row[static_cast<int>(RowKind::kSequence)] = bd;
    dp_local_[r] = c.attn_dp == 1 ? bd : DpGeometry::localRows(c, batch, padding, l / (atp * acp));
    if (cpShardsTokens(cp, bd, acp)) {
      const int shard = cpShardRows(cp, bd, acp);
      row[static_cast<int>(RowKind::kCpGathered)] = acp * shard;
      if (c.attn_dp == 1) row[static_cast<int>(RowKind::kFull)] = acp * shard;
    }
    int dispatched = 0;
    for (int m : groupMembers(c, Axis::kMoeEp, r)) dispatched += local(m);
    row[static_cast<int>(RowKind::kDispatched)] = dispatched;
  }
}

DpPadding resolvePadding(const Case& c) {
  // Without DP attention there is no gathered buffer to pad.
  if (c.config.attn_dp == 1) return c.flags.dp_padding;
  // DpPaddingMode.get_dp_padding_mode (reference §4.3): an extend batch with a
  // gather wider than one rank uses SUM_LEN, except for hybrid-SSM models
  // (hybrid_override_pattern present: every single-stage pattern) with an idle
  // DP rank, which get MAX_LEN (dp.max_len_with_idle). A decode batch keeps the
  // requested mode (CUDA graphs run MAX_LEN; eager decode picks by 2*sum >= max*width).
  if (c.flags.mode == ForwardMode::kExtend) {
    const bool hybrid = c.model.family == LayerFamily::kSingleStage;
    return hybrid && c.batch.hasIdleShard() ? DpPadding::kMaxLen : DpPadding::kSumLen;
  }
  return c.flags.dp_padding;
}

AttentionPad resolveAttentionPad(const Case& c, DpPadding padding, CpLayout cp) {
  // prepare_mlp_sync_batch (model_executor/forward_batch_info.py @003bbaf9)
  // runs where the scheduler synced token counts (require_mlp_sync: DP
  // attention, an a2a backend, moe_dense_tp_size 1) and pads the inputs to
  // the shard's entry of the aligned (MAX_LEN: longest) token list.
  // Under two-batch overlap the parent is padded so before its split (each
  // child's own rows: tboHalfBatch). Where the scheduler did not sync,
  // ModelRunner's eager forward calls prepare_attn_tp_scatter_input instead
  // (model_executor/model_runner.py _prepare_eager_forward_batch, index id
  // 54503666834): an input-scattered batch's inputs are padded to a multiple
  // of tp (forward_batch_info.py, index id 54487805952), which is attn_tp
  // there (input-scattered runs without DP attention or CP).
  if (cp != CpLayout::kReplicated) return AttentionPad::kTokens;
  if (c.config.attn_dp > 1 && padding == DpPadding::kMaxLen) return AttentionPad::kDpBuffer;
  const bool synced = c.config.attn_dp > 1 || c.flags.a2a != A2aBackend::kNone || c.flags.dense_tp1;
  return synced || c.flags.input_scattered ? AttentionPad::kAlignedEntry : AttentionPad::kTokens;
}

}  // namespace seam
