// The properties of DESIGN §4 over one plan, as values: each property's
// verdict and its first violation. Nothing is printed here (STYLE 5).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// Properties 1-6 (7, executors agree, needs the numeric executor).
inline constexpr std::array<Property, 6> kPlanProperties = {
    Property::kBoundariesAgree,  Property::kOwedOnce,       Property::kResidualFollows,
    Property::kCollectivesMatch, Property::kOutputComplete, Property::kSnapshots};

/// The verdict on one property.
struct PropertyVerdict {
  Property property = Property::kOwedOnce;
  bool holds = true;
  /// False when an earlier violation stopped the replay before this property
  /// could be judged (a deadlock ends the run).
  bool judged = true;
  std::optional<Violation> first;  ///< its first violation
};

/// All verdicts on one plan.
struct PlanVerdict {
  std::vector<PropertyVerdict> properties;  ///< in kPlanProperties order
  std::int64_t ops_executed = 0;
  bool holds() const;
  /// The first violation over all properties (by property number), if any.
  std::optional<Violation> firstViolation() const;
};

/// Property 1: the exit side and the entry side of every boundary declare the
/// same rows, the same owed sum, the same completer and the same residual.
std::vector<Violation> checkBoundariesAgree(const Plan& plan);

/// Property 4, statically: on every communicator, every member issues the
/// same sequence of collectives with the same kinds and byte counts.
std::vector<Violation> checkCollectiveSequences(const Plan& plan);

/// How much to judge.
enum class Depth {
  kFirst,  ///< stop at the first violation (sweeps, campaigns)
  kAll,    ///< judge every property, collecting each one's first violation (`seam check`)
};

/// Properties 1-6 of one plan; `ledger` is reused scratch.
PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, Depth depth = Depth::kFirst);

}  // namespace seam::properties
