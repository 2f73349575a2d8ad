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

/// The refusal reasons of a sweep, the engine's first, then seam's gaps
/// ("not modelled yet: ..."), each with its count; "" when none.
std::string renderRefusals(const std::vector<std::pair<std::string, std::int64_t>>& refusals);

}  // namespace seam::reports
