// Property 4 on the arguments of a call: a variable-size collective is given
// one row count per member of its group, and a fused kernel no more rows
// than it accepts, or the call cannot run. The planner
// records the sizes list the engine passes (Op::sizes); this judge counts it
// from the case's configuration, not from anything the planner derived.
#pragma once

#include <vector>

#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// Property 4: every all_gatherv / reduce_scatterv is passed one size per
/// member of its group, and every fused all-reduce + add + RMSNorm runs on at
/// most the 2048 rows FlashInfer's kernel accepts. One violation per call
/// site (the first rank that issues it), in rank and op order.
std::vector<Violation> checkCallArguments(const Plan& plan);

}  // namespace seam::properties
