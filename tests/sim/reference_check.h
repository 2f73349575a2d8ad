// Shared by the sim tests that link seam_properties (the backend tests include
// case_builders.h without it): a correct plan's properties and its exact-mode
// agreement with the single-rank reference, in one call.
#pragma once

#include <gtest/gtest.h>

#include "seam/properties/check.h"
#include "seam/sim/model/case.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::testing {

/// A correct plan of `c`: every property holds, and its exact-mode run is
/// bit-identical to the single-rank reference (DESIGN §6).
inline void expectHoldsAndMatchesTheReference(const Case& c, const Plan& plan) {
  const numeric::Shape shape{.hidden = 8, .inner = 16};
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_TRUE(verdict.holds()) << (verdict.firstViolation() ? verdict.firstViolation()->detail
                                                            : "");
  const NumericRun run = runPlanNumeric(plan, numeric::Mode::kExact, shape);
  ASSERT_TRUE(run.ran());
  EXPECT_TRUE(compareOutputs(runReference(c, numeric::Mode::kExact, shape), run.output).identical);
}

}  // namespace seam::testing
