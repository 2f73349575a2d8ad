// Shared by the sim tests: cases from a bare pattern, built in one line, and
// the first violation of a wrong plan in both ledger domains.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>
#include <vector>

#include "seam/properties/check.h"
#include "seam/sim/case.h"
#include "seam/sim/ledger.h"
#include "seam/sim/numeric_executor.h"

namespace seam::testing {

/// A case of a bare pattern (shapes borrowed as modelFromPattern does).
inline Case patternCase(std::string_view pattern, ParallelConfig config, std::vector<int> tokens,
                        Flags flags = {}, LayerFamily family = LayerFamily::kSingleStage) {
  Case c;
  auto model = modelFromPattern(pattern, family);
  EXPECT_TRUE(model.hasValue()) << pattern;
  if (model) c.model = *model;
  c.config = config;
  c.batch.tokens = std::move(tokens);
  c.flags = std::move(flags);
  return c;
}

/// A case of a bare two-stage pattern (mixer then FFN per decoder layer).
inline Case twoStageCase(std::string_view pattern, ParallelConfig config, std::vector<int> tokens,
                         Flags flags = {}) {
  return patternCase(pattern, config, std::move(tokens), std::move(flags), LayerFamily::kTwoStage);
}

/// The first violation of a wrong plan, replayed in both ledger domains,
/// which must both find one and agree on its class.
inline Violation firstViolationInBothDomains(const Plan& plan) {
  Ledger ledger;
  const LedgerResult exact = ledger.replay(plan, LedgerOptions{.exact = true});
  const LedgerResult fast = ledger.replay(plan, LedgerOptions{});
  EXPECT_FALSE(fast.holds()) << "the fast ledger finds nothing";
  EXPECT_FALSE(exact.holds()) << "the exact ledger finds nothing";
  if (exact.holds() || fast.holds()) return {};
  EXPECT_EQ(fast.violations.front().cls, exact.violations.front().cls);
  return exact.violations.front();
}

/// A correct plan of `c`: every property holds, and its exact-mode run is
/// bit-identical to the single-rank reference (DESIGN §6).
inline void expectHoldsAndMatchesTheReference(const Case& c, const Plan& plan) {
  const numeric::Shape shape{.hidden = 8, .inner = 16};
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger);
  EXPECT_TRUE(verdict.holds()) << (verdict.firstViolation() ? verdict.firstViolation()->detail : "");
  const NumericRun run = runPlanNumeric(plan, numeric::Mode::kExact, shape);
  ASSERT_TRUE(run.ran());
  EXPECT_TRUE(compareOutputs(runReference(c, numeric::Mode::kExact, shape), run.output).identical);
}

}  // namespace seam::testing
