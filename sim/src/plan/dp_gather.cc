#include "seam/sim/plan/dp_gather.h"

#include <algorithm>
#include <cassert>

namespace seam {

namespace {
constexpr std::string_view kStepNames[kDpStepKindCount] = {
    "pad_local", "zero_local",     "zero_global", "write_slot", "read_slot",
    "trim",      "reduce_scatter", "all_gather",  "all_reduce", "all_gatherv"};
/// bf16 activations.
constexpr std::int64_t kBytesPerElement = 2;
}  // namespace

std::int64_t activationRowBytes(const ModelShape& shape) {
  return static_cast<std::int64_t>(shape.hidden > 0 ? shape.hidden : 1) * kBytesPerElement;
}

int dpAlignedTokens(int tokens, int attn_tp) { return (tokens + attn_tp - 1) / attn_tp * attn_tp; }

namespace {
/// A shard's entry of the DP buffer: its tokens aligned to attn_tp; under DP
/// attention a TBO child's is the tbo_padded_len its tensor holds.
int entryRows(const Batch& batch, int d, int align, int shards) {
  if (shards > 1 && !batch.rows.empty()) return batch.rows[d];
  return dpAlignedTokens(batch.tokens[d], align);
}
}  // namespace

DpGeometry::DpGeometry(const ParallelConfig& config, const Batch& batch, DpPadding mode,
                       bool gatherv_env, CpLayout cp, AttentionPad pad)
    : mode_(mode) {
  const int shards = config.attn_dp;
  assert(static_cast<int>(batch.tokens.size()) == shards &&
         "one batch entry per attention-DP shard");
  // prepare_mlp_sync_batch runs only under DP attention.
  const int align = shards > 1 ? config.attnTp() : 1;
  shards_.resize(shards);
  int longest = 0, longest_raw = 0;
  for (int d = 0; d < shards; ++d) {
    Shard& s = shards_[d];
    s.tokens = batch.tokens[d];
    s.local = entryRows(batch, d, align, shards);
    longest = std::max(longest, s.local);
    longest_raw = std::max(longest_raw, s.tokens);
  }
  const bool max_len = shards > 1 && mode == DpPadding::kMaxLen;
  int sum = 0, sum_raw = 0;
  for (int d = 0; d < shards; ++d) {
    Shard& s = shards_[d];
    s.attention = !batch.rows.empty()                  ? batch.rows[d]  // a TBO child
                  : pad == AttentionPad::kDpBuffer     ? longest
                  : pad == AttentionPad::kAlignedEntry ? dpAlignedTokens(s.tokens, config.attnTp())
                                                       : s.tokens;
    if (max_len) {
      s.local = longest;
      s.slot = d * longest;
      s.raw_slot = d * longest_raw;
    } else {
      s.slot = sum;
      s.raw_slot = sum_raw;
      sum += s.local;
      sum_raw += s.tokens;
    }
  }
  global_rows_ = max_len ? shards * longest : sum;
  // Prefill CP shards a DP shard's tokens (per DP rank: each decides on its
  // own batch); the DP ops then pass the shards' token-row counts.
  cp_ = config.attn_cp;
  for (int d = 0; d < shards; ++d) {
    Shard& s = shards_[d];
    s.cp_rows = cpShardsTokens(cp, s.tokens, cp_) ? seam::cpShardRows(cp, s.tokens, cp_) : 0;
    if (s.cp_rows == 0) continue;
    cp_counts_.resize(static_cast<size_t>(shards) * cp_, 0);
    cp_starts_.resize(cp_counts_.size(), 0);
    for (int c = 0, start = 0; c < cp_; ++c) {
      int count = 0;
      for (int t : cpShardTokens(cp, s.tokens, cp_, c)) count += t != kPaddingRow;
      cp_counts_[static_cast<size_t>(d) * cp_ + c] = count;
      cp_starts_[static_cast<size_t>(d) * cp_ + c] = start;
      start += count;
    }
  }
  gatherv_ = gatherv_env && shards > 1 && config.attnTp() == 1 && config.tp == shards &&
             mode == DpPadding::kSumLen;
}

int DpGeometry::globalRows(const ParallelConfig& config, const Batch& batch, DpPadding mode) {
  const int shards = config.attn_dp;
  const int align = shards > 1 ? config.attnTp() : 1;
  int longest = 0, sum = 0;
  for (int d = 0; d < static_cast<int>(batch.tokens.size()); ++d) {
    const int local = entryRows(batch, d, align, shards);
    longest = std::max(longest, local);
    sum += local;
  }
  return shards > 1 && mode == DpPadding::kMaxLen ? shards * longest : sum;
}

int DpGeometry::localRows(const ParallelConfig& config, const Batch& batch, DpPadding mode, int d) {
  const int shards = config.attn_dp;
  const int align = shards > 1 ? config.attnTp() : 1;
  if (shards == 1 || mode == DpPadding::kSumLen) return entryRows(batch, d, align, shards);
  int longest = 0;
  for (int e = 0; e < static_cast<int>(batch.tokens.size()); ++e)
    longest = std::max(longest, entryRows(batch, e, align, shards));
  return longest;
}

std::string_view dpStepName(DpStepKind kind) { return kStepNames[static_cast<int>(kind)]; }

OpKind DpStep::opKind() const {
  switch (kind) {
    case DpStepKind::kReduceScatter:
      return OpKind::kReduceScatter;
    case DpStepKind::kAllGather:
      return OpKind::kAllGather;
    case DpStepKind::kAllReduce:
      return OpKind::kAllReduce;
    case DpStepKind::kAllGatherv:
      return OpKind::kAllGatherv;
    default:
      assert(false && "opKind of a local step");
      return OpKind::kSlice;
  }
}

void DpLowering::push_back(const DpStep& s) {
  assert(size_ < kCapacity && "a DP op of more than 8 steps");
  steps_[size_++] = s;
}

bool operator==(const DpLowering& a, const DpLowering& b) {
  return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
}

bool isDpOp(OpKind kind) {
  return kind == OpKind::kDpGatherPartial || kind == OpKind::kDpGatherReplicate ||
         kind == OpKind::kDpScatter || kind == OpKind::kDpReduceScatter;
}

int dpFullRowsOf(const Op& op) {
  return op.kind == OpKind::kDpGatherPartial || op.kind == OpKind::kDpGatherReplicate
             ? op.rows_out.count
             : op.rows_in.count;
}

DpPlace dpPlaceOf(const ParallelConfig& config, int rank) {
  const int a = config.attnTp(), cp = config.attn_cp;
  const int l = rank % config.tp;
  return {l % a, (l / a) % cp, l / (a * cp)};
}

namespace {
/// Where CP rank c's token rows of DP shard d lie in the gathered buffer
/// (_cp_shard_rows), under the op's fault.
int cpSlotOf(const Op& op, const DpGeometry& g, int d, int c) {
  const int within = g.cpSlot(d, c) - g.slot(d);
  switch (op.dp_fault) {
    case DpFault::kUnalignedSlots:
      return g.rawSlot(d) + within;
    case DpFault::kCpShardOffsetDropped:
      return g.slot(d);
    default:
      return g.cpSlot(d, c);
  }
}
}  // namespace

DpLowering lowerDpOp(const Op& op, const ParallelConfig& config, const DpGeometry& g, int rank,
                     std::int64_t rb) {
  DpLowering out;
  lowerDpOp(op, config, g, dpPlaceOf(config, rank), rb, &out);
  return out;
}

void lowerDpOp(const Op& op, const ParallelConfig& config, const DpGeometry& g,
               const DpPlace& place, std::int64_t rb, DpLowering* steps) {
  assert(isDpOp(op.kind) && "lowerDpOp of an op that is not a DP op");
  DpLowering& out = *steps;
  out.clear();
  const int T = config.tp, a = config.attnTp(), cp = config.attn_cp, D = config.attn_dp;
  const int i = place.attn_tp_rank, c = place.attn_cp_rank, d = place.attn_dp_rank;
  // B: the attention rows the rank holds (its tokens, or its padded local batch).
  const int B = g.attentionRows(d), L = g.localRows(d), G = g.globalRows();
  const bool unaligned = op.dp_fault == DpFault::kUnalignedSlots;
  const int slot = unaligned ? g.rawSlot(d) : g.slot(d);
  const auto tp = static_cast<std::int8_t>(Axis::kTp);
  const auto attn_tp = static_cast<std::int8_t>(Axis::kAttnTp);
  const auto attn_cp = static_cast<std::int8_t>(Axis::kAttnCp);
  const auto trim = [&](int rows) {
    if (rows > B) out.push_back({DpStepKind::kTrim, kNoAxis, rows, B, 0, 0});
    if (rows < B) out.push_back({DpStepKind::kPadLocal, kNoAxis, rows, B, 0, (B - rows) * rb});
  };

  switch (op.kind) {
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate: {
      const bool partial = op.kind == OpKind::kDpGatherPartial;
      if (g.cpSharded(d)) {
        // cp_shard_counts: every CP rank holds its own shard (physical rows,
        // not DP-padded) and writes its token rows beside its CP peers'.
        const int S = g.cpShardRows(d), n = g.cpTokenRows(d, c);
        const int at = cpSlotOf(op, g, d, c);
        out.push_back({DpStepKind::kZeroGlobal, kNoAxis, S, G, 0, G * rb});
        bool writes = partial || i == 0;
        if (op.dp_fault == DpFault::kWriterRuleSwapped) writes = partial ? i == 0 : true;
        if (writes && n > 0) out.push_back({DpStepKind::kWriteSlot, kNoAxis, n, G, at, n * rb});
        out.push_back({DpStepKind::kAllReduce, tp, G, G, 0, G * rb});
        return;
      }
      // The local rows are local_dp_buffer_len long: pad rows past B_d (none
      // where the attention rows are the local DP buffer already; a gather of
      // the other padding mode cuts a longer buffer to its slot).
      if (L > B) out.push_back({DpStepKind::kPadLocal, kNoAxis, B, L, 0, (L - B) * rb});
      if (L < B) out.push_back({DpStepKind::kTrim, kNoAxis, B, L, 0, 0});
      if (g.gatherv()) {
        // _dp_gather_via_all_gatherv: each shard's rows, concatenated in tp
        // (= DP) order, which is SUM_LEN's slot order.
        out.push_back({DpStepKind::kAllGatherv, tp, L, G, slot, G * rb});
        return;
      }
      if (cp > 1 || g.mode() == DpPadding::kSumLen) {
        // _dp_gather_via_all_reduce (under CP whatever the padding: an
        // all-gather would take a block from every CP rank too).
        out.push_back({DpStepKind::kZeroGlobal, kNoAxis, L, G, 0, G * rb});
        bool writes = partial || i == 0;
        if (op.dp_fault == DpFault::kWriterRuleSwapped) writes = partial ? i == 0 : true;
        if (writes && c == 0 && L > 0)
          out.push_back({DpStepKind::kWriteSlot, kNoAxis, L, G, slot, L * rb});
        out.push_back({DpStepKind::kAllReduce, tp, G, G, 0, G * rb});
      } else if (a == 1) {
        // _dp_gather_via_all_gather, attn_tp == 1: the M-row slots in tp order.
        out.push_back({DpStepKind::kAllGather, tp, L, G, 0, G * rb});
      } else {
        // attn_tp > 1: every attention-TP rank contributes its 1/a split of
        // the shard's rows (summed over attn_tp, which completes a partial),
        // and the tp all-gather puts the splits back in slot order.
        if (!partial && i != 0 && op.dp_fault != DpFault::kSkipZeroFill) {
          out.push_back({DpStepKind::kZeroLocal, kNoAxis, L, L, 0, L * rb});
        }
        out.push_back({DpStepKind::kReduceScatter, attn_tp, L, L / a, 0, L * rb});
        out.push_back({DpStepKind::kAllGather, tp, L / a, G, 0, G * rb});
      }
      return;
    }
    case OpKind::kDpScatter:
      if (g.cpSharded(d)) {
        // dp_cp_take_back_output / the residual's dp_scatter with
        // cp_shard_counts: the own CP shard's token rows, then the shard's
        // pad rows (zeroed by the engine; never read as tokens).
        const int from = op.dp_fault == DpFault::kCpPeerShard ? (c + 1) % cp : c;
        const int S = g.cpShardRows(d), n = g.cpTokenRows(d, from);
        out.push_back({DpStepKind::kReadSlot, kNoAxis, G, n, cpSlotOf(op, g, d, from), n * rb});
        if (S > n) out.push_back({DpStepKind::kPadLocal, kNoAxis, n, S, 0, (S - n) * rb});
        return;
      }
      // dp_scatter: this shard's slot, local_dp_buffer_len rows; no collective.
      out.push_back({DpStepKind::kReadSlot, kNoAxis, G, L, slot, L * rb});
      trim(L);
      return;
    case OpKind::kDpReduceScatter: {
      if (cp > 1 && G % T != 0) {
        // MAX_LEN aligns a slot to attn_tp, not attn_cp * attn_tp: AR + narrow.
        out.push_back({DpStepKind::kAllReduce, tp, G, G, 0, G * rb});
        out.push_back(
            {DpStepKind::kReadSlot, kNoAxis, G, L, unaligned ? g.rawSlot(d) : d * L, L * rb});
        trim(L);
        return;
      }
      const int chunk = G / T;
      out.push_back({DpStepKind::kReduceScatter, tp, G, chunk, 0, G * rb});
      int rows = chunk;
      if (T != D) {
        // The tp chunks of one slot lie on its attn_tp (and attn_cp) ranks.
        if (a > 1) {
          out.push_back({DpStepKind::kAllGather, attn_tp, rows, rows * a, 0, rows * a * rb});
          rows *= a;
        }
        if (cp > 1) {
          out.push_back({DpStepKind::kAllGather, attn_cp, rows, rows * cp, 0, rows * cp * rb});
          rows *= cp;
        }
      }
      trim(rows);
      return;
    }
    default:
      return;
  }
}

DpLayouts::DpLayouts(const ParallelConfig& config, const Batch& batch, DpPadding plan_mode,
                     bool gatherv_env, CpLayout cp, AttentionPad pad)
    : plan_mode_(plan_mode),
      max_len_(config, batch, DpPadding::kMaxLen, gatherv_env, cp, pad),
      sum_len_(config, batch, DpPadding::kSumLen, gatherv_env, cp, pad) {}

const DpGeometry* DpLayouts::ofFullRows(int full_rows) const {
  const DpGeometry& mine = of(plan_mode_);
  const DpGeometry& other =
      of(plan_mode_ == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen);
  if (mine.globalRows() == full_rows) return &mine;
  if (other.globalRows() == full_rows) return &other;
  return nullptr;
}

}  // namespace seam
