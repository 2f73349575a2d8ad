// The systematic operators and the gate decisions: each offers sites in a
// known case, every site changes the plan, and the properties catch it
// there (or, where no property judges that bug class yet, the test says
// which mutant survives and why).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "../sim/case_builders.h"
#include "seam/mutants/campaign.h"
#include "seam/properties/check.h"

namespace seam::mutants {
namespace {

using seam::testing::patternCase;
using seam::testing::twoStageCase;

struct SiteCase {
  const char* id;
  Case c;
  bool killed;  ///< some site of the case violates a property
};

Flags withCapture(std::vector<int> stages) {
  Flags f;
  f.capture = std::move(stages);
  return f;
}

Flags deepep() {
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  return f;
}

/// Qwen3-like dense layers under LayerNorm SP on an extend batch of 5 tokens
/// over tp 2: padded equal chunks of 3, reduce-scatters and all-gathers.
Case lnSpCase() {
  Flags f;
  f.layernorm_sp = true;
  f.mode = ForwardMode::kExtend;
  return twoStageCase("*-*-", {.tp = 2}, {5}, f);
}

std::vector<SiteCase> siteCases() {
  return {
      {"plan.site-drop-collective", patternCase("M-", {.tp = 2}, {4}), true},
      {"plan.site-duplicate-collective", patternCase("M-", {.tp = 2}, {4}), true},
      {"plan.site-swap-with-next", patternCase("M-", {.tp = 2}, {4}), true},
      {"plan.site-regroup", patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 2}), true},
      {"plan.site-rows-off-by-one", patternCase("M-M", {.tp = 4, .attn_dp = 2}, {1, 3}), true},
      {"plan.site-slice-other-position", patternCase("EM", {.tp = 2, .moe_ep = 2}, {3}, deepep()),
       true},
      {"plan.site-residual-added-twice", patternCase("M-", {.tp = 2}, {4}), true},
      {"plan.site-residual-not-added", patternCase("M-", {.tp = 2}, {4}), true},
      // Property 6 judges the case's capture list: a requested capture missing.
      {"plan.site-snapshot-dropped", patternCase("M-M-", {.tp = 2}, {4}, withCapture({2})), true},
      {"plan.site-snapshot-moved", patternCase("M-M-", {.tp = 2}, {4}, withCapture({2})), true},
      // Every member moving twice the bytes agrees with every other member;
      // property 8 compares the bytes with the rows the call moves.
      {"plan.site-bytes-doubled", patternCase("M-", {.tp = 2}, {4}), true},
      // LayerNorm SP: every FFN boundary reduce-scatters and gathers again.
      {"plan.site-gather-rank-order", lnSpCase(), true},
      {"plan.site-reduce-scatter-other-chunk", lnSpCase(), true},
      // DeepEP: each rank dispatches its own slice of the tokens.
      {"plan.site-all-to-all-other-chunk", patternCase("EM", {.tp = 2, .moe_ep = 2}, {3}, deepep()),
       true},
      {"plan.site-reduce-averaged", lnSpCase(), true},
      {"plan.site-reduce-scaled-twice", lnSpCase(), true},
      {"plan.site-rows-shrunk-to-chunk", lnSpCase(), true},
  };
}

TEST(SiteMutant, EverySiteChangesThePlanAndTheKnownCaseKillsItOrItIsAKnownSurvivor) {
  Ledger ledger;
  for (const SiteCase& s : siteCases()) {
    const Mutant* m = findMutant(s.id);
    ASSERT_NE(m, nullptr) << s.id;
    auto base = buildPlan(s.c, PolicyKind::kDeclared);
    ASSERT_TRUE(base.hasValue()) << s.id << ": " << base.status().message();
    ASSERT_TRUE(properties::checkPlan(*base, ledger).holds()) << s.id;
    const int sites = m->sites(*base);
    ASSERT_GT(sites, 0) << s.id;
    int killing = 0;
    for (int site = 0; site < sites; ++site) {
      Plan mutated = *base;
      ASSERT_TRUE(m->applyAt(mutated, site)) << s.id << " site " << site;
      EXPECT_FALSE(mutated.ranks == base->ranks) << s.id << " site " << site;
      killing += !properties::checkPlan(mutated, ledger).holds();
    }
    Plan past = *base;
    EXPECT_FALSE(m->applyAt(past, sites)) << s.id << ": a site past the last";
    EXPECT_TRUE(past.ranks == base->ranks) << s.id;
    if (s.killed) {
      EXPECT_GT(killing, 0) << s.id << ": no site of " << sites << " is caught";
    } else {
      EXPECT_EQ(killing, 0) << s.id << ": now caught; move it to the killed ones";
    }
  }
}

/// The first violation `id` makes at `site` of `c`'s plan.
std::optional<Violation> violationAt(const char* id, const Case& c, int site) {
  Ledger ledger;
  Plan plan = seam::testing::mustBuild(c);
  EXPECT_TRUE(findMutant(id)->applyAt(plan, site)) << id;
  return properties::checkPlan(plan, ledger).firstViolation();
}

TEST(SiteMutant, ARankOrderOrChunkOrScaleIsCaughtAsTheBugItIs) {
  // Site 0 of the LayerNorm SP case is the first FFN boundary's collective:
  // the tokens land on other rows, or the partials with coefficient 1/n.
  const Case c = lnSpCase();
  auto order = violationAt("plan.site-gather-rank-order", c, 0);
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(order->property, Property::kOwedOnce);
  EXPECT_EQ(order->cls, ViolationClass::kForeignTerm) << describeViolation(*order);
  auto chunk = violationAt("plan.site-reduce-scatter-other-chunk", c, 0);
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->cls, ViolationClass::kForeignTerm) << describeViolation(*chunk);
  // DeepEP's dispatch (site 0): the combine hands each rank the rows of the
  // rank beside it, which hold other tokens.
  auto a2a = violationAt("plan.site-all-to-all-other-chunk",
                         patternCase("EM", {.tp = 2, .moe_ep = 2}, {3}, deepep()), 0);
  ASSERT_TRUE(a2a.has_value());
  EXPECT_EQ(a2a->property, Property::kOwedOnce) << describeViolation(*a2a);
  auto avg = violationAt("plan.site-reduce-averaged", c, 0);
  ASSERT_TRUE(avg.has_value());
  EXPECT_EQ(avg->cls, ViolationClass::kWrongScale) << describeViolation(*avg);
  EXPECT_NE(avg->detail.find("coefficient 1/2"), std::string::npos) << avg->detail;
  auto twice = violationAt("plan.site-reduce-scaled-twice", c, 0);
  ASSERT_TRUE(twice.has_value());
  EXPECT_NE(twice->detail.find("coefficient 1/4"), std::string::npos) << twice->detail;
  auto shrunk = violationAt("plan.site-rows-shrunk-to-chunk", c, 0);
  ASSERT_TRUE(shrunk.has_value());
  EXPECT_EQ(shrunk->property, Property::kCallSizes) << describeViolation(*shrunk);
}

TEST(SiteMutant, AnAverageOverFourRanksIsAQuarterInBothLedgerDomains) {
  // An all-reduce over tp 4 averaged: the fast domain's field inverse and the
  // exact domain's fractions agree that each partial enters with 1/4.
  Plan plan = seam::testing::mustBuild(patternCase("M-", {.tp = 4}, {3}));
  ASSERT_TRUE(findMutant("plan.site-reduce-averaged")->applyAt(plan, 0));
  const Violation v = seam::testing::firstViolationInBothDomains(plan);
  EXPECT_EQ(v.cls, ViolationClass::kWrongScale);
  EXPECT_NE(v.detail.find("/4"), std::string::npos) << v.detail;
}

TEST(SiteMutant, OffersEveryCollectiveNotOnlyTheFirst) {
  // Two layers, each with a completing all-reduce: the first-site operator
  // has one site, the site operator one per all-reduce (and more).
  const Case c = patternCase("M-M-", {.tp = 2}, {4});
  auto base = buildPlan(c, PolicyKind::kDeclared);
  ASSERT_TRUE(base.hasValue());
  int all_reduces = 0;
  for (const Op& op : base->ranks[0]) {
    all_reduces += op.kind == OpKind::kAllReduce || op.kind == OpKind::kArAddNorm;
  }
  ASSERT_GE(all_reduces, 2);
  EXPECT_GE(findMutant("plan.site-drop-collective")->sites(*base), all_reduces);
  EXPECT_EQ(findMutant("plan.drop-completing-collective")->sites(*base), 1);
}

TEST(SiteMutant, RegroupsOnlyOntoAxesOfAnotherSizeWithMoreThanOneRank) {
  // tp 2 without DP attention: attention TP is tp, every other axis one
  // rank: no axis of another size, so no regroup site at all (the reviewer's
  // "wrong group" killed as a dropped reduction on a group of one).
  auto plain = buildPlan(patternCase("M-", {.tp = 2}, {4}), PolicyKind::kDeclared);
  ASSERT_TRUE(plain.hasValue());
  EXPECT_EQ(findMutant("plan.site-regroup")->sites(*plain), 0);
  auto dp = buildPlan(patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 2}), PolicyKind::kDeclared);
  ASSERT_TRUE(dp.hasValue());
  const Mutant* m = findMutant("plan.site-regroup");
  const Topology topo(dp->source.config);
  for (int site = 0; site < m->sites(*dp); ++site) {
    Plan mutated = *dp;
    ASSERT_TRUE(m->applyAt(mutated, site));
    for (size_t r = 0; r < mutated.ranks.size(); ++r) {
      for (size_t i = 0; i < mutated.ranks[r].size() && i < dp->ranks[r].size(); ++i) {
        const Op& a = dp->ranks[r][i];
        const Op& b = mutated.ranks[r][i];
        if (a.axis == b.axis) continue;
        EXPECT_GT(topo.groupSize(b.groupAxis()), 1);
        EXPECT_NE(topo.groupSize(b.groupAxis()), topo.groupSize(a.groupAxis()));
      }
    }
  }
}

struct DecisionCase {
  const char* id;
  Case c;
  bool killed;
};

TEST(GateDecision, EachChangesThePlanWhereItsSiteIsReached) {
  Flags at_bound;
  const std::vector<DecisionCase> cases = {
      // The fusion gate's bound moved by one: the plan fuses at 2049 tokens,
      // which SGLang does not. Fused or not, the sum is completed once, but
      // FlashInfer's kernel asserts at most 2048 rows: property 4 fails the call.
      {"decision.fusion-token-bound-moved", patternCase("M-", {.tp = 2}, {kFuseMaxTokens + 1}),
       true},
      {"decision.mixer-weights-over-tp", patternCase("M-M", {.tp = 4, .attn_dp = 2}, {2, 2}), true},
  };
  Ledger ledger;
  for (const DecisionCase& d : cases) {
    const Mutant* m = findMutant(d.id);
    ASSERT_NE(m, nullptr) << d.id;
    auto base = buildPlan(d.c, PolicyKind::kDeclared);
    ASSERT_TRUE(base.hasValue()) << d.id;
    std::uint32_t reached = 0;
    auto mutated = buildPlan(d.c, PolicyKind::kDeclared, Schema{m->schema().flipped, &reached});
    ASSERT_TRUE(mutated.hasValue()) << d.id << ": " << mutated.status().message();
    EXPECT_NE(reached & m->schema().flipped, 0u) << d.id << " was not reached";
    EXPECT_FALSE(mutated->ranks == base->ranks) << d.id;
    EXPECT_EQ(!properties::checkPlan(*mutated, ledger).holds(), d.killed) << d.id;
  }
}

TEST(GateDecision, TheFusionBoundIsNotReachedBelowOrAtTheBound) {
  for (int tokens : {1, 9, kFuseMaxTokens}) {
    std::uint32_t reached = 0;
    const Schema s{Schema::with(Decision::kFusionTokenBoundMoved).flipped, &reached};
    ASSERT_TRUE(buildPlan(patternCase("M-", {.tp = 2}, {tokens}), PolicyKind::kDeclared, s));
    EXPECT_EQ(reached & s.flipped, 0u) << tokens;
  }
}

}  // namespace
}  // namespace seam::mutants
