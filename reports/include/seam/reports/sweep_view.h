// What `seam sweep` prints: a line per model (checked, refused, violated,
// cases/s), the refusal reasons, the failing cases with the `seam check`
// line that reproduces each, and the last line
// "N cases, K violations, R cases/s".
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "seam/properties/sweep.h"

namespace seam::reports {

/// `most_refusals`: how many refusal reasons to list (the most frequent).
std::string renderSweep(const properties::SweepSpec& spec, const properties::SweepResult& result,
                        std::size_t most_refusals = std::numeric_limits<std::size_t>::max());

/// The exact last line: "N cases, K violations, R cases/s".
std::string sweepSummaryLine(const properties::SweepResult& result);

/// The refusal reasons of a sweep, the engine's first, then seam's gaps
/// ("not modelled yet: ..."), each with its count; "" when none. Past the
/// `most` most frequent, one line counts the reasons and cases left out.
std::string renderRefusals(const std::vector<std::pair<std::string, std::int64_t>>& refusals,
                           std::size_t most = std::numeric_limits<std::size_t>::max());

}  // namespace seam::reports
