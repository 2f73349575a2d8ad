// What `seam sweep` prints: a line per model (checked, refused, violated,
// cases/s), the refusal reasons, the failing cases with the `seam check`
// line that reproduces each, and the last line
// "N cases, K violations, R cases/s".
#pragma once

#include <string>

#include "seam/properties/sweep.h"

namespace seam::reports {

std::string renderSweep(const properties::SweepSpec& spec, const properties::SweepResult& result);

/// The exact last line: "N cases, K violations, R cases/s".
std::string sweepSummaryLine(const properties::SweepResult& result);

}  // namespace seam::reports
