// The views of one rank's plan that `seam plan` prints (DESIGN §9): a text
// table for people, one JSON object for scripts, and JSON lines (one op per
// line), the engine-trace format that `--trace FILE` reads back.
#pragma once

#include <string>

#include "seam/reports/table.h"
#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::reports {

/// Refuses a `--rank` outside the plan's world, e.g.
/// "--rank 9 is not in 0..7 (world 8)".
Status checkRank(const Plan& plan, int rank);

/// The ops of `plan.ranks[rank]`, in order. `rank` must pass checkRank.
///  - kText: a header line (model, policy, rank, config, flags with the
///    resolved padding, tokens), a table of the ops, then "N ops: " and the
///    count of each kind, most frequent first.
///  - kJson: one object {"model", "pattern", "policy", "config", "rank",
///    "ops", "summary"} with the keys in DESIGN §9's order; an op of the MTP
///    step also carries "stack".
///  - kJsonl: one self-contained op object per line, each with "rank".
/// `lower_dp` (text only): under each DP op, the steps it lowers to on this
/// rank (dp_gather.h: collectives with their group, rows and bytes, local
/// copies with their slot offset); the JSON views never change.
std::string renderPlan(const Plan& plan, int rank, Format format, bool lower_dp = false);

}  // namespace seam::reports
