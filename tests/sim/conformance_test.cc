// The SGLang conformance suite: every entry of tests/sim/conformance/*.json,
// an expectation derived by hand from SGLang's code, against seam's declared
// plan of the same case. An `agrees` entry fails when seam differs (the first
// difference and the citation are printed); a `disagrees` entry fails when
// seam no longer differs where the entry says, so a planner fix makes the
// entry flip to `agrees` (docs/modelling/conformance.md).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "conformance_case.h"
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

std::string citation(const Entry& e) {
  std::ostringstream o;
  o << e.topic << ".json #" << e.index << ": " << e.name << "\n  case: " << e.options;
  for (const auto& c : e.cite) o << "\n  cites: " << c;
  return o.str();
}

class Conformance : public ::testing::TestWithParam<int> {};

TEST_P(Conformance, SeamPlansWhatTheEntryDerivedFromSglangStates) {
  const Entry& e = allEntries().at(static_cast<size_t>(GetParam()));
  auto c = buildCase(parseOptions(e.options));
  ASSERT_TRUE(c.hasValue()) << c.status().message() << "\n" << citation(e);
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan.hasValue()) << "seam refuses the case: " << plan.status().message() << "\n"
                               << citation(e);
  std::optional<Difference> first;
  int at_rank = -1;
  for (const auto& [rank, steps] : e.expect) {
    auto d = firstDifference(e, *plan, rank);
    if (d && (!first || d->index < first->index)) {
      first = d;
      at_rank = rank;
    }
  }
  if (e.agrees) {
    EXPECT_FALSE(first.has_value()) << "rank " << at_rank << ", step " << (first ? first->index : 0)
                                    << ": " << (first ? first->what : "") << "\n"
                                    << citation(e);
    // The plan is SGLang's: it holds, or its violation is the engine finding
    // the entry names.
    Ledger ledger;
    const auto v = properties::checkPlan(*plan, ledger).firstViolation();
    const std::string site = v ? properties::engineFindingSite(*plan, *v) : "";
    if (e.engine_finding.empty()) {
      EXPECT_FALSE(v.has_value()) << describeViolation(*v) << "\n" << citation(e);
    } else {
      EXPECT_FALSE(site.empty()) << "no engine finding: " << e.engine_finding << "\n"
                                 << citation(e);
    }
    return;
  }
  ASSERT_TRUE(first.has_value())
      << "seam now plans what SGLang does: flip this entry to agrees and close the section '"
      << e.section << "' of docs/modelling/sglang_disagreements.md\n"
      << citation(e);
  EXPECT_EQ(first->index, e.first_difference)
      << "seam still differs, but not where the entry documents it (rank " << at_rank
      << "): " << first->what << "\n"
      << citation(e);
}

std::string entryName(const ::testing::TestParamInfo<int>& info) {
  const Entry& e = allEntries().at(static_cast<size_t>(info.param));
  std::string name = e.topic + "_" + std::to_string(e.index);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

std::vector<int> entryIndices() {
  std::vector<int> out;
  for (size_t i = 0; i < allEntries().size(); ++i) out.push_back(static_cast<int>(i));
  return out;
}

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
  std::ifstream page(std::string(SEAM_SOURCE_DIR) + "/docs/modelling/sglang_disagreements.md");
  const std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  for (const Entry& e : allEntries())
    if (!e.agrees) EXPECT_NE(text.find("## " + e.section), std::string::npos) << e.name;
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
