// The training campaign: its baseline holds and every training mutant of the
// registry is killed.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "seam/mutants/campaign.h"

namespace seam::mutants {
namespace {

TEST(TrainingCampaign, TrainingMutantIdsAreStableUniqueAndPrefixed) {
  std::set<std::string> ids;
  for (const Mutant* m : trainingRegistry()) {
    EXPECT_EQ(std::string(m->id()).rfind("training.", 0), 0u) << m->id();
    EXPECT_EQ(m->family(), MutantFamily::kTraining);
    EXPECT_TRUE(ids.insert(std::string(m->id())).second) << m->id();
    EXPECT_EQ(findMutant(m->id()), m);
  }
  EXPECT_GE(ids.size(), 16u);
  for (const Mutant* m : registry()) EXPECT_EQ(m->family(), MutantFamily::kServing) << m->id();
}

TEST(TrainingCampaign, EveryTrainingMutantIsKilledOnSuperAtWorldsTwoAndFour) {
  TrainingCampaignSpec spec;
  auto super = findPreset("nemotron-3-super");
  ASSERT_TRUE(super.hasValue());
  spec.models = {*super};
  spec.worlds = {2, 4};
  spec.jobs = 2;
  auto r = runTrainingCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_TRUE(r->baseline_holds) << r->baseline_reproduce;
  for (const auto& o : r->outcomes) {
    EXPECT_EQ(o.status, MutantStatus::kKilled) << o.mutant->id() << ": " << o.argument;
  }
  EXPECT_EQ(r->killed(), static_cast<int>(trainingRegistry().size()));
}

}  // namespace
}  // namespace seam::mutants
