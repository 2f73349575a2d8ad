// Shared by the sim tests: cases from a bare pattern, built in one line, the
// case options of a Megatron training case and its plan, and the first violation of a
// wrong plan in both ledger domains.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/model/model.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"
#include "seam/sim/training/training_plan.h"

namespace seam::testing {

/// The training plan of a case that should build (a test failure and an
/// empty plan otherwise).
inline TrainingPlan trainingPlanOf(const Expected<TrainingCase>& c) {
  EXPECT_TRUE(c.hasValue()) << (c ? "" : c.status().message());
  if (!c) return TrainingPlan{};
  auto p = buildTrainingPlan(*c);
  EXPECT_TRUE(p.hasValue()) << (p ? "" : p.status().message());
  return p ? std::move(*p) : TrainingPlan{};
}

/// The case options of a Megatron training case (etp 0: tp, the default).
inline CaseSpec megatronSpec(int dp, int cp, int tp, int ep, int etp, std::string docs,
                             std::string_view model = "nemotron-3-nano") {
  CaseSpec s;
  s.family = "training";
  s.layout = "megatron";
  s.model = std::string(model);
  s.dp = dp;
  s.cp = cp;
  s.tp = tp;
  s.ep = ep;
  s.etp = etp;
  s.docs = std::move(docs);
  return s;
}

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

/// A case of a model preset (its real pattern and shapes).
inline Case presetCase(std::string_view preset, ParallelConfig config, std::vector<int> tokens,
                       Flags flags = {}) {
  Case c;
  auto found = findPreset(preset);
  EXPECT_TRUE(found.hasValue()) << preset;
  if (found) c.model = *modelFromPreset(**found);
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

/// The plan of a case the test expects to be planned. A refused case throws
/// with the refusal and the command that reproduces it, so the test stops
/// there instead of reading past an empty plan's `ranks`.
inline Plan mustBuild(const Case& c, PolicyKind policy = PolicyKind::kDeclared,
                      const Schema& schema = {}) {
  auto plan = buildPlan(c, policy, schema);
  if (!plan) {
    throw std::runtime_error("buildPlan refused the case: " + std::string(plan.status().message()) +
                             "\n" + reproduceCommand(c, policyName(policy)));
  }
  return std::move(plan).value();
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

}  // namespace seam::testing
