// The training sweep (properties/training_sweep.h): a fixed case order,
// refusals counted apart from checked cases, and no violation.
#include "seam/properties/training_sweep.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace seam::properties {
namespace {

TEST(TrainingSweep, CasesComeInAFixedOrderCoveringBothPresetsAndLayouts) {
  TrainingSweepSpec spec;
  spec.world = 4;
  const auto a = trainingSweepCases(spec);
  const auto b = trainingSweepCases(spec);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].model, b[i].model);
    EXPECT_EQ(a[i].config, b[i].config);
    EXPECT_EQ(a[i].docs, b[i].docs);
  }
  EXPECT_EQ(a.front().model->name, "nemotron-3-nano");
  EXPECT_EQ(a.back().model->name, "nemotron-3-super");
}

TEST(TrainingSweep, AtWorldFourEveryPlannedCaseHoldsAndRefusalsAreCountedApart) {
  TrainingSweepSpec spec;
  spec.world = 4;
  spec.jobs = 2;
  auto r = runTrainingSweep(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_EQ(r->violated, 0) << (r->failures.empty() ? ""
                                                    : r->failures.front().text + "\n" +
                                                          r->failures.front().reproduce);
  EXPECT_GT(r->checked, 0);
  EXPECT_GT(r->refused, 0);
  EXPECT_EQ(r->not_modelled, 0);  // every preset's shapes are known (Nano's n_groups included)
  EXPECT_EQ(r->cases, r->checked + r->refused);
  EXPECT_EQ(r->per_model.size(), 4u);
}

}  // namespace
}  // namespace seam::properties

#include <rapidcheck.h>

#include "seam/properties/generators.h"
#include "seam/sim/training/training_ledger.h"

namespace seam::properties {
namespace {

// Generated training cases (random packed documents on every valid config of
// worlds 1, 2, 4): each is one the engine accepts, and each plan holds.
TEST(TrainingGenerated, EveryGeneratedCaseIsAcceptedAndItsPlanHolds) {
  rc::Random random(8);
  const auto gen = genTrainingCase(4);
  for (int i = 0; i < 24; ++i) {
    const TrainingCase c = gen(random.split(), i * 4).value();
    ASSERT_TRUE(validateTrainingCase(c).isOk()) << reproduceTrainingCommand(c);
    auto plan = buildTrainingPlan(c);
    ASSERT_TRUE(plan.hasValue()) << reproduceTrainingCommand(c);
    const LedgerResult r = checkTrainingPlan(*plan);
    EXPECT_TRUE(r.holds()) << reproduceTrainingCommand(c) << "\n"
                           << (r.holds() ? "" : describeViolation(r.violations.front()));
  }
}

}  // namespace
}  // namespace seam::properties
