// The verdicts a sweep worker has reached in the configuration it is on, kept
// so that a case whose plan gives the ledger and the judges exactly the same
// inputs as an earlier case's takes that verdict instead of replaying.
//
// The judges read the case (plan.source) as well as the ops, but never its
// `fusion` or `reduction` flag: those two reach them only through the ops
// the planner chose. So two cases of one configuration that differ only in
// those flags and plan the same ops get the same verdict (the test
// JudgesReadNeitherFusionNorReductionFromTheCase holds the judges to it).
// Everything else is compared exactly: no hash decides a match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "seam/properties/check.h"
#include "seam/sim/plan/plan.h"

namespace seam::properties {

/// What a sweep records of a checked case.
struct CaseVerdict {
  std::optional<Violation> violation;  ///< the first violation, if any
  std::string engine_site;             ///< where in the engine it lies (engine findings)
  std::uint64_t plan_hash = 0;         ///< planHash of the plan (equal plans, equal hashes)
};

/// One configuration's verdicts, oldest first, within a byte budget. A plan
/// is found when it gives the ledger and the judges the inputs of a kept
/// one: every plan field and op equal, and the case's batch and flags equal
/// but for `fusion` and `reduction` (model and configuration: one per memo). A sweep
/// meets a case's twin a few dozen cases later (the flag sets that differ only
/// in fusion or reduction), so a window of the latest plans finds nearly all.
class VerdictMemo {
 public:
  /// `budget`: bytes of ops kept at most (a plan that alone exceeds it is not kept).
  explicit VerdictMemo(std::size_t budget = kDefaultBudget) : budget_(budget) {}
  static constexpr std::size_t kDefaultBudget = std::size_t{16} << 20;

  /// Forget every plan: call when the model or configuration changes.
  void clear();
  /// The verdict kept for a plan with the same judge inputs as `plan`, or
  /// null. Its plan_hash is `plan`'s too (the ops are equal): a sweep hashes
  /// only the plans it does not find.
  const CaseVerdict* find(const Plan& plan) const;
  /// Keep `plan`'s verdict (`verdict.plan_hash`: planHash(plan)), evicting
  /// the oldest plans past the budget.
  void keep(const Plan& plan, const CaseVerdict& verdict);
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Plan shell;                        ///< the plan without its ranks' ops
    std::vector<int> rank_ops;         ///< rank -> index into `ops`
    std::vector<std::vector<Op>> ops;  ///< distinct op lists, runs of equal ranks shared
    std::size_t bytes = 0;
    CaseVerdict verdict;
  };
  static bool matches(const Entry& e, const Plan& plan);

  std::size_t budget_;
  std::size_t bytes_ = 0;
  std::deque<Entry> entries_;
};

}  // namespace seam::properties
