// The streaming sweep against planning each case alone: the same refusals
// (decided once per flag set where the engine's rule reads no batch), the
// same plans, the same first failures, every case handed on exactly once.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "seam/properties/sweep.h"

namespace seam::properties {
namespace {

/// What a listener saw of one case.
struct Seen {
  bool refused = false;
  std::string refusal;
  bool violated = false;
  std::uint64_t plan_hash = 0;
};

class Collect : public SweepListener {
 public:
  void onCases(const std::vector<CaseResult>& chunk) override {
    for (const CaseResult& r : chunk) {
      EXPECT_TRUE(seen.count(r.index) == 0) << "case " << r.index << " handed on twice";
      seen[r.index] = {r.refused, r.refusal, r.violation.has_value(), r.plan_hash};
    }
  }
  void onProgress(std::int64_t done, std::int64_t total) override {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  }
  void onModel(const std::string& model) override { models.insert(model); }
  std::map<std::int64_t, Seen> seen;
  std::int64_t last_done = 0, last_total = -1;
  std::set<std::string> models;
};

/// Every case of every preset at `world`, each planned on its own as
/// `seam check` plans it: its refusal, or its plan's hash.
std::map<std::int64_t, Seen> plannedOneByOne(int world) {
  std::map<std::int64_t, Seen> out;
  std::int64_t index = 0;
  for (const SweepModel& m : defaultSweepModels()) {
    if (!m.model) continue;
    for (const Case& c : enumerateCases(*m.model, world)) {
      Seen& s = out[index++];
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      if (plan) {
        s.plan_hash = planHash(*plan);
      } else if (plan.status().code() == StatusCode::kRefused) {
        s.refused = true;
        s.refusal = plan.status().message();
      } else {
        s.violated = true;  // the policy owed a plan
      }
    }
  }
  return out;
}

TEST(SweepStream, RefusesAndPlansEveryCaseOfEveryPresetAsPlanningItAloneWould) {
  SweepSpec spec;
  spec.models = defaultSweepModels();
  spec.world = 4;
  spec.jobs = 2;
  Collect listener;
  auto r = runSweep(spec, &listener);
  ASSERT_TRUE(r.hasValue());
  const auto expected = plannedOneByOne(spec.world);
  ASSERT_EQ(listener.seen.size(), expected.size());
  EXPECT_EQ(r->cases, static_cast<std::int64_t>(expected.size()));
  EXPECT_EQ(listener.last_done, listener.last_total);
  EXPECT_EQ(listener.last_total, r->cases);
  std::int64_t refused = 0;
  std::map<std::string, std::int64_t> reasons;
  for (const auto& [index, want] : expected) {
    const Seen& got = listener.seen.at(index);
    ASSERT_EQ(got.refused, want.refused) << "case " << index;
    ASSERT_EQ(got.refusal, want.refusal) << "case " << index;
    ASSERT_EQ(got.plan_hash, want.plan_hash) << "case " << index;
    if (want.refused) {
      ++refused;
      ++reasons[want.refusal];
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(r->refused, refused);
  EXPECT_EQ(r->refusals, sortedRefusals(reasons));
  EXPECT_GT(listener.models.size(), 1u);
}

TEST(SweepStream, KeepsTheFirstFailuresInCaseOrderWhateverOrderTheWorkersFinishIn) {
  SweepSpec spec;
  spec.models = {*sweepModel("deepseek-v3", ""), *sweepModel("longcat-flash", "")};
  spec.world = 4;
  spec.jobs = 3;
  spec.max_failures = 5;
  Collect listener;
  auto r = runSweep(spec, &listener);
  ASSERT_TRUE(r.hasValue());
  std::vector<std::int64_t> violated;
  for (const auto& [index, s] : listener.seen) {
    if (s.violated) violated.push_back(index);
  }
  ASSERT_GT(violated.size(), 5u) << "world 4 has engine findings to keep";
  ASSERT_EQ(r->failures.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(r->failures[i].index, violated[i]);
  EXPECT_EQ(r->violated, static_cast<std::int64_t>(violated.size()));
}

// Shard i/n takes every n-th model x configuration (a block) from the i-th,
// whole, so that a case meets its flag-set twins in the same process.
TEST(SweepStream, AShardTakesWholeConfigurationsAndCountsOnlyWhatItRunsLessAResumedRunsCases) {
  SweepSpec spec;
  spec.models = {*sweepModel("nemotron-3-nano", "")};
  spec.world = 4;
  spec.shard = {1, 3};
  const auto all = enumerateCases(*spec.models[0].model, 4);
  std::vector<std::int64_t> shard;  // the indices of configurations 1, 4, 7, ...
  int ordinal = -1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i == 0 || !(all[i].config == all[i - 1].config)) ++ordinal;
    if (ordinal % 3 == 1) shard.push_back(static_cast<std::int64_t>(i));
  }
  ASSERT_GT(ordinal, 4) << "world 4 has configurations for three shards";
  ASSERT_GT(shard.size(), 3u);
  ASSERT_NE(shard.front(), 0);
  // Two of the shard's cases done by a resumed run, and one of another shard.
  spec.skip = {0, shard[1], shard[2]};
  Collect listener;
  auto r = runSweep(spec, &listener);
  ASSERT_TRUE(r.hasValue());
  std::set<std::int64_t> want(shard.begin(), shard.end());
  want.erase(shard[1]);
  want.erase(shard[2]);
  std::set<std::int64_t> got;
  for (const auto& [index, s] : listener.seen) got.insert(index);
  EXPECT_EQ(got, want);
  EXPECT_EQ(listener.last_total, static_cast<std::int64_t>(want.size()));
  EXPECT_EQ(r->cases, static_cast<std::int64_t>(want.size()));
}

}  // namespace
}  // namespace seam::properties
