// Private to properties/: one finished case counted into a sweep's totals,
// the same rule for the serving and the training sweep.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "seam/properties/sweep.h"

namespace seam::properties {

/// Counts one finished case into `result` and its model's `tally`: refused
/// (its reason into `refusals`; seam's gaps also as not modelled) or checked,
/// and violated. True when it is a violation the result still lists (the
/// first `max_failures`, in case order).
inline bool countCase(SweepResult& result, ModelTally& tally,
                      std::map<std::string, std::int64_t>& refusals, bool refused,
                      const std::string& refusal, bool violated, int max_failures) {
  if (refused) {
    ++tally.refused;
    ++result.refused;
    if (isNotModelled(refusal)) {
      ++tally.not_modelled;
      ++result.not_modelled;
    }
    ++refusals[refusal];
    return false;
  }
  ++tally.checked;
  ++result.checked;
  if (!violated) return false;
  ++tally.violated;
  ++result.violated;
  return static_cast<int>(result.failures.size()) < max_failures;
}

}  // namespace seam::properties
