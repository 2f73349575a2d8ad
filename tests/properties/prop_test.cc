// The property run of `seam prop`: the main property under GoogleTest, and
// runProp as a library call (passes unmutated, fails and shrinks to a minimal
// case under a planner mutant, replays from the RC_PARAMS it returns, prints
// nothing).
#include "seam/properties/prop.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <sstream>

#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"

namespace seam::properties {
namespace {

// RC_GTEST_PROP runs rapidcheck's default number of cases (100); this runs at
// least `cases` (RC_PARAMS may ask for more, and its seed or reproduce string
// applies as usual).
template <class Testable>
void checkAtLeast(int cases, Testable&& testable) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, cases);
  const auto result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  if (!result.template is<rc::detail::SuccessResult>()) {
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    FAIL() << ss.str();
  }
}

// The CI budget: the main property under gtest stays well under 10 s.
constexpr int kGtestCases = 200;

TEST(Prop, EveryGeneratedCasesDeclaredPlanSatisfiesPropertiesOneToSix) {
  Ledger ledger;
  checkAtLeast(kGtestCases, [&ledger]() {
    const Case c = *genCase(0);
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    if (!plan) {
      // A combination the engine refuses holds vacuously.
      if (plan.status().code() != StatusCode::kRefused) RC_FAIL(plan.status().message());
      RC_TAG("refused");
      return;
    }
    const PlanVerdict verdict = checkPlan(*plan, ledger, Depth::kFirst);
    if (auto v = verdict.firstViolation()) {
      // An engine finding (engine_findings_test.cc): SGLang's own plan is
      // wrong there; anything else is seam's fault.
      if (!engineFindingSite(*plan, *v).empty()) {
        RC_TAG("engine finding");
        return;
      }
      RC_FAIL(describeViolation(*v));
    }
  });
}

// ---- runProp -------------------------------------------------------------------

PropSpec mutated(Decision d, int cases, std::uint64_t seed) {
  PropSpec spec;
  spec.cases = cases;
  spec.seed = seed;
  spec.schema = Schema::with(d);
  return spec;
}

int layersOf(const Case& c) {
  return c.model.pattern.size() + static_cast<int>(c.model.pattern.mtp.size());
}

// Worlds 1 and 2: no engine finding fits there (each needs tp >= 4).
TEST(RunProp, ThreeHundredCasesOfWorldTwoPassWithNoPlannerDecisionFlipped) {
  PropSpec spec;
  spec.cases = 300;
  spec.seed = 1;
  spec.world = 2;
  auto r = runProp(spec);
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure << "\n"
                         << r->reproduce << "\nRC_PARAMS=\"" << r->rc_params << "\"";
  EXPECT_EQ(r->cases_run, 300);
  EXPECT_LT(r->refused, 300 / 10);
  EXPECT_TRUE(r->failure.empty());
  EXPECT_TRUE(r->reproduce.empty());
  EXPECT_FALSE(r->shrunk.has_value());
  EXPECT_EQ(r->rc_params, "seed=1 max_success=300 max_size=100");
}

// Generated worlds reach the engine's own faults: the run fails on one and
// shrinks it, and the words name the SGLang call (engine_finding.h).
TEST(RunProp, GeneratedWorldsFindAnEngineFindingAndNameTheSglangCall) {
  PropSpec spec;
  spec.cases = 300;
  spec.seed = 1;
  auto r = runProp(spec);
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  ASSERT_FALSE(r->passed);
  EXPECT_TRUE(isEngineFinding(r->failure)) << r->failure;
  EXPECT_NE(r->reproduce.find("--policy declared"), std::string::npos) << r->reproduce;
}

// The boundary each planted decision breaks.
bool hasFfnThenMixer(const Pattern& p) {
  for (int i = 1; i < p.size(); ++i) {
    if (isFfn(p.layers[i - 1]) && isMixer(p.layers[i])) return true;
  }
  return false;
}
bool startsAStackWithAnFfn(const Pattern& p) {
  return isFfn(p.layers.front()) || (!p.mtp.empty() && isFfn(p.mtp.front()));
}

struct Planted {
  Decision decision;
  bool (*shows)(const Pattern&);  // the shape the shrunk pattern must still have
};
void PrintTo(const Planted& p, std::ostream* os) { *os << decisionName(p.decision); }

class RunPropPlanted : public ::testing::TestWithParam<Planted> {};

TEST_P(RunPropPlanted, FailsAndShrinksToAPatternOfAtMostThreeLayers) {
  auto r = runProp(mutated(GetParam().decision, 500, 7));
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  ASSERT_FALSE(r->passed);
  ASSERT_TRUE(r->shrunk.has_value());
  EXPECT_LE(layersOf(*r->shrunk), 3) << r->reproduce;
  EXPECT_TRUE(GetParam().shows(r->shrunk->model.pattern)) << r->reproduce;
  EXPECT_GT(r->shrinks, 0);
  EXPECT_FALSE(r->failure.empty());
  ASSERT_TRUE(r->violation.has_value());
  EXPECT_EQ(r->failure, describeViolation(*r->violation));
  EXPECT_EQ(r->reproduce, reproduceCommand(*r->shrunk, "declared") + " --decision " +
                              std::string(decisionName(GetParam().decision)));
  EXPECT_EQ(r->reproduce.rfind("seam check --pattern '", 0), 0u) << r->reproduce;
  EXPECT_EQ(r->rc_params, "seed=7 max_success=500 max_size=100");
  EXPECT_LE(r->cases_run, 500);
  // The shrunk case really fails under the mutant, and holds without it.
  Ledger ledger;
  auto bad = buildPlan(*r->shrunk, PolicyKind::kDeclared, Schema::with(GetParam().decision));
  ASSERT_TRUE(bad.hasValue()) << bad.status().message();
  EXPECT_FALSE(checkPlan(*bad, ledger).holds());
  auto good = buildPlan(*r->shrunk, PolicyKind::kDeclared);
  ASSERT_TRUE(good.hasValue()) << good.status().message();
  EXPECT_TRUE(checkPlan(*good, ledger).holds());
}

INSTANTIATE_TEST_SUITE_P(
    Decisions, RunPropPlanted,
    ::testing::Values(Planted{Decision::kFfnKeepsSumFromMixer, hasFfnThenMixer},
                      Planted{Decision::kStackStartFfnWithResidual, startsAStackWithAnFfn}));

TEST(RunProp, TheRcParamsItReturnsReplayTheSameFailure) {
  const PropSpec first = mutated(Decision::kFfnKeepsSumFromMixer, 500, 7);
  auto a = runProp(first);
  ASSERT_TRUE(a.hasValue());
  ASSERT_FALSE(a->passed);
  // A fresh spec with only the mutant, fed the returned RC_PARAMS value.
  PropSpec again;
  again.schema = first.schema;
  ASSERT_TRUE(applyRcParams(a->rc_params, again).isOk());
  EXPECT_EQ(again.seed, 7u);
  EXPECT_EQ(again.cases, 500);
  auto b = runProp(again);
  ASSERT_TRUE(b.hasValue());
  ASSERT_FALSE(b->passed);
  EXPECT_EQ(b->failure, a->failure);
  EXPECT_EQ(b->reproduce, a->reproduce);
  EXPECT_EQ(b->shrinks, a->shrinks);
  EXPECT_EQ(b->cases_run, a->cases_run);
  EXPECT_EQ(b->rc_params, a->rc_params);
}

TEST(RunProp, AnotherSeedIsAnotherRun) {
  // Unshrunk, the failure is the first failing case each seed generates:
  // another seed must reach another case (the RC_PARAMS strings differ by
  // their seed alone, so comparing them says nothing).
  PropSpec first = mutated(Decision::kFfnKeepsSumFromMixer, 500, 7);
  PropSpec second = mutated(Decision::kFfnKeepsSumFromMixer, 500, 8);
  first.shrink = second.shrink = false;
  auto a = runProp(first);
  auto b = runProp(second);
  ASSERT_TRUE(a.hasValue() && b.hasValue());
  ASSERT_FALSE(a->passed);
  ASSERT_FALSE(b->passed);
  EXPECT_NE(a->reproduce, b->reproduce);
}

TEST(RunProp, ShrinkingCanBeSwitchedOff) {
  PropSpec spec = mutated(Decision::kFfnKeepsSumFromMixer, 500, 7);
  ASSERT_TRUE(applyRcParams("noshrink=1", spec).isOk());
  EXPECT_FALSE(spec.shrink);
  auto r = runProp(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_FALSE(r->passed);
  EXPECT_EQ(r->shrinks, 0);
  EXPECT_NE(r->rc_params.find("noshrink=1"), std::string::npos);
}

TEST(RunProp, PrintsNothing) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  auto r = runProp(mutated(Decision::kFfnKeepsSumFromMixer, 200, 3));
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.hasValue());
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

TEST(RunProp, BadSpecsAreRefusedNamingTheValue) {
  struct Bad {
    PropSpec spec;
    const char* needle;
  };
  PropSpec no_cases;
  no_cases.cases = 0;
  PropSpec big_world;
  big_world.world = kMaxWorld + 1;
  PropSpec negative_world;
  negative_world.world = -2;
  PropSpec no_layers;
  no_layers.max_layers = 0;
  for (const Bad& b : {Bad{no_cases, "--cases 0"}, Bad{big_world, "--world 4097"},
                       Bad{negative_world, "--world -2"}, Bad{no_layers, "--max-layers 0"}}) {
    auto r = runProp(b.spec);
    ASSERT_FALSE(r.hasValue()) << b.needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(b.needle), std::string::npos) << r.status().message();
  }
}

TEST(RunProp, AFixedWorldIsHonoured) {
  PropSpec spec;
  spec.cases = 50;
  spec.world = 4;
  spec.max_layers = 8;
  spec.schema = Schema::with(Decision::kFfnKeepsSumFromMixer);
  auto r = runProp(spec);
  ASSERT_TRUE(r.hasValue());
  ASSERT_FALSE(r->passed);
  EXPECT_EQ(r->shrunk->config.world(), 4);
}

TEST(RcParams, AcceptsRapidchecksKeysAndRefusesReproduceStrings) {
  PropSpec spec;
  ASSERT_TRUE(applyRcParams("seed=42 max_success=77 max_size=50 verbose_progress=1", spec).isOk());
  EXPECT_EQ(spec.seed, 42u);
  EXPECT_EQ(spec.cases, 77);
  EXPECT_EQ(spec.max_size, 50);
  EXPECT_EQ(rcParams(spec), "seed=42 max_success=77 max_size=50");
  const Status garbled = applyRcParams("seed=abc", spec);
  EXPECT_FALSE(garbled.isOk());
  EXPECT_NE(garbled.message().find("RC_PARAMS"), std::string::npos);
  EXPECT_FALSE(applyRcParams("max_success=0", spec).isOk());
  EXPECT_EQ(spec.seed, 42u) << "a refused value leaves the spec alone";
}

TEST(Decisions, NamesRoundTripAndUnknownNamesAreListed) {
  for (int i = 0; i < kDecisionCount; ++i) {
    const auto d = static_cast<Decision>(i);
    auto back = parseDecision(decisionName(d));
    ASSERT_TRUE(back.hasValue()) << decisionName(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(decisionName(Decision::kFfnKeepsSumFromMixer), "ffn-keeps-sum-from-mixer");
  auto bad = parseDecision("ffn-keeps-sum");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_NE(bad.status().message().find("stack-start-ffn-with-residual"), std::string::npos);
}

TEST(Decisions, TheSnakeCaseSpellingAndTheMutantIdNameTheSameDecision) {
  for (std::string_view alias : {"ffn_keeps_sum_from_mixer", "decision.ffn-keeps-sum-from-mixer",
                                 "ffn-keeps-sum-from-mixer"}) {
    auto d = parseDecision(alias);
    ASSERT_TRUE(d.hasValue()) << alias;
    EXPECT_EQ(*d, Decision::kFfnKeepsSumFromMixer) << alias;
  }
}

TEST(Decisions, ARunRecordsItsDecisionsByNameAndACheckLineCarriesThem) {
  EXPECT_EQ(decisionList(Schema{}), "none");
  EXPECT_EQ(decisionFlags(Schema{}), "");
  const Schema one = Schema::with(Decision::kTerminalDefers);
  EXPECT_EQ(decisionList(one), "terminal-defers");
  EXPECT_EQ(decisionFlags(one), " --decision terminal-defers");
}

}  // namespace
}  // namespace seam::properties
