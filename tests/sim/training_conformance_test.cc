// The training conformance suite: every entry of
// tests/sim/training_conformance/*.json, per-rank collective sequences
// derived by hand from PrimeRL's or Megatron's code, against seam's training
// plan of the same case. An `agrees` entry fails when seam differs (the first
// difference and the citations are printed) or when seam's plan of the case
// violates a property; a `disagrees` entry fails when seam no longer differs
// where the entry says, so a planner fix flips it to `agrees`.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "conformance_runner.h"
#include "seam/sim/training/training_ledger.h"
#include "training_conformance_case.h"

namespace seam::training_conformance {
namespace {

const std::vector<Entry>& allEntries() {
  static const std::vector<Entry> entries =
      loadEntries(std::string(SEAM_SOURCE_DIR) + "/tests/sim/training_conformance");
  return entries;
}

using conformance_runner::citation;

class TrainingConformance : public ::testing::TestWithParam<int> {};

TEST_P(TrainingConformance, SeamPlansWhatTheEntryDerivedFromTheEngineStates) {
  const Entry& e = allEntries().at(static_cast<size_t>(GetParam()));
  const TrainingCase c = parseCase(e.options);
  auto plan = buildTrainingPlan(c);
  ASSERT_TRUE(plan.hasValue()) << plan.status().message() << "\n" << citation(e);
  int at_rank = -1;
  const std::optional<Difference> first = conformance_runner::earliestDifference(
      e.ranks, [&](int rank) { return firstDifference(e, *plan, rank); }, &at_rank);
  conformance_runner::expectVerdict(
      e, first, at_rank, "flip this entry to agrees and close the section '" + e.section + "'");
  if (!e.agrees) return;
  const LedgerResult r = checkTrainingPlan(*plan);
  EXPECT_TRUE(r.violations.empty()) << (r.violations.empty() ? "" : r.violations[0].detail) << "\n"
                                    << citation(e);
}

std::string entryName(const ::testing::TestParamInfo<int>& info) {
  return conformance_runner::testName(allEntries().at(static_cast<size_t>(info.param)));
}

std::vector<int> entryIndices() { return conformance_runner::indices(allEntries().size()); }

INSTANTIATE_TEST_SUITE_P(Training, TrainingConformance, ::testing::ValuesIn(entryIndices()),
                         entryName);

TEST(TrainingConformanceSuite, HoldsAtLeastFortyEntriesEachNamedOnceAndCited) {
  std::set<std::string> names;
  for (const Entry& e : allEntries()) {
    EXPECT_TRUE(names.insert(e.name).second) << "two entries named: " << e.name;
    EXPECT_FALSE(e.cite.empty()) << e.name;
    EXPECT_FALSE(e.expect.empty()) << e.name;
  }
  EXPECT_GE(allEntries().size(), 40u);
}

TEST(TrainingConformanceSuite, EveryDisagreementNamesASectionOfAnEnginePage) {
  conformance_runner::expectSectionsExist(allEntries(), {"primerl.md", "megatron.md"}, "###");
}

TEST(TrainingConformanceSuite, GroupsAreTheEnginesRankLayouts) {
  TrainingConfig p;
  p.dp_replicate = 2;
  p.dp = 2;
  p.cp = 2;
  p.ep = 2;
  EXPECT_EQ(engineGroup("fsdp", p, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(engineGroup("cp", p, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(engineGroup("dp_replicate", p, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(engineGroup("expert_dp", p, 5), (std::vector<int>{5, 7}));
  TrainingConfig m;
  m.layout = TrainingLayout::kMegatron;
  m.tp = 2;
  m.cp = 2;
  m.dp = 2;
  EXPECT_EQ(engineGroup("tp", m, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(engineGroup("cp", m, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(engineGroup("dp_cp", m, 5), (std::vector<int>{1, 3, 5, 7}));
}

TEST(TrainingConformanceSuite, AnEntryStatingAnotherCollectiveFailsAtThatStep) {
  Entry e;
  e.options = "--layout primerl --model nemotron-3-nano --dp 2 --docs 8";
  e.layers = {0, 0};
  Step s;
  s.pass = "fwd";
  s.layer = 0;
  s.kind = OpKind::kReduceScatter;
  s.group = "fsdp";
  s.text = "fwd L0 reduce_scatter fsdp *";
  e.expect.push_back(s);
  auto plan = buildTrainingPlan(parseCase(e.options));
  ASSERT_TRUE(plan.hasValue());
  auto d = firstDifference(e, *plan, 0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->index, 0);
  EXPECT_NE(d->what.find("fwd L0 reduce_scatter fsdp"), std::string::npos) << d->what;
}

}  // namespace
}  // namespace seam::training_conformance
