// Shared by the policy tests (they link seam_properties): where an op sits in
// a built plan, hand-made wrong plans (an op erased on every rank, or a
// collective turned into a slice), and what the properties say of a plan.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "seam/properties/check.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::testing {

/// The kinds of rank `rank`'s stack-0 ops at one stage and phase. A refused
/// plan has no ranks: a test stops at its mustBuild with the refusal (gtest
/// reports the exception as a failure) instead of reading past `ranks` here.
inline std::vector<OpKind> kindsAt(const Plan& plan, int rank, int stage, Phase phase) {
  std::vector<OpKind> out;
  for (const Op& op : plan.ranks[rank]) {
    if (op.stack == 0 && op.stage == stage && op.phase == phase) out.push_back(op.kind);
  }
  return out;
}

/// The index of rank `rank`'s first stack-0 op of that stage, phase, kind
/// and tensor; -1 if none.
inline int findOp(const Plan& plan, int rank, int stage, Phase phase, OpKind kind,
                  Tensor tensor = Tensor::kHidden) {
  const auto& ops = plan.ranks[rank];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const Op& op = ops[i];
    if (op.stack == 0 && op.stage == stage && op.phase == phase && op.kind == kind &&
        op.tensor == tensor)
      return i;
  }
  return -1;
}

/// Erases that op on every rank that has it; some rank must.
inline void eraseEverywhere(Plan& plan, int stage, Phase phase, OpKind kind,
                            Tensor tensor = Tensor::kHidden) {
  int erased = 0;
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, stage, phase, kind, tensor);
    if (i < 0) continue;
    plan.ranks[r].erase(plan.ranks[r].begin() + i);
    ++erased;
  }
  ASSERT_GT(erased, 0) << opName(kind) << " at stage " << stage;
}

/// Turns the `kind` op at (stage, phase) of every rank into a slice: a
/// collective that should complete a sum, replaced by taking one's own rows.
inline void sliceInsteadEverywhere(Plan& plan, int stage, Phase phase, OpKind kind) {
  for (int r = 0; r < plan.world(); ++r) {
    const int i = findOp(plan, r, stage, phase, kind);
    ASSERT_GE(i, 0) << opName(kind) << " at stage " << stage << " rank " << r;
    plan.ranks[r][i].kind = OpKind::kSlice;
    plan.ranks[r][i].axis = kNoAxis;
  }
}

/// The first violation of a wrong plan (the plan must not hold).
inline Violation firstViolation(const Plan& plan) {
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_FALSE(verdict.holds()) << "the wrong plan holds";
  auto v = verdict.firstViolation();
  return v ? *v : Violation{};
}

/// Every property holds on `plan`.
inline void expectHolds(const Plan& plan) {
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_TRUE(verdict.holds()) << (verdict.firstViolation() ? verdict.firstViolation()->detail
                                                            : "");
}

}  // namespace seam::testing
