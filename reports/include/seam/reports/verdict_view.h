// Words for verdicts and violations: what `seam check` prints and what the
// sweep's failure lines say.
#pragma once

#include <string>

#include "seam/properties/check.h"
#include "seam/reports/table.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::reports {

/// `seam check`: a header naming the case, one row per property (holds /
/// VIOLATED / not judged) and the first violation in words; JSON on request.
std::string renderVerdict(const Plan& plan, const properties::PlanVerdict& verdict, Format format);

}  // namespace seam::reports
