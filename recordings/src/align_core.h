// The alignment both families share: one rank's recorded calls aligned with
// the calls its plan owes by an edit distance, and the findings of that
// alignment. What differs between serving and training is which recorded
// group fits an owed group (GroupFits) and how an owed call is described.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "seam/recordings/alignment.h"
#include "seam/sim/replay/judge_geometry.h"
#include "seam/sim/replay/judge_rows.h"

namespace seam::recordings {

/// fits[recorded group][owed group id]: whether the recorded group is the
/// owed group of the rank being aligned.
using GroupFits = std::vector<std::vector<char>>;

enum class Pair : std::uint8_t { kMatch, kWrongGroup, kWrongSize, kNone };

/// One step of an alignment: an owed call (or -1), a recorded call (or -1).
struct Step {
  int owed, recorded;
  Pair pair;
};

/// Aligns one rank's owed and recorded calls (common prefix and suffix
/// first); refused when the differing middle is larger than seam aligns.
Expected<std::vector<Step>> align(const std::vector<OwedCall>& owed,
                                  const std::vector<RecordedCall>& rec, const GroupFits& fits,
                                  int rank);

/// The judges' view of a serving case, from which the calls a plan owes are
/// derived: groups (judge_rows.h), geometry (judge_geometry.h) and the DP
/// buffers of the batch and of each TBO half (JudgeLane), built as the ledger
/// builds them, never from the planner's Topology, DpLayouts or lowerDpOp,
/// so that a fault in the planner's DP lowering is not followed by the
/// recording's judge.
struct ServingJudge {
  explicit ServingJudge(const Plan& plan);
  JudgeGroups groups;
  JudgeGeometry geometry;
  std::vector<JudgeLane> lanes;  ///< the batch, then (the plan runs split) halves A and B
};

/// The collectives `plan` owes `rank` under the judges' view `judge`.
std::vector<OwedCall> owedCalls(const Plan& plan, const ServingJudge& judge, int rank, int passes,
                                const RecordingRoutes& routes);

/// Whether a training op issues a call a recording shows (a group of one
/// rank issues none).
bool issuesCall(const TrainingOp& op);

/// One call a training run's step issues outside the model's forward and
/// backward that the judge owes (training_step.cc: PrimeRL's gradient-norm
/// all-reduces), after the plan's ops, once per pass.
struct StepCall {
  CallKind kind;
  std::vector<int> ranks;  ///< the group's members (a group of the plan's ops)
  std::int64_t bytes;      ///< in and out
  const char* what;        ///< "clip_grad_norm_: the experts' gradient norm (ep)"
};
std::vector<StepCall> stepLevelCalls(const TrainingPlan& plan, int rank);

/// Whether a recorded call is one the engine's step issues outside the model
/// that seam knows but does not owe (PrimeRL's metric gathers and barriers
/// on the default process group): counted, not judged.
bool outsideTheModel(const TrainingPlan& plan, const RecordedGroup& group,
                     const RecordedCall& call);

/// The call a plan op issues, in a recording's words (none: it issues no
/// collective a recording shows).
std::optional<CallKind> callKindOf(OpKind kind);

/// Refuses a recording over another world than the case's.
Status checkWorld(const Recording& rec, int world);

/// "nccl:all_reduce (all_reduce), 5376 elements in, 5376 out, bf16".
std::string recordedWords(const RecordedCall& c);

/// The findings of one rank's alignment, appended to `v` (explained,
/// hidden, findings). `lost_front`: the owed calls before the first
/// recorded one fell out of the recording (labelled partial elsewhere).
void rankFindings(int rank, const std::vector<OwedCall>& owed, const std::vector<RecordedCall>& rec,
                  const std::vector<Step>& steps, bool lost_front,
                  const std::function<std::string(const OwedCall&)>& describe, RecordingVerdict* v);

/// The partial evidence of the owed calls a recording could not see
/// (v->hidden, by route).
void addHidden(RecordingVerdict* v);

}  // namespace seam::recordings
