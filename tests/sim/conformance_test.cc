// The SGLang conformance suite: every entry of tests/sim/conformance/*.json,
// an expectation derived by hand from SGLang's code, against seam's declared
// plan of the same case. An `agrees` entry fails when seam differs (the first
// difference and the citation are printed); a `disagrees` entry fails when
// seam no longer differs where the entry says, so a planner fix makes the
// entry flip to `agrees` (docs/modelling/conformance.md).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "conformance_case.h"
#include "conformance_runner.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/policy/policy.h"

namespace seam::conformance {
namespace {

std::string conformanceDir() { return std::string(SEAM_SOURCE_DIR) + "/tests/sim/conformance"; }

const std::vector<Entry>& allEntries() {
  static const std::vector<Entry> entries = loadEntries(conformanceDir());
  return entries;
}

using conformance_runner::citation;

class Conformance : public ::testing::TestWithParam<int> {};

TEST_P(Conformance, SeamPlansWhatTheEntryDerivedFromSglangStates) {
  const Entry& e = allEntries().at(static_cast<size_t>(GetParam()));
  auto c = buildCase(parseOptions(e.options));
  ASSERT_TRUE(c.hasValue()) << c.status().message() << "\n" << citation(e);
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue()) << "seam refuses the case: " << plan.status().message() << "\n"
                               << citation(e);
  std::vector<int> ranks;
  for (const auto& [rank, steps] : e.expect) ranks.push_back(rank);
  int at_rank = -1;
  const std::optional<Difference> first = conformance_runner::earliestDifference(
      ranks, [&](int rank) { return firstDifference(e, *plan, rank); }, &at_rank);
  conformance_runner::expectVerdict(e, first, at_rank,
                                    "flip this entry to agrees and close the section '" +
                                        e.section + "' of docs/modelling/sglang_disagreements.md");
  if (!e.agrees) return;
  // The plan is SGLang's: it holds, or its violation is the engine finding
  // the entry names.
  Ledger ledger;
  const auto v = properties::checkPlan(*plan, ledger).firstViolation();
  const std::string site = v ? properties::engineFindingSite(*plan, *v) : "";
  if (e.engine_finding.empty()) {
    EXPECT_FALSE(v.has_value()) << describeViolation(*v) << "\n" << citation(e);
  } else {
    EXPECT_FALSE(site.empty()) << "no engine finding: " << e.engine_finding << "\n" << citation(e);
  }
}

std::string entryName(const ::testing::TestParamInfo<int>& info) {
  return conformance_runner::testName(allEntries().at(static_cast<size_t>(info.param)));
}

std::vector<int> entryIndices() { return conformance_runner::indices(allEntries().size()); }

INSTANTIATE_TEST_SUITE_P(Sglang, Conformance, ::testing::ValuesIn(entryIndices()), entryName);

TEST(ConformanceSuite, HoldsAtLeastSixtyEntriesEachNamedOnceAndCited) {
  std::set<std::string> names;
  for (const Entry& e : allEntries()) {
    EXPECT_TRUE(names.insert(e.name).second) << "two entries named: " << e.name;
    EXPECT_FALSE(e.cite.empty()) << e.name;
  }
  EXPECT_GE(allEntries().size(), 60u);
}

TEST(ConformanceSuite, EveryDisagreementNamesASectionOfTheDisagreementsPage) {
  conformance_runner::expectSectionsExist(allEntries(), {"sglang_disagreements.md"}, "##");
}

TEST(ConformanceSuite, ComparesGroupsByTheMembersSglangBuilds) {
  // The reference §2 docstring example: 8 ranks, attn_cp 2, attn_tp 4, moe_dp 2, moe_ep 4.
  ParallelConfig c;
  c.tp = 8;
  c.attn_cp = 2;
  c.moe_dp = 2;
  c.moe_ep = 4;
  EXPECT_EQ(sglangGroup("attn_cp", c, 1), (std::vector<int>{1, 5}));
  EXPECT_EQ(sglangGroup("attn_tp", c, 6), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(sglangGroup("moe_ep", c, 2), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sglangGroup("moe_dp", c, 0), (std::vector<int>{0, 4}));
}

TEST(ConformanceSuite, AVerdictFailsWhenAnAgreementDiffersOrADisagreementMovesOrVanishes) {
  Entry e;
  e.topic = "t";
  e.name = "an entry";
  const std::optional<Difference> none;
  const std::optional<Difference> at3 = Difference{3, "step 3 differs"};
  EXPECT_NONFATAL_FAILURE(conformance_runner::expectVerdict(e, at3, 0, "flip"), "step 3 differs");
  e.agrees = false;
  e.first_difference = 2;
  EXPECT_NONFATAL_FAILURE(conformance_runner::expectVerdict(e, none, -1, "flip it"),
                          "seam now plans what the engine does: flip it");
  EXPECT_NONFATAL_FAILURE(conformance_runner::expectVerdict(e, at3, 0, "flip"),
                          "not where the entry documents it");
  e.first_difference = 3;
  conformance_runner::expectVerdict(e, at3, 0, "flip");  // still differs where documented
}

TEST(ConformanceSuite, AnEntryStatingAnotherCollectiveFailsWithItsStep) {
  Entry e;
  e.options = "--pattern 'M-' --tp 2";
  e.expect[0] = {};
  Step wrong;
  wrong.stage = 1;
  wrong.kind = OpKind::kAllGather;
  wrong.group = "tp";
  wrong.text = "s1 entry all_gather tp";
  e.expect[0].push_back(wrong);
  auto c = buildCase(parseOptions(e.options));
  ASSERT_TRUE(c.hasValue());
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue());
  auto d = firstDifference(e, *plan, 0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->index, 0);
  EXPECT_NE(d->what.find("s1 entry all_gather tp"), std::string::npos) << d->what;
}

}  // namespace
}  // namespace seam::conformance
