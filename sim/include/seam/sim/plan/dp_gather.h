// DP attention's gathers and scatters as SGLang's layers/dp_attention.py
// implements them (docs/research/serving-dp-gather-tbo.md A1-A8): the buffer
// lengths of each padding mode, and the lowering of the plan's abstract
// dp_gather_partial / dp_gather_replicate / dp_scatter / dp_reduce_scatter
// into the ordinary collectives and local copies that move the bytes. A plan
// keeps the abstract op (the declared boundary); the CUDA executor runs this
// lowering and `seam plan --lower-dp` shows it. The judges (ledger, CPU
// executors, property 4) run their own, judge_dp.h, held to this one by
// tests/sim/judge_dp_test.cc.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/plan/rows.h"

namespace seam {

/// Bytes of one row of activations: the hidden size in bf16 (a model without
/// a known hidden size counts one element).
std::int64_t activationRowBytes(const ModelShape& shape);

/// prepare_mlp_sync_batch: a DP entry of `tokens` tokens, ceil-aligned to
/// attn_tp ("we may need reduce-scatter across attn_tp"); 0 stays 0.
int dpAlignedTokens(int tokens, int attn_tp);

/// The DP buffers of a case in one padding mode. With DP attention every
/// entry is aligned to attn_tp; MAX_LEN then pads every entry to the largest
/// (M), the gathered buffer has D * M rows and slot d starts at d * M;
/// SUM_LEN's buffer is the sum of the aligned entries, slot d at their
/// cumulative sum. Without DP attention (attn_dp == 1) nothing is aligned.
/// Rows of a slot beyond its tokens are padding rows (computed from input
/// id 0 in the engine: neither zero nor a token). A DP shard that prefill CP
/// shards (rows.h's CpLayout) puts its CP shards' token rows back to back in
/// CP rank order at the start of its slot (_cp_shard_rows).
class DpGeometry {
 public:
  /// `gatherv_env`: Flags::dp_gatherv (SGLANG_DP_USE_GATHERV); `cp`: the
  /// plan's CP layout; `pad`: what the plan's attention rows hold (the same
  /// in both modes' geometries: a DP op of the other mode meets them as they are).
  DpGeometry(const ParallelConfig& config, const Batch& batch, DpPadding mode,
             bool gatherv_env = false, CpLayout cp = CpLayout::kReplicated,
             AttentionPad pad = AttentionPad::kTokens);

  DpPadding mode() const { return mode_; }
  int shards() const { return static_cast<int>(shards_.size()); }
  /// B_d: the tokens of DP shard d.
  int tokens(int d) const { return shards_[d].tokens; }
  /// local_dp_buffer_len of shard d: M (MAX_LEN) or its aligned entry (SUM_LEN).
  int localRows(int d) const { return shards_[d].local; }
  /// The attention rows shard d's ranks hold (rows.h's AttentionPad): B_d,
  /// or under kDpBuffer the longest aligned entry (MAX_LEN's local rows).
  int attentionRows(int d) const { return shards_[d].attention; }
  /// First row of shard d's slot in the gathered buffer.
  int slot(int d) const { return shards_[d].slot; }
  /// Where slot d would start without the alignment (the raw counts): a
  /// lowering fault, DpFault::kUnalignedSlots.
  int rawSlot(int d) const { return shards_[d].raw_slot; }
  /// global_dp_buffer_len: rows of the gathered buffer.
  int globalRows() const { return global_rows_; }
  /// is_dp_gatherv_active: the env flag, attn_tp 1, tp == attn_dp (hence no
  /// attention CP) and SUM_LEN; the gathers then all_gatherv the shards.
  bool gatherv() const { return gatherv_; }
  /// Whether DP shard d is CP-sharded: its ranks hold their CP shards, and
  /// the gathers and dp_scatter pass cp_shard_counts.
  bool cpSharded(int d) const { return shards_[d].cp_rows > 0; }
  /// The physical (padded) rows of each CP shard of DP shard d (cpSharded).
  int cpShardRows(int d) const { return shards_[d].cp_rows; }
  /// _cp_shard_token_rows: the token rows of CP rank c's shard of DP shard d.
  int cpTokenRows(int d, int c) const { return cp_counts_[static_cast<size_t>(d) * cp_ + c]; }
  /// _cp_shard_rows: where CP rank c's token rows start in the gathered buffer.
  int cpSlot(int d, int c) const {
    return shards_[d].slot + cp_starts_[static_cast<size_t>(d) * cp_ + c];
  }
  /// globalRows() without building the geometry (the planner's row counts).
  static int globalRows(const ParallelConfig& config, const Batch& batch, DpPadding mode);
  /// localRows(d) without building the geometry.
  static int localRows(const ParallelConfig& config, const Batch& batch, DpPadding mode, int d);

 private:
  struct Shard {
    int tokens, local, slot, raw_slot, attention;
    int cp_rows;  ///< rows per CP shard; 0: not CP-sharded
  };
  std::vector<Shard> shards_;
  int cp_ = 1;
  std::vector<int> cp_counts_, cp_starts_;  // [d * cp + c], filled for CP-sharded shards
  int global_rows_ = 0;
  DpPadding mode_;
  bool gatherv_ = false;
};

/// The steps a DP op lowers to. Each acts on one buffer in flight (`buf`);
/// the all-reduce path also keeps the local rows aside (`local`).
enum class DpStepKind : std::uint8_t {
  kPadLocal,    ///< buf: the attention rows padded to local_dp_buffer_len with computed pad rows
  kZeroLocal,   ///< buf := 0 (replicate gather, attention-TP rank != 0: local_tokens.fill_(0))
  kZeroGlobal,  ///< local := buf; buf := the zeroed gathered buffer (global_tokens.fill_(0))
  kWriteSlot,   ///< buf[offset, offset + rows_in) := local (a writer's memcpy into its slot)
  kReadSlot,    ///< buf := buf[offset, offset + rows_out) (dp_scatter's memcpy, or the narrow after
                ///< an AR)
  kTrim,        ///< buf := its first rows_out rows: the attention rows, without the pad rows
  kReduceScatter,  ///< reduce_scatter_tensor over the axis: member k keeps chunk k of the sum
  kAllGather,      ///< all_gather_into_tensor over the axis: the members' bufs in group order
  kAllReduce,      ///< all_reduce over the axis
  kAllGatherv,  ///< all_gatherv over the axis: each member's rows_in rows, in group order (rows_out
                ///< in all)
};
inline constexpr int kDpStepKindCount = 10;
std::string_view dpStepName(DpStepKind kind);
inline bool isCollectiveStep(DpStepKind kind) {
  return kind == DpStepKind::kReduceScatter || kind == DpStepKind::kAllGather ||
         kind == DpStepKind::kAllReduce || kind == DpStepKind::kAllGatherv;
}

/// One step of one rank. Filled whole by lowerDpOp (no member initializers:
/// a lowering of eight steps is built per DP op per rank, on the hot path).
struct DpStep {
  DpStepKind kind;        ///< what it does
  std::int8_t axis;       ///< the group of a collective step (an Axis); kNoAxis for a local one
  std::int32_t rows_in;   ///< rows of buf it reads (kWriteSlot: rows of local it copies)
  std::int32_t rows_out;  ///< rows of buf it leaves
  std::int32_t offset;    ///< kWriteSlot / kReadSlot: first row in the gathered buffer
  std::int64_t bytes;     ///< payload it moves (collectives: as the plan counts them) or touches
  /// The collective a collective step issues (all_gather, reduce_scatter, all_reduce).
  OpKind opKind() const;
  friend bool operator==(const DpStep&, const DpStep&) = default;
};

/// The steps of one DP op on one rank, inline (a handful; executors lower an
/// op on every rank of every case without allocating).
class DpLowering {
 public:
  static constexpr int kCapacity = 8;
  void push_back(const DpStep& s);
  const DpStep* begin() const { return steps_; }
  const DpStep* end() const { return steps_ + size_; }
  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  const DpStep& operator[](int i) const { return steps_[i]; }
  friend bool operator==(const DpLowering& a, const DpLowering& b);

 private:
  DpStep steps_[kCapacity];
  int size_ = 0;
};

/// The DP ops: dp_gather_partial, dp_gather_replicate, dp_scatter, dp_reduce_scatter.
bool isDpOp(OpKind kind);

/// The rows of the gathered buffer an op reads or writes: rows_out for a
/// gather, rows_in for a scatter or a reduce-scatter (their count names the
/// padding mode the op assumes).
int dpFullRowsOf(const Op& op);

/// A rank's place in its TP group's attention layout (attention TP in
/// contiguous blocks, attention CP at stride attn_tp, DP blocks of
/// attn_tp * attn_cp), computed once per rank rather than per op.
struct DpPlace {
  int attn_tp_rank;  ///< i
  int attn_cp_rank;  ///< c
  int attn_dp_rank;  ///< d
};
DpPlace dpPlaceOf(const ParallelConfig& config, int rank);

/// What `rank` runs for the DP op `op` (isDpOp), `geometry` being the layout
/// of the padding mode the op's rows name, `row_bytes` activationRowBytes:
///  - gather, gatherv active (SGLANG_DP_USE_GATHERV, SUM_LEN, attn_tp 1,
///    tp == attn_dp): all_gatherv over tp of each shard's rows;
///  - gather, attn_cp > 1 or SUM_LEN (_dp_gather_via_all_reduce): pad, zero
///    the gathered buffer, writers ((partial or attention-TP rank 0) and CP
///    rank 0, with local rows) copy their local rows into their slot,
///    all-reduce over tp; on a CP-sharded DP shard (cp_shard_counts) every
///    CP rank writes the token rows of its shard at cpSlot, not padded;
///  - gather, MAX_LEN, attn_tp == 1: pad, all-gather over tp;
///  - gather, MAX_LEN, attn_tp a > 1: pad, (replicate: attention-TP ranks
///    != 0 zero their rows), reduce-scatter over attn_tp into the rank's
///    M/a chunk, all-gather over tp (slot d = rows [d*M, (d+1)*M));
///  - dp_scatter: copy the own slot, trim the pad rows (no collective); on a
///    CP-sharded DP shard the own CP shard's token rows, padded back to the
///    shard's length (dp_cp_take_back_output; the engine zeroes those rows);
///  - dp_reduce_scatter: attn_cp > 1 with rows % tp != 0: all-reduce over tp
///    and narrow; tp == attn_dp: reduce-scatter over tp; else reduce-scatter
///    over tp to the 1/tp chunk, then all-gather over attn_tp (and attn_cp
///    when attn_cp > 1); trim.
/// `op.dp_fault` plants a fault (DpFault); kNone is SGLang's code.
DpLowering lowerDpOp(const Op& op, const ParallelConfig& config, const DpGeometry& geometry,
                     int rank, std::int64_t row_bytes);
/// The same for a rank whose place is known, written into *out (the
/// executors' hot path: no copy of the steps).
void lowerDpOp(const Op& op, const ParallelConfig& config, const DpGeometry& geometry,
               const DpPlace& place, std::int64_t row_bytes, DpLowering* out);

/// The geometry of both padding modes of a case, and which one an op's rows name.
class DpLayouts {
 public:
  /// `plan_mode`: the plan's resolved padding, preferred when both modes
  /// have the same number of rows (then their layouts are the same too).
  DpLayouts(const ParallelConfig& config, const Batch& batch, DpPadding plan_mode, bool gatherv_env,
            CpLayout cp, AttentionPad pad = AttentionPad::kTokens);
  const DpGeometry& of(DpPadding mode) const {
    return mode == DpPadding::kMaxLen ? max_len_ : sum_len_;
  }
  /// The geometry whose gathered buffer has `full_rows` rows (the plan's mode
  /// first); nullptr when neither has.
  const DpGeometry* ofFullRows(int full_rows) const;

 private:
  DpPadding plan_mode_;
  DpGeometry max_len_, sum_len_;
};

}  // namespace seam
