// A sweep worker reuses the verdict of an earlier case of its configuration
// (VerdictMemo) only for a plan that gives the ledger and the judges the same
// inputs: that is sound only while the judges read neither the fusion nor the
// reduction flag of the case, which the first two tests hold them to.
#include "seam/properties/verdict_memo.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../sim/case_builders.h"
#include "seam/properties/engine_finding.h"
#include "seam/properties/generators.h"
#include "seam/properties/sweep.h"

namespace seam::properties {
namespace {

using seam::testing::mustBuild;
using seam::testing::presetCase;

/// Each property's verdict in words, every property judged (Depth::kAll).
std::vector<std::string> verdictWords(const Plan& plan) {
  Ledger ledger;
  const PlanVerdict v = checkPlan(plan, ledger, Depth::kAll);
  std::vector<std::string> out;
  for (const PropertyVerdict& p : v.properties) {
    out.push_back(std::string(p.holds ? "holds" : "fails") + (p.judged ? "" : " unjudged") +
                  (p.first ? ": " + describeViolation(*p.first) : ""));
  }
  const std::optional<Violation> first = v.firstViolation();
  out.push_back(first ? describeViolation(*first) : "no violation");
  return out;
}

/// `plan` with its case's fusion flag turned the other way and its reduction
/// flag the next value round (ar, rs, rsv, rs+rsv).
Plan flipped(Plan plan) {
  Flags& f = plan.source.flags;
  f.fusion = !f.fusion;
  f.reduction = static_cast<BoundaryReduction>((static_cast<int>(f.reduction) + 1) % 4);
  return plan;
}

/// `plan`'s verdict words under every other fusion and reduction flag.
bool sameWordsUnderEveryOtherFlag(const Plan& plan) {
  const std::vector<std::string> words = verdictWords(plan);
  Plan other = plan;
  for (int k = 0; k < 7; ++k) {  // the 7 other (fusion, reduction) pairs
    other = flipped(std::move(other));
    if (k == 3) other.source.flags.fusion = !other.source.flags.fusion;  // visit both fusions
    if (verdictWords(other) != words) return false;
  }
  return true;
}

RC_GTEST_PROP(VerdictMemo, JudgesReadNeitherFusionNorReductionFromTheCase, ()) {
  const Case c = *genCase(0);
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  RC_PRE(plan.hasValue());
  RC_ASSERT(sameWordsUnderEveryOtherFlag(*plan));
}

// The generated cases mostly hold; deepseek-v3's world 8 sweep has hundreds of
// engine findings among its cases, with every flag set the sweep visits.
TEST(VerdictMemo,
     JudgesGiveEveryCheckedDeepseekCaseOfWorld8TheSameVerdictUnderEveryFusionAndReductionFlag) {
  auto preset = findPreset("deepseek-v3");
  ASSERT_TRUE(preset.hasValue());
  int checked = 0;
  int violated = 0;
  for (const Case& c : enumerateCases(*modelFromPreset(**preset), 8)) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    if (!plan || ++checked % 23 != 0) continue;  // every 23rd: the test stays under seconds
    violated += verdictWords(*plan).back() != "no violation";
    ASSERT_TRUE(sameWordsUnderEveryOtherFlag(*plan)) << reproduceCommand(c, "declared");
  }
  EXPECT_GT(violated, 5);
}

/// Each checked case's first violation in words, engine site and plan hash, by sweep index.
class Verdicts : public SweepListener {
 public:
  void onCases(const std::vector<CaseResult>& chunk) override {
    for (const CaseResult& o : chunk) {
      if (o.refused) continue;
      words[o.index] = (o.violation ? describeViolation(*o.violation) : "holds") + " @" +
                       o.engine_site + " #" + std::to_string(o.plan_hash);
    }
  }
  std::map<std::int64_t, std::string> words;
};

// The sweep takes a kept verdict for about half of deepseek-v3's checked
// cases at world 8; each must be what checking the case alone gives.
TEST(VerdictMemo, ASweepGivesEveryCaseTheVerdictCheckingItAloneGives) {
  auto model = sweepModel("deepseek-v3", "");
  ASSERT_TRUE(model.hasValue());
  SweepSpec spec;
  spec.models = {*model};
  spec.world = 8;
  spec.jobs = 2;
  Verdicts swept;
  ASSERT_TRUE(runSweep(spec, &swept).hasValue());
  const std::vector<Case> cases = enumerateCases(*model->model, 8);
  Ledger ledger;
  int violated = 0;
  for (const auto& [index, words] : swept.words) {
    const Plan plan = mustBuild(cases[static_cast<std::size_t>(index)]);
    const std::optional<Violation> v = checkPlan(plan, ledger).firstViolation();
    violated += v.has_value();
    const std::string site = v ? engineFindingSite(plan, *v) : "";
    ASSERT_EQ(words, (v ? describeViolation(*v) : "holds") + " @" + site + " #" +
                         std::to_string(planHash(plan)))
        << index;
  }
  EXPECT_GT(swept.words.size(), 1000u);
  EXPECT_GT(violated, 100);
}

TEST(VerdictMemo, FindsTheVerdictKeptForTheSamePlanWithFusionAndReductionTurned) {
  const Plan plan = mustBuild(presetCase("deepseek-v3", {.tp = 4, .attn_dp = 2}, {3, 5}));
  VerdictMemo memo;
  Violation v;
  v.detail = "kept";
  memo.keep(plan, {v, "site", planHash(plan)});
  const Plan twin = flipped(plan);
  const CaseVerdict* found = memo.find(twin);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->violation->detail, "kept");
  EXPECT_EQ(found->engine_site, "site");
  EXPECT_EQ(found->plan_hash, planHash(twin));  // equal ops hash alike
}

TEST(VerdictMemo, MissesAPlanThatDiffersInOneOpOnTheLastRankOrInWhatTheJudgesRead) {
  const Plan plan = mustBuild(presetCase("deepseek-v3", {.tp = 4, .attn_dp = 2}, {3, 5}));
  VerdictMemo memo;
  memo.keep(plan, {});
  Plan op = plan;
  op.ranks.back().back().bytes += 2;
  Plan site = plan;  // not in planHash: a hash alone would match it
  site.ranks.back().back().site = EngineSite::kUnnamed == site.ranks.back().back().site
                                      ? static_cast<EngineSite>(1)
                                      : EngineSite::kUnnamed;
  Plan mode = plan;  // the judges read the forward mode
  mode.source.flags.mode = ForwardMode::kExtend;
  Plan batch = plan;
  batch.source.batch.tokens[1] = 4;
  Plan split = plan;
  split.tbo_split = {1};
  for (const Plan* p : {&op, &site, &mode, &batch, &split}) {
    EXPECT_EQ(memo.find(*p), nullptr);
  }
  EXPECT_NE(memo.find(plan), nullptr);
}

TEST(VerdictMemo, KeepsTheLatestPlansWithinItsBudgetAndForgetsThemOnClear) {
  const Plan plan = mustBuild(presetCase("nemotron-h-8b", {.tp = 4}, {4}));
  std::size_t ops = 0;
  for (const auto& r : plan.ranks) ops += r.size();
  // The four ranks issue the same ops: one copy is kept.
  const std::size_t one = plan.ranks[0].size() * sizeof(Op);
  ASSERT_LT(one, ops * sizeof(Op));
  VerdictMemo memo(2 * one);
  std::vector<Plan> plans;
  for (int t = 1; t <= 3; ++t)
    plans.push_back(mustBuild(presetCase("nemotron-h-8b", {.tp = 4}, {t})));
  for (const Plan& p : plans) memo.keep(p, {});
  EXPECT_EQ(memo.size(), 2u);
  EXPECT_EQ(memo.find(plans[0]), nullptr);  // the oldest went
  EXPECT_NE(memo.find(plans[2]), nullptr);
  VerdictMemo small(one - 1);  // a plan larger than the budget is not kept
  small.keep(plan, {});
  EXPECT_EQ(small.size(), 0u);
  memo.clear();
  EXPECT_EQ(memo.find(plans[2]), nullptr);
}

}  // namespace
}  // namespace seam::properties
