#include "seam/mutants/campaign.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../sim/case_builders.h"
#include "seam/properties/check.h"

namespace seam::mutants {
namespace {

using seam::testing::patternCase;

TEST(Registry, HoldsAtLeastTwentyOperatorsWithUniqueStableIds) {
  std::set<std::string_view> ids;
  int plan = 0, decision = 0;
  for (const Mutant* m : registry()) {
    EXPECT_TRUE(ids.insert(m->id()).second) << m->id();
    EXPECT_FALSE(m->description().empty());
    EXPECT_EQ(m->id().substr(0, m->kind() == MutantKind::kPlan ? 5 : 9),
              m->kind() == MutantKind::kPlan ? "plan." : "decision.");
    (m->kind() == MutantKind::kPlan ? plan : decision)++;
    EXPECT_EQ(findMutant(m->id()), m);
  }
  EXPECT_GE(ids.size(), 20u);
  EXPECT_GE(plan, 10);
  EXPECT_EQ(decision, kDecisionCount);
  EXPECT_EQ(findMutant("plan.nope"), nullptr);
}

// Each plan-level operator has a case where it applies, changes the plan,
// and the properties catch it.
struct PlanMutantCase {
  const char* id;
  const char* pattern;
  ParallelConfig config;
  std::vector<int> tokens;
  A2aBackend a2a;
  DpPadding padding = DpPadding::kMaxLen;
  LayerFamily family = LayerFamily::kSingleStage;
  bool tbo = false;
  bool gqa = false;  ///< a two-stage pattern with GQA attention instead of the donor's MLA
};

class PlanMutant : public ::testing::TestWithParam<PlanMutantCase> {};

TEST_P(PlanMutant, AppliesToItsCaseChangesThePlanAndIsCaught) {
  const auto& p = GetParam();
  const Mutant* m = findMutant(p.id);
  ASSERT_NE(m, nullptr) << p.id;
  Flags f;
  f.a2a = p.a2a;
  f.dp_padding = p.padding;
  f.tbo = p.tbo;
  Case c = patternCase(p.pattern, p.config, p.tokens, f, p.family);
  if (p.gqa) c.model.shape.q_lora_rank = kNotApplicable;
  auto base = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(base.hasValue()) << base.status().message();
  Plan mutated = *base;
  ASSERT_TRUE(m->apply(mutated)) << p.id << " found no site";
  EXPECT_FALSE(mutated.ranks == base->ranks);
  Ledger ledger;
  EXPECT_TRUE(properties::checkPlan(*base, ledger).holds());
  EXPECT_FALSE(properties::checkPlan(mutated, ledger).holds()) << p.id;
}

INSTANTIATE_TEST_SUITE_P(
    Operators, PlanMutant,
    ::testing::Values(
        PlanMutantCase{"plan.drop-completing-collective", "M-", {.tp = 2}, {4}, A2aBackend::kNone},
        PlanMutantCase{
            "plan.duplicate-completing-collective", "M-", {.tp = 2}, {4}, A2aBackend::kNone},
        PlanMutantCase{"plan.reduce-over-tp-not-attn-tp",
                       "M-",
                       {.tp = 4, .attn_dp = 2},
                       {2, 2},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.reduce-over-attn-tp-not-tp",
                       "-M",
                       {.tp = 4, .attn_dp = 2},
                       {2, 2},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.reduce-over-moe-ep-not-tp", "M-M", {.tp = 2}, {4}, A2aBackend::kNone},
        // moe_dp > 1 only as attn_cp (ServerArgs): a two-stage GQA MoE on moe_tp.
        PlanMutantCase{"plan.reduce-over-tp-not-moe-group",
                       "*-*E",
                       {.tp = 4, .attn_cp = 2, .moe_dp = 2},
                       {4},
                       A2aBackend::kNone,
                       DpPadding::kMaxLen,
                       LayerFamily::kTwoStage,
                       false,
                       true},
        PlanMutantCase{"plan.reduce-scatter-without-gather",
                       "*E*",
                       {.tp = 2, .moe_ep = 2},
                       {4},
                       A2aBackend::kDeepep},
        PlanMutantCase{
            "plan.slice-index-off-by-one", "EM", {.tp = 2, .moe_ep = 2}, {3}, A2aBackend::kDeepep},
        PlanMutantCase{
            "plan.residual-not-sliced", "*E", {.tp = 2, .moe_ep = 2}, {4}, A2aBackend::kDeepep},
        PlanMutantCase{
            "plan.residual-not-gathered", "*E*", {.tp = 2, .moe_ep = 2}, {4}, A2aBackend::kDeepep},
        PlanMutantCase{"plan.padding-mode-mismatch",
                       "M-M",
                       {.tp = 2, .attn_dp = 2},
                       {1, 3},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.idle-rank-skips-collective",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {0, 3},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.swap-collectives-on-one-rank",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {2, 3},
                       A2aBackend::kNone},
        // attn_tp 2 and shards not a multiple of it: the modes' aligned sizes differ.
        PlanMutantCase{"plan.padding-mode-mismatch",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {1, 3},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.dp-gather-skips-zero-fill",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {3, 1},
                       A2aBackend::kNone},
        PlanMutantCase{"plan.dp-gather-writer-rule-swapped",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {3, 1},
                       A2aBackend::kNone,
                       DpPadding::kSumLen},
        PlanMutantCase{"plan.dp-gather-writer-rule-swapped",
                       "*-*-",
                       {.tp = 4, .attn_dp = 2},
                       {3, 2},
                       A2aBackend::kNone,
                       DpPadding::kSumLen,
                       LayerFamily::kTwoStage},
        PlanMutantCase{
            "plan.dp-slots-unaligned", "M-M", {.tp = 4, .attn_dp = 2}, {3, 2}, A2aBackend::kNone},
        PlanMutantCase{"plan.dp-slots-unaligned",
                       "M-M",
                       {.tp = 4, .attn_dp = 2},
                       {3, 2},
                       A2aBackend::kNone,
                       DpPadding::kSumLen},
        PlanMutantCase{"plan.tbo-halves-swapped-on-one-rank",
                       "*-*E*E",
                       {.tp = 4, .attn_dp = 2, .moe_ep = 4},
                       {2, 2},
                       A2aBackend::kDeepep,
                       DpPadding::kMaxLen,
                       LayerFamily::kTwoStage,
                       true},
        PlanMutantCase{"plan.tbo-split-skips-residual",
                       "*-*E*E",
                       {.tp = 4, .attn_dp = 2, .moe_ep = 4},
                       {3, 2},
                       A2aBackend::kDeepep,
                       DpPadding::kMaxLen,
                       LayerFamily::kTwoStage,
                       true},
        // DeepEP: a half without an a2a backend fails at its DP gather (an
        // engine finding), so the base would not hold.
        PlanMutantCase{"plan.tbo-merge-drops-half",
                       "*-*E*E",
                       {.tp = 4, .attn_dp = 2, .moe_ep = 4},
                       {3, 2},
                       A2aBackend::kDeepep,
                       DpPadding::kMaxLen,
                       LayerFamily::kTwoStage,
                       true}),
    [](const ::testing::TestParamInfo<PlanMutantCase>& info) {
      return "op" + std::to_string(info.index);
    });

TEST(PlanMutant, FindsNoSiteWhereThePlanHasNone) {
  Case c = patternCase("MM", {.tp = 1}, {4});
  auto base = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(base.hasValue());
  for (const char* id :
       {"plan.drop-completing-collective", "plan.residual-not-sliced", "plan.padding-mode-mismatch",
        "plan.idle-rank-skips-collective", "plan.dp-gather-skips-zero-fill",
        "plan.dp-gather-writer-rule-swapped", "plan.dp-slots-unaligned"}) {
    Plan p = *base;
    EXPECT_FALSE(findMutant(id)->apply(p)) << id;
    EXPECT_TRUE(p.ranks == base->ranks) << id;
  }
}

// A fault in the DP ops' lowering is planted only in ops whose lowering it
// changes: with attn_tp 1 there is no zero-fill to skip and nothing to align,
// and shards already aligned to attn_tp have the same slots either way.
TEST(PlanMutant, PlantsADpFaultOnlyWhereItChangesTheLowering) {
  const struct {
    const char* id;
    ParallelConfig config;
    std::vector<int> tokens;
  } cases[] = {
      {"plan.dp-gather-skips-zero-fill", {.tp = 2, .attn_dp = 2}, {3, 1}},
      {"plan.dp-slots-unaligned", {.tp = 2, .attn_dp = 2}, {3, 1}},
      {"plan.dp-slots-unaligned", {.tp = 4, .attn_dp = 2}, {2, 4}},
      {"plan.dp-gather-writer-rule-swapped",
       {.tp = 4, .attn_dp = 2},
       {3, 1}},  // MAX_LEN: no writers
  };
  for (const auto& k : cases) {
    auto base = buildPlan(patternCase("M-M", k.config, k.tokens), PolicyKind::kDeclared);
    ASSERT_TRUE(base.hasValue());
    Plan p = *base;
    EXPECT_FALSE(findMutant(k.id)->apply(p)) << k.id;
    EXPECT_TRUE(p.ranks == base->ranks) << k.id;
  }
}

CampaignSpec smallSpec(std::vector<const char*> patterns) {
  CampaignSpec spec;
  for (const char* p : patterns) spec.models.push_back(*properties::sweepModel("", p));
  spec.worlds = {1, 2, 4};
  spec.jobs = 2;
  return spec;
}

TEST(Campaign, KillsEveryMutantButTheKnownOnesOnSyntheticPatternsThatReachTheirSites) {
  auto spec = smallSpec({"M-*E-", "-M", "--M*", "E*E-", "M-M*E/*E"});
  // DeepSeek-like two-stage layers: the two-batch-overlap sites.
  properties::SweepModel deepseek;
  deepseek.name = "two-stage *-*E*E";
  deepseek.model = *modelFromPattern("*-*E*E", LayerFamily::kTwoStage);
  spec.models.push_back(std::move(deepseek));
  // A GQA MoE: the only MoE with moe_dp > 1 the engine runs (moe_dp ==
  // attn_cp, on CP shards), so the only one summed over a MoE group narrower
  // than TP.
  properties::SweepModel gqa;
  gqa.name = "two-stage GQA *-*E";
  gqa.model = *modelFromPattern("*-*E", LayerFamily::kTwoStage);
  gqa.model->shape.q_lora_rank = kNotApplicable;
  spec.models.push_back(std::move(gqa));
  spec.worlds = {1, 2, 4, 8};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_TRUE(r->baseline_holds);
  // The mutants this space does not kill, and why (docs/mutants.md).
  const std::map<std::string_view, MutantStatus> not_killed = {
      // No case here has 2049 tokens (no bound cases), none fuses under DP.
      {"decision.fusion-token-bound-moved", MutantStatus::kNotCovered},
      {"decision.fusion-ignores-dp-attention", MutantStatus::kNotCovered},
  };
  for (const auto& o : r->outcomes) {
    const auto known = not_killed.find(o.mutant->id());
    const MutantStatus want = known == not_killed.end() ? MutantStatus::kKilled : known->second;
    EXPECT_EQ(o.status, want) << o.mutant->id() << ": " << o.argument;
    if (o.status == MutantStatus::kKilled) {
      ASSERT_TRUE(o.kill_case.has_value());
      ASSERT_TRUE(o.kill_violation.has_value());
    }
  }
  EXPECT_EQ(r->killed(), static_cast<int>(registry().size() - not_killed.size()));
}

TEST(Campaign, StopsEachMutantAtItsFirstKillInCaseOrder) {
  auto spec = smallSpec({"M-*E-"});
  spec.jobs = 3;
  spec.mutants = {findMutant("plan.drop-completing-collective")};
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_EQ(r->outcomes.size(), 1u);
  const auto& o = r->outcomes[0];
  ASSERT_EQ(o.status, MutantStatus::kKilled);
  // No earlier case kills it: replay them one by one.
  const auto cases = campaignCases(spec);
  Ledger ledger;
  std::int64_t expected = -1;
  for (size_t i = 0; i < cases.size() && expected < 0; ++i) {
    auto plan = buildPlan(cases[i], PolicyKind::kDeclared);
    if (!plan) continue;
    Plan mutated = *plan;
    if (o.mutant->apply(mutated) && !properties::checkPlan(mutated, ledger).holds()) expected = 0;
    if (expected == 0) {
      // Indices count non-refused cases only.
      std::int64_t idx = 0;
      for (size_t k = 0; k < i; ++k) idx += buildPlan(cases[k], PolicyKind::kDeclared).hasValue();
      expected = idx;
    }
  }
  EXPECT_EQ(o.kill_index, expected);
}

TEST(Campaign, AFailingBaselineAbortsTheCampaignBeforeAnyMutant) {
  auto spec = smallSpec({"M-*E-"});
  spec.schema = Schema::with(Decision::kTerminalDefers);  // a broken planner
  auto r = runCampaign(spec);
  ASSERT_TRUE(r.hasValue());
  EXPECT_FALSE(r->baseline_holds);
  EXPECT_TRUE(r->outcomes.empty());
  ASSERT_TRUE(r->baseline_case.has_value());
}

TEST(Campaign, GivesTheSameOutcomesOnOneThreadAndOnSeveral) {
  auto spec = smallSpec({"M-*E-", "E*E-"});
  spec.jobs = 1;
  auto one = runCampaign(spec);
  spec.jobs = 3;
  auto three = runCampaign(spec);
  ASSERT_TRUE(one && three);
  ASSERT_EQ(one->outcomes.size(), three->outcomes.size());
  for (size_t i = 0; i < one->outcomes.size(); ++i) {
    EXPECT_EQ(one->outcomes[i].status, three->outcomes[i].status) << one->outcomes[i].mutant->id();
    EXPECT_EQ(one->outcomes[i].kill_index, three->outcomes[i].kill_index)
        << one->outcomes[i].mutant->id();
  }
}

}  // namespace
}  // namespace seam::mutants
