// The training ledger: replays a training plan (training_plan.h) over
// symbolic cells (token, unit) and checks that every consumer sees complete
// values in the order and with the document resets its kernel assumes, and
// that every parameter's gradient is the sum over all tokens exactly once on
// every rank that owns it; and the static collectives property of its plans.
#pragma once

#include <vector>

#include "seam/sim/replay/ledger.h"
#include "seam/sim/training/training_plan.h"

namespace seam {

/// Replays a training plan on every rank: forward, then backward, then the
/// optimizer-step check of every parameter's gradient. Violations use the
/// classes of ledger.h (reset-leak for document boundaries; layout-mismatch for
/// order; deadlock / collective-mismatch for collectives).
LedgerResult replayTraining(const TrainingPlan& plan, int max_violations = 1);

/// Property 4 for training plans, statically: on every group, every member
/// issues the same sequence of collectives (kind, bytes; all-to-all split
/// lists that match pairwise), and every backward collective is the conjugate
/// of the forward op it names (same group, mirrored mode, swapped splits).
std::vector<Violation> checkTrainingCollectives(const TrainingPlan& plan);

/// Both: the static property first, then the replay.
LedgerResult checkTrainingPlan(const TrainingPlan& plan);

}  // namespace seam
