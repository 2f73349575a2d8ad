#include "seam/sim/rows.h"

#include <algorithm>
#include <cassert>

#include "seam/sim/dp_gather.h"

namespace seam {

namespace {
constexpr std::string_view kRowKindNames[kRowKindCount] = {"none", "attention", "local", "full", "dispatched"};
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

int interleaveShardRows(int tokens, int cp) {
  const int longest = (tokens + cp - 1) / cp;  // CP rank 0 holds the most
  return (longest + cp - 1) / cp * cp;
}

// CpLayout::kReplicated: a shard's tokens are split over attn_tp only, so the
// ranks of one attn_cp group hold the same rows.
RowMap::RowMap(const Topology& topology, const Batch& batch, DpPadding padding, CpLayout cp,
               const std::vector<int>* first_tokens)
    : total_tokens_(batch.total()), padding_(padding) {
  const ParallelConfig& config = topology.config();
  const int world = topology.world();
  const int shards = config.attn_dp;
  const int atp = config.attnTp();
  assert(static_cast<int>(batch.tokens.size()) == shards && "one batch entry per attention-DP shard");

  // Tokens are numbered over the DP shards of one TP group; every TP group
  // (pipeline stage) holds the same batch.
  std::vector<int> offset(shards, 0);
  for (int d = 1; d < shards; ++d) offset[d] = offset[d - 1] + batch.tokens[d - 1];
  if (first_tokens != nullptr) offset = *first_tokens;

  // The full rows are the same on every rank of every TP group: each shard's
  // tokens at its slot, then its pad rows (dp_gather.h's geometry).
  const DpGeometry geometry(config, batch, padding);
  std::vector<int> full(geometry.globalRows(), kPaddingRow);
  full_slot_.assign(shards, 0);
  for (int d = 0; d < shards; ++d) {
    full_slot_[d] = geometry.slot(d);
    for (int t = 0; t < batch.tokens[d]; ++t) full[geometry.slot(d) + t] = offset[d] + t;
  }

  for (auto& per_rank : rows_) per_rank.assign(world, {});
  local_offset_.assign(world, 0);
  for (int r = 0; r < world; ++r) {
    const int d = topology.attnDpRank(r);
    const int i = topology.attnTpRank(r);
    const int shard_tokens = batch.tokens[d];
    std::vector<int>& attention = rows_[static_cast<int>(RowKind::kAttention)][r];
    for (int t = 0; t < shard_tokens; ++t) attention.push_back(offset[d] + t);

    // tensor_split: the first `rem` positions take one extra token.
    const int q = shard_tokens / atp;
    const int rem = shard_tokens % atp;
    const int start = i * q + std::min(i, rem);
    const int count = q + (i < rem ? 1 : 0);
    local_offset_[r] = start;
    std::vector<int>& local = rows_[static_cast<int>(RowKind::kLocal)][r];
    for (int t = 0; t < count; ++t) local.push_back(offset[d] + start + t);

    rows_[static_cast<int>(RowKind::kFull)][r] = full;
  }

  if (cp == CpLayout::kInterleave) {
    // attn_tp == attn_dp == 1 (attn_cp_gather asserts it): one DP shard, the
    // TP group is the CP group; local rows are the attention rows.
    assert(shards == 1 && atp == 1 && "interleave CP runs with attn_tp = attn_dp = 1");
    const int acp = config.attn_cp;
    const int rows = interleaveShardRows(batch.tokens[0], acp);
    std::vector<int> all;
    for (int c = 0; c < acp; ++c) {
      for (int k = 0; k < rows; ++k) {
        const int t = c + k * acp;
        all.push_back(t < batch.tokens[0] ? t : kPaddingRow);
      }
    }
    for (int r = 0; r < world; ++r) {
      const int c = topology.attnCpRank(r);
      std::vector<int> mine(all.begin() + c * rows, all.begin() + (c + 1) * rows);
      rows_[static_cast<int>(RowKind::kAttention)][r] = mine;
      rows_[static_cast<int>(RowKind::kLocal)][r] = std::move(mine);
      rows_[static_cast<int>(RowKind::kFull)][r] = all;
    }
  }

  for (int r = 0; r < world; ++r) {
    std::vector<int>& dispatched = rows_[static_cast<int>(RowKind::kDispatched)][r];
    for (int member : topology.groupOf(Axis::kMoeEp, r)) {
      const std::vector<int>& local = rows_[static_cast<int>(RowKind::kLocal)][member];
      dispatched.insert(dispatched.end(), local.begin(), local.end());
    }
  }
}

RowCounts::RowCounts(const ParallelConfig& c, const Batch& batch, DpPadding padding, CpLayout cp) {
  const int world = c.world();
  const int T = c.tp, atp = c.attnTp(), acp = c.attn_cp;
  counts_.assign(static_cast<size_t>(world) * kRowKindCount, 0);
  const int full_rows = DpGeometry::globalRows(c, batch, padding);
  auto local = [&](int rank) {
    const int l = rank % T;
    const int bd = batch.tokens[l / (atp * acp)];
    const int i = l % atp;
    return bd / atp + (i < bd % atp ? 1 : 0);
  };
  for (int r = 0; r < world; ++r) {
    const int l = r % T;
    const int bd = batch.tokens[l / (atp * acp)];
    int* row = &counts_[static_cast<size_t>(r) * kRowKindCount];
    row[static_cast<int>(RowKind::kAttention)] = bd;
    row[static_cast<int>(RowKind::kLocal)] = local(r);
    row[static_cast<int>(RowKind::kFull)] = c.attn_dp == 1 ? bd : full_rows;
    if (cp == CpLayout::kInterleave) {
      const int shard = interleaveShardRows(bd, acp);
      row[static_cast<int>(RowKind::kAttention)] = shard;
      row[static_cast<int>(RowKind::kLocal)] = shard;
      row[static_cast<int>(RowKind::kFull)] = acp * shard;
    }
    int dispatched = 0;
    for (int m : groupMembers(c, Axis::kMoeEp, r)) dispatched += cp == CpLayout::kInterleave ? row[static_cast<int>(RowKind::kLocal)] : local(m);
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

}  // namespace seam
