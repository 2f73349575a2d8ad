#include "seam/properties/diff.h"

#include <gtest/gtest.h>

#include <vector>

#include "../sim/case_builders.h"

namespace seam::properties {
namespace {

using seam::testing::patternCase;

CaseDiff legacyVsDeclared(const Case& c) {
  Ledger ledger;
  return diffCase(c, PolicyKind::kLegacy, PolicyKind::kDeclared, ledger);
}

Flags fusion(bool on) {
  Flags f;
  f.fusion = on;
  return f;
}

TEST(Diff, TheFusedPathIsIdenticalUnderBothPolicies) {
  EXPECT_EQ(legacyVsDeclared(patternCase("M-*E", {.tp = 2}, {4}, fusion(true))).cls, DiffClass::kIdentical);
}

TEST(Diff, WithoutFusionAnFfnToMixerAllReduceMovesPastTheNextLayersStart) {
  const CaseDiff d = legacyVsDeclared(patternCase("M-M*-", {.tp = 2}, {4}, fusion(false)));
  EXPECT_EQ(d.cls, DiffClass::kMoved);
  EXPECT_NE(d.detail.find("all_reduce[tp] (layer 1 exit) in legacy runs as all_reduce[tp] (layer 2 entry)"),
            std::string::npos)
      << d.detail;
}

TEST(Diff, AnFfnAfterAnFfnOrAtTheStackStartDropsTheLegacyZeroUpdateReduction) {
  for (const char* p : {"--", "-M", "*E-M", "E*E-"}) {
    const CaseDiff d = legacyVsDeclared(patternCase(p, {.tp = 2}, {4}, fusion(true)));
    EXPECT_EQ(d.cls, DiffClass::kZeroUpdateDropped) << p << ": " << d.detail;
  }
}

Flags capturing(std::vector<int> stages) {
  Flags f;
  f.capture = std::move(stages);
  return f;
}

TEST(Diff, LegacysAuxCaptureAllReducesACopyAndOverOneRankThatReductionIsDropped) {
  // tp = 1: the attention all-reduce of the copy runs over a group of one rank.
  const CaseDiff one = legacyVsDeclared(patternCase("M*M*", {.tp = 1}, {4}, capturing({2})));
  EXPECT_EQ(one.cls, DiffClass::kSize1Dropped) << one.detail;
  // tp = 2: the copy is all-reduced beside the entry's own (fused) all-reduce.
  const CaseDiff two = legacyVsDeclared(patternCase("M-M-", {.tp = 2}, {4}, capturing({2})));
  EXPECT_EQ(two.cls, DiffClass::kEqualValues) << two.detail;
  // The legacy plan itself holds: its snapshot is the complete hidden state.
  auto plan = buildPlan(patternCase("M-M-", {.tp = 2}, {4}, capturing({1, 2})), PolicyKind::kLegacy);
  ASSERT_TRUE(plan.hasValue());
  Ledger ledger;
  EXPECT_TRUE(checkPlan(*plan, ledger).holds());
  int copies = 0;
  for (const Op& op : plan->ranks[0]) copies += op.kind == OpKind::kAllReduce && op.tensor == Tensor::kSnapshot;
  EXPECT_EQ(copies, 2);
}

TEST(Diff, UnderDpAttentionLegacyReturnsAtTheExitAndDeclaredAtTheNextEntry) {
  const CaseDiff d = legacyVsDeclared(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 3}));
  EXPECT_EQ(d.cls, DiffClass::kMoved) << d.detail;
}

TEST(Diff, TheNaiveBaselineRunsDifferentReductionsWithEqualValuesWhereDeclaredFuses) {
  Ledger ledger;
  const CaseDiff d = diffCase(patternCase("-M", {.tp = 2}, {4}, fusion(true)), PolicyKind::kNaive,
                              PolicyKind::kDeclared, ledger);
  EXPECT_EQ(d.cls, DiffClass::kEqualValues) << d.detail;
}

TEST(Diff, TheNaiveBaselineHoldsOnEveryCaseOfTheSyntheticSpace) {
  SweepSpec spec;
  spec.models = syntheticDiffModels();
  spec.world = 4;
  spec.policy = PolicyKind::kNaive;
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_GT(r->checked, 0);
  EXPECT_EQ(r->violated, 0);
}

TEST(Diff, BothPoliciesRefuseWhatNemotronHRefuses) {
  EXPECT_EQ(legacyVsDeclared(patternCase("M-", {.tp = 2, .attn_cp = 2}, {4})).cls, DiffClass::kBothRefuse);
}

TEST(Diff, NoCaseOfTheSyntheticSpaceHasValuesThatDiffer) {
  DiffSpec spec;
  spec.models = syntheticDiffModels();
  spec.worlds = {1, 2, 4};
  spec.jobs = 2;
  auto r = runDiff(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_GT(r->cases, 0);
  EXPECT_EQ(r->counts[static_cast<int>(DiffClass::kValuesDiffer)], 0);
  EXPECT_GT(r->counts[static_cast<int>(DiffClass::kMoved)], 0);
  EXPECT_GT(r->counts[static_cast<int>(DiffClass::kZeroUpdateDropped)], 0);
  EXPECT_GT(r->counts[static_cast<int>(DiffClass::kIdentical)], 0);
  // Every example replays as a one-case `seam diff` line.
  for (int k = 0; k < kDiffClassCount; ++k) {
    if (r->counts[k] > 0) EXPECT_EQ(r->examples[k].reproduce.rfind("seam diff ", 0), 0u);
  }
}

}  // namespace
}  // namespace seam::properties
