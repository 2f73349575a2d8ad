// The plans of the training family: per rank, an ordered list of
// TrainingOps in the op vocabulary of DESIGN §2.5 (compute kernels, local
// rearrangements, collectives over the mesh's axes), forward then backward,
// over named tensors; and the planner that builds them for a TrainingCase.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/training/training_case.h"

namespace seam {

/// The mesh axes of training plans (a group is an axis and its rank list).
enum class TrainAxis : std::uint8_t {
  kNone,
  kCp,           ///< context parallel
  kTp,           ///< Megatron tensor (and sequence) parallel
  kEp,           ///< expert parallel (PrimeRL: dp_shard x cp flattened, blocks of ep)
  kFsdp,         ///< PrimeRL dp_shard x cp: parameter all-gather, gradient reduce-scatter
  kDpReplicate,  ///< PrimeRL HSDP replicas: gradient all-reduce
  kExpertDp,     ///< experts' data parallel (PrimeRL dp_mod_ep, Megatron expert-DP)
  kDpCp,         ///< Megatron DDP over dp x cp
  kExpertTp,     ///< Megatron expert tensor parallel (expt_tp)
  kTpEp,         ///< Megatron expert tp x ep (tp_ep: the dispatcher's counts)
  kTpDpCp,       ///< Megatron tp x dp x cp: every rank at pp 1 (expert-bias counts)
};
/// "cp", "tp", "ep", "fsdp", "dp_replicate", "expert_dp", "dp_cp",
/// "expert_tp", "tp_ep", "tp_dp_cp" ("-": none).
std::string_view trainAxisName(TrainAxis axis);

/// Where an op runs.
enum class Pass : std::uint8_t { kForward, kBackward };

/// What a compute op's kernel is: it fixes the layout it expects its inputs
/// in and what it checks (training-layouts §1.3-1.6, §2.2-2.6).
enum class Kernel : std::uint8_t {
  kNone,
  kNorm,       ///< RMSNorm on local tokens
  kLinear,     ///< token-local GEMM(s) on the rank's tokens (possibly SP-gathered)
  kAdd,        ///< residual add
  kConv,       ///< Mamba causal conv1d: all tokens of the row, in global order, resets at documents
  kSsd,        ///< Mamba SSD scan: as kConv
  kGatedNorm,  ///< Mamba gated RMSNorm: whole norm groups on the rank
  kAttention,  ///< varlen attention: the q heads' KV heads present, all keys in the expected order,
               ///< resets
  kRouter,     ///< router scores + top-k: cells (token, expert)
  kExperts,    ///< grouped experts on the cells of the rank's experts
  kLoss,       ///< the final norm + head + loss on local tokens (starts backward)
};
/// "norm", "conv1d", "attention", ... ("-": none).
std::string_view kernelName(Kernel k);

/// A local linear rearrangement (kind slice or add).
enum class Transform : std::uint8_t {
  kNone,
  kRepeat,      ///< repeat_interleave units (KV heads, B/C groups) into `reps` replicas
  kSumRepeats,  ///< backward of kRepeat: sum the replicas back onto their source units
  kReorder,     ///< permute positions: out[i] = in[perm[i]] (zigzag undo/redo)
  kSliceParam,  ///< CP (and TP) slice of per-head parameters: the gradient lands in the slice
  kScatterSeq,  ///< split the token dim into `group` pieces and keep the rank's own (no data
                ///< exchange)
  kSumOverK,    ///< unpermute: sum a token's (token, expert) cells into one token cell
  kPermute,     ///< backward of kSumOverK: copy a token's cell to each of its (token, expert) cells
  /// multiply each (token, expert) cell by its routing weight (times
  /// routed_scaling_factor); its own backward (d(w x)/dx = w)
  kRouteWeight,
};
/// "repeat", "reorder", "slice_param", ... ("-": none).
std::string_view transformName(Transform t);

/// How an all-to-all chooses destinations.
enum class A2aMode : std::uint8_t {
  kNone,
  kSeqToHead,  ///< split the units into n contiguous chunks, chunk k to member k; gather tokens
               ///< rank-major
  kHeadToSeq,  ///< split the tokens into n contiguous pieces, piece k to member k; gather units
               ///< rank-major
  kToExpert,   ///< EP dispatch: each (token, expert) cell to the member owning the expert
  kToSource,   ///< EP combine (and every backward of a dispatch): each cell back where it came from
};
/// "seq->head", "head->seq", "dispatch", "combine" ("-": none).
std::string_view a2aModeName(A2aMode m);

/// What a tensor's units are (the ledger's ownership checks read it).
enum class Space : std::uint8_t { kHidden, kHeads, kGroups, kQHeads, kKvHeads, kExperts, kParam };

/// A named tensor of a training plan: a buffer (activation `L3.x`, gradient
/// `d:L3.x`) or a parameter (`param:L3.A_log`). A buffer made by a collective
/// or a rearrangement holds the terms of its root tensor (`value_of`); a
/// gradient buffer holds terms of the root's gradient.
struct TensorInfo {
  std::string name;
  Space space = Space::kHidden;
  int value_of = -1;  ///< the root tensor whose terms this buffer holds (-1: itself)
  int grad = -1;      ///< the gradient buffer `d:<name>` (-1: none)
  /// Gradient of a routed tensor: cells must hold this tensor's complete value
  /// at unit 0 (the MoE sum's gradient, copied to every (token, expert)).
  int grad_value = -1;
  int reps = 1;           ///< repeated buffers: replicas per source unit (label = src * reps + i)
  bool tp_split = false;  ///< its units are split over tp (column-parallel outputs)
  /// A routed gradient: complete = sum over the token's top-k experts e of j = e.
  bool routed_grad = false;
  /// Terms of a complete cell: sum over j < shards (contributions of a
  /// sharded producer, or the consumers of a forward tensor whose gradient
  /// this is).
  int shards = 1;
  int units = 1;                ///< feature units (heads, groups, experts, 1 for hidden)
  std::int64_t unit_bytes = 0;  ///< bf16 bytes of one (token, unit) cell
  /// A routed sum (MoE output): complete = sum over the token's top-k experts
  /// of `routed_from`'s (token, expert) cells.
  int routed_from = -1;
  /// Parameters: the per-unit gradient is the sum over the tokens routed to
  /// the unit (experts) instead of over every token.
  bool routed_param = false;
  /// Parameters sharded over tp (Megatron column/row weights): a rank stores
  /// only its tp shard's units.
  bool tp_sharded = false;
  /// Parameters sharded over ep (experts): a rank stores only its experts.
  bool ep_sharded = false;
  int layer = -1;  ///< the layer it belongs to (routing of routed tensors)
};

/// One op of one rank of a training plan. Plain data: the training ledger
/// (training_ledger.h) defines what each kind does.
struct TrainingOp {
  Pass pass = Pass::kForward;
  std::int16_t layer = -1;  ///< decoder layer (-1: embedding / loss)
  char block = ' ';         ///< the layer's pattern character (M * E), ' ' outside layers
  OpKind kind = OpKind::kCompute;
  Kernel kernel = Kernel::kNone;           ///< compute
  Transform transform = Transform::kNone;  ///< slice / add rearrangements
  A2aMode a2a = A2aMode::kNone;            ///< all_to_all
  std::string step;  ///< what the engine calls it: "in_proj", "a2a z", "fsdp rs"
  std::vector<std::int16_t>
      reads;  ///< tensors read (compute: checked complete; collectives: the buffer)
  std::vector<std::int16_t> writes;  ///< tensors written
  std::vector<std::int16_t> params;  ///< parameters a compute uses (their gradients, in backward)
  TrainAxis axis = TrainAxis::kNone;
  std::vector<int> ranks;  ///< the group's members, in group order
  std::int16_t shard = 0;  ///< compute: j of the terms it emits
  /// compute: per read, the j its gradient terms start at (the consumer's
  /// slot among the root's consumers, plus the rank's tp/cp shard).
  std::vector<int> grad_j;
  int reps = 1;               ///< kRepeat / kSumRepeats: replicas per source unit
  std::vector<int> perm;      ///< kReorder; kSumRepeats: the replicas summed (empty: all)
  std::vector<int> segments;  ///< conv/ssd/attention: the cu_seqlens the kernel is given
  std::vector<int>
      unit_list;  ///< kSliceParam / compute / kPermute: the units used (empty: all held)
  std::vector<int> in_splits;   ///< all_to_all: cells sent to each member
  std::vector<int> out_splits;  ///< all_to_all: cells received from each member
  int conj_of = -1;             ///< backward collectives: index of the forward op they undo
  std::int64_t bytes = 0;       ///< payload this rank moves (collectives) or writes
  std::int64_t recv_bytes = 0;  ///< all_to_all with split lists: payload this rank receives
  /// A forward op re-run in backward (activation checkpointing): its pass is
  /// kForward, it sits among the backward ops and rewrites what it wrote.
  bool recompute = false;
  bool hasGroup() const { return axis != TrainAxis::kNone; }
  friend bool operator==(const TrainingOp&, const TrainingOp&) = default;
};

/// Planner decisions a mutant may flip (the schema switch of DESIGN §5 for
/// the training family; plan-level training mutants edit built plans).
enum class TrainingDecision : std::uint8_t {
  kNone,
  kLocalDocBoundaries,  ///< conv/SSD/attention get the local shard's boundaries, not the global
                        ///< ones
  kNoDocBoundaries,     ///< conv/SSD run over the packed row without resets (seq_idx=None)
  kZigzagNotRestored,   ///< Megatron: the load-balance order is not redone after Mamba
  kZigzagNotUndone,     ///< Megatron: conv/SSD run on the zigzag order
};

/// One plan of the training family.
struct TrainingPlan {
  TrainingCase source;
  std::vector<TensorInfo> tensors;
  std::vector<std::vector<TrainingOp>> ranks;  ///< ops per rank, forward then backward
  int world() const { return static_cast<int>(ranks.size()); }
  int tensorId(std::string_view name) const;  ///< -1 when absent
};

/// Plans one training case (validating it first).
Expected<TrainingPlan> buildTrainingPlan(const TrainingCase& c,
                                         TrainingDecision decision = TrainingDecision::kNone);

}  // namespace seam
