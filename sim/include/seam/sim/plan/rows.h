// Row layouts (reference §3): which tokens each rank holds in each layout,
// built once per case. Attention rows = the rank's DP shard; local rows = its
// tensor_split slice over attn_tp (LayerNorm SP: its padded equal shard,
// LocalSplit); full rows = all DP shards of its TP group
// (SUM_LEN: concatenated; MAX_LEN: one max-sized slot per shard, padded);
// dispatched rows = the local rows of every member of its MoE-EP group.
// Under DP attention each shard's slot is aligned to attn_tp (dp_gather.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/parallel_config.h"

namespace seam {

/// The row layouts of DESIGN §2.3. Under a CP-sharded layout attention rows
/// are the rank's CP shard, full rows the shards gathered in CP rank order,
/// and sequence rows the DP shard's tokens in order on every CP rank (the
/// model output after cp_gather_after_forward); otherwise sequence rows are
/// the attention rows. Under attention DP full rows are the DP buffer, so the
/// model boundary's all-gather of a DP shard's CP shards lands on cp_gathered
/// rows (the shards in CP rank order, padded; without DP they are the full rows).
enum class RowKind : std::uint8_t {
  kNone,
  kAttention,
  kLocal,
  kFull,
  kDispatched,
  kSequence,
  kCpGathered
};
inline constexpr int kRowKindCount = 7;
std::string_view rowKindName(RowKind kind);
bool parseRowKind(std::string_view name, RowKind* kind);

/// A padding row (MAX_LEN slot filler, CP shard padding): no token.
inline constexpr int kPaddingRow = -1;

/// How the tokens of a DP shard lie over its attention-CP ranks.
enum class CpLayout : std::uint8_t {
  /// Not sharded over CP (decode, or a prefill CP strategy that does not
  /// apply): the ranks of an attn_cp group hold the same rows.
  kReplicated,
  /// InterleaveCPStrategy (DSA/MLA prefill CP; attn_tp = attn_dp = 1): token
  /// g lies on CP rank g mod cp, each shard zero-padded to the physical length
  /// ceil(max shard / cp) * cp (pad_logical_token_to_physical). Full rows are
  /// the CP shards concatenated in rank order (attn_cp_interleave_gather).
  kInterleave,
  /// ZigzagCPStrategy (GQA prefill CP): each DP shard's sequence is cut into
  /// 2cp blocks (L // 2cp rows, the first L % 2cp one longer); CP rank r holds
  /// block r then block 2cp-1-r, zero-padded to ceil(max shard / 2cp) * 2cp
  /// rows (pad_logical_token_to_physical aligns zigzag to 2cp). Full rows are
  /// the shards concatenated in rank order (moe_cp_gather); local rows are
  /// the shard's tensor_split over attn_tp. Under attention DP each DP rank
  /// shards its own batch (a DP shard too short for the strategy, or idle,
  /// stays replicated over its CP ranks), and full rows are the DP buffer:
  /// slot d holds the CP shards' token rows back to back in CP rank order
  /// (dp_gather with cp_shard_counts), then the slot's pad rows.
  kZigzag,
};
/// ZigzagCPStrategy.can_apply (layers/cp/zigzag.py): GQA prefill CP shards a
/// sequence of at least max(kZigzagMinTokens, 2cp) tokens, else none.
inline constexpr int kZigzagMinTokens = 128;
/// Whether the CP strategy of `layout` shards a DP shard of `tokens` tokens
/// (can_apply; kReplicated: never).
bool cpShardsTokens(CpLayout layout, int tokens, int cp);
/// Rows per CP shard (the physical, padded length) of a DP shard of `tokens`
/// tokens under a CP-sharded layout (kInterleave or kZigzag).
int cpShardRows(CpLayout layout, int tokens, int cp);
/// The tokens (0-based within the sequence; kPaddingRow past them) of CP
/// rank `c`'s shard, cpShardRows long.
std::vector<int> cpShardTokens(CpLayout layout, int tokens, int cp, int c);

/// How a DP shard's attention rows split into the attention-TP ranks' local rows.
enum class LocalSplit : std::uint8_t {
  /// torch.tensor_split over attn_tp (the communicator's scattered rows):
  /// uneven when attn_tp does not divide the shard, no padding rows. Where
  /// the engine runs it only on a CP shard or a batch it did not pad.
  kTensorSplit,
  /// A batch padded to attn_tp, then attn_tp equal chunks of c rows; rank i
  /// holds rows [i*c, (i+1)*c), the positions past the shard's M tokens
  /// padding. LayerNorm SP's shard_token_rows (layers/layernorm_sp.py) pads
  /// to ceil_align(M, attn_tp), and prepare_mlp_sync_batch pads the local
  /// batch to the aligned entry, so c = ceil(M / attn_tp), M the attention
  /// rows (under AttentionPad::kDpBuffer the longest aligned entry). The
  /// attention-TP collectives move equal chunks: the all-gather narrows its
  /// attn_tp * c rows to M, the reduce-scatter pads its M rows to attn_tp * c
  /// (replay.h).
  kPaddedEqual,
};
/// What a DP shard's attention rows hold (with CpLayout::kReplicated; a
/// CP-sharded shard holds its CP shard either way).
enum class AttentionPad : std::uint8_t {
  /// The shard's tokens.
  kTokens,
  /// prepare_mlp_sync_batch's padded local batch (DP attention under
  /// MAX_LEN): _pad_inputs_to_size pads the inputs to the shard's entry of
  /// the padded global_num_tokens, the longest entry aligned to attn_tp, so
  /// the whole forward runs on local_dp_buffer_len rows: the tokens, then
  /// padding rows (computed from input id 0).
  kDpBuffer,
  /// prepare_mlp_sync_batch's padded local batch where every entry keeps its
  /// own length: DP attention under SUM_LEN, or a synced batch without DP
  /// attention (an a2a backend or moe_dense_tp_size 1: require_mlp_sync).
  /// _pad_inputs_to_size pads the inputs to the shard's entry, its tokens
  /// aligned up to attn_tp (an idle shard's 0 stays 0), so the forward runs
  /// on ceil_align(B_d, attn_tp) rows: the tokens, then padding rows.
  kAlignedEntry,
};

/// Local rows per rank of a shard of `tokens` under kPaddedEqual: ceil(tokens / parts).
inline int paddedLocalRows(int tokens, int parts) { return (tokens + parts - 1) / parts; }

/// Token ids (global over the DP shards of a TP group; -1 = padding) per
/// rank per layout. Tokens of shard d are [offset(d), offset(d) + B_d).
class RowMap {
 public:
  /// `first_tokens`: the token id of each DP shard's first row (default: the
  /// shards numbered in order); a TBO half keeps the whole batch's ids (tbo.h).
  /// `local`: how attention rows split into local rows (kPaddedEqual only with
  /// kReplicated); `pad`: what the attention rows hold (kDpBuffer only with kReplicated).
  RowMap(const Topology& topology, const Batch& batch, DpPadding padding,
         CpLayout cp = CpLayout::kReplicated, const std::vector<int>* first_tokens = nullptr,
         LocalSplit local = LocalSplit::kTensorSplit, AttentionPad pad = AttentionPad::kTokens);

  const std::vector<int>& tokens(RowKind kind, int rank) const {
    return rows_[static_cast<int>(kind)][rank];
  }
  int count(RowKind kind, int rank) const { return static_cast<int>(tokens(kind, rank).size()); }
  /// Rows of the rank's attention rows (its DP shard's tokens, with
  /// AttentionPad::kDpBuffer their padding too).
  int shardTokens(int rank) const { return count(RowKind::kAttention, rank); }
  int totalTokens() const { return total_tokens_; }
  DpPadding padding() const { return padding_; }
  /// First row of DP shard `d` inside the full rows.
  int fullSlot(int d) const { return full_slot_[d]; }
  /// First row of the rank's own local slice inside its attention rows
  /// (kPaddedEqual: inside them padded to attn_tp equal chunks; it may lie past them).
  int localOffset(int rank) const { return local_offset_[rank]; }
  LocalSplit localSplit() const { return local_split_; }
  /// Whether the rank's DP shard is CP-sharded (its attention rows are its CP shard).
  bool cpSharded(int rank) const { return cp_sharded_[rank] != 0; }
  /// Under a CP-sharded layout: the row of the rank's cp_gathered rows (its
  /// DP shard's CP shards gathered) that holds sequence row `i` (the reorder
  /// of cp_gather_after_forward).
  int gatheredRowOfSequence(int rank, int i) const { return seq_in_gathered_[rank][i]; }

 private:
  std::vector<std::vector<int>> rows_[kRowKindCount];
  std::vector<std::vector<int>> seq_in_gathered_;  // per rank (empty where not CP-sharded)
  std::vector<char> cp_sharded_;
  std::vector<int> full_slot_;
  std::vector<int> local_offset_;
  int total_tokens_ = 0;
  DpPadding padding_;
  LocalSplit local_split_;
};

/// The number of rows each rank holds in each layout, computed directly
/// (what RowMap::count gives, without building the token lists): what the
/// planner needs.
class RowCounts {
 public:
  RowCounts(const ParallelConfig& config, const Batch& batch, DpPadding padding,
            CpLayout cp = CpLayout::kReplicated, LocalSplit local = LocalSplit::kTensorSplit,
            AttentionPad pad = AttentionPad::kTokens);
  int count(RowKind kind, int rank) const {
    return counts_[static_cast<size_t>(rank) * kRowKindCount + static_cast<int>(kind)];
  }
  int shardTokens(int rank) const { return count(RowKind::kAttention, rank); }
  /// local_dp_buffer_len of the rank's DP shard (prepare_mlp_sync_batch):
  /// its tokens aligned to attn_tp, under MAX_LEN the longest such entry;
  /// its tokens without DP attention. The rows a DP return's reduce_scatterv
  /// writes on the rank (tokens first, then padding).
  int dpLocalRows(int rank) const { return dp_local_[rank]; }

 private:
  std::vector<int> counts_;    // [rank][kind]
  std::vector<int> dp_local_;  // [rank]
};

/// SGLang's padding mode for the case: the requested one, except that a
/// hybrid-SSM model with an idle DP rank always gets MAX_LEN
/// (dp.max_len_with_idle, reference §4.3).
DpPadding resolvePadding(const Case& c);

/// What the case's attention rows hold on a batch not CP-sharded: kDpBuffer
/// under DP attention with MAX_LEN; kAlignedEntry under DP attention with
/// SUM_LEN, and without DP attention where the batch is synced (an a2a
/// backend or moe_dense_tp_size 1); kTokens otherwise. Under two-batch
/// overlap this is the parent's; each half's rows are its tbo_padded_len
/// (Batch::rows, tbo.h).
AttentionPad resolveAttentionPad(const Case& c, DpPadding padding, CpLayout cp);

}  // namespace seam
