// The statuses a campaign gives (Mull's): a mutant whose site the space never
// reaches is not covered, not equivalent; equivalent needs its site reached
// and every mutated plan equal to its parent; a planner that fails under a
// mutant is an error, never a kill; a kill names the site that replays it.
#include <gtest/gtest.h>

#include "seam/mutants/campaign.h"
#include "seam/properties/check.h"
#include "seam/properties/prop.h"

namespace seam::mutants {
namespace {

CampaignSpec spaceOf(std::vector<const char*> patterns, std::vector<int> worlds) {
  CampaignSpec spec;
  for (const char* p : patterns) spec.models.push_back(*properties::sweepModel("", p));
  spec.worlds = std::move(worlds);
  spec.jobs = 2;
  return spec;
}

TEST(Status, TheRuleKillsOnlyOnAViolationAndTellsNotCoveredFromEquivalent) {
  EXPECT_EQ(statusFrom(true, 0, 3, 1), MutantStatus::kKilled);
  EXPECT_EQ(statusFrom(false, 2, 3, 5), MutantStatus::kSurvived);
  // The mutated planner failed and nothing else differed: an error, not a kill.
  EXPECT_EQ(statusFrom(false, 0, 3, 5), MutantStatus::kPlannerError);
  EXPECT_EQ(statusFrom(false, 0, 0, 5), MutantStatus::kEquivalent);
  EXPECT_EQ(statusFrom(false, 0, 0, 0), MutantStatus::kNotCovered);
  for (MutantStatus s : {MutantStatus::kKilled, MutantStatus::kSurvived, MutantStatus::kEquivalent,
                         MutantStatus::kNotCovered, MutantStatus::kPlannerError}) {
    EXPECT_EQ(parseStatus(statusName(s)), s);
  }
  EXPECT_FALSE(parseStatus("dead").has_value());
}

TEST(Status, ADecisionNoCaseReachesIsNotCoveredNotEquivalent) {
  // No pattern here starts with an FFN: the decision site is never asked.
  auto spec = spaceOf({"M-*E"}, {1, 2, 4});
  spec.mutants = {findMutant("decision.stack-start-ffn-with-residual")};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_EQ(r->outcomes[0].status, MutantStatus::kNotCovered) << r->outcomes[0].argument;
  EXPECT_EQ(r->outcomes[0].applied, 0);
  EXPECT_EQ(r->notCovered(), 1);
  EXPECT_EQ(r->equivalent(), 0);
}

TEST(Status, APlanOperatorWhoseSiteNeverOccursIsNotCovered) {
  // Single-stage layers never split a batch for two-batch overlap.
  auto spec = spaceOf({"M-"}, {1, 2});
  spec.mutants = {findMutant("plan.tbo-merge-drops-half"),
                  findMutant("plan.site-snapshot-dropped")};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_EQ(r->outcomes[0].status, MutantStatus::kNotCovered);
  EXPECT_EQ(r->notCovered(), r->outcomes[1].status == MutantStatus::kNotCovered ? 2 : 1);
}

TEST(Status, AReachedDecisionWhosePlansNeverChangeIsEquivalentWithThatArgument) {
  // At world 1 every group is one rank: a mixer's sum over tp or over
  // attention TP is no sum at all; the site is asked on every case.
  auto spec = spaceOf({"M-M"}, {1});
  spec.mutants = {findMutant("decision.mixer-weights-over-tp")};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  const MutantOutcome& o = r->outcomes[0];
  ASSERT_EQ(o.status, MutantStatus::kEquivalent) << o.argument;
  EXPECT_GT(o.applied, 0);
  EXPECT_EQ(o.differed, 0);
  // The argument is what the campaign checked: every reached case's plan
  // equals its parent. Check it again here.
  for (const Case& c : campaignCases(spec)) {
    auto base = buildPlan(c, PolicyKind::kDeclared);
    auto mutated = buildPlan(c, PolicyKind::kDeclared, o.mutant->schema());
    ASSERT_EQ(base.hasValue(), mutated.hasValue());
    if (base) {
      EXPECT_TRUE(base->ranks == mutated->ranks);
    }
  }
}

TEST(Status, AKillNamesItsSiteAndReplaysFromItsCaseAndSite) {
  auto spec = spaceOf({"M-M"}, {4});
  spec.seed = 7;
  spec.mutants = {findMutant("plan.site-regroup")};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  const MutantOutcome& o = r->outcomes[0];
  ASSERT_EQ(o.status, MutantStatus::kKilled) << o.argument;
  ASSERT_TRUE(o.kill_case.has_value());
  EXPECT_NE(
      o.kill_reproduce.find("--mutant plan.site-regroup --site " + std::to_string(o.kill_site)),
      std::string::npos)
      << o.kill_reproduce;
  auto plan = buildPlan(*o.kill_case, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  ASSERT_TRUE(o.mutant->applyAt(*plan, o.kill_site));
  Ledger ledger;
  EXPECT_FALSE(properties::checkPlan(*plan, ledger).holds());
  EXPECT_GT(o.seconds, 0);
}

TEST(Status, TheSeedDecidesTheOrderAndTheSitesAndIsReplayed) {
  auto spec = spaceOf({"M-M", "M-*E-"}, {2, 4});
  spec.mutants = {findMutant("plan.site-drop-collective"), findMutant("plan.site-regroup")};
  spec.seed = 3;
  auto a = runCampaign(spec);
  auto b = runCampaign(spec);
  ASSERT_TRUE(a && b);
  for (size_t i = 0; i < a->outcomes.size(); ++i) {
    EXPECT_EQ(a->outcomes[i].kill_index, b->outcomes[i].kill_index);
    EXPECT_EQ(a->outcomes[i].kill_site, b->outcomes[i].kill_site);
    EXPECT_EQ(a->outcomes[i].cases_run, b->outcomes[i].cases_run);
  }
  EXPECT_EQ(sampledSite(3, "plan.site-regroup", 10, 7), sampledSite(3, "plan.site-regroup", 10, 7));
  int differs = 0;
  for (int i = 0; i < 50; ++i) differs += sampledSite(3, "x", i, 7) != sampledSite(4, "x", i, 7);
  EXPECT_GT(differs, 10);
}

TEST(Names, ADecisionMutantIsNamedDecisionDotItsDecisionsNameAndOldIdsStillFindIt) {
  int decisions = 0;
  for (const Mutant* m : registry()) {
    if (m->kind() != MutantKind::kDecision) continue;
    ++decisions;
    const Schema s = m->schema();
    ASSERT_EQ(__builtin_popcount(s.flipped), 1) << m->id();
    const auto d = static_cast<Decision>(__builtin_ctz(s.flipped));
    EXPECT_EQ(m->id(), "decision." + std::string(properties::decisionName(d)));
    EXPECT_EQ(findMutant(m->id()), m);
  }
  EXPECT_EQ(decisions, kDecisionCount) << "one mutant per planner decision";
  for (const char* old_id :
       {"decision.residual-not-following-slice", "decision.ffn-not-leaving-sum-to-mixer",
        "decision.snapshot-not-completing", "decision.ffn-down-proj-over-attn-tp"}) {
    const Mutant* m = findMutant(old_id);
    ASSERT_NE(m, nullptr) << old_id;
    EXPECT_NE(m->id(), old_id);
    EXPECT_EQ(m->kind(), MutantKind::kDecision);
  }
}

}  // namespace
}  // namespace seam::mutants
