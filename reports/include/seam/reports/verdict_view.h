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
/// `engine_site` (engine_finding.h), when not empty, names the engine call
/// behind the first violation: the case is an engine finding.
std::string renderVerdict(const Plan& plan, const properties::PlanVerdict& verdict, Format format,
                          const std::string& engine_site = "");

}  // namespace seam::reports
