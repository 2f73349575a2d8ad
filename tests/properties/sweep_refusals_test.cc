// A sweep decides a refusal once per flag set where the engine's rule reads
// no batch (flagSetRefusal), and counts a run of one reason at once. Both are
// held here to what building every case alone with buildPlan gives.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "seam/properties/sweep.h"
#include "seam/sim/policy/policy.h"

namespace seam::properties {
namespace {

/// What buildPlan gives a case: "" for a plan, else its status in words.
std::string planOutcome(const Case& c) {
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  if (plan) return "";
  return std::to_string(static_cast<int>(plan.status().code())) + " " + plan.status().message();
}

struct RefusalCounts {
  std::int64_t refused = 0;   ///< cases buildPlan refuses
  std::int64_t hoisted = 0;   ///< of those, in a flag set flagSetRefusal decides
  std::int64_t by_batch = 0;  ///< refused in a flag set flagSetRefusal leaves open
  std::map<std::string, std::int64_t> reasons_by_batch;
};

/// Every flag set of `model` at `world`: where flagSetRefusal names a
/// refusal, buildPlan must give each of the set's batches exactly it.
RefusalCounts expectFlagSetRefusalsHoldForEveryBatch(const ModelRef& model, int world) {
  RefusalCounts counts;
  const std::vector<Case> cases = enumerateCases(model, world);
  std::size_t i = 0;
  while (i < cases.size()) {
    std::size_t end = i + 1;  // the flag set: consecutive cases of one config and flags
    while (end < cases.size() && cases[end].config == cases[i].config &&
           cases[end].flags == cases[i].flags)
      ++end;
    const Status set = flagSetRefusal(cases[i], PolicyKind::kDeclared);
    EXPECT_TRUE(set.isOk() || set.code() == StatusCode::kRefused) << set.message();
    const std::string expected = std::to_string(static_cast<int>(set.code())) + " " + set.message();
    for (std::size_t k = i; k < end; ++k) {
      const std::string got = planOutcome(cases[k]);
      const bool refused =
          got.rfind(std::to_string(static_cast<int>(StatusCode::kRefused)), 0) == 0;
      counts.refused += refused;
      if (!set.isOk()) {
        ++counts.hoisted;
        EXPECT_EQ(got, expected) << reproduceCommand(cases[k], "declared");
      } else if (refused) {
        ++counts.by_batch;
        ++counts.reasons_by_batch[got.substr(got.find(' ') + 1, 40)];
      }
    }
    i = end;
  }
  return counts;
}

ModelRef preset(const char* name) {
  auto m = sweepModel(name, "");
  EXPECT_TRUE(m.hasValue()) << name;
  return *m->model;
}

// deepseek-v3 and longcat-flash at world 8 run MLA prefill CP, whose gates
// read whether the batch is CP-sharded: refusals that do read the batch are
// there to be mistaken for ones that do not.
TEST(SweepRefusals, AFlagSetRefusalIsWhatBuildPlanGivesEveryBatchOfTheSet) {
  const RefusalCounts ds = expectFlagSetRefusalsHoldForEveryBatch(preset("deepseek-v3"), 8);
  EXPECT_GT(ds.hoisted, ds.refused * 9 / 10) << ds.hoisted << " of " << ds.refused;
  EXPECT_TRUE(ds.reasons_by_batch.count("attn_cp_gather asserts attn_dp_size == 1"))
      << "no refusal that reads whether the batch is CP-sharded was left to the batch";
  for (const char* name : {"qwen3-next-80b-a3b", "nemotron-h-8b", "longcat-flash"}) {
    const RefusalCounts c = expectFlagSetRefusalsHoldForEveryBatch(preset(name), 8);
    EXPECT_GT(c.hoisted, 0) << name;
  }
}

// A case buildPlan cannot validate is not decided by its flag set: its own
// word (kInvalidInput) stands.
TEST(SweepRefusals, LeavesACaseBuildPlanCannotValidateToBuildPlan) {
  for (Case c : enumerateCases(preset("deepseek-v3"), 8)) {
    if (flagSetRefusal(c, PolicyKind::kDeclared).isOk()) continue;
    c.batch.tokens.push_back(1);  // one entry more than attn_dp
    EXPECT_TRUE(flagSetRefusal(c, PolicyKind::kDeclared).isOk());
    EXPECT_EQ(buildPlan(c, PolicyKind::kDeclared).status().code(), StatusCode::kInvalidInput);
    return;
  }
  FAIL() << "no flag set of deepseek-v3 at world 8 is refused whole";
}

// The sweep's refusal counts, reason by reason, and its not-modelled count
// are those of building each case alone.
TEST(SweepRefusals, ASweepCountsEveryReasonAsBuildingEachCaseAloneDoes) {
  for (const char* name : {"deepseek-v3", "longcat-flash", "nemotron-h-8b"}) {
    auto model = sweepModel(name, "");
    ASSERT_TRUE(model.hasValue());
    SweepSpec spec;
    spec.models = {*model};
    spec.world = 8;
    spec.jobs = 2;
    auto swept = runSweep(spec);
    ASSERT_TRUE(swept.hasValue());
    std::map<std::string, std::int64_t> alone;
    std::int64_t not_modelled = 0;
    for (const Case& c : enumerateCases(*model->model, 8)) {
      auto plan = buildPlan(c, PolicyKind::kDeclared);
      if (plan || plan.status().code() != StatusCode::kRefused) continue;
      ++alone[plan.status().message()];
      not_modelled += isNotModelled(plan.status().message());
    }
    const std::map<std::string, std::int64_t> counted(swept->refusals.begin(),
                                                      swept->refusals.end());
    EXPECT_EQ(counted, alone) << name;
    EXPECT_EQ(swept->not_modelled, not_modelled) << name;
    EXPECT_GT(swept->refused, 400) << name;
  }
}

}  // namespace
}  // namespace seam::properties
