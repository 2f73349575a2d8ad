// The judges' groups and row contents (judge_rows.h). Deliberately not the
// planner's construction: groups come from rank coordinates and a key per
// axis, CP shards from an owner rule per token, the DP buffer from the
// aligned entries; tests/sim/judge_rows_test.cc holds both derivations to
// the same rows on every case of the world-8 sweep space.
#include "seam/sim/replay/judge_rows.h"

#include <algorithm>
#include <utility>

#include "seam/sim/replay/judge_dp.h"

namespace seam {

namespace {

/// A rank's coordinate on one axis and the key of the group it shares with
/// the ranks whose other coordinates are the same (parallel_state.py,
/// initialize_model_parallel @0005973a84f7). Inside the TP block of pipeline
/// stage s a rank's index l reads two ways: attention (dp, cp, tp) with tp
/// fastest, and MoE (dp, ep, tp) with tp fastest.
struct Coordinate {
  int coord;
  long long key;
};

long long keyOf(int s, int a, int b) {
  constexpr long long kSpan = 1 << 20;
  return (static_cast<long long>(s) * kSpan + a) * kSpan + b;
}

Coordinate coordinateOf(const ParallelConfig& k, Axis axis, int rank) {
  const int T = k.tp, s = rank / T, l = rank % T;
  const int acp = k.attn_cp, atp = T / (k.attn_dp * acp);
  const int mep = k.moe_ep, mtp = T / (mep * k.moe_dp);
  const int ai = l % atp, ac = l / atp % acp, ad = l / (atp * acp);
  const int mi = l % mtp, me = l / mtp % mep, md = l / (mtp * mep);
  switch (axis) {
    case Axis::kTp:
      return {l, keyOf(s, 0, 0)};
    case Axis::kAttnTp:
      return {ai, keyOf(s, ad, ac)};
    case Axis::kAttnCp:
      return {ac, keyOf(s, ad, ai)};
    case Axis::kAttnDp:
      return {ad, keyOf(s, ac, ai)};
    case Axis::kMoeEp:
      return {me, keyOf(s, md, mi)};
    case Axis::kMoeTp:
      return {mi, keyOf(s, md, me)};
    case Axis::kMoeDp:
      // _MOE_DP is the attention-CP group when attn_cp > moe_dp (MoE-CP).
      if (acp > k.moe_dp) return coordinateOf(k, Axis::kAttnCp, rank);
      return {md, keyOf(s, me, mi)};
    case Axis::kPp:
      return {s, keyOf(0, 0, l)};
  }
  return {0, 0};
}

int roundUpTo(int n, int m) { return m <= 1 ? n : (n + m - 1) / m * m; }

/// Which CP rank holds sequence token t of a DP shard of n tokens: interleave
/// deals tokens round robin; zigzag cuts 2cp blocks (the first n % 2cp one
/// longer) and gives rank r blocks r and 2cp - 1 - r.
int ownerOf(CpLayout layout, int n, int cp, int t) {
  if (layout == CpLayout::kInterleave) return t % cp;
  const int blocks = 2 * cp, base = n / blocks, longer = n % blocks;
  const int in_longer = longer * (base + 1);
  const int block = t < in_longer ? t / (base + 1) : longer + (t - in_longer) / base;
  return block < cp ? block : blocks - 1 - block;
}

/// The CP shards of a DP shard of n tokens, positions in the sequence, each
/// padded to the physical length: the longest shard rounded up to cp
/// (interleave) or 2cp (zigzag), pad_logical_token_to_physical.
std::vector<std::vector<int>> cpShardsOf(CpLayout layout, int n, int cp) {
  std::vector<std::vector<int>> own(cp);
  for (int t = 0; t < n; ++t) own[ownerOf(layout, n, cp, t)].push_back(t);
  size_t longest = 0;
  for (const auto& s : own) longest = std::max(longest, s.size());
  const int physical =
      roundUpTo(static_cast<int>(longest), layout == CpLayout::kInterleave ? cp : 2 * cp);
  for (auto& s : own) s.resize(physical, kPaddingRow);
  return own;
}

/// The rows [start, start + size) of m rows that tensor_split(m, parts) hands
/// position i: sizes counted part by part, the first m % parts one longer.
std::pair<int, int> tensorSplitOf(int m, int parts, int i) {
  int start = 0;
  for (int j = 0; j < i; ++j) start += m / parts + (j < m % parts ? 1 : 0);
  return {start, m / parts + (i < m % parts ? 1 : 0)};
}

int shiftedBy(int id, int first) { return id == kPaddingRow ? kPaddingRow : first + id; }

}  // namespace

JudgeGroups::JudgeGroups(const ParallelConfig& config) : config_(config) {
  const int world = config.world();
  for (Axis axis : kAllAxes) {
    Axes& a = axes_[static_cast<int>(axis)];
    std::vector<long long> keys;  // of the groups, in the order of their lowest rank
    std::vector<std::vector<std::pair<int, int>>> members;  // (coordinate, rank)
    a.group.assign(world, 0);
    a.coord.assign(world, 0);
    for (int r = 0; r < world; ++r) {
      const Coordinate c = coordinateOf(config, axis, r);
      const auto found = std::find(keys.begin(), keys.end(), c.key);
      const int g = static_cast<int>(found - keys.begin());
      if (found == keys.end()) {
        keys.push_back(c.key);
        members.emplace_back();
      }
      members[g].push_back({c.coord, r});
      a.group[r] = g;
      a.coord[r] = c.coord;
    }
    for (auto& m : members) {
      std::sort(m.begin(), m.end());
      a.groups.emplace_back();
      for (const auto& [coord, r] : m) a.groups.back().push_back(r);
    }
  }
}

int JudgeGroups::communicator(Axis axis, int rank) const {
  const bool whole_tp = axis != Axis::kPp && axis != Axis::kAttnDp && groupSize(axis) == config_.tp;
  const Axis object = whole_tp ? Axis::kTp : axis;
  return static_cast<int>(object) * kCommunicatorStride +
         axes_[static_cast<int>(object)].group[rank];
}

JudgeTokens::JudgeTokens(const JudgeGroups& groups, const std::vector<int>& n,
                         const std::vector<int>& first, DpPadding padding, CpLayout cp,
                         LocalSplit split, AttentionPad pad, const std::vector<int>& held)
    : padding_(padding), split_(split) {
  const ParallelConfig& k = groups.config();
  const int world = k.world(), dp = k.attn_dp, acp = k.attn_cp;
  const int atp = groups.groupSize(Axis::kAttnTp);
  for (int t : n) total_ += t;

  std::vector<std::vector<std::vector<int>>> shards(dp);  // [d][cp rank], empty: not sharded
  for (int d = 0; d < dp; ++d)
    if (judgeCpShards(cp, n[d], acp)) shards[d] = cpShardsOf(cp, n[d], acp);

  // The DP buffer (judgeDpBuffer): each shard's tokens at its slot, then
  // pad rows; a CP-sharded shard's slot holds its CP shards' token rows back
  // to back in CP rank order (_cp_shard_rows).
  const JudgeDpBuffer dp_buffer = judgeDpBuffer(k, n, padding, false, cp, pad, held);
  std::vector<int> buffer(dp_buffer.rows, kPaddingRow);
  for (int d = 0; d < dp; ++d) {
    const int start = dp_buffer.entries[d].start;
    slot_.push_back(start);
    int row = start;
    if (!shards[d].empty() && dp > 1) {
      for (const auto& s : shards[d])
        for (int id : s)
          if (id != kPaddingRow) buffer[row++] = first[d] + id;
    } else {
      for (int t = 0; t < n[d]; ++t) buffer[row++] = first[d] + t;
    }
  }

  for (int kind = 0; kind < kRowKindCount; ++kind) {
    rows_[kind].assign(world, {});
    list_of_[kind].resize(world);
    for (int r = 0; r < world; ++r) list_of_[kind][r] = r;
  }
  const auto rowsOf = [this](RowKind kind, int r) -> std::vector<int>& {
    return rows_[static_cast<int>(kind)][r];
  };
  const auto shareOf = [this](RowKind kind, int r, int owner) {
    list_of_[static_cast<int>(kind)][r] = owner;
  };
  const int full = static_cast<int>(RowKind::kFull);
  int buffer_at = -1;  // the rank whose list holds the shared DP buffer
  // The ranks of one DP shard hold the same sequence, gathered CP shards and
  // (unsharded) attention rows, and those of one CP rank of it the same
  // attention rows: the first such rank's lists serve them all.
  std::vector<int> first_of_shard(dp, -1), first_of_cp_rank(dp * acp, -1);
  seq_at_.assign(world, {});
  seq_of_.assign(world, 0);
  local_start_.assign(world, 0);
  for (int r = 0; r < world; ++r) {
    const int d = groups.rankIn(Axis::kAttnDp, r), i = groups.rankIn(Axis::kAttnTp, r);
    const int c = groups.rankIn(Axis::kAttnCp, r);
    if (first_of_shard[d] < 0) first_of_shard[d] = r;
    if (first_of_cp_rank[d * acp + c] < 0) first_of_cp_rank[d * acp + c] = r;
    const int shard_owner = first_of_shard[d], cp_owner = first_of_cp_rank[d * acp + c];
    const bool builds = shard_owner == r;
    seq_of_[r] = shard_owner;
    shareOf(RowKind::kSequence, r, shard_owner);
    if (builds) {
      for (int t = 0; t < n[d]; ++t) rowsOf(RowKind::kSequence, r).push_back(first[d] + t);
    }
    auto& local = rowsOf(RowKind::kLocal, r);
    if (shards[d].empty()) {
      // A padded local batch: the tokens, then pad rows up to the held rows.
      shareOf(RowKind::kAttention, r, shard_owner);
      if (builds) {
        auto& attention = rowsOf(RowKind::kAttention, r);
        attention = rowsOf(RowKind::kSequence, r);
        attention.resize(dp_buffer.entries[d].held, kPaddingRow);
      }
      if (split == LocalSplit::kPaddedEqual) {
        // shard_token_rows: equal chunks of the held rows padded to attn_tp.
        const int chunk = (dp_buffer.entries[d].held + atp - 1) / atp;
        local_start_[r] = i * chunk;
        for (int p = i * chunk; p < (i + 1) * chunk; ++p)
          local.push_back(p < n[d] ? first[d] + p : kPaddingRow);
      }
    } else {
      shareOf(RowKind::kCpGathered, r, shard_owner);
      shareOf(RowKind::kAttention, r, cp_owner);
      auto& gathered = rowsOf(RowKind::kCpGathered, shard_owner);
      if (builds) seq_at_[r].assign(n[d], 0);
      for (int k = 0; k < acp && (builds || cp_owner == r); ++k) {
        for (int id : shards[d][k]) {
          if (builds) {
            if (id != kPaddingRow) seq_at_[r][id] = static_cast<int>(gathered.size());
            gathered.push_back(shiftedBy(id, first[d]));
          }
          if (k == c && cp_owner == r)
            rowsOf(RowKind::kAttention, r).push_back(shiftedBy(id, first[d]));
        }
      }
    }
    if (local.empty() && !(split == LocalSplit::kPaddedEqual && shards[d].empty())) {
      // torch.tensor_split of the attention rows (a CP shard: its padded rows).
      const auto& attention = tokens(RowKind::kAttention, r);
      const auto [start, size] = tensorSplitOf(static_cast<int>(attention.size()), atp, i);
      local_start_[r] = start;
      local.assign(attention.begin() + start, attention.begin() + start + size);
    }
    if (dp == 1 && cpSharded(r)) {
      if (builds) rows_[full][r] = rowsOf(RowKind::kCpGathered, r);
      list_of_[full][r] = shard_owner;
    } else {
      if (buffer_at < 0) {
        buffer_at = r;
        rows_[full][r] = std::move(buffer);
      }
      list_of_[full][r] = buffer_at;
    }
  }
  shareDispatched(groups);
}

void JudgeTokens::shareDispatched(const JudgeGroups& groups) {
  const int dispatch = static_cast<int>(RowKind::kDispatched);
  for (int r = 0; r < groups.world(); ++r) {
    // Every member of an EP group receives the same rows: its lowest rank's list.
    const int owner = groups.groupOf(Axis::kMoeEp, r).front();
    list_of_[dispatch][r] = owner;
    if (owner != r) continue;
    auto& dispatched = rows_[dispatch][r];
    for (int m : groups.groupOf(Axis::kMoeEp, r)) {
      const auto& local = tokens(RowKind::kLocal, m);
      dispatched.insert(dispatched.end(), local.begin(), local.end());
    }
  }
}

JudgeDpBuffer judgeDpBuffer(const ParallelConfig& k, const std::vector<int>& n, DpPadding mode,
                            bool gatherv_env, CpLayout cp, AttentionPad pad,
                            const std::vector<int>& held) {
  // Under DP attention prepare_mlp_sync_batch ceil-aligns every entry to
  // attn_tp; MAX_LEN then gives each slot the longest entry, SUM_LEN lays
  // the entries end to end (the unaligned starts are a fault's).
  JudgeDpBuffer b;
  b.mode = mode;
  const int dp = k.attn_dp, atp = k.tp / (dp * k.attn_cp);
  const bool max_len = dp > 1 && mode == DpPadding::kMaxLen;
  // A TBO child's entry is the tbo_padded_len its tensor holds.
  auto entry = [&](int d) {
    if (dp == 1) return n[d];
    return held.empty() ? roundUpTo(n[d], atp) : held[d];
  };
  int longest = 0, longest_raw = 0;
  for (int d = 0; d < dp; ++d) {
    longest = std::max(longest, entry(d));
    longest_raw = std::max(longest_raw, n[d]);
  }
  int at = 0, at_raw = 0;
  for (int d = 0; d < dp; ++d) {
    JudgeDpBuffer::Entry e;
    e.tokens = n[d];
    // _pad_inputs_to_size: a padded local batch is the longest aligned entry
    // (a TBO child: its tbo_padded_len).
    e.held = !held.empty()                        ? held[d]
             : pad == AttentionPad::kDpBuffer     ? longest
             : pad == AttentionPad::kAlignedEntry ? roundUpTo(n[d], atp)
                                                  : n[d];
    // Without DP attention the one entry is the held rows (aligned when synced).
    e.rows = max_len ? longest : dp > 1 ? entry(d) : e.held;
    e.start = max_len ? d * longest : at;
    e.start_unaligned = max_len ? d * longest_raw : at_raw;
    at += e.rows;
    at_raw += n[d];
    if (judgeCpShards(cp, n[d], k.attn_cp)) {
      // cp_shard_counts: each CP rank's token rows, back to back in CP rank order.
      for (const auto& shard : cpShardsOf(cp, n[d], k.attn_cp)) {
        e.cp_rows = static_cast<int>(shard.size());
        e.cp_start.push_back(e.cp_tokens.empty() ? 0 : e.cp_start.back() + e.cp_tokens.back());
        e.cp_tokens.push_back(static_cast<int>(
            std::count_if(shard.begin(), shard.end(), [](int t) { return t != kPaddingRow; })));
      }
    }
    b.entries.push_back(std::move(e));
  }
  b.rows = max_len ? dp * longest : at;
  // is_dp_gatherv_active: the env flag, attn_tp 1, tp == attn_dp, SUM_LEN.
  b.gatherv = gatherv_env && dp > 1 && atp == 1 && k.tp == dp && mode == DpPadding::kSumLen;
  return b;
}

JudgeLane::JudgeLane(const Case& c, const JudgeGroups& groups, const std::vector<int>& n,
                     const std::vector<int>& first, DpPadding padding, CpLayout cp,
                     LocalSplit split, AttentionPad pad, const std::vector<int>& held)
    : rows(groups, n, first, padding, cp, split, pad, held),
      other_rows(groups, n, first,
                 padding == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen, cp, split,
                 pad, held),
      dp_plan(judgeDpBuffer(c.config, n, padding, c.flags.dp_gatherv, cp, pad, held)),
      dp_other(
          judgeDpBuffer(c.config, n, other_rows.padding(), c.flags.dp_gatherv, cp, pad, held)) {}

const JudgeDpBuffer* JudgeLane::dpOfFullRows(int full_rows) const {
  if (dp_plan.rows == full_rows) return &dp_plan;
  if (dp_other.rows == full_rows) return &dp_other;
  return nullptr;
}

std::vector<JudgeLane> judgeLanes(const Case& c, const JudgeGroups& groups, const JudgeGeometry& g,
                                  const std::vector<int>& split) {
  const std::vector<int>& n = c.batch.tokens;
  std::vector<int> first(n.size(), 0);
  for (size_t d = 1; d < n.size(); ++d) first[d] = first[d - 1] + n[d - 1];
  std::vector<JudgeLane> lanes;
  lanes.reserve(3);
  lanes.emplace_back(c, groups, n, first, g.padding, g.cp_layout, g.local_split, g.attention_pad);
  if (split.empty()) return lanes;
  // Two-batch overlap: half A is each shard's first split[d] tokens, half B
  // the rest; both keep the batch's token ids.
  std::vector<int> a = split, b(n.size()), first_b(n.size());
  for (size_t d = 0; d < n.size(); ++d) {
    b[d] = n[d] - split[d];
    first_b[d] = first[d] + split[d];
  }
  // Each on its tbo_padded_len (g.tbo_rows) where the split is the judges'.
  const bool padded = split == g.tbo_split;
  const std::vector<int> none;
  lanes.emplace_back(c, groups, a, first, g.padding, g.cp_layout, g.local_split, g.attention_pad,
                     padded ? g.tbo_rows[0] : none);
  lanes.emplace_back(c, groups, b, first_b, g.padding, g.cp_layout, g.local_split, g.attention_pad,
                     padded ? g.tbo_rows[1] : none);
  return lanes;
}

HalfRows judgeHalfRows(const std::vector<JudgeLane>& lanes, int rank, Half half) {
  HalfRows h;
  h.total = lanes[0].rows.count(RowKind::kAttention, rank);
  h.count = h.taken = h.total;
  if (half == Half::kWhole || lanes.size() < 3) return h;
  // prepare_raw's cut at the split token (child A's tokens): A takes the
  // rows before it, B the rest of the padded parent; each runs its own rows.
  const int split = lanes[1].rows.count(RowKind::kSequence, rank);
  h.offset = half == Half::kB ? split : 0;
  h.taken = half == Half::kB ? h.total - split : split;
  h.count = lanes[static_cast<int>(half)].rows.count(RowKind::kAttention, rank);
  return h;
}

}  // namespace seam
