#include "seam/properties/sweep.h"

#include <gtest/gtest.h>

#include <set>

#include "seam/sim/model/config_space.h"

namespace seam::properties {
namespace {

SweepModel patternModel(const char* pattern) {
  auto m = sweepModel("", pattern);
  EXPECT_TRUE(m.hasValue());
  return *m;
}

TEST(Sweep, EnumeratesCasesConfigByConfigInTheConfigSpacesOrderWithoutRepeats) {
  // The order shard i/n relies on: configs in ConfigSpace order (each
  // config's cases together), every (config, flags, batch) once.
  const SweepModel m = patternModel("M-*E");
  const auto cases = enumerateCases(*m.model, 4);
  auto space = ConfigSpace::build(4);
  ASSERT_TRUE(space.hasValue());
  ASSERT_GT(cases.size(), 0u);
  auto indexOf = [&](const ParallelConfig& k) {
    for (int i = 0; i < space->size(); ++i) {
      if ((*space)[i] == k) return i;
    }
    return -1;
  };
  int last = -1;
  std::set<int> configs_seen;
  for (size_t i = 0; i < cases.size(); ++i) {
    const int at = indexOf(cases[i].config);
    ASSERT_GE(at, 0) << "a config not in the space: " << cases[i].config.describe();
    ASSERT_GE(at, last) << "case " << i << " goes back to an earlier config";
    if (at != last) {
      EXPECT_TRUE(configs_seen.insert(at).second) << "config " << at << " twice";
    }
    last = at;
    for (size_t j = i + 1; j < cases.size() && cases[j].config == cases[i].config; ++j) {
      EXPECT_FALSE(cases[j].flags == cases[i].flags && cases[j].batch == cases[i].batch)
          << "cases " << i << " and " << j << " are the same case";
    }
  }
  EXPECT_EQ(static_cast<int>(configs_seen.size()), space->size()) << "a config has no case";
}

TEST(Sweep, IncludesABatchWithAnIdleDpRankWheneverDpAttentionIsOn) {
  const SweepModel m = patternModel("M-");
  bool idle_seen = false;
  for (const Case& c : enumerateCases(*m.model, 4)) {
    EXPECT_EQ(static_cast<int>(c.batch.tokens.size()), c.config.attn_dp);
    if (c.config.attn_dp > 1 && c.batch.hasIdleShard()) idle_seen = true;
  }
  EXPECT_TRUE(idle_seen);
}

TEST(Sweep, CrossesTheAllToAllBackendOnlyForModelsWithMoe) {
  for (const Case& c : enumerateCases(*patternModel("M-*-").model, 2))
    EXPECT_EQ(c.flags.a2a, A2aBackend::kNone);
  bool deepep = false;
  for (const Case& c : enumerateCases(*patternModel("ME").model, 2))
    deepep |= c.flags.a2a == A2aBackend::kDeepep;
  EXPECT_TRUE(deepep);
}

TEST(Sweep, AFlagFilterKeepsExactlyTheCasesWhoseFlagsHoldItsValuesInSweepOrder) {
  const SweepModel m = patternModel("M-*E");
  FlagFilter keep;
  keep.fusion = {false};
  keep.reduction = {BoundaryReduction::kRs, BoundaryReduction::kRsv};
  // Expected by hand from the whole space: fusion off and rs or rsv.
  std::vector<Case> expected;
  for (Case& c : enumerateCases(*m.model, 4)) {
    const bool rs =
        c.flags.reduction == BoundaryReduction::kRs || c.flags.reduction == BoundaryReduction::kRsv;
    if (!c.flags.fusion && rs) expected.push_back(std::move(c));
  }
  ASSERT_GT(expected.size(), 0u);
  const std::vector<Case> kept = enumerateCases(*m.model, 4, {}, keep);
  ASSERT_EQ(kept.size(), expected.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].config, expected[i].config) << i;
    EXPECT_EQ(kept[i].flags, expected[i].flags) << i;
    EXPECT_EQ(kept[i].batch, expected[i].batch) << i;
  }
  SweepSpec spec;
  spec.models = {m};
  spec.world = 4;
  spec.flags = keep;
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_EQ(r->cases, static_cast<std::int64_t>(expected.size()));
}

TEST(Sweep, ShardsTogetherCoverTheUnshardedSweepExactly) {
  SweepSpec spec;
  spec.models = {patternModel("M-*E-")};
  spec.world = 4;
  auto whole = runSweep(spec);
  ASSERT_TRUE(whole.hasValue());
  std::int64_t cases = 0, refused = 0;
  for (int i = 0; i < 3; ++i) {
    spec.shard = {i, 3};
    auto part = runSweep(spec);
    ASSERT_TRUE(part.hasValue());
    cases += part->cases;
    refused += part->refused;
  }
  EXPECT_EQ(cases, whole->cases);
  EXPECT_EQ(refused, whole->refused);
}

TEST(Sweep, CountsRefusedCombinationsApartFromCheckedOnes) {
  SweepSpec spec;
  spec.models = {patternModel("M-*E")};
  spec.world = 4;
  spec.jobs = 2;
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_GT(r->refused, 0);  // attention CP and deepep with moe_ep != tp
  EXPECT_GT(r->checked, 0);
  EXPECT_EQ(r->cases, r->checked + r->refused);
  // The only violations are engine findings (at tp 4 with ep 2, the fused
  // kernel's group and the DP return's reduce_scatterv; engine_findings_test.cc).
  std::int64_t findings = 0;
  for (const auto& [call, n] : r->engine_findings) findings += n;
  EXPECT_GT(findings, 0);
  EXPECT_EQ(r->violated, findings);
  for (const SweepFailure& f : r->failures) EXPECT_FALSE(f.engine_site.empty()) << f.text;
  bool cp = false;
  for (const auto& [why, n] : r->refusals)
    cp |= why.find("attention context parallel") != std::string::npos;
  EXPECT_TRUE(cp);
}

TEST(Sweep, AViolationUnderAPlantedDecisionIsNoEngineFinding) {
  SweepSpec spec;
  spec.models = {patternModel("M-*E-")};
  spec.world = 2;
  spec.schema = Schema::with(Decision::kFfnKeepsSumFromMixer);
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_GT(r->violated, 0);
  EXPECT_TRUE(r->engine_findings.empty());
}

TEST(Sweep, FindsAndListsTheCasesAPlantedMutantBreaks) {
  SweepSpec spec;
  spec.models = {patternModel("M-*E-")};
  spec.world = 2;
  spec.schema = Schema::with(Decision::kFfnKeepsSumFromMixer);
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_GT(r->violated, 0);
  ASSERT_FALSE(r->failures.empty());
  // Failures are listed in sweep order.
  for (size_t i = 1; i < r->failures.size(); ++i)
    EXPECT_LT(r->failures[i - 1].index, r->failures[i].index);
}

TEST(Sweep, GivesTheSameTotalsOnOneThreadAndOnSeveral) {
  SweepSpec spec;
  spec.models = {patternModel("M*E-")};
  spec.world = 4;
  spec.jobs = 1;
  auto one = runSweep(spec);
  spec.jobs = 3;
  auto three = runSweep(spec);
  ASSERT_TRUE(one && three);
  EXPECT_EQ(one->checked, three->checked);
  EXPECT_EQ(one->refused, three->refused);
  EXPECT_EQ(one->violated, three->violated);
}

TEST(Sweep, RefusesAWorldOutOfRangeAndNoJobs) {
  SweepSpec spec;
  spec.world = 0;
  EXPECT_FALSE(runSweep(spec).hasValue());
  spec.world = 2;
  spec.jobs = 0;
  EXPECT_FALSE(runSweep(spec).hasValue());
}

TEST(Sweep, ChecksEveryPresetIncludingTheTwoStageAndParallelHybridOnes) {
  SweepSpec spec;
  spec.models = defaultSweepModels();
  spec.world = 1;
  auto r = runSweep(spec);
  ASSERT_TRUE(r.hasValue());
  bool falcon = false, deepseek = false;
  for (const auto& m : r->per_model) {
    EXPECT_TRUE(m.why_not.empty()) << m.model << ": " << m.why_not;
    EXPECT_GT(m.checked, 0) << m.model;
    falcon = falcon || m.model.rfind("falcon", 0) == 0;
    deepseek = deepseek || m.model == "deepseek-v3";
  }
  EXPECT_TRUE(falcon);
  EXPECT_TRUE(deepseek);
  EXPECT_EQ(r->violated, 0);
}

}  // namespace
}  // namespace seam::properties
