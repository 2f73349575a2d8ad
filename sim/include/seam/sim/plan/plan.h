// Plans are plain data (STYLE 4): per rank, the ordered ops a policy chose,
// in the op vocabulary of DESIGN §2.5, plus the stages and the boundary
// declarations they were built from. Planners fill them; executors, the
// properties and the reports only read them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/plan/engine_site.h"
#include "seam/sim/plan/rows.h"

namespace seam {

/// Where in a stage an op runs.
enum class Phase : std::uint8_t { kEntry, kCompute, kExit };
std::string_view phaseName(Phase phase);

/// The op vocabulary (DESIGN §2.5). `kDpReduceScatter` is SGLang's
/// dp_reduce_scatter_tensor, which DESIGN's list lacks (see the README).
enum class OpKind : std::uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAllGatherv,
  kReduceScatterv,
  kAllToAll,
  kDpGatherPartial,
  kDpGatherReplicate,
  kDpScatter,
  kDpReduceScatter,
  kSlice,
  kZeroFill,
  kAdd,
  kNorm,
  kAddNorm,
  kArAddNorm,
  kCompute,
  kSnapshot,
  kSend,
  kRecv,
};
inline constexpr int kOpKindCount = 20;
std::string_view opName(OpKind kind);
bool parseOpKind(std::string_view name, OpKind* kind);
/// True for the kinds that exchange data with other ranks (group set).
bool communicates(OpKind kind);
/// True for the kinds that add values from several ranks (complete a sum).
bool reduces(OpKind kind);

/// The buffer an op acts on. kBranch: the named buffer of a branch (LongCat's
/// MoE runs beside the dense chain on a copy of its input and is merged into
/// the layer's output).
enum class Tensor : std::uint8_t { kHidden, kResidual, kSnapshot, kBranch };
std::string_view tensorName(Tensor tensor);
bool parseTensor(std::string_view name, Tensor* tensor);

/// A row layout and the number of rows this rank holds in it.
struct Rows {
  RowKind kind = RowKind::kNone;
  std::int32_t count = 0;
  friend bool operator==(const Rows&, const Rows&) = default;
};

/// A fault in the implementation of the DP ops (dp_gather.h's lowering of
/// dp_gather_* / dp_scatter / dp_reduce_scatter): kNone is SGLang's code;
/// mutants and tests plant the others.
enum class DpFault : std::uint8_t {
  kNone,
  /// A replicate gather under MAX_LEN with attn_tp > 1 keeps the rows of the
  /// attention-TP ranks != 0 before the attn_tp reduce-scatter (no fill_(0)).
  kSkipZeroFill,
  /// The all-reduce path's writer rule with is_partial swapped: a partial
  /// gather written by attention-TP rank 0 only, a replicate one by every
  /// attention-TP rank.
  kWriterRuleSwapped,
  /// Slot offsets from the raw token counts, not the attn_tp-aligned ones.
  kUnalignedSlots,
  /// A CP-sharded DP shard (cp_shard_counts): every CP rank writes and takes
  /// back its shard at the DP slot's start, without the counts before it.
  kCpShardOffsetDropped,
  /// A CP-sharded DP shard: dp_scatter takes back the next CP rank's shard.
  kCpPeerShard,
};

/// Two-batch overlap (TBO, tbo.h): the part of the batch an op runs on. kWhole
/// is the batch as it is before the split and after the merge; kA and kB are
/// the two halves the TBO layers run on (child A = the first tokens of every
/// DP shard, child B the rest).
enum class Half : std::uint8_t { kWhole, kA, kB };
inline constexpr int kHalfLanes = 3;
std::string_view halfName(Half half);

/// Variable-size collectives (all_gatherv, reduce_scatterv): what the `sizes`
/// list the engine passes holds. The collective needs one entry per member of
/// its group; a list of another length fails its call (property 4 says so).
enum class SplitSizes : std::uint8_t {
  kPerMember,   ///< one row count per member of the group
  kPerDpShard,  ///< one per attention-DP shard (get_dp_global_num_tokens)
};

/// DP gathers (dp_gather_partial / dp_gather_replicate): the global buffer
/// the engine gathers into (get_global_dp_buffer, sized by the
/// global_dp_buffer_len that set_dp_buffer_len last published). Only the
/// gathered one can hold the gather; property 4 reports the others.
enum class DpBuffer : std::uint8_t {
  kGathered,   ///< the whole DP group's buffer (every case but below)
  kUnset,      ///< None: a TBO child's, which the stage executor publishes per stage
  kChildRows,  ///< a TBO child's own token range (moe_dense_tp_size 1)
};

/// No group: the op does not communicate (or, for compute, its weights are
/// replicated).
inline constexpr std::int8_t kNoAxis = -1;

/// One op of one rank. The semantics of each kind (effect on rows, what it
/// checks) are defined once, by the ledger (ledger.h).
struct Op {
  std::int16_t layer = 0;  ///< decoder layer index in its stack
  std::int16_t stage = 0;  ///< stage index in its stack (== layer for single-stage layers)
  std::uint8_t stack = 0;  ///< 0 = the main stack, 1 = the MTP step
  Phase phase = Phase::kEntry;
  OpKind kind = OpKind::kNorm;
  Tensor tensor = Tensor::kHidden;
  /// The group (an Axis) for communicating ops; for compute, the group its
  /// weights are split over, i.e. the sum its output owes; kNoAxis otherwise.
  std::int8_t axis = kNoAxis;
  Rows rows_in;            ///< layout and count read
  Rows rows_out;           ///< layout and count written
  std::int64_t bytes = 0;  ///< payload this rank moves (collectives) or touches (local ops), bf16
  /// slice only: the attention-TP position whose slice is taken (-1: the
  /// rank's own, as every real plan does; mutants set it). Not in the JSON.
  std::int8_t slice_of = -1;
  /// DP ops only: a fault planted in their lowering (kNone: SGLang's). Not in the JSON.
  DpFault dp_fault = DpFault::kNone;
  /// TBO only: the half of the batch the op runs on (its rows are that
  /// half's). Not in the JSON.
  Half half = Half::kWhole;
  /// TBO only: the op moves `half`'s rows between the whole batch and the
  /// half: a slice is the split (whole -> half), an add the merge (half ->
  /// its rows of the whole). Not in the JSON.
  bool tbo_move = false;
  /// v-collectives: the sizes list the engine passes (JSON "sizes_per" on them).
  SplitSizes sizes = SplitSizes::kPerMember;
  /// DP gathers: the global buffer the engine passes (kGathered elsewhere).
  /// Not in the JSON (it differs only in TBO halves, which the JSON lacks).
  DpBuffer dp_buffer = DpBuffer::kGathered;
  /// The engine call that issues the op (declared plans; kUnnamed elsewhere).
  /// Not in the JSON.
  EngineSite site = EngineSite::kUnnamed;
  /// Reductions (all_reduce, ar_add_norm, reduce_scatter(v)) only: the
  /// reduced value is divided by this. 1 is a sum, as in every real plan; the
  /// group size is ncclAvg. Mutants set it. Not in the JSON.
  std::int16_t divide_by = 1;
  /// Gathers and reduce-scatters only: member k's chunk is member
  /// (k + chunk_shift) mod n's (0: its own, as in every real plan): a gather
  /// concatenating in another rank order, a reduce-scatter keeping another
  /// member's chunk. Mutants set it. Not in the JSON.
  std::int8_t chunk_shift = 0;

  bool hasGroup() const { return axis != kNoAxis; }
  Axis groupAxis() const { return static_cast<Axis>(axis); }
  friend bool operator==(const Op&, const Op&) = default;
};

/// The sum a value still owes when it crosses a boundary (reference §0).
enum class SumGroup : std::uint8_t { kNone, kAttnTp, kTp, kMoeOutput, kDpReturn };
std::string_view sumGroupName(SumGroup group);

/// Who completes an owed sum.
enum class Completer : std::uint8_t {
  kNone,           ///< nothing is owed
  kConsumerEntry,  ///< declared partial: the consumer's entry completes it
  kCarried,        ///< deferred by the producer's exit, carried to the next entry
};
std::string_view completerName(Completer completer);

/// What one side of a boundary says crosses it.
struct Handoff {
  RowKind rows = RowKind::kAttention;  ///< rows the value is on
  SumGroup owes = SumGroup::kNone;     ///< sum still owed
  Completer completer = Completer::kNone;
  bool residual = true;  ///< a residual travels with the value
  friend bool operator==(const Handoff&, const Handoff&) = default;
};

/// The op kinds of one entry or exit, inline (a boundary has a handful; the
/// planner builds thousands of boundaries per second without allocating).
class OpKindList {
 public:
  static constexpr int kCapacity = 8;
  OpKindList() = default;
  OpKindList(std::initializer_list<OpKind> kinds) {
    for (OpKind k : kinds) push_back(k);
  }
  void push_back(OpKind k) {
    if (size_ < kCapacity) kinds_[size_++] = k;
  }
  void reserve(size_t) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  OpKind operator[](size_t i) const { return kinds_[i]; }
  const OpKind* begin() const { return kinds_; }
  const OpKind* end() const { return kinds_ + size_; }
  std::vector<OpKind> toVector() const { return {begin(), end()}; }
  friend bool operator==(const OpKindList& a, const OpKindList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const OpKindList& a, const std::vector<OpKind>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  OpKind kinds_[kCapacity] = {};
  std::uint8_t size_ = 0;
};

/// A boundary between stage `from` and stage `from + 1` of one stack
/// (from = -1: the embedding into stage 0; to = stage count: the final norm).
struct Boundary {
  std::uint8_t stack = 0;
  int from = 0;
  int to = 0;
  Handoff exit;               ///< what the producer's exit declares it hands on
  Handoff entry;              ///< what the consumer's entry declares it expects
  bool pipeline_cut = false;  ///< producer and consumer on different pp ranks
  OpKindList exit_steps;      ///< ops of the producer's exit (rank 0's view)
  OpKindList entry_steps;     ///< ops of the consumer's entry (rank 0's view)
  friend bool operator==(const Boundary&, const Boundary&) = default;
};

/// One stage of a stack.
struct StageInfo {
  std::uint8_t stack = 0;
  int layer = 0;
  LayerKind kind = LayerKind::kMamba;
  std::int8_t weight_axis = kNoAxis;  ///< group its weights are split over (kNoAxis: replicated)
  int shards = 1;                     ///< size of that group: the terms p(s, t, j), j < shards
  int pp_rank = 0;                    ///< pipeline stage that runs it
  bool terminal = false;              ///< last stage of its stack
  /// A branch stage reads the normed input of another stage (-1: its own).
  int reads_norm_of = -1;
  /// The first stage whose complete input includes this stage's contribution
  /// (-1: the next stage); a branch joins where it is merged.
  int joins_at = -1;
  friend bool operator==(const StageInfo&, const StageInfo&) = default;
};

/// A plan: the case it was built for, the stages, the boundaries, and the
/// ops of every rank.
struct Plan {
  std::string policy;                          ///< "declared", "legacy", "naive"
  Case source;                                 ///< the case (model, config, flags, batch)
  DpPadding padding = DpPadding::kMaxLen;      ///< resolved padding mode
  CpLayout cp_layout = CpLayout::kReplicated;  ///< how the batch lies over attention CP
  /// How attention rows split into local rows: every executor builds its
  /// RowMap with it (LayerNorm SP: SGLang's padded equal shards).
  LocalSplit local_split = LocalSplit::kTensorSplit;
  /// What the attention rows hold: the tokens, or (DP attention under
  /// MAX_LEN) the padded local DP buffer; every executor builds its RowMap with it.
  AttentionPad attention_pad = AttentionPad::kTokens;
  std::vector<StageInfo> stages;  ///< stack 0 stages, then stack 1 (MTP)
  std::vector<Boundary> boundaries;
  std::vector<std::vector<Op>> ranks;  ///< ops per rank
  /// TBO: the split token index of each DP shard (child A's tokens); empty
  /// when the batch runs whole (tbo.h).
  std::vector<int> tbo_split;

  int world() const { return static_cast<int>(ranks.size()); }
  /// Index into `stages` of (stack, stage); -1 when absent.
  int stageIndex(int stack, int stage) const;
  int stackSize(int stack) const;
};

}  // namespace seam
