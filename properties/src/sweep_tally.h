// Private to properties/: one finished case counted into a sweep's totals,
// the same rule for the serving and the training sweep.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "seam/properties/sweep.h"

namespace seam::properties {

/// `n` cases refused for one reason, counted at once.
inline void countRefused(SweepResult& result, ModelTally& tally,
                         std::map<std::string, std::int64_t>& refusals, const std::string& refusal,
                         std::int64_t n) {
  tally.refused += n;
  result.refused += n;
  if (isNotModelled(refusal)) {
    tally.not_modelled += n;
    result.not_modelled += n;
  }
  refusals[refusal] += n;
}

/// Counts one finished case into `result` and its model's `tally`: refused
/// (its reason into `refusals`; seam's gaps also as not modelled) or checked,
/// and violated. True when it is a violation the result still lists (the
/// first `max_failures`, in case order).
inline bool countCase(SweepResult& result, ModelTally& tally,
                      std::map<std::string, std::int64_t>& refusals, bool refused,
                      const std::string& refusal, bool violated, int max_failures) {
  if (refused) {
    countRefused(result, tally, refusals, refusal, 1);
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
