// Private to properties/: the static judges as checkPlan calls them, with the
// scratch it keeps between plans (JudgeScratch, check.h). Each reads a rank
// whose ops repeat the rank before's (SameOps) no further where its finding
// on that rank could not differ; the public judges (check.h,
// call_arguments.h) are these on scratch of their own.
#pragma once

#include <array>
#include <vector>

#include "seam/properties/check.h"
#include "seam/sim/plan/dp_gather.h"

namespace seam::properties {

/// communicates() and isDpOp() of every op kind, asked once instead of once
/// per op of every rank.
class KindFacts {
 public:
  KindFacts() {
    for (int k = 0; k < kOpKindCount; ++k) {
      communicates_[k] = communicates(static_cast<OpKind>(k));
      dp_[k] = isDpOp(static_cast<OpKind>(k));
    }
  }
  bool communicating(OpKind kind) const { return communicates_[static_cast<int>(kind)]; }
  bool dpOp(OpKind kind) const { return dp_[static_cast<int>(kind)]; }

 private:
  std::array<bool, kOpKindCount> communicates_{}, dp_{};
};

/// The facts, built once (read-only after).
inline const KindFacts& kindFacts() {
  static const KindFacts facts;
  return facts;
}

std::vector<Violation> checkCollectiveSequences(const Plan& plan, const JudgeGeometry& g,
                                                JudgeScratch& scratch);
std::vector<Violation> checkCallArguments(const Plan& plan, JudgeScratch& scratch);
std::vector<Violation> checkRequestedSnapshots(const Plan& plan, const JudgeGeometry& g,
                                               const SameOps& same);
std::vector<Violation> checkCallSizes(const Plan& plan, const JudgeGeometry& g,
                                      const SameOps& same);
std::vector<Violation> checkResidualOnce(const Plan& plan, const SameOps& same);
std::vector<Violation> checkOpBoundaries(const Plan& plan, const SameOps& same);

}  // namespace seam::properties
