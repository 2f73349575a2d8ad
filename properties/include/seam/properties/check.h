// The properties of DESIGN §4 over one plan, as values: each property's
// verdict and its first violation. Nothing is printed here (STYLE 5).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/judge_geometry.h"
#include "seam/sim/replay/judge_rows.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// Properties 1-6, 8 and 9 (7, executors agree, needs the numeric executor).
inline constexpr std::array<Property, 8> kPlanProperties = {
    Property::kBoundariesAgree,  Property::kOwedOnce,       Property::kResidualFollows,
    Property::kCollectivesMatch, Property::kOutputComplete, Property::kSnapshots,
    Property::kCallSizes,        Property::kPlanGeometry};

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
  /// The violation a check that stops at its first failing judge names (a
  /// sweep's, Depth::kFirst): of the first judge to fail, the lowest property;
  /// of the ledger, the first in replay order. Set under either depth, so
  /// `seam check` names what a sweep's row names and not a later consequence.
  std::optional<Violation> earliest;
  bool holds() const;
  /// `earliest` where set, else the first violation by property number.
  std::optional<Violation> firstViolation() const;
};

/// Property 1: the exit side and the entry side of every boundary declare the
/// same rows, the same owed sum, the same completer and the same residual.
std::vector<Violation> checkBoundariesAgree(const Plan& plan);

/// Property 4, statically: on every communicator, every member issues the
/// same sequence of collectives with the same kinds and byte counts. The
/// communicators and a DP op's collectives are the judges' (JudgeGroups,
/// judgeLowerDp on the buffers of `g`), never the planner's Topology or lowerDpOp.
std::vector<Violation> checkCollectiveSequences(const Plan& plan, const JudgeGeometry& g);
/// The same on judgeGeometry(plan.source).
std::vector<Violation> checkCollectiveSequences(const Plan& plan);

/// Property 1 from the ops alone (a trace's own, not the policy's
/// declarations): where the hidden state leaves one stage for the next on a
/// rank, the next stage reads the rows the last one wrote.
std::vector<Violation> checkOpBoundaries(const Plan& plan);

/// Property 3, statically: on every rank, per stage (and TBO half), the
/// hidden state is added into the residual (add on the residual, add_norm,
/// ar_add_norm) at most once, and the residual into the hidden state (add on
/// the hidden state) at most once. A second `hs += residual` finds no
/// residual, so the ledger cannot see it. An absorb of a zero-filled hidden
/// state (legacy's zero update) adds nothing and is not counted.
std::vector<Violation> checkResidualOnce(const Plan& plan);

/// Property 6 from the case's capture list: on every rank that runs a
/// requested stage there is exactly one snapshot at its entry, and no other.
std::vector<Violation> checkRequestedSnapshots(const Plan& plan, const JudgeGeometry& g);

/// Property 8: every op's row counts are the judges' for its layouts and
/// rank, and every collective's bytes are its rows times hidden times 2.
std::vector<Violation> checkCallSizes(const Plan& plan, const JudgeGeometry& g);

/// Property 9: the plan's padding, CP layout, local split, attention rows, TBO split and
/// stages agree with the judges' geometry; each disagreement names the field.
std::vector<Violation> checkPlanGeometry(const Plan& plan, const JudgeGeometry& g);

/// How much to judge.
enum class Depth {
  kFirst,  ///< stop at the first violation (sweeps, campaigns)
  kAll,    ///< judge every property, collecting each one's first violation (`seam check`)
};

/// Which ranks issue, byte for byte, the op list of the rank before them (the
/// ranks of one TP group in one stage mostly do: 7 in 10 ranks of a world 8
/// or world 64 sweep). Equal bytes are equal fields; padding bytes that
/// differ can only hide an equal list, never join two unequal ones. A judge
/// whose finding on a rank depends on the rank only through its ops (and
/// through what the judge checks to be equal for both ranks) reads such a
/// rank no further once the rank before has passed: it would find the same.
class SameOps {
 public:
  SameOps() = default;
  explicit SameOps(const Plan& plan) { compare(plan); }
  void compare(const Plan& plan);
  bool asBefore(int rank) const { return same_[static_cast<size_t>(rank)] != 0; }

 private:
  std::vector<char> same_;  // [rank]
};

/// What the static judges keep between the plans one thread checks: the
/// process groups of the last configuration (a sweep checks each
/// configuration's cases in a row) and the ranks that repeat the ops before.
class JudgeScratch {
 public:
  /// The judges' groups of `config` (JudgeGroups), built when it changes.
  const JudgeGroups& groups(const ParallelConfig& config) {
    if (!groups_ || !(groups_->config() == config)) groups_.emplace(config);
    return *groups_;
  }
  SameOps same_ops;

 private:
  std::optional<JudgeGroups> groups_;
};

/// Properties 1-6, 8 and 9 of one plan; `ledger` and `scratch` are reused scratch.
PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, JudgeScratch& scratch,
                      Depth depth = Depth::kFirst);
/// The same with scratch of its own.
PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, Depth depth = Depth::kFirst);

}  // namespace seam::properties
