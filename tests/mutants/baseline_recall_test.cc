// A campaign handed a stored baseline (a resumed run) runs its mutants on the
// cases that baseline kept, without checking them again, and ends with the
// result it would have had; a baseline that does not fit the space is
// checked again.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "seam/mutants/campaign.h"

namespace seam::mutants {
namespace {

CampaignSpec smallCampaign() {
  CampaignSpec spec;
  spec.models.push_back(*properties::sweepModel("", "M-*E-"));
  spec.worlds = {1, 2, 4};
  spec.jobs = 2;
  spec.seed = 3;
  spec.bound_cases = true;
  const auto all = registry();
  spec.mutants.assign(all.begin(), all.begin() + 8);
  return spec;
}

/// Hears the baseline: how often it was checked and what it kept; hands
/// `give` back when asked for a stored one.
class BaselineListener : public CampaignListener {
 public:
  void onBaselineProgress(std::int64_t, std::int64_t) override { ++progress; }
  void onBaselineChecked(const BaselineSummary& b) override { checked = b; }
  BaselineRecall recalledBaseline(std::int64_t space) override {
    asked_space = space;
    return give;
  }
  int progress = 0;
  std::optional<BaselineSummary> checked;
  BaselineRecall give;
  std::int64_t asked_space = -1;
};

void expectSameOutcomes(const CampaignResult& a, const CampaignResult& b) {
  EXPECT_EQ(a.cases, b.cases);
  EXPECT_EQ(a.baseline_refused, b.baseline_refused);
  EXPECT_EQ(a.baseline_engine_findings, b.baseline_engine_findings);
  ASSERT_EQ(a.outcomes.size(), b.outcomes.size());
  for (std::size_t i = 0; i < a.outcomes.size(); ++i) {
    const MutantOutcome& x = a.outcomes[i];
    const MutantOutcome& y = b.outcomes[i];
    EXPECT_EQ(x.status, y.status) << x.mutant->id();
    EXPECT_EQ(x.cases_run, y.cases_run) << x.mutant->id();
    EXPECT_EQ(x.applied, y.applied) << x.mutant->id();
    EXPECT_EQ(x.differed, y.differed) << x.mutant->id();
    EXPECT_EQ(x.kill_index, y.kill_index) << x.mutant->id();
    EXPECT_EQ(x.kill_site, y.kill_site) << x.mutant->id();
    EXPECT_EQ(x.kill_reproduce, y.kill_reproduce) << x.mutant->id();
    EXPECT_EQ(x.argument, y.argument) << x.mutant->id();
  }
}

TEST(BaselineRecall, ACampaignGivenItsOwnBaselineBackEndsTheSameWithoutCheckingItAgain) {
  const CampaignSpec spec = smallCampaign();
  BaselineListener first;
  auto whole = runCampaign(spec, &first);
  ASSERT_TRUE(whole.hasValue()) << whole.status().message();
  ASSERT_TRUE(whole->baseline_holds);
  EXPECT_FALSE(whole->baseline_reused);
  ASSERT_TRUE(first.checked.has_value());
  const auto space = static_cast<std::int64_t>(campaignCases(spec).size());
  EXPECT_EQ(first.asked_space, space);
  EXPECT_EQ(first.checked->space, space);
  EXPECT_EQ(static_cast<std::int64_t>(first.checked->kept.size()), whole->cases);
  EXPECT_EQ(first.checked->refused, whole->baseline_refused);
  EXPECT_GT(first.progress, 0);
  // The space has refused cases, so the kept ones are a true subset.
  EXPECT_GT(whole->baseline_refused, 0);

  BaselineListener second;
  second.give.baseline = first.checked;
  auto resumed = runCampaign(spec, &second);
  ASSERT_TRUE(resumed.hasValue());
  EXPECT_TRUE(resumed->baseline_reused);
  EXPECT_EQ(resumed->baseline_not_reused, "");
  EXPECT_EQ(second.progress, 0) << "the recalled baseline was checked again";
  EXPECT_FALSE(second.checked.has_value());
  expectSameOutcomes(*whole, *resumed);
}

TEST(BaselineRecall, TheCampaignRunsOnTheCasesTheRecalledBaselineKept) {
  const CampaignSpec spec = smallCampaign();
  BaselineListener first;
  auto whole = runCampaign(spec, &first);
  ASSERT_TRUE(whole.hasValue() && first.checked);
  // A stored baseline that kept only the first half: the result shows it.
  BaselineSummary half = *first.checked;
  const std::size_t dropped = half.kept.size() - half.kept.size() / 2;
  half.kept.resize(half.kept.size() / 2);
  half.refused += static_cast<std::int64_t>(dropped);
  BaselineListener second;
  second.give.baseline = half;
  auto resumed = runCampaign(spec, &second);
  ASSERT_TRUE(resumed.hasValue());
  EXPECT_TRUE(resumed->baseline_reused);
  EXPECT_EQ(resumed->cases, static_cast<std::int64_t>(half.kept.size()));
  EXPECT_EQ(resumed->baseline_refused, half.refused);
}

TEST(BaselineRecall, ARecalledBaselineThatDoesNotFitTheSpaceIsCheckedAgain) {
  const CampaignSpec spec = smallCampaign();
  BaselineListener first;
  auto whole = runCampaign(spec, &first);
  ASSERT_TRUE(whole.hasValue() && first.checked);
  const BaselineSummary good = *first.checked;
  BaselineSummary bigger = good, unordered = good, short_count = good, outside = good;
  bigger.space += 1;
  bigger.refused += 1;
  std::swap(unordered.kept[0], unordered.kept[1]);
  short_count.refused -= 1;
  outside.kept.back() = good.space;
  for (const BaselineSummary& bad : {bigger, unordered, short_count, outside}) {
    BaselineListener second;
    second.give.baseline = bad;
    auto again = runCampaign(spec, &second);
    ASSERT_TRUE(again.hasValue());
    EXPECT_FALSE(again->baseline_reused);
    EXPECT_EQ(again->baseline_not_reused, "its cases do not fit the space");
    EXPECT_GT(second.progress, 0);
    ASSERT_TRUE(second.checked.has_value());
    EXPECT_EQ(second.checked->kept, good.kept);
    expectSameOutcomes(*whole, *again);
  }
}

TEST(BaselineRecall, WhyAStoredBaselineWasNotTakenReachesTheResult) {
  CampaignSpec spec = smallCampaign();
  spec.mutants.resize(1);
  BaselineListener listener;
  listener.give.why_not = "it was made by another seam";
  auto r = runCampaign(spec, &listener);
  ASSERT_TRUE(r.hasValue());
  EXPECT_FALSE(r->baseline_reused);
  EXPECT_EQ(r->baseline_not_reused, "it was made by another seam");
  EXPECT_TRUE(listener.checked.has_value());
}

}  // namespace
}  // namespace seam::mutants
