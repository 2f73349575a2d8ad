// A recording judged against the plan of the case it claims to run
// (docs/recordings.md): its groups mapped onto the case's axes by their
// members, each rank's calls aligned with the collectives the plan owes that
// rank, and the recording checked across ranks as fr_trace checks it. The
// plan is the expectation, not the thing judged: seam's properties judge the
// plan separately.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "seam/recordings/recording.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/training/training_plan.h"

namespace seam::recordings {

/// How SGLang's GroupCoordinator carries an owed call (distributed/
/// parallel_state.py `GroupCoordinator.all_reduce`, `all_gatherv`,
/// `reduce_scatterv`): through NCCL under torch.distributed, which every
/// recording sees; through its own pynccl communicator, which calls NCCL
/// past torch.distributed (NCCL's log sees it, the Flight Recorder does not);
/// or through a kernel of its own, which no recording sees.
enum class Route : std::uint8_t {
  kNccl,
  kCustomAllReduce,  ///< custom all-reduce: a group of 2, 4, 6 or 8 ranks, under 8 MiB
  kFusedKernel,      ///< the fused all-reduce + add + RMSNorm kernel (its own workspace)
  kPynccl,           ///< pynccl (all_gatherv, reduce_scatterv) in a Flight Recorder dump
  kDeepEp,           ///< PrimeRL's DeepEP dispatch and combine (its own buffers, no NCCL call)
};
inline constexpr int kRouteCount = 5;
std::string_view routeName(Route route);

/// What the recorded run could route around NCCL.
struct RecordingRoutes {
  /// SGLang's default; false when the run had --disable-custom-all-reduce.
  bool custom_all_reduce = true;
  /// Whether the recording sees pynccl's calls: NCCL's log does, a Flight
  /// Recorder dump does not (judgeRecording sets it from the format).
  bool sees_pynccl = true;
  /// Whether the recording sees the calls of the engine's own kernels (the
  /// fused all-reduce + add + RMSNorm): seam's recorder does, as it stands
  /// the kernel in with a recorded all-reduce (judgeRecording sets it).
  bool sees_kernels = false;
};

/// One collective the plan owes a rank: the plan op (or the step of a DP
/// op's lowering) that issues it, and what it reads and writes: elements
/// (serving: rows times the hidden size) or bytes (training: the sizes a
/// TrainingOp carries, compared with a recorded call's elements times its
/// dtype's width).
struct OwedCall {
  CallKind kind = CallKind::kOther;
  std::int8_t axis = kNoAxis;  ///< serving: the owed axis
  /// The owed group, as the judge numbers them: serving, the axis (the
  /// rank's group of it); training, an index into the plan's member sets.
  int group = -1;
  std::int64_t in_size = 0;
  std::int64_t out_size = 0;
  bool bytes = false;     ///< sizes in bytes, not elements
  bool in_known = true;   ///< false: what it sends depends on the routing (or is unknown)
  bool out_known = true;  ///< false: what it receives depends on the routing
  int peer = -1;          ///< send/recv: the peer's rank inside the pp group
  int op_index = 0;       ///< into plan.ranks[rank] (training: -1 for a step-level call)
  /// Training: a call the train step issues outside the model's forward and
  /// backward (stepLevelCalls, training_step.cc): its index there; -1 else.
  int step_call = -1;
  int pass = 0;  ///< which repetition of the plan (--passes)
  Route route = Route::kNccl;
};

/// The collectives the plan owes `rank`, in its order, `passes` times over.
/// A group of one rank owes nothing (the engine skips those calls).
std::vector<OwedCall> owedCalls(const Plan& plan, int rank, int passes,
                                const RecordingRoutes& routes = {});

enum class FindingKind : std::uint8_t {
  kExtra,             ///< recorded, owed by no op of the plan here (extra or duplicated)
  kMissing,           ///< owed by the plan, never recorded
  kWrongGroup,        ///< the owed op and sizes over another group of the case
  kWrongSize,         ///< the owed op over the owed group, sizes that do not fit its rows
  kCrossRankOp,       ///< fr_trace: members of a group issued different ops at one sequence number
  kCrossRankSize,     ///< fr_trace: ... different sizes
  kCrossRankDtype,    ///< fr_trace: ... different dtypes
  kCrossRankMissing,  ///< fr_trace: a member never issued a collective the others did
};
std::string_view findingName(FindingKind kind);

/// One finding, at its first divergence.
struct Finding {
  FindingKind kind = FindingKind::kExtra;
  int rank = -1;
  std::string group;  ///< the recorded group's name
  std::int64_t seq = -1;
  std::string call;      ///< what was recorded, in words ("" for kMissing)
  std::string where;     ///< dump entry or log line
  std::string frame;     ///< the innermost recorded stack frame, when present
  std::string expected;  ///< what the plan owes there: layer, stage, boundary, op, group, rows
};

/// A recorded group and the axes of the case whose groups it is.
struct GroupAxes {
  std::string name;
  std::vector<int> members;
  std::vector<Axis> axes;  ///< serving; empty: the whole world, or a group of one rank
  /// The axes' names (serving and training); empty as `axes` is.
  std::vector<std::string> labels;
};

struct RecordingVerdict {
  int calls = 0;      ///< recorded calls
  int explained = 0;  ///< recorded calls tied to an owed call
  int owed = 0;       ///< calls the plan owes the present ranks
  /// Training: recorded calls the engine's train step issues outside the
  /// model that seam knows but does not owe (PrimeRL's metric gathers and
  /// barriers on the default process group): reported, not judged.
  int outside = 0;
  /// Owed calls not recorded whose route is not NCCL: unchecked, by route.
  std::array<int, kRouteCount> hidden{};  ///< [Route]
  std::vector<GroupAxes> groups;
  std::vector<Finding> findings;  ///< per rank in rank order, each rank's first divergence first
  std::vector<PartialEvidence> partial;
  bool holds() const { return findings.empty() && partial.empty(); }
};

/// Judges `rec` against `plan` (the plan of the case, repeated `passes`
/// times). A recording over another world, or a group (that carries a call)
/// that is no group of the case's axes, is refused naming it.
/// An owed call whose route is not NCCL may be absent: it is counted as
/// hidden (partial evidence), not missing.
Expected<RecordingVerdict> judgeRecording(const Recording& rec, const Plan& plan, int passes,
                                          const RecordingRoutes& routes = {});

/// The collectives a training plan owes `rank`, `passes` times over: every
/// TrainingOp with a group of more than one rank, its group the op's own
/// member ranks, its sizes in bytes as the op carries them (all-gather: the
/// output's; reduce-scatter: the input's; all-reduce: both; all-to-all:
/// sent and received). Sizes the routing decides are unknown: what an EP
/// dispatch receives and a combine sends (and their backwards), and uneven
/// gathers and reduce-scatters; DeepEP's calls are routed around NCCL.
std::vector<OwedCall> owedTrainingCalls(const TrainingPlan& plan, int rank, int passes);

/// "bwd (recompute) layer 3 (E) ep dispatch: all_to_all over ep [0,1],
/// 129024 bytes sent".
std::string describeOwedTraining(const TrainingPlan& plan, int rank, const OwedCall& owed);

/// judgeRecording for the training family: groups mapped onto the plan's
/// groups by their members (refused, naming it, when a group that carries a
/// call is none of them), sizes compared in bytes.
Expected<RecordingVerdict> judgeTrainingRecording(const Recording& rec, const TrainingPlan& plan,
                                                  int passes);

/// fr_trace's rules alone: the cross-rank findings (op, sizes, dtype,
/// missing members), group by group, in sequence order.
std::vector<Finding> crossRankFindings(const Recording& rec);

/// "layer 2 stage 2 entry all_reduce over tp, 16 rows (boundary 1->2)".
std::string describeOwed(const Plan& plan, int rank, const OwedCall& owed);

/// The verdict in words; `reproduce` is the `seam check` line of the case.
std::string renderRecordingVerdict(const Recording& rec, const RecordingVerdict& v,
                                   const std::string& reproduce);

/// A recorder's run of the engine in words: which engine and version, its
/// launch flags, the kernels stood in for, and how the run ended (every rank
/// to the end; raised, with the rank, the engine's file:line and message; a
/// collective mismatch or deadlock among a group's members; a timeout; the
/// engine's own argument checks refusing the case).
std::string renderEngineRun(const Recording& rec);

/// Whether the engine's run ended cleanly on every rank ("ran").
inline bool engineRan(const Recording& rec) { return rec.engine.verdict == "ran"; }

/// The same as one JSON object: recording, groups (name, members, axes),
/// calls, explained, owed, findings (every one), partial, outcome ("holds",
/// "partial", "violated"), reproduce.
std::string recordingVerdictJson(const Recording& rec, const RecordingVerdict& v,
                                 const std::string& reproduce);

/// One plan's verdict on a recording, for a comparison of two plans.
struct SideVerdict {
  std::string label;  ///< the plan's policy (and planted decision)
  RecordingVerdict verdict;
  std::string reproduce;  ///< the `seam check ... --recording` line of this side
};

/// `seam diff --recording`: each plan's outcome, calls explained and first
/// divergence, then which plan the recording runs (one, both, neither).
std::string renderRecordingComparison(const Recording& rec, const SideVerdict& a,
                                      const SideVerdict& b);

}  // namespace seam::recordings
